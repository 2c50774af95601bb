//! Records of either format brought to one form and compared as the default mapping
//! relates them: an Example is equal to the OFRecord `tf2of` makes of it, and to the one
//! `of2tf` reads it back from. Integers compare by value (OneFlow's int32 is the int64 of
//! the same number), reals by bits, a double being the float it holds exactly; bytes are
//! bytes. A payload that is not a record of its format is compared as bytes. Given the
//! mapping a conversion was asked for, side A's records go through it first ([`mapped`]):
//! a feature it drops is not there to differ, one it renames is compared under its new
//! name, cast and offset values as they were written.
//!
//! The work is per worker, in reused buffers: most equal records are equal byte for byte
//! (once an Example is in OFRecord form) and cost one comparison of bytes.

use ofconvert_bridge::{ErrorKind, FeatureKind, MappingSpec, SequencePolicy, Transcoder};
use xxhash_rust::xxh3::xxh3_128;

use super::{Difference, Place};
use crate::naming::names::Format;
use crate::scan::{for_each_bytes, scan_entries, Dialect};

mod first;
mod layout;
mod mapped;
mod show;
mod values;

use first::{first_at, offset_in, At};
use layout::same_layout;
use mapped::Mapped;
use show::{show, show_at, show_bytes_around};
use values::{
    bytes_values, class, for_each_real, for_each_value, integers, reals, varint, Class, Real,
};

/// Examples of this many bytes and more are digested in place rather than transcoded.
const COPY_SPARED: usize = 4096;

/// Bytes values longer than this enter a digest as their own 128-bit hash.
const HASHED_VALUE: usize = 64;

/// How two records differ, in words and values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordDifference {
    /// The feature, when the difference is in one.
    pub(crate) feature: Option<String>,
    /// What differs.
    pub(crate) what: String,
    /// The values on each side, cut short; `None` where there is none (a feature missing).
    pub(crate) values: (Option<String>, Option<String>),
    /// The offset in each side's record (its payload) of the first byte that differs, where
    /// the difference is one of values and that side's bytes tell (not those of a record of
    /// A that a mapping changed).
    pub(crate) bytes: (Option<u64>, Option<u64>),
    /// Where in the feature's values the difference is.
    at: Option<At>,
}

impl RecordDifference {
    /// The difference as a report names it: of record `record` of the dataset, found at
    /// `a_place` and `b_place`, with the byte that differs in each.
    pub(crate) fn into_difference(self, record: u64, a_place: Place, b_place: Place) -> Difference {
        Difference {
            dataset: String::new(),
            record: Some(record),
            feature: self.feature,
            what: self.what,
            a: self.values.0,
            b: self.values.1,
            a_place: Some(Place {
                byte: self.bytes.0,
                ..a_place
            }),
            b_place: Some(Place {
                byte: self.bytes.1,
                ..b_place
            }),
        }
    }
}

/// A record in the form records are compared in: an OFRecord that parses, or bytes that
/// are no record of their format.
#[derive(Clone, Copy)]
enum Form<'r> {
    Record(&'r [u8]),
    Opaque(&'r [u8]),
}

/// One feature of a record in OFRecord form.
#[derive(Clone, Copy)]
struct Feature<'r> {
    name: &'r [u8],
    kind: Option<FeatureKind>,
    list: &'r [u8],
}

/// A worker's buffers for comparing records.
pub(crate) struct Canon {
    transcoder: Transcoder,
    /// Side A's mapping, when one is given.
    mapped: Option<Mapped>,
    a: Vec<u8>,
    b: Vec<u8>,
    canonical: Vec<u8>,
    found: Vec<FeatureAt>,
}

impl Canon {
    /// A comparer of records as the default mapping relates them, side A's first mapped by
    /// `mapped` when given.
    pub(crate) fn new(mapped: Option<&Transcoder>) -> Canon {
        // The default mapping, SequenceExamples flattened as `--sequence flatten` flattens
        // them (refused, they could not be compared at all).
        let spec = MappingSpec::new().sequence(SequencePolicy::Flatten);
        Canon {
            transcoder: Transcoder::new(spec).expect("the default mapping is valid"),
            mapped: mapped.map(Mapped::new),
            a: Vec::new(),
            b: Vec::new(),
            canonical: Vec::new(),
            found: Vec::new(),
        }
    }

