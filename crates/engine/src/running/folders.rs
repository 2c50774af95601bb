//! The splits of a TFDS dataset given back to one folder, published together: once every
//! split bound for the folder is done, the converted ones are put in place with the
//! folder's metadata in one replacement; when one of them failed, none is, and the folder
//! keeps what it held.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{error_chain, Error, ErrorKind};
use crate::manifest::Manifest;
use crate::options::Direction;
use crate::progress::DatasetStatus;
use crate::running::chunk::ChunkOutput;
use crate::running::job::{
    abandon_job, converted, fail_job, fail_leaving, kept_parts, lock, report_done, temp_paths,
    Context, DatasetRun, Job,
};
use crate::running::placing::put_in_place;
use crate::running::publish::{PublishFailed, Ready, Target};
use crate::running::summary::DatasetSummary;
use crate::running::tfds_info::folder_metadata;

impl Target<'_> {
    /// Whether the dataset is published with the others of its folder
    /// ([`publish_folders`]): a split of a TFDS dataset given back to the dataset's folder.
    pub(crate) fn in_folder_group(&self) -> bool {
        self.settings.direction == Direction::OfToTf && self.dataset.tfds.is_some()
    }
}

/// A split of a folder, as the run left it.
enum Member<'r, 'p> {
    /// Converted, its outputs parked until the folder is published.
    Parked(&'r Job<'p>, Vec<ChunkOutput>),
    /// Kept from an earlier run, or done with.
    Settled(&'r DatasetSummary),
    /// Failed, or interrupted, while it converted.
    Ended(DatasetStatus, String),
}

/// Publishes the splits `runs` parked, each folder's together with its metadata, or, when a
/// split of the folder failed or was interrupted, none of them.
pub(crate) fn publish_folders(context: &Context<'_>, runs: &[DatasetRun<'_>]) {
    let mut folders: BTreeMap<PathBuf, Vec<Member<'_, '_>>> = BTreeMap::new();
    for run in runs {
        let (dir, member) = match run {
            DatasetRun::Converting(job) if job.grouped => {
                let dir = job.target.dataset.output_dir.clone();
                let mut state = lock(&job.state);
                let member = match (state.parked.take(), &state.summary) {
                    (Some(outputs), _) => Member::Parked(job, outputs),
                    (None, Some(summary)) => Member::Ended(summary.status, summary.name.clone()),
                    (None, None) => continue,
                };
                (dir, member)
            }
            DatasetRun::Settled(summary) if summary.tfds => {
                (PathBuf::from(&summary.output_dir), Member::Settled(summary))
            }
            _ => continue,
        };
        folders.entry(dir).or_default().push(member);
    }
    for (dir, members) in folders {
        publish_folder(context, &dir, members);
    }
}

/// Publishes the parked splits of the folder `dir`, with its metadata; none of them when
/// one of `members` failed or was interrupted.
fn publish_folder(context: &Context<'_>, dir: &Path, members: Vec<Member<'_, '_>>) {
    let stopped = members.iter().find_map(|member| match member {
        Member::Ended(status, name) => Some((*status, name.clone())),
        Member::Settled(summary) if summary.status == DatasetStatus::Failed => {
            Some((DatasetStatus::Failed, summary.name.clone()))
        }
        _ => None,
    });
    let (parked, settled): (Vec<_>, Vec<_>) = members
        .into_iter()
        .filter(|member| !matches!(member, Member::Ended(..)))
        .partition(|member| matches!(member, Member::Parked(..)));
    let parked: Vec<(&Job<'_>, Vec<ChunkOutput>)> = parked
        .into_iter()
        .filter_map(|member| match member {
            Member::Parked(job, outputs) => Some((job, outputs)),
            _ => None,
        })
        .collect();
    if let Some((status, name)) = stopped {
        for (job, outputs) in parked {
            match status {
                DatasetStatus::Interrupted => abandon_job(context, job, outputs),
                _ => {
                    let why = format!("{name}, a split of the same folder, failed");
                    fail_job(context, job, not_published(dir, &why), outputs);
                }
            }
        }
        return;
    }
    let made: Vec<(&Job<'_>, Vec<PathBuf>, Result<Ready, PublishFailed>)> = parked
        .into_iter()
        .map(|(job, outputs)| {
            let temps = temp_paths(&outputs);
            lock(&job.state).kept_flags = kept_parts(&outputs);
            (job, temps, job.target.ready(outputs))
        })
        .collect();
    let unready = made
        .iter()
        .find_map(|(_, _, result)| result.as_ref().err().map(|failed| error_chain(&failed.err)));
    if let Some(why) = unready {
        for (job, temps, result) in made {
            let err = match result {
                Ok(ready) => {
                    for copy in &ready.copies {
                        copy.undo(context.storage);
                    }
                    not_published(dir, &format!("a split of the same folder failed: {why}"))
                }
                Err(failed) => failed.err,
            };
            job.remove_all(context.storage, temps);
            fail_leaving(context, job, err, Vec::new(), None);
        }
        return;
    }
    let (jobs, members): (Vec<_>, Vec<_>) = made
        .into_iter()
        .filter_map(|(job, temps, result)| Some(((job, temps), (&job.target, result.ok()?))))
        .unzip();
    if jobs.is_empty() {
        return;
    }
    let kept = settled.iter().filter_map(|member| match member {
        Member::Settled(summary) => summary.manifest.as_ref(),
        _ => None,
    });
    let manifests: Vec<&Manifest> = members
        .iter()
        .map(|(_, ready)| &ready.manifest)
        .chain(kept)
        .collect();
    let result = match folder_metadata(&manifests) {
        Ok(metadata) => put_in_place(context.storage, dir, members, metadata),
        Err(why) => {
            for (_, ready) in &members {
                for copy in &ready.copies {
                    copy.undo(context.storage);
                }
            }
            let why = format!("cannot write the TFDS metadata: {why}");
            Err(PublishFailed::undone(not_published(dir, &why)))
        }
    };
    match result {
        Ok(manifests) => {
            for ((job, _), manifest) in jobs.into_iter().zip(manifests) {
                let kept = std::mem::take(&mut lock(&job.state).kept_flags);
                let summary = converted(job, manifest, &kept);
                report_done(context, &summary);
                lock(&job.state).summary = Some(summary);
            }
        }
        Err(failed) => {
            let words = error_chain(&failed.err);
            for (job, temps) in jobs {
                if failed.left.is_none() {
                    job.remove_all(context.storage, temps);
                }
                let err =
                    Error::new(ErrorKind::Io(std::io::Error::other(words.clone()))).in_file(dir);
                fail_leaving(context, job, err, Vec::new(), failed.left.clone());
            }
        }
    }
}

/// Why a split ready to be published was not.
fn not_published(dir: &Path, why: &str) -> Error {
    let words = format!("not published, nor the folder's other splits: {why}");
    Error::new(ErrorKind::Io(std::io::Error::other(words))).in_file(dir)
}
