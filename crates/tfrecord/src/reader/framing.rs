//! The framing of a TFRecord stream, apart from the stream it comes from: a record's header
//! checked, its data read into a buffer or left where it lies, skipped, or resynced past
//! damage, with the position and the reader's state kept as it goes. One generic routine
//! for every kind of source (plain, gzip, zlib) that [`Reader`](super::Reader) holds.

use std::io::{self, BufRead, Read};

use ofconvert_frame::input::{BufInput, DIRECT_READ_MIN};
use ofconvert_frame::{ReaderState, Stop};

use crate::error::{Error, ErrorKind};
use crate::frame::{self, FOOTER_LEN, HEADER_LEN};
use crate::resync::resume_at;
use crate::{Position, Resync};

use super::ReaderOptions;

/// The reader's bookkeeping, apart from the input so that one generic routine serves every
/// kind of source.
pub(super) struct Framing {
    pub(super) options: ReaderOptions,
    pub(super) position: Position,
    pub(super) state: ReaderState,
    /// Bytes of the current record consumed so far, for a resync after it fails.
    pub(super) consumed: u64,
    /// How many bytes the framed stream holds, when known.
    pub(super) stream_len: Option<u64>,
    /// The data length of the last record read, when it was left in the buffer, just before
    /// its footer.
    pub(super) in_buffer: Option<usize>,
}

