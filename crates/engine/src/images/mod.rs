//! Encoded images read from their headers alone: format, colour model, bit depth, size and
//! channels, with no decoding. Enough to tell which images OneFlow 0.9's
//! `OFRecordImageDecoder` can open.
//!
//! What OneFlow 0.9 does with each (tried with the wheel, on CPU): baseline and progressive
//! YCbCr JPEGs decode; a PNG, GIF, BMP or WebP makes libjpeg print "Not a JPEG file" and the
//! process dies; a grayscale JPEG fills only the first third of the H×W×3 buffer it returns;
//! a CMYK (or YCCK) JPEG decodes to wrong colours.
//!
//! A leaf layer: it uses nothing else of the engine.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The container format of an encoded image, told by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ImageFormat {
    /// JPEG (`FF D8 FF`).
    Jpeg,
    /// PNG.
    Png,
    /// GIF 87a or 89a.
    Gif,
    /// Windows bitmap.
    Bmp,
    /// WebP (lossy, lossless or extended).
    Webp,
}

impl ImageFormat {
    /// `jpeg`, `png`, `gif`, `bmp` or `webp`.
    pub fn name(self) -> &'static str {
        match self {
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Png => "png",
            ImageFormat::Gif => "gif",
            ImageFormat::Bmp => "bmp",
            ImageFormat::Webp => "webp",
        }
    }

    /// Tells the format from the first bytes, `None` when they are no image this knows.
    pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
        match bytes {
            [0xff, 0xd8, 0xff, ..] => Some(ImageFormat::Jpeg),
            [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some(ImageFormat::Png),
            [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some(ImageFormat::Gif),
            [b'B', b'M', _, _, _, _, _, _, _, _, _, _, _, _, dib, ..] if *dib >= 12 => {
                Some(ImageFormat::Bmp)
            }
            [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => {
                Some(ImageFormat::Webp)
            }
            _ => None,
        }
    }
}

/// The colour model of a JPEG, from its frame header's component count and Adobe marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JpegColor {
    /// One component.
    Grayscale,
    /// Three components (YCbCr or RGB).
    Rgb,
    /// Four components (CMYK or YCCK).
    Cmyk,
}

/// What an image's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageHeader {
    /// The container format.
    pub format: ImageFormat,
    /// Height in pixels.
    pub height: u32,
    /// Width in pixels.
    pub width: u32,
    /// Channels of the pixels as stored: 1 gray, 2 gray + alpha, 3 colour, 4 colour + alpha
    /// or CMYK. A palette image counts as 3 (4 with an alpha channel in its header).
    pub channels: u8,
    /// Bits per sample (8 for JPEG unless a 12-bit one, 1 to 16 for PNG).
    pub bit_depth: u8,
    /// For a JPEG, its colour model.
    pub jpeg_color: Option<JpegColor>,
    /// For a PNG, its colour type (0 gray, 2 RGB, 3 palette, 4 gray + alpha, 6 RGBA).
    pub png_color_type: Option<u8>,
}

impl ImageHeader {
    /// Reads the header of an encoded image; `None` when the bytes are no image this knows
    /// or its header is cut short or makes no sense.
    pub fn parse(bytes: &[u8]) -> Option<ImageHeader> {
        match ImageFormat::sniff(bytes)? {
            ImageFormat::Jpeg => jpeg_header(bytes),
            ImageFormat::Png => png_header(bytes),
            ImageFormat::Gif => gif_header(bytes),
            ImageFormat::Bmp => bmp_header(bytes),
            ImageFormat::Webp => webp_header(bytes),
        }
    }

    /// Whether OneFlow 0.9's `OFRecordImageDecoder` gives this image's pixels: an 8-bit
    /// three-component JPEG.
    pub fn oneflow_decodes(&self) -> bool {
        self.format == ImageFormat::Jpeg
            && self.jpeg_color == Some(JpegColor::Rgb)
            && self.bit_depth == 8
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 2)?;
    Some(u32::from(u16::from_be_bytes([b[0], b[1]])))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 2)?;
    Some(u32::from(u16::from_le_bytes([b[0], b[1]])))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], 0]))
}

