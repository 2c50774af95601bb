//! Records that are not plain Examples: a SequenceExample flattened into features (each
//! feature list's values concatenated, beside `NAME/lengths`), and any other record wrapped
//! whole as the single value of a bytes feature.

use std::ops::Range;

use super::{output_field, Origin, Planned, Src, Transcoder};
use crate::message::{feature_name, map_entry, parse_feature, validate_feature_list, RawEntry};
use crate::numeric::{self, Dialect, Numbers};
use crate::spec::{Disposition, Rule};
use crate::wire::{self, Cursor};
use crate::{Error, ErrorKind, FeatureKind};

impl Transcoder {
    /// Flattens one feature list into its concatenated values plus `NAME/lengths`.
    pub(super) fn plan_feature_list(&mut self, input: &[u8], list: &RawEntry) -> Result<(), Error> {
        let name = feature_name(input, &list.key)?;
        match self.spec.lookup(name) {
            Disposition::Keep(rule) if !list.loses => {
                let rule = rule.cloned();
                self.plan_sequence(input, list.key.clone(), list.value.clone(), rule.as_ref())
            }
            _ => validate_feature_list(input, list.value.clone()),
        }
        .map_err(|e| e.in_feature(name))
    }

    pub(super) fn plan_sequence(
        &mut self,
        input: &[u8],
        key: Range<usize>,
        value: Option<Range<usize>>,
        rule: Option<&Rule>,
    ) -> Result<(), Error> {
        let mut kind = None;
        let mut lengths = Numbers::default();
        let values_start = self.scratch.len();
        self.sequence_numbers.clear();
        let mut steps = Cursor::new(input).sub(value.unwrap_or(0..0));
        while !steps.at_end() {
            let step = map_entry(&mut steps, "unknown field in FeatureList")?;
            let Some((step_kind, list)) = parse_feature(steps.sub(step), Dialect::Tf)? else {
                lengths.ints.push(0);
                continue;
            };
            if kind.is_some_and(|k| k != step_kind) {
                return Err(ErrorKind::MixedSequenceKinds.into());
            }
            kind = Some(step_kind);
            let list_cursor = Cursor::new(input).sub(list.clone());
            let count = numeric::scan_list(list_cursor, step_kind)?.count;
            lengths.ints.push(count as i64);
            if step_kind == FeatureKind::Bytes {
                // A BytesList is a run of `value` fields, so step payloads concatenate as is.
                self.scratch.extend_from_slice(&input[list]);
            } else {
                numeric::decode_numbers(list_cursor, step_kind, &mut self.numbers)?;
                self.sequence_numbers.append(&self.numbers);
            }
        }
        if let Some(kind) = kind {
            let list = if kind == FeatureKind::Bytes {
                numeric::check_bytes_rule(rule)?;
                Planned {
                    field: 1,
                    bytes: Src::Scratch(values_start..self.scratch.len()),
                    kind: Some(kind),
                    count: lengths.ints.iter().sum::<i64>() as usize,
                }
            } else {
                let transformed = numeric::transform(
                    &mut self.sequence_numbers,
                    kind,
                    rule,
                    Dialect::Of,
                    self.spec.rounding,
                )?;
                self.rounded += transformed.rounded as u64;
                let target = transformed.kind;
                let encoded =
                    numeric::encode_numbers(target, &self.sequence_numbers, &mut self.scratch);
                Planned {
                    field: output_field(Dialect::Of, target)?,
                    bytes: Src::Scratch(encoded),
                    kind: Some(target),
                    count: self.sequence_numbers.len(),
                }
            };
            let out_key = self.output_key(key.clone(), input, rule, "");
            self.push(out_key, key.clone(), Origin::SequenceValues, list);
        }
        let encoded = numeric::encode_numbers(FeatureKind::Int64, &lengths, &mut self.scratch);
        let lengths_key = self.output_key(key.clone(), input, rule, "/lengths");
        let list = Planned {
            field: output_field(Dialect::Of, FeatureKind::Int64)?,
            bytes: Src::Scratch(encoded),
            kind: Some(FeatureKind::Int64),
            count: lengths.ints.len(),
        };
        self.push(lengths_key, key, Origin::SequenceLengths, list);
        Ok(())
    }

    /// The whole record as the single value of a bytes feature.
    pub(super) fn plan_raw(&mut self, input: &[u8], name: &str) {
        let key_start = self.scratch.len();
        self.scratch.extend_from_slice(name.as_bytes());
        let key = key_start..self.scratch.len();
        let list_start = self.scratch.len();
        wire::put_tag(&mut self.scratch, 1, wire::LEN);
        wire::put_varint(&mut self.scratch, input.len() as u64);
        self.scratch.extend_from_slice(input);
        let list = Planned {
            field: 1,
            bytes: Src::Scratch(list_start..self.scratch.len()),
            kind: Some(FeatureKind::Bytes),
            count: 1,
        };
        self.push(Src::Scratch(key.clone()), key, Origin::Features, list);
    }
}
