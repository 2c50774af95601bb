//! Putting new files in place of a directory's old ones all at once or not at all, so that a
//! failure at any step leaves the old files as they were, and a kill at any step leaves what
//! the next run puts back or finishes: SQLite's rollback journal, for a directory of files.
//! One replacement publishes a dataset (its parts, the files that came with it, its
//! manifest), or the splits of a TFDS dataset that share a folder together with the folder's
//! metadata, so that the folder holds the old splits or the new ones, never a mix.
//!
//! A replacement, numbered by an [`id`](layout::unique_id) of its own:
//!
//! 1. writes its journal (`.ofconvert-TAGswap-ID.out.json`): the old files and the hidden
//!    names they are set aside under, the new files and their names;
//! 2. stages the small files it puts last (manifests, TFDS metadata) under temporary names
//!    where renames are cheap (in an object store their bytes wait in memory);
//! 3. sets every old file aside (`.ofconvert-TAGold-ID.NAME`), the old manifests first:
//!    every file the replacement puts one in place of, and every file of the old datasets;
//! 4. renames its journal `...in.json`: every old file is aside;
//! 5. renames each new file to its name, then the staged small files, manifests last (in a
//!    store, puts them): once the last manifest is in place, the replacement is done, and
//!    never undone (a reader that found a manifest saw the dataset it stays);
//! 6. renames its journal `...done.json`, which says so at once;
//! 7. removes the old files and the journal.
//!
//! A step that fails before the manifests are all in place is undone, step by step, in the
//! other order. Should undoing
//! fail too (a disk gone read-only), or the process be killed, the journal stays, and
//! [`recover`] (which every later run on the directory calls before it touches anything)
//! finishes what it finds: done (the marker, or every new manifest in place), the old files
//! are removed; otherwise the old files are put back and the new ones back under their
//! temporary names. In an object store a rename is a
//! copy and a delete, and a kill between the two leaves both: the journal's phase tells which
//! of them is the one to keep.

use std::io;
use std::path::{Path, PathBuf};

use ofconvert_tfrecord::crc::crc32c;
use serde::{Deserialize, Serialize};

use crate::naming::layout::{self, SwapPhase};
use crate::storage::{Durability, Storage};

/// What a replacement does.
#[derive(Debug, Default)]
pub(crate) struct Replacement {
    /// Each new file waiting under a temporary name in the directory, and its name.
    pub(crate) new: Vec<(String, String)>,
    /// The small files put in place last, in order (manifests last of all): name, bytes.
    pub(crate) last: Vec<(String, Vec<u8>)>,
    /// The files of the datasets there before, which go; the old manifests among them go
    /// first. (Whatever file has the name of a new one is set aside too.)
    pub(crate) old: Vec<String>,
    /// The names of the files in the directory now.
    pub(crate) present: Vec<String>,
}

/// The journal of a replacement.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// Each old file and the hidden name it is set aside under, in order.
    old: Vec<(String, String)>,
    /// Each new file's temporary name and its name, in order, the staged small files last.
    new: Vec<(String, String)>,
    /// How many of the last of `new` are staged small files.
    staged: usize,
    /// The small files put in place last where renames are copies (an object store), by
    /// name, in order.
    put: Vec<String>,
    /// The new manifests, by name, with the CRC-32C of their bytes: once every one is in
    /// place, the new datasets are published, and the replacement is done (a reader that
    /// found a manifest never sees it undone).
    #[serde(default)]
    manifests: Vec<(String, u32)>,
}

impl Journal {
    /// The staged small files: temporary name, name.
    fn staged(&self) -> &[(String, String)] {
        &self.new[self.new.len().saturating_sub(self.staged)..]
    }
}

/// A replacement that could not be carried out, and what it left.
#[derive(Debug)]
pub(crate) struct Failed {
    /// The operation that failed, on the path it named.
    pub(crate) path: PathBuf,
    pub(crate) err: io::Error,
    /// When it could not be undone either: what is left in the directory, in words, and
    /// what puts it right. `None`: the directory is as it was before (the new files back
    /// under their temporary names).
    pub(crate) left: Option<String>,
}