fn le32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Walks the JPEG markers up to the first frame header (SOF0..SOF15 but DHT, JPG, DAC). Four
/// components are CMYK or YCCK (an Adobe marker tells which); both are CMYK here.
fn jpeg_header(bytes: &[u8]) -> Option<ImageHeader> {
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xff {
            return None;
        }
        // Any number of 0xFF fill bytes may precede a marker.
        while *bytes.get(at + 1)? == 0xff {
            at += 1;
        }
        let marker = *bytes.get(at + 1)?;
        at += 2;
        // Markers without a length: TEM, RST0..7.
        if marker == 0x01 || (0xd0..=0xd7).contains(&marker) {
            continue;
        }
        if marker == 0xd9 || marker == 0xda {
            // End of image or start of scan before any frame header.
            return None;
        }
        let length = be16(bytes, at)? as usize;
        if length < 2 {
            return None;
        }
        let segment = bytes.get(at + 2..at + length)?;
        match marker {
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                let precision = *segment.first()?;
                let height = be16(segment, 1)?;
                let width = be16(segment, 3)?;
                let components = *segment.get(5)?;
                let jpeg_color = match components {
                    1 => JpegColor::Grayscale,
                    3 => JpegColor::Rgb,
                    4 => JpegColor::Cmyk,
                    _ => return None,
                };
                return Some(ImageHeader {
                    format: ImageFormat::Jpeg,
                    height,
                    width,
                    channels: components,
                    bit_depth: precision,
                    jpeg_color: Some(jpeg_color),
                    png_color_type: None,
                });
            }
            _ => {}
        }
        at += length;
    }
}

fn png_header(bytes: &[u8]) -> Option<ImageHeader> {
    if bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let width = be32(bytes, 16)?;
    let height = be32(bytes, 20)?;
    let bit_depth = *bytes.get(24)?;
    let color_type = *bytes.get(25)?;
    let channels = match color_type {
        0 => 1,
        2 | 3 => 3,
        4 => 2,
        6 => 4,
        _ => return None,
    };
    Some(ImageHeader {
        format: ImageFormat::Png,
        height,
        width,
        channels,
        bit_depth,
        jpeg_color: None,
        png_color_type: Some(color_type),
    })
}

fn gif_header(bytes: &[u8]) -> Option<ImageHeader> {
    Some(ImageHeader {
        format: ImageFormat::Gif,
        width: le16(bytes, 6)?,
        height: le16(bytes, 8)?,
        channels: 3,
        bit_depth: 8,
        jpeg_color: None,
        png_color_type: None,
    })
}

fn bmp_header(bytes: &[u8]) -> Option<ImageHeader> {
    let dib = le32(bytes, 14)?;
    let (width, height, bits) = if dib == 12 {
        (le16(bytes, 18)?, le16(bytes, 20)?, le16(bytes, 24)?)
    } else {
        let width = le32(bytes, 18)? as i32;
        // Negative: the rows are stored top-down.
        let height = le32(bytes, 22)? as i32;
        (
            width.unsigned_abs(),
            height.unsigned_abs(),
            le16(bytes, 28)?,
        )
    };
    Some(ImageHeader {
        format: ImageFormat::Bmp,
        height,
        width,
        channels: if bits == 32 { 4 } else { 3 },
        bit_depth: 8,
        jpeg_color: None,
        png_color_type: None,
    })
}

fn webp_header(bytes: &[u8]) -> Option<ImageHeader> {
    let chunk = bytes.get(12..16)?;
    let (width, height, alpha) = match chunk {
        b"VP8X" => {
            let flags = *bytes.get(20)?;
            (
                le24(bytes, 24)? + 1,
                le24(bytes, 27)? + 1,
                flags & 0x10 != 0,
            )
        }
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            (le16(bytes, 26)? & 0x3fff, le16(bytes, 28)? & 0x3fff, false)
        }
        b"VP8L" => {
            if *bytes.get(20)? != 0x2f {
                return None;
            }
            let bits = le32(bytes, 21)?;
            (
                (bits & 0x3fff) + 1,
                ((bits >> 14) & 0x3fff) + 1,
                (bits >> 28) & 1 != 0,
            )
        }
        _ => return None,
    };
    Some(ImageHeader {
        format: ImageFormat::Webp,
        height,
        width,
        channels: if alpha { 4 } else { 3 },
        bit_depth: 8,
        jpeg_color: None,
        png_color_type: None,
    })
}

/// A closed range of values seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    /// The smallest.
    pub min: u64,
    /// The largest.
    pub max: u64,
}

impl Range {
    fn of(value: u64) -> Range {
        Range {
            min: value,
            max: value,
        }
    }

