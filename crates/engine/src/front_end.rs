//! The front ends that call the engine, and how each spells its options, so that a message
//! telling the user what to pass says it in the words they type: `--resume` on the command
//! line, `resume=True` in Python.
//!
//! Options are named here by their Python keyword (`part_digits`); the command line's flag
//! is that name with dashes (`--part-digits`).

use std::fmt;

/// A front end, for its words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrontEnd {
    /// `ofconvert tf2of ... --resume`.
    #[default]
    CommandLine,
    /// `ofconvert.tf2of(..., resume=True)`.
    Python,
}

/// A value as an option takes it, for [`FrontEnd::option`] and [`FrontEnd::rule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionValue<'a> {
    /// A word: `--images jpeg`, `images="jpeg"`.
    Text(&'a str),
    /// A number or a placeholder for one: `--parts N`, `parts=N`.
    Number(&'a str),
}

impl FrontEnd {
    /// A switch turned on: `--resume`, `resume=True`.
    pub fn switch(self, name: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--{}", flag(name)),
            FrontEnd::Python => format!("{name}=True"),
        }
    }

    /// A switch that is on by default, turned off: `--no-sync`, `sync=False`.
    pub fn switch_off(self, name: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--no-{}", flag(name)),
            FrontEnd::Python => format!("{name}=False"),
        }
    }

    /// An option with its value: `--images jpeg`, `images="jpeg"`, `--parts N`, `parts=N`.
    pub fn option(self, name: &str, value: OptionValue<'_>) -> String {
        match (self, value) {
            (FrontEnd::CommandLine, OptionValue::Text(value) | OptionValue::Number(value)) => {
                format!("--{} {value}", flag(name))
            }
            (FrontEnd::Python, OptionValue::Text(value)) => format!("{name}={}", quoted(value)),
            (FrontEnd::Python, OptionValue::Number(value)) => format!("{name}={value}"),
        }
    }

    /// An option named alone, as a help text mentions it: `--part-prefix`, `part_prefix`.
    pub fn name(self, name: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--{}", flag(name)),
            FrontEnd::Python => name.to_owned(),
        }
    }

    /// Worker `index` of `count`, placeholders allowed: `--shard K/N`, `shard=(K, N)`.
    pub fn shard(self, index: &str, count: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--shard {index}/{count}"),
            FrontEnd::Python => format!("shard=({index}, {count})"),
        }
    }

    /// A mapping rule with a key and a value: `--rename OLD=NEW`, `rename={"OLD": "NEW"}`;
    /// numbers stay bare in Python (`offset={"label": -1}`).
    pub fn rule(self, name: &str, key: &str, value: OptionValue<'_>) -> String {
        match (self, value) {
            (FrontEnd::CommandLine, OptionValue::Text(value) | OptionValue::Number(value)) => {
                format!("--{} {key}={value}", flag(name))
            }
            (FrontEnd::Python, OptionValue::Text(value)) => {
                format!("{name}={{{}: {}}}", quoted(key), quoted(value))
            }
            (FrontEnd::Python, OptionValue::Number(value)) => {
                format!("{name}={{{}: {value}}}", quoted(key))
            }
        }
    }

    /// A rule naming one feature of a list: `--keep NAME`, `keep=["NAME"]`.
    pub fn listed(self, name: &str, item: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("--{} {item}", flag(name)),
            FrontEnd::Python => format!("{name}=[{}]", quoted(item)),
        }
    }

    /// `ofconvert commit OUT`, `ofconvert.commit(OUT)`: what publishes a sharded run.
    pub fn command(self, command: &str, args: &str) -> String {
        match self {
            FrontEnd::CommandLine => format!("ofconvert {command} {args}"),
            FrontEnd::Python => format!("ofconvert.{command}({args})"),
        }
    }
}

impl fmt::Display for FrontEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrontEnd::CommandLine => "the command line",
            FrontEnd::Python => "Python",
        })
    }
}

/// A keyword's flag: `part_digits` is `part-digits`.
fn flag(name: &str) -> String {
    name.replace('_', "-")
}

/// A Python string literal of `text`, double-quoted as `repr` would not always do, for
/// messages people copy.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_front_end_says_it_its_way() {
        let (cli, py) = (FrontEnd::CommandLine, FrontEnd::Python);
        assert_eq!(cli.switch("resume"), "--resume");
        assert_eq!(py.switch("resume"), "resume=True");
        assert_eq!(cli.switch_off("sync"), "--no-sync");
        assert_eq!(py.switch_off("sync"), "sync=False");
        assert_eq!(
            cli.option("images", OptionValue::Text("jpeg")),
            "--images jpeg"
        );
        assert_eq!(
            py.option("images", OptionValue::Text("jpeg")),
            "images=\"jpeg\""
        );
        assert_eq!(py.option("parts", OptionValue::Number("N")), "parts=N");
        assert_eq!(
            cli.option("part_digits", OptionValue::Number("0")),
            "--part-digits 0"
        );
        assert_eq!(cli.shard("K", "N"), "--shard K/N");
        assert_eq!(py.shard("K", "N"), "shard=(K, N)");
        assert_eq!(
            cli.rule("rename", "a/b", OptionValue::Text("c")),
            "--rename a/b=c"
        );
        assert_eq!(
            py.rule("rename", "a/b", OptionValue::Text("c")),
            "rename={\"a/b\": \"c\"}"
        );
        assert_eq!(
            py.rule("offset", "label", OptionValue::Number("-1")),
            "offset={\"label\": -1}"
        );
        assert_eq!(py.listed("keep", "say \"hi\""), "keep=[\"say \\\"hi\\\"\"]");
        assert_eq!(cli.command("commit", "OUT"), "ofconvert commit OUT");
        assert_eq!(py.command("commit", "OUT"), "ofconvert.commit(OUT)");
    }
}
