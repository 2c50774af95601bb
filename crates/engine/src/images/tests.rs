use super::*;

/// A minimal JPEG head for tests: SOI, an APP0, an Adobe marker if asked, then a baseline
/// frame header and the start of a scan.
pub(crate) fn test_jpeg(components: u8, height: u16, width: u16, adobe: bool) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46];
    if adobe {
        bytes.extend([0xff, 0xee, 0x00, 0x0e]);
        bytes.extend(b"Adobe\x00\x64\x00\x00\x00\x00\x02");
    }
    bytes.extend([0xff, 0xff, 0xc0]);
    let length = 8 + 3 * u16::from(components);
    bytes.extend(length.to_be_bytes());
    bytes.push(8);
    bytes.extend(height.to_be_bytes());
    bytes.extend(width.to_be_bytes());
    bytes.push(components);
    for c in 0..components {
        bytes.extend([c + 1, 0x11, 0]);
    }
    bytes.extend([0xff, 0xda]);
    bytes
}

fn jpeg(components: u8, height: u16, width: u16, adobe: bool) -> Vec<u8> {
    test_jpeg(components, height, width, adobe)
}

fn png(color_type: u8, depth: u8, width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([depth, color_type, 0, 0, 0]);
    bytes
}

#[test]
fn jpeg_headers_give_size_and_colour_model() {
    let gray = ImageHeader::parse(&jpeg(1, 28, 30, false)).unwrap();
    assert_eq!(
        (gray.height, gray.width, gray.channels, gray.jpeg_color),
        (28, 30, 1, Some(JpegColor::Grayscale))
    );
    assert!(!gray.oneflow_decodes());
    let rgb = ImageHeader::parse(&jpeg(3, 24, 32, false)).unwrap();
    assert!(rgb.oneflow_decodes());
    let cmyk = ImageHeader::parse(&jpeg(4, 5, 6, true)).unwrap();
    assert_eq!(cmyk.jpeg_color, Some(JpegColor::Cmyk));
    assert!(!cmyk.oneflow_decodes());
    // Cut inside the frame header.
    assert_eq!(ImageHeader::parse(&jpeg(3, 24, 32, false)[..14]), None);
}

#[test]
fn png_gif_bmp_webp_headers() {
    let png = ImageHeader::parse(&png(0, 16, 28, 27)).unwrap();
    assert_eq!(
        (
            png.format,
            png.width,
            png.height,
            png.channels,
            png.bit_depth
        ),
        (ImageFormat::Png, 28, 27, 1, 16)
    );
    assert!(!png.oneflow_decodes());
    let gif = ImageHeader::parse(b"GIF89a\x0a\x00\x05\x00\xf0\x00\x00").unwrap();
    assert_eq!((gif.width, gif.height), (10, 5));
    let mut bmp = b"BM\0\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0".to_vec();
    bmp.extend(7i32.to_le_bytes());
    bmp.extend((-3i32).to_le_bytes());
    bmp.extend([1, 0, 24, 0]);
    let bmp = ImageHeader::parse(&bmp).unwrap();
    assert_eq!((bmp.width, bmp.height, bmp.channels), (7, 3, 3));
    let mut webp = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
    webp.extend((9u32 | (4 << 14) | (1 << 28)).to_le_bytes());
    let webp = ImageHeader::parse(&webp).unwrap();
    assert_eq!((webp.width, webp.height, webp.channels), (10, 5, 4));
    assert_eq!(ImageHeader::parse(b"not an image"), None);
}

#[test]
fn tallies_count_formats_colours_and_ranges() {
    let mut first = ImageTally::default();
    first.add(&jpeg(3, 24, 32, false), 0);
    first.add(&jpeg(1, 28, 28, false), 1);
    let mut second = ImageTally::default();
    second.add(&png(2, 8, 40, 20), 0);
    second.add(b"text", 1);
    first.merge(&second, 2);
    let facts = first.facts();
    assert_eq!(facts.count("jpeg"), 2);
    assert_eq!(facts.count("png"), 1);
    assert_eq!(facts.count("other"), 1);
    assert_eq!(facts.jpeg_count("grayscale"), 1);
    assert_eq!(facts.png_color.get("rgb 8-bit"), Some(&1));
    assert_eq!(facts.height, Some(Range { min: 20, max: 28 }));
    assert_eq!(facts.width, Some(Range { min: 28, max: 40 }));
    assert_eq!(facts.channels, Some(Range { min: 1, max: 3 }));
    assert_eq!(facts.oneflow_cannot_decode, 3);
    assert_eq!(facts.first_undecodable, Some(1));
    assert_eq!(facts.single_format(), "mixed");
    assert_eq!(
        facts.undecodable_description(),
        "1 PNG, 1 non-image, 1 grayscale JPEG"
    );
}