    fn widen(range: &mut Option<Range>, other: Option<Range>) {
        if let Some(other) = other {
            *range = Some(match *range {
                Some(mine) => Range {
                    min: mine.min.min(other.min),
                    max: mine.max.max(other.max),
                },
                None => other,
            });
        }
    }
}

/// The images of one bytes feature, from the headers of every value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageFacts {
    /// Values per format: `jpeg`, `png`, `gif`, `bmp`, `webp`, and `other` for values that
    /// are no image (or whose header does not read).
    pub formats: BTreeMap<String, u64>,
    /// JPEGs per colour model: `grayscale`, `rgb`, `cmyk`; `12-bit` JPEGs are counted here
    /// too.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub jpeg_color: BTreeMap<String, u64>,
    /// PNGs per colour type and bit depth: `gray 8-bit`, `rgb 8-bit`, `rgba 16-bit`,
    /// `palette 8-bit`, `gray+alpha 8-bit`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub png_color: BTreeMap<String, u64>,
    /// Heights of the images whose header reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<Range>,
    /// Widths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<Range>,
    /// Channels as stored (1 gray, 2 gray + alpha, 3 colour, 4 with alpha or CMYK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Range>,
    /// Images OneFlow 0.9's `OFRecordImageDecoder` cannot decode right: every one but the
    /// 8-bit colour JPEGs.
    pub oneflow_cannot_decode: u64,
    /// The first record (counted from 0) whose value OneFlow cannot decode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_undecodable: Option<u64>,
}

/// Collects [`ImageFacts`] value by value; counts are kept in fixed slots so that adding an
/// image never allocates. Serialized into the receipts of a sharded run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct ImageTally {
    formats: [u64; 6],
    jpeg_color: [u64; 4],
    /// By PNG colour type (0..=6) and bit depth (1, 2, 4, 8, 16 as 0..=4).
    png: [[u64; 5]; 7],
    height: Option<Range>,
    width: Option<Range>,
    channels: Option<Range>,
    undecodable: u64,
    first_undecodable: Option<u64>,
}

const FORMAT_NAMES: [&str; 6] = ["jpeg", "png", "gif", "bmp", "webp", "other"];
const JPEG_COLOR_NAMES: [&str; 4] = ["grayscale", "rgb", "cmyk", "12-bit"];
const PNG_TYPE_NAMES: [&str; 7] = ["gray", "", "rgb", "palette", "gray+alpha", "", "rgba"];
const PNG_DEPTHS: [u8; 5] = [1, 2, 4, 8, 16];

impl ImageTally {
    /// Whether any value was an image.
    pub(crate) fn has_images(&self) -> bool {
        self.formats[..5].iter().any(|&n| n > 0)
    }

    /// Adds one bytes value of record `record` (counted from 0).
    #[inline]
    pub(crate) fn add(&mut self, value: &[u8], record: u64) {
        // Most bytes values of small records are no image, which their first byte tells:
        // every format sniffed starts with one of these.
        if !matches!(value.first(), Some(0xff | 0x89 | b'G' | b'B' | b'R')) {
            self.formats[5] += 1;
            self.note_undecodable(record);
            return;
        }
        self.add_sniffed(value, record);
    }

    fn add_sniffed(&mut self, value: &[u8], record: u64) {
        let header = ImageHeader::parse(value);
        let slot = match header.map(|h| h.format) {
            Some(ImageFormat::Jpeg) => 0,
            Some(ImageFormat::Png) => 1,
            Some(ImageFormat::Gif) => 2,
            Some(ImageFormat::Bmp) => 3,
            Some(ImageFormat::Webp) => 4,
            None => 5,
        };
        self.formats[slot] += 1;
        let Some(header) = header else {
            self.note_undecodable(record);
            return;
        };
        if let Some(color) = header.jpeg_color {
            let slot = match color {
                _ if header.bit_depth != 8 => 3,
                JpegColor::Grayscale => 0,
                JpegColor::Rgb => 1,
                JpegColor::Cmyk => 2,
            };
            self.jpeg_color[slot] += 1;
        }
        if let Some(color_type) = header.png_color_type {
            if let Some(depth) = PNG_DEPTHS.iter().position(|&d| d == header.bit_depth) {
                self.png[usize::from(color_type).min(6)][depth] += 1;
            }
        }
        Range::widen(&mut self.height, Some(Range::of(u64::from(header.height))));
        Range::widen(&mut self.width, Some(Range::of(u64::from(header.width))));
        Range::widen(
            &mut self.channels,
            Some(Range::of(u64::from(header.channels))),
        );
        if !header.oneflow_decodes() {
            self.note_undecodable(record);
        }
    }