    /// How record `a` (of format `a_format`, of side A) differs from `b`, or `None` when
    /// they hold the same features and values.
    pub(crate) fn compare(
        &mut self,
        a: &[u8],
        a_format: Format,
        b: &[u8],
        b_format: Format,
    ) -> Option<RecordDifference> {
        // Alike bytes say nothing of a record that the mapping changes.
        if self.mapped.is_none() {
            if a_format == b_format && a == b {
                return None;
            }
            let laid_out_alike = match (a_format, b_format) {
                (Format::Tf, Format::Of) => same_layout(a, b),
                (Format::Of, Format::Tf) => same_layout(b, a),
                _ => false,
            };
            if laid_out_alike {
                return None;
            }
        }
        let form_a = match &mut self.mapped {
            Some(mapped) => match mapped.form(&mut self.transcoder, a, a_format, &mut self.a) {
                Ok(picked) => picked,
                Err(err) => return Some(unmapped(&err)),
            },
            None => form(&mut self.transcoder, a, a_format, &mut self.a),
        };
        let form_b = form(&mut self.transcoder, b, b_format, &mut self.b);
        let (form_a, form_b) = (form_a.pick(a, &self.a), form_b.pick(b, &self.b));
        if let (Form::Record(x), Form::Record(y)) = (form_a, form_b) {
            if x == y {
                return None;
            }
        }
        let mut difference = compare_forms(validated(form_a), validated(form_b))?;
        if let (Some(at), Some(feature)) = (difference.at, &difference.feature) {
            let name = feature.as_bytes();
            let located = |record: &[u8], format| offset_in(record, format, name, at);
            let a_mapped = self.mapped.is_some();
            difference.bytes = (
                (!a_mapped).then(|| located(a, a_format)).flatten(),
                located(b, b_format),
            );
        }
        Some(difference)
    }

    /// A 128-bit digest of record `raw` (of `format`, of side A when `side_a`) that two
    /// records have alike when [`compare`](Canon::compare) finds them equal.
    pub(crate) fn digest(&mut self, raw: &[u8], format: Format, side_a: bool) -> u128 {
        let mapped = self.mapped.as_mut().filter(|_| side_a);
        // A big Example that parses is read as it is, its int64 lists by their tag 3,
        // rather than copied by the transcoder (which is quicker for small ones); a
        // SequenceExample (flattened), a record mapped and anything else go through the
        // transcoder.
        let plain_example = format == Format::Tf
            && mapped.is_none()
            && raw.len() >= COPY_SPARED
            && matches!(
                ofconvert_bridge::visit_example(raw, |_, _, _| {}),
                Ok(ofconvert_bridge::TfRecordType::Example)
            );
        let picked = match (plain_example, mapped) {
            (true, _) => Picked::Itself,
            (false, Some(mapped)) => {
                match mapped.form(&mut self.transcoder, raw, format, &mut self.a) {
                    Ok(picked) => picked,
                    // Equal to nothing of B: B's conversion has no record for it.
                    Err(_) => {
                        let mut refused = vec![0xfd];
                        refused.extend_from_slice(&xxh3_128(raw).to_le_bytes());
                        return xxh3_128(&refused);
                    }
                }
            }
            (false, None) => form(&mut self.transcoder, raw, format, &mut self.a),
        };
        let Canon {
            a,
            canonical,
            found,
            ..
        } = self;
        canonical.clear();
        // What the transcoder wrote parses; an OFRecord read is checked.
        let (form, dialect) = match picked {
            Picked::Itself if plain_example => (Form::Record(raw), Dialect::Example),
            Picked::Buffer => (Form::Record(&a[..]), Dialect::OfRecord),
            other => (validated(other.pick(raw, a)), Dialect::OfRecord),
        };
        match form {
            Form::Opaque(bytes) => {
                canonical.push(0xff);
                canonical.extend_from_slice(&xxh3_128(bytes).to_le_bytes());
            }
            Form::Record(record) => {
                sorted_features(record, dialect, found);
                for at in found.iter() {
                    put_feature(canonical, &at.view(record));
                }
            }
        }
        xxh3_128(canonical)
    }
}

