//! --on-corrupt skip

use super::*;

/// A framed TFRecord stream of `records` whose records at `damaged` have one data byte
/// flipped (their data checksum fails, their framing holds). Returns the stream and the
/// offsets of the damaged records' data.
fn with_flipped_data(records: &[Vec<u8>], damaged: &[usize]) -> (Vec<u8>, Vec<u64>) {
    let mut stream: Vec<u8> = records.iter().flat_map(|record| tf_frame(record)).collect();
    let starts = record_starts(&stream);
    let mut data_offsets = Vec::new();
    for &index in damaged {
        let data = starts[index] + 12;
        stream[data as usize + 5] ^= 0x40;
        data_offsets.push(data);
    }
    (stream, data_offsets)
}

fn without(records: &[Vec<u8>], damaged: &[usize]) -> Vec<Vec<u8>> {
    records
        .iter()
        .enumerate()
        .filter(|(index, _)| !damaged.contains(index))
        .map(|(_, record)| record.clone())
        .collect()
}

#[test]
fn skip_counts_exactly_the_damaged_records_and_keeps_the_others_in_order() {
    let work = tempdir();
    let input = work.path().join("in");
    let records = examples(0, 30, 50);
    // The first and last records, and both sides of the cuts --parts 3 makes (after
    // records 9 and 19).
    let damaged = [0, 9, 10, 17, 19, 20, 29];
    let (stream, offsets) = with_flipped_data(&records, &damaged);
    let plain = input.join("plain");
    fs::create_dir_all(&plain).unwrap();
    let plain_file = plain.join("x.tfrecord");
    fs::write(&plain_file, &stream).unwrap();
    let packed = input.join("packed");
    fs::create_dir_all(&packed).unwrap();
    let packed_file = packed.join("x.tfrecord.gz");
    fs::write(&packed_file, gzip(&stream)).unwrap();

    let output = work.path().join("out");
    let run = invoke(args([
        os("tf2of"),
        input.as_os_str(),
        output.as_os_str(),
        os("--on-corrupt"),
        os("skip"),
        os("--parts"),
        os("3"),
        os("--json"),
    ]))
    .ok();
    let summary: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(summary["records"], 2 * (30 - damaged.len()));
    let kept = to_of(&without(&records, &damaged));
    for (dataset, file) in [("packed", &packed_file), ("plain", &plain_file)] {
        let manifest = manifest(&output.join(dataset));
        assert_eq!(manifest["skipped"]["corrupt"], damaged.len(), "{dataset}");
        assert_eq!(manifest["records"], 30 - damaged.len(), "{dataset}");
        let per_part: Vec<u64> = manifest["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part["records"].as_u64().unwrap())
            .collect();
        // Parts cut the 30 records at 10 and 20, damaged ones included.
        assert_eq!(per_part, [8, 7, 8], "{dataset}");
        let details: Vec<&str> = manifest["skipped"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|detail| detail.as_str().unwrap())
            .collect();
        assert_eq!(details.len(), damaged.len(), "{dataset}");
        for ((detail, index), offset) in details.iter().zip(damaged).zip(&offsets) {
            let place = format!(
                "{}: offset {offset} (record #{index}): corrupted record (data checksum",
                file.display()
            );
            assert!(detail.starts_with(&place), "{detail}\n{place}");
        }
        assert_eq!(of_dataset(&output.join(dataset)), kept, "{dataset}");
    }

    // OneFlow parts: payloads that do not parse are skipped and counted the same way.
    let of_input = work.path().join("of");
    fs::create_dir(&of_input).unwrap();
    let mut first = to_of(&examples(0, 6, 10));
    let mut second = to_of(&examples(6, 4, 10));
    for index in [1, 4] {
        first[index] = vec![0xff; 7];
    }
    second[0] = vec![0xff; 7];
    write_ofrecord(&of_input.join("part-0"), &first);
    write_ofrecord(&of_input.join("part-1"), &second);
    let back = work.path().join("tf");
    invoke(args([
        os("of2tf"),
        of_input.as_os_str(),
        back.as_os_str(),
        os("--on-corrupt"),
        os("skip"),
    ]))
    .ok();
    let manifest = manifest(&back);
    assert_eq!(manifest["skipped"]["corrupt"], 3);
    assert_eq!(manifest["records"], 7);
    let records: Vec<Vec<u8>> = files_starting(&back, "of-")
        .iter()
        .flat_map(|shard| tf_records(shard))
        .collect();
    let mut expected = without(&first, &[1, 4]);
    expected.extend(without(&second, &[0]));
    assert_eq!(records, to_tf(&expected));
}
