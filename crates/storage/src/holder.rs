//! Who holds an output's lock: what a run writes into the lock it takes (its process id and
//! machine, and on Linux what tells that process from a later one of the same number), and
//! whether the process a lock names still runs, as far as this machine can tell. The
//! storage reads and writes locks; errors say what this finds.

use std::fmt;
use std::path::PathBuf;

/// A lock found held (or left behind), and what it says of its holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    /// The lock: `OUT/.ofconvert-lock`, a file or an object.
    pub lock: PathBuf,
    /// Whether the lock goes when its holder's process ends (a file lock), rather than
    /// outliving a killed holder (an object in a store).
    pub dies_with_holder: bool,
    /// When it was taken, where the storage keeps that (an object's time).
    pub since: Option<String>,
    /// The holder's process id.
    pub pid: Option<u32>,
    /// The holder's machine.
    pub host: Option<String>,
    /// What the lock says, as read.
    text: String,
    /// The holder's boot (Linux `boot_id`): another one means the machine restarted since.
    boot: Option<String>,
    /// The holder's process id namespace: process ids of another are out of sight.
    pid_namespace: Option<String>,
    /// When the holder's process started (clock ticks after boot): another process with the
    /// same id started at another time.
    started: Option<u64>,
}

/// Whether the process a lock names still runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// It runs on this machine.
    Running,
    /// It no longer runs: why, in words (`process 4242 no longer runs on this machine`).
    Gone(String),
    /// This machine cannot tell: the holder is on another one, or the lock says too little.
    Unknown,
}

impl LockHolder {
    /// What this process writes into a lock it takes: `PID on HOST`, then on Linux
    /// `boot=... pidns=... start=...`.
    pub fn this_process() -> String {
        let pid = std::process::id();
        let mut text = format!("{pid} on {}", host_name());
        for (key, value) in [
            ("boot", boot_id()),
            ("pidns", pid_namespace()),
            ("start", start_time(pid).map(|ticks| ticks.to_string())),
        ] {
            if let Some(value) = value {
                text.push_str(&format!(" {key}={value}"));
            }
        }
        text
    }

    /// The holder a lock at `lock` names by `text` (what [`this_process`] wrote, an older
    /// version's bare process id, or anything).
    ///
    /// [`this_process`]: LockHolder::this_process
    pub fn read(
        lock: PathBuf,
        text: &str,
        since: Option<String>,
        dies_with_holder: bool,
    ) -> LockHolder {
        let mut holder = LockHolder {
            lock,
            dies_with_holder,
            since,
            pid: None,
            host: None,
            text: text.trim().to_owned(),
            boot: None,
            pid_namespace: None,
            started: None,
        };
        let mut words = holder.text.split_whitespace();
        holder.pid = words.next().and_then(|word| word.parse().ok());
        if holder.pid.is_none() {
            return holder;
        }
        let rest: Vec<&str> = words.collect();
        let facts = match rest.as_slice() {
            ["on", host, facts @ ..] => {
                holder.host = Some((*host).to_owned());
                facts
            }
            _ => &[][..],
        };
        for fact in facts {
            match fact.split_once('=') {
                Some(("boot", value)) => holder.boot = Some(value.to_owned()),
                Some(("pidns", value)) => holder.pid_namespace = Some(value.to_owned()),
                Some(("start", value)) => holder.started = value.parse().ok(),
                _ => {}
            }
        }
        holder
    }

    /// Whether the lock still says what it said when `self` was read from it.
    pub fn says(&self, text: &str) -> bool {
        self.text == text.trim()
    }

    /// Whether the holder still runs, as this machine can tell.
    pub fn liveness(&self) -> Liveness {
        let here = host_name();
        let elsewhere = self.host.as_ref().is_some_and(|host| *host != here);
        if self.dies_with_holder {
            // A file lock found held is held by a live process, whatever it wrote: one on
            // this machine, or another over a network file system, out of sight.
            return if elsewhere {
                Liveness::Unknown
            } else {
                Liveness::Running
            };
        }
        let (Some(pid), false) = (self.pid, elsewhere) else {
            return Liveness::Unknown;
        };
        if self.host.is_none() {
            // An older version's lock object names no machine.
            return Liveness::Unknown;
        }
        if let (Some(boot), Some(now)) = (&self.boot, boot_id()) {
            if *boot != now {
                return Liveness::Gone("this machine has restarted since".to_owned());
            }
        }
        if let (Some(namespace), Some(now)) = (&self.pid_namespace, pid_namespace()) {
            if *namespace != now {
                // Another container on the same machine: its processes are out of sight.
                return Liveness::Unknown;
            }
        }
        match process_exists(pid) {
            Some(false) => {
                return Liveness::Gone(format!("process {pid} no longer runs on this machine"))
            }
            Some(true) => {}
            None => return Liveness::Unknown,
        }
        if let (Some(started), Some(now)) = (self.started, start_time(pid)) {
            if started != now {
                return Liveness::Gone(format!(
                    "process {pid} on this machine is another program now"
                ));
            }
        }
        Liveness::Running
    }
}

