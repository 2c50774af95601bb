//! Writes an ArrayRecord file from length-prefixed records (each an 8-byte little-endian
//! length and its bytes, as `testdata/arrayrecord/*.expected`), so that Google's reader can
//! check our files: `testdata/arrayrecord/check_ours.py` runs it.
//!
//! `cargo run -p ofconvert-arrayrecord --example write_arrayrecord -- IN OUT COMPRESSION GROUP`
//! with COMPRESSION one of `uncompressed`, `zstd:LEVEL`, `brotli:LEVEL`, `snappy`.

use std::num::NonZeroU32;
use std::{env, fs, io};

use ofconvert_arrayrecord::{Compression, Writer, WriterOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = env::args().skip(1).collect();
    let [input, output, compression, group_size] = args.as_slice() else {
        return Err("usage: write_arrayrecord IN OUT COMPRESSION GROUP_SIZE".into());
    };
    let compression = match compression.split_once(':') {
        None if compression == "uncompressed" => Compression::None,
        None if compression == "snappy" => Compression::Snappy,
        Some(("zstd", level)) => Compression::Zstd(level.parse()?),
        Some(("brotli", level)) => Compression::Brotli(level.parse()?),
        _ => return Err(format!("unknown compression {compression}").into()),
    };
    let options = WriterOptions {
        compression,
        group_size: NonZeroU32::new(group_size.parse()?).ok_or("group size 0")?,
    };
    let bytes = fs::read(input)?;
    let mut rest = bytes.as_slice();
    let mut writer = Writer::with_options(io::BufWriter::new(fs::File::create(output)?), options);
    while !rest.is_empty() {
        let (len, tail) = rest.split_at_checked(8).ok_or("cut short")?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into()?))?;
        let (record, tail) = tail.split_at_checked(len).ok_or("cut short")?;
        writer.write_record(record)?;
        rest = tail;
    }
    writer.finish()?;
    Ok(())
}
