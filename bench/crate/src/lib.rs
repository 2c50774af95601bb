//! Deterministic corpora for benchmarking ofconvert, and the record generators that the
//! criterion benches share with the corpus writer.
//!
//! Three corpora, each written as a TFRecord tree with TFDS shard names, as the OFRecord
//! tree that `ofconvert tf2of` makes of it (`part-NNNNN`), and as the ArrayRecord shards TFDS
//! writes with `file_format='array_record'` (a record a chunk, zstd):
//!
//! * [`Corpus::Large`]: ImageNet-like records in the layout of TensorFlow's inception
//!   scripts, one 60–160 KiB `image/encoded` value plus a few int64, float and short bytes
//!   features; about 200 MB in 16 shards at scale 1.
//! * [`Corpus::Small`]: the four features of TensorFlow's "TFRecord and tf.train.Example"
//!   tutorial, about 90 bytes a record; 400,000 records in 8 shards at scale 1.
//! * [`Corpus::Png`]: CIFAR-like records as TFDS writes them, a real 32×32 RGB PNG in
//!   `image` and an int64 `label`; 2,000 records in 4 shards at scale 1. What
//!   `tf2of --images jpeg|raw` costs is measured on it.
//!
//! The same seed gives the same bytes, on every machine and in every run:
//!
//! ```
//! use ofconvert_bench::{Corpus, Generator};
//!
//! let mut first = Generator::new(Corpus::Small, 42, 0);
//! let mut again = Generator::new(Corpus::Small, 42, 0);
//! let (mut a, mut b) = (Vec::new(), Vec::new());
//! for _ in 0..3 {
//!     first.next_record(&mut a);
//!     again.next_record(&mut b);
//!     assert_eq!(a, b);
//! }
//! let example = ofconvert_bridge::decode_example(&a)?;
//! let features = example.features.expect("the tutorial's four features");
//! assert_eq!(features.feature.len(), 4);
//! # Ok::<(), ofconvert_bridge::Error>(())
//! ```

#![deny(missing_docs)]

use std::f64::consts::TAU;
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder};
use ofconvert_bridge::proto::tensorflow::Example;
use ofconvert_bridge::{encode_example, tf, MappingSpec, Transcoder};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, RngExt, SeedableRng};

/// The benchmark corpora.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Corpus {
    /// ImageNet-like records of about 110 KiB.
    Large,
    /// The TF tutorial's four-feature records of about 90 bytes.
    Small,
    /// CIFAR-like records: a 32×32 RGB PNG and a label.
    Png,
}

impl Corpus {
    /// Every corpus: large, small, png.
    pub const ALL: [Corpus; 3] = [Corpus::Large, Corpus::Small, Corpus::Png];

    /// `"large"`, `"small"` or `"png"`: the directory and the name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Large => "large",
            Corpus::Small => "small",
            Corpus::Png => "png",
        }
    }

    /// The dataset name in the TFDS shard names.
    pub fn dataset(self) -> &'static str {
        match self {
            Corpus::Large => "imagenet_like",
            Corpus::Small => "tutorial",
            Corpus::Png => "cifar_like",
        }
    }

    /// How many shards the corpus is split into, whatever the scale.
    pub fn shards(self) -> u64 {
        match self {
            Corpus::Large => 16,
            Corpus::Small => 8,
            Corpus::Png => 4,
        }
    }

    /// Records per shard at `scale` (at least one). At scale 1 the large corpus averages
    /// 110 KiB × 1,792 records ≈ 202 MB, the small one holds 400,000 records and the png
    /// one 2,000 images.
    pub fn records_per_shard(self, scale: f64) -> u64 {
        let base = match self {
            Corpus::Large => 112.0,
            Corpus::Small => 50_000.0,
            Corpus::Png => 500.0,
        };
        // A float-to-int `as` saturates, and the scale is checked to be positive and finite.
        (base * scale).round().max(1.0) as u64
    }

    /// Keeps the RNG streams of the two corpora apart, so shard 0 of one is no prefix of the
    /// other's randomness.
    fn stream_base(self) -> u64 {
        match self {
            Corpus::Large => 1 << 32,
            Corpus::Small => 2 << 32,
            Corpus::Png => 3 << 32,
        }
    }
}

impl fmt::Display for Corpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCorpus(String);

impl fmt::Display for UnknownCorpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown corpus {:?} (expected large, small or png)",
            self.0
        )
    }
}