/// `process 4242 on worker-7, since 2024-05-01 10:00:00 UTC`, or what the lock says when it
/// names no process.
impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "process {pid}")?,
            None if self.text.is_empty() => f.write_str("a process it does not name")?,
            None => write!(f, "{:?}", self.text.chars().take(80).collect::<String>())?,
        }
        match &self.host {
            Some(host) if *host == host_name() => write!(f, " on this machine ({host})")?,
            Some(host) => write!(f, " on {host}")?,
            None => {}
        }
        if let Some(since) = &self.since {
            write!(f, ", since {since}")?;
        }
        Ok(())
    }
}

/// This machine's name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty() && !name.contains(char::is_whitespace))
        .unwrap_or_else(|| "an-unknown-host".to_owned())
}

/// This boot of the machine: Linux's `boot_id`, another after every restart.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned()).filter(|id| !id.is_empty())
}

/// This process's process id namespace (`4026531836`): a container has its own.
fn pid_namespace() -> Option<String> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let link = link.to_str()?;
    let inside = link.strip_prefix("pid:[")?.strip_suffix(']')?;
    Some(inside.to_owned())
}

/// When process `pid` started, in clock ticks after boot (the 22nd field of
/// `/proc/PID/stat`, counted after the command name, which may hold spaces).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Whether a process `pid` runs on this machine; `None` where that cannot be asked.
#[cfg(target_os = "linux")]
fn process_exists(pid: u32) -> Option<bool> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let sent = unsafe { libc::kill(pid, 0) };
    if sent == 0 {
        return Some(true);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Some(false),
        // Another user's process exists (EPERM).
        _ => Some(true),
    }
}

#[cfg(not(target_os = "linux"))]
fn process_exists(_pid: u32) -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_lock(text: &str) -> LockHolder {
        LockHolder::read(
            PathBuf::from("s3://b/out/.ofconvert-lock"),
            text,
            None,
            false,
        )
    }

    #[test]
    fn a_lock_names_this_process_as_running_here() {
        let holder = object_lock(&LockHolder::this_process());
        assert_eq!(holder.pid, Some(std::process::id()));
        assert_eq!(holder.host.as_deref(), Some(host_name().as_str()));
        assert_eq!(holder.liveness(), Liveness::Running);
        assert!(holder.says(&format!("{}\n", LockHolder::this_process())));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_holder_gone_from_this_machine_is_told_from_one_elsewhere() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = object_lock(&format!("{pid} on {}", host_name()));
        assert_eq!(
            gone.liveness(),
            Liveness::Gone(format!("process {pid} no longer runs on this machine"))
        );
        let elsewhere = object_lock(&format!("{pid} on not-{}", host_name()));
        assert_eq!(elsewhere.liveness(), Liveness::Unknown);
        let rebooted = object_lock(&format!(
            "{} on {} boot=not-this-boot",
            std::process::id(),
            host_name()
        ));
        assert!(matches!(rebooted.liveness(), Liveness::Gone(why) if why.contains("restarted")));
        let reused = object_lock(&format!(
            "{} on {} start=1",
            std::process::id(),
            host_name()
        ));
        assert!(
            matches!(reused.liveness(), Liveness::Gone(why) if why.contains("another program"))
        );
    }

    #[test]
    fn locks_that_say_little_are_judged_by_what_they_are() {
        // A file lock found held is held by a live process, whatever it says.
        let file =
            |text: &str| LockHolder::read(PathBuf::from(".ofconvert-lock"), text, None, true);
        assert_eq!(file("").liveness(), Liveness::Running);
        assert_eq!(file("").to_string(), "a process it does not name");
        assert_eq!(file("4242").liveness(), Liveness::Running);
        // Unless it is held from another machine, over a network file system.
        assert_eq!(
            file(&format!("4242 on not-{}", host_name())).liveness(),
            Liveness::Unknown
        );
        let object = object_lock("4242");
        assert_eq!(object.liveness(), Liveness::Unknown);
        assert_eq!(object.to_string(), "process 4242");
        let garbled = object_lock("written by hand");
        assert_eq!(garbled.pid, None);
        assert_eq!(garbled.to_string(), "\"written by hand\"");
    }
}
