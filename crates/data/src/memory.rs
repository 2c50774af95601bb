//! Asking the processor for memory before it is read: what a shuffled read needs, whose
//! records (and their index entries) lie far apart, each a wait for memory when read one after
//! the other.

/// Asks the processor to bring `item` (if any) into its cache, without waiting for it: the
/// waits for several items asked for in a row then overlap.
#[inline]
pub(crate) fn prefetch<T>(item: Option<&T>) {
    let Some(item) = item else { return };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever the
    // address; SSE, which the instruction needs, is part of every x86-64 processor.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}
