//! The manifest written beside each converted dataset, last, once its parts are in place.
//!
//! A manifest names no place but its own directory: the reader lines it holds open `.`
//! (OneFlow's `ofrecord_dir`) and files by their names, so that an output moved, copied or
//! written by workers under another mount still describes itself. Read, a manifest is
//! located where it was found: its reader lines name that directory, absolute, as summaries
//! print them (and one written by an older version, with the absolute paths of where it was
//! written, is located anew the same way).

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::naming::layout::MANIFEST_NAME;
use crate::options::Settings;
use crate::recode::ImageConversion;
use crate::records::SkippedRecords;
use crate::schema::Schema;
use crate::storage::{LocalFs, Storage};
use crate::tfds::TfdsOrigin;

/// Written as `format` so that a reader can tell the file's version.
const FORMAT: &str = "ofconvert-manifest/1";

/// What a converted dataset holds and how it was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `ofconvert-manifest/1`.
    pub format: String,
    /// The tool and version that wrote it.
    pub tool: String,
    /// The settings of the conversion; a resumed run redoes the dataset when they differ.
    pub settings: Settings,
    /// The input files in conversion order, relative to the input root.
    pub inputs: Vec<ManifestInput>,
    /// The output parts in order.
    pub parts: Vec<ManifestPart>,
    /// Records written.
    pub records: u64,
    /// Records left out, by cause.
    pub skipped: SkippedRecords,
    /// The features of the records written.
    pub schema: Schema,
    /// What would trouble a reader of this dataset.
    pub warnings: Vec<String>,
    /// What `--images` did to the images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_conversion: Option<ImageConversion>,
    /// Under `--lossy`: how many values were rounded to the nearest float (a double narrowed
    /// to float, an integer cast to a float type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounded_values: Option<u64>,
    /// How to open the dataset in OneFlow (tf2of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oneflow: Option<OneflowReader>,
    /// How to open the files in TensorFlow (of2tf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensorflow: Option<TensorflowReader>,
    /// The TFDS dataset and split the records came from, with TFDS's metadata as found:
    /// of2tf gives them back in TFDS's layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfds: Option<TfdsOrigin>,
    /// The files that came with the records (every other file of their folder: TFDS's
    /// metadata and label names, READMEs, licences, vocabularies...), copied beside the
    /// parts under their own names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub side_files: Vec<SideFile>,
    /// tf2of: the directory of its own the dataset was given, named after its shard
    /// family, inside the place of the folder its files came from, which held other
    /// families too. of2tf gives such a dataset back to that folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subfolder: Option<String>,
}

/// A file that came with a dataset's records, as its [`Manifest`] lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideFile {
    /// Its name, the same in the input's folder and beside the parts.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// The CRC-32C (Castagnoli) of its bytes, as 8 hex digits.
    pub crc32c: String,
    /// The size of the input's file, when what was written differs from it: TFDS's
    /// `features.json` rewritten to describe the images `--images` changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<u64>,
}

/// One input file in a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestInput {
    /// Relative to the input root, `/`-separated.
    pub path: String,
    /// Its size when converted.
    pub bytes: u64,
    /// `none`, `gzip` or `zlib`: what TensorFlow's `compression_type` must say to read it;
    /// `array_record` for an ArrayRecord file, which TensorFlow's TFRecord reader does not
    /// read (Google's `array_record` reader does).
    pub compression: String,
    /// What changes when it is rewritten, even at the same size, as its listing said when it
    /// was converted (a modification time, an ETag): `--resume` keeps the dataset only for
    /// the very inputs it was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
}