/// Replaces what is in `dir` as `replacement` says, the replacement's own files named with
/// `tag` ([`layout::temp_tag`]).
pub(crate) fn replace(
    storage: &dyn Storage,
    dir: &Path,
    tag: &str,
    replacement: &Replacement,
) -> Result<(), Failed> {
    let id = layout::unique_id();
    let cheap = storage.renames_cheaply();
    let mut staged: Vec<(String, String)> = Vec::new();
    let mut put = Vec::new();
    for (name, _) in &replacement.last {
        match cheap {
            true => staged.push((layout::staged_name(name), name.clone())),
            false => put.push(name.clone()),
        }
    }
    let present = &replacement.present;
    let mut aside: Vec<(String, String)> = Vec::new();
    let mut set_aside = |name: &str| {
        if present.iter().any(|there| there == name) && !aside.iter().any(|(old, _)| old == name) {
            aside.push((name.to_owned(), layout::aside_name(tag, &id, name)));
        }
    };
    // The old manifests first: a directory between the two holds none of them.
    let last_names = replacement.last.iter().rev().map(|(name, _)| name.as_str());
    for name in last_names.filter(|name| layout::is_manifest(name)) {
        set_aside(name);
    }
    for name in &replacement.old {
        if layout::is_manifest(name) {
            set_aside(name);
        }
    }
    let new_names = replacement.new.iter().map(|(_, name)| name.as_str());
    let last_names = replacement.last.iter().map(|(name, _)| name.as_str());
    for name in replacement
        .old
        .iter()
        .map(String::as_str)
        .chain(new_names)
        .chain(last_names)
    {
        set_aside(name);
    }
    let manifests = replacement
        .last
        .iter()
        .filter(|(name, _)| layout::is_manifest(name))
        .map(|(name, bytes)| (name.clone(), crc32c(bytes)))
        .collect();
    let journal = Journal {
        old: aside,
        staged: staged.len(),
        new: replacement.new.iter().cloned().chain(staged).collect(),
        put,
        manifests,
    };
    let mut run = Run {
        storage,
        dir,
        id: &id,
        tag,
        journal: &journal,
        done: Done::default(),
    };
    let forward = run.forward(replacement);
    match forward {
        Ok(()) => {
            run.clean_up();
            Ok(())
        }
        Err((path, err)) => {
            // Once the manifests are in place (a rename or a put whose answer was lost may
            // have been done all the same), the replacement is done: what failed after is
            // the marker or a sync.
            if run.done.journal >= Some(SwapPhase::In)
                && (run.manifests_placed() || run.phase_done())
            {
                run.clean_up();
                return Ok(());
            }
            let left = run.undo().err();
            Err(Failed { path, err, left })
        }
    }
}

/// How far a replacement got.
#[derive(Default)]
struct Done {
    /// Small files staged under temporary names.
    staged: usize,
    journal: Option<SwapPhase>,
    /// Old files set aside, new files in place, small files put.
    old: usize,
    new: usize,
    put: usize,
}

/// A replacement being carried out, or found by [`recover`].
struct Run<'a> {
    storage: &'a dyn Storage,
    dir: &'a Path,
    id: &'a str,
    tag: &'a str,
    journal: &'a Journal,
    done: Done,
}

type StepError = (PathBuf, io::Error);

