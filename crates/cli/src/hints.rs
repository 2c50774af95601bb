//! What to say when a conversion found nothing to convert: the input may be of the other
//! format (the wrong direction), or OneFlow parts named with another prefix.

use std::collections::BTreeSet;
use std::path::Path;

use ofconvert_engine::{part_number, Direction, Format};

/// A hint for a run of `direction` over `input` that found no dataset, when the record
/// files there tell what was meant.
pub fn nothing_found(input: &Path, direction: Direction, part_prefix: &str) -> Option<String> {
    let found = ofconvert_engine::expand_paths(&[input.to_path_buf()], None);
    let of_format = |wanted: Format| {
        found
            .files
            .iter()
            .filter(move |(_, format)| *format == wanted)
            .map(|(path, _)| path)
    };
    match direction {
        Direction::TfToOf => (of_format(Format::Of).next().is_some()).then(|| {
            format!(
                "{} holds OFRecord files (OneFlow parts), not TFRecord files: use of2tf to \
                 convert them to TFRecord",
                input.display()
            )
        }),
        Direction::OfToTf => {
            if of_format(Format::Tf).next().is_some() && of_format(Format::Of).next().is_none() {
                return Some(format!(
                    "{} holds TFRecord files, not OneFlow datasets: use tf2of to convert them \
                     to OneFlow",
                    input.display()
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
                        "the OneFlow parts in {} are named {prefix}<number>: pass \
                         --part-prefix {prefix}",
                        input.display()
                    ))
                }
                _ => Some(format!(
                    "the OneFlow parts in {} are named with other prefixes ({}): pass \
                     --part-prefix with the one to read",
                    input.display(),
                    prefixes.into_iter().collect::<Vec<_>>().join(", ")
                )),
            }
        }
    }
}
