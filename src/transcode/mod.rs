//! The wire-level transcoder: serialized Example ⇄ serialized OFRecord without building a
//! message tree.
//!
//! A TF `Features` message and an OFRecord share their layout (a map from name to a `Feature`
//! with a oneof of lists); only the field numbers of the numeric kinds differ. So the common
//! case copies each map entry's bytes and rewrites one tag. Each record is done in two steps:
//! a *plan* (validate every entry and decide, per entry, the output name and where its list
//! bytes come from: the input untouched, or re-encoded into a scratch buffer), then a *write*
//! whose sizes are all known up front, so no length needs patching afterwards. Under the
//! default mapping, a record laid out as the writers of both formats lay it out goes through
//! the single pass of [`fast`] instead, which gives the same bytes.

use std::ops::Range;
use std::sync::Arc;

use crate::fast::{self, Pass, WrittenFeature};
use crate::message::{collect_entries, mark_losers, next_top_level_field, parse_entry, RawEntry};
use crate::numeric::{self, Dialect, Numbers};
use crate::spec::{CompiledSpec, Disposition, Rule};
use crate::wire::{self, Cursor};
use crate::{Error, ErrorKind, FeatureKind, MappingSpec, SequencePolicy};

mod sequence;

/// Where bytes of the output come from.
#[derive(Clone, Debug)]
enum Src {
    Input(Range<usize>),
    Scratch(Range<usize>),
}

/// Which map of the input a feature came from; two output features may share a name only
/// when they are repeats of the same input key in the same map (protobuf: the last wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Features,
    SequenceValues,
    SequenceLengths,
}

#[derive(Clone, Debug)]
struct Entry {
    key: Src,
    source_key: Range<usize>,
    origin: Origin,
    list: Planned,
    /// The entry's encoded length, without its own tag and length prefix.
    len: usize,
}

/// What goes into an entry's `Feature`.
#[derive(Clone, Debug)]
struct Planned {
    /// Output kind field number; 0 for a `Feature` with no kind.
    field: u32,
    bytes: Src,
    kind: Option<FeatureKind>,
    count: usize,
}

impl Planned {
    fn kindless() -> Self {
        Planned {
            field: 0,
            bytes: Src::Input(0..0),
            kind: None,
            count: 0,
        }
    }
}

impl Src {
    fn len(&self) -> usize {
        match self {
            Src::Input(range) | Src::Scratch(range) => range.len(),
        }
    }
}

/// Converts serialized records between `tf.train.Example` and OneFlow's `OFRecord` at the
/// wire level, applying a [`MappingSpec`].
///
/// Holds scratch buffers that are reused from record to record: keep one per worker thread
/// (it is cheap to clone).
#[derive(Clone, Debug)]
pub struct Transcoder {
    spec: Arc<CompiledSpec>,
    plan: Vec<Entry>,
    scratch: Vec<u8>,
    numbers: Numbers,
    sequence_numbers: Numbers,
    entries: Vec<RawEntry>,
    lists: Vec<RawEntry>,
    order: Vec<usize>,
    /// Where the first entry starts in the output: after the Example's own tag and length.
    output_base: usize,
    /// Values of the last record that rounding changed.
    rounded: u64,
    /// The features of the last record when the single pass of [`fast`] converted it (and
    /// `plan` is empty), else none.
    pass: Pass,
}

impl Transcoder {
    /// A transcoder for `spec`; fails when the spec contradicts itself.
    pub fn new(spec: MappingSpec) -> Result<Self, Error> {
        Ok(Transcoder {
            spec: Arc::new(spec.compile()?),
            plan: Vec::new(),
            scratch: Vec::new(),
            numbers: Numbers::default(),
            sequence_numbers: Numbers::default(),
            entries: Vec::new(),
            lists: Vec::new(),
            order: Vec::new(),
            output_base: 0,
            rounded: 0,
            pass: Pass::default(),
        })
    }

    /// Turns a serialized `tf.train.Example` (or, when the spec flattens them, a
    /// `SequenceExample`) into a serialized `OFRecord`, replacing the contents of `out`.
    ///
    /// An Example without features is [`ErrorKind::EmptyRecord`]: it would become a
    /// zero-length OFRecord, which OneFlow cannot read.
    pub fn tf_to_of(&mut self, example: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        out.clear();
        self.tf_to_of_appending(example, out)
    }

