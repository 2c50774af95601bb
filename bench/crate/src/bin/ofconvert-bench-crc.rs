//! CRC-32C throughput for `bench/run`: the project's one function
//! (`ofconvert_tfrecord::crc::crc32c`) beside the `crc32c` crate it replaced, on buffers of
//! 64 KiB and 1 MiB, each timed for a quarter of a second after a warm-up. Prints one line
//! per size: `SIZE PROJECT_GBPS CRC32C_GBPS` (GB = 10^9 bytes).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Bytes a second of `f` over `data`, run for about `time`.
fn throughput(data: &[u8], time: Duration, f: impl Fn(&[u8]) -> u32) -> f64 {
    // Warm-up: caches, frequency, the dispatch of the first call.
    for _ in 0..16 {
        black_box(f(black_box(data)));
    }
    let started = Instant::now();
    let mut rounds = 0u64;
    while started.elapsed() < time {
        for _ in 0..16 {
            black_box(f(black_box(data)));
        }
        rounds += 16;
    }
    (rounds * data.len() as u64) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    for size in [64usize << 10, 1 << 20] {
        let data: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
        // The two must agree before either is timed.
        assert_eq!(
            ofconvert_tfrecord::crc::crc32c(&data),
            crc32c::crc32c(&data),
            "the CRCs differ"
        );
        let time = Duration::from_millis(250);
        let project = throughput(&data, time, ofconvert_tfrecord::crc::crc32c);
        let reference = throughput(&data, time, crc32c::crc32c);
        println!("{size} {:.2} {:.2}", project / 1e9, reference / 1e9);
    }
}
