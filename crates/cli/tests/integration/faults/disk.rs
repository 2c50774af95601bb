//! A full disk, a file-size limit

use super::*;

/// A small dataset that fits in a megabyte and a big one whose parts do not, as input for
/// `command`.
fn small_and_big(input: &Path, command: &str) {
    let build = |dir: &str, files: usize, records: usize, size: usize| match command {
        "tf2of" => tf_tree(input, &[dir], files, records, size),
        _ => of_tree(input, &[dir], files, records, size),
    };
    build("a-small", 1, 10, 1_000);
    build("b-big", 2, 40, 40_000);
}

/// Runs `command` over [`small_and_big`] into `output` under `confine` and checks that the
/// big dataset failed with `why` and a path inside it, that nothing of it and no temporary
/// file is left, and that the small dataset is what an unconfined run writes.
fn fails_to_write(command: &str, output: &Path, confine: Confine, why: &str) {
    let work = tempdir();
    let input = work.path().join("in");
    small_and_big(&input, command);
    let run = run_confined(
        the_binary(),
        confine,
        args([
            os("--jobs"),
            os("1"),
            os(command),
            input.as_os_str(),
            output.as_os_str(),
        ]),
    )
    .expect_code(1);
    let big = output.join("b-big");
    let line = run
        .stderr
        .lines()
        .find(|line| line.trim_start().starts_with("b-big: "))
        .unwrap_or_else(|| panic!("no failure line for b-big:\n{}", run.stderr));
    assert!(
        line.contains(&format!("{}/", big.display())) && line.ends_with(why),
        "{line}"
    );
    assert!(run.stderr.contains("1 dataset failed"), "{}", run.stderr);
    assert_eq!(temporaries(output), Vec::<PathBuf>::new());
    assert!(files_under(&big).is_empty(), "{:?}", tree(&big));

    let clean = work.path().join("clean");
    run_confined(
        the_binary(),
        Confine::default(),
        args([os(command), input.as_os_str(), clean.as_os_str()]),
    )
    .ok();
    assert_same_output(&output.join("a-small"), &clean.join("a-small"));
}

fn file_size_limit() -> Confine {
    Confine {
        file_size: Some(1 << 20),
        ..Confine::default()
    }
}

#[test]
fn a_file_size_limit_fails_the_dataset_that_outgrows_it_with_efbig_not_a_kill() {
    for command in ["tf2of", "of2tf"] {
        let work = tempdir();
        let output = work.path().join("out");
        fails_to_write(
            command,
            &output,
            file_size_limit(),
            "File too large (os error 27)",
        );
    }
}

#[test]
fn a_full_disk_fails_the_dataset_that_does_not_fit_and_cleans_up() {
    for command in ["tf2of", "of2tf"] {
        let work = tempdir();
        let disk = work.path().join("disk");
        fs::create_dir(&disk).unwrap();
        let output = disk.join("out");
        match Tmpfs::mount(&disk, "size=1m", false) {
            Ok(_mounted) => fails_to_write(
                command,
                &output,
                Confine::default(),
                "No space left on device (os error 28)",
            ),
            Err(err) => {
                // Not a pass in disguise: the same failure, made by the kernel's other way
                // of refusing a write.
                eprintln!("no tmpfs here ({err}): a file-size limit stands in for a full disk");
                fails_to_write(
                    command,
                    &output,
                    file_size_limit(),
                    "File too large (os error 27)",
                );
            }
        }
    }
}
