//! Which share of a sharded run a worker converts: worker K of N, as `--shard K/N` says.

use std::fmt;
use std::str::FromStr;

/// Worker `index` of `count` (counted from 0), as `--shard K/N` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This worker's number, below `count`.
    pub index: usize,
    /// How many workers share the run.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let number = |part: &str| part.trim().parse::<usize>().ok();
        let parsed = text.split_once('/');
        // The workers of the run asked for, when its size is readable: `3/3` is explained
        // with the three workers of a run of three.
        let usage = usage(parsed.and_then(|(_, count)| number(count)));
        let (index, count) = parsed.ok_or_else(|| format!("{text:?}: {usage}"))?;
        let number = |part: &str| {
            number(part).ok_or_else(|| format!("{text:?}: {part:?} is not a number; {usage}"))
        };
        let (index, count) = (number(index)?, number(count)?);
        if count == 0 {
            return Err(format!(
                "{text:?}: there must be at least one worker; {usage}"
            ));
        }
        if index >= count {
            return Err(format!(
                "{text:?}: workers are numbered from 0 to {}; {usage}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// What `--shard` expects, with the workers of a run of `count` (of four when it is not
/// known) as the example: `0/3, 1/3, 2/3`; a long run's first two and last.
fn usage(count: Option<usize>) -> String {
    let count = count.filter(|count| *count > 0).unwrap_or(4);
    let workers: Vec<String> = if count <= 5 {
        (0..count).map(|k| format!("{k}/{count}")).collect()
    } else {
        vec![
            format!("0/{count}"),
            format!("1/{count}"),
            "...".to_owned(),
            format!("{}/{count}", count - 1),
        ]
    };
    format!(
        "expected K/N: worker K of N, counted from 0 ({})",
        workers.join(", ")
    )
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
