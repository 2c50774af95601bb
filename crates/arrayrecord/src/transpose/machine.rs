//! Running a transposed chunk's state machine: each node's field written, back to front, from
//! the buffers, and where each record ends; its moves held to what it writes.

use super::nodes::{varint32, Action, Buffer, Scratch, MAX_OPEN};
use crate::codec::varint_bytes;

/// How many moves the machine may make for each byte it writes and each record it ends, and
/// how many more besides. A sound chunk makes at most 12 a field or record: Riegeli's no-op
/// nodes, which reach nodes more than 63 past a base, form trees 64 wide, so at most 6 deep in
/// a machine of 2^32 nodes, and a move to a field's node crosses at most two of them (to the
/// nodes every node may reach, then within them). Every field writes a byte but the end of a
/// submessage, whose start writes two, and at most [`MAX_OPEN`] ends wait for their start: the
/// slack. A hostile machine is not held by its transitions alone: implicit moves, which read
/// none, may walk a chain of nodes that write nothing once for every transition.
pub(super) const MOVES_PER_OUTPUT: u64 = 16;
/// The moves besides those [`MOVES_PER_OUTPUT`] allows.
pub(super) const MOVES_SLACK: u64 = 1 << 16;

/// Why the machine stopped short of the chunk's end.
pub(super) enum Refusal {
    /// What it holds does not add up.
    Invalid(String),
    /// It made more moves than [`MOVES_PER_OUTPUT`] allows for what it had written.
    TooManyMoves {
        moves: u64,
        written: u64,
        records: u64,
    },
}

impl From<String> for Refusal {
    fn from(reason: String) -> Refusal {
        Refusal::Invalid(reason)
    }
}

impl From<&str> for Refusal {
    fn from(reason: &str) -> Refusal {
        Refusal::Invalid(reason.to_owned())
    }
}

/// Reads `len` bytes from buffer `index`.
fn take<'a>(
    buckets: &'a [Vec<u8>],
    buffers: &mut [Buffer],
    index: u32,
    len: usize,
) -> Result<&'a [u8], String> {
    let buffer = &mut buffers[index as usize];
    if len > buffer.end - buffer.at {
        return Err(format!("buffer {index} is cut short"));
    }
    let bytes = &buckets[buffer.bucket][buffer.at..buffer.at + len];
    buffer.at += len;
    Ok(bytes)
}

/// The varint at buffer `index`'s read position, not yet read: its value and length.
fn peek_varint32(
    buckets: &[Vec<u8>],
    buffers: &[Buffer],
    index: u32,
) -> Result<(u32, usize), String> {
    let buffer = &buffers[index as usize];
    let mut bytes = &buckets[buffer.bucket][buffer.at..buffer.end];
    if bytes.is_empty() {
        return Err(format!("buffer {index} is cut short"));
    }
    let before = bytes.len();
    // The length's first byte alone, most of the time: no call, no error text made.
    if bytes[0] < 0x80 {
        return Ok((u32::from(bytes[0]), 1));
    }
    let value = varint32(&mut bytes, "a length").map_err(|err| format!("buffer {index}: {err}"))?;
    Ok((value, before - bytes.len()))
}

/// The records' bytes, gathered back to front: each piece is added turned around, so that
/// turning the whole around at the end puts every piece, and every record, in order.
struct Backwards<'a> {
    out: &'a mut Vec<u8>,
    limit: usize,
}

impl Backwards<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() > self.limit - self.out.len() {
            return Err(format!(
                "the records decode to more than the {} bytes the header says",
                self.limit
            ));
        }
        self.out.extend(bytes.iter().rev());
        Ok(())
    }

    fn len(&self) -> usize {
        self.out.len()
    }
}

