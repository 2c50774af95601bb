//! `--images jpeg` and `--images raw`: the images of a converted OFRecord that OneFlow 0.9
//! cannot decode, re-encoded as RGB JPEG, or every image decoded to its pixels. Bytes in,
//! bytes out; each worker owns one [`Recoder`] and its buffers.

use std::collections::BTreeMap;
use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::{ColorType, ExtendedColorType, ImageDecoder, ImageReader};
use ofconvert_bridge::proto::oneflow::{feature::Kind, Feature, Int64List};
use serde::{Deserialize, Serialize};

use crate::images::{ImageFormat, ImageHeader, JpegColor};
use crate::scan::{for_each_bytes, scan_features, Dialect};

/// What to do with the encoded images of the records written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImagePolicy {
    /// Image bytes are written as they are (the lossless default).
    #[default]
    Keep,
    /// Every image OneFlow 0.9's `OFRecordImageDecoder` cannot decode (PNG, GIF, BMP, WebP,
    /// grayscale and CMYK JPEG) is re-encoded as an RGB JPEG of this quality (1..=100);
    /// colour JPEGs keep their bytes.
    Jpeg {
        /// The JPEG quality.
        quality: u8,
    },
    /// Every image is decoded to its pixels (uint8, height × width × channels) in the same
    /// feature, with `NAME/shape` (int64 `[h, w, c]`) beside it.
    Raw,
}

/// What the images of a dataset became.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConversion {
    /// Images re-encoded as JPEG, by what they were: `PNG`, `grayscale JPEG`, `CMYK JPEG`,
    /// `GIF`, ...
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reencoded: BTreeMap<String, u64>,
    /// Images decoded to raw pixels.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decoded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ImageConversion {
    /// Adds another's counts.
    pub fn add(&mut self, other: &ImageConversion) {
        for (what, n) in &other.reencoded {
            *self.reencoded.entry(what.clone()).or_default() += n;
        }
        self.decoded += other.decoded;
    }

    /// Whether nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.reencoded.is_empty() && self.decoded == 0
    }

    /// `re-encoded 6 PNG, 3 CMYK JPEG images to JPEG`, `decoded 40 images to raw pixels`.
    pub fn describe(&self) -> Option<String> {
        if !self.reencoded.is_empty() {
            let parts: Vec<String> = self
                .reencoded
                .iter()
                .map(|(what, n)| format!("{n} {what}"))
                .collect();
            let total: u64 = self.reencoded.values().sum();
            return Some(format!(
                "re-encoded {} image{} to JPEG",
                parts.join(", "),
                if total == 1 { "" } else { "s" }
            ));
        }
        (self.decoded > 0).then(|| {
            format!(
                "decoded {} image{} to raw pixels",
                self.decoded,
                if self.decoded == 1 { "" } else { "s" }
            )
        })
    }
}

/// Why an image could not be converted.
#[derive(Debug)]
pub(crate) struct RecodeError {
    pub(crate) feature: String,
    pub(crate) reason: String,
}

/// Re-encodes or decodes the images of OFRecords, reusing its buffers.
#[derive(Debug, Default)]
pub(crate) struct Recoder {
    policy: ImagePolicy,
    pixels: Vec<u8>,
    rgb: Vec<u8>,
}

/// Makes the features that describe a record's image (inception's `image/...` keys, or the
/// same without the prefix under `--preset imagenet`) say what it is after re-encoding: a
/// 3-channel RGB JPEG. Only features the record has, of the kind they have, change.
fn describe_rgb_jpeg(features: &mut BTreeMap<String, Feature>) {
    for (key, value) in [
        ("image/format", &b"JPEG"[..]),
        ("format", b"JPEG"),
        ("image/colorspace", b"RGB"),
        ("colorspace", b"RGB"),
    ] {
        if let Some(Feature {
            kind: Some(Kind::BytesList(list)),
        }) = features.get_mut(key)
        {
            list.value = vec![value.to_vec()];
        }
    }
    for key in ["image/channels", "channels"] {
        match features.get_mut(key).and_then(|f| f.kind.as_mut()) {
            Some(Kind::Int64List(list)) => list.value = vec![3],
            Some(Kind::Int32List(list)) => list.value = vec![3],
            _ => {}
        }
    }
}

/// What each image of a record needs, found without decoding anything.
fn needs_work(policy: ImagePolicy, value: &[u8]) -> bool {
    match policy {
        ImagePolicy::Keep => false,
        ImagePolicy::Jpeg { .. } => ImageHeader::parse(value).is_some_and(|h| !h.oneflow_decodes()),
        ImagePolicy::Raw => ImageHeader::parse(value).is_some(),
    }
}

