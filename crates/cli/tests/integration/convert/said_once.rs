//! A conversion says each thing once: a dataset in its summary, not also in a progress line
//! before it (unless -v asks for everything).

use super::{datasets, SAMPLE_DATASETS};
use crate::util::*;

#[test]
fn the_quick_start_names_each_dataset_once() {
    let work = tempdir();
    let out = work.path().join("demo");
    let run = ofconvert()
        .arg("tf2of")
        .args([&datasets(), &out])
        .arg("--overwrite")
        .ok();
    let lines: Vec<&str> = run.stdout.lines().chain(run.stderr.lines()).collect();
    for (name, _) in SAMPLE_DATASETS {
        let naming = lines
            .iter()
            .filter(|line| {
                line.trim_start().starts_with(&format!("{name} "))
                    || line.contains(&format!("converted {name}:"))
            })
            .count();
        assert_eq!(naming, 1, "{name}:\n{}", lines.join("\n"));
    }

    // -v keeps the progress lines too.
    let verbose = ofconvert()
        .arg("tf2of")
        .args([&datasets(), &out])
        .args(["--overwrite", "-v"])
        .ok();
    assert!(
        verbose.stderr.contains("[1/9] converted "),
        "{}",
        verbose.stderr
    );
}

#[test]
fn a_misspelt_name_is_warned_once_and_of2tf_has_no_oneflow_warnings() {
    let work = tempdir();
    let out = work.path().join("of");
    let typo = ofconvert()
        .arg("tf2of")
        .args([&datasets(), &out])
        .args(["--drop-if-present", "nosuch"])
        .ok();
    let warned: Vec<&str> = typo
        .stderr
        .lines()
        .filter(|line| line.contains("nosuch"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", typo.stderr);
    assert!(warned[0].contains("all 9 datasets"), "{}", typo.stderr);

    // of2tf writes TFRecords: what OneFlow's image decoder cannot read is no concern.
    let back = ofconvert()
        .arg("of2tf")
        .args([&out, &work.path().join("tf")])
        .ok();
    assert!(
        !back.stderr.contains("OFRecordImageDecoder"),
        "{}",
        back.stderr
    );
    assert!(!back.stderr.contains("warning"), "{}", back.stderr);
}

#[test]
fn schema_of_a_tree_has_a_section_and_a_reader_per_dataset() {
    let work = tempdir();
    let out = work.path().join("demo");
    ofconvert().arg("tf2of").args([&datasets(), &out]).ok();
    let code = ofconvert()
        .args(["schema", "--oneflow"])
        .arg(&out)
        .ok()
        .stdout;
    let readers: Vec<&str> = code
        .lines()
        .filter(|line| line.starts_with("reader = flow.nn.OFRecordReader("))
        .collect();
    assert_eq!(readers.len(), 9, "{code}");
    for (name, _) in SAMPLE_DATASETS {
        let dir = out.join(name);
        let path = format!("OFRecordReader(\"{}\"", dir.display());
        assert_eq!(
            readers.iter().filter(|line| line.contains(&path)).count(),
            1,
            "{path}\n{code}"
        );
    }
    assert!(!code.contains("\"OUT\""), "{code}");
    assert!(!code.contains("missing from"), "{code}");

    // The table too: a section per dataset, each with its own counts.
    let table = ofconvert().arg("schema").arg(&out).ok().stdout;
    assert_eq!(table.matches("== ").count(), 9, "{table}");
    assert!(table.contains("bert: 16 records in 1 file"), "{table}");
}