/// One output part in a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestPart {
    /// The file name.
    pub name: String,
    /// Records in it.
    pub records: u64,
    /// Its size.
    pub bytes: u64,
    /// The CRC-32C (Castagnoli) of its bytes, as 8 hex digits, as side files have it; not
    /// in manifests written before parts had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<String>,
    /// tf2of, without resharding: the input file whose records, all of them, the part
    /// holds (its name in its folder). of2tf gives the records back under that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// The arguments of `oneflow.nn.OFRecordReader` that open a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OneflowReader {
    /// The directory: `.` in the file (the manifest's own); where it was read from once
    /// read, absolute (a URL in a store).
    pub ofrecord_dir: String,
    /// Number of parts.
    pub data_part_num: u64,
    /// Part name prefix.
    pub part_name_prefix: String,
    /// Zero-padded width of part numbers; -1 for none.
    pub part_name_suffix_length: i64,
    /// The call, ready to paste. For a dataset in a store it opens the local copy `fetch`
    /// makes, after a comment line giving that command: OneFlow's reader opens local
    /// paths only.
    pub python: String,
    /// For a dataset in a store, the command that copies it to the local folder the call
    /// opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch: Option<String>,
    /// How many ranks (processes) of a distributed run can read it: OneFlow aborts when
    /// there are more ranks than parts (`parallel_num_ <= data_part_num_`).
    #[serde(default)]
    pub max_ranks: u64,
    /// What a reader that leaves arguments at OneFlow's defaults, or a run on more ranks
    /// than parts, would do with the dataset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl OneflowReader {
    /// The reader arguments for `parts` parts named `prefix` + a number zero-padded to
    /// `digits` (0: unpadded) in `dir`.
    pub fn new(dir: &Path, parts: u64, prefix: &str, digits: usize) -> OneflowReader {
        let ofrecord_dir = dir.to_string_lossy().into_owned();
        let part_name_suffix_length = if digits == 0 { -1 } else { digits as i64 };
        let fetched = crate::storage::object::is_url(dir).then(|| local_copy(&ofrecord_dir));
        let opened = fetched.as_ref().map_or(&ofrecord_dir, |(_, local)| local);
        let mut python = format!(
            "flow.nn.OFRecordReader({}, batch_size=32, data_part_num={parts}, \
             part_name_prefix={}, part_name_suffix_length={part_name_suffix_length})",
            crate::schema::python_string(opened),
            crate::schema::python_string(prefix),
        );
        if let Some((fetch, _)) = &fetched {
            python = format!(
                "# OneFlow opens local paths only; copy the parts first: {fetch}\n{python}"
            );
        }
        let defaults_open = if prefix != "part-" || part_name_suffix_length != -1 {
            Some("part-0, which is not here, and OneFlow aborts")
        } else if parts > 1 {
            Some("part-0 alone: one part of the dataset, silently")
        } else {
            None
        };
        // One note a dataset, in words that do not depend on its parts, so that a run's
        // report says each once for all the datasets it holds for.
        let one_part = "only a single rank can read its one part (OneFlow aborts when ranks \
                        outnumber parts): convert with --parts N to train on N ranks";
        let defaults = |what: &str| {
            format!(
                "OFRecordReader's defaults (data_part_num=1, part_name_suffix_length=-1) open \
                 {what}: pass the arguments above (or, for scripts that keep the defaults, \
                 convert with --part-digits 0, and --parts 1 where there are several parts)"
            )
        };
        let notes = match (parts == 1, defaults_open) {
            (true, Some(what)) => vec![format!("{one_part}; and {}", defaults(what))],
            (true, None) => vec![one_part.to_owned()],
            (false, Some(what)) => vec![defaults(what)],
            (false, None) => Vec::new(),
        };
        OneflowReader {
            ofrecord_dir,
            data_part_num: parts,
            part_name_prefix: prefix.to_owned(),
            part_name_suffix_length,
            python,
            fetch: fetched.map(|(fetch, _)| fetch),
            max_ranks: parts,
            notes,
        }
    }

    /// The same reader opening the dataset in `dir`.
    pub fn at(&self, dir: &Path) -> OneflowReader {
        let digits = usize::try_from(self.part_name_suffix_length).unwrap_or(0);
        OneflowReader::new(dir, self.data_part_num, &self.part_name_prefix, digits)
    }
}

/// The command that copies the dataset at `url` to a local folder, and that folder: the
/// URL's path inside its bucket (the bucket's name for the bucket itself), relative to
/// where the command runs.
fn local_copy(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.trim_end_matches('/');
    let local = match rest.split_once('/') {
        Some((_, key)) if !key.is_empty() => key,
        _ => rest,
    };
    let (from, to) = (shell_word(url), shell_word(local));
    let fetch = match scheme {
        "s3" | "s3a" => format!("aws s3 sync {from} {to}"),
        "gs" => format!("gcloud storage rsync --recursive {from} {to}"),
        _ => format!("rclone copy {from} {to}  (with the store's remote name)"),
    };
    (fetch, local.to_owned())
}

/// `word` as one word of a POSIX shell command: quoted when it holds anything but letters,
/// digits and `/._-:=+@%,`.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=+@%,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// How to read TFRecord files written by of2tf.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorflowReader {
    /// The files, in order: their names in the file (beside the manifest); their paths once
    /// read, absolute (URLs in a store).
    pub files: Vec<String>,
    /// `""`, `"GZIP"` or `"ZLIB"`.
    pub compression_type: String,
    /// The call, ready to paste.
    pub python: String,
}

