//! Several inputs for one conversion (`tf2of IN... OUT`, what a shell glob gives), local
//! paths and URLs alike: record files (or objects) named one by one are taken as their
//! directory (or prefix) would be, keeping only them; each directory or prefix named
//! becomes `OUT/<its name>`, as `cp -r` would place it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::convert::ConvertConfig;
use crate::error::{Error, ErrorKind};
use crate::options::Options;
use crate::planning::plan::{plan, plan_listed, Plan};
use crate::running::summary::slash_path;
use crate::storage::object::{is_url, storage_for, ByPath};
use crate::storage::{Listed, Listing};

impl ConvertConfig {
    /// The plan of every input into the output: one input is planned as it is; several
    /// (what a shell glob gives) as `cp -r` places them: record files named one by one are
    /// taken as their directory would be, keeping only them, and each directory named
    /// becomes `OUT/<its name>`.
    pub(super) fn plan_inputs(&self, options: &Options) -> Result<Plan, Error> {
        if let [input] = &self.inputs[..] {
            return plan(input, &self.output, options);
        }
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        let mut objects = Vec::new();
        for input in &self.inputs {
            if !is_url(input) {
                if input.is_dir() {
                    dirs.push(input);
                } else {
                    files.push(input);
                }
                continue;
            }
            // A prefix with objects under it is a directory; else an object is a file named
            // one by one (and what is neither, missing, is said so when planned).
            let (storage, url) = storage_for(input).map_err(|err| Error::io(input, err))?;
            let names_object = url::Url::parse(&url.to_string_lossy())
                .is_ok_and(|parsed| !parsed.path().trim_matches('/').is_empty());
            let prefix = !names_object
                || url.to_string_lossy().ends_with('/')
                || !storage
                    .entries(&url)
                    .map_err(|err| Error::io(input, err))?
                    .is_empty();
            let size = if prefix {
                None
            } else {
                storage.size(&url).map_err(|err| Error::io(input, err))?
            };
            match size {
                Some(size) => objects.push((input, size)),
                None => dirs.push(input),
            }
        }
        let mut plans = Vec::new();
        match (files.is_empty(), objects.is_empty()) {
            (true, true) => {}
            (false, true) => plans.push(self.plan_files(&files, options)?),
            (true, false) => plans.push(self.plan_objects(&objects, options)?),
            (false, false) => return Err(self.files_apart()),
        }
        let mut names = BTreeSet::new();
        for dir in dirs {
            let name = if is_url(dir) {
                url_name(dir)
            } else {
                std::fs::canonicalize(dir)
                    .ok()
                    .and_then(|path| path.file_name().map(|name| name.to_os_string()))
            }
            .ok_or_else(|| self.usage(format!("{}: a directory without a name", dir.display())))?;
            if !names.insert(name.clone()) {
                return Err(self.usage(format!(
                    "two input directories are named {}: each would go to {}",
                    name.to_string_lossy(),
                    self.output.join(&name).display()
                )));
            }
            let mut planned = plan(dir, &self.output.join(name), options)?;
            // Named as placed under the output: `big/extra`, `big` for the root of `big`.
            for dataset in &mut planned.datasets {
                if let Ok(relative) = dataset.output_dir.strip_prefix(&self.output) {
                    dataset.name = slash_path(relative);
                }
            }
            plans.push(planned);
        }
        let mut merged = plans.remove(0);
        merged.output = self.output.clone();
        if self.inputs.iter().any(|input| is_url(input)) {
            // Inputs in several places: each read from its own.
            merged.input_storage = Arc::new(ByPath);
        }
        for plan in plans {
            merged.datasets.extend(plan.datasets);
            merged.skipped.extend(plan.skipped);
            merged.unreadable.extend(plan.unreadable);
        }
        Ok(merged)
    }

    /// Files named one by one: planned as their directory, keeping only them.
    fn plan_files(&self, files: &[&PathBuf], options: &Options) -> Result<Plan, Error> {
        let parent = |file: &Path| -> PathBuf {
            let parent = file.parent().unwrap_or(Path::new(""));
            std::fs::canonicalize(if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            })
            .unwrap_or_else(|_| parent.to_path_buf())
        };
        for file in files {
            if !file.exists() {
                return Err(Error::new(ErrorKind::InputMissing).in_file(file));
            }
        }
        let dir = parent(files[0]);
        if files.iter().any(|file| parent(file) != dir) {
            return Err(self.files_apart());
        }
        let named: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|file| std::fs::canonicalize(file).ok())
            .collect();
        let is_named =
            |path: &Path| std::fs::canonicalize(path).is_ok_and(|path| named.contains(&path));
        let mut plan = plan(&dir, &self.output, options)?;
        for dataset in &mut plan.datasets {
            dataset.inputs.retain(|input| is_named(&input.path));
            dataset.side_files.retain(|side| is_named(&side.path));
        }
        plan.datasets.retain(|dataset| !dataset.inputs.is_empty());
        plan.skipped
            .retain(|skipped| is_named(Path::new(&skipped.path)));
        plan.unreadable
            .retain(|unreadable| is_named(Path::new(&unreadable.path)));
        Ok(plan)
    }

    /// Objects named one by one: planned as their prefix would be, holding only them (the
    /// prefix is not listed: an HTTP server may list nothing, a bucket may hold much else).
    fn plan_objects(&self, objects: &[(&PathBuf, u64)], options: &Options) -> Result<Plan, Error> {
        let parent = |url: &Path| -> (String, String) {
            let text = url.to_string_lossy();
            let (parent, name) = text.rsplit_once('/').unwrap_or(("", &text));
            (parent.to_owned(), name.to_owned())
        };
        let dir = parent(objects[0].0).0;
        let mut listed = Vec::new();
        for (url, size) in objects {
            let (parent, name) = parent(url);
            if parent != dir {
                return Err(self.files_apart());
            }
            listed.push(Listed {
                path: url.to_path_buf(),
                name,
                size: *size,
                version: None,
            });
        }
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        listed.dedup_by(|a, b| a.name == b.name);
        let mut listing = Listing::default();
        listing.directories.insert(PathBuf::new(), listed);
        plan_listed(Path::new(&dir), Some(listing), &self.output, options)
    }

    fn files_apart(&self) -> Error {
        self.usage(
            "record files named one by one must be in one directory; name the directories \
             instead"
                .to_owned(),
        )
    }
}

/// The name a prefix gets under the output: its last part (`b` for `s3://a/b/`), the
/// bucket's for a bucket.
fn url_name(url: &Path) -> Option<std::ffi::OsString> {
    let parsed = url::Url::parse(url.to_str()?).ok()?;
    let last = parsed
        .path()
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|last| !last.is_empty())
        .map(str::to_owned);
    last.or_else(|| parsed.host_str().map(str::to_owned))
        .map(Into::into)
}
