//! A conversion as the caller asked for it, checked and turned into [`Options`], the
//! [`NamedRule`]s checked against the data, and a planned and finished run.

use std::path::PathBuf;

use ofconvert_bridge::{MappingSpec, SequencePolicy};
use ofconvert_tfrecord::Compression;

use super::mapping::MappingRules;
use super::values::Images;
use crate::error::{Error, ErrorKind};
use crate::front_end::{FrontEnd, OptionValue};
use crate::naming::layout::{DEFAULT_PART_DIGITS, DEFAULT_PART_PREFIX};
use crate::options::{Direction, ExistingOutput, OnCorrupt, OnEmpty, Options, Sizing, TfFile};
use crate::planning::plan::Plan;
use crate::planning::rules::{check_rules, NamedRule};
use crate::progress::ProgressFn;
use crate::recode::ImagePolicy;
use crate::running::convert::convert;
use crate::running::preview::{preview, Preview};
use crate::running::summary::Summary;
use crate::sharded::shard::{convert_shard, Shard, ShardSummary};
use crate::storage::object;

/// The widest part number `part_digits` may ask for.
const MAX_PART_DIGITS: usize = 20;

/// Everything `tf2of` and `of2tf` take, in the caller's terms. [`ConvertConfig::new`] gives
/// the defaults; a front end sets what its user said, then [`plan`](ConvertConfig::plan)s
/// and [`convert`](ConvertConfig::convert)s it.
/// The options of the other direction (`compression` for `tf2of`, `images` for `of2tf`)
/// must stay at their defaults.
#[derive(Clone, Debug)]
pub struct ConvertConfig {
    /// Which way.
    pub direction: Direction,
    /// Whose words messages use.
    pub front_end: FrontEnd,
    /// The inputs: one tree or file, or (`tf2of`) several, as `cp -r` places them.
    pub inputs: Vec<PathBuf>,
    /// The output root.
    pub output: PathBuf,
    /// Parts of balanced record counts per dataset.
    pub parts: Option<u64>,
    /// At most this many records a part.
    pub records_per_part: Option<u64>,
    /// A new part before one grows past this many bytes.
    pub max_part_bytes: Option<u64>,
    /// The prefix of OneFlow part names.
    pub part_prefix: String,
    /// The zero-padded width of part numbers (`tf2of`).
    pub part_digits: usize,
    /// The feature mapping rules, the preset and `lossy` among them.
    pub mapping: MappingRules,
    /// What happens to SequenceExamples (`tf2of`).
    pub sequence: SequencePolicy,
    /// Records that are not Examples wrapped whole as this bytes feature (`tf2of`).
    pub raw_feature: Option<String>,
    /// What happens to Examples without features (`tf2of`).
    pub empty: OnEmpty,
    /// What happens to encoded images (`tf2of`).
    pub images: Images,
    /// The JPEG quality of `images` = jpeg, 1 to 100.
    pub jpeg_quality: u8,
    /// The compression of the TFRecord files written (`of2tf`); `None`: as each dataset's
    /// manifest records its inputs ([`Options::compression`](crate::Options::compression)).
    pub compression: Option<Compression>,
    /// TFRecord or ArrayRecord files written (`of2tf`).
    pub to: TfFile,
    /// How ArrayRecord files are grouped and compressed, in `array_record`'s own words
    /// (`group_size:64,brotli:6`; `of2tf` with `to` ArrayRecord).
    pub array_record_options: Option<String>,
    /// What happens to damaged records.
    pub on_corrupt: OnCorrupt,
    /// TFRecord checksums checked while reading.
    pub verify: bool,
    /// Parts flushed to the disk before they take their names.
    pub sync: bool,
    /// The files that come with the records carried beside the parts and back.
    pub side_files: bool,
    /// Replace the datasets this run writes.
    pub overwrite: bool,
    /// Finish an interrupted run.
    pub resume: bool,
    /// Remove a lock on the output whose holder is not known to run.
    pub break_lock: bool,
    /// Be one worker of a conversion spread over many machines.
    pub shard: Option<Shard>,
    /// Worker threads; `None` for one per core.
    pub jobs: Option<usize>,
    /// Say what the run would do, and do nothing.
    pub dry_run: bool,
}

/// What a run did: a whole conversion, one worker's share, or, dry, nothing.
#[derive(Debug)]
pub enum Ran {
    /// A conversion of every dataset.
    Whole(Summary),
    /// One worker's share of a sharded run.
    Share(ShardSummary),
    /// What the conversion would do (`dry_run`).
    Dry(Preview),
}

