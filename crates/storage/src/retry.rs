//! How hard a request to an object store is tried before the run gives up: the bounds
//! every store is built with (object_store's retry of 5xx, 429/SlowDown, resets, timeouts
//! and bodies cut short, with exponential backoff and jitter), and a create-if-absent write
//! that can be sent again without mistaking its own object for another's.

use std::sync::RwLock;
use std::time::Duration;

use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};

/// How often and how long one request is tried, and how long one response may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkBounds {
    /// Tries after the first before a request fails.
    pub retries: usize,
    /// Time from a request's first try after which it is not tried again.
    pub retry_timeout: Duration,
    /// Time one try may take, its body included, before it counts as failed.
    pub request_timeout: Duration,
}

impl Default for NetworkBounds {
    fn default() -> NetworkBounds {
        NetworkBounds {
            retries: 10,
            retry_timeout: Duration::from_secs(180),
            request_timeout: Duration::from_secs(60),
        }
    }
}

static BOUNDS: RwLock<Option<NetworkBounds>> = RwLock::new(None);

/// Sets the bounds every store opened from now on is built with (a process that runs
/// several conversions, as a Python program does, sets them for each).
pub fn set_network_bounds(bounds: NetworkBounds) {
    let mut set = BOUNDS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *set = Some(bounds);
}

/// The bounds in force.
pub fn network_bounds() -> NetworkBounds {
    let set = BOUNDS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    set.unwrap_or_default()
}

/// The retry settings of a store built with `bounds`.
pub fn retry_config(bounds: NetworkBounds) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: bounds.retries,
        retry_timeout: bounds.retry_timeout,
    }
}

/// The HTTP client settings of a store built with `bounds`, as keys laid over what the
/// environment set.
pub fn client_timeouts(bounds: NetworkBounds) -> [(ClientConfigKey, String); 2] {
    let connect = bounds.request_timeout.min(Duration::from_secs(10));
    [
        (
            ClientConfigKey::Timeout,
            format!("{}ms", bounds.request_timeout.as_millis()),
        ),
        (
            ClientConfigKey::ConnectTimeout,
            format!("{}ms", connect.as_millis()),
        ),
    ]
}

/// What one try of a create-if-absent write gave.
#[derive(Debug)]
pub enum CreateAnswer<E> {
    /// The object was created.
    Created,
    /// The store says an object is there already.
    Exists(E),
    /// The try failed without saying whether the object was written (a reset, a timeout, a
    /// 429 or 5xx answer): it may be sent again.
    Failed(E),
    /// The store refused the write (denied, invalid, a certificate refused, a pause asked
    /// for past the retry timeout): sending it again would not help.
    Refused(E),
}

/// The pause before try `tried + 1` of a request: exponential from 100 ms, at most 15 s,
/// as the stores' own retries.
fn backoff(tried: usize) -> Duration {
    let millis = 100u64.saturating_mul(1 << tried.saturating_sub(1).min(16));
    Duration::from_millis(millis).min(Duration::from_secs(15))
}

/// Writes an object only if none is there, each try one request (`attempt` is sent by a
/// store that does not retry by itself), sent at most `bounds.retries + 1` times and not
/// after `bounds.retry_timeout`. A try that failed in transit may have written the object
/// before its answer was lost; so when an object is found after such a try, `read_back`
/// fetches it, and bytes equal to `bytes` are this write's own object, not another's (a
/// writer's bytes name it: a lock names its process and host). An object found on the
/// first try is another writer's, whatever it holds.
pub fn create_if_absent<E>(
    bounds: NetworkBounds,
    bytes: &[u8],
    mut attempt: impl FnMut() -> CreateAnswer<E>,
    mut read_back: impl FnMut() -> Result<Option<Vec<u8>>, E>,
) -> Result<(), E> {
    let started = std::time::Instant::now();
    let mut tried = 0;
    let mut lost = false;
    loop {
        tried += 1;
        match attempt() {
            CreateAnswer::Created => return Ok(()),
            CreateAnswer::Exists(err) => {
                if lost && read_back()?.as_deref() == Some(bytes) {
                    return Ok(());
                }
                return Err(err);
            }
            CreateAnswer::Refused(err) => return Err(err),
            CreateAnswer::Failed(err) => {
                lost = true;
                let pause = backoff(tried);
                if tried > bounds.retries || started.elapsed() + pause > bounds.retry_timeout {
                    return Err(err);
                }
                std::thread::sleep(pause);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A store of one object whose answers can be lost: each try writes when the object is
    /// absent, then answers with the next scripted loss (`true`: the answer never arrives).
    struct Flaky {
        object: RefCell<Option<Vec<u8>>>,
        lost_answers: RefCell<Vec<bool>>,
        tries: RefCell<usize>,
    }

    impl Flaky {
        fn new(object: Option<&[u8]>, lost_answers: &[bool]) -> Flaky {
            Flaky {
                object: RefCell::new(object.map(<[u8]>::to_vec)),
                lost_answers: RefCell::new(lost_answers.iter().rev().copied().collect()),
                tries: RefCell::new(0),
            }
        }

        fn create(&self, bytes: &[u8]) -> Result<(), &'static str> {
            create_if_absent(
                NetworkBounds {
                    retries: 3,
                    retry_timeout: Duration::from_secs(60),
                    request_timeout: Duration::from_secs(60),
                },
                bytes,
                || {
                    *self.tries.borrow_mut() += 1;
                    let lost = self.lost_answers.borrow_mut().pop().unwrap_or(false);
                    let mut object = self.object.borrow_mut();
                    let answer = if object.is_some() {
                        CreateAnswer::Exists("already exists")
                    } else {
                        *object = Some(bytes.to_vec());
                        CreateAnswer::Created
                    };
                    if lost {
                        CreateAnswer::Failed("connection reset")
                    } else {
                        answer
                    }
                },
                || Ok(self.object.borrow().clone()),
            )
        }
    }

    #[test]
    fn a_create_whose_answer_was_lost_is_not_taken_for_another_writers_object() {
        let store = Flaky::new(None, &[true]);
        assert_eq!(store.create(b"lock of pid 7"), Ok(()));
        assert_eq!(*store.tries.borrow(), 2);
        assert_eq!(
            store.object.borrow().as_deref(),
            Some(&b"lock of pid 7"[..])
        );
    }

    #[test]
    fn another_writers_object_is_refused_even_after_a_lost_answer() {
        let store = Flaky::new(Some(b"lock of pid 9"), &[true]);
        assert_eq!(store.create(b"lock of pid 7"), Err("already exists"));
        assert_eq!(
            store.object.borrow().as_deref(),
            Some(&b"lock of pid 9"[..])
        );
    }

    #[test]
    fn our_bytes_found_on_the_first_try_are_another_writers() {
        // Racing workers storing one plan: the first to write it stored it, no other.
        let store = Flaky::new(Some(b"the plan"), &[]);
        assert_eq!(store.create(b"the plan"), Err("already exists"));
        assert_eq!(*store.tries.borrow(), 1);
    }

    #[test]
    fn pauses_grow_to_a_bound() {
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(3), Duration::from_millis(400));
        assert_eq!(backoff(40), Duration::from_secs(15));
    }

    #[test]
    fn failures_stop_after_the_bound_with_the_last_error() {
        let store = Flaky::new(Some(b"x"), &[true, true, true, true, true]);
        assert_eq!(store.create(b"y"), Err("connection reset"));
        assert_eq!(*store.tries.borrow(), 4);
    }
}
