//! Plain slice-based parsers of the two framings, written from the format description and
//! not from the crates, so the streaming readers can be compared with them step by step.

/// What one call to a reader should give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step<'a, F> {
    /// `read_record` returns this record's data.
    Record(&'a [u8]),
    /// `skip_record` skips a record of this length.
    Skipped(u64),
    /// A clean end of the stream (also what a stopped reader reports).
    End,
    /// A failure at this record offset and index.
    Error {
        /// What went wrong.
        failure: F,
        /// The byte offset the error reports.
        offset: u64,
        /// The record index the error reports.
        index: u64,
    },
}

/// The TFRecord failures, with the values the reader reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TfFailure {
    /// The underlying reader failed (here: an injected failure).
    Io,
    /// 1 to 11 bytes at the end.
    TruncatedHeader {
        /// Bytes left.
        available: usize,
    },
    /// The length's masked CRC is wrong.
    LengthCrc {
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// The data's masked CRC is wrong.
    DataCrc {
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// Data and footer cut short.
    Truncated {
        /// Announced data length.
        length: u64,
        /// Bytes after the header.
        available: u64,
    },
}

/// TensorFlow's masked CRC-32C, spelled out from its definition.
pub fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn le_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut array = [0; 8];
    array.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(array)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Ready,
    Recoverable,
    Stopped,
}

/// The reference TFRecord reader.
pub struct TfReference<'a> {
    data: &'a [u8],
    offset: usize,
    index: u64,
    verify_length: bool,
    verify_data: bool,
    fail_at: Option<usize>,
    state: State,
}

impl<'a> TfReference<'a> {
    /// A reader of `data` with the given checks; reads at or past `fail_at` fail.
    pub fn new(
        data: &'a [u8],
        verify_length: bool,
        verify_data: bool,
        fail_at: Option<usize>,
    ) -> Self {
        TfReference {
            data,
            offset: 0,
            index: 0,
            verify_length,
            verify_data,
            fail_at,
            state: State::Ready,
        }
    }

    /// Offset and index of the next record.
    pub fn position(&self) -> (u64, u64) {
        (self.offset as u64, self.index)
    }

    /// What the next `read_record` (or `skip_record` when `skip`) gives.
    pub fn next(&mut self, skip: bool) -> Step<'a, TfFailure> {
        if self.state != State::Ready {
            return Step::End;
        }
        let step = self.step(skip);
        if let Step::Error { failure, .. } = &step {
            self.state = match failure {
                TfFailure::DataCrc { .. } => State::Recoverable,
                _ => State::Stopped,
            };
        }
        step
    }

    /// Whether the reader may go on, as `Reader::recover` answers.
    pub fn recover(&mut self) -> bool {
        match self.state {
            State::Ready => true,
            State::Recoverable => {
                self.state = State::Ready;
                true
            }
            State::Stopped => false,
        }
    }

    /// Whether the bytes up to `end` cannot all be read because of the injected failure.
    fn blocked(&self, end: usize) -> bool {
        self.fail_at.is_some_and(|at| at < end)
    }

    fn step(&mut self, skip: bool) -> Step<'a, TfFailure> {
        let start = self.offset;
        let error = |failure| Step::Error {
            failure,
            offset: start as u64,
            index: self.index,
        };
        let rest = &self.data[start..];
        if rest.is_empty() {
            return Step::End;
        }
        if self.blocked((start + 12).min(self.data.len())) {
            return error(TfFailure::Io);
        }
        if rest.len() < 12 {
            return error(TfFailure::TruncatedHeader {
                available: rest.len(),
            });
        }
        let length = le_u64(&rest[..8]);
        let stored = le_u32(&rest[8..12]);
        let computed = masked_crc(&rest[..8]);
        if self.verify_length && stored != computed {
            return error(TfFailure::LengthCrc { stored, computed });
        }
        let after_header = (rest.len() - 12) as u64;
        let needed = u128::from(length) + 4;
        let end = if needed > u128::from(after_header) {
            self.data.len()
        } else {
            start + 16 + length as usize
        };
        if self.blocked(end) {
            return error(TfFailure::Io);
        }
        if needed > u128::from(after_header) {
            return error(TfFailure::Truncated {
                length,
                available: after_header,
            });
        }
        let data = &rest[12..12 + length as usize];
        let footer = le_u32(&rest[12 + length as usize..]);
        let index = self.index;
        self.offset = end;
        self.index += 1;
        if skip {
            return Step::Skipped(length);
        }
        let computed = masked_crc(data);
        if self.verify_data && footer != computed {
            return Step::Error {
                failure: TfFailure::DataCrc {
                    stored: footer,
                    computed,
                },
                offset: start as u64 + 12,
                index,
            };
        }
        Step::Record(data)
    }
}

