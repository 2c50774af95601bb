//! The keyword arguments as the Python wrappers hand them over, in dicts: those of `tf2of`
//! and `of2tf` ([`Settings`]), `diff`'s mapping ([`Rules`]) and the network bounds every
//! function that may reach an object store takes ([`Network`]). Each is taken out by its
//! name, so that a value of the wrong kind is refused naming its keyword, what it takes and
//! what it was given (`parts: expected an int of at least 1 or None, got str '3'`), and
//! then parsed into the engine's configuration, which checks it in Python's words.

use std::path::PathBuf;
use std::time::Duration;

use ofconvert_engine::config::{
    choice, parse_size, Cast, ConvertConfig, MappingRules, Offset, Rename,
};
use ofconvert_engine::{Direction, FrontEnd, NetworkBounds};
use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};

use crate::errors;

/// The longest a refused value is shown, in characters of its `repr`.
const SHOWN_MAX: usize = 60;

/// Keyword `name` of `keywords` as a `T`; a value of another kind is a `TypeError` that
/// says what the keyword `takes`.
fn keyword<'py, T: FromPyObjectOwned<'py>>(
    keywords: &Bound<'py, PyDict>,
    name: &str,
    takes: &str,
) -> PyResult<T> {
    let value = given(keywords, name)?;
    value
        .extract()
        .map_err(|_| PyTypeError::new_err(refusal(&value, name, takes)))
}

/// [`keyword`] for a number: an int out of `T`'s range is a `UsageError`, as the engine's
/// own range checks are, not a `TypeError`.
fn number<'py, T: FromPyObjectOwned<'py>>(
    keywords: &Bound<'py, PyDict>,
    name: &str,
    takes: &str,
) -> PyResult<T> {
    let value = given(keywords, name)?;
    value.extract().map_err(|_| {
        let message = refusal(&value, name, takes);
        if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
            errors::usage(keywords.py(), &message)
        } else {
            PyTypeError::new_err(message)
        }
    })
}

/// The value of keyword `name`, which the wrappers always hand over.
fn given<'py>(keywords: &Bound<'py, PyDict>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    keywords
        .get_item(name)?
        .ok_or_else(|| PyKeyError::new_err(format!("the keyword {name} was not handed over")))
}

/// `name: expected TAKES, got TYPE REPR`.
fn refusal(value: &Bound<'_, PyAny>, name: &str, takes: &str) -> String {
    let kind = value
        .get_type()
        .name()
        .map(|kind| kind.to_string())
        .unwrap_or_else(|_| "object".to_owned());
    let mut shown = value
        .repr()
        .map(|shown| shown.to_string())
        .unwrap_or_default();
    if shown.chars().count() > SHOWN_MAX {
        shown = shown.chars().take(SHOWN_MAX - 3).collect::<String>() + "...";
    }
    format!("{name}: expected {takes}, got {kind} {shown}")
}

// What the keywords take, in the words of their refusals.
const SWITCH: &str = "True or False";
const TEXT: &str = "a str";
const COUNT: &str = "an int of at least 1 or None";
const NAMES: &str = "a list of feature names";
const PAIRS: &str = "a dict of feature name to str";
const DELTAS: &str = "a dict of feature name to int";

/// A byte size as Python gives it: an int, or a string such as `"256M"`.
#[derive(Debug, FromPyObject)]
enum Size {
    /// A number of bytes.
    Bytes(u64),
    /// A size with a suffix.
    Text(String),
}

/// Every keyword argument of `tf2of` and `of2tf`, as the Python wrappers normalize them
/// (dicts to lists of pairs); those of the other direction keep their defaults.
#[derive(Debug)]
pub struct Settings {
    parts: Option<u64>,
    records_per_part: Option<u64>,
    max_part_bytes: Option<Size>,
    part_prefix: String,
    part_digits: usize,
    sequence: String,
    raw_feature: Option<String>,
    empty: String,
    images: String,
    jpeg_quality: u8,
    compression: Option<String>,
    to: String,
    array_record_options: Option<String>,
    on_corrupt: String,
    overwrite: bool,
    resume: bool,
    break_lock: bool,
    shard: Option<(i64, i64)>,
    jobs: Option<usize>,
    sync: bool,
    verify: bool,
    side_files: bool,
    dry_run: bool,
    /// The mapping keywords, `diff`'s too.
    rules: Rules,
    network: Network,
}

