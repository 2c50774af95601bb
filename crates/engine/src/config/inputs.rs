//! Several inputs for one conversion (`tf2of IN... OUT`, what a shell glob gives): record
//! files named one by one are taken as their directory would be, keeping only them; each
//! directory named becomes `OUT/<its name>`, as `cp -r` would place it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::convert::ConvertConfig;
use crate::error::{Error, ErrorKind};
use crate::options::Options;
use crate::planning::plan::{plan, Plan};

impl ConvertConfig {
    /// The plan of every input into the output: one input is planned as it is; several
    /// (what a shell glob gives) as `cp -r` places them: record files named one by one are
    /// taken as their directory would be, keeping only them, and each directory named
    /// becomes `OUT/<its name>`.
    pub(super) fn plan_inputs(&self, options: &Options) -> Result<Plan, Error> {
        if let [input] = &self.inputs[..] {
            return plan(input, &self.output, options);
        }
        let (dirs, files): (Vec<&PathBuf>, Vec<&PathBuf>) =
            self.inputs.iter().partition(|p| p.is_dir());
        let mut plans = Vec::new();
        if !files.is_empty() {
            plans.push(self.plan_files(&files, options)?);
        }
        let mut names = BTreeSet::new();
        for dir in dirs {
            let name = std::fs::canonicalize(dir)
                .ok()
                .and_then(|path| path.file_name().map(|name| name.to_os_string()))
                .ok_or_else(|| {
                    self.usage(format!("{}: a directory without a name", dir.display()))
                })?;
            if !names.insert(name.clone()) {
                return Err(self.usage(format!(
                    "two input directories are named {}: each would go to {}",
                    name.to_string_lossy(),
                    self.output.join(&name).display()
                )));
            }
            plans.push(plan(dir, &self.output.join(name), options)?);
        }
        let mut merged = plans.remove(0);
        merged.output = self.output.clone();
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
            return Err(self.usage(
                "record files named one by one must be in one directory; name the directories \
                 instead"
                    .to_owned(),
            ));
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
}
