//! One work item's records converted into temporary parts: read (many a step where they lie
//! whole in the reader's buffer), converted straight into the open part, counted, and the
//! parts finished here or, bound for an object store, uploaded while the next are written.

use crate::error::{Error, ErrorKind};
use crate::naming::names::Format;
use crate::options::{Options, Skip};
use crate::progress::Event;
use crate::records::output::{frame_len, PartWriter};
use crate::records::RecordReader;
use crate::running::chunk::{Chunk, ChunkOutput};
use crate::running::job::{Context, Job, Stop, Worker, REPORT_EVERY};
use crate::running::uploads::Upload;
use ofconvert_bridge::Transcoder;
use std::sync::atomic::Ordering;

/// Finishes a full part: here, or, bound for an object store, where finishing uploads it,
/// on a thread of its own while the worker writes the next ([`uploads`]).
///
/// [`uploads`]: crate::running::uploads
fn finish_part(
    context: &Context<'_>,
    worker: &Worker,
    writer: PartWriter,
    output: &mut ChunkOutput,
) -> Result<(), Error> {
    if context.storage.renames_cheaply() {
        output.parts.push(writer.finish(context.storage)?);
    } else {
        output.uploads.push(Upload::start(writer, &worker.uploads));
    }
    Ok(())
}

/// Why a record converted straight into a part's buffer was not written there.
enum NotWritten {
    /// The conversion failed; nothing was written.
    Failed(ofconvert_bridge::Error),
    /// It would take the part past its size limit: it is in the worker's `converted`
    /// buffer instead, for the next part.
    Spilled,
}