impl std::error::Error for UnknownCorpus {}

impl FromStr for Corpus {
    type Err = UnknownCorpus;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Corpus::ALL
            .into_iter()
            .find(|corpus| corpus.name() == name)
            .ok_or_else(|| UnknownCorpus(name.to_owned()))
    }
}

/// The record formats a corpus is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// TFRecord framing around serialized `tf.train.Example`s.
    Tf,
    /// OFRecord framing around serialized `oneflow.OFRecord`s.
    Of,
    /// ArrayRecord files (Riegeli chunks and a footer) of serialized `tf.train.Example`s.
    Array,
}

impl Format {
    /// `"tfrecord"`, `"ofrecord"` or `"array_record"`: the directory name of the tree.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tf => "tfrecord",
            Format::Of => "ofrecord",
            Format::Array => "array_record",
        }
    }
}

/// The labels of the tutorial's `feature2`, picked by `feature1`.
const ANIMALS: [&[u8]; 5] = [b"cat", b"dog", b"chicken", b"horse", b"goat"];

/// The bytes a JPEG file starts with (SOI and a JFIF APP0 header), so that the payload looks
/// like what image pipelines carry.
const JPEG_HEAD: &[u8] = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00";

/// The bytes a JPEG file ends with (EOI).
const JPEG_TAIL: &[u8] = b"\xff\xd9";

/// Size range of the large corpus's `image/encoded` value.
const ENCODED_SIZES: std::ops::RangeInclusive<usize> = 60 * 1024..=160 * 1024;

/// Makes the records of one shard of a corpus from a seeded ChaCha8 stream.
#[derive(Debug)]
pub struct Generator {
    corpus: Corpus,
    rng: ChaCha8Rng,
}

impl Generator {
    /// The generator of shard `shard` of `corpus` under `seed`; shards draw from separate
    /// streams, so any shard can be made without the ones before it.
    pub fn new(corpus: Corpus, seed: u64, shard: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(corpus.stream_base() + shard);
        Generator { corpus, rng }
    }

    /// The next record as a message.
    pub fn example(&mut self) -> Example {
        match self.corpus {
            Corpus::Large => self.imagenet_like(),
            Corpus::Small => self.tutorial(),
            Corpus::Png => self.cifar_like(),
        }
    }

    /// The next record, serialized, replacing the contents of `out`.
    pub fn next_record(&mut self, out: &mut Vec<u8>) {
        out.clear();
        encode_example(&self.example(), out);
    }

    /// The features of inception's `build_imagenet_data.py`, with random bytes standing in for
    /// the picture.
    fn imagenet_like(&mut self) -> Example {
        let rng = &mut self.rng;
        let label = rng.random_range(1..=1000_i64);
        let synset = format!("n{:08}", rng.random_range(1_000_000..100_000_000_u32));
        let filename = format!("{synset}_{}.JPEG", rng.random_range(1..50_000_u32));
        let height = rng.random_range(150..=800_i64);
        let width = rng.random_range(150..=800_i64);
        let mut encoded = vec![0; rng.random_range(ENCODED_SIZES)];
        rng.fill_bytes(&mut encoded);
        encoded[..JPEG_HEAD.len()].copy_from_slice(JPEG_HEAD);
        let tail_at = encoded.len() - JPEG_TAIL.len();
        encoded[tail_at..].copy_from_slice(JPEG_TAIL);
        let xmin = rng.random::<f32>() * 0.5;
        let ymin = rng.random::<f32>() * 0.5;
        let xmax = xmin + rng.random::<f32>() * 0.5;
        let ymax = ymin + rng.random::<f32>() * 0.5;
        tf::example([
            ("image/height", tf::int64_feature([height])),
            ("image/width", tf::int64_feature([width])),
            ("image/colorspace", tf::bytes_feature([&b"RGB"[..]])),
            ("image/channels", tf::int64_feature([3])),
            ("image/class/label", tf::int64_feature([label])),
            ("image/class/synset", tf::bytes_feature([synset])),
            ("image/format", tf::bytes_feature([&b"JPEG"[..]])),
            ("image/filename", tf::bytes_feature([filename])),
            ("image/encoded", tf::bytes_feature([encoded])),
            ("image/object/bbox/xmin", tf::float_feature([xmin])),
            ("image/object/bbox/ymin", tf::float_feature([ymin])),
            ("image/object/bbox/xmax", tf::float_feature([xmax])),
            ("image/object/bbox/ymax", tf::float_feature([ymax])),
            ("image/object/bbox/label", tf::int64_feature([label])),
        ])
    }

