//! One conversion spread over several worker processes (`--shard K/N`) and published by
//! `commit`: the same bytes as one run, on a local disk and in a bucket, after a killed
//! worker, and nothing published while a part is missing.

use std::fs;
use std::path::Path;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::objects::{manifests, written, S3Server};
use crate::util::*;

/// Runs `workers` (already started) to their end; each must succeed.
fn wait_all(workers: Vec<Child>) {
    for worker in workers {
        let output = worker.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "a worker failed: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Asserts that the datasets under `sharded` are those under `single`: every part and
/// every manifest byte for byte (a manifest names neither output root).
fn assert_same_output(single: &Path, single_name: &str, sharded: &Path, sharded_name: &str) {
    assert_eq!(written(sharded), written(single));
    assert_eq!(manifests(sharded), manifests(single));
    assert!(!manifests(single).is_empty());
    for manifest in manifests(single) {
        let expected = fs::read_to_string(single.join(&manifest)).unwrap();
        let found = fs::read_to_string(sharded.join(&manifest)).unwrap();
        assert_eq!(found, expected, "{manifest}");
        for root in [single_name, sharded_name] {
            assert!(!found.contains(root), "{manifest} names {root}: {found}");
        }
    }
    // (The S3 server keeps empty directories where objects were.)
    assert_eq!(
        tree(&sharded.join(".ofconvert")),
        Vec::<String>::new(),
        "commit removes the run's control files"
    );
    assert!(
        tree(sharded).iter().all(|file| !file
            .rsplit('/')
            .next()
            .unwrap()
            .starts_with(".ofconvert-")),
        "temporary files left: {:?}",
        tree(sharded)
    );
}

#[test]
fn three_workers_then_commit_give_the_bytes_of_one_local_run_both_ways() {
    let work = tempdir();
    let datasets = testdata().join("datasets/tfds");
    let single_of = work.path().join("single-of");
    let sharded_of = work.path().join("sharded-of");
    ofconvert()
        .arg("tf2of")
        .args([&datasets, &single_of])
        .args(["--rename", "label=class"])
        .ok();
    let workers = (0..3)
        .map(|k| {
            ofconvert()
                .arg("tf2of")
                .args([&datasets, &sharded_of])
                .args(["--rename", "label=class", "--shard", &format!("{k}/3")])
                .spawn_piped()
        })
        .collect();
    wait_all(workers);
    assert!(manifests(&sharded_of).is_empty(), "published before commit");
    ofconvert().arg("commit").arg(&sharded_of).ok();
    assert_same_output(
        &single_of,
        &single_of.display().to_string(),
        &sharded_of,
        &sharded_of.display().to_string(),
    );

    // of2tf, resharded across parts: work items cut inside the inputs.
    let single_tf = work.path().join("single-tf");
    let sharded_tf = work.path().join("sharded-tf");
    let flags = ["--records-per-part", "7", "--compression", "gzip"];
    ofconvert()
        .arg("of2tf")
        .args([&single_of, &single_tf])
        .args(flags)
        .ok();
    let workers = (0..3)
        .map(|k| {
            ofconvert()
                .arg("of2tf")
                .args([&single_of, &sharded_tf])
                .args(flags)
                .args(["--shard", &format!("{k}/3")])
                .spawn_piped()
        })
        .collect();
    wait_all(workers);
    ofconvert()
        .args(["commit", "--verify"])
        .arg(&sharded_tf)
        .ok();
    assert_same_output(
        &single_tf,
        &single_tf.display().to_string(),
        &sharded_tf,
        &sharded_tf.display().to_string(),
    );
}

#[test]
fn three_workers_into_a_bucket_then_commit_give_the_bytes_of_one_run_both_ways() {
    let s3 = S3Server::start(&["data"]);
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let local_of = work.path().join("of");
    ofconvert()
        .arg("tf2of")
        .args([&datasets, &local_of])
        .args(["--parts", "2"])
        .ok();
    s3.ofconvert()
        .arg("tf2of")
        .arg(&datasets)
        .arg("s3://data/single")
        .args(["--parts", "2"])
        .ok();
    let workers = (0..3)
        .map(|k| {
            s3.ofconvert()
                .arg("tf2of")
                .arg(&datasets)
                .arg("s3://data/sharded")
                .args(["--parts", "2", "--shard", &format!("{k}/3")])
                .spawn_piped()
        })
        .collect();
    wait_all(workers);
    s3.ofconvert().args(["commit", "s3://data/sharded"]).ok();
    assert_eq!(written(&s3.file("data", "sharded")), written(&local_of));
    assert_same_output(
        &s3.file("data", "single"),
        "s3://data/single",
        &s3.file("data", "sharded"),
        "s3://data/sharded",
    );

    // Bucket to bucket the other way.
    s3.ofconvert()
        .args(["of2tf", "s3://data/single", "s3://data/tf-single"])
        .ok();
    let workers = (0..3)
        .map(|k| {
            s3.ofconvert()
                .args(["of2tf", "s3://data/single", "s3://data/tf-sharded"])
                .args(["--shard", &format!("{k}/3")])
                .spawn_piped()
        })
        .collect();
    wait_all(workers);
    s3.ofconvert()
        .args(["commit", "--verify", "s3://data/tf-sharded"])
        .ok();
    assert_same_output(
        &s3.file("data", "tf-single"),
        "s3://data/tf-single",
        &s3.file("data", "tf-sharded"),
        "s3://data/tf-sharded",
    );
}

/// A TCP proxy in front of `upstream` that forwards everything until clients have sent
/// `after` bytes through it, then forwards nothing more: the request under way hangs, as
/// on a machine that stalls mid-upload. The flag says when that happened.
pub(crate) fn stalling_proxy(
    runtime: &tokio::runtime::Runtime,
    upstream: &str,
    after: usize,
) -> (String, Arc<AtomicBool>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let stalled = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&stalled);
    runtime.spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else {
                continue;
            };
            let (sent, flag) = (Arc::clone(&sent), Arc::clone(&flag));
            tokio::spawn(async move {
                let (mut client_read, mut client_write) = client.split();
                let (mut server_read, mut server_write) = server.split();
                let upload = async {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = client_read.read(&mut buf).await?;
                        if n == 0 {
                            return Ok::<(), std::io::Error>(());
                        }
                        if sent.fetch_add(n, Ordering::SeqCst) + n > after {
                            flag.store(true, Ordering::SeqCst);
                            std::future::pending::<()>().await;
                        }
                        server_write.write_all(&buf[..n]).await?;
                    }
                };
                let download = tokio::io::copy(&mut server_read, &mut client_write);
                tokio::select! {
                    _ = upload => {}
                    _ = download => {}
                }
            });
        }
    });
    (address, stalled)
}