/// The OFRecord failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfFailure {
    /// The underlying reader failed (here: an injected failure).
    Io,
    /// 1 to 7 bytes at the end.
    TruncatedLength {
        /// Bytes left.
        available: usize,
    },
    /// Payload cut short.
    Truncated {
        /// Announced length.
        length: u64,
        /// Bytes after the length field.
        available: u64,
    },
    /// A zero length: the reader steps past it.
    ZeroLength,
    /// A negative length, as OneFlow reads it (signed).
    NegativeLength {
        /// The length.
        length: i64,
    },
}

/// The reference OFRecord reader: after an error other than a zero length, every call gives
/// that error again.
pub struct OfReference<'a> {
    data: &'a [u8],
    offset: usize,
    index: u64,
    fail_at: Option<usize>,
    failed: Option<Step<'a, OfFailure>>,
}

impl<'a> OfReference<'a> {
    /// A reader of `data`; reads at or past `fail_at` fail.
    pub fn new(data: &'a [u8], fail_at: Option<usize>) -> Self {
        OfReference {
            data,
            offset: 0,
            index: 0,
            fail_at,
            failed: None,
        }
    }

    /// Offset and index of the next record.
    pub fn position(&self) -> (u64, u64) {
        (self.offset as u64, self.index)
    }

    /// What the next `read_record` (or `skip_record` when `skip`) gives.
    pub fn next(&mut self, skip: bool) -> Step<'a, OfFailure> {
        if let Some(failed) = &self.failed {
            return failed.clone();
        }
        let step = self.step(skip);
        if let Step::Error { failure, .. } = &step {
            if *failure != OfFailure::ZeroLength {
                self.failed = Some(step.clone());
            }
        }
        step
    }

    fn blocked(&self, end: usize) -> bool {
        self.fail_at.is_some_and(|at| at < end)
    }

    fn step(&mut self, skip: bool) -> Step<'a, OfFailure> {
        let start = self.offset;
        let error = |failure| Step::Error {
            failure,
            offset: start as u64,
            index: self.index,
        };
        let rest = &self.data[start..];
        if rest.is_empty() {
            return Step::End;
        }
        if self.blocked((start + 8).min(self.data.len())) {
            return error(OfFailure::Io);
        }
        if rest.len() < 8 {
            return error(OfFailure::TruncatedLength {
                available: rest.len(),
            });
        }
        let signed = le_u64(rest) as i64;
        if signed < 0 {
            return error(OfFailure::NegativeLength { length: signed });
        }
        if signed == 0 {
            let step = error(OfFailure::ZeroLength);
            self.offset += 8;
            self.index += 1;
            return step;
        }
        let length = signed as u64;
        let after_header = (rest.len() - 8) as u64;
        let end = if length > after_header {
            self.data.len()
        } else {
            start + 8 + length as usize
        };
        if self.blocked(end) {
            return error(OfFailure::Io);
        }
        if length > after_header {
            return error(OfFailure::Truncated {
                length,
                available: after_header,
            });
        }
        self.offset = end;
        self.index += 1;
        if skip {
            Step::Skipped(length)
        } else {
            Step::Record(&rest[8..8 + length as usize])
        }
    }
}