    /// The tutorial's record: a coin flip, a class index, the class's name and a normal draw.
    fn tutorial(&mut self) -> Example {
        let rng = &mut self.rng;
        let flip = rng.random_bool(0.5);
        let class = rng.random_range(0..ANIMALS.len());
        // Box–Muller; `1 - u` keeps the logarithm's argument in (0, 1].
        let u1 = 1.0 - rng.random::<f64>();
        let u2 = rng.random::<f64>();
        let normal = (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos();
        tf::example([
            ("feature0", tf::int64_feature([i64::from(flip)])),
            ("feature1", tf::int64_feature([class as i64])),
            ("feature2", tf::bytes_feature([ANIMALS[class]])),
            ("feature3", tf::float_feature([normal as f32])),
        ])
    }
}

impl Generator {
    /// TFDS's CIFAR-10 record: a 32×32 RGB PNG and a label. The picture is a smooth colour
    /// gradient with noise on it, so that it compresses the way photographs of that size do
    /// rather than to nothing (flat) or not at all (pure noise).
    fn cifar_like(&mut self) -> Example {
        let rng = &mut self.rng;
        let label = rng.random_range(0..10_i64);
        let base: [f32; 3] = [rng.random(), rng.random(), rng.random()];
        let slope: [f32; 3] = [rng.random(), rng.random(), rng.random()];
        let mut pixels = Vec::with_capacity(CIFAR_SIDE * CIFAR_SIDE * 3);
        for y in 0..CIFAR_SIDE {
            for x in 0..CIFAR_SIDE {
                let along = (x + y) as f32 / (2 * CIFAR_SIDE) as f32;
                for c in 0..3 {
                    let smooth = 255.0 * (base[c] * 0.6 + slope[c] * along * 0.4);
                    let noise = rng.random_range(-12.0..12.0_f32);
                    pixels.push((smooth + noise).clamp(0.0, 255.0) as u8);
                }
            }
        }
        let mut png = Vec::new();
        PngEncoder::new(&mut png)
            .write_image(
                &pixels,
                CIFAR_SIDE as u32,
                CIFAR_SIDE as u32,
                ExtendedColorType::Rgb8,
            )
            .expect("a PNG encodes into memory");
        tf::example([
            ("image", tf::bytes_feature([png])),
            ("label", tf::int64_feature([label])),
        ])
    }
}

/// Height and width of the png corpus's images.
const CIFAR_SIDE: usize = 32;

/// The first `count` serialized records of shard 0 of `corpus` under `seed`.
pub fn sample_records(corpus: Corpus, seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut generator = Generator::new(corpus, seed, 0);
    (0..count)
        .map(|_| {
            let mut record = Vec::new();
            generator.next_record(&mut record);
            record
        })
        .collect()
}

/// The TFDS name of shard `index` of `shards`: `{dataset}-train.tfrecord-{i:05}-of-{n:05}`.
pub fn tf_shard_name(dataset: &str, index: u64, shards: u64) -> String {
    format!("{dataset}-train.tfrecord-{index:05}-of-{shards:05}")
}

/// The TFDS name of ArrayRecord shard `index` of `shards`:
/// `{dataset}-train.array_record-{i:05}-of-{n:05}`.
pub fn array_record_shard_name(dataset: &str, index: u64, shards: u64) -> String {
    format!("{dataset}-train.array_record-{index:05}-of-{shards:05}")
}

/// The OneFlow name of part `index`: `part-{i:05}`, as OneFlow's ImageNet sets name them.
pub fn of_part_name(index: u64) -> String {
    format!("part-{index:05}")
}

/// How to generate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// The seed of every shard's stream.
    pub seed: u64,
    /// Multiplies the records per shard; the number of shards stays.
    pub scale: f64,
}

/// One tree the generator wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The format of its files.
    pub format: Format,
    /// The directory holding the files.
    pub dir: PathBuf,
    /// How many files.
    pub files: u64,
    /// How many records in all files.
    pub records: u64,
    /// Bytes of all files.
    pub bytes: u64,
}