fn describe(header: &ImageHeader) -> &'static str {
    match (header.format, header.jpeg_color) {
        (ImageFormat::Jpeg, Some(JpegColor::Grayscale)) => "grayscale JPEG",
        (ImageFormat::Jpeg, Some(JpegColor::Cmyk)) => "CMYK JPEG",
        (ImageFormat::Jpeg, _) => "12-bit JPEG",
        (ImageFormat::Png, _) => "PNG",
        (ImageFormat::Gif, _) => "GIF",
        (ImageFormat::Bmp, _) => "BMP",
        (ImageFormat::Webp, _) => "WebP",
    }
}

impl Recoder {
    pub(crate) fn new(policy: ImagePolicy) -> Recoder {
        Recoder {
            policy,
            ..Recoder::default()
        }
    }

    /// Rewrites the serialized OFRecord in `record` as the policy asks, counting in
    /// `counts`. Returns whether it changed; a record with nothing to do is left untouched
    /// (only its headers are read).
    pub(crate) fn rewrite(
        &mut self,
        record: &mut Vec<u8>,
        counts: &mut ImageConversion,
    ) -> Result<bool, RecodeError> {
        let policy = self.policy;
        if policy == ImagePolicy::Keep {
            return Ok(false);
        }
        let mut any = false;
        scan_features(record, Dialect::OfRecord, |_, kind, list| {
            if kind == ofconvert_bridge::FeatureKind::Bytes {
                for_each_bytes(list, |value| any |= needs_work(policy, value));
            }
        });
        if !any {
            return Ok(false);
        }
        let mut parsed = ofconvert_bridge::decode_ofrecord(record).map_err(|err| RecodeError {
            feature: String::new(),
            reason: err.to_string(),
        })?;
        let mut shapes = Vec::new();
        let mut reencoded = false;
        for (name, feature) in parsed.feature.iter_mut() {
            let Some(Kind::BytesList(list)) = &mut feature.kind else {
                continue;
            };
            for value in &mut list.value {
                if !needs_work(policy, value) {
                    continue;
                }
                let fail = |reason: String| RecodeError {
                    feature: name.clone(),
                    reason,
                };
                let Some(header) = ImageHeader::parse(value) else {
                    continue;
                };
                match policy {
                    ImagePolicy::Jpeg { quality } => {
                        let mut out = Vec::new();
                        self.encode_jpeg(value, quality, &mut out).map_err(fail)?;
                        *value = out;
                        *counts
                            .reencoded
                            .entry(describe(&header).to_owned())
                            .or_default() += 1;
                        reencoded = true;
                    }
                    ImagePolicy::Raw => {
                        let mut out = Vec::new();
                        let shape = self.decode_raw(value, &mut out).map_err(fail)?;
                        *value = out;
                        counts.decoded += 1;
                        shapes.push((name.clone(), shape));
                    }
                    ImagePolicy::Keep => {}
                }
            }
        }
        if reencoded {
            describe_rgb_jpeg(&mut parsed.feature);
        }
        for (name, [h, w, c]) in shapes {
            parsed.feature.insert(
                format!("{name}/shape"),
                Feature {
                    kind: Some(Kind::Int64List(Int64List {
                        value: vec![i64::from(h), i64::from(w), i64::from(c)],
                    })),
                },
            );
        }
        record.clear();
        ofconvert_bridge::encode_ofrecord(&parsed, record);
        Ok(true)
    }