/// Converts `record` from `format`, appending the result to `out`.
fn transcode(
    transcoder: &mut Transcoder,
    format: Format,
    record: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ofconvert_bridge::Error> {
    match format {
        Format::Tf => transcoder.tf_to_of_appending(record, out),
        Format::Of => transcoder.of_to_tf_appending(record, out),
    }
}

/// Converts one work item into one or more parts under temporary names. Parts bound for an
/// object store may still be uploading in the output ([`ChunkOutput::uploads`]): the run
/// waits for them when the dataset is done, a sharded worker with
/// [`settled`](crate::running::job::settled).
pub(crate) fn run_chunk(
    context: &Context<'_>,
    job: &Job<'_>,
    chunk: &Chunk,
    worker: &mut Worker,
) -> Result<ChunkOutput, Stop> {
    let mut output = ChunkOutput::default();
    let mut writer: Option<PartWriter> = None;
    let result = convert_chunk(context, job, chunk, worker, &mut output, &mut writer);
    let result = result.and_then(|()| match writer.take() {
        Some(writer) => Ok(finish_part(context, worker, writer, &mut output)?),
        None => Ok(()),
    });
    match result {
        Ok(()) => Ok(output),
        Err(stop) => {
            if let Some(writer) = writer {
                job.remove_all(context.storage, [writer.path().to_path_buf()]);
            }
            if let Err((_, failed)) = output.settle_uploads() {
                job.remove_all(context.storage, failed);
            }
            job.remove_all(
                context.storage,
                output.parts.into_iter().map(|part| part.path),
            );
            Err(stop)
        }
    }
}

pub(crate) fn convert_chunk(
    context: &Context<'_>,
    job: &Job<'_>,
    chunk: &Chunk,
    worker: &mut Worker,
    output: &mut ChunkOutput,
    writer: &mut Option<PartWriter>,
) -> Result<(), Stop> {
    let options = context.options;
    let dataset = job.target.dataset;
    let mut unreported = 0u64;
    let mut next_sub = 0usize;
    for segment in &chunk.segments {
        let input = &dataset.inputs[segment.input];
        let offset = segment.start.map_or(0, |start| start.offset);
        let opened_ahead = worker
            .prefetched
            .take()
            .filter(|(path, at, _)| *path == input.path && *at == offset);
        let mut reader = match opened_ahead {
            Some((_, _, opened)) => RecordReader::from_opened(
                opened,
                &input.path,
                context.input_format,
                options.checksums(),
                segment.start,
                Some(context.progress),
            ),
            None => RecordReader::open_at(
                context.input_storage,
                &input.path,
                context.input_format,
                options.checksums(),
                segment.start,
                Some(context.progress),
            ),
        }?;
        if segment.start.is_none() {
            output
                .compressions
                .push((segment.input, reader.stored_as().to_owned()));
        }
        while reader.position().index < segment.first {
            match reader.skip() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                // Damage here belongs to the previous work item, which reports it.
                Err(err) if reader.step_past(&err) => {}
                Err(err) => return Err(err.into()),
            }
        }
        let format = context.input_format;
        loop {
            // Into an open part, the records that lie whole in the reader's buffer go many a
            // step: the reader settles its state once a run, not once a record.
            if let Some(part) = writer.as_mut().filter(|_| worker.keeps_images) {
                let mut halt = None;
                let (transcoder, converted) = (&mut worker.transcoder, &mut worker.converted);
                reader.take_run(segment.end, options.on_corrupt, |at, record| {
                    if let Err(stop) = count_record(context, job, &mut unreported) {
                        halt = Some(Err(stop));
                        return false;
                    }
                    match into_part(part, transcoder, converted, output, options, format, record) {
                        Ok(Ok(())) => true,
                        outcome => {
                            halt = Some(Ok((at, outcome)));
                            false
                        }
                    }
                });
                match halt {
                    None => {}
                    Some(Err(stop)) => return Err(stop),
                    Some(Ok((at, outcome))) => {
                        if written(options, &input.path, at, outcome?, &mut output.skipped)? {
                            continue;
                        }
                        if let Some(full) = writer.take() {
                            finish_part(context, worker, full, output)?;
                        }
                        write_converted(context, job, chunk, worker, writer, &mut next_sub)?;
                        continue;
                    }
                }
            }
            let Some(at) = reader.read_salvaging(
                &mut worker.record,
                options.on_corrupt,
                &mut output.skipped,
                segment.end,
            )?
            else {
                break;
            };
            count_record(context, job, &mut unreported)?;
            let record = reader.record(&worker.record);
            // The first record of a part is converted on its own, so that no part is made
            // for records that all fail; the next ones go straight into the part's buffer.
            if let Some(part) = writer.as_mut().filter(|_| worker.keeps_images) {
                let (transcoder, converted) = (&mut worker.transcoder, &mut worker.converted);
                let outcome =
                    into_part(part, transcoder, converted, output, options, format, record)?;
                if written(options, &input.path, at, outcome, &mut output.skipped)? {
                    continue;
                }
                if let Some(full) = writer.take() {
                    finish_part(context, worker, full, output)?;
                }
            } else {
                worker.converted.clear();
                let converted = transcode(
                    &mut worker.transcoder,
                    format,
                    record,
                    &mut worker.converted,
                );
                if let Err(err) = converted {
                    skip_or_fail(options, &input.path, at, err, &mut output.skipped)?;
                    continue;
                }
                output.rounded += worker.transcoder.rounded();
                let rewritten = worker
                    .recoder
                    .rewrite(&mut worker.converted, &mut output.images)
                    .map_err(|err| {
                        Error::new(ErrorKind::Image {
                            feature: err.feature,
                            reason: err.reason,
                        })
                        .in_file(&input.path)
                        .at(at.offset, at.index)
                    })?;
                if rewritten {
                    // The transcoder's plan no longer describes the record: read it again.
                    let _ = output.schema.add_ofrecord(&worker.converted);
                } else {
                    output
                        .schema
                        .add_transcoded(&worker.transcoder, &worker.converted);
                }
                let framed = frame_len(format, worker.converted.len());
                if let (Some(current), Some(max)) = (writer.as_ref(), options.sizing.max_part_bytes)
                {
                    if current.records() > 0 && current.bytes() + framed > max {
                        if let Some(full) = writer.take() {
                            finish_part(context, worker, full, output)?;
                        }
                    }
                }
            }
            write_converted(context, job, chunk, worker, writer, &mut next_sub)?;
        }
    }
    if unreported > 0 {
        (context.progress)(Event::Progress {
            bytes: 0,
            records: unreported,
        });
    }
    Ok(())
}