impl Framing {
    /// Records the outcome of a read: whether the reader stops, and how it may go on.
    pub(super) fn note<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(err) = &result {
            self.in_buffer = None;
            let how = match err.kind() {
                ErrorKind::DataCrcMismatch { .. } => Stop::Recoverable,
                ErrorKind::Io(_) => Stop::Fused,
                _ => Stop::Damaged,
            };
            self.state.stop(how, self.consumed);
        }
        self.consumed = 0;
        result
    }

    pub(super) fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.position.offset, self.position.index)
    }

    pub(super) fn io_error(&self, err: io::Error) -> Error {
        self.error(ErrorKind::Io(err))
    }

    /// Advances past a record of `length` data bytes.
    pub(super) fn advance(&mut self, length: u64) {
        self.position.offset += HEADER_LEN as u64 + length + FOOTER_LEN as u64;
        self.position.index += 1;
    }

    /// Reads and checks the next header without consuming it. `None` at a clean end.
    pub(super) fn peek_header<S: Read>(
        &self,
        input: &mut BufInput<S>,
    ) -> Result<Option<u64>, Error> {
        let available = input.fill_to(HEADER_LEN).map_err(|e| self.io_error(e))?;
        if available.is_empty() {
            return Ok(None);
        }
        let header = if self.options.verify_length_crc {
            frame::decode_header(available)
        } else {
            frame::decode_length(available)
        };
        let length = header.map_err(|kind| self.error(kind))?;
        if let Some(stream_len) = self.stream_len {
            let after_header = stream_len.saturating_sub(self.position.offset + HEADER_LEN as u64);
            if length.saturating_add(FOOTER_LEN as u64) > after_header {
                let kind = ErrorKind::Truncated {
                    length,
                    available: after_header,
                };
                return Err(self.error(kind));
            }
        }
        Ok(Some(length))
    }

    /// Consumes `amount` bytes of the current record.
    pub(super) fn consume<S: Read>(&mut self, input: &mut BufInput<S>, amount: usize) {
        input.consume(amount);
        self.consumed += amount as u64;
    }

    /// Takes the next record in place when it lies whole in the buffer, sound (see
    /// [`sound_record`](Framing::sound_record)). False, with nothing consumed, for anything
    /// else, which the general path then reads or reports: this one is only the quick way
    /// through the common case.
    #[inline]
    pub(super) fn take_buffered<S: Read>(&mut self, input: &mut BufInput<S>) -> bool {
        let Some(data_len) = self.sound_record(input.buffer(), self.position.offset) else {
            return false;
        };
        input.consume(HEADER_LEN + data_len + FOOTER_LEN);
        self.in_buffer = Some(data_len);
        self.advance(data_len as u64);
        true
    }

    /// The data length of the record at the start of `bytes` (at `offset` in the stream)
    /// when it lies whole there and is sound: its length and data match their checksums (as
    /// far as they are checked), and it ends within the stream. `None` for anything else.
    #[inline(always)]
    pub(super) fn sound_record(&self, bytes: &[u8], offset: u64) -> Option<usize> {
        let header = bytes.first_chunk::<HEADER_LEN>()?;
        let (length, length_crc) = header.split_at(8);
        let length_bytes: [u8; 8] = length.try_into().unwrap_or_default();
        let data_len = usize::try_from(u64::from_le_bytes(length_bytes))
            .ok()
            .filter(|&len| len <= bytes.len().saturating_sub(HEADER_LEN + FOOTER_LEN))?;
        let record = &bytes[..data_len + HEADER_LEN + FOOTER_LEN];
        let end = offset + record.len() as u64;
        if self.stream_len.is_some_and(|stream_len| end > stream_len) {
            return None;
        }
        if self.options.verify_length_crc
            && u32::from_le_bytes(length_crc.try_into().unwrap_or_default())
                != crate::crc::masked_crc32c_u64(length_bytes)
        {
            return None;
        }
        let (data, footer) = record[HEADER_LEN..].split_at(data_len);
        if self.options.verify_data_crc && frame::check_footer(data, footer).is_err() {
            return None;
        }
        Some(data_len)
    }

    /// Hands the sound records that lie whole in the buffer to `each`, at most `max`; see
    /// [`Reader::take_run`].
    #[inline]
    pub(super) fn take_run<S: Read>(
        &mut self,
        input: &mut BufInput<S>,
        max: u64,
        each: &mut impl FnMut(Position, &[u8]) -> bool,
    ) -> u64 {
        let bytes = input.buffer();
        let (mut used, mut taken, mut last) = (0, 0, None);
        let mut position = self.position;
        while taken < max {
            let Some(data_len) = self.sound_record(&bytes[used..], position.offset) else {
                break;
            };
            let data = &bytes[used + HEADER_LEN..used + HEADER_LEN + data_len];
            let at = position;
            let framed = HEADER_LEN + data_len + FOOTER_LEN;
            used += framed;
            position.offset += framed as u64;
            position.index += 1;
            taken += 1;
            last = Some(data_len);
            if !each(at, data) {
                break;
            }
        }
        input.consume(used);
        self.position = position;
        if last.is_some() {
            self.in_buffer = last;
        }
        taken
    }

    /// Reads the next record: into `buf`, or, `in_place` and when it lies whole in the
    /// buffer, nowhere (its data is then just behind the read position, before the footer).
    pub(super) fn read_record_at<S: Read>(
        &mut self,
        input: &mut BufInput<S>,
        buf: &mut Vec<u8>,
        in_place: bool,
    ) -> Result<Option<u64>, Error> {
        self.in_buffer = None;
        let Some(length) = self.peek_header(input)? else {
            return Ok(None);
        };
        let framed = frame::framed_len(length);
        let verify = self.options.verify_data_crc;
        let checked = match framed.and_then(|n| usize::try_from(n).ok()) {
            // A small record, or one already buffered, is read in one piece: one copy, or
            // none in place, no extra calls. Larger ones stream into `buf` past the buffer.
            Some(framed) if framed < DIRECT_READ_MIN || framed <= input.buffered() => {
                let available = input.fill_to(framed).map_err(|e| self.io_error(e))?;
                let Some(record) = available.get(..framed) else {
                    let available = available.len().saturating_sub(HEADER_LEN) as u64;
                    return Err(self.error(ErrorKind::Truncated { length, available }));
                };
                let data_len = framed - HEADER_LEN - FOOTER_LEN;
                let (data, footer) = record[HEADER_LEN..].split_at(data_len);
                let checked = if verify {
                    frame::check_footer(data, footer)
                } else {
                    Ok(())
                };
                if in_place {
                    self.in_buffer = Some(data_len);
                } else {
                    buf.extend_from_slice(data);
                }
                self.consume(input, framed);
                checked
            }
            _ => {
                self.consume(input, HEADER_LEN);
                let read = input.append_to(buf, length).map_err(|e| self.io_error(e))?;
                self.consumed += read;
                let footer = input.fill_to(FOOTER_LEN).map_err(|e| self.io_error(e))?;
                let Some(footer) = footer.get(..FOOTER_LEN).filter(|_| read == length) else {
                    let available = read + footer.len().min(FOOTER_LEN) as u64;
                    return Err(self.error(ErrorKind::Truncated { length, available }));
                };
                let stored_crc = footer_crc(footer);
                self.consume(input, FOOTER_LEN);
                if verify {
                    frame::check_footer(buf, &stored_crc)
                } else {
                    Ok(())
                }
            }
        };
        let data_offset = self.position.offset + HEADER_LEN as u64;
        let index = self.position.index;
        self.advance(length);
        if let Err((expected, actual)) = checked {
            let kind = ErrorKind::DataCrcMismatch { expected, actual };
            return Err(Error::new(kind, data_offset, index));
        }
        Ok(Some(length))
    }

    pub(super) fn skip_record<S: Read>(
        &mut self,
        input: &mut BufInput<S>,
    ) -> Result<Option<u64>, Error> {
        self.in_buffer = None;
        let Some(length) = self.peek_header(input)? else {
            return Ok(None);
        };
        self.consume(input, HEADER_LEN);
        let skipped = input.skip(length).map_err(|e| self.io_error(e))?;
        let skipped_footer = if skipped == length {
            input
                .skip(FOOTER_LEN as u64)
                .map_err(|e| self.io_error(e))?
        } else {
            0
        };
        self.consumed += skipped + skipped_footer;
        if skipped_footer < FOOTER_LEN as u64 {
            let available = skipped + skipped_footer;
            return Err(self.error(ErrorKind::Truncated { length, available }));
        }
        self.advance(length);
        Ok(Some(length))
    }

    pub(super) fn resync<S: Read>(
        &mut self,
        input: &mut BufInput<S>,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Resync>, Error> {
        self.in_buffer = None;
        if self.state.damaged().is_none() {
            return Ok(None);
        }
        let mut recovered = false;
        let passed = input
            .resync(|candidate| resume_at(candidate, buf, &mut recovered))
            .map_err(|e| self.io_error(e))?;
        Ok(self.state.resynced(&mut self.position, passed, recovered))
    }
}

fn footer_crc(footer: &[u8]) -> [u8; FOOTER_LEN] {
    let mut crc = [0; FOOTER_LEN];
    crc.copy_from_slice(footer);
    crc
}
