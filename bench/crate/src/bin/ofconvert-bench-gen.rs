//! Writes the benchmark corpora into a directory, and `corpus.tsv` beside them saying what
//! was written (the table `bench/run` reads).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use ofconvert_bench::{write_big_file, write_corpus, Corpus, Options, Tree};

/// Write deterministic benchmark corpora: DIR/{large,small,png}/{tfrecord,ofrecord,array_record}/
/// and, with `--corpus big`, one big TFRecord file in DIR/big/tfrecord/.
#[derive(Debug, Parser)]
#[command(name = "ofconvert-bench-gen")]
struct Args {
    /// Where to write; files of the same names are replaced.
    #[arg(value_name = "DIR")]
    dir: PathBuf,

    /// Multiplies the number of records per shard (the shard counts stay 16, 8 and 4).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,

    /// Seed of the random streams; the same seed writes the same bytes.
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Which corpora to write, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "large,small")]
    corpus: Vec<Which>,

    /// Size of the big file (suffixes K, M, G, binary).
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    big_size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    Large,
    Small,
    Png,
    Big,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, shift) = match text.as_bytes().last() {
        Some(b'K' | b'k') => (&text[..text.len() - 1], 10),
        Some(b'M' | b'm') => (&text[..text.len() - 1], 20),
        Some(b'G' | b'g') => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512M or 4G"))?;
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

fn main() -> Result<()> {
    let args = Args::parse();
    if !(args.scale.is_finite() && args.scale > 0.0) {
        bail!("--scale must be a positive number, not {}", args.scale);
    }
    let options = Options {
        seed: args.seed,
        scale: args.scale,
    };
    let mut written = Vec::new();
    for which in dedup(&args.corpus) {
        let started = Instant::now();
        let corpus = match which {
            Which::Large => Some(Corpus::Large),
            Which::Small => Some(Corpus::Small),
            Which::Png => Some(Corpus::Png),
            Which::Big => None,
        };
        let (name, trees) = match corpus {
            Some(corpus) => {
                let trees = write_corpus(&args.dir, corpus, &options)
                    .with_context(|| format!("writing the {corpus} corpus"))?;
                (corpus.name(), trees.to_vec())
            }
            None => {
                let tree = write_big_file(&args.dir, args.big_size, args.seed)
                    .context("writing the big file")?;
                ("big", vec![tree])
            }
        };
        for tree in &trees {
            eprintln!(
                "{name}: {} files, {} records, {:.1} MB of {} in {}",
                tree.files,
                tree.records,
                tree.bytes as f64 / 1e6,
                tree.format.name(),
                tree.dir.display(),
            );
        }
        eprintln!(
            "{name}: written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        written.extend(trees.into_iter().map(|tree| (name, tree)));
    }
    write_table(&args.dir, &options, &written)
}

/// The corpora asked for, each once, in the order given.
fn dedup(which: &[Which]) -> Vec<Which> {
    let mut unique = Vec::new();
    for &w in which {
        if !unique.contains(&w) {
            unique.push(w);
        }
    }
    unique
}

/// `corpus.tsv`: one line per tree with its corpus, format, directory (relative to DIR),
/// files, records and bytes, after a `#` line with the seed and scale.
fn write_table(dir: &Path, options: &Options, written: &[(&str, Tree)]) -> Result<()> {
    let mut table = format!("# seed={} scale={}\n", options.seed, options.scale);
    for (name, tree) in written {
        let relative = tree.dir.strip_prefix(dir).unwrap_or(&tree.dir);
        writeln!(
            table,
            "{name}\t{}\t{}\t{}\t{}\t{}",
            tree.format.name(),
            relative.display(),
            tree.files,
            tree.records,
            tree.bytes,
        )?;
    }
    let path = dir.join("corpus.tsv");
    fs::write(&path, table).with_context(|| format!("writing {}", path.display()))
}
