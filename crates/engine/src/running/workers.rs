//! Workers kept from one work item to the next.
//!
//! Rayon's `for_each_init` makes a new value for every piece of work it splits off, and with
//! one work item a piece, that is a new worker for every work item: its record buffers then
//! grow again from nothing, each growth a reallocation whose fresh pages fault in (5–8% of
//! the CPU time of converting large records). Taking workers from a [`Pool`] and giving
//! them back keeps their buffers at the size the records need, one worker per thread at
//! most.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// The values not in use, and how to make a new one.
pub(crate) struct Pool<T, F> {
    idle: Mutex<Vec<T>>,
    make: F,
}

impl<T, F: Fn() -> T> Pool<T, F> {
    /// An empty pool that makes its values with `make`.
    pub(crate) fn new(make: F) -> Self {
        Pool {
            idle: Mutex::new(Vec::new()),
            make,
        }
    }

    /// A value from the pool, or a new one; it goes back to the pool when dropped.
    pub(crate) fn take(&self) -> Pooled<'_, T, F> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        Pooled {
            value: Some(idle.unwrap_or_else(&self.make)),
            pool: self,
        }
    }
}

/// A value taken from a [`Pool`].
pub(crate) struct Pooled<'p, T, F> {
    value: Option<T>,
    pool: &'p Pool<T, F>,
}

impl<T, F> Deref for Pooled<'_, T, F> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value.as_ref().expect("present until dropped")
    }
}

impl<T, F> DerefMut for Pooled<'_, T, F> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("present until dropped")
    }
}

impl<T, F> Drop for Pooled<'_, T, F> {
    fn drop(&mut self) {
        if let (Some(value), Ok(mut idle)) = (self.value.take(), self.pool.idle.lock()) {
            idle.push(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_value_given_back_is_taken_again_with_what_it_grew_to() {
        let made = AtomicUsize::new(0);
        let pool = Pool::new(|| {
            made.fetch_add(1, Ordering::Relaxed);
            Vec::<u8>::new()
        });
        let mut first = pool.take();
        first.reserve(1 << 20);
        // Taken while the first is in use: a second value.
        let second = pool.take();
        assert_eq!(second.capacity(), 0);
        drop(second);
        drop(first);
        // The last given back comes first.
        assert!(pool.take().capacity() >= 1 << 20);
        assert_eq!(made.load(Ordering::Relaxed), 2);
    }
}
