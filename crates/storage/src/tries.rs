//! The tries of requests to stores that failed (no answer, or a 429 or 5xx answer), kept for
//! a verbose report at the end of a run: the stores' threads only note them, the front end's
//! main thread says them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// How many failed tries are kept with what they were; past it only counted.
const KEPT: usize = 200;

static COUNT: AtomicU64 = AtomicU64::new(0);
static KEPT_TRIES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static STARTED: Mutex<Option<Instant>> = Mutex::new(None);

/// Notes a failed try: `method url: what`.
pub(crate) fn record(method: &str, url: &str, what: &str) {
    COUNT.fetch_add(1, Ordering::Relaxed);
    let since = {
        let mut started = STARTED.lock().unwrap_or_else(|p| p.into_inner());
        started.get_or_insert_with(Instant::now).elapsed()
    };
    let mut kept = KEPT_TRIES.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() < KEPT {
        kept.push(format!(
            "{:8.3} s  {method} {url}: {what}",
            since.as_secs_f64()
        ));
    }
}

/// The failed tries noted so far, all counted and the first ones said, and forgets them.
pub fn take_failed_tries() -> (u64, Vec<String>) {
    let count = COUNT.swap(0, Ordering::Relaxed);
    let kept = std::mem::take(&mut *KEPT_TRIES.lock().unwrap_or_else(|p| p.into_inner()));
    (count, kept)
}
