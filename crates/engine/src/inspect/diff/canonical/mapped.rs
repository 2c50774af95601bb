//! Side A's records brought to OFRecord form through the mapping a conversion was asked
//! for, so that a record compares equal to what `tf2of` or `of2tf` made of it under that
//! mapping: an Example is transcoded with the mapping; an OFRecord becomes the Example the
//! mapping makes of it (as `of2tf` would write it), then that Example's OFRecord form.

use ofconvert_bridge::{Error as MappingError, ErrorKind, Transcoder};

use super::Picked;
use crate::naming::names::Format;

/// The mapping of side A, and a worker's buffer for it.
pub(super) struct Mapped {
    transcoder: Transcoder,
    /// An OFRecord of A as the Example the mapping makes of it.
    example: Vec<u8>,
}

impl Mapped {
    pub(super) fn new(transcoder: &Transcoder) -> Mapped {
        Mapped {
            transcoder: transcoder.clone(),
            example: Vec::new(),
        }
    }

    /// Brings `raw` (of `format`) to OFRecord form in `buffer` through the mapping;
    /// `default` (the default mapping) reads back what the mapping made of an OFRecord.
    /// A record that is no record of its format is opaque, as unmapped; one the mapping
    /// refuses (a value out of range after a cast or offset, a double no float holds, two
    /// features given one name) is the error, which the conversion would have failed on.
    pub(super) fn form(
        &mut self,
        default: &mut Transcoder,
        raw: &[u8],
        format: Format,
        buffer: &mut Vec<u8>,
    ) -> Result<Picked, MappingError> {
        let mapped = match format {
            Format::Tf => self.transcoder.tf_to_of(raw, buffer),
            Format::Of => match self.transcoder.of_to_tf(raw, &mut self.example) {
                Ok(()) => default.tf_to_of(&self.example, buffer),
                Err(err) => Err(err),
            },
        };
        match mapped {
            Ok(()) => Ok(Picked::Buffer),
            // Nothing left (or nothing there): an OFRecord without features, which
            // compares.
            Err(err) if matches!(err.kind(), ErrorKind::EmptyRecord) => {
                buffer.clear();
                Ok(Picked::Buffer)
            }
            Err(err) if refused(&err) => Err(err),
            Err(_) => Ok(Picked::Opaque),
        }
    }
}

/// Whether the mapping refused a record that is a record of its format.
fn refused(err: &MappingError) -> bool {
    matches!(
        err.kind(),
        ErrorKind::InexactDouble { .. }
            | ErrorKind::FloatOverflow { .. }
            | ErrorKind::OutOfRange { .. }
            | ErrorKind::InvalidCast { .. }
            | ErrorKind::InvalidOffset { .. }
            | ErrorKind::NameClash { .. }
    )
}