/// Writes `corpus` under `root` as `root/{corpus}/tfrecord/` (TFDS shards),
/// `root/{corpus}/ofrecord/` (the same records as OFRecord parts, shard *i* as
/// `part-{i:05}`) and `root/{corpus}/array_record/` (the same records as TFDS's ArrayRecord
/// shards, with `array_record`'s default options), replacing files of the same names.
/// Returns the TFRecord tree, the OFRecord tree and the ArrayRecord tree.
///
/// # Errors
///
/// Fails on a scale that is not positive and finite, and on any I/O error.
pub fn write_corpus(root: &Path, corpus: Corpus, options: &Options) -> io::Result<[Tree; 3]> {
    if !(options.scale.is_finite() && options.scale > 0.0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("scale must be positive and finite, not {}", options.scale),
        ));
    }
    let base = root.join(corpus.name());
    let mut tf_tree = new_tree(Format::Tf, base.join(Format::Tf.name()))?;
    let mut of_tree = new_tree(Format::Of, base.join(Format::Of.name()))?;
    let mut array_tree = new_tree(Format::Array, base.join(Format::Array.name()))?;
    let mut transcoder = transcoder()?;
    let records = corpus.records_per_shard(options.scale);
    let shards = corpus.shards();
    let (mut record, mut ofrecord) = (Vec::new(), Vec::new());
    for shard in 0..shards {
        let mut generator = Generator::new(corpus, options.seed, shard);
        let mut tf_writer = ofconvert_tfrecord::Writer::new(File::create(
            tf_tree
                .dir
                .join(tf_shard_name(corpus.dataset(), shard, shards)),
        )?);
        let mut of_writer =
            ofconvert_ofrecord::Writer::new(File::create(of_tree.dir.join(of_part_name(shard)))?);
        let mut array_writer = ofconvert_arrayrecord::Writer::new(File::create(
            array_tree
                .dir
                .join(array_record_shard_name(corpus.dataset(), shard, shards)),
        )?);
        for _ in 0..records {
            generator.next_record(&mut record);
            transcoder
                .tf_to_of(&record, &mut ofrecord)
                .map_err(io::Error::other)?;
            tf_writer.write_record(&record)?;
            of_writer
                .write_record(&ofrecord)
                .map_err(io::Error::other)?;
            array_writer
                .write_record(&record)
                .map_err(io::Error::other)?;
        }
        tf_tree.add_file(tf_writer.bytes_written(), records);
        of_tree.add_file(of_writer.bytes_written(), records);
        tf_writer.finish()?;
        of_writer.finish().map_err(io::Error::other)?;
        let array_file = array_writer.finish().map_err(io::Error::other)?;
        array_tree.add_file(array_file.metadata()?.len(), records);
    }
    Ok([tf_tree, of_tree, array_tree])
}

/// Writes one TFRecord file of large-corpus records, `root/big/tfrecord/big-train.tfrecord-
/// 00000-of-00001`, stopping at the first record that takes it to `min_bytes` or beyond:
/// the input of the "one huge file" memory check.
///
/// # Errors
///
/// Fails on any I/O error.
pub fn write_big_file(root: &Path, min_bytes: u64, seed: u64) -> io::Result<Tree> {
    let mut tree = new_tree(Format::Tf, root.join("big").join(Format::Tf.name()))?;
    let mut generator = Generator::new(Corpus::Large, seed, 0);
    let mut writer =
        ofconvert_tfrecord::Writer::new(File::create(tree.dir.join(tf_shard_name("big", 0, 1)))?);
    let mut record = Vec::new();
    while writer.bytes_written() < min_bytes {
        generator.next_record(&mut record);
        writer.write_record(&record)?;
    }
    tree.add_file(writer.bytes_written(), writer.records_written());
    writer.finish()?;
    Ok(tree)
}

/// The transcoder `ofconvert tf2of` uses by default: the identity mapping.
fn transcoder() -> io::Result<Transcoder> {
    Transcoder::new(MappingSpec::new()).map_err(io::Error::other)
}

fn new_tree(format: Format, dir: PathBuf) -> io::Result<Tree> {
    fs::create_dir_all(&dir)?;
    Ok(Tree {
        format,
        dir,
        files: 0,
        records: 0,
        bytes: 0,
    })
}

impl Tree {
    fn add_file(&mut self, bytes: u64, records: u64) {
        self.files += 1;
        self.records += records;
        self.bytes += bytes;
    }
}
