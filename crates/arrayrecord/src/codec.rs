//! What chunk data holds: varints, the four compressions, and the simple chunk's two
//! buffers of record sizes and record values. Bytes in, bytes out: no I/O, no positions (the
//! callers add those to the `String` reasons these functions give).

use std::fmt;
use std::io::{Read, Write};

use zstd::stream::raw::{Decoder as ZstdDecoder, InBuffer, Operation, OutBuffer};

/// How a writer compresses a chunk's record sizes and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Stored as they are (`uncompressed`).
    None,
    /// Brotli at a quality from 0 to 11 (`brotli:6` by default in `array_record`).
    Brotli(u32),
    /// Zstandard at a level from -131072 to 22 (`zstd:3`, `array_record`'s default), with a
    /// 1 MiB window as `array_record` uses.
    Zstd(i32),
    /// Snappy.
    Snappy,
}

impl Default for Compression {
    /// `zstd:3`, what `array_record` writes unless told otherwise.
    fn default() -> Compression {
        Compression::Zstd(3)
    }
}

impl fmt::Display for Compression {
    /// The spelling of `array_record`'s options string: `uncompressed`, `brotli:6`, `zstd:3`,
    /// `snappy`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("uncompressed"),
            Compression::Brotli(level) => write!(f, "brotli:{level}"),
            Compression::Zstd(level) => write!(f, "zstd:{level},window_log:{ZSTD_WINDOW_LOG}"),
            Compression::Snappy => f.write_str("snappy"),
        }
    }
}

/// `array_record`'s zstd window: 1 MiB.
const ZSTD_WINDOW_LOG: u32 = 20;
/// Riegeli's brotli window: 4 MiB.
const BROTLI_WINDOW_LOG: u32 = 22;
/// At most this much is reserved ahead of what a decompressor actually produces.
const MAX_RESERVE: u64 = 1 << 22;

impl Compression {
    fn byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Brotli(_) => b'b',
            Compression::Zstd(_) => b'z',
            Compression::Snappy => b's',
        }
    }
}

/// `value` as a varint: its bytes, of which the first `len` are it.
pub fn varint_bytes(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0; 10];
    let mut len = 0;
    while value >= 0x80 {
        bytes[len] = value as u8 | 0x80;
        value >>= 7;
        len += 1;
    }
    bytes[len] = value as u8;
    (bytes, len + 1)
}

/// Appends `value` as a varint.
pub fn put_varint(out: &mut Vec<u8>, value: u64) {
    let (bytes, len) = varint_bytes(value);
    out.extend_from_slice(&bytes[..len]);
}

/// Reads a varint from the front of `bytes`, advancing it; `None` if it is cut short or
/// longer than 10 bytes.
pub fn take_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            if i == 9 && byte > 1 {
                return None;
            }
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

/// Compresses chunks, a zstd context kept from chunk to chunk: making one (with its 1 MiB
/// window) for every chunk cost a writer of a record a chunk most of its time.
#[derive(Default)]
pub struct Encoder {
    zstd: Option<(i32, zstd::bulk::Compressor<'static>)>,
}

impl Encoder {
    /// Encodes records (their sizes as varints and their values back to back) as a simple
    /// chunk's data.
    pub fn encode_simple(
        &mut self,
        compression: Compression,
        sizes: &[u8],
        values: &[u8],
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        out.clear();
        out.push(compression.byte());
        let mut compressed_sizes = Vec::new();
        self.compress(compression, sizes, &mut compressed_sizes)?;
        put_varint(out, compressed_sizes.len() as u64);
        out.extend_from_slice(&compressed_sizes);
        self.compress(compression, values, out)
    }

