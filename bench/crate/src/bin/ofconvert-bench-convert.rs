//! Converts every file of one directory, one after another on one thread, by the wire path
//! or by the typed path (decode into prost messages, map, encode), with the same framing
//! readers and writers. `bench/run` times both to show, end to end, what the wire path
//! buys; the CLI has no switch for the typed path.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, ValueEnum};
use ofconvert_bench::{of_part_name, tf_shard_name};
use ofconvert_bridge::{
    decode_example, decode_ofrecord, encode_example, encode_ofrecord, example_to_ofrecord,
    ofrecord_to_example, MappingSpec, Transcoder,
};

/// Convert a directory of TFRecord files to OFRecord parts or back, single-threaded.
#[derive(Debug, Parser)]
#[command(name = "ofconvert-bench-convert")]
struct Args {
    /// Decode, map and encode whole messages instead of transcoding at the wire level.
    #[arg(long)]
    typed: bool,

    /// Which way to convert.
    #[arg(value_enum)]
    direction: Direction,

    /// A directory of record files (every file in it is read, in name order).
    #[arg(value_name = "IN")]
    input: PathBuf,

    /// The output directory (created; files of the same names are replaced).
    #[arg(value_name = "OUT")]
    output: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Direction {
    Tf2of,
    Of2tf,
}

/// One of the two routes through the bridge, each turning one serialized record into another.
enum Route {
    // Boxed: the transcoder's scratch state dwarfs a spec, and one route is made per run.
    Wire(Box<Transcoder>),
    Typed(MappingSpec),
}

impl Route {
    fn convert(
        &mut self,
        direction: Direction,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ofconvert_bridge::Error> {
        match (self, direction) {
            (Route::Wire(transcoder), Direction::Tf2of) => transcoder.tf_to_of(input, out),
            (Route::Wire(transcoder), Direction::Of2tf) => transcoder.of_to_tf(input, out),
            (Route::Typed(spec), Direction::Tf2of) => {
                let record = example_to_ofrecord(&decode_example(input)?, spec)?;
                out.clear();
                encode_ofrecord(&record, out);
                Ok(())
            }
            (Route::Typed(spec), Direction::Of2tf) => {
                let example = ofrecord_to_example(&decode_ofrecord(input)?, spec)?;
                out.clear();
                encode_example(&example, out);
                Ok(())
            }
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut route = if args.typed {
        Route::Typed(MappingSpec::new())
    } else {
        Route::Wire(Box::new(Transcoder::new(MappingSpec::new())?))
    };
    let mut inputs = Vec::new();
    for entry in fs::read_dir(&args.input)
        .with_context(|| format!("reading directory {}", args.input.display()))?
    {
        let entry = entry.with_context(|| format!("reading {}", args.input.display()))?;
        if entry.file_type()?.is_file() {
            inputs.push(entry.path());
        }
    }
    inputs.sort();
    fs::create_dir_all(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let files = inputs.len() as u64;
    for (index, input) in (0u64..).zip(&inputs) {
        let name = match args.direction {
            Direction::Tf2of => of_part_name(index),
            Direction::Of2tf => tf_shard_name("converted", index, files),
        };
        let output = args.output.join(name);
        convert_file(&mut route, args.direction, input, &output)
            .with_context(|| format!("{} -> {}", input.display(), output.display()))?;
    }
    Ok(())
}

fn convert_file(
    route: &mut Route,
    direction: Direction,
    input: &Path,
    output: &Path,
) -> Result<()> {
    let source = File::open(input)?;
    let sink = File::create(output)?;
    let (mut record, mut converted) = (Vec::new(), Vec::new());
    match direction {
        Direction::Tf2of => {
            let mut reader = ofconvert_tfrecord::Reader::new(source);
            let mut writer = ofconvert_ofrecord::Writer::new(sink);
            while reader.read_record(&mut record)? {
                route
                    .convert(direction, &record, &mut converted)
                    .with_context(|| {
                        format!("record #{}", reader.position().index.saturating_sub(1))
                    })?;
                writer.write_record(&converted)?;
            }
            writer.finish()?;
        }
        Direction::Of2tf => {
            let mut reader = ofconvert_ofrecord::Reader::new(source);
            let mut writer = ofconvert_tfrecord::Writer::new(sink);
            while reader.read_record(&mut record)? {
                route
                    .convert(direction, &record, &mut converted)
                    .with_context(|| {
                        format!("record #{}", reader.position().index.saturating_sub(1))
                    })?;
                writer.write_record(&converted)?;
            }
            writer.finish()?;
        }
    }
    Ok(())
}