impl TensorflowReader {
    pub(crate) fn new(dir: &Path, files: &[String], compression_type: &str) -> TensorflowReader {
        let paths: Vec<String> = files
            .iter()
            .map(|name| dir.join(name).to_string_lossy().into_owned())
            .collect();
        let pattern = match files.first() {
            Some(first) => glob_of(dir, first, files.len()),
            None => String::new(),
        };
        let python = format!(
            "tf.data.TFRecordDataset(sorted(tf.io.gfile.glob({})), compression_type={})",
            crate::schema::python_string(&pattern),
            crate::schema::python_string(compression_type),
        );
        TensorflowReader {
            files: paths,
            compression_type: compression_type.to_owned(),
            python,
        }
    }

    /// The same reader reading the files in `dir` (an empty path: by their names alone).
    pub fn at(&self, dir: &Path) -> TensorflowReader {
        let names: Vec<String> = self.files.iter().map(|file| file_name(file)).collect();
        TensorflowReader::new(dir, &names, &self.compression_type)
    }
}

/// The last part of a path or URL, `/`- or `\\`-separated.
fn file_name(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_owned()
}

/// `DIR/name-?????-of-00003.tfrecord` for the shards named like `first`.
fn glob_of(dir: &Path, first: &str, count: usize) -> String {
    let pattern = match first.split_once("-00000-of-") {
        Some((stem, rest)) => format!("{stem}-{}-of-{rest}", "?".repeat(5)),
        None => first.to_owned(),
    };
    let pattern = if count == 1 {
        first.to_owned()
    } else {
        pattern
    };
    dir.join(pattern).to_string_lossy().into_owned()
}

impl Manifest {
    pub(crate) fn new(settings: Settings) -> Manifest {
        Manifest {
            format: FORMAT.to_owned(),
            tool: concat!("ofconvert ", env!("CARGO_PKG_VERSION")).to_owned(),
            settings,
            inputs: Vec::new(),
            parts: Vec::new(),
            records: 0,
            skipped: SkippedRecords::default(),
            schema: Schema::default(),
            warnings: Vec::new(),
            image_conversion: None,
            rounded_values: None,
            oneflow: None,
            tensorflow: None,
            tfds: None,
            side_files: Vec::new(),
            subfolder: None,
        }
    }

    /// Reads the manifest of the dataset in `dir`; `Ok(None)` when there is none or it is
    /// not one this version can read.
    pub fn read(dir: &Path) -> io::Result<Option<Manifest>> {
        Manifest::read_from(&LocalFs, dir)
    }

    /// [`Manifest::read`] from `storage`.
    pub(crate) fn read_from(storage: &dyn Storage, dir: &Path) -> io::Result<Option<Manifest>> {
        Manifest::read_named(storage, dir, MANIFEST_NAME)
    }

