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
pub(crate) fn network_bounds() -> NetworkBounds {
    let set = BOUNDS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    set.unwrap_or_default()
}

/// The retry settings of a store.
pub(crate) fn retry_config() -> RetryConfig {
    let bounds = network_bounds();
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

/// The HTTP client settings of a store, as keys laid over what the environment set.
pub(crate) fn client_timeouts() -> [(ClientConfigKey, String); 2] {
    let bounds = network_bounds();
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
pub(crate) enum CreateAnswer<E> {
    /// The object was created.
    Created,
    /// The store says an object is there already.
    Exists(E),
    /// The try failed without saying whether the object was written (a reset, a timeout, a
    /// 5xx that outlasted the store's own retries).
    Failed(E),
    /// The store refused the write (denied, invalid): trying again would not help.
    Refused(E),
}

/// Writes an object only if none is there, trying up to `tries` times. A try that failed in
/// transit may have written the object before its answer was lost, and the store's client
/// may have sent a try again itself without saying so; so when an object is found,
/// `read_back` fetches it, and bytes equal to `bytes` are this write's own object, not
/// another's (a writer's bytes name it: a lock names its process and host).
pub(crate) fn create_if_absent<E>(
    tries: usize,
    bytes: &[u8],
    mut attempt: impl FnMut() -> CreateAnswer<E>,
    mut read_back: impl FnMut() -> Result<Option<Vec<u8>>, E>,
) -> Result<(), E> {
    let mut tried = 0;
    loop {
        tried += 1;
        match attempt() {
            CreateAnswer::Created => return Ok(()),
            CreateAnswer::Exists(err) => {
                if read_back()?.as_deref() == Some(bytes) {
                    return Ok(());
                }
                return Err(err);
            }
            CreateAnswer::Refused(err) => return Err(err),
            CreateAnswer::Failed(err) => {
                if tried >= tries.max(1) {
                    return Err(err);
                }
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
                4,
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
    fn our_bytes_found_on_the_first_try_are_ours() {
        // The client's own retry of a try whose answer was lost.
        let store = Flaky::new(Some(b"lock of pid 7"), &[]);
        assert_eq!(store.create(b"lock of pid 7"), Ok(()));
    }

    #[test]
    fn failures_stop_after_the_bound_with_the_last_error() {
        let store = Flaky::new(Some(b"x"), &[true, true, true, true, true]);
        assert_eq!(store.create(b"y"), Err("connection reset"));
        assert_eq!(*store.tries.borrow(), 4);
    }
}