    /// [`tf_to_of`](Transcoder::tf_to_of), the OFRecord appended to what `out` holds
    /// rather than replacing it, so that records can be written one after another into one
    /// buffer (a file's, with room left for each record's framing). After an error `out`
    /// holds what it held before. [`visit_output`](Transcoder::visit_output) then takes the
    /// whole of `out`.
    pub fn tf_to_of_appending(&mut self, example: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let start = out.len();
        self.reset();
        if self.spec.keeps_everything() && fast::tf_to_of(example, out, &mut self.pass) {
            return Ok(());
        }
        if let Err(err) = self.plan_example(example) {
            let wrappable = matches!(
                err.kind(),
                ErrorKind::NotAnExample
                    | ErrorKind::Malformed { .. }
                    | ErrorKind::UnknownFeatureKind { .. }
                    | ErrorKind::AmbiguousFeature
            );
            match &self.spec.raw_feature {
                Some(name) if wrappable => {
                    let name = name.clone();
                    self.reset();
                    self.plan_raw(example, &name);
                }
                _ => return Err(err),
            }
        }
        if self.plan.is_empty() {
            return Err(ErrorKind::EmptyRecord.into());
        }
        self.check_names(example)?;
        out.reserve(self.entries_size());
        self.output_base = start;
        self.write_entries(example, out);
        Ok(())
    }

    /// Turns a serialized `OFRecord` into a serialized `tf.train.Example`, replacing the
    /// contents of `out`. int32 lists widen to int64; double lists narrow to float when
    /// every value fits exactly (else [`ErrorKind::InexactDouble`], unless the spec is lossy;
    /// a finite double beyond float's range is [`ErrorKind::FloatOverflow`] either way).
    pub fn of_to_tf(&mut self, record: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        out.clear();
        self.of_to_tf_appending(record, out)
    }

    /// [`of_to_tf`](Transcoder::of_to_tf), the Example appended to what `out` holds, as
    /// [`tf_to_of_appending`](Transcoder::tf_to_of_appending) does.
    pub fn of_to_tf_appending(&mut self, record: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        self.reset();
        if record.is_empty() {
            return Err(ErrorKind::EmptyRecord.into());
        }
        if self.spec.keeps_everything() && fast::of_to_tf(record, out, &mut self.pass) {
            return Ok(());
        }
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let planned = collect_entries(
            Cursor::new(record),
            "unknown field in OFRecord",
            &mut entries,
        )
        .and_then(|()| {
            mark_losers(record, &mut entries, &mut self.order);
            entries
                .iter()
                .try_for_each(|e| self.plan_entry(record, e, Dialect::Of, Dialect::Tf))
        });
        self.entries = entries;
        planned?;
        self.check_names(record)?;
        let body = self.entries_size();
        out.reserve(wire::field_size(body));
        wire::put_tag(out, 1, wire::LEN);
        wire::put_varint(out, body as u64);
        self.output_base = out.len();
        self.write_entries(record, out);
        Ok(())
    }

    /// An id of the names of the features the last successful conversion wrote, in order,
    /// when it took the default mapping's single pass (`None` otherwise): two records with
    /// the same id have the same feature names in the same order, so that a caller keeping
    /// statistics by name can look each name up once. Ids are unique in the process.
    pub fn output_shape(&self) -> Option<u64> {
        self.pass.shape()
    }

    /// The features the last successful conversion wrote, in order, when it took the
    /// default mapping's single pass (empty otherwise: then
    /// [`visit_output_lists`](Transcoder::visit_output_lists) tells them): what
    /// `visit_output_lists` reports, as positions in the output, for a caller that walks
    /// them in a loop of its own.
    pub fn single_pass_features(&self) -> &[WrittenFeature] {
        &self.pass.written
    }

    /// How many values the last successful [`tf_to_of`](Transcoder::tf_to_of) or
    /// [`of_to_tf`](Transcoder::of_to_tf) call changed by rounding them to the nearest float,
    /// as a [lossy](MappingSpec::lossy) spec allows; 0 under any other spec.
    pub fn rounded(&self) -> u64 {
        self.rounded
    }

    fn reset(&mut self) {
        self.pass.written.clear();
        self.plan.clear();
        self.scratch.clear();
        self.rounded = 0;
    }

    fn plan_example(&mut self, input: &[u8]) -> Result<(), Error> {
        let mut entries = std::mem::take(&mut self.entries);
        let mut lists = std::mem::take(&mut self.lists);
        let planned = self.plan_example_with(input, &mut entries, &mut lists);
        self.entries = entries;
        self.lists = lists;
        planned
    }

    fn plan_example_with(
        &mut self,
        input: &[u8],
        entries: &mut Vec<RawEntry>,
        lists: &mut Vec<RawEntry>,
    ) -> Result<(), Error> {
        entries.clear();
        lists.clear();
        let mut sequence = false;
        let mut cursor = Cursor::new(input);
        while let Some((field, range)) = next_top_level_field(&mut cursor)? {
            // A message field that appears twice is merged: its map entries add up.
            if field == 1 {
                collect_entries(cursor.sub(range), "unknown field in Features", entries)?;
            } else {
                sequence = true;
                collect_entries(cursor.sub(range), "unknown field in FeatureLists", lists)?;
            }
        }
        if sequence && self.spec.sequence == SequencePolicy::Refuse {
            return Err(ErrorKind::SequenceExample.into());
        }
        mark_losers(input, entries, &mut self.order);
        for entry in entries.iter() {
            self.plan_entry(input, entry, Dialect::Tf, Dialect::Of)?;
        }
        mark_losers(input, lists, &mut self.order);
        for list in lists.iter() {
            self.plan_feature_list(input, list)?;
        }
        Ok(())
    }