/// Counts a record read: a progress report every [`REPORT_EVERY`] records, a stop when the
/// run is interrupted (one relaxed load a record: a stop is seen within a record, whatever
/// its size) or another work item of the dataset failed.
#[inline]
fn count_record(context: &Context<'_>, job: &Job<'_>, unreported: &mut u64) -> Result<(), Stop> {
    if context.options.interrupt.is_set() {
        return Err(Stop::Interrupted);
    }
    *unreported += 1;
    if *unreported == REPORT_EVERY {
        (context.progress)(Event::Progress {
            bytes: 0,
            records: *unreported,
        });
        *unreported = 0;
        if job.failed.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
    }
    Ok(())
}

/// Converts `record` straight into the open `part`'s buffer, its features added to the
/// schema. A record that would take the part past its size limit is left in `converted`
/// for the next part ([`NotWritten::Spilled`]).
#[inline]
fn into_part(
    part: &mut PartWriter,
    transcoder: &mut Transcoder,
    converted: &mut Vec<u8>,
    output: &mut ChunkOutput,
    options: &Options,
    format: Format,
    record: &[u8],
) -> Result<Result<(), NotWritten>, Error> {
    let room = options
        .sizing
        .max_part_bytes
        .map(|max| max.saturating_sub(part.bytes()));
    part.write_with(|buf| {
        let start = buf.len();
        if let Err(err) = transcode(transcoder, format, record, buf) {
            return Err(NotWritten::Failed(err));
        }
        output.rounded += transcoder.rounded();
        output.schema.add_transcoded(transcoder, buf);
        if room.is_some_and(|room| frame_len(format, buf.len() - start) > room) {
            converted.clear();
            converted.extend_from_slice(&buf[start..]);
            return Err(NotWritten::Spilled);
        }
        Ok(())
    })
}

/// What became of a record [`into_part`] took: true when it is done with (written, or
/// skipped as the options say), false when it spilled and waits in the worker's
/// `converted` buffer for the next part.
fn written(
    options: &Options,
    path: &std::path::Path,
    at: crate::records::RecordAt,
    outcome: Result<(), NotWritten>,
    skipped: &mut crate::records::SkippedRecords,
) -> Result<bool, Stop> {
    match outcome {
        Ok(()) => Ok(true),
        Err(NotWritten::Failed(err)) => {
            skip_or_fail(options, path, at, err, skipped)?;
            Ok(true)
        }
        Err(NotWritten::Spilled) => Ok(false),
    }
}

/// Writes the record waiting in the worker's `converted` buffer into the open part, or into
/// a new one.
fn write_converted(
    context: &Context<'_>,
    job: &Job<'_>,
    chunk: &Chunk,
    worker: &Worker,
    writer: &mut Option<PartWriter>,
    next_sub: &mut usize,
) -> Result<(), Stop> {
    let options = context.options;
    let current = match writer {
        Some(current) => current,
        None => {
            *next_sub += 1;
            writer.insert(PartWriter::create(
                context.storage,
                job.target.part_path(chunk.index, chunk.of, *next_sub - 1),
                context.input_format,
                (
                    options.to,
                    job.target.dataset.compression_of(chunk.index),
                    options.array_record,
                ),
                options.durability(),
                frame_len(context.input_format, worker.converted.len()),
            )?)
        }
    };
    current.write(&worker.converted)?;
    Ok(())
}

/// Counts a record that failed to convert as skipped, when the options say to skip such
/// records, or fails the work item.
fn skip_or_fail(
    options: &Options,
    path: &std::path::Path,
    at: crate::records::RecordAt,
    err: ofconvert_bridge::Error,
    skipped: &mut crate::records::SkippedRecords,
) -> Result<(), Stop> {
    match options.skips(err.kind()) {
        Some(Skip::Empty) => skipped.empty += 1,
        Some(Skip::Corrupt) => skipped.note_corrupt(Error::mapping(path, at, err).to_string()),
        None => return Err(Error::mapping(path, at, err).into()),
    }
    Ok(())
}