    /// Decodes an image into `self.pixels`, returning its size and colour type.
    fn decode(&mut self, bytes: &[u8]) -> Result<(u32, u32, ColorType), String> {
        let reader = ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|err| err.to_string())?;
        let decoder = reader.into_decoder().map_err(|err| err.to_string())?;
        let (width, height) = decoder.dimensions();
        let color = decoder.color_type();
        let size = usize::try_from(decoder.total_bytes()).map_err(|err| err.to_string())?;
        self.pixels.clear();
        self.pixels.resize(size, 0);
        decoder
            .read_image(&mut self.pixels)
            .map_err(|err| err.to_string())?;
        Ok((width, height, color))
    }

    /// An RGB JPEG of `bytes` into `out`: gray is spread to three channels, alpha is
    /// dropped (as TensorFlow's `decode_png(channels=3)` in the inception script does),
    /// 16-bit samples keep their high byte.
    pub(crate) fn encode_jpeg(
        &mut self,
        bytes: &[u8],
        quality: u8,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let (width, height, color) = self.decode(bytes)?;
        let channels = usize::from(color.channel_count());
        let sample = usize::from(color.bytes_per_pixel()) / channels;
        self.rgb.clear();
        for pixel in self.pixels.chunks_exact(channels * sample) {
            // The most significant byte of each sample (native endian for 16-bit ones).
            let at = |c: usize| {
                let start = c * sample;
                if sample == 2 {
                    (u16::from_ne_bytes([pixel[start], pixel[start + 1]]) >> 8) as u8
                } else {
                    pixel[start]
                }
            };
            match channels {
                1 | 2 => self.rgb.extend([at(0); 3]),
                _ => self.rgb.extend([at(0), at(1), at(2)]),
            }
        }
        out.clear();
        JpegEncoder::new_with_quality(&mut *out, quality)
            .encode(&self.rgb, width, height, ExtendedColorType::Rgb8)
            .map_err(|err| err.to_string())
    }

    /// The pixels of `bytes` into `out`, uint8 row-major height × width × channels with the
    /// channels the image has (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA); `[h, w, c]`.
    /// 16-bit images are refused: uint8 cannot hold them without loss.
    pub(crate) fn decode_raw(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<[u32; 3], String> {
        let (width, height, color) = self.decode(bytes)?;
        let channels = color.channel_count();
        if usize::from(color.bytes_per_pixel()) != usize::from(channels) {
            return Err(format!(
                "a {color:?} image has 16-bit samples, which uint8 pixels cannot hold"
            ));
        }
        out.clear();
        out.extend_from_slice(&self.pixels);
        Ok([height, width, u32::from(channels)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofconvert_bridge::of;

    fn record_of(features: Vec<(&str, Feature)>) -> Vec<u8> {
        let mut bytes = Vec::new();
        ofconvert_bridge::encode_ofrecord(&of::record(features), &mut bytes);
        bytes
    }

    fn png(pixels: &[u8], width: u32, height: u32, color: ExtendedColorType) -> Vec<u8> {
        use image::ImageEncoder;
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(pixels, width, height, color)
            .unwrap();
        out
    }

    fn gray_pixels() -> Vec<u8> {
        (0..6 * 4).map(|i| (i * 10) as u8).collect()
    }

    fn bytes_of(record: &[u8], name: &str) -> Vec<u8> {
        match &ofconvert_bridge::decode_ofrecord(record).unwrap().feature[name].kind {
            Some(Kind::BytesList(list)) => list.value[0].clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn jpeg_mode_reencodes_png_and_names_the_format() {
        let gray = png(&gray_pixels(), 6, 4, ExtendedColorType::L8);
        let mut record = record_of(vec![
            ("image/encoded", of::bytes_feature([gray])),
            ("image/format", of::bytes_feature([b"PNG".to_vec()])),
        ]);
        let mut counts = ImageConversion::default();
        let mut recoder = Recoder::new(ImagePolicy::Jpeg { quality: 100 });
        assert!(recoder.rewrite(&mut record, &mut counts).unwrap());
        let jpeg = bytes_of(&record, "image/encoded");
        let header = ImageHeader::parse(&jpeg).unwrap();
        assert!(header.oneflow_decodes(), "{header:?}");
        assert_eq!((header.width, header.height), (6, 4));
        assert_eq!(bytes_of(&record, "image/format"), b"JPEG");
        assert_eq!(counts.describe().unwrap(), "re-encoded 1 PNG image to JPEG");

        // A colour JPEG is left as it is, record and all.
        let mut again = record.clone();
        assert!(!recoder.rewrite(&mut again, &mut counts).unwrap());
        assert_eq!(again, record);
    }

    #[test]
    fn raw_mode_gives_the_pixels_and_their_shape() {
        let pixels = gray_pixels();
        let mut record = record_of(vec![(
            "image",
            of::bytes_feature([png(&pixels, 6, 4, ExtendedColorType::L8)]),
        )]);
        let mut counts = ImageConversion::default();
        Recoder::new(ImagePolicy::Raw)
            .rewrite(&mut record, &mut counts)
            .unwrap();
        assert_eq!(bytes_of(&record, "image"), pixels);
        let parsed = ofconvert_bridge::decode_ofrecord(&record).unwrap();
        match &parsed.feature["image/shape"].kind {
            Some(Kind::Int64List(list)) => assert_eq!(list.value, vec![4, 6, 1]),
            other => panic!("{other:?}"),
        }
        assert_eq!(counts.decoded, 1);
    }

    #[test]
    fn sixteen_bit_images_are_refused_raw_and_narrowed_to_jpeg() {
        let wide: Vec<u8> = (0..4u16 * 3)
            .flat_map(|i| (i * 5000).to_ne_bytes())
            .collect();
        let png16 = png(&wide, 4, 3, ExtendedColorType::L16);
        let mut record = record_of(vec![("image", of::bytes_feature([png16.clone()]))]);
        let err = Recoder::new(ImagePolicy::Raw)
            .rewrite(&mut record, &mut ImageConversion::default())
            .unwrap_err();
        assert_eq!(err.feature, "image");
        assert!(err.reason.contains("16-bit"), "{}", err.reason);
        let mut out = Vec::new();
        Recoder::new(ImagePolicy::Keep)
            .encode_jpeg(&png16, 90, &mut out)
            .unwrap();
        assert!(ImageHeader::parse(&out).unwrap().oneflow_decodes());
    }
}