/// Where a record's OFRecord form is: the record itself (an OFRecord, not yet checked), in
/// the buffer (an Example transcoded), or nowhere (not an Example).
enum Picked {
    Itself,
    Buffer,
    Opaque,
}

impl Picked {
    fn pick<'r>(&self, raw: &'r [u8], buffer: &'r [u8]) -> Form<'r> {
        match self {
            Picked::Itself => Form::Record(raw),
            Picked::Buffer => Form::Record(buffer),
            Picked::Opaque => Form::Opaque(raw),
        }
    }
}

/// Brings `raw` to OFRecord form: an Example is transcoded into `buffer` (an Example
/// without features is an OFRecord without features, which OneFlow could not read but
/// which compares); an OFRecord is its own form.
fn form(transcoder: &mut Transcoder, raw: &[u8], format: Format, buffer: &mut Vec<u8>) -> Picked {
    match format {
        Format::Of => Picked::Itself,
        Format::Tf => match transcoder.tf_to_of(raw, buffer) {
            Ok(()) => Picked::Buffer,
            Err(err) if matches!(err.kind(), ErrorKind::EmptyRecord) => {
                buffer.clear();
                Picked::Buffer
            }
            Err(_) => Picked::Opaque,
        },
    }
}

/// `form` once checked: an OFRecord that does not parse is compared as bytes.
fn validated(form: Form<'_>) -> Form<'_> {
    match form {
        Form::Record(record) if ofconvert_bridge::visit_ofrecord(record, |_, _, _| {}).is_err() => {
            Form::Opaque(record)
        }
        other => other,
    }
}

/// The features of an OFRecord that parses, sorted by name, the last of a repeated name
/// winning (as protobuf and TensorFlow read a map).
fn features(record: &[u8]) -> Vec<Feature<'_>> {
    let mut found = Vec::new();
    sorted_features(record, Dialect::OfRecord, &mut found);
    found.iter().map(|at| at.view(record)).collect()
}

/// Where a feature is in its record: a [`Feature`] kept across records in a reused buffer.
#[derive(Clone, Copy)]
struct FeatureAt {
    name: (usize, usize),
    kind: Option<FeatureKind>,
    list: (usize, usize),
}

impl FeatureAt {
    fn view<'r>(&self, record: &'r [u8]) -> Feature<'r> {
        Feature {
            name: &record[self.name.0..self.name.1],
            kind: self.kind,
            list: &record[self.list.0..self.list.1],
        }
    }
}

/// [`features`] into `found`, as places in `record` (an OFRecord, or an Example as
/// `dialect` says).
fn sorted_features(record: &[u8], dialect: Dialect, found: &mut Vec<FeatureAt>) {
    found.clear();
    let base = record.as_ptr() as usize;
    let range = |part: &[u8]| {
        let start = part.as_ptr() as usize - base;
        (start, start + part.len())
    };
    scan_entries(record, dialect, |name, kind, list| {
        // A slice of nothing may point anywhere.
        let list = if list.is_empty() { (0, 0) } else { range(list) };
        let name = if name.is_empty() { (0, 0) } else { range(name) };
        found.push(FeatureAt { name, kind, list })
    });
    let name = |at: &FeatureAt| &record[at.name.0..at.name.1];
    // Stable: entries of one name stay in wire order, and the last is kept.
    found.sort_by(|x, y| name(x).cmp(name(y)));
    let mut kept = 0;
    for index in 0..found.len() {
        if kept > 0 && name(&found[kept - 1]) == name(&found[index]) {
            found[kept - 1] = found[index];
        } else {
            found[kept] = found[index];
            kept += 1;
        }
    }
    found.truncate(kept);
}

