//! Colour for what needs attention on a terminal: errors red, warnings yellow. Off when
//! stderr is not a terminal or `NO_COLOR` is set (<https://no-color.org>);
//! `CLICOLOR_FORCE` turns it on where there is no terminal (`NO_COLOR` still wins).

use std::env;
use std::io::IsTerminal;

const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[1;33m";
const RESET: &str = "\x1b[0m";

#[derive(Clone, Copy, Debug)]
pub struct Style {
    colour: bool,
}

/// Whether an environment variable is set to something other than empty (or `0`).
fn set(name: &str) -> bool {
    env::var_os(name).is_some_and(|value| !value.is_empty() && value != "0")
}

impl Style {
    /// The style for messages on stderr.
    pub fn stderr() -> Style {
        let wanted = set("CLICOLOR_FORCE") || std::io::stderr().is_terminal();
        Style {
            colour: wanted && env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()),
        }
    }

    fn paint(self, colour: &str, text: &str) -> String {
        if self.colour {
            format!("{colour}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    /// `ofconvert:`, the prefix of an error.
    pub fn error_prefix(self) -> String {
        self.paint(RED, "ofconvert:")
    }

    /// `warning:`, the prefix of a warning.
    pub fn warning_prefix(self) -> String {
        self.paint(YELLOW, "warning:")
    }
}

/// Prints an error on stderr: `ofconvert: MESSAGE`, the prefix red on a terminal.
pub fn print_error(message: std::fmt::Arguments<'_>) {
    eprintln!("{} {message}", Style::stderr().error_prefix());
}

/// Prints a warning on stderr: `warning: MESSAGE`, the prefix yellow on a terminal.
pub fn print_warning(message: std::fmt::Arguments<'_>) {
    eprintln!("{} {message}", Style::stderr().warning_prefix());
}

/// `error!("...", ...)`: [`print_error`] with `format!` arguments.
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::style::print_error(format_args!($($arg)*))
    };
}

/// `warning!("...", ...)`: [`print_warning`] with `format!` arguments.
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::style::print_warning(format_args!($($arg)*))
    };
}

pub(crate) use {error, warning};
