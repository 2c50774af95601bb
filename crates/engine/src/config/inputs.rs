//! Several inputs for one conversion (`tf2of IN... OUT`, what a shell glob gives), local
//! paths and URLs alike: record files (or objects) named one by one are taken as their
//! directory (or prefix) would be, keeping only them; each directory or prefix named
//! becomes `OUT/<its name>`, as `cp -r` would place it, and so do the folders of files named
//! one by one from several folders (`data/*/train-*.tfrecord`).

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
    /// becomes `OUT/<its name>`; files named one by one from several directories (or
    /// prefixes) are taken as each directory would be when named, keeping only them.
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
        let mut names = BTreeSet::new();
        // Files named one by one from one folder are planned as it would be, into OUT; from
        // several (a glob over folders), each folder's as it would be when named, into
        // OUT/<its name>.
        let file_groups = group_by(files, |file| local_parent(file));
        let object_groups = group_by(objects, |(url, _)| object_parent(url).0);
        match (&file_groups[..], &object_groups[..]) {
            ([], []) => {}
            ([(_, files)], []) => plans.push(self.plan_files(files, &self.output, options)?),
            ([], [(_, objects)]) => {
                plans.push(self.plan_objects(objects, &self.output, options)?)
            }
            _ => {
                for (dir, files) in &file_groups {
                    let name = self.place(&mut names, dir.file_name(), dir)?;
                    let mut planned = self.plan_files(files, &self.output.join(&name), options)?;
                    self.name_as_placed(&mut planned);
                    plans.push(planned);
                }
                for (prefix, objects) in &object_groups {
                    let prefix = Path::new(prefix);
                    let name = self.place(&mut names, url_name(prefix).as_deref(), prefix)?;
                    let mut planned =
                        self.plan_objects(objects, &self.output.join(&name), options)?;
                    self.name_as_placed(&mut planned);
                    plans.push(planned);
                }
            }
        }
        for dir in dirs {
            let name = if is_url(dir) {
                url_name(dir)
            } else {
                std::fs::canonicalize(dir)
                    .ok()
                    .and_then(|path| path.file_name().map(|name| name.to_os_string()))
            };
            let name = self.place(&mut names, name.as_deref(), dir)?;
            let mut planned = plan(dir, &self.output.join(name), options)?;
            self.name_as_placed(&mut planned);
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

    /// The name under the output of the input `path` (a directory, a prefix, the folder of
    /// files named one by one), `name`; refused when it has none, or another input already
    /// took it (in `taken`).
    fn place(
        &self,
        taken: &mut BTreeSet<std::ffi::OsString>,
        name: Option<&std::ffi::OsStr>,
        path: &Path,
    ) -> Result<std::ffi::OsString, Error> {
        let name = name
            .map(std::ffi::OsStr::to_os_string)
            .ok_or_else(|| self.usage(format!("{}: a directory without a name", path.display())))?;
        if !taken.insert(name.clone()) {
            return Err(self.usage(format!(
                "two inputs would go to {}: directories, or folders of files named one by one, \
                 both named {} (the second is {}); convert them one at a time, or name them \
                 apart",
                self.output.join(&name).display(),
                name.to_string_lossy(),
                path.display(),
            )));
        }
        Ok(name)
    }

    /// Names the datasets of `planned` as placed under the output: `big/extra`, `big` for the
    /// root of `big`.
    fn name_as_placed(&self, planned: &mut Plan) {
        for dataset in &mut planned.datasets {
            if let Ok(relative) = dataset.output_dir.strip_prefix(&self.output) {
                dataset.name = slash_path(relative);
            }
        }
    }

    /// Files named one by one, all in one directory: planned as it would be into `output`,
    /// keeping only them.
    fn plan_files(
        &self,
        files: &[&PathBuf],
        output: &Path,
        options: &Options,
    ) -> Result<Plan, Error> {
        for file in files {
            if !file.exists() {
                return Err(Error::new(ErrorKind::InputMissing).in_file(file));
            }
        }
        let dir = local_parent(files[0]);
        let named: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|file| std::fs::canonicalize(file).ok())
            .collect();
        let is_named =
            |path: &Path| std::fs::canonicalize(path).is_ok_and(|path| named.contains(&path));
        let mut plan = plan(&dir, output, options)?;
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

    /// Objects named one by one, all under one prefix: planned as it would be into `output`,
    /// holding only them (the prefix is not listed: an HTTP server may list nothing, a bucket
    /// may hold much else).
    fn plan_objects(
        &self,
        objects: &[(&PathBuf, u64)],
        output: &Path,
        options: &Options,
    ) -> Result<Plan, Error> {
        let dir = object_parent(objects[0].0).0;
        let mut listed: Vec<Listed> = objects
            .iter()
            .map(|(url, size)| Listed {
                path: url.to_path_buf(),
                name: object_parent(url).1,
                size: *size,
                version: None,
                changed: None,
            })
            .collect();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        listed.dedup_by(|a, b| a.name == b.name);
        let mut listing = Listing::default();
        listing.directories.insert(PathBuf::new(), listed);
        plan_listed(Path::new(&dir), Some(listing), output, options)
    }
}

/// The directory of a file named one by one, as the file system names it.
fn local_parent(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new(""));
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf())
}

/// The prefix of an object named one by one, and its name under it.
fn object_parent(url: &Path) -> (String, String) {
    let text = url.to_string_lossy();
    let (parent, name) = text.rsplit_once('/').unwrap_or(("", &text));
    (parent.to_owned(), name.to_owned())
}

/// `items` in groups of one `key`, in the order each key is first met.
fn group_by<T, K: PartialEq>(items: Vec<T>, key: impl Fn(&T) -> K) -> Vec<(K, Vec<T>)> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    for item in items {
        let found = key(&item);
        match groups.iter_mut().find(|(key, _)| *key == found) {
            Some((_, group)) => group.push(item),
            None => groups.push((found, vec![item])),
        }
    }
    groups
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
