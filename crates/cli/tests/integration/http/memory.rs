//! A large file from a server that ignores ranges is streamed: the reader's memory stays
//! far below the file's size.

use super::*;

/// Runs `command` to its end and returns its exit code and its peak resident memory in
/// bytes, read from the kernel (`VmHWM`) while it runs, once it is the binary (the
/// rusage that `wait4` gives would count the memory of this test process, which the child
/// is spawned from).
#[cfg(target_os = "linux")]
fn peak_memory(command: &mut TestCommand) -> (i32, u64) {
    let mut child = command
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let started = std::time::Instant::now();
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), peak);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "still running"
        );
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix(name))
                    .map(str::trim)
            };
            if field("Name:") == Some("ofconvert") {
                let kib = field("VmHWM:")
                    .and_then(|value| value.trim_end_matches("kB").trim().parse::<u64>().ok());
                peak = peak.max(kib.unwrap_or(0) * 1024);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_large_file_without_ranges_is_streamed_in_bounded_memory() {
    const SIZE: u64 = 256 << 20;
    let record = Bytes::from(tf_frame(&example(7, 64 << 10)));
    let count = SIZE / record.len() as u64;
    let server = FileServer::start(
        testdata(),
        Serving {
            repeated: vec![(
                "big.tfrecord".to_owned(),
                Repeated {
                    record: record.clone(),
                    count,
                },
            )],
            ..Serving::default()
        },
    );
    let url = format!("{}/big.tfrecord", server.endpoint);
    let (code, peak) = peak_memory(ofconvert().args(["verify", &url]));
    assert_eq!(code, 0);
    assert!(peak > 0, "the child's memory was never read");
    eprintln!(
        "verify of a {} MiB file without ranges: peak resident memory {} MiB",
        (count * record.len() as u64) >> 20,
        peak >> 20
    );
    assert!(peak < 64 << 20, "peak resident memory {} MiB", peak >> 20);
    let counted = ofconvert().args(["count", &url]).ok().stdout;
    assert!(counted.contains(&format!("{count}  {url}")), "{counted}");
}
