//! Large records through every way a worker writes them: on its own thread, or, with one
//! job on a machine of several cores, with a thread writing its parts' buffers; synced or
//! not, compressed or not, parts cut by size. The bytes must be the same every way, and
//! verify and count must agree with them.

use std::fs;
use std::path::{Path, PathBuf};

use ofconvert_bridge::{encode_example, tf};
use ofconvert_engine::{
    convert, count_file, plan, verify_file, Checksums, Direction, Format, Options,
};
use ofconvert_tfrecord::{Compression, Reader, ReaderOptions, Writer};

/// Records of 20–180 KB: a pattern of bytes that differs record to record, and an id.
fn records(count: u64) -> Vec<Vec<u8>> {
    (0..count)
        .map(|id| {
            let len = 20_000 + (id as usize * 7_919) % 160_000;
            let image: Vec<u8> = (0..len)
                .map(|i| ((i as u64 * 31 + id) % 251) as u8)
                .collect();
            let mut payload = Vec::new();
            encode_example(
                &tf::example([
                    ("image/encoded", tf::bytes_feature([image])),
                    ("id", tf::int64_feature([id as i64])),
                ]),
                &mut payload,
            );
            payload
        })
        .collect()
}

fn write_tfrecord(path: &Path, records: &[Vec<u8>]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut writer = Writer::new(fs::File::create(path).unwrap());
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.finish().unwrap();
}

/// The record files under `dir`, in name order.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            !name.ends_with(".json") && !name.starts_with('.')
        })
        .collect();
    files.sort();
    files
}

/// Every record of the TFRecord files in `dir`, in order.
fn tf_records(dir: &Path, compression: Compression) -> Vec<Vec<u8>> {
    let options = ReaderOptions {
        compression,
        ..ReaderOptions::default()
    };
    parts(dir)
        .iter()
        .flat_map(|path| {
            Reader::with_options(fs::File::open(path).unwrap(), options)
                .records()
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        })
        .collect()
}

fn run(input: &Path, output: &Path, options: &Options) {
    let plan = plan(input, output, options).unwrap();
    let summary = convert(plan, options, &|_| {}).unwrap();
    assert_eq!(summary.failed, 0, "{summary:?}");
}

#[test]
fn large_records_come_out_the_same_however_they_are_read_and_written() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in");
    let records = records(90);
    write_tfrecord(&input.join("a.tfrecord"), &records[..50]);
    write_tfrecord(&input.join("b.tfrecord"), &records[50..]);
    let mut reference: Option<Vec<Vec<u8>>> = None;
    for jobs in [0, 1] {
        for sync in [true, false] {
            for max_part in [None, Some(3_000_000)] {
                let tag = format!("j{jobs}-{sync}-{max_part:?}");
                let mut options = Options::new(Direction::TfToOf);
                options.jobs = jobs;
                options.sync = sync;
                options.sizing.max_part_bytes = max_part;
                let of = work.path().join(format!("of-{tag}"));
                run(&input, &of, &options);
                let of_parts: Vec<Vec<u8>> =
                    parts(&of).iter().map(|p| fs::read(p).unwrap()).collect();
                if max_part.is_some() {
                    assert!(of_parts.len() > 2, "{tag}");
                    assert!(of_parts.iter().all(|p| p.len() <= 3_000_000), "{tag}");
                }
                for part in parts(&of) {
                    let verified = verify_file(&part, Format::Of);
                    assert!(
                        verified.problems.is_empty(),
                        "{tag}: {:?}",
                        verified.problems
                    );
                }
                let counted: u64 = parts(&of)
                    .iter()
                    .map(|p| {
                        count_file(p, Format::Of, Checksums::Verify)
                            .unwrap()
                            .records
                    })
                    .sum();
                assert_eq!(counted, records.len() as u64, "{tag}");
                // The same OFRecords, whichever way they were written.
                let joined = of_parts.concat();
                match &reference {
                    Some(first) => assert!(first.concat() == joined, "{tag}"),
                    None => reference = Some(of_parts.clone()),
                }

                for compression in [Compression::None, Compression::Gzip] {
                    let mut options = Options::new(Direction::OfToTf);
                    options.jobs = jobs;
                    options.sync = sync;
                    options.compression = Some(compression);
                    let back = work.path().join(format!("tf-{tag}-{}", compression.name()));
                    run(&of, &back, &options);
                    assert!(
                        tf_records(&back, compression) == records,
                        "{tag} {compression:?}"
                    );
                    if compression == Compression::None {
                        for part in parts(&back) {
                            let verified = verify_file(&part, Format::Tf);
                            assert!(verified.problems.is_empty(), "{tag}");
                        }
                    }
                }
            }
        }
    }
}