    /// [`Manifest::read_from`] under the file name `name` (the splits of a TFDS dataset
    /// share a folder, each with its own manifest).
    pub(crate) fn read_named(
        storage: &dyn Storage,
        dir: &Path,
        name: &str,
    ) -> io::Result<Option<Manifest>> {
        let Some(bytes) = storage.read(&dir.join(name))? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice::<Manifest>(&bytes)
            .ok()
            .filter(|manifest| manifest.format == FORMAT)
            .map(|manifest| manifest.located(dir)))
    }

    /// The manifest as read from `dir`: its reader lines open `dir` (absolute, or a URL),
    /// whatever place the file names.
    pub(crate) fn located(mut self, dir: &Path) -> Manifest {
        let dir = if crate::storage::object::is_url(dir) {
            dir.to_path_buf()
        } else {
            std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
        };
        self.oneflow = self.oneflow.map(|reader| reader.at(&dir));
        self.tensorflow = self.tensorflow.map(|reader| reader.at(&dir));
        self
    }

    /// The manifest as written: its reader lines open the manifest's own directory (`.`),
    /// naming files by their names, so that it describes its dataset wherever that goes.
    fn relative(&self) -> Manifest {
        let mut manifest = self.clone();
        manifest.oneflow = manifest.oneflow.map(|reader| reader.at(Path::new(".")));
        manifest.tensorflow = manifest.tensorflow.map(|reader| reader.at(Path::new("")));
        manifest
    }

    /// The manifest as its file holds it: naming no place but its own directory
    /// ([`Manifest::located`] undoes that).
    pub(crate) fn to_bytes(&self) -> io::Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(&self.relative()).map_err(io::Error::other)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Whether every part and side file the manifest lists is in `dir` with the size it
    /// lists.
    pub fn parts_complete(&self, dir: &Path) -> bool {
        self.parts_complete_in(&LocalFs, dir)
    }

    /// [`Manifest::parts_complete`] in `storage`: the side files too.
    pub(crate) fn parts_complete_in(&self, storage: &dyn Storage, dir: &Path) -> bool {
        let there = |name: &str, bytes: u64| {
            storage
                .size(&dir.join(name))
                .is_ok_and(|size| size == Some(bytes))
        };
        self.parts.iter().all(|part| there(&part.name, part.bytes))
            && self
                .side_files
                .iter()
                .all(|side| there(&side.name, side.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_say_what_defaults_and_ranks_would_do() {
        let padded = OneflowReader::new(Path::new("d"), 4, "part-", 5);
        assert_eq!(padded.max_ranks, 4);
        assert_eq!(padded.notes.len(), 1, "{:?}", padded.notes);
        assert!(padded.notes[0].contains("not here, and OneFlow aborts"));
        assert!(padded.notes[0].contains("--part-digits 0, and --parts 1"));

        let unpadded = OneflowReader::new(Path::new("d"), 4, "part-", 0);
        assert!(unpadded.notes[0].contains("open part-0 alone"));

        let single = OneflowReader::new(Path::new("d"), 1, "part-", 0);
        assert_eq!(single.notes.len(), 1, "{:?}", single.notes);
        assert!(single.notes[0].contains("--parts N"));

        // Of one part and padded: both in one note, the words of each as for the others.
        let both = OneflowReader::new(Path::new("d"), 1, "part-", 5);
        assert_eq!(both.notes.len(), 1, "{:?}", both.notes);
        assert!(
            both.notes[0].starts_with(&single.notes[0]),
            "{:?}",
            both.notes
        );
        assert!(
            both.notes[0].ends_with(&padded.notes[0]),
            "{:?}",
            both.notes
        );
    }

    #[test]
    fn a_manifest_written_names_its_own_directory_and_read_names_where_it_is() {
        let mut manifest = Manifest::new(
            crate::options::Options::new(crate::options::Direction::TfToOf).settings(),
        );
        manifest.oneflow = Some(OneflowReader::new(Path::new("/old/of"), 2, "part-", 5));
        manifest.tensorflow = Some(TensorflowReader::new(
            Path::new("/old/tf"),
            &[
                "d-00000-of-00002.tfrecord".to_owned(),
                "d-00001-of-00002.tfrecord".to_owned(),
            ],
            "",
        ));
        let written = manifest.relative();
        let oneflow = written.oneflow.as_ref().unwrap();
        assert_eq!(oneflow.ofrecord_dir, ".");
        assert!(
            oneflow.python.starts_with("flow.nn.OFRecordReader(\".\", "),
            "{}",
            oneflow.python
        );
        let tensorflow = written.tensorflow.as_ref().unwrap();
        assert_eq!(tensorflow.files[1], "d-00001-of-00002.tfrecord");
        assert!(
            tensorflow
                .python
                .contains("glob(\"d-?????-of-00002.tfrecord\")"),
            "{}",
            tensorflow.python
        );
        assert!(!serde_json::to_string(&written).unwrap().contains("/old"));

        // Read from where it is now, whatever it names: its own file's `.` or an older
        // version's absolute path.
        for found in [written, manifest] {
            let located = found.located(Path::new("/new/place"));
            assert_eq!(located.oneflow.as_ref().unwrap().ofrecord_dir, "/new/place");
            assert_eq!(
                located.tensorflow.as_ref().unwrap().files[0],
                "/new/place/d-00000-of-00002.tfrecord"
            );
        }
        let in_store = Manifest::new(
            crate::options::Options::new(crate::options::Direction::TfToOf).settings(),
        );
        let mut in_store = in_store;
        in_store.oneflow = Some(OneflowReader::new(Path::new("."), 1, "part-", 0));
        let located = in_store.located(Path::new("s3://bucket/of"));
        let oneflow = located.oneflow.unwrap();
        assert_eq!(oneflow.ofrecord_dir, "s3://bucket/of");
        assert_eq!(
            oneflow.fetch.as_deref(),
            Some("aws s3 sync s3://bucket/of of")
        );
        assert!(oneflow.python.starts_with(
            "# OneFlow opens local paths only; copy the parts first: aws s3 sync \
             s3://bucket/of of\nflow.nn.OFRecordReader(\"of\", "
        ));
    }

    #[test]
    fn a_dataset_in_a_store_is_copied_to_its_path_in_the_bucket() {
        assert_eq!(
            local_copy("gs://b/my data/train/"),
            (
                "gcloud storage rsync --recursive 'gs://b/my data/train/' 'my data/train'"
                    .to_owned(),
                "my data/train".to_owned()
            )
        );
        assert_eq!(local_copy("s3://b").1, "b");
        assert!(local_copy("az://c/of")
            .0
            .starts_with("rclone copy az://c/of of"));
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