impl Run<'_> {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn journal_path(&self, phase: SwapPhase) -> PathBuf {
        self.path(&layout::swap_journal_name(self.tag, self.id, phase))
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), StepError> {
        let from = self.path(from);
        self.storage
            .rename(&from, &self.path(to))
            .map_err(|err| (from, err))
    }

    fn sync(&self) -> Result<(), StepError> {
        self.storage
            .sync_dir(self.dir)
            .map_err(|err| (self.dir.to_path_buf(), err))
    }

    /// Step 2: the small files staged where renames are cheap.
    fn stage(&mut self, replacement: &Replacement) -> Result<(), StepError> {
        if !self.storage.renames_cheaply() {
            return Ok(());
        }
        for ((temp, _), (_, bytes)) in self.journal.staged().iter().zip(&replacement.last) {
            // Counted first: undoing removes what a failed write left of it too.
            self.done.staged += 1;
            let path = self.path(temp);
            write_file(self.storage, &path, bytes).map_err(|err| (path, err))?;
        }
        Ok(())
    }

    /// Steps 1 to 6, the journal first: whatever a step leaves, the journal names.
    fn forward(&mut self, replacement: &Replacement) -> Result<(), StepError> {
        let path = self.journal_path(SwapPhase::Out);
        let bytes = serde_json::to_vec(self.journal).map_err(io::Error::other);
        // Noted first: undoing removes what a failed write left of it too.
        self.done.journal = Some(SwapPhase::Out);
        bytes
            .and_then(|bytes| write_file(self.storage, &path, &bytes))
            .map_err(|err| (path, err))?;
        self.sync()?;
        self.stage(replacement)?;
        for (name, aside) in &self.journal.old {
            self.rename(name, aside)?;
            self.done.old += 1;
        }
        self.next_phase(SwapPhase::Out, SwapPhase::In)?;
        for (temp, name) in &self.journal.new {
            self.rename(temp, name)?;
            self.done.new += 1;
        }
        let put = replacement
            .last
            .iter()
            .filter(|(name, _)| self.journal.put.contains(name));
        for (name, bytes) in put {
            let path = self.path(name);
            self.storage
                .put_new(&path, bytes)
                .map_err(|err| (path, err))?;
            self.done.put += 1;
        }
        self.sync()?;
        self.next_phase(SwapPhase::In, SwapPhase::Done)?;
        self.sync()
    }

    fn next_phase(&mut self, from: SwapPhase, to: SwapPhase) -> Result<(), StepError> {
        let (from_name, to_name) = (
            layout::swap_journal_name(self.tag, self.id, from),
            layout::swap_journal_name(self.tag, self.id, to),
        );
        self.rename(&from_name, &to_name)?;
        self.done.journal = Some(to);
        Ok(())
    }

    /// Whether the journal says Done, as the last rename would have left it (a rename whose
    /// answer was lost may have been done all the same).
    fn phase_done(&self) -> bool {
        matches!(
            self.storage.size(&self.journal_path(SwapPhase::Done)),
            Ok(Some(_))
        )
    }

    /// Whether every new manifest is in place, with its bytes: the replacement's commit.
    fn manifests_placed(&self) -> bool {
        !self.journal.manifests.is_empty()
            && self.journal.manifests.iter().all(|(name, crc)| {
                matches!(
                    self.storage.read(&self.path(name)),
                    Ok(Some(bytes)) if crc32c(&bytes) == *crc
                )
            })
    }

    /// Step 7: what is left is of no use once the new files are in place. Should an old
    /// file not go, the journal stays (done), for the next run to finish the removal.
    fn clean_up(&self) {
        for (_, aside) in &self.journal.old {
            if self.storage.remove(&self.path(aside)).is_err() {
                return;
            }
        }
        for phase in [SwapPhase::Done, SwapPhase::In, SwapPhase::Out] {
            let _ = self.storage.remove(&self.journal_path(phase));
        }
    }

    /// Undoes what was done, last first: the small files put removed, the new files back
    /// under their temporary names, the old ones back under theirs, the staged files and the
    /// journal removed. On failure, says what is left.
    fn undo(&mut self) -> Result<(), String> {
        let storage = self.storage;
        let undone = (|| -> Result<(), StepError> {
            while self.done.put > 0 {
                let path = self.path(&self.journal.put[self.done.put - 1]);
                storage.remove(&path).map_err(|err| (path, err))?;
                self.done.put -= 1;
            }
            while self.done.new > 0 {
                let (temp, name) = &self.journal.new[self.done.new - 1];
                self.rename(name, temp)?;
                self.done.new -= 1;
            }
            while self.done.old > 0 {
                let (name, aside) = &self.journal.old[self.done.old - 1];
                self.rename(aside, name)?;
                self.done.old -= 1;
            }
            while self.done.staged > 0 {
                let path = self.path(&self.journal.staged()[self.done.staged - 1].0);
                storage.remove(&path).map_err(|err| (path, err))?;
                self.done.staged -= 1;
            }
            for phase in [SwapPhase::In, SwapPhase::Out] {
                let path = self.journal_path(phase);
                storage.remove(&path).map_err(|err| (path, err))?;
            }
            self.done.journal = None;
            Ok(())
        })();
        undone.map_err(|(path, err)| self.what_is_left(&path, &err))
    }

    /// What a replacement that could be neither done nor undone leaves, in words.
    fn what_is_left(&self, path: &Path, err: &io::Error) -> String {
        let plural = |n: usize| if n == 1 { ("", "is") } else { ("s", "are") };
        let mut left = Vec::new();
        let placed = self.done.new + self.done.put;
        if placed > 0 {
            let (s, are) = plural(placed);
            left.push(format!("{placed} new file{s} {are} in place"));
        }
        if self.done.old > 0 {
            let (s, are) = plural(self.done.old);
            left.push(format!(
                "{} file{s} of what was there before {are} set aside under hidden names",
                self.done.old
            ));
        }
        if let Some(phase) = self.done.journal {
            left.push(format!(
                "the replacement's journal {} lists them",
                layout::swap_journal_name(self.tag, self.id, phase)
            ));
        }
        if left.is_empty() {
            left.push("what was there before is in place".to_owned());
        }
        format!(
            "undoing the replacement failed too ({}: {err}): {}; a run with --resume or \
             --overwrite finishes or undoes it first",
            path.display(),
            left.join(", ")
        )
    }
}