fn compare_forms(a: Form<'_>, b: Form<'_>) -> Option<RecordDifference> {
    let (a, b) = match (a, b) {
        (Form::Record(a), Form::Record(b)) => (a, b),
        (Form::Opaque(x), Form::Opaque(y)) if x == y => return None,
        (a, b) => {
            // Bytes both sides have as they are: the first that differs is that of the
            // payloads.
            let byte = match (a, b) {
                (Form::Opaque(x), Form::Opaque(y)) => Some(first::common(x, y)),
                _ => None,
            };
            let shown = |form: Form<'_>| match form {
                Form::Opaque(bytes) => {
                    format!("not a record: {}", show_bytes_around(bytes, byte))
                }
                Form::Record(bytes) => format!("a record of {} bytes", bytes.len()),
            };
            let at = byte.map_or_else(String::new, |byte| format!(" at byte {byte}"));
            let offset = byte.map(|byte| byte as u64);
            return Some(RecordDifference {
                feature: None,
                what: format!("payloads that are no Example or OFRecord differ{at}"),
                values: (Some(shown(a)), Some(shown(b))),
                bytes: (offset, offset),
                at: None,
            });
        }
    };
    let (a, b) = (features(a), features(b));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.name.cmp(y.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let difference = match order {
            std::cmp::Ordering::Less => {
                i += 1;
                missing(&a[i - 1], true)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                missing(&b[j - 1], false)
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
                compare_features(&a[i - 1], &b[j - 1])
            }
        };
        if difference.is_some() {
            return difference;
        }
    }
    None
}

/// A record of A that the mapping refuses: the conversion would have failed on it.
fn unmapped(err: &ofconvert_bridge::Error) -> RecordDifference {
    RecordDifference {
        feature: err.feature().map(str::to_owned),
        what: format!("A's record does not map: {}", err.kind()),
        values: (None, None),
        bytes: (None, None),
        at: None,
    }
}

fn missing(feature: &Feature<'_>, in_a: bool) -> Option<RecordDifference> {
    let shown = Some(show(feature));
    Some(RecordDifference {
        feature: Some(String::from_utf8_lossy(feature.name).into_owned()),
        what: format!("only in {}", if in_a { "A" } else { "B" }),
        values: if in_a { (shown, None) } else { (None, shown) },
        bytes: (None, None),
        at: None,
    })
}

fn compare_features(a: &Feature<'_>, b: &Feature<'_>) -> Option<RecordDifference> {
    let same = class(a.kind) == class(b.kind)
        && match class(a.kind) {
            Class::None => true,
            Class::Bytes => bytes_values(a) == bytes_values(b),
            Class::Integer => integers(a) == integers(b),
            Class::Real => reals(a) == reals(b),
        };
    if same {
        return None;
    }
    let (what, at) = if class(a.kind) == class(b.kind) {
        let at = first_at(a, b);
        let words = at.map(At::words).unwrap_or_default();
        (format!("values differ{words}"), at)
    } else {
        ("kinds differ".to_owned(), None)
    };
    Some(RecordDifference {
        feature: Some(String::from_utf8_lossy(a.name).into_owned()),
        what,
        values: (Some(show_at(a, at)), Some(show_at(b, at))),
        bytes: (None, None),
        at,
    })
}

/// Appends `feature` in canonical form: its name, its class, its values as compared.
fn put_feature(out: &mut Vec<u8>, feature: &Feature<'_>) {
    out.extend_from_slice(&(feature.name.len() as u32).to_le_bytes());
    out.extend_from_slice(feature.name);
    match class(feature.kind) {
        Class::None => out.push(0),
        Class::Bytes => {
            out.push(1);
            for_each_bytes(feature.list, |value| {
                out.extend_from_slice(&(value.len() as u64).to_le_bytes());
                if value.len() > HASHED_VALUE {
                    out.extend_from_slice(&xxh3_128(value).to_le_bytes());
                } else {
                    out.extend_from_slice(value);
                }
            });
        }
        Class::Integer => {
            out.push(2);
            for_each_value(feature, |value| out.extend_from_slice(&value.to_le_bytes()));
        }
        Class::Real => {
            out.push(3);
            for_each_real(feature.list, feature.kind, |value| match value {
                Real::Float(bits) => {
                    out.push(b'f');
                    out.extend_from_slice(&bits.to_le_bytes());
                }
                Real::Double(bits) => {
                    out.push(b'd');
                    out.extend_from_slice(&bits.to_le_bytes());
                }
            });
        }
    }
    // The end of a feature: no name can run into the next.
    out.push(0xfe);
}

#[cfg(test)]
mod tests;
