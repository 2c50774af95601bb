//! The parts of a transposed chunk's state machine: its nodes and what each does, where its
//! data buffers lie, the reserved ids and subtypes, and what decoding keeps from chunk to
//! chunk.

use crate::codec::take_varint;

/// Ids a node has in place of a protobuf tag.
pub(super) const NO_OP: u32 = 0;
pub(super) const NON_PROTO: u32 = 1;
pub(super) const START_OF_SUBMESSAGE: u32 = 2;
pub(super) const START_OF_MESSAGE: u32 = 3;
/// The wire type a node's tag carries for the end of a submessage (protobuf's are 0 to 5).
pub(super) const SUBMESSAGE_END_WIRE_TYPE: u32 = 6;
pub(super) const LENGTH_DELIMITED: u32 = 2;
/// A varint field's subtypes: 0 to 9, a varint of one to ten bytes in the buffer; 10 to 137,
/// the value 0 to 127 held in the node.
pub(super) const VARINT_INLINE_0: u8 = 10;
pub(super) const VARINT_INLINE_MAX: u8 = VARINT_INLINE_0 + 0x7f;
/// How far past its base a transition byte may move (six bits).
pub(super) const MAX_TRANSITION: usize = 63;
/// Riegeli's varint32: at most five bytes.
pub(super) const MAX_VARINT32: usize = 5;
/// How many submessages may be open at once. Riegeli takes submessages apart 100 deep at most
/// (deeper ones it keeps whole, as strings); the bound keeps a hostile machine from opening one
/// on every transition.
pub(super) const MAX_OPEN: usize = 1 << 10;
/// How much a decoder keeps of its scratch from chunk to chunk: past it, a chunk's buffers
/// are freed once it is decoded, so that what a large chunk took does not stay on beside what
/// the next one takes.
const KEEP: usize = 16 << 20;

/// What a node does when the machine reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    NoOp,
    /// A record that is not a protocol buffer, whole from the node's buffer: ends a record.
    NonProto,
    /// The start of a record's message: ends a record.
    MessageStart,
    /// The start of the submessage whose end is the latest one open: writes its tag and length.
    SubmessageStart,
    /// The end of a submessage: opens it.
    SubmessageEnd,
    /// Writes the node's bytes: a group's tag, or a varint field's tag and inline value.
    Tag,
    /// A varint field: the tag, then this many bytes from the buffer, continuation bits added.
    Varint(u8),
    /// A fixed32 or fixed64 field: the tag, then this many bytes from the buffer.
    Fixed(u8),
    /// A length-delimited field: the tag, then a length and its bytes from the buffer.
    String,
    /// Past the last node, where a transition byte may point: an error.
    Invalid,
}

/// A node of the state machine.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub(super) action: Action,
    /// The tag as a varint, then an inline value: `written` of these bytes are written, and a
    /// submessage's tag is the first `tag_len`.
    pub(super) bytes: [u8; MAX_VARINT32 + 1],
    pub(super) written: u8,
    pub(super) tag_len: u8,
    pub(super) buffer: u32,
    /// The base of the nodes this one moves to.
    pub(super) next: u32,
    pub(super) implicit: bool,
}

impl Node {
    pub(super) fn new(action: Action) -> Node {
        Node {
            action,
            bytes: [0; MAX_VARINT32 + 1],
            written: 0,
            tag_len: 0,
            buffer: 0,
            next: 0,
            implicit: false,
        }
    }
}

/// Where a data buffer lies in its bucket, and how much of it has been read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Buffer {
    pub(super) bucket: usize,
    pub(super) at: usize,
    pub(super) end: usize,
}

/// What decoding a transposed chunk needs besides its output, kept from chunk to chunk.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(super) header: Vec<u8>,
    pub(super) buckets: Vec<Vec<u8>>,
    pub(super) transitions: Vec<u8>,
    pub(super) buffers: Vec<Buffer>,
    pub(super) nodes: Vec<Node>,
    pub(super) tags: Vec<u32>,
    /// The open submessages: how many bytes were written at their end, and their node.
    pub(super) open: Vec<(usize, usize)>,
}

impl Scratch {
    /// Frees the buffers when they hold more than [`KEEP`] bytes.
    pub(super) fn release_if_large(&mut self) {
        fn bytes<T>(buf: &Vec<T>) -> usize {
            buf.capacity() * std::mem::size_of::<T>()
        }
        let held = bytes(&self.header)
            + bytes(&self.buckets)
            + self.buckets.iter().map(bytes).sum::<usize>()
            + bytes(&self.transitions)
            + bytes(&self.buffers)
            + bytes(&self.nodes)
            + bytes(&self.tags)
            + bytes(&self.open);
        if held > KEEP {
            *self = Scratch::default();
        }
    }
}

/// The most header or transition bytes a chunk of `num_records` records of `decoded` bytes
/// may decompress to. Each node and each transition stands for at least a field or a record
/// in a sound chunk, and Riegeli's writer spends up to 32 transition bytes on one, through its
/// no-op nodes: a bound that allows much, so the blocks are held together to the reader's
/// limit as well (`budget.rs`).
pub(super) fn metadata_limit(num_records: u64, decoded: u64) -> u64 {
    decoded
        .saturating_add(num_records)
        .saturating_mul(64)
        .saturating_add(1 << 12)
}

pub(super) fn varint32(bytes: &mut &[u8], what: &str) -> Result<u32, String> {
    let before = *bytes;
    let value = take_varint(bytes).ok_or_else(|| format!("{what} is not a varint"))?;
    if before.len() - bytes.len() > MAX_VARINT32 || value > u64::from(u32::MAX) {
        return Err(format!("{what} does not fit in 32 bits"));
    }
    Ok(value as u32)
}

pub(super) fn varint64(bytes: &mut &[u8], what: &str) -> Result<u64, String> {
    take_varint(bytes).ok_or_else(|| format!("{what} is not a varint"))
}

pub(super) fn valid_tag(tag: u32) -> bool {
    tag >= 8 && tag & 7 <= 5
}
