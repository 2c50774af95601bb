//! Fields in the form both formats' writers give them: a one-byte tag and a length in its
//! shortest form, over byte slices; and the counts of value lists in TensorFlow's form.

/// The tag byte of a length-delimited field `n` (for the fields 1–15 a one-byte tag holds).
pub(super) const fn len_tag(field: u8) -> u8 {
    (field << 3) | 2
}

/// The field at the start of `bytes`, which must have the one-byte `tag` and a length in
/// its shortest form within `bytes`: its contents and what follows it.
#[inline(always)]
pub(super) fn take_field(bytes: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    match *bytes {
        [first, len, ref rest @ ..] if first == tag && len < 0x80 => {
            rest.split_at_checked(usize::from(len))
        }
        [first, _, ..] if first == tag => take_long_field(bytes),
        _ => None,
    }
}

/// [`take_field`] for a length of two to five bytes.
#[cold]
#[inline(never)]
fn take_long_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, start) = long_length(bytes, 1)?;
    bytes.get(start..)?.split_at_checked(len)
}

/// A length of two to five bytes at `at`, in its shortest form (no trailing zero byte), and
/// where the bytes after it start.
pub(super) fn long_length(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for i in 0..5 {
        let byte = *bytes.get(at)?;
        at += 1;
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return (i == 0 || byte != 0).then_some((value, at));
        }
    }
    None
}

/// The number of values of a bytes list in the form TensorFlow writes it (one field each),
/// once its every byte is checked; `None` for any other form, valid or not.
#[inline(always)]
pub(super) fn bytes_count(list: &[u8]) -> Option<usize> {
    let (mut rest, mut count) = (list, 0);
    while !rest.is_empty() {
        rest = take_field(rest, len_tag(1))?.1;
        count += 1;
    }
    Some(count)
}

/// The number of values of a float list in the form TensorFlow writes it (packed in one
/// field, or none); `None` for any other form.
#[inline(always)]
pub(super) fn float_count(list: &[u8]) -> Option<usize> {
    match packed(list)? {
        values if values.len().is_multiple_of(4) => Some(values.len() / 4),
        _ => None,
    }
}

/// The number of values of an int64 list in the form TensorFlow writes it, once every
/// varint is checked; `None` for any other form.
#[inline(always)]
pub(super) fn int64_count(list: &[u8]) -> Option<usize> {
    varint_count(packed(list)?)
}

/// The values of a numeric list packed in one field, or none.
#[inline(always)]
fn packed(list: &[u8]) -> Option<&[u8]> {
    if list.is_empty() {
        return Some(list);
    }
    match take_field(list, len_tag(1))? {
        (values, []) => Some(values),
        _ => None,
    }
}

/// How many varints `packed` holds, when it is nothing but whole varints that fit 64 bits.
#[inline]
pub(super) fn varint_count(packed: &[u8]) -> Option<usize> {
    let (mut count, mut run) = (0, 0);
    for &byte in packed {
        if byte < 0x80 {
            // The tenth byte of a varint holds bit 63 alone.
            if run == 9 && byte > 1 {
                return None;
            }
            count += 1;
            run = 0;
        } else {
            run += 1;
            if run == 10 {
                return None;
            }
        }
    }
    (run == 0).then_some(count)
}