    /// Plans one map entry of a `Features` / `OFRecord` message.
    ///
    /// Entries that are dropped, or overridden by a later entry with the same key, are only
    /// validated: they must not hide a damaged record, but their values are not converted.
    fn plan_entry(
        &mut self,
        input: &[u8],
        entry: &RawEntry,
        from: Dialect,
        to: Dialect,
    ) -> Result<(), Error> {
        let parsed = parse_entry(input, entry.key.clone(), entry.value.clone(), from)?;
        let name = &input[parsed.key.clone()];
        let rule = match self.spec.lookup(name) {
            Disposition::Keep(rule) if !entry.loses => rule.cloned(),
            _ => {
                if let Some((kind, range)) = parsed.list {
                    numeric::scan_list(Cursor::new(input).sub(range), kind)
                        .map_err(|e| e.in_feature(name))?;
                }
                return Ok(());
            }
        };
        let list = match parsed.list {
            None => Planned::kindless(),
            Some((kind, range)) => self
                .plan_list(input, kind, range, rule.as_ref(), to)
                .map_err(|e| e.in_feature(name))?,
        };
        let key = self.output_key(parsed.key.clone(), input, rule.as_ref(), "");
        self.push(key, parsed.key, Origin::Features, list);
        Ok(())
    }

    fn push(&mut self, key: Src, source_key: Range<usize>, origin: Origin, list: Planned) {
        let feature_len = match list.field {
            0 => 0,
            _ => wire::field_size(list.bytes.len()),
        };
        let len = wire::field_size(key.len()) + wire::field_size(feature_len);
        self.plan.push(Entry {
            key,
            source_key,
            origin,
            list,
            len,
        });
    }

    /// Decides the output field and list bytes for one list of `kind`.
    fn plan_list(
        &mut self,
        input: &[u8],
        kind: FeatureKind,
        range: Range<usize>,
        rule: Option<&Rule>,
        to: Dialect,
    ) -> Result<Planned, Error> {
        let list = Cursor::new(input).sub(range.clone());
        let info = numeric::scan_list(list, kind)?;
        if kind == FeatureKind::Bytes {
            numeric::check_bytes_rule(rule)?;
        }
        let rewrites = rule.is_some_and(|r| r.cast.is_some() || r.offset.is_some());
        let target = to.default_target(kind);
        // Conforming encoders sign-extend int32 to ten bytes, so such a list reads the same as
        // int64 and only its tag changes.
        let same_bytes = target == kind || (kind == FeatureKind::Int32 && info.int32_canonical);
        if !rewrites && same_bytes {
            return Ok(Planned {
                field: output_field(to, target)?,
                bytes: Src::Input(range),
                kind: Some(target),
                count: info.count,
            });
        }
        numeric::decode_numbers(list, kind, &mut self.numbers)?;
        let transformed =
            numeric::transform(&mut self.numbers, kind, rule, to, self.spec.rounding)?;
        self.rounded += transformed.rounded as u64;
        let target = transformed.kind;
        let encoded = numeric::encode_numbers(target, &self.numbers, &mut self.scratch);
        Ok(Planned {
            field: output_field(to, target)?,
            bytes: Src::Scratch(encoded),
            kind: Some(target),
            count: self.numbers.len(),
        })
    }

    /// The output name: the input key, or its rename (plus `suffix`) copied into scratch.
    fn output_key(
        &mut self,
        key: Range<usize>,
        input: &[u8],
        rule: Option<&Rule>,
        suffix: &str,
    ) -> Src {
        let renamed = rule.and_then(|r| r.rename.as_deref());
        if renamed.is_none() && suffix.is_empty() {
            return Src::Input(key);
        }
        let start = self.scratch.len();
        match renamed {
            Some(name) => self.scratch.extend_from_slice(name.as_bytes()),
            None => self.scratch.extend_from_slice(&input[key]),
        }
        self.scratch.extend_from_slice(suffix.as_bytes());
        Src::Scratch(start..self.scratch.len())
    }

    fn bytes<'a>(&'a self, input: &'a [u8], src: &Src) -> &'a [u8] {
        match src {
            Src::Input(range) => &input[range.clone()],
            Src::Scratch(range) => &self.scratch[range.clone()],
        }
    }

