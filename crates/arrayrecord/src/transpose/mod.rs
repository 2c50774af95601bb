//! Transposed chunks (`array_record`'s `transpose:true`): records that parse as protocol
//! buffers, taken apart field by field so that like values compress together, and put back
//! together here.
//!
//! A transposed chunk's data is a compression byte; the header's length (a varint) and the
//! header, one compressed block; the buckets, compressed blocks of the lengths the header
//! gives, which hold the data buffers back to back; and the transitions, one compressed block
//! to the end of the data. The header lists the buckets and buffers, then a state machine:
//! each node a protobuf tag (or one of four reserved ids) with what it reads from which buffer,
//! and the base of the nodes it moves to.
//!
//! Decoding starts at the header's first node. After a node, the next one is its base plus the
//! top six bits of a transition byte; the byte's low two bits repeat the plain move to the base
//! that many times more without a byte, and an implicit node (one with a single way on) moves
//! without a byte. The machine writes the records from their last byte to their first: fields
//! come last to first, a submessage's end before its start (which then knows its length), and
//! a message's start after its fields, which ends a record. The bytes are gathered back to
//! front here and turned around at the end. Records that are not protocol buffers come whole
//! from a buffer of their own, their lengths from the last buffer.

mod budget;
mod header;
mod machine;
mod nodes;

use crate::codec::ZstdContexts;
use crate::error::ErrorKind;

pub(crate) use budget::Bounds;
use budget::Budget;
use machine::Refusal;
pub(crate) use nodes::Scratch;
use nodes::{metadata_limit, varint64};

/// Decodes a transposed chunk's `data` into `values` (the records back to back) and `ends`
/// (where each ends). The chunk's header says what `bounds` say it holds, which the callers
/// hold to the reader's limit first; what decoding holds besides the records' bytes is held to
/// that limit too (`budget.rs`), and the moves of its state machine to what it writes
/// (`machine.rs`).
pub(crate) fn decode(
    data: &[u8],
    bounds: &Bounds,
    scratch: &mut Scratch,
    zstd: &mut ZstdContexts,
    values: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), ErrorKind> {
    let decoded = decode_held(data, bounds, scratch, zstd, values, ends);
    scratch.release_if_large();
    decoded.map_err(|refusal| match refusal {
        Refusal::Invalid(reason) => ErrorKind::InvalidChunk { reason },
        Refusal::TooManyMoves {
            moves,
            written,
            records,
        } => ErrorKind::TooManyMoves {
            moves,
            written,
            records,
        },
    })
}

