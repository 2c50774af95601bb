//! A transposed chunk's header: its buckets and the buffers in them, and its state machine.

use std::mem::size_of;

use crate::codec::{varint_bytes, ZstdContexts};

use super::budget::{Bounds, Budget};
use super::nodes::{
    valid_tag, varint32, varint64, Action, Buffer, Node, Scratch, LENGTH_DELIMITED, MAX_TRANSITION,
    MAX_VARINT32, NON_PROTO, NO_OP, START_OF_MESSAGE, START_OF_SUBMESSAGE,
    SUBMESSAGE_END_WIRE_TYPE, VARINT_INLINE_0, VARINT_INLINE_MAX,
};

/// Reads the header: the buckets (taken from the front of `rest` and decompressed), the
/// buffers in them, and the state machine, each held to `budget` before it is made. Returns
/// the first node.
pub(super) fn parse(
    mut header: &[u8],
    compression: u8,
    rest: &mut &[u8],
    bounds: &Bounds,
    budget: &mut Budget,
    scratch: &mut Scratch,
    zstd: &mut ZstdContexts,
) -> Result<usize, String> {
    let num_buckets = varint32(&mut header, "the number of buckets")? as usize;
    let num_buffers = varint32(&mut header, "the number of buffers")? as usize;
    // Every buffer byte is a record byte, or a non-proto record's length.
    let mut data_left = bounds
        .decoded_data_size
        .saturating_add(bounds.num_records.saturating_mul(MAX_VARINT32 as u64))
        .saturating_add(1 << 12);
    if num_buckets > header.len() || num_buffers > header.len() {
        return Err(format!(
            "{num_buckets} buckets and {num_buffers} buffers in a header of {} bytes",
            header.len()
        ));
    }
    if num_buckets == 0 && num_buffers != 0 {
        return Err(format!("{num_buffers} buffers but no bucket"));
    }
    budget.take(table::<Vec<u8>>(num_buckets), "the buckets' table")?;
    scratch.buckets.resize_with(num_buckets, Vec::new);
    for bucket in 0..num_buckets {
        let len = varint64(&mut header, "a bucket's length")?;
        if len > rest.len() as u64 {
            return Err(format!(
                "bucket {bucket} takes {len} bytes, only {} remain",
                rest.len()
            ));
        }
        let (block, tail) = rest.split_at(len as usize);
        *rest = tail;
        let out = &mut scratch.buckets[bucket];
        let what = format!("bucket {bucket}");
        budget.decompress(&what, compression, block, data_left, zstd, out)?;
        data_left = data_left.saturating_sub(out.len() as u64);
    }
    budget.take(table::<Buffer>(num_buffers), "the buffers' table")?;
    scratch.buffers.clear();
    let mut bucket = 0;
    let mut at = 0;
    for buffer in 0..num_buffers {
        let len = varint64(&mut header, "a buffer's length")?;
        let held = scratch.buckets[bucket].len();
        if len > (held - at) as u64 {
            return Err(format!(
                "buffer {buffer} of {len} bytes does not fit in bucket {bucket}"
            ));
        }
        let end = at + len as usize;
        scratch.buffers.push(Buffer { bucket, at, end });
        at = end;
        while at == scratch.buckets[bucket].len() && bucket + 1 < num_buckets {
            bucket += 1;
            at = 0;
        }
    }
    if num_buckets > 0 && (bucket + 1 < num_buckets || at != scratch.buckets[bucket].len()) {
        return Err("the buffers do not fill the buckets".into());
    }

    let size = varint32(&mut header, "the number of nodes")? as usize;
    if size > header.len() {
        return Err(format!(
            "{size} nodes in a header of {} bytes",
            header.len()
        ));
    }
    // The nodes, their tags, and the walks that look for a circle of implicit moves.
    let nodes = table::<Node>(size + MAX_TRANSITION)
        .saturating_add(table::<u32>(size))
        .saturating_add(table::<usize>(size));
    budget.take(nodes, "the state machine")?;
    scratch.tags.clear();
    let mut subtypes = 0;
    for _ in 0..size {
        let tag = varint32(&mut header, "a node's tag")?;
        if valid_tag(tag) && tag & 7 == 0 {
            subtypes += 1;
        }
        scratch.tags.push(tag);
    }
    scratch.nodes.clear();
    for _ in 0..size {
        let mut next = varint32(&mut header, "a node's next node")? as usize;
        let implicit = next >= size;
        if implicit {
            next -= size;
        }
        if next >= size {
            return Err(format!("a node moves to node {next} of {size}"));
        }
        scratch.nodes.push(Node {
            next: next as u32,
            implicit,
            ..Node::new(Action::NoOp)
        });
    }
    if subtypes > header.len() {
        return Err("the subtypes are cut short".into());
    }
    let (mut subtypes, tail) = header.split_at(subtypes);
    header = tail;
    let mut has_non_proto = false;
    let buffer = |header: &mut &[u8]| -> Result<u32, String> {
        let index = varint32(header, "a node's buffer")?;
        if index as usize >= num_buffers {
            return Err(format!("a node reads buffer {index} of {num_buffers}"));
        }
        Ok(index)
    };
    for (node, &tag) in scratch.nodes.iter_mut().zip(&scratch.tags) {
        node.action = match tag {
            NO_OP => Action::NoOp,
            NON_PROTO => {
                has_non_proto = true;
                node.buffer = buffer(&mut header)?;
                Action::NonProto
            }
            START_OF_SUBMESSAGE => Action::SubmessageStart,
            START_OF_MESSAGE => Action::MessageStart,
            tag => {
                let (tag, end) = if tag & 7 == SUBMESSAGE_END_WIRE_TYPE {
                    (tag - SUBMESSAGE_END_WIRE_TYPE + LENGTH_DELIMITED, true)
                } else {
                    (tag, false)
                };
                if !valid_tag(tag) {
                    return Err(format!("invalid tag {tag} in a node"));
                }
                let (bytes, tag_len) = varint_bytes(u64::from(tag));
                node.bytes[..tag_len].copy_from_slice(&bytes[..tag_len]);
                node.tag_len = tag_len as u8;
                node.written = tag_len as u8;
                let action = match (tag & 7, end) {
                    (0, _) => {
                        let (&subtype, tail) = subtypes.split_first().ok_or("no subtype")?;
                        subtypes = tail;
                        match subtype {
                            0..VARINT_INLINE_0 => Action::Varint(subtype + 1),
                            VARINT_INLINE_0..=VARINT_INLINE_MAX => {
                                node.bytes[tag_len] = subtype - VARINT_INLINE_0;
                                node.written += 1;
                                Action::Tag
                            }
                            _ => return Err(format!("invalid varint subtype {subtype}")),
                        }
                    }
                    (1, _) => Action::Fixed(8),
                    (5, _) => Action::Fixed(4),
                    (2, false) => Action::String,
                    (2, true) => Action::SubmessageEnd,
                    _ => Action::Tag,
                };
                if matches!(
                    action,
                    Action::Varint(_) | Action::Fixed(_) | Action::String
                ) {
                    node.buffer = buffer(&mut header)?;
                }
                action
            }
        };
    }
    // The non-proto records' lengths are the last buffer.
    if has_non_proto && num_buffers == 0 {
        return Err("no buffer for the non-proto records' lengths".into());
    }
    let first = varint32(&mut header, "the first node")? as usize;
    if first >= size {
        return Err(format!("the first node is {first} of {size}"));
    }
    if !header.is_empty() {
        return Err(format!("{} bytes after the header", header.len()));
    }
    if implicit_loop(&scratch.nodes) {
        return Err("the nodes' implicit moves run in a circle".into());
    }
    // Transition bytes may point up to 63 nodes past the last one.
    scratch.nodes.extend(std::iter::repeat_n(
        Node::new(Action::Invalid),
        MAX_TRANSITION,
    ));
    Ok(first)
}

/// The bytes a table of `len` `T`s takes.
fn table<T>(len: usize) -> u64 {
    (len as u64).saturating_mul(size_of::<T>() as u64)
}

/// Whether following implicit moves from some node comes back to it: the machine would run
/// forever without reading a transition.
fn implicit_loop(nodes: &[Node]) -> bool {
    let mut walk_of = vec![0usize; nodes.len()];
    for start in 0..nodes.len() {
        if walk_of[start] != 0 {
            continue;
        }
        let walk = start + 1;
        walk_of[start] = walk;
        let mut node = start;
        while nodes[node].implicit {
            node = nodes[node].next as usize;
            if walk_of[node] == walk {
                return true;
            }
            if walk_of[node] != 0 {
                break;
            }
            walk_of[node] = walk;
        }
    }
    false
}