    /// Fails when renaming or flattening made two different features share a name.
    fn check_names(&mut self, input: &[u8]) -> Result<(), Error> {
        let flattened = self.plan.iter().any(|e| e.origin != Origin::Features);
        if !self.spec.has_renames && !flattened {
            return Ok(());
        }
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..self.plan.len());
        order.sort_by(|&a, &b| {
            self.bytes(input, &self.plan[a].key)
                .cmp(self.bytes(input, &self.plan[b].key))
        });
        let mut result = Ok(());
        for pair in order.windows(2) {
            let (a, b) = (&self.plan[pair[0]], &self.plan[pair[1]]);
            let same_name = self.bytes(input, &a.key) == self.bytes(input, &b.key);
            let same_source =
                a.origin == b.origin && input[a.source_key.clone()] == input[b.source_key.clone()];
            if same_name && !same_source {
                let name = String::from_utf8_lossy(self.bytes(input, &a.key)).into_owned();
                result = Err(ErrorKind::NameClash { name }.into());
                break;
            }
        }
        self.order = order;
        result
    }

    /// The encoded size of every planned entry, map-entry tags included, known from the plan
    /// alone so the enclosing length can be written before the entries.
    fn entries_size(&self) -> usize {
        self.plan.iter().map(|e| wire::field_size(e.len)).sum()
    }

    fn write_entries(&self, input: &[u8], out: &mut Vec<u8>) {
        for entry in &self.plan {
            let key = self.bytes(input, &entry.key);
            let list = self.bytes(input, &entry.list.bytes);
            wire::put_tag(out, 1, wire::LEN);
            wire::put_varint(out, entry.len as u64);
            wire::put_tag(out, 1, wire::LEN);
            wire::put_varint(out, key.len() as u64);
            out.extend_from_slice(key);
            wire::put_tag(out, 2, wire::LEN);
            if entry.list.field == 0 {
                out.push(0);
            } else {
                wire::put_varint(out, wire::field_size(list.len()) as u64);
                wire::put_tag(out, entry.list.field, wire::LEN);
                wire::put_varint(out, list.len() as u64);
                out.extend_from_slice(list);
            }
        }
    }

    /// Calls `f(name, kind, value_count)` for each feature of the record that the last
    /// successful [`tf_to_of`](Transcoder::tf_to_of) or [`of_to_tf`](Transcoder::of_to_tf)
    /// call wrote into `output`, in order: what [`visit_ofrecord`](crate::visit_ofrecord) or
    /// [`visit_example`](crate::visit_example) would report on it, without parsing it again.
    /// Given any other bytes it reports nothing that does not fit them.
    pub fn visit_output(
        &self,
        output: &[u8],
        mut f: impl FnMut(&[u8], Option<FeatureKind>, usize),
    ) {
        self.visit_output_lists(output, |name, kind, count, _| f(name, kind, count));
    }

    /// [`visit_output`](Transcoder::visit_output) that also passes each feature's
    /// serialized value list as written (`BytesList`, `Int64List`, ... without its tag and
    /// length; empty for a `Feature` with no kind), for callers that look at the values.
    pub fn visit_output_lists(
        &self,
        output: &[u8],
        mut f: impl FnMut(&[u8], Option<FeatureKind>, usize, &[u8]),
    ) {
        for feature in &self.pass.written {
            let name = output.get(feature.name.clone());
            if let (Some(name), Some(list)) = (name, output.get(feature.list.clone())) {
                f(name, feature.kind, feature.values, list);
            }
        }
        let mut offset = self.output_base;
        for entry in &self.plan {
            let key_len = entry.key.len();
            // An entry is: tag, length, key tag, key length, key, value tag, value length,
            // and in the value (a Feature) the list's tag, length and bytes.
            let key_start = offset
                + 1
                + wire::varint_len(entry.len as u64)
                + 1
                + wire::varint_len(key_len as u64);
            let list_len = entry.list.bytes.len();
            let list_start = key_start
                + key_len
                + 1
                + wire::varint_len(wire::field_size(list_len) as u64)
                + 1
                + wire::varint_len(list_len as u64);
            let list = match entry.list.field {
                0 => Some(&[][..]),
                _ => output.get(list_start..list_start + list_len),
            };
            if let (Some(name), Some(list)) = (output.get(key_start..key_start + key_len), list) {
                f(name, entry.list.kind, entry.list.count, list);
            }
            offset += wire::field_size(entry.len);
        }
    }
}

fn output_field(to: Dialect, kind: FeatureKind) -> Result<u32, Error> {
    // The default mapping has already turned every kind the dialect lacks into one it has.
    to.field_of_kind(kind).ok_or_else(|| {
        Error::new(ErrorKind::InvalidSpec(format!(
            "{} cannot be written in this direction",
            kind.list_name()
        )))
    })
}
