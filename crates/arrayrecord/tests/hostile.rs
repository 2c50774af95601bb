//! Hostile transposed chunks: state machines built to make a reader work without end, each
//! refused by name.

use ofconvert_arrayrecord::{ErrorKind, Reader};

mod crafted;
use crafted::{file_of_chunks, transposed, varint};

/// A state machine of `chain + 1` nodes that do nothing: `chain` of them move on implicitly,
/// each to the next, and the last moves back to the first only by a transition. Every
/// transition byte walks the whole chain again, writing nothing.
fn chain_of_implicit_nodes(chain: u64) -> Vec<u8> {
    let nodes = chain + 1;
    // No bucket, no buffer; the nodes' tags (no-ops) and their next nodes, an implicit move
    // spelt as the node plus the number of nodes.
    let mut header = vec![0, 0];
    varint(&mut header, nodes);
    header.resize(header.len() + nodes as usize, 0);
    for node in 0..chain {
        varint(&mut header, nodes + node + 1);
    }
    varint(&mut header, 0);
    // The first node: the last, which takes a transition.
    varint(&mut header, chain);
    header
}

/// The crafted file: its one transposed chunk declares a record of 16 KiB, whose
/// transitions may then soundly take 1 MiB (64 bytes a record byte), and holds 1 Mi
/// transitions over a chain of 4,096 nodes: 2^32 moves, which took a reader 39 s to find that
/// the record never ends, for a file of 8 KB.
fn crafted_file() -> Vec<u8> {
    let declared = 16 << 10;
    let data = transposed(&chain_of_implicit_nodes(4096), 1 << 20);
    let simple = vec![0, 1, 3, b'a', b'b', b'c'];
    file_of_chunks(&[
        (b't', 1, declared, data),
        (b'r', 1, 3, simple.clone()),
        (b'r', 1, 3, simple),
    ])
}

#[test]
fn a_chain_of_implicit_nodes_walked_on_every_transition_is_refused_by_its_moves() {
    let file = crafted_file();
    assert!(file.len() < 16 << 10, "{} bytes", file.len());
    let mut record = Vec::new();
    let err = Reader::new(file.as_slice())
        .read_record(&mut record)
        .unwrap_err();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::TooManyMoves {
                written: 0,
                records: 0,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!((err.offset(), err.index()), (64, 0));
}