impl ConvertConfig {
    /// The defaults for converting `inputs` into `output`.
    pub fn new(
        direction: Direction,
        front_end: FrontEnd,
        inputs: Vec<PathBuf>,
        output: PathBuf,
    ) -> ConvertConfig {
        ConvertConfig {
            direction,
            front_end,
            inputs,
            output,
            parts: None,
            records_per_part: None,
            max_part_bytes: None,
            part_prefix: DEFAULT_PART_PREFIX.to_owned(),
            part_digits: DEFAULT_PART_DIGITS,
            mapping: MappingRules::default(),
            sequence: SequencePolicy::Refuse,
            raw_feature: None,
            empty: OnEmpty::Error,
            images: Images::Keep,
            jpeg_quality: 100,
            compression: None,
            to: TfFile::Tfrecord,
            array_record_options: None,
            on_corrupt: OnCorrupt::Fail,
            verify: true,
            sync: true,
            side_files: true,
            overwrite: false,
            resume: false,
            break_lock: false,
            shard: None,
            jobs: None,
            dry_run: false,
        }
    }

    pub(super) fn usage(&self, message: String) -> Error {
        Error::new(ErrorKind::Usage(message))
    }

    /// The checks no single value can make: options that exclude each other, values out of
    /// range, options of the other direction.
    fn check(&self) -> Result<(), Error> {
        let words = self.front_end;
        let prefix = &self.part_prefix;
        if prefix.contains(['/', '\\']) || prefix.starts_with('.') {
            return Err(self.usage(format!(
                "{}: a part name prefix cannot hold a path separator or start with a dot",
                words.option("part_prefix", OptionValue::Text(prefix))
            )));
        }
        if self.overwrite && self.resume {
            return Err(self.usage(format!(
                "{} and {} exclude each other",
                words.switch("overwrite"),
                words.switch("resume")
            )));
        }
        for (name, value) in [
            ("parts", self.parts),
            ("records_per_part", self.records_per_part),
            ("max_part_bytes", self.max_part_bytes),
            ("jobs", self.jobs.map(|jobs| jobs as u64)),
        ] {
            if value == Some(0) {
                return Err(self.usage(format!("{} must be at least 1", words.name(name))));
            }
        }
        if self.part_digits > MAX_PART_DIGITS {
            return Err(self.usage(format!(
                "{} must be between 0 and {MAX_PART_DIGITS}",
                words.name("part_digits")
            )));
        }
        if !(1..=100).contains(&self.jpeg_quality) {
            return Err(self.usage(format!(
                "{} must be between 1 and 100",
                words.name("jpeg_quality")
            )));
        }
        let defaults =
            ConvertConfig::new(self.direction, self.front_end, Vec::new(), PathBuf::new());
        let other_direction: &[(&str, bool)] = match self.direction {
            Direction::TfToOf => &[
                ("compression", self.compression != defaults.compression),
                ("to", self.to != defaults.to),
                ("array_record_options", self.array_record_options.is_some()),
                ("lossy", self.mapping.lossy),
            ],
            Direction::OfToTf => &[
                ("part_digits", self.part_digits != defaults.part_digits),
                ("preset", self.mapping.preset.is_some()),
                ("sequence", self.sequence != defaults.sequence),
                ("raw_feature", self.raw_feature.is_some()),
                ("empty", self.empty != defaults.empty),
                ("images", self.images != defaults.images),
                ("jpeg_quality", self.jpeg_quality != defaults.jpeg_quality),
            ],
        };
        if let Some((name, _)) = other_direction.iter().find(|(_, given)| *given) {
            let other = match self.direction {
                Direction::TfToOf => "of2tf",
                Direction::OfToTf => "tf2of",
            };
            return Err(self.usage(format!("{} is an option of {other}", words.name(name))));
        }
        if self.to == TfFile::ArrayRecord
            && self.compression.is_some_and(|c| c != Compression::None)
        {
            return Err(self.usage(format!(
                "{} applies to TFRecord files: ArrayRecord files compress each chunk (zstd)",
                words.name("compression")
            )));
        }
        if let Some(text) = &self.array_record_options {
            if self.to != TfFile::ArrayRecord {
                return Err(self.usage(format!(
                    "{} applies to ArrayRecord files ({})",
                    words.name("array_record_options"),
                    words.option("to", OptionValue::Text("array_record"))
                )));
            }
            if let Err(err) = text.parse::<ofconvert_arrayrecord::WriterOptions>() {
                return Err(self.usage(format!(
                    "{}: {err}",
                    words.option("array_record_options", OptionValue::Text(text))
                )));
            }
        }
        if self.inputs.is_empty() {
            return Err(self.usage("no input given".to_owned()));
        }
        if self.inputs.len() > 1 && self.direction == Direction::OfToTf {
            return Err(
                self.usage("of2tf takes one input: a OneFlow dataset or a tree of them".to_owned())
            );
        }
        self.check_shard()
    }