/// Runs the state machine from node `first` to the last transition: the records' bytes into
/// `values`, back to front, and into `limits` how many had been written when each record
/// ended, last record first. Refused once it has moved more than [`MOVES_PER_OUTPUT`] times
/// for each byte written and record ended, and [`MOVES_SLACK`] times more.
pub(super) fn run(
    first: usize,
    num_records: u64,
    decoded_data_size: u64,
    scratch: &mut Scratch,
    values: &mut Vec<u8>,
    limits: &mut Vec<usize>,
) -> Result<(), Refusal> {
    let Scratch {
        buckets,
        transitions,
        buffers,
        nodes,
        open,
        ..
    } = scratch;
    let buckets: &[Vec<u8>] = buckets;
    let lengths = buffers.len().checked_sub(1);
    limits.clear();
    open.clear();
    let size = usize::try_from(decoded_data_size).map_err(|_| "the records are too large")?;
    values.reserve(size.min(buckets.iter().map(Vec::len).sum::<usize>() + 4 * transitions.len()));
    let mut out = Backwards {
        out: values,
        limit: size,
    };
    let mut transitions = transitions.iter();
    let mut node = first;
    let mut repeats = usize::from(nodes[node].implicit);
    // The moves allowed are counted again only when those counted last are made: a sound
    // chunk's output has grown by then.
    let (mut moves, mut allowed) = (0u64, MOVES_SLACK);
    loop {
        moves += 1;
        if moves > allowed {
            let (written, records) = (out.len() as u64, limits.len() as u64);
            allowed = MOVES_PER_OUTPUT
                .saturating_mul(written.saturating_add(records))
                .saturating_add(MOVES_SLACK);
            if moves > allowed {
                return Err(Refusal::TooManyMoves {
                    moves,
                    written,
                    records,
                });
            }
        }
        let current = nodes[node];
        match current.action {
            Action::NoOp => {}
            Action::Tag => out.put(&current.bytes[..current.written as usize])?,
            Action::Varint(len) => {
                let mut value = [0u8; 10];
                let len = len as usize;
                value[..len].copy_from_slice(take(buckets, buffers, current.buffer, len)?);
                for byte in &mut value[..len - 1] {
                    *byte |= 0x80;
                }
                out.put(&value[..len])?;
                out.put(&current.bytes[..current.written as usize])?;
            }
            Action::Fixed(len) => {
                out.put(take(buckets, buffers, current.buffer, len as usize)?)?;
                out.put(&current.bytes[..current.written as usize])?;
            }
            Action::String => {
                let (len, len_len) = peek_varint32(buckets, buffers, current.buffer)?;
                let whole = len_len
                    .checked_add(len as usize)
                    .ok_or("a string's length overflows")?;
                out.put(take(buckets, buffers, current.buffer, whole)?)?;
                out.put(&current.bytes[..current.written as usize])?;
            }
            Action::SubmessageEnd => {
                if open.len() == MAX_OPEN {
                    return Err(format!("more than {MAX_OPEN} submessages open at once").into());
                }
                open.push((out.len(), node));
            }
            Action::SubmessageStart => {
                let (end, end_node) = open.pop().ok_or("a submessage starts that never ended")?;
                let len =
                    u32::try_from(out.len() - end).map_err(|_| "a submessage is too large")?;
                let (len_bytes, len_len) = varint_bytes(u64::from(len));
                out.put(&len_bytes[..len_len])?;
                let tag = &nodes[end_node];
                out.put(&tag.bytes[..tag.tag_len as usize])?;
            }
            Action::NonProto | Action::MessageStart => {
                if current.action == Action::NonProto {
                    let lengths = lengths.ok_or("no buffer for non-proto lengths")?;
                    let (len, len_len) = peek_varint32(buckets, buffers, lengths as u32)?;
                    take(buckets, buffers, lengths as u32, len_len)?;
                    out.put(take(buckets, buffers, current.buffer, len as usize)?)?;
                }
                if !open.is_empty() {
                    return Err("a record ends inside a submessage".into());
                }
                if limits.len() as u64 == num_records {
                    return Err(
                        format!("more than the {num_records} records the header says").into(),
                    );
                }
                limits.push(out.len());
            }
            Action::Invalid => {
                return Err(format!("a transition to node {node}, past the last").into())
            }
        }
        node = current.next as usize;
        if repeats == 0 {
            let Some(&byte) = transitions.next() else {
                break;
            };
            node += usize::from(byte >> 2);
            repeats = usize::from(byte & 3) + usize::from(nodes[node].implicit);
        } else if !nodes[node].implicit {
            repeats -= 1;
        }
    }
    if !open.is_empty() {
        return Err("a submessage is still open at the chunk's end".into());
    }
    if limits.len() as u64 != num_records {
        return Err(format!("{} records, the header says {num_records}", limits.len()).into());
    }
    if limits.last().copied().unwrap_or(0) != out.len() || out.len() != size {
        return Err(format!(
            "the records take {} bytes, the header says {size}",
            out.len()
        )
        .into());
    }
    Ok(())
}