/// What [`recover`] found and did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// Replacements found done: their old files removed.
    pub(crate) finished: usize,
    /// Replacements found unfinished: undone, the old files put back.
    pub(crate) undone: usize,
}

/// Finishes or undoes every replacement a killed or failed run left in `dir` with the tag
/// `tag`: one whose journal says done is finished (the old files removed), any other is
/// undone (the old files put back under their names, the new ones back under their
/// temporary names).
pub(crate) fn recover(storage: &dyn Storage, dir: &Path, tag: &str) -> io::Result<Recovered> {
    let mut recovered = Recovered::default();
    let names = storage.file_names(dir)?;
    let mut found: Vec<(String, SwapPhase)> = Vec::new();
    for name in &names {
        let Some((id, phase)) = layout::swap_journal_of(name, tag) else {
            continue;
        };
        match found.iter_mut().find(|(seen, _)| *seen == id) {
            // In a store, a kill between the copy and the delete of the journal's rename
            // leaves both: the copy is complete, and is the later phase.
            Some(entry) => entry.1 = entry.1.max(phase),
            None => found.push((id, phase)),
        }
    }
    for (id, phase) in found {
        let journal_name = layout::swap_journal_name(tag, &id, phase);
        let Some(bytes) = storage.read(&dir.join(&journal_name))? else {
            continue;
        };
        let run_of = |journal| Run {
            storage,
            dir,
            id: &id,
            tag,
            journal,
            done: Done::default(),
        };
        // A journal cut short by a kill was written before anything was set aside: the
        // staged files it would name are temporary files the run sweeps.
        match serde_json::from_slice::<Journal>(&bytes) {
            Ok(journal) => {
                let run = run_of(&journal);
                // Killed between the last manifest and the marker, it is done all the same.
                let done =
                    phase == SwapPhase::Done || (phase == SwapPhase::In && run.manifests_placed());
                if done {
                    for (_, aside) in &journal.old {
                        storage.remove(&dir.join(aside))?;
                    }
                    recovered.finished += 1;
                } else {
                    put_back(&run, phase, &names)?;
                    recovered.undone += 1;
                }
            }
            Err(_) if phase == SwapPhase::Out => {}
            Err(err) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{journal_name}: {err}"),
                ))
            }
        }
        for phase in [SwapPhase::Done, SwapPhase::In, SwapPhase::Out] {
            storage.remove(&dir.join(layout::swap_journal_name(tag, &id, phase)))?;
        }
    }
    Ok(recovered)
}

/// Undoes the replacement `run` from what is in the directory (`names`, listed before),
/// its journal found in `phase`.
fn put_back(run: &Run<'_>, phase: SwapPhase, names: &[String]) -> io::Result<()> {
    let storage = run.storage;
    let there = |name: &str| -> io::Result<bool> {
        Ok(names.iter().any(|found| found == name) || storage.size(&run.path(name))?.is_some())
    };
    // From phase In on every old file is aside: a file under a new name is new (in a
    // store, perhaps a copy whose temporary name is still there too).
    if phase == SwapPhase::In {
        for name in run.journal.put.iter().rev() {
            storage.remove(&run.path(name))?;
        }
        for (temp, name) in run.journal.new.iter().rev() {
            match (there(temp)?, there(name)?) {
                (true, true) => storage.remove(&run.path(name))?,
                (false, true) => storage.rename(&run.path(name), &run.path(temp))?,
                _ => {}
            }
        }
    }
    for (name, aside) in run.journal.old.iter().rev() {
        match (there(aside)?, there(name)?) {
            // Out: the old file's copy was made, its delete not (a store).
            (true, true) if phase == SwapPhase::Out => storage.remove(&run.path(aside))?,
            (true, _) => storage.rename(&run.path(aside), &run.path(name))?,
            _ => {}
        }
    }
    for (temp, _) in run.journal.staged() {
        storage.remove(&run.path(temp))?;
    }
    storage.sync_dir(run.dir)
}

/// Writes `bytes` as the file `path`, synced.
fn write_file(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = storage.create(path, Durability::Synced)?;
    io::Write::write_all(&mut file, bytes)?;
    file.finish().map(|_| ())
}
