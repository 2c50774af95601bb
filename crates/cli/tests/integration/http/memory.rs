//! A large file from a server that ignores ranges is streamed: the reader's memory stays
//! far below the file's size.

use super::*;

/// Runs `command` to its end and returns its exit code and its peak resident memory in
/// bytes, as the kernel counted it for that process alone.
#[cfg(target_os = "linux")]
// The child is waited for by wait4, which clippy does not know of.
#[allow(clippy::zombie_processes)]
fn peak_memory(command: &mut TestCommand) -> (i32, u64) {
    let child = command
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals above.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage.ru_maxrss as u64 * 1024)
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
    eprintln!(
        "verify of a {} MiB file without ranges: peak resident memory {} MiB",
        (count * record.len() as u64) >> 20,
        peak >> 20
    );
    assert!(peak < 64 << 20, "peak resident memory {} MiB", peak >> 20);
    let counted = ofconvert().args(["count", &url]).ok().stdout;
    assert!(counted.contains(&format!("{count}  {url}")), "{counted}");
}
