//! Help that tells the truth: a manual page for every command, with its exit statuses and
//! environment; each command offered only the flags it takes.

use std::fs;

use crate::util::*;

const COMMANDS: [&str; 11] = [
    "tf2of",
    "of2tf",
    "commit",
    "cat",
    "count",
    "verify",
    "schema",
    "index",
    "diff",
    "completions",
    "man",
];

#[test]
fn every_command_has_its_manual_page_and_the_program_page_names_only_those() {
    let work = tempdir();
    let dir = work.path().join("man1");
    let listed = ofconvert().arg("man").arg("--dir").arg(&dir).stdout();
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = COMMANDS
        .iter()
        .map(|command| format!("ofconvert-{command}.1"))
        .chain(["ofconvert.1".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(names, expected, "{listed}");
    assert_eq!(listed.lines().count(), expected.len());

    // The program's page refers to the others: each exists.
    let program = fs::read_to_string(dir.join("ofconvert.1")).unwrap();
    for command in COMMANDS {
        assert!(
            program.contains(&format!("ofconvert\\-{command}(1)")),
            "{command}"
        );
    }
    let tf2of = fs::read_to_string(dir.join("ofconvert-tf2of.1")).unwrap();
    assert_eq!(ofconvert().args(["man", "tf2of"]).stdout(), tf2of);
    for wanted in [
        ".TH ofconvert-tf2of 1",
        "\\-\\-parts",
        "\\-\\-shard",
        "EXIT STATUS",
        "130",
        "ENVIRONMENT",
        "AWS_ENDPOINT_URL",
        "NO_COLOR",
    ] {
        assert!(tf2of.contains(wanted), "tf2of's page lacks {wanted}");
    }
    let completions = fs::read_to_string(dir.join("ofconvert-completions.1")).unwrap();
    assert!(completions.contains("EXIT STATUS"));
    for unwanted in [
        "\\-\\-jobs",
        "\\-\\-quiet",
        "\\-\\-retries",
        "AWS_ENDPOINT_URL",
    ] {
        assert!(
            !completions.contains(unwanted),
            "completions' page offers {unwanted}"
        );
    }
    let failed = ofconvert().args(["man", "convert"]).expect_code(2);
    assert!(failed.stderr.contains("tf2of, of2tf"), "{}", failed.stderr);
}

#[test]
fn of2tf_takes_one_input_and_its_help_says_so() {
    let help = ofconvert().args(["of2tf", "--help"]).stdout();
    assert!(help.contains("<IN> <OUT>"), "{help}");
    assert!(!help.contains("<IN>..."), "{help}");
    assert!(!help.contains("takes several"), "{help}");
    let tf2of = ofconvert().args(["tf2of", "--help"]).stdout();
    assert!(tf2of.contains("<IN>... <OUT>"), "{tf2of}");
    let work = tempdir();
    let of = testdata().join("ofdatasets");
    ofconvert()
        .arg("of2tf")
        .args([&of, &of])
        .arg(work.path().join("out"))
        .expect_code(2);
}

#[test]
fn commands_are_offered_only_the_flags_they_take() {
    let script = ofconvert().args(["completions", "bash"]).stdout();
    // bash's script lists each command's words on the line after its case label.
    let offered = |command: &str| -> String {
        let label = format!("ofconvert__subcmd__{command})");
        let at = script.find(&label).unwrap_or_else(|| panic!("{command}"));
        script[at..].lines().nth(1).unwrap_or_default().to_owned()
    };
    for command in ["completions", "man"] {
        let words = offered(command);
        for flag in ["--jobs", "--quiet", "--retries", "--anonymous"] {
            assert!(!words.contains(flag), "{command} offers {flag}: {words}");
        }
    }
    let words = offered("tf2of");
    for flag in ["--jobs", "--quiet", "--retries", "--anonymous", "--parts"] {
        assert!(words.contains(flag), "tf2of lacks {flag}: {words}");
    }
    assert!(!offered("commit").contains("--jobs"));
    // Every inspecting command works on files in parallel and reads a forced format alike.
    for command in ["count", "verify", "schema", "index", "diff"] {
        assert!(
            offered(command).contains("--jobs"),
            "{command} lacks --jobs"
        );
    }
    for command in ["cat", "count", "verify", "schema", "index"] {
        let words = offered(command);
        for flag in ["--format", "--quiet", "--verbose"] {
            assert!(words.contains(flag), "{command} lacks {flag}: {words}");
        }
    }
    ofconvert()
        .args(["completions", "bash", "--jobs", "2"])
        .expect_code(2);

    // Before or after the command's name, as before.
    let file = testdata().join("golden/tutorial.tfrecord");
    let before = ofconvert()
        .args(["-j", "1", "-q", "count"])
        .arg(&file)
        .stdout();
    let after = ofconvert()
        .args(["count", "-j", "1", "-q"])
        .arg(&file)
        .stdout();
    assert_eq!(before, after);
    assert!(before.starts_with("    500"), "{before}");
}

#[test]
fn cat_counts_and_skips_records_of_each_file_as_its_help_says() {
    let help = ofconvert().args(["cat", "--help"]).stdout();
    assert!(help.contains("at most N records of each file"), "{help}");
    assert!(help.contains("first N records of each file"), "{help}");
    // Two files of 10 records each: skip 8 and print 3 of each gives 2 of each.
    let dir = testdata().join("datasets/imagenet/train");
    let shown = ofconvert()
        .arg("cat")
        .arg(&dir)
        .args(["--skip", "8", "-n", "3", "--json"])
        .stdout();
    assert_eq!(shown.lines().count(), 4, "{shown}");
    let shown = ofconvert()
        .arg("cat")
        .arg(&dir)
        .args(["-n", "1", "--json"])
        .stdout();
    assert_eq!(shown.lines().count(), 2, "{shown}");
}