#[test]
fn a_worker_killed_mid_upload_is_rerun_and_the_commit_gives_the_same_bytes() {
    let s3 = S3Server::start(&["data"]);
    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    // Six inputs of about 3 MB; worker 0 of 2 has three of them.
    for file in 0..6 {
        write_tfrecord(
            &input.join(format!("train-{file:05}-of-00006.tfrecord")),
            &examples(file * 1000, 150, 20_000),
        );
    }
    let single = work.path().join("single");
    ofconvert().arg("tf2of").args([&input, &single]).ok();

    let worker = |k: usize| {
        let mut command = s3.ofconvert();
        command
            .args(["--jobs", "1", "tf2of"])
            .arg(&input)
            .arg("s3://data/of")
            .args(["--shard", &format!("{k}/2")]);
        command
    };
    // Worker 0 uploads through a proxy that stalls once 4.5 MB went through it: its first
    // part is uploaded and has its receipt, its second is half sent. Then it is killed.
    let (proxy, stalled) = stalling_proxy(&proxy_runtime, &s3.endpoint, 4_500_000);
    let mut doomed = worker(0).env("AWS_ENDPOINT_URL", &proxy).spawn_quiet();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stalled.load(Ordering::SeqCst) {
        assert!(
            doomed.try_wait().unwrap().is_none(),
            "worker 0 ended unstalled"
        );
        assert!(
            Instant::now() < deadline,
            "worker 0 did not reach the stall"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    worker(1).ok();

    let early = s3
        .ofconvert()
        .args(["commit", "s3://data/of"])
        .expect_code(1);
    assert!(early.stderr.contains("(worker 0)"), "{}", early.stderr);
    assert!(!early.stderr.contains("(worker 1)"), "{}", early.stderr);
    assert!(manifests(&s3.file("data", "of")).is_empty());

    let rerun = worker(0).arg("--json").ok();
    let summary: serde_json::Value = serde_json::from_str(&rerun.stdout).unwrap();
    assert_eq!(
        (summary["kept"].as_u64(), summary["converted"].as_u64()),
        (Some(1), Some(2)),
        "{summary}"
    );
    s3.ofconvert()
        .args(["commit", "--verify", "s3://data/of"])
        .ok();
    assert_eq!(written(&s3.file("data", "of")), written(&single));
}

#[test]
fn commit_with_a_worker_missing_names_its_parts_and_publishes_nothing() {
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let out = work.path().join("out");
    for k in [0, 2] {
        ofconvert()
            .arg("tf2of")
            .args([&datasets, &out])
            .args(["--shard", &format!("{k}/3")])
            .ok();
    }
    let commit = ofconvert().arg("commit").arg(&out).expect_code(1);
    assert!(
        commit.stderr.contains("not finished, nothing published"),
        "{}",
        commit.stderr
    );
    assert!(commit.stderr.contains("(worker 1)"), "{}", commit.stderr);
    assert!(!commit.stderr.contains("(worker 0)"), "{}", commit.stderr);
    assert!(commit.stderr.contains(": part "), "{}", commit.stderr);
    assert!(manifests(&out).is_empty(), "{:?}", tree(&out));
    assert!(out.join(".ofconvert/plan.json").is_file());

    ofconvert()
        .arg("tf2of")
        .args([&datasets, &out])
        .args(["--shard", "1/3"])
        .ok();
    ofconvert().arg("commit").arg(&out).ok();
    let single = work.path().join("single");
    ofconvert().arg("tf2of").args([&datasets, &single]).ok();
    assert_eq!(written(&out), written(&single));
}

#[test]
fn a_late_worker_with_other_flags_or_a_changed_input_is_refused() {
    let work = tempdir();
    let input = sample_tree(work.path(), "in");
    let out = work.path().join("out");
    ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .args(["--parts", "2", "--shard", "0/2"])
        .ok();

    let flags = ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .args(["--parts", "3", "--shard", "1/2"])
        .expect_code(2);
    assert!(flags.stderr.contains("flags differ"), "{}", flags.stderr);
    // Named as the flags that ask for them, not as the settings' JSON.
    assert!(
        flags
            .stderr
            .contains("--parts 2 in the run's plan, --parts 3 here"),
        "{}",
        flags.stderr
    );
    assert!(!flags.stderr.contains('{'), "{}", flags.stderr);
    let count = ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .args(["--parts", "2", "--shard", "1/3"])
        .expect_code(2);
    assert!(
        count
            .stderr
            .contains("planned for 2 workers (--shard K/2), this one was given --shard 1/3"),
        "{}",
        count.stderr
    );

    let changed = input.join("tutorial/tutorial.tfrecord");
    let mut bytes = fs::read(&changed).unwrap();
    bytes.extend(tf_frame(&example(1, 10)));
    fs::write(&changed, bytes).unwrap();
    let late = ofconvert()
        .arg("tf2of")
        .args([&input, &out])
        .args(["--parts", "2", "--shard", "1/2"])
        .expect_code(1);
    assert!(late.stderr.contains("the input changed"), "{}", late.stderr);
    assert!(late.stderr.contains("tutorial.tfrecord"), "{}", late.stderr);
    assert!(manifests(&out).is_empty());
}

#[test]
fn shard_numbers_and_flags_that_cannot_be_sharded_are_usage_errors() {
    let work = tempdir();
    let datasets = testdata().join("datasets");
    let out = work.path().join("out");
    for (shard, says) in [
        ("3/3", "numbered from 0 to 2"),
        // Explained with the workers of the run asked for, not of another.
        ("3/3", "counted from 0 (0/3, 1/3, 2/3)"),
        ("a/b", "is not a number"),
        ("0/0", "at least one worker"),
        ("1", "expected K/N"),
    ] {
        let run = ofconvert()
            .arg("tf2of")
            .args([&datasets, &out])
            .args(["--shard", shard])
            .expect_code(2);
        assert!(run.stderr.contains(says), "{shard}: {}", run.stderr);
    }
    // (--overwrite shards: faults::resumed, a sharded run over a published output.)
    for flags in [&["--max-part-bytes", "1M"][..], &["--resume"][..]] {
        let run = ofconvert()
            .arg("tf2of")
            .args([&datasets, &out])
            .args(["--shard", "0/2"])
            .args(flags)
            .expect_code(2);
        assert!(
            run.stderr.contains("does not go with"),
            "{flags:?}: {}",
            run.stderr
        );
    }
    assert!(!out.exists());
    let nothing = ofconvert().arg("commit").arg(work.path()).expect_code(2);
    assert!(
        nothing.stderr.contains("no sharded run"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn commit_waits_for_running_workers_and_workers_for_a_running_commit() {
    let work = tempdir();
    let datasets = testdata().join("datasets/tutorial");
    let out = work.path().join("out");
    for k in 0..2 {
        ofconvert()
            .arg("tf2of")
            .args([&datasets, &out])
            .args(["--parts", "2", "--shard", &format!("{k}/2")])
            .ok();
    }
    // Worker 1 still running: it holds the lock of its directory.
    let held = fs::File::create(out.join(".ofconvert/worker-1/.ofconvert-lock")).unwrap();
    held.try_lock().unwrap();
    let early = ofconvert().arg("commit").arg(&out).expect_code(2);
    assert!(
        early
            .stderr
            .contains("worker 1 of the sharded run is still running"),
        "{}",
        early.stderr
    );
    assert!(manifests(&out).is_empty());
    drop(held);

    // A commit running: it holds the output's lock, and no worker starts.
    let commit_lock = fs::File::create(out.join(".ofconvert-lock")).unwrap();
    commit_lock.try_lock().unwrap();
    let late = ofconvert()
        .arg("tf2of")
        .args([&datasets, &out])
        .args(["--parts", "2", "--shard", "0/2"])
        .expect_code(2);
    assert!(
        late.stderr.contains("is writing into this directory"),
        "{}",
        late.stderr
    );
    drop(commit_lock);
    fs::remove_file(out.join(".ofconvert-lock")).unwrap();

    ofconvert().arg("commit").arg(&out).ok();
    assert_eq!(manifests(&out), vec!["ofconvert-manifest.json".to_owned()]);
}

#[test]
fn a_work_item_whose_records_are_all_skipped_leaves_no_gap_in_the_part_numbers() {
    let work = tempdir();
    let input = work.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let no_features: [(&str, ofconvert_bridge::proto::tensorflow::Feature); 0] = [];
    let mut empty_example = Vec::new();
    ofconvert_bridge::encode_example(
        &ofconvert_bridge::tf::example(no_features),
        &mut empty_example,
    );
    write_tfrecord(&input.join("a.tfrecord"), &examples(0, 5, 10));
    write_tfrecord(
        &input.join("b.tfrecord"),
        &[empty_example.clone(), empty_example],
    );
    write_tfrecord(&input.join("c.tfrecord"), &examples(5, 5, 10));
    let single = work.path().join("single");
    let sharded = work.path().join("sharded");
    ofconvert()
        .arg("tf2of")
        .args([&input, &single])
        .args(["--empty", "skip"])
        .ok();
    for k in 0..3 {
        ofconvert()
            .arg("tf2of")
            .args([&input, &sharded])
            .args(["--empty", "skip", "--shard", &format!("{k}/3")])
            .ok();
    }
    ofconvert().arg("commit").arg(&sharded).ok();
    assert_eq!(
        files_starting(&sharded, "part-").len(),
        2,
        "{:?}",
        tree(&sharded)
    );
    assert_same_output(
        &single,
        &single.display().to_string(),
        &sharded,
        &sharded.display().to_string(),
    );
}

#[test]
fn an_object_rewritten_at_the_same_size_is_a_changed_input_by_its_etag() {
    let s3 = S3Server::start(&["data"]);
    let records = examples(0, 20, 100);
    let object = s3.file("data", "in/train.tfrecord");
    fs::create_dir_all(object.parent().unwrap()).unwrap();
    write_tfrecord(&object, &records);
    let worker = |k: usize| {
        let mut command = s3.ofconvert();
        command
            .args(["tf2of", "s3://data/in", "s3://data/of"])
            .args(["--parts", "2", "--shard", &format!("{k}/2")]);
        command
    };
    worker(0).ok();
    // Same size, other bytes: record 0 gets another id of the same varint length.
    let mut rewritten = records.clone();
    rewritten[0] = example(100, 100);
    assert_eq!(rewritten[0].len(), records[0].len());
    write_tfrecord(&object, &rewritten);
    let late = worker(1).expect_code(1);
    assert!(late.stderr.contains("the input changed"), "{}", late.stderr);
    assert!(
        late.stderr.contains("train.tfrecord was modified"),
        "{}",
        late.stderr
    );
    assert!(manifests(&s3.file("data", "of")).is_empty());
}