    /// Appends `data` compressed as one Riegeli compressed block: for anything but `None`,
    /// its decompressed size as a varint, then the compressed bytes.
    fn compress(
        &mut self,
        compression: Compression,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        if compression == Compression::None {
            out.extend_from_slice(data);
            return Ok(());
        }
        put_varint(out, data.len() as u64);
        if let Compression::Zstd(level) = compression {
            let compressor = match &mut self.zstd {
                Some((made_for, compressor)) if *made_for == level => compressor,
                slot => {
                    let mut compressor = zstd::bulk::Compressor::new(level)?;
                    compressor
                        .set_parameter(zstd::zstd_safe::CParameter::WindowLog(ZSTD_WINDOW_LOG))?;
                    &mut slot.insert((level, compressor)).1
                }
            };
            let start = out.len();
            out.resize(start + zstd::zstd_safe::compress_bound(data.len()), 0);
            let written = compressor.compress_to_buffer(data, &mut out[start..])?;
            out.truncate(start + written);
            return Ok(());
        }
        compress_other(compression, data, out)
    }
}

/// Appends `data` compressed with brotli or snappy (its size already written).
fn compress_other(compression: Compression, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    match compression {
        Compression::None | Compression::Zstd(_) => {}
        Compression::Brotli(quality) => {
            let mut writer =
                brotli::CompressorWriter::new(out, 1 << 16, quality, BROTLI_WINDOW_LOG);
            writer.write_all(data)?;
            writer.flush()?;
        }
        Compression::Snappy => {
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(data.len()), 0);
            let written = snap::raw::Encoder::new()
                .compress(data, &mut out[start..])
                .map_err(std::io::Error::other)?;
            out.truncate(start + written);
        }
    }
    Ok(())
}

/// Decompresses one Riegeli compressed block into `out` (cleared first). The decompressed size
/// it announces (an uncompressed block's own length) must not pass `limit`, which is checked
/// before anything is decompressed, and the output never grows past it.
pub(crate) fn decompress(
    compression_type: u8,
    mut block: &[u8],
    limit: u64,
    zstd: &mut ZstdContexts,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    out.clear();
    if compression_type == 0 {
        if block.len() as u64 > limit {
            return Err(format!(
                "an uncompressed block of {} bytes, more than the {limit} expected",
                block.len()
            ));
        }
        out.extend_from_slice(block);
        return Ok(());
    }
    let size = take_varint(&mut block).ok_or("a compressed block's size is not a varint")?;
    if size > limit {
        return Err(format!(
            "a compressed block announces {size} bytes, more than the {limit} expected"
        ));
    }
    // Reserved ahead: no more than the input could plausibly expand to, up to a bound.
    let reserve = size
        .min((block.len() as u64).saturating_mul(16))
        .min(MAX_RESERVE) as usize;
    let result = match compression_type {
        b'z' if size <= ZSTD_AT_ONCE => {
            let decoder = match &mut zstd.at_once {
                Some(decoder) => decoder,
                None => zstd
                    .at_once
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| format!("zstd: {e}"))?),
            };
            // Into the buffer's spare room, of the announced size at least: more than the
            // announced size (where the buffer had more room) is caught below.
            out.reserve(size as usize);
            decoder
                .decompress_to_buffer(block, out)
                .map_err(|e| format!("zstd: {e}"))
        }
        b'z' => {
            let decoder = match &mut zstd.stream {
                Some(decoder) => decoder,
                None => zstd
                    .stream
                    .insert(ZstdDecoder::new().map_err(|e| format!("zstd: {e}"))?),
            };
            zstd_decompress(decoder, block, size, out).map(|()| 0)
        }
        b'b' => {
            out.reserve(reserve);
            // One byte past the announced size tells a block that holds more.
            brotli::Decompressor::new(block, 1 << 12)
                .take(size.saturating_add(1))
                .read_to_end(out)
                .map_err(|e| format!("brotli: {e}"))
        }
        b's' => {
            let len = snap::raw::decompress_len(block).map_err(|e| format!("snappy: {e}"))?;
            // Snappy cannot expand its input more than about 22 times: a longer claim is
            // damage, and refused before it sizes the buffer.
            if len as u64 != size || len > block.len().saturating_mul(32) {
                return Err(format!(
                    "a snappy block of {} bytes announces {len}, its prefix {size}",
                    block.len()
                ));
            }
            out.resize(len, 0);
            snap::raw::Decoder::new()
                .decompress(block, out)
                .map_err(|e| format!("snappy: {e}"))
        }
        other => return Err(format!("unknown compression type {other:#04x}")),
    };
    result?;
    if out.len() as u64 != size {
        return Err(format!(
            "a compressed block decompresses to {} bytes, its prefix says {size}",
            out.len()
        ));
    }
    Ok(())
}

