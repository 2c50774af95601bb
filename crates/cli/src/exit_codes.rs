//! The process exit status: 0 all good, 1 some inputs failed, 2 a usage error, 130
//! interrupted (by SIGINT or SIGTERM, as shells report a Ctrl-C).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Success,
    /// Some inputs failed (or an inspection found problems); the rest was done.
    Failure,
    /// The command line or the paths it names make no sense.
    Usage,
    /// Stopped by a signal before the work was done.
    Interrupted,
}

impl ExitCode {
    /// The number the process exits with.
    pub fn status(self) -> i32 {
        match self {
            ExitCode::Success => 0,
            ExitCode::Failure => 1,
            ExitCode::Usage => 2,
            ExitCode::Interrupted => 130,
        }
    }

    /// `Failure` when `failed`, else `Success`.
    pub fn failure_if(failed: bool) -> ExitCode {
        if failed {
            ExitCode::Failure
        } else {
            ExitCode::Success
        }
    }
}