    fn note_undecodable(&mut self, record: u64) {
        self.undecodable += 1;
        self.first_undecodable = Some(self.first_undecodable.map_or(record, |r| r.min(record)));
    }

    /// Adds the counts of another tally, whose records come `offset` records later.
    pub(crate) fn merge(&mut self, other: &ImageTally, offset: u64) {
        for (mine, theirs) in self.formats.iter_mut().zip(other.formats) {
            *mine += theirs;
        }
        for (mine, theirs) in self.jpeg_color.iter_mut().zip(other.jpeg_color) {
            *mine += theirs;
        }
        for (mine, theirs) in self.png.iter_mut().zip(&other.png) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
        Range::widen(&mut self.height, other.height);
        Range::widen(&mut self.width, other.width);
        Range::widen(&mut self.channels, other.channels);
        self.undecodable += other.undecodable;
        if let Some(first) = other.first_undecodable {
            let first = first + offset;
            self.first_undecodable = Some(self.first_undecodable.map_or(first, |r| r.min(first)));
        }
    }

    pub(crate) fn facts(&self) -> ImageFacts {
        let counts = |names: &[&str], counts: &[u64]| -> BTreeMap<String, u64> {
            names
                .iter()
                .zip(counts)
                .filter(|(_, &n)| n > 0)
                .map(|(name, &n)| ((*name).to_owned(), n))
                .collect()
        };
        let mut png_color = BTreeMap::new();
        for (color_type, depths) in self.png.iter().enumerate() {
            for (depth, &n) in PNG_DEPTHS.iter().zip(depths) {
                if n > 0 {
                    png_color.insert(format!("{} {depth}-bit", PNG_TYPE_NAMES[color_type]), n);
                }
            }
        }
        ImageFacts {
            formats: counts(&FORMAT_NAMES, &self.formats),
            jpeg_color: counts(&JPEG_COLOR_NAMES, &self.jpeg_color),
            png_color,
            height: self.height,
            width: self.width,
            channels: self.channels,
            oneflow_cannot_decode: self.undecodable,
            first_undecodable: self.first_undecodable,
        }
    }
}

impl ImageFacts {
    /// Images of a format.
    pub fn count(&self, format: &str) -> u64 {
        self.formats.get(format).copied().unwrap_or(0)
    }

    /// JPEGs of a colour model (`grayscale`, `rgb`, `cmyk`).
    pub fn jpeg_count(&self, color: &str) -> u64 {
        self.jpeg_color.get(color).copied().unwrap_or(0)
    }

    /// Every value an image, all of them grayscale JPEGs or 8-bit gray PNGs.
    pub fn all_grayscale(&self) -> bool {
        self.channels == Some(Range::of(1))
    }

    /// The format all values share, `mixed` when they differ.
    pub fn single_format(&self) -> &str {
        match self.formats.keys().collect::<Vec<_>>().as_slice() {
            [only] => only,
            _ => "mixed",
        }
    }

    /// What OneFlow cannot decode, in words: `12 PNG, 1 grayscale JPEG`.
    pub fn undecodable_description(&self) -> String {
        let mut parts = Vec::new();
        for (name, label) in [
            ("png", "PNG"),
            ("gif", "GIF"),
            ("bmp", "BMP"),
            ("webp", "WebP"),
            ("other", "non-image"),
        ] {
            let n = self.count(name);
            if n > 0 {
                parts.push(format!("{n} {label}"));
            }
        }
        for (name, label) in [
            ("grayscale", "grayscale JPEG"),
            ("cmyk", "CMYK JPEG"),
            ("12-bit", "12-bit JPEG"),
        ] {
            let n = self.jpeg_count(name);
            if n > 0 {
                parts.push(format!("{n} {label}"));
            }
        }
        parts.join(", ")
    }

    /// A short line for tables: `jpeg 8, png 2; 24..32 x 32 x 3`.
    pub fn summary(&self) -> String {
        let formats: Vec<String> = self
            .formats
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let mut text = formats.join(", ");
        let range = |r: &Option<Range>| match r {
            Some(Range { min, max }) if min == max => min.to_string(),
            Some(Range { min, max }) => format!("{min}..{max}"),
            None => "?".to_owned(),
        };
        if self.height.is_some() {
            text.push_str(&format!(
                "; {}x{}x{}",
                range(&self.height),
                range(&self.width),
                range(&self.channels)
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::test_jpeg;
