//! The lock of an output in a bucket: an object that outlives a run killed hard. The next
//! run says whose it is and whether that process still runs, before anything else about
//! the output, and `--break-lock` removes it when its holder is not running here.

use std::fs;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{written, S3Server};
use crate::shard::stalling_proxy;
use crate::util::*;

#[test]
fn a_run_killed_mid_upload_leaves_a_lock_the_next_run_calls_stale_and_breaks() {
    let s3 = S3Server::start(&["data"]);
    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let work = tempdir();
    let input = work.path().join("big");
    fs::create_dir_all(&input).unwrap();
    for file in 0..3 {
        write_tfrecord(
            &input.join(format!("train-{file:05}-of-00003.tfrecord")),
            &examples(file * 1000, 100, 20_000),
        );
    }
    let local = work.path().join("local");
    ofconvert().arg("tf2of").args([&input, &local]).ok();

    // Uploads stall once 2.5 MB went through: the run is killed (SIGKILL) mid-part.
    let (proxy, stalled) = stalling_proxy(&proxy_runtime, &s3.endpoint, 2_500_000);
    let mut doomed = s3
        .ofconvert()
        .args(["--jobs", "1", "tf2of"])
        .arg(&input)
        .arg("s3://data/bigof")
        .env("AWS_ENDPOINT_URL", &proxy)
        .spawn_quiet();
    let pid = doomed.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stalled.load(Ordering::SeqCst) {
        assert!(
            doomed.try_wait().unwrap().is_none(),
            "the run ended unstalled"
        );
        assert!(Instant::now() < deadline, "the run did not reach the stall");
        std::thread::sleep(Duration::from_millis(5));
    }
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let lock = s3.file("data", "bigof/.ofconvert-lock");
    assert!(lock.is_file(), "a killed run leaves its lock object");

    for flags in [&[][..], &["--resume"][..]] {
        let run = s3
            .ofconvert()
            .arg("tf2of")
            .arg(&input)
            .arg("s3://data/bigof")
            .args(flags)
            .expect_code(2);
        let says = format!(
            "s3://data/bigof/.ofconvert-lock is left over from a run that has ended: it names \
             process {pid} on this machine ({}), since ",
            host_name()
        );
        assert!(run.stderr.contains(&says), "{flags:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "and process {pid} no longer runs on this machine; pass --break-lock to remove it"
            )),
            "{}",
            run.stderr
        );
    }
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/bigof")
        .args(["--resume", "--break-lock"])
        .ok();
    assert_eq!(written(&s3.file("data", "bigof")), written(&local));
    assert!(
        !lock.exists(),
        "the run that broke the lock released its own"
    );
}

#[test]
fn a_lock_whose_holder_runs_here_stays_and_one_from_elsewhere_is_broken_on_request() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets/tutorial");
    let lock = s3.file("data", "of/.ofconvert-lock");
    fs::create_dir_all(lock.parent().unwrap()).unwrap();
    // Written by the test's own process, which runs.
    let running = format!("{} on {}", std::process::id(), host_name());
    fs::write(&lock, &running).unwrap();
    let refused = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .arg("--break-lock")
        .expect_code(2);
    assert!(
        refused.stderr.contains(&format!(
            "another ofconvert run (process {} on this machine",
            std::process::id()
        )) && refused
            .stderr
            .contains("--break-lock breaks only a lock whose run has ended"),
        "{}",
        refused.stderr
    );
    assert_eq!(fs::read_to_string(&lock).unwrap(), running);

    // Another machine's: this one cannot tell, so it offers to break it.
    fs::write(&lock, "4242 on worker-7").unwrap();
    let asked = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .expect_code(2);
    assert!(
        asked.stderr.contains("process 4242 on worker-7, since ")
            && asked
                .stderr
                .contains("pass --break-lock to remove the lock"),
        "{}",
        asked.stderr
    );
    s3.ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .arg("--break-lock")
        .ok();
    assert!(!written(&s3.file("data", "of")).is_empty());
    assert!(!lock.exists());
}

#[test]
fn the_lock_is_reported_before_what_the_output_holds() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets/tutorial");
    let out = s3.file("data", "of");
    fs::create_dir_all(out.join("tutorial")).unwrap();
    fs::write(out.join("tutorial/part-00000"), b"a part being written").unwrap();
    fs::write(out.join(".ofconvert-lock"), "4242 on worker-7").unwrap();
    let run = s3
        .ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg("s3://data/of")
        .expect_code(2);
    assert!(
        run.stderr
            .contains("another ofconvert run (process 4242 on worker-7"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("not empty"), "{}", run.stderr);
}

#[test]
fn commit_breaks_the_lock_a_killed_commit_left() {
    let s3 = S3Server::start(&["data"]);
    let input = testdata().join("datasets");
    for k in 0..2 {
        s3.ofconvert()
            .arg("tf2of")
            .arg(&input)
            .arg("s3://data/sharded")
            .args(["--shard", &format!("{k}/2")])
            .ok();
    }
    let lock = s3.file("data", "sharded/.ofconvert-lock");
    fs::write(&lock, format!("{} on {}", ended_process(), host_name())).unwrap();
    let refused = s3
        .ofconvert()
        .args(["commit", "s3://data/sharded"])
        .expect_code(2);
    assert!(
        refused
            .stderr
            .contains("is left over from a run that has ended")
            && refused.stderr.contains("pass --break-lock to remove it"),
        "{}",
        refused.stderr
    );
    s3.ofconvert()
        .args(["commit", "--break-lock", "s3://data/sharded"])
        .ok();
    let local = tempdir();
    ofconvert()
        .arg("tf2of")
        .arg(&input)
        .arg(local.path().join("of"))
        .ok();
    assert_eq!(
        written(&s3.file("data", "sharded")),
        written(&local.path().join("of"))
    );
    assert!(!lock.exists());
}
