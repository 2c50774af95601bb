//! `verify` and `count` of a published dataset check it against its manifest: the parts it
//! lists are there, with the records, bytes and CRC-32C it lists, and no other record file
//! lies among them.

use std::fs;
use std::path::Path;

use super::{eight_parts, flip};
use crate::util::*;

/// Where the first JPEG of `path` begins.
fn first_jpeg(path: &Path) -> usize {
    let bytes = fs::read(path).unwrap();
    bytes
        .windows(3)
        .position(|window| window == b"\xff\xd8\xff")
        .expect("a JPEG")
}

#[test]
fn verify_names_a_part_whose_bytes_changed_by_its_crc32c() {
    let work = tempdir();
    let of = work.path().join("of");
    let input = testdata().join("datasets/imagenet/train");
    ofconvert().arg("tf2of").args([&input, &of]).ok();
    let part = of.join("part-00000");
    // A byte of an image: every record still parses, and holds as many bytes.
    flip(&part, first_jpeg(&part) + 600);

    let verify = ofconvert().arg("verify").arg(&of).expect_code(1);
    let listed = &manifest(&of)["parts"][0]["crc32c"];
    let wrong = format!(
        "{}: CRC-32C {:08x} where ofconvert-manifest.json lists {}: its bytes changed since it \
         was written",
        part.display(),
        ofconvert_tfrecord::crc::crc32c(&fs::read(&part).unwrap()),
        listed.as_str().unwrap()
    );
    assert!(verify.stdout.contains(&wrong), "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("verified 2 files: 20 good records, 1 problem"),
        "{}",
        verify.stdout
    );
    let json: serde_json::Value = serde_json::from_str(
        &ofconvert()
            .args(["verify", "--json"])
            .arg(&of)
            .expect_code(1)
            .stdout,
    )
    .unwrap();
    assert_eq!(json["problems"], 1);

    // A manifest of a version that listed no CRC-32C: the parts are checked without one.
    let mut older = manifest(&of);
    for part in older["parts"].as_array_mut().unwrap() {
        part.as_object_mut().unwrap().remove("crc32c");
    }
    fs::write(
        of.join("ofconvert-manifest.json"),
        serde_json::to_string_pretty(&older).unwrap(),
    )
    .unwrap();
    ofconvert().arg("verify").arg(&of).ok();
}

#[test]
fn verify_and_count_hold_a_dataset_to_the_parts_its_manifest_lists() {
    let work = tempdir();
    let of = eight_parts(work.path());
    ofconvert().arg("verify").arg(&of).ok();

    // The last record of a part gone: the file ends where a record ends.
    let part = of.join("part-00001");
    let records = of_records(&part);
    write_ofrecord(&part, &records[..records.len() - 1]);
    let count = ofconvert().arg("count").arg(&of).expect_code(1);
    assert!(
        count.stderr.contains(&format!(
            "{}: 61 records where ofconvert-manifest.json lists 62 records",
            part.display()
        )),
        "{}",
        count.stderr
    );
    let verify = ofconvert().arg("verify").arg(&of).expect_code(1);
    for wrong in ["bytes where", "61 records where", "CRC-32C"] {
        assert!(verify.stdout.contains(wrong), "{wrong}: {}", verify.stdout);
    }

    // A part missing, and one the manifest does not list.
    fs::remove_file(&part).unwrap();
    fs::copy(of.join("part-00007"), of.join("part-00008")).unwrap();
    let verify = ofconvert().arg("verify").arg(&of).expect_code(1);
    assert!(
        verify.stderr.contains(&format!(
            "{}: missing, yet ofconvert-manifest.json lists it (62 records, ",
            part.display()
        )),
        "{}",
        verify.stderr
    );
    assert!(
        verify.stdout.contains(&format!(
            "{}: a record file ofconvert-manifest.json does not list: not one of the \
             dataset's 8 parts",
            of.join("part-00008").display()
        )),
        "{}",
        verify.stdout
    );
}

#[test]
fn of2tf_output_is_held_to_its_manifest_too() {
    let work = tempdir();
    let of = eight_parts(work.path());
    let tf = work.path().join("back");
    ofconvert().arg("of2tf").args([&of, &tf]).ok();
    // Given back under the names it had; a shard's last record cut off.
    let shard = tf.join("train-00003-of-00008");
    let records = tf_records(&shard);
    write_tfrecord(&shard, &records[..61]);
    let count = ofconvert().arg("count").arg(&tf).expect_code(1);
    assert!(
        count
            .stderr
            .contains(&format!("{}: 61 records where", shard.display())),
        "{}",
        count.stderr
    );
}
