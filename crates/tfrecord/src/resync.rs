//! Where a [`Reader`](crate::Reader) resumes after damage to the framing: the next offset
//! whose header checks out, confirmed by its data, and whether the damaged record itself can
//! be recovered.

use ofconvert_frame::input::{Candidate, Verdict};

use crate::frame::{self, FOOTER_LEN, HEADER_LEN};
use crate::ErrorKind;

/// A length of this many bytes or more, on a record too large to confirm by its data CRC
/// during a resync, is taken for a chance match of the length CRC.
const MAX_UNCONFIRMED_LENGTH: u64 = 1 << 40;

/// Whether a resync resumes at `candidate`; when the damaged record before it is recovered,
/// its data goes to `buf`.
pub(crate) fn resume_at(
    candidate: Candidate<'_>,
    buf: &mut Vec<u8>,
    recovered: &mut bool,
) -> Verdict {
    let header = if candidate.is_end() {
        None
    } else {
        match frame::decode_header(candidate.bytes) {
            Ok(length) => Some(length),
            Err(ErrorKind::TruncatedHeader { .. }) if !candidate.complete => {
                return Verdict::NeedMore
            }
            Err(_) => return Verdict::Reject,
        }
    };
    if let Some(data) = candidate.gap.and_then(recoverable_data) {
        buf.extend_from_slice(data);
        *recovered = true;
        return Verdict::Accept;
    }
    let Some(length) = header else {
        return Verdict::Reject;
    };
    let fits = frame::framed_len(length).is_some_and(|framed| framed <= candidate.window as u64);
    match frame::confirmed_len(candidate.bytes, length) {
        Some(Ok(_)) => Verdict::Accept,
        Some(Err(())) => Verdict::Reject,
        None if fits && !candidate.complete => Verdict::NeedMore,
        None if !fits && !candidate.end_of_stream && length < MAX_UNCONFIRMED_LENGTH => {
            Verdict::Accept
        }
        None => Verdict::Reject,
    }
}

/// The data of `gap`, a damaged record running up to a good header, when its footer matches.
fn recoverable_data(gap: &[u8]) -> Option<&[u8]> {
    let data = gap.get(HEADER_LEN..gap.len().checked_sub(FOOTER_LEN)?)?;
    frame::check_footer(data, &gap[gap.len() - FOOTER_LEN..])
        .ok()
        .map(|()| data)
}