/// The largest zstd block decoded at once, into a buffer of its announced size: a larger one
/// is decoded a mebibyte at a time, so that a small block announcing gigabytes is found out
/// before they are allocated.
const ZSTD_AT_ONCE: u64 = 1 << 20;

/// The zstd contexts a reader keeps from chunk to chunk (a chunk may hold a single record,
/// and a new context costs more than decoding it): one that decodes a block at once, one
/// that decodes a larger one as a stream.
#[derive(Default)]
pub(crate) struct ZstdContexts {
    at_once: Option<zstd::bulk::Decompressor<'static>>,
    stream: Option<ZstdDecoder<'static>>,
}

/// Decompresses one zstd frame into `out`, which grows a mebibyte at most at a time, with
/// what the frame gives; more than `size` bytes is an error.
fn zstd_decompress(
    decoder: &mut ZstdDecoder<'static>,
    block: &[u8],
    size: u64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    const STEP: u64 = 1 << 20;
    decoder.reinit().map_err(|e| format!("zstd: {e}"))?;
    let mut input = InBuffer::around(block);
    loop {
        let len = out.len();
        let want = (size.saturating_sub(len as u64)).clamp(1, STEP) as usize;
        out.reserve(want);
        let consumed = input.pos();
        let (remaining, written) = {
            let mut output = OutBuffer::around_pos(out, len);
            let remaining = decoder
                .run(&mut input, &mut output)
                .map_err(|e| format!("zstd: {e}"))?;
            (remaining, output.pos() - len)
        };
        if out.len() as u64 > size {
            return Err(format!(
                "a zstd block decompresses to more than the {size} bytes its prefix says"
            ));
        }
        if remaining == 0 {
            return Ok(());
        }
        if written == 0 && input.pos() == consumed {
            return Err("zstd: the compressed block is cut short".into());
        }
    }
}

/// Whether Riegeli defines this compression type byte.
pub fn known_compression(byte: u8) -> bool {
    matches!(byte, 0 | b'b' | b'z' | b's')
}

/// [`Encoder::encode_simple`] with a context of its own, for a single chunk.
#[cfg(test)]
pub fn encode_simple(
    compression: Compression,
    sizes: &[u8],
    values: &[u8],
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    Encoder::default().encode_simple(compression, sizes, values, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_blocks_must_hold_what_their_prefix_says() {
        // A zstd block up to a mebibyte is decoded at once, a larger one as a stream.
        for data in [b"zstd ".repeat(1000), b"zstd ".repeat(300_000)] {
            let len = data.len() as u64;
            for compression in [
                Compression::Zstd(3),
                Compression::Brotli(4),
                Compression::Snappy,
            ] {
                let mut block = Vec::new();
                Encoder::default()
                    .compress(compression, &data, &mut block)
                    .unwrap();
                let byte = compression.byte();
                let mut zstd = ZstdContexts::default();
                let mut out = Vec::new();
                decompress(byte, &block, len, &mut zstd, &mut out).unwrap();
                assert_eq!(out, data);
                // A limit below the announced size, a smaller announced size, a cut block.
                assert!(decompress(byte, &block, len - 1, &mut zstd, &mut out).is_err());
                let mut rest = block.as_slice();
                assert_eq!(take_varint(&mut rest), Some(len));
                let mut smaller = Vec::new();
                put_varint(&mut smaller, len - 1000);
                smaller.extend_from_slice(rest);
                assert!(decompress(byte, &smaller, len, &mut zstd, &mut out).is_err());
                let cut = &block[..block.len() - 3];
                assert!(decompress(byte, cut, len, &mut zstd, &mut out).is_err());
                // The contexts kept for zstd still decode a sound block afterwards.
                decompress(byte, &block, len, &mut zstd, &mut out).unwrap();
                assert_eq!(out, data);
            }
        }
    }

    #[test]
    fn varints_refuse_overlong_input() {
        assert_eq!(take_varint(&mut &[0xff; 11][..]), None);
        assert_eq!(take_varint(&mut &[0x80][..]), None);
        let mut bytes = &[0xac, 0x02, 9][..];
        assert_eq!(take_varint(&mut bytes), Some(300));
        assert_eq!(bytes, &[9]);
    }
}