    /// Options a worker of a sharded run cannot take: parts cut by size end where a run's
    /// previous part ended, which another worker wrote; and workers share OUT, so none may
    /// clear it.
    fn check_shard(&self) -> Result<(), Error> {
        let Some(shard) = self.shard else {
            return Ok(());
        };
        let words = self.front_end;
        let refused = if self.dry_run {
            Some(format!(
                "{}: a dry run shows the whole conversion; run it without a share",
                words.switch("dry_run")
            ))
        } else if self.max_part_bytes.is_some() {
            Some(format!(
                "{}: its part boundaries depend on the parts before, which other workers \
                 write; use {} or {}",
                words.name("max_part_bytes"),
                words.option("parts", OptionValue::Number("N")),
                words.option("records_per_part", OptionValue::Number("N")),
            ))
        } else if self.resume {
            Some(format!(
                "{}: a rerun worker always keeps the parts it finished; run it again without \
                 it",
                words.switch("resume")
            ))
        } else if self.break_lock {
            Some(format!(
                "{}: a worker takes no lock on the output; a lock a killed commit left is \
                 broken by {} with it",
                words.switch("break_lock"),
                words.command("commit", "OUT"),
            ))
        } else {
            None
        };
        match refused {
            Some(why) => Err(self.usage(format!(
                "{} does not go with {why}",
                words.shard(&shard.index.to_string(), &shard.count.to_string())
            ))),
            None => Ok(()),
        }
    }

    /// The engine's options, once every check has passed.
    ///
    /// # Errors
    ///
    /// A usage error ([`Error::is_usage`]) in the front end's words.
    pub fn options(&self) -> Result<Options, Error> {
        self.check()?;
        let mut options = Options::new(self.direction);
        options.front_end = self.front_end;
        options.part_prefix = self.part_prefix.clone();
        options.part_digits = self.part_digits;
        options.sizing = Sizing {
            parts: self.parts,
            records_per_part: self.records_per_part,
            max_part_bytes: self.max_part_bytes,
        };
        options.verify_checksums = self.verify;
        options.sync = self.sync;
        options.side_files = self.side_files;
        options.on_corrupt = self.on_corrupt;
        options.on_empty = self.empty;
        options.existing = if self.shard.is_some() {
            ExistingOutput::Shared
        } else if self.resume {
            ExistingOutput::Resume
        } else if self.overwrite {
            ExistingOutput::Overwrite
        } else {
            ExistingOutput::Refuse
        };
        options.break_lock = self.break_lock;
        options.replacing = self.shard.is_some() && self.overwrite;
        options.jobs = self.jobs.unwrap_or(0);
        options.compression = self.compression;
        options.to = self.to;
        if let Some(text) = &self.array_record_options {
            // Checked above, where a text that does not parse is a usage error.
            options.array_record = text.parse().unwrap_or_default();
        }
        options.images = match self.images {
            Images::Keep => ImagePolicy::Keep,
            Images::Jpeg => ImagePolicy::Jpeg {
                quality: self.jpeg_quality,
            },
            Images::Raw => ImagePolicy::Raw,
        };
        (options.mapping, options.mapping_description) = self.mapping_spec();
        Ok(options)
    }

    /// The plan of the conversion, with the [`rules`](ConvertConfig::rules) checked against
    /// the data: a dataset whose rules miss is failed in it.
    ///
    /// # Errors
    ///
    /// What [`plan`](crate::plan) refuses: a missing input, an output in the way, ...
    pub fn plan(&self, options: &Options) -> Result<Plan, Error> {
        let mut plan = self.plan_inputs(options)?;
        check_rules(&mut plan, &self.rules());
        Ok(plan)
    }

    /// The mapping rules in the front end's words, each with the input features it names,
    /// for the engine to check against the data before converting.
    pub fn rules(&self) -> Vec<NamedRule> {
        self.mapping.named(self.front_end)
    }

    /// The mapping, and how it was asked for in the command line's words, which manifests
    /// record: the rules', then the ways of reading records that are not plain Examples.
    fn mapping_spec(&self) -> (MappingSpec, Vec<String>) {
        let (mut spec, mut description) = self.mapping.described();
        // Both are tf2of's, and `--lossy` (the rules' last word) of2tf's: `check` lets no run
        // ask for both, so the words keep one order.
        if self.sequence == SequencePolicy::Flatten {
            spec = spec.sequence(SequencePolicy::Flatten);
            description.push("--sequence=flatten".to_owned());
        }
        if let Some(name) = &self.raw_feature {
            spec = spec.raw_feature(name);
            description.push(format!("--raw-feature={name}"));
        }
        (spec, description)
    }

