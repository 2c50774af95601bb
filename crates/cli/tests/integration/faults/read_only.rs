//! A read-only output directory

use super::*;

/// Panics unless an unprivileged child really cannot write into `dir`: root ignores
/// permission bits, and a test run with them ignored would show nothing.
fn assert_cannot_write_into(dir: &Path) {
    let probe = dir.join("probe");
    let status = confined(
        Path::new("/bin/sh"),
        Confine {
            unprivileged: true,
            ..Confine::default()
        },
    )
    .args(["-c", ": > \"$1\"", "sh"])
    .arg(&probe)
    .command()
    .stderr(Stdio::null())
    .status()
    .expect("/bin/sh runs");
    assert!(
        !status.success() && !probe.exists(),
        "{} was writable to the unprivileged child (uid {}): permission bits are not \
         enforced here, so a read-only output cannot be shown",
        dir.display(),
        if is_root() { NOBODY } else { euid() }
    );
}

fn read_only(dir: &Path) {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).unwrap();
}

#[test]
fn a_read_only_output_directory_fails_each_dataset_and_writes_nothing() {
    for command in ["tf2of", "of2tf"] {
        let sandbox = Sandbox::new();
        let input = sandbox.path().join("in");
        let datasets = ["a", "b"];
        match command {
            "tf2of" => tf_tree(&input, &datasets, 2, 5, 100),
            _ => of_tree(&input, &datasets, 2, 5, 100),
        }

        // The output root is read-only: no dataset directory can be made.
        let output = sandbox.path().join("out");
        fs::create_dir(&output).unwrap();
        read_only(&output);
        assert_cannot_write_into(&output);
        let run = sandbox
            .run_as_nobody(args([os(command), input.as_os_str(), output.as_os_str()]))
            .expect_code(1);
        for dataset in datasets {
            let line = format!(
                "  {dataset}: {}: I/O error: Permission denied (os error 13)",
                output.join(dataset).display()
            );
            assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
        }
        assert!(run.stderr.contains("2 datasets failed"), "{}", run.stderr);
        assert!(files_under(&output).is_empty(), "{:?}", tree(&output));

        // An output root that cannot be made: the run cannot start.
        let inside = output.join("new");
        let run = sandbox
            .run_as_nobody(args([os(command), input.as_os_str(), inside.as_os_str()]))
            .expect_code(1);
        assert!(
            run.stderr.contains(&format!(
                "ofconvert: the conversion could not start: {}: I/O error: Permission denied",
                inside.display()
            )),
            "{}",
            run.stderr
        );

        // The dataset directories exist but are read-only (an earlier run, --overwrite):
        // the first temporary part cannot be created, and the directory is named, not the
        // temporary file.
        let output = sandbox.open_dir(&format!("existing-{command}"));
        for dataset in datasets {
            fs::create_dir(output.join(dataset)).unwrap();
            read_only(&output.join(dataset));
        }
        let run = sandbox
            .run_as_nobody(args([
                os(command),
                input.as_os_str(),
                output.as_os_str(),
                os("--overwrite"),
            ]))
            .expect_code(1);
        for dataset in datasets {
            let line = format!(
                "  {dataset}: {}: I/O error: cannot write in it: Permission denied (os error 13)",
                output.join(dataset).display()
            );
            assert!(
                run.stderr.lines().any(|l| l == line),
                "{line}\n{}",
                run.stderr
            );
            assert!(!run.stderr.contains(TEMP_PREFIX), "{}", run.stderr);
        }
        assert!(files_under(&output).is_empty(), "{:?}", tree(&output));
    }
}

#[test]
fn a_read_only_file_system_fails_each_dataset_and_writes_nothing() {
    let work = tempdir();
    let input = work.path().join("in");
    tf_tree(&input, &["a", "b"], 1, 5, 100);
    let output = work.path().join("ro");
    fs::create_dir(&output).unwrap();
    let _mounted = match Tmpfs::mount(&output, "size=1m", true) {
        Ok(mounted) => mounted,
        Err(err) => {
            // Then the unprivileged test above must show read-only output on its own.
            eprintln!("cannot mount a read-only tmpfs here ({err})");
            let sandbox = Sandbox::new();
            let dir = sandbox.path().join("read-only");
            fs::create_dir(&dir).unwrap();
            read_only(&dir);
            assert_cannot_write_into(&dir);
            return;
        }
    };
    let run = invoke(args([os("tf2of"), input.as_os_str(), output.as_os_str()])).expect_code(1);
    for dataset in ["a", "b"] {
        let line = format!(
            "  {dataset}: {}: I/O error: Read-only file system (os error 30)",
            output.join(dataset).display()
        );
        assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);
    }
    assert!(files_under(&output).is_empty());
}
