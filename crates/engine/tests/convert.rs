//! The engine driven as a library: plan, convert, the events it reports and what resuming
//! keeps, without the command line.

use std::path::Path;
use std::sync::Mutex;

use ofconvert_bridge::{encode_example, tf, MappingSpec};
use ofconvert_engine::{
    convert, plan, DatasetStatus, Direction, Event, ExistingOutput, Options, Summary,
};
use ofconvert_tfrecord::Writer;

/// Writes `count` Examples (`id`, `label`) as a TFRecord file.
fn write_shard(path: &Path, first: i64, count: i64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut writer = Writer::new(std::fs::File::create(path).unwrap());
    for id in first..first + count {
        let example = tf::example([
            ("id", tf::int64_feature([id])),
            ("label", tf::int64_feature([id % 3])),
        ]);
        let mut payload = Vec::new();
        encode_example(&example, &mut payload);
        writer.write_record(&payload).unwrap();
    }
    writer.finish().unwrap();
}

fn run(input: &Path, output: &Path, options: &Options) -> (Summary, Vec<Event>) {
    let events = Mutex::new(Vec::new());
    let plan = plan(input, output, options).unwrap();
    let summary = convert(plan, options, &|event| events.lock().unwrap().push(event)).unwrap();
    (summary, events.into_inner().unwrap())
}

#[test]
fn plan_groups_shard_families_and_convert_reports_each_dataset_once() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in");
    write_shard(&input.join("train-00000-of-00002"), 0, 5);
    write_shard(&input.join("train-00001-of-00002"), 5, 5);
    write_shard(&input.join("test-00000-of-00001"), 10, 3);
    let options = Options::new(Direction::TfToOf);

    let planned = plan(&input, &work.path().join("out"), &options).unwrap();
    let mut names: Vec<(String, usize)> = planned
        .datasets
        .iter()
        .map(|dataset| (dataset.name.clone(), dataset.inputs.len()))
        .collect();
    names.sort();
    assert_eq!(names, [("test".to_owned(), 1), ("train".to_owned(), 2)]);

    let (summary, events) = run(&input, &work.path().join("out"), &options);
    assert_eq!(summary.records, 13);
    assert_eq!(summary.failed, 0);
    assert!(matches!(
        events.first(),
        Some(Event::Started {
            datasets: 2,
            files: 3,
            ..
        })
    ));
    let mut done: Vec<(String, u64, usize)> = events
        .iter()
        .filter_map(|event| match event {
            Event::DatasetDone {
                name,
                status: DatasetStatus::Converted,
                records,
                parts,
                ..
            } => Some((name.clone(), *records, *parts)),
            _ => None,
        })
        .collect();
    done.sort();
    assert_eq!(
        done,
        [("test".to_owned(), 3, 1), ("train".to_owned(), 10, 2)]
    );
    let progressed: u64 = events
        .iter()
        .map(|event| match event {
            Event::Progress { records, .. } => *records,
            _ => 0,
        })
        .sum();
    assert_eq!(progressed, 13);
}

#[test]
fn resuming_with_another_mapping_spec_redoes_the_dataset_even_without_a_description() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("in");
    write_shard(&input.join("data.tfrecord"), 0, 4);
    let output = work.path().join("out");

    let mut options = Options::new(Direction::TfToOf);
    run(&input, &output, &options);

    options.existing = ExistingOutput::Resume;
    let (summary, _) = run(&input, &output, &options);
    assert_eq!(summary.datasets[0].status, DatasetStatus::Kept);

    // Only the spec changes: a library caller does not describe it in words.
    options.mapping = MappingSpec::new().drop_feature("label");
    assert!(options.mapping_description.is_empty());
    let (summary, _) = run(&input, &output, &options);
    assert_eq!(summary.datasets[0].status, DatasetStatus::Converted);
    let manifest = summary.datasets[0].manifest.as_ref().unwrap();
    assert_eq!(manifest.settings.mapping_spec, "drop \"label\"");
    assert!(manifest
        .schema
        .features
        .iter()
        .all(|feature| feature.name != "label"));
}

#[test]
fn bytes_read_are_reported_whole_a_mebibyte_at_a_time() {
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("in/images.tfrecord");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut writer = Writer::new(std::fs::File::create(&path).unwrap());
    for id in 0..40u8 {
        let example = tf::example([("image", tf::bytes_feature([vec![id; 100_000]]))]);
        let mut payload = Vec::new();
        encode_example(&example, &mut payload);
        writer.write_record(&payload).unwrap();
    }
    writer.finish().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();

    let options = Options::new(Direction::TfToOf);
    let (summary, events) = run(path.parent().unwrap(), &work.path().join("out"), &options);
    assert_eq!(summary.records, 40);
    let reports: Vec<u64> = events
        .iter()
        .filter_map(|event| match event {
            Event::Progress { bytes, .. } if *bytes > 0 => Some(*bytes),
            _ => None,
        })
        .collect();
    assert_eq!(reports.iter().sum::<u64>(), size);
    // Not one report per read: each one wakes whatever draws the progress.
    assert!(reports.len() as u64 <= size / (1 << 20) + 1, "{reports:?}");
}