fn decode_held(
    data: &[u8],
    bounds: &Bounds,
    scratch: &mut Scratch,
    zstd: &mut ZstdContexts,
    values: &mut Vec<u8>,
    ends: &mut Vec<usize>,
) -> Result<(), Refusal> {
    values.clear();
    ends.clear();
    let mut budget = Budget::new(bounds);
    let (&compression, mut rest) = data.split_first().ok_or("empty transposed chunk")?;
    let limit = metadata_limit(bounds.num_records, bounds.decoded_data_size);
    let header_len = varint64(&mut rest, "the header's length")?;
    if header_len > rest.len() as u64 {
        let remain = rest.len();
        return Err(format!("the header takes {header_len} bytes, only {remain} remain").into());
    }
    let (header, mut rest) = rest.split_at(header_len as usize);
    budget.decompress(
        "the header",
        compression,
        header,
        limit,
        zstd,
        &mut scratch.header,
    )?;
    let header = std::mem::take(&mut scratch.header);
    let parsed = header::parse(
        &header,
        compression,
        &mut rest,
        bounds,
        &mut budget,
        scratch,
        zstd,
    );
    scratch.header = header;
    let first = parsed?;
    budget.decompress(
        "the transitions",
        compression,
        rest,
        limit,
        zstd,
        &mut scratch.transitions,
    )?;
    let (num_records, size) = (bounds.num_records, bounds.decoded_data_size);
    machine::run(first, num_records, size, scratch, values, ends)?;
    // The records were written back to front: turned around, the first record comes first,
    // and how much had been written when each record ended, counted from the end, is where
    // the record before it ends. Done in place, so that the records' ends take no second table.
    values.reverse();
    let size = values.len();
    ends.reverse();
    for i in 1..ends.len() {
        ends[i - 1] = size - ends[i];
    }
    if let Some(last) = ends.last_mut() {
        *last = size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::machine::{MOVES_PER_OUTPUT, MOVES_SLACK};
    use super::*;
    use crate::codec::put_varint;

    /// An uncompressed chunk of one record, `field 1 = "ab"`: a string node that moves on
    /// implicitly to the start of the message, and the transitions given.
    fn chunk(next: [u8; 2], transitions: &[u8]) -> Vec<u8> {
        let bucket = [2, b'a', b'b'];
        // Buckets, buffers, their lengths; two nodes: their tags, next nodes, the string's
        // buffer; the first node.
        let header = [1, 1, 3, 3, 2, 3, 10, next[0], next[1], 0, 1];
        let mut data = vec![0, header.len() as u8];
        data.extend_from_slice(&header);
        data.extend_from_slice(&bucket);
        data.extend_from_slice(transitions);
        data
    }

    fn decoded(data: &[u8], num_records: u64, size: u64) -> Result<Vec<Vec<u8>>, String> {
        let (mut values, mut ends) = (Vec::new(), Vec::new());
        let mut scratch = Scratch::default();
        let mut zstd = ZstdContexts::default();
        let bounds = Bounds {
            num_records,
            decoded_data_size: size,
            limit: 1 << 20,
        };
        decode(
            data,
            &bounds,
            &mut scratch,
            &mut zstd,
            &mut values,
            &mut ends,
        )
        .map_err(|kind| kind.to_string())?;
        let mut start = 0;
        Ok(ends
            .iter()
            .map(|&end| {
                let record = values[start..end].to_vec();
                start = end;
                record
            })
            .collect())
    }

    #[test]
    fn a_record_is_put_back_together_from_its_last_field_to_its_start() {
        let data = chunk([0, 2], &[]);
        assert_eq!(decoded(&data, 1, 4).unwrap(), [b"\x0a\x02ab".to_vec()]);
        // The header's record count and size are held to what the machine wrote.
        assert!(decoded(&data, 2, 4).unwrap_err().contains("1 records"));
        assert!(decoded(&data, 1, 5).unwrap_err().contains("4 bytes"));
        assert!(decoded(&data, 1, 3)
            .unwrap_err()
            .contains("more than the 3 bytes"));
    }

    #[test]
    fn a_chunk_of_no_records_decodes_to_none() {
        // No bucket, no buffer; one node that does nothing, and no transition.
        let header = [0, 0, 1, 0, 0, 0];
        let mut data = vec![0, header.len() as u8];
        data.extend_from_slice(&header);
        assert_eq!(decoded(&data, 0, 0).unwrap(), Vec::<Vec<u8>>::new());
        assert!(decoded(&data, 1, 0).unwrap_err().contains("0 records"));
    }

    #[test]
    fn hostile_machines_are_named_errors() {
        // Implicit moves in a circle would never read a transition.
        let err = decoded(&chunk([3, 2], &[]), 1, 4).unwrap_err();
        assert!(err.contains("circle"), "{err}");
        // A transition 63 nodes past the base lands past the last node.
        let err = decoded(&chunk([0, 2], &[63 << 2]), 1, 4).unwrap_err();
        assert!(err.contains("past the last"), "{err}");
        // A second pass over the string node finds its buffer read.
        let err = decoded(&chunk([0, 2], &[1 << 2]), 1, 4).unwrap_err();
        assert!(err.contains("cut short"), "{err}");
        // A next node out of range, a cut header.
        let err = decoded(&chunk([0, 4], &[]), 1, 4).unwrap_err();
        assert!(err.contains("moves to node 2 of 2"), "{err}");
        let mut cut = chunk([0, 2], &[]);
        cut[1] = 10;
        assert!(decoded(&cut, 1, 4).is_err());
        // A submessage's end that moves back to itself opens one more on every transition.
        let header = [0, 0, 1, (1 << 3) | 6, 0, 0];
        let mut ends = vec![0, header.len() as u8];
        ends.extend_from_slice(&header);
        ends.resize(ends.len() + 2000, 0);
        let err = decoded(&ends, 1, 4).unwrap_err();
        assert!(err.contains("more than 1024 submessages open"), "{err}");
    }

    /// An uncompressed chunk: a chain of `noops` nodes that write nothing and move on
    /// implicitly, each to the next, then a group's start tag, a byte, which moves back to the
    /// chain by a transition: for every transition, `noops + 1` moves and a byte written.
    fn chain_writing_a_byte(noops: u64, transitions: usize) -> Vec<u8> {
        let nodes = noops + 1;
        let mut header = vec![0, 0];
        put_varint(&mut header, nodes);
        header.resize(header.len() + noops as usize, 0);
        header.push((1 << 3) | 3);
        for node in 0..noops {
            put_varint(&mut header, nodes + node + 1);
        }
        header.push(0);
        put_varint(&mut header, noops);
        let mut data = vec![0];
        put_varint(&mut data, header.len() as u64);
        data.extend_from_slice(&header);
        data.resize(data.len() + transitions, 0);
        data
    }

    #[test]
    fn the_machine_moves_at_most_16_times_a_byte_written_and_65536_times_more() {
        assert_eq!((MOVES_PER_OUTPUT, MOVES_SLACK), (16, 65536));
        // 16 moves a byte: every transition is taken, up to the end, where the record the
        // header declares was never ended.
        let err = decoded(&chain_writing_a_byte(15, 70_000), 1, 80_000).unwrap_err();
        assert!(err.contains("0 records, the header says 1"), "{err}");
        // 17: refused once the moves pass 16 for each byte written and 65,536 more, at the
        // 65,536th byte.
        let err = decoded(&chain_writing_a_byte(16, 70_000), 1, 80_000).unwrap_err();
        assert!(
            err.starts_with(
                "transposed chunk's state machine runs away (1114113 moves for 65536 bytes \
                 and 0 records written; a chunk may make 16 a byte or record, and 65536 more)"
            ),
            "{err}"
        );
    }
}
