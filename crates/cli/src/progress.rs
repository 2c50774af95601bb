//! Drawing a conversion's progress: a bar on a terminal, plain lines otherwise. Only the
//! main thread calls this; the engine's workers send their events over a channel, and add
//! up their progress for it to draw.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ofconvert_engine::{DatasetStatus, Event, ProgressFn};

pub struct Progress {
    mode: Mode,
    datasets: usize,
    done: usize,
    records: u64,
    /// Whether each finished dataset gets a line of its own (`-v`); else the summary that
    /// follows is where a dataset is named, and the bar only shows the last one finished.
    each_dataset: bool,
    /// The last dataset finished, for the bar's message.
    last: Option<String>,
}

enum Mode {
    Quiet,
    Plain,
    /// The bar appears when the conversion starts.
    Bar(Option<ProgressBar>),
}

impl Progress {
    /// Quiet, or a bar when stderr is a terminal, or plain lines.
    pub fn new(quiet: bool) -> Progress {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar(None)
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            datasets: 0,
            done: 0,
            records: 0,
            each_dataset: false,
            last: None,
        }
    }

    /// With a line for each dataset as it finishes (`-v`).
    pub fn each_dataset(mut self, each_dataset: bool) -> Progress {
        self.each_dataset = each_dataset;
        self
    }

    /// For the inspecting commands: a bar when stderr is a terminal, else nothing (their
    /// output is the report).
    pub fn bar_only(quiet: bool) -> Progress {
        let mut progress = Progress::new(quiet);
        if matches!(progress.mode, Mode::Plain) {
            progress.mode = Mode::Quiet;
        }
        progress
    }

    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Started {
                datasets,
                files,
                bytes,
            } => {
                self.datasets = datasets;
                match &mut self.mode {
                    Mode::Quiet => {}
                    Mode::Plain => eprintln!(
                        "converting {datasets} dataset{} ({files} file{}, {})",
                        plural(datasets),
                        plural(files),
                        HumanBytes(bytes)
                    ),
                    Mode::Bar(bar) => {
                        let new = ProgressBar::with_draw_target(
                            Some(bytes),
                            ProgressDrawTarget::stderr(),
                        );
                        let style = ProgressStyle::with_template(
                            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} \
                             ({bytes_per_sec}, ETA {eta}) {msg}",
                        );
                        if let Ok(style) = style {
                            new.set_style(style.progress_chars("=> "));
                        }
                        // Drawn at once: a short run ends before the first steady tick, and
                        // once the steady ticker runs, a manual tick is ignored.
                        new.tick();
                        new.enable_steady_tick(Duration::from_millis(200));
                        *bar = Some(new);
                        self.update_message();
                    }
                }
            }
            Event::Progress { bytes, records } => {
                self.records += records;
                if let Mode::Bar(Some(bar)) = &self.mode {
                    bar.inc(bytes);
                    if records > 0 {
                        self.update_message();
                    }
                }
            }
            Event::DatasetDone {
                name,
                status,
                records,
                parts,
                error: _,
                files_only,
            } => {
                // Datasets kept or failed before the conversion started are not among the
                // ones counted, nor folders of files without records.
                let counted = status != DatasetStatus::Kept && !files_only;
                let counter = if self.datasets > 0 && counted {
                    self.done += 1;
                    format!("[{}/{}] ", self.done, self.datasets)
                } else {
                    String::new()
                };
                let line = match status {
                    DatasetStatus::Converted if files_only => {
                        format!("carried the files of {name} (no records)")
                    }
                    DatasetStatus::Converted => format!(
                        "converted {name}: {records} record{} in {parts} part{}",
                        plural_u64(records),
                        plural(parts)
                    ),
                    DatasetStatus::Kept => {
                        format!("kept {name}: complete from an earlier run")
                    }
                    // Why is said once, with the other failures, when the run ends.
                    DatasetStatus::Failed => format!("FAILED {name} (why: at the end)"),
                    DatasetStatus::Interrupted => format!("interrupted {name}: not written"),
                };
                match &self.mode {
                    Mode::Quiet => {}
                    _ if !self.each_dataset => self.last = Some(format!("{counter}{line}")),
                    Mode::Plain | Mode::Bar(None) => eprintln!("{counter}{line}"),
                    Mode::Bar(Some(bar)) => bar.println(format!("{counter}{line}")),
                }
                self.update_message();
            }
        }
    }

    fn update_message(&self) {
        if let Mode::Bar(Some(bar)) = &self.mode {
            // Finished datasets are printed above the bar (-v) or the last one shown on it;
            // the summary names them all when the run ends.
            let mut message = String::new();
            if self.records > 0 {
                message = format!("{} records", self.records);
            }
            if let Some(last) = &self.last {
                message = format!("{message}; {last}");
            }
            if !message.is_empty() {
                bar.set_message(message);
            }
        }
    }

    /// Removes the bar before the report is printed.
    pub fn finish(&mut self) {
        if let Mode::Bar(Some(bar)) = &self.mode {
            bar.finish_and_clear();
        }
    }

    /// Runs `work` on a worker thread, handing it the function that reports its events,
    /// while this thread draws them (only the main thread talks to the terminal); removes
    /// the bar and returns what `work` returned. A panic in `work` goes on here.
    pub fn drive<T: Send>(mut self, work: impl FnOnce(ProgressFn<'_>) -> T + Send) -> T {
        // Progress comes often (each buffer read, every few thousand records): it is added
        // up where it happens and drawn a few times a second, so that no worker wakes this
        // thread for it. The other events come through the channel, in order.
        let (bytes, records) = (AtomicU64::new(0), AtomicU64::new(0));
        let (sender, receiver) = mpsc::channel::<Event>();
        let result = thread::scope(|scope| {
            let (bytes, records) = (&bytes, &records);
            let worker = scope.spawn(move || {
                let report = |event: Event| match event {
                    Event::Progress {
                        bytes: read,
                        records: converted,
                    } => {
                        bytes.fetch_add(read, Ordering::Relaxed);
                        records.fetch_add(converted, Ordering::Relaxed);
                    }
                    // The receiver lives until this thread ends; a failed send cannot happen.
                    event => drop(sender.send(event)),
                };
                work(&report)
            });
            loop {
                let next = receiver.recv_timeout(DRAW_EVERY);
                let (bytes, records) = (
                    bytes.swap(0, Ordering::Relaxed),
                    records.swap(0, Ordering::Relaxed),
                );
                if bytes > 0 || records > 0 {
                    self.handle(Event::Progress { bytes, records });
                }
                match next {
                    Ok(event) => self.handle(event),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            worker.join()
        });
        self.finish();
        match result {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// How often progress that came without another event is drawn.
const DRAW_EVERY: Duration = Duration::from_millis(100);

pub fn plural(n: usize) -> &'static str {
    plural_u64(n as u64)
}

pub fn plural_u64(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
