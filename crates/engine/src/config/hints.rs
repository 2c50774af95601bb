//! What to tell a user whose conversion found nothing or failed in a way an option fixes:
//! the input may be of the other format (the wrong direction), OneFlow parts may be named
//! with another prefix, a double may need rounding.

use std::collections::BTreeSet;
use std::path::Path;

use crate::front_end::{FrontEnd, OptionValue};
use crate::inspect::expand_paths;
use crate::naming::names::{part_number, Format};
use crate::options::Direction;
use crate::progress::DatasetStatus;
use crate::running::summary::Summary;

/// A hint for a run of `direction` over `input` that found no dataset, when the record
/// files there tell what was meant.
pub fn nothing_found(
    input: &Path,
    direction: Direction,
    part_prefix: &str,
    front_end: FrontEnd,
) -> Option<String> {
    let found = expand_paths(&[input.to_path_buf()], None);
    let of_format = |wanted: Format| {
        found
            .files
            .iter()
            .filter(move |(_, format)| *format == wanted)
            .map(|(path, _)| path)
    };
    let command = |name: &str| match front_end {
        FrontEnd::CommandLine => name.to_owned(),
        FrontEnd::Python => format!("ofconvert.{name}()"),
    };
    match direction {
        Direction::TfToOf => (of_format(Format::Of).next().is_some()).then(|| {
            format!(
                "{} holds OFRecord files (OneFlow parts), not TFRecord files: use {} to \
                 convert them to TFRecord",
                input.display(),
                command("of2tf")
            )
        }),
        Direction::OfToTf => {
            if of_format(Format::Tf).next().is_some() && of_format(Format::Of).next().is_none() {
                return Some(format!(
                    "{} holds TFRecord files, not OneFlow datasets: use {} to convert them \
                     to OneFlow",
                    input.display(),
                    command("tf2of")
                ));
            }
            // OFRecord files that are not PREFIX<number>: name the prefix they share.
            let prefixes: BTreeSet<String> = of_format(Format::Of)
                .filter_map(|path| path.file_name()?.to_str())
                .filter(|name| part_number(name, part_prefix).is_none())
                .filter_map(|name| {
                    let prefix = name.trim_end_matches(|c: char| c.is_ascii_digit());
                    (prefix.len() < name.len() && !prefix.is_empty()).then(|| prefix.to_owned())
                })
                .collect();
            match prefixes.len() {
                0 => None,
                1 => {
                    let prefix = prefixes.into_iter().next()?;
                    Some(format!(
                        "the OneFlow parts in {} are named {prefix}<number>: pass {}",
                        input.display(),
                        front_end.option("part_prefix", OptionValue::Text(&prefix))
                    ))
                }
                _ => Some(format!(
                    "the OneFlow parts in {} are named with other prefixes ({}): pass {} with \
                     the one to read",
                    input.display(),
                    prefixes.into_iter().collect::<Vec<_>>().join(", "),
                    front_end.name("part_prefix")
                )),
            }
        }
    }
}

/// The hint a finished run's failures need to be fixed, when an option fixes them.
pub fn failure_hint(summary: &Summary, front_end: FrontEnd) -> Option<String> {
    let inexact = summary.datasets.iter().any(|dataset| {
        dataset.status == DatasetStatus::Failed
            && dataset
                .error
                .as_deref()
                .is_some_and(|error| error.contains("is not exactly representable as float"))
    });
    (inexact && summary.direction == Direction::OfToTf).then(|| {
        format!(
            "a double that float cannot hold exactly fails its dataset: pass {} to round \
             such doubles to the nearest float",
            front_end.switch("lossy")
        )
    })
}