    /// Runs the conversion of `plan` (this worker's share of it, with
    /// [`shard`](ConvertConfig::shard)), reporting progress to `progress`; with
    /// [`dry_run`](ConvertConfig::dry_run), only says what it would do. A local output
    /// that did not exist and to which nothing was written is not left behind as an empty
    /// directory.
    ///
    /// # Errors
    ///
    /// What stops the run before it converts anything (see [`convert`] and
    /// [`convert_shard`]); a dataset that fails is in the summary instead.
    pub fn convert(
        &self,
        plan: Plan,
        options: &Options,
        progress: ProgressFn<'_>,
    ) -> Result<Ran, Error> {
        if self.dry_run {
            return Ok(Ran::Dry(preview(&plan, options)));
        }
        let output_existed = object::is_url(&self.output) || self.output.exists();
        let ran = match self.shard {
            Some(shard) => convert_shard(plan, options, shard, progress).map(Ran::Share),
            None => convert(plan, options, progress).map(Ran::Whole),
        };
        if !output_existed {
            // A run that wrote nothing leaves no empty directory behind (one that holds
            // something is not removed).
            let _ = std::fs::remove_dir(&self.output);
        }
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::values::{Cast, Offset, Preset, Rename};

    fn config(front_end: FrontEnd) -> ConvertConfig {
        ConvertConfig::new(
            Direction::TfToOf,
            front_end,
            vec![PathBuf::from("in")],
            PathBuf::from("out"),
        )
    }

    fn refused(config: &ConvertConfig) -> String {
        let err = config.options().expect_err("refused");
        assert!(err.is_usage(), "{err}");
        err.to_string()
    }

    #[test]
    fn checks_speak_the_front_ends_words() {
        let mut cli = config(FrontEnd::CommandLine);
        cli.overwrite = true;
        cli.resume = true;
        assert_eq!(refused(&cli), "--overwrite and --resume exclude each other");
        let mut py = config(FrontEnd::Python);
        py.overwrite = true;
        py.resume = true;
        assert_eq!(
            refused(&py),
            "overwrite=True and resume=True exclude each other"
        );

        let mut py = config(FrontEnd::Python);
        py.shard = Some(Shard { index: 1, count: 3 });
        py.max_part_bytes = Some(1 << 20);
        assert!(refused(&py).starts_with("shard=(1, 3) does not go with max_part_bytes"));
        let mut cli = config(FrontEnd::CommandLine);
        cli.part_prefix = "a/b".to_owned();
        assert!(refused(&cli).starts_with("--part-prefix a/b: a part name prefix"));
        let mut py = config(FrontEnd::Python);
        py.compression = Some(Compression::Gzip);
        assert_eq!(refused(&py), "compression is an option of of2tf");
        let mut py = config(FrontEnd::Python);
        py.jobs = Some(0);
        assert_eq!(refused(&py), "jobs must be at least 1");
    }

    #[test]
    fn rules_are_named_as_the_user_wrote_them() {
        let mut py = config(FrontEnd::Python);
        py.mapping.preset = Some(Preset::Imagenet);
        py.mapping.rename = vec![Rename::new("a", "b").unwrap()];
        py.mapping.offset = vec![Offset::new("label", -1).unwrap()];
        py.mapping.keep = vec!["a".to_owned()];
        let rules: Vec<String> = py.rules().into_iter().map(|rule| rule.rule).collect();
        assert_eq!(
            rules,
            [
                "preset=\"imagenet\"",
                "rename={\"a\": \"b\"}",
                "offset={\"label\": -1}",
                "keep=[\"a\"]"
            ]
        );
        let mut cli = config(FrontEnd::CommandLine);
        cli.mapping.preset = Some(Preset::Imagenet);
        cli.mapping.cast = vec![Cast::new("x", "int32").unwrap()];
        let rules: Vec<String> = cli.rules().into_iter().map(|rule| rule.rule).collect();
        assert_eq!(rules, ["--preset imagenet", "--cast x=int32"]);
        // The manifest's words are the command line's, whoever asked.
        let options = py.options().unwrap();
        assert_eq!(
            options.mapping_description,
            [
                "--preset=imagenet",
                "--rename=a=b",
                "--offset=label=-1",
                "--keep=a"
            ]
        );
    }
}