impl Settings {
    /// The keyword arguments of `tf2of`/`of2tf`, each of its kind.
    pub fn from_keywords(keywords: &Bound<'_, PyDict>) -> PyResult<Settings> {
        let k = keywords;
        Ok(Settings {
            parts: number(k, "parts", COUNT)?,
            records_per_part: number(k, "records_per_part", COUNT)?,
            max_part_bytes: number(
                k,
                "max_part_bytes",
                "an int of at least 1, a size such as \"256M\", or None",
            )?,
            part_prefix: keyword(k, "part_prefix", TEXT)?,
            part_digits: number(k, "part_digits", "an int from 0 to 20")?,
            sequence: keyword(k, "sequence", TEXT)?,
            raw_feature: keyword(k, "raw_feature", "a feature name (str) or None")?,
            empty: keyword(k, "empty", TEXT)?,
            images: keyword(k, "images", TEXT)?,
            jpeg_quality: number(k, "jpeg_quality", "an int from 1 to 100")?,
            compression: keyword(k, "compression", "a str such as \"gzip\", or None")?,
            to: keyword(k, "to", TEXT)?,
            array_record_options: keyword(
                k,
                "array_record_options",
                "a str such as \"group_size:64\", or None",
            )?,
            on_corrupt: keyword(k, "on_corrupt", TEXT)?,
            overwrite: keyword(k, "overwrite", SWITCH)?,
            resume: keyword(k, "resume", SWITCH)?,
            break_lock: keyword(k, "break_lock", SWITCH)?,
            shard: number(k, "shard", "(k, n): worker k of n, counted from 0")?,
            jobs: number(k, "jobs", COUNT)?,
            sync: keyword(k, "sync", SWITCH)?,
            verify: keyword(k, "verify", SWITCH)?,
            side_files: keyword(k, "side_files", SWITCH)?,
            dry_run: keyword(k, "dry_run", SWITCH)?,
            rules: Rules::from_keywords(k)?,
            network: keyword(k, "network", "the network bounds")?,
        })
    }

    /// The configuration the keyword arguments ask for.
    pub fn configure(
        self,
        direction: Direction,
        inputs: Vec<PathBuf>,
        output: PathBuf,
    ) -> Result<ConvertConfig, String> {
        let python = FrontEnd::Python;
        let mut config = ConvertConfig::new(direction, python, inputs, output);
        config.parts = self.parts;
        config.records_per_part = self.records_per_part;
        config.max_part_bytes = match self.max_part_bytes {
            None => None,
            Some(Size::Bytes(bytes)) => Some(bytes),
            Some(Size::Text(text)) => {
                Some(parse_size(&text).map_err(|err| format!("max_part_bytes={text:?}: {err}"))?)
            }
        };
        config.part_prefix = self.part_prefix;
        config.part_digits = self.part_digits;
        config.mapping = self.rules.parse()?;
        config.sequence = choice(python, &self.sequence)?;
        config.raw_feature = self.raw_feature;
        config.empty = choice(python, &self.empty)?;
        config.images = choice(python, &self.images)?;
        config.jpeg_quality = self.jpeg_quality;
        config.compression = self
            .compression
            .map(|name| choice(python, &name))
            .transpose()?;
        config.to = choice(python, &self.to)?;
        config.array_record_options = self.array_record_options;
        config.on_corrupt = choice(python, &self.on_corrupt)?;
        config.overwrite = self.overwrite;
        config.resume = self.resume;
        config.break_lock = self.break_lock;
        config.shard = self.shard.map(shard).transpose()?;
        config.jobs = self.jobs;
        config.sync = self.sync;
        config.side_files = self.side_files;
        config.dry_run = self.dry_run;
        config.verify = self.verify;
        self.network.apply()?;
        Ok(config)
    }
}

/// The mapping keywords of `tf2of`, `of2tf` and `diff` (for the records of its side A), as
/// the Python wrappers normalize them (dicts to lists of pairs).
#[derive(Debug)]
pub struct Rules {
    preset: Option<String>,
    rename: Vec<(String, String)>,
    cast: Vec<(String, String)>,
    offset: Vec<(String, i64)>,
    keep: Vec<String>,
    drop: Vec<String>,
    rename_if_present: Vec<(String, String)>,
    cast_if_present: Vec<(String, String)>,
    offset_if_present: Vec<(String, i64)>,
    keep_if_present: Vec<String>,
    drop_if_present: Vec<String>,
    lossy: bool,
}

