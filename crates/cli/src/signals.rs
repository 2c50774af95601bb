//! SIGINT (Ctrl-C) and SIGTERM during a conversion. Used by `convert` in `lib.rs`; uses
//! signal-hook and, on Unix, libc.
//!
//! The same process may run several conversions (the Python package calls [`crate::run`]
//! once per command), and between them the host may put its own handlers back: signal-hook
//! installs its handler once per process, so each conversion puts it back in place and takes
//! its actions away when it ends.

use std::io;

/// The handlers of one conversion: removed when dropped.
pub(crate) struct OnSignals {
    #[cfg(unix)]
    actions: Vec<signal_hook::SigId>,
}

/// SIGINT and SIGTERM set `interrupt` until the returned value is dropped: the conversion
/// stops at the next record, removes its temporary files and reports what it finished. A
/// second signal ends the process at once, with the status a shell gives a Ctrl-C.
pub(crate) fn stop_on_signals(interrupt: &ofconvert_engine::Interrupt) -> io::Result<OnSignals> {
    #[cfg(unix)]
    {
        let mut on = OnSignals {
            actions: Vec::new(),
        };
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // The exit is registered first, so it sees the flag as the previous signal left it.
            on.actions
                .push(signal_hook::flag::register_conditional_shutdown(
                    signal,
                    130,
                    interrupt.flag(),
                )?);
            on.actions
                .push(signal_hook::flag::register(signal, interrupt.flag())?);
            handler_in_place(signal)?;
        }
        Ok(on)
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt;
        Ok(OnSignals {})
    }
}

impl Drop for OnSignals {
    fn drop(&mut self) {
        #[cfg(unix)]
        for action in self.actions.drain(..) {
            signal_hook::low_level::unregister(action);
        }
    }
}

/// Makes signal-hook's handler the one `signal` runs: recorded the first time (signal-hook
/// has just installed it), put back on later calls if another took its place since (Python
/// restores its own handlers once a command returns).
#[cfg(unix)]
fn handler_in_place(signal: libc::c_int) -> io::Result<()> {
    use std::sync::Mutex;

    static INSTALLED: Mutex<Vec<(libc::c_int, libc::sigaction)>> = Mutex::new(Vec::new());
    // SAFETY: sigaction with no new action only reads the current one into `current`.
    let current = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
            return Err(io::Error::last_os_error());
        }
        current
    };
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    match installed.iter().find(|(number, _)| *number == signal) {
        None => installed.push((signal, current)),
        Some((_, ours)) if ours.sa_sigaction != current.sa_sigaction => {
            // SAFETY: `ours` is the action signal-hook installed for this signal, read back
            // from the kernel: its handler is signal-hook's, which stays valid for the
            // process's life, with the flags and mask it chose.
            if unsafe { libc::sigaction(signal, ours, std::ptr::null_mut()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Some(_) => {}
    }
    Ok(())
}
