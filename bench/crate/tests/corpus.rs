//! The corpora are what the benchmark claims: the right shapes and counts, the same bytes for
//! the same seed, OFRecord parts that are the conversion of the TFRecord shards, ArrayRecord
//! shards holding the same records, and sizes that match the files.

use std::fs;
use std::path::Path;

use ofconvert_bench::{
    array_record_shard_name, sample_records, tf_shard_name, write_big_file, write_corpus, Corpus,
    Format, Generator, Options,
};
use ofconvert_bridge::{decode_example, ExampleExt, MappingSpec, Transcoder};

const TINY: Options = Options {
    seed: 7,
    scale: 0.002,
};

fn read_tf(path: &Path) -> Vec<Vec<u8>> {
    let file = fs::File::open(path).unwrap();
    ofconvert_tfrecord::Reader::new(file)
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn read_of(path: &Path) -> Vec<Vec<u8>> {
    let file = fs::File::open(path).unwrap();
    ofconvert_ofrecord::Reader::new(file)
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn read_array(path: &Path) -> Vec<Vec<u8>> {
    let file = fs::File::open(path).unwrap();
    ofconvert_arrayrecord::Reader::new(file)
        .records()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

#[test]
fn scale_one_has_the_sizes_the_issue_asks_for() {
    assert_eq!(Corpus::Large.shards(), 16);
    assert_eq!(Corpus::Small.shards(), 8);
    assert!(Corpus::Small.shards() * Corpus::Small.records_per_shard(1.0) >= 400_000);
    // 60–160 KiB values average 110 KiB: about 200 MB in all.
    let large = Corpus::Large.shards() * Corpus::Large.records_per_shard(1.0) * 110 * 1024;
    assert!((190_000_000..=215_000_000).contains(&large), "{large}");
    assert_eq!(Corpus::Large.records_per_shard(2.0), 224);
    assert_eq!(Corpus::Small.records_per_shard(1e-9), 1);
}

#[test]
fn every_tree_holds_the_generated_records_in_each_format() {
    let root = tempfile::tempdir().unwrap();
    let mut transcoder = Transcoder::new(MappingSpec::new()).unwrap();
    for corpus in Corpus::ALL {
        let [tf_tree, of_tree, array_tree] = write_corpus(root.path(), corpus, &TINY).unwrap();
        assert_eq!(tf_tree.format, Format::Tf);
        assert_eq!(of_tree.format, Format::Of);
        assert_eq!(array_tree.format, Format::Array);
        assert_eq!(
            tf_tree.dir,
            root.path().join(corpus.name()).join("tfrecord")
        );
        assert_eq!(
            of_tree.dir,
            root.path().join(corpus.name()).join("ofrecord")
        );
        assert_eq!(
            array_tree.dir,
            root.path().join(corpus.name()).join("array_record")
        );
        let per_shard = corpus.records_per_shard(TINY.scale);
        for tree in [&tf_tree, &of_tree, &array_tree] {
            assert_eq!(tree.files, corpus.shards());
            assert_eq!(tree.records, corpus.shards() * per_shard);
            assert_eq!(tree.bytes, dir_bytes(&tree.dir));
        }

        let tf_names = file_names(&tf_tree.dir);
        let of_names = file_names(&of_tree.dir);
        let array_names = file_names(&array_tree.dir);
        assert_eq!(tf_names.len() as u64, corpus.shards());
        assert_eq!(of_names.len() as u64, corpus.shards());
        assert_eq!(array_names.len() as u64, corpus.shards());
        for shard in 0..corpus.shards() {
            let tf_name = tf_shard_name(corpus.dataset(), shard, corpus.shards());
            let of_name = format!("part-{shard:05}");
            let array_name = array_record_shard_name(corpus.dataset(), shard, corpus.shards());
            assert!(tf_names.contains(&tf_name), "{tf_name} in {tf_names:?}");
            let examples = read_tf(&tf_tree.dir.join(&tf_name));
            let ofrecords = read_of(&of_tree.dir.join(&of_name));
            assert_eq!(examples.len() as u64, per_shard);
            assert_eq!(ofrecords.len() as u64, per_shard);
            assert_eq!(read_array(&array_tree.dir.join(&array_name)), examples);

            let mut generator = Generator::new(corpus, TINY.seed, shard);
            let (mut expected, mut converted) = (Vec::new(), Vec::new());
            for (example, ofrecord) in examples.iter().zip(&ofrecords) {
                generator.next_record(&mut expected);
                assert_eq!(example, &expected);
                transcoder.tf_to_of(example, &mut converted).unwrap();
                assert_eq!(ofrecord, &converted);
                transcoder.of_to_tf(ofrecord, &mut converted).unwrap();
                assert_eq!(example, &converted);
            }
        }
    }
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_another_seed_does_not() {
    let (first, second, other) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let reseeded = Options { seed: 8, ..TINY };
    for corpus in Corpus::ALL {
        let [a, ..] = write_corpus(first.path(), corpus, &TINY).unwrap();
        let [b, ..] = write_corpus(second.path(), corpus, &TINY).unwrap();
        let [c, ..] = write_corpus(other.path(), corpus, &reseeded).unwrap();
        for name in file_names(&a.dir) {
            let bytes = fs::read(a.dir.join(&name)).unwrap();
            assert_eq!(bytes, fs::read(b.dir.join(&name)).unwrap(), "{name}");
            assert_ne!(bytes, fs::read(c.dir.join(&name)).unwrap(), "{name}");
        }
    }
}

#[test]
fn shards_and_corpora_draw_from_different_streams() {
    let mut first = Generator::new(Corpus::Small, 1, 0);
    let mut second = Generator::new(Corpus::Small, 1, 1);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let differing = (0..32)
        .filter(|_| {
            first.next_record(&mut a);
            second.next_record(&mut b);
            a != b
        })
        .count();
    // Two tutorial records collide by chance only when their float is equal too.
    assert_eq!(differing, 32);
}

#[test]
fn large_records_look_like_inception_imagenet_records() {
    for bytes in sample_records(Corpus::Large, 3, 40) {
        let example = decode_example(&bytes).unwrap();
        let encoded = &example.bytes_values("image/encoded").unwrap()[0];
        assert!((60 * 1024..=160 * 1024).contains(&encoded.len()));
        assert!(encoded.starts_with(b"\xff\xd8\xff\xe0"));
        assert!(encoded.ends_with(b"\xff\xd9"));
        let label = example.int64_values("image/class/label").unwrap();
        assert!((1..=1000).contains(&label[0]));
        assert_eq!(example.int64_values("image/object/bbox/label"), Some(label));
        assert_eq!(example.int64_values("image/channels"), Some(&[3][..]));
        let xmin = example.float_values("image/object/bbox/xmin").unwrap()[0];
        let xmax = example.float_values("image/object/bbox/xmax").unwrap()[0];
        assert!((0.0..=0.5).contains(&xmin) && xmin <= xmax && xmax <= 1.0);
        assert_eq!(
            example.bytes_values("image/format"),
            Some(&[b"JPEG".to_vec()][..])
        );
        assert_eq!(example.features.unwrap().feature.len(), 14);
    }
}

#[test]
fn small_records_are_the_tutorials_four_features() {
    let animals: [&[u8]; 5] = [b"cat", b"dog", b"chicken", b"horse", b"goat"];
    let records = sample_records(Corpus::Small, 3, 2000);
    let mut flips = 0;
    for bytes in &records {
        assert!((70..=100).contains(&bytes.len()), "{}", bytes.len());
        let example = decode_example(bytes).unwrap();
        let flip = example.int64_values("feature0").unwrap()[0];
        assert!(flip == 0 || flip == 1);
        flips += flip;
        let class = example.int64_values("feature1").unwrap()[0];
        let name = &example.bytes_values("feature2").unwrap()[0];
        assert_eq!(name.as_slice(), animals[usize::try_from(class).unwrap()]);
        assert!(example.float_values("feature3").unwrap()[0].is_finite());
        assert_eq!(example.features.unwrap().feature.len(), 4);
    }
    // A fair coin over 2000 throws lands far inside these bounds.
    assert!((800..=1200).contains(&flips), "{flips}");
}

#[test]
fn png_records_are_tfds_cifar_records_with_real_pngs() {
    let records = sample_records(Corpus::Png, 3, 50);
    let mut labels = std::collections::BTreeSet::new();
    for bytes in &records {
        let example = decode_example(bytes).unwrap();
        labels.insert(example.int64_values("label").unwrap()[0]);
        let png = &example.bytes_values("image").unwrap()[0];
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let image = image::load_from_memory_with_format(png, image::ImageFormat::Png).unwrap();
        assert_eq!((image.width(), image.height()), (32, 32));
        assert_eq!(image.color(), image::ColorType::Rgb8);
        // Neither flat nor noise: compressed, but not to nothing.
        assert!((1_000..3_072).contains(&png.len()), "{}", png.len());
        assert_eq!(example.features.unwrap().feature.len(), 2);
    }
    assert!(labels.iter().all(|label| (0..10).contains(label)));
    assert!(labels.len() > 5, "{labels:?}");
}

#[test]
fn the_big_file_stops_at_the_first_record_past_the_size() {
    let root = tempfile::tempdir().unwrap();
    let min_bytes = 1 << 20;
    let tree = write_big_file(root.path(), min_bytes, 5).unwrap();
    assert_eq!(tree.files, 1);
    let path = tree.dir.join(tf_shard_name("big", 0, 1));
    assert_eq!(fs::metadata(&path).unwrap().len(), tree.bytes);
    assert!(tree.bytes >= min_bytes);
    let records = read_tf(&path);
    assert_eq!(records.len() as u64, tree.records);
    let last_framed = records.last().unwrap().len() as u64 + 16;
    assert!(tree.bytes - last_framed < min_bytes);
}

#[test]
fn a_scale_that_is_not_positive_is_refused() {
    let root = tempfile::tempdir().unwrap();
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let options = Options { seed: 1, scale };
        let err = write_corpus(root.path(), Corpus::Small, &options).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }
    assert!(fs::read_dir(root.path()).unwrap().next().is_none());
}

#[test]
fn corpus_names_parse_back() {
    for corpus in Corpus::ALL {
        assert_eq!(corpus.name().parse::<Corpus>(), Ok(corpus));
        assert_eq!(corpus.to_string(), corpus.name());
    }
    let err = "medium".parse::<Corpus>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown corpus \"medium\" (expected large, small or png)"
    );
}