impl Rules {
    /// The mapping keywords, each of its kind.
    pub fn from_keywords(keywords: &Bound<'_, PyDict>) -> PyResult<Rules> {
        let k = keywords;
        Ok(Rules {
            preset: keyword(k, "preset", "a str or None")?,
            rename: keyword(k, "rename", PAIRS)?,
            cast: keyword(k, "cast", PAIRS)?,
            offset: keyword(k, "offset", DELTAS)?,
            keep: keyword(k, "keep", NAMES)?,
            drop: keyword(k, "drop", NAMES)?,
            rename_if_present: keyword(k, "rename_if_present", PAIRS)?,
            cast_if_present: keyword(k, "cast_if_present", PAIRS)?,
            offset_if_present: keyword(k, "offset_if_present", DELTAS)?,
            keep_if_present: keyword(k, "keep_if_present", NAMES)?,
            drop_if_present: keyword(k, "drop_if_present", NAMES)?,
            lossy: keyword(k, "lossy", SWITCH)?,
        })
    }

    /// The rules, each value parsed as the conversions parse it.
    pub fn parse(self) -> Result<MappingRules, String> {
        Ok(MappingRules {
            preset: self
                .preset
                .map(|name| choice(FrontEnd::Python, &name))
                .transpose()?,
            rename: renames(&self.rename)?,
            cast: casts(&self.cast)?,
            offset: offsets(&self.offset)?,
            keep: self.keep,
            drop: self.drop,
            rename_if_present: renames(&self.rename_if_present)?,
            cast_if_present: casts(&self.cast_if_present)?,
            offset_if_present: offsets(&self.offset_if_present)?,
            keep_if_present: self.keep_if_present,
            drop_if_present: self.drop_if_present,
            lossy: self.lossy,
        })
    }
}

fn renames(pairs: &[(String, String)]) -> Result<Vec<Rename>, String> {
    pairs
        .iter()
        .map(|(old, new)| Rename::new(old, new))
        .collect()
}

fn casts(pairs: &[(String, String)]) -> Result<Vec<Cast>, String> {
    pairs.iter().map(|(name, to)| Cast::new(name, to)).collect()
}

fn offsets(pairs: &[(String, i64)]) -> Result<Vec<Offset>, String> {
    pairs
        .iter()
        .map(|(name, delta)| Offset::new(name, *delta))
        .collect()
}

/// A worker's share as Python gives it, `(k, n)`: worker `k` of `n`, counted from 0.
fn shard(value: (i64, i64)) -> Result<ofconvert_engine::Shard, String> {
    let (index, count) = value;
    if count < 1 {
        return Err(format!(
            "shard=({index}, {count}): there must be at least one worker"
        ));
    }
    if index < 0 || index >= count {
        return Err(format!(
            "shard=({index}, {count}): workers are numbered from 0 to {}",
            count - 1
        ));
    }
    Ok(ofconvert_engine::Shard {
        index: index as usize,
        count: count as usize,
    })
}

/// The most transfers in flight a job may keep, as the command line's `--in-flight` allows.
const MAX_IN_FLIGHT: usize = 256;

/// The network bounds every function that may reach an object store takes, as the Python
/// wrappers' `network()` checks and normalizes them.
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Network {
    retries: usize,
    retry_timeout: f64,
    request_timeout: f64,
    anonymous: bool,
    in_flight: usize,
}

impl Network {
    /// Sets the bounds of the stores opened from now on, whether they send requests
    /// unsigned (public buckets), and how many transfers each job keeps going.
    pub fn apply(&self) -> Result<(), String> {
        for (name, secs) in [
            ("retry_timeout", self.retry_timeout),
            ("request_timeout", self.request_timeout),
        ] {
            if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
                return Err(format!(
                    "{name}={secs}: expected a positive number of seconds"
                ));
            }
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.in_flight) {
            return Err(format!(
                "in_flight={}: expected 1 to {MAX_IN_FLIGHT} transfers",
                self.in_flight
            ));
        }
        // Nothing is set before every value is known good: a refused call changes nothing.
        ofconvert_engine::set_network_bounds(NetworkBounds {
            retries: self.retries,
            retry_timeout: Duration::from_secs_f64(self.retry_timeout),
            request_timeout: Duration::from_secs_f64(self.request_timeout),
        });
        ofconvert_engine::set_anonymous(self.anonymous);
        ofconvert_engine::set_transfers_in_flight(self.in_flight);
        Ok(())
    }

    /// [`Network::apply`], a refused value raised as a `UsageError`.
    pub fn set(&self, py: Python<'_>) -> PyResult<()> {
        self.apply().map_err(|message| errors::usage(py, &message))
    }
}
