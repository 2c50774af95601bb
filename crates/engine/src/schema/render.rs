//! What a schema says in words and code: the reader lines for OneFlow and TensorFlow, the
//! warnings, and Python spellings.

use std::fmt::Write as _;

use ofconvert_bridge::FeatureKind;

use super::*;

impl FeatureSchema {
    /// The only kind, when there is exactly one and it is set.
    pub fn single_kind(&self) -> Option<FeatureKind> {
        match self.kinds.as_slice() {
            [Some(kind)] => Some(*kind),
            _ => None,
        }
    }

    /// The kinds as protobuf field names, `none` for a kind-less `Feature`.
    pub fn kind_names(&self) -> Vec<&'static str> {
        self.kinds
            .iter()
            .map(|kind| kind_names::name(*kind))
            .collect()
    }
}

/// Why OneFlow cannot take the images a warning counts, and how to get them into a form it
/// can: the end of every such warning, which a report of several may say once.
pub const IMAGE_ADVICE: &str = "PNG, GIF, BMP, WebP and CMYK JPEGs crash the process, \
                                grayscale JPEGs decode to garbage; convert with --images jpeg \
                                (re-encodes those as RGB JPEG) or --images raw (decodes every \
                                image to its pixels)";

impl FeatureSchema {
    /// Whether OneFlow 0.9's `OFRecordImageDecoder` reads every value: one 8-bit colour
    /// JPEG per record.
    fn oneflow_image_decodable(&self) -> bool {
        self.images.as_ref().is_some_and(|facts| {
            facts.oneflow_cannot_decode == 0 && self.min_values == 1 && self.max_values == 1
        })
    }

    /// For a feature whose kinds are all numeric (some int64, some float...): the dtype
    /// one raw decoder reads them all with, as OneFlow casts what is stored.
    fn common_numeric_dtype(&self) -> Option<&'static str> {
        if self.kinds.is_empty()
            || self
                .kinds
                .iter()
                .any(|kind| matches!(kind, None | Some(FeatureKind::Bytes)))
        {
            return None;
        }
        let has = |kind| self.kinds.contains(&Some(kind));
        Some(match self.kinds.as_slice() {
            [Some(kind)] => oneflow_dtype(*kind),
            _ if has(FeatureKind::Double) => "flow.float64",
            _ if has(FeatureKind::Float) => "flow.float32",
            // int32 and int64 together.
            _ => "flow.int64",
        })
    }
}

fn oneflow_dtype(kind: FeatureKind) -> &'static str {
    match kind {
        FeatureKind::Float => "flow.float32",
        FeatureKind::Double => "flow.float64",
        FeatureKind::Int32 => "flow.int32",
        FeatureKind::Int64 | FeatureKind::Bytes => "flow.int64",
    }
}

impl Schema {
    /// What would make OneFlow's reader or decoders abort or read wrong values: a feature
    /// missing from some records, a kind that varies or is not set, bytes lists a bytes
    /// decoder cannot read, images its image decoder cannot decode, integers that do not
    /// fit the `flow.int32` OneFlow's examples decode them as.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for feature in &self.features {
            let name = &feature.name;
            if feature.present < self.records {
                warnings.push(format!(
                    "feature \"{name}\" is missing from {} of {} records: a OneFlow decoder of \
                     it aborts on those records",
                    self.records - feature.present,
                    self.records
                ));
            }
            if feature.kinds.contains(&None) {
                warnings.push(format!(
                    "feature \"{name}\" has no kind set in some records: OneFlow aborts on it"
                ));
            }
            let set_kinds: Vec<&str> = feature
                .kinds
                .iter()
                .flatten()
                .map(|kind| kind.list_name())
                .collect();
            if set_kinds.len() > 1 {
                let kinds = set_kinds.join(", ");
                warnings.push(match feature.common_numeric_dtype() {
                    Some(dtype) => format!(
                        "feature \"{name}\" changes kind between records ({kinds}): one \
                         OFRecordRawDecoder with dtype={dtype} reads it, as OneFlow casts what \
                         is stored"
                    ),
                    None => format!(
                        "feature \"{name}\" changes kind between records ({kinds}): no single \
                         decoder reads it"
                    ),
                });
            }
            if let Some(facts) = &feature.images {
                if facts.oneflow_cannot_decode > 0 {
                    let total: u64 = facts.formats.values().sum();
                    warnings.push(format!(
                        "feature \"{name}\": {} of {total} images are ones OneFlow 0.9's \
                         OFRecordImageDecoder cannot decode ({}; the first in record #{}): \
                         {IMAGE_ADVICE}",
                        facts.oneflow_cannot_decode,
                        facts.undecodable_description(),
                        facts.first_undecodable.unwrap_or(0),
                    ));
                }
            }
            if feature.single_kind() == Some(FeatureKind::Bytes)
                && feature.images.is_none()
                && (feature.min_values, feature.max_values) != (1, 1)
            {
                warnings.push(format!(
                    "feature \"{name}\" holds {} to {} bytes values per record: \
                     OFRecordBytesDecoder aborts on a record that does not hold exactly one",
                    feature.min_values, feature.max_values
                ));
            }
            if let Some(range) = feature.integers {
                if !range.fits_int32() {
                    warnings.push(format!(
                        "feature \"{name}\" holds integers from {} to {}, beyond int32: decode \
                         it with dtype=flow.int64 (a flow.int32 decoder wraps them silently)",
                        range.min, range.max
                    ));
                }
            }
        }
        warnings
    }

    /// Python lines that read these features in OneFlow, given the `OFRecordReader(...)`
    /// call that opens the dataset. No line it prints makes OneFlow 0.9 abort or crash on
    /// these records: where a decoder would, a comment says why and what works instead.
    pub fn oneflow_snippet(&self, reader: &str) -> String {
        let mut out = String::from("import oneflow as flow\n\n");
        if self.records == 0 {
            out.push_str(
                "# no records: there is nothing to read (OFRecordReader aborts on a dataset \
                 without records)\n",
            );
            return out;
        }
        // A dataset in a store: the comment saying how to copy it comes before the call.
        let (comment, call) = reader.rsplit_once('\n').unwrap_or(("", reader));
        if !comment.is_empty() {
            let _ = writeln!(out, "{comment}");
        }
        let _ = writeln!(out, "reader = {call}");
        out.push_str("record = reader()\n");
        for feature in &self.features {
            let literal = python_string(&feature.name);
            let variable = python_identifier(&feature.name);
            let line = match feature.single_kind() {
                Some(FeatureKind::Bytes) => self.bytes_line(feature, &literal, &variable),
                Some(kind) => raw_line(feature, &literal, &variable, oneflow_dtype(kind)),
                None => match feature.common_numeric_dtype() {
                    Some(dtype) => {
                        let mut line = raw_line(feature, &literal, &variable, dtype);
                        let _ = write!(line, "  # kinds {}", feature.kind_names().join(", "));
                        line
                    }
                    None => format!(
                        "# {literal}: kinds {}: no OneFlow decoder reads it",
                        feature.kind_names().join(", ")
                    ),
                },
            };
            if feature.present < self.records && !line.starts_with('#') {
                // A decoder aborts on the records without the feature: left commented out.
                let _ = write!(
                    out,
                    "# {literal}: missing from {} of {} records, on which a decoder aborts: ",
                    self.records - feature.present,
                    self.records
                );
            }
            out.push_str(&line);
            out.push('\n');
            if let Some(names) = &feature.class_names {
                let names: Vec<String> = names.iter().map(|name| python_string(name)).collect();
                let _ = writeln!(
                    out,
                    "{variable}_names = [{}]  # TFDS's class names, by value",
                    names.join(", ")
                );
            }
        }
        out
    }

    /// The `feature_description` dict for `tf.io.parse_single_example`: a fixed-length
    /// feature for those every record has with the same number of values, a `VarLenFeature`
    /// for the others. OneFlow's int32 and double read as TensorFlow's int64 and float, as
    /// `of2tf` writes them.
    pub fn tf_snippet(&self) -> String {
        let mut out = String::from("import tensorflow as tf\n\nfeature_description = {\n");
        for feature in &self.features {
            let literal = python_string(&feature.name);
            let Some(kind) = feature.single_kind() else {
                let _ = writeln!(
                    out,
                    "    # {literal}: kinds {}",
                    feature.kind_names().join(", ")
                );
                continue;
            };
            let dtype = match kind {
                FeatureKind::Bytes => "tf.string",
                FeatureKind::Float | FeatureKind::Double => "tf.float32",
                FeatureKind::Int32 | FeatureKind::Int64 => "tf.int64",
            };
            let fixed = feature.present == self.records && feature.min_values == feature.max_values;
            let spec = if fixed {
                let shape = match feature.min_values {
                    1 => "[]".to_owned(),
                    n => format!("[{n}]"),
                };
                format!("tf.io.FixedLenFeature({shape}, {dtype})")
            } else {
                format!("tf.io.VarLenFeature({dtype})")
            };
            let _ = writeln!(out, "    {literal}: {spec},");
        }
        out.push_str("}\n");
        out
    }
}

impl Schema {
    /// The decoder line of a bytes feature: the raw decoder for pixels `--images raw` wrote
    /// (one shape in every record), the image decoder only where OneFlow 0.9 decodes every
    /// value, the bytes decoder where each record holds one value, else a comment.
    fn bytes_line(&self, feature: &FeatureSchema, literal: &str, variable: &str) -> String {
        let (min, max) = (feature.min_values, feature.max_values);
        if (min, max) != (1, 1) {
            return format!(
                "# {literal}: {min} to {max} bytes values per record; OneFlow's decoders read \
                 exactly one"
            );
        }
        let shape_name = format!("{}/shape", feature.name);
        if let Some(shape) = self.features.iter().find(|f| f.name == shape_name) {
            return match (&shape.same_values, shape.present == self.records) {
                (Some(dims), true) if dims.len() == 3 => format!(
                    "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({}, {}, {}), \
                     dtype=flow.uint8)(record)",
                    dims[0], dims[1], dims[2]
                ),
                _ => format!(
                    "# {literal}: raw pixels whose shape differs between records ({} first \
                     differs from the first record's): OFRecordRawDecoder reads one shape; \
                     read {} and the bytes with OFRecordBytesDecoder",
                    shape
                        .first_difference
                        .map_or("some record".to_owned(), |r| format!("record #{r}")),
                    python_string(&shape_name)
                ),
            };
        }
        if feature.oneflow_image_decodable() {
            return format!(
                "{variable} = flow.nn.OFRecordImageDecoder({literal}, color_space=\"RGB\")(record)"
            );
        }
        let mut line = format!("{variable} = flow.nn.OFRecordBytesDecoder({literal})(record)");
        if let Some(facts) = &feature.images {
            let _ = write!(
                line,
                "  # encoded images, not decoded here: OFRecordImageDecoder cannot decode {} of \
                 them ({}; it decodes colour JPEGs only, and color_space=\"GRAY\" aborts); \
                 tf2of --images jpeg or --images raw makes them readable",
                facts.oneflow_cannot_decode,
                facts.undecodable_description()
            );
        }
        line
    }
}

fn raw_line(feature: &FeatureSchema, literal: &str, variable: &str, dtype: &str) -> String {
    if feature.min_values == feature.max_values {
        format!(
            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), \
             dtype={dtype})(record)",
            feature.min_values
        )
    } else {
        // With truncate, OneFlow copies min(count, prod(shape)) values and zero-fills the
        // rest: the longest list sets the shape, nothing is cut.
        format!(
            "{variable} = flow.nn.OFRecordRawDecoder({literal}, shape=({},), dtype={dtype}, \
             truncate=True)(record)  # {} to {} values per record: shorter ones are zero-padded",
            feature.max_values, feature.min_values, feature.max_values
        )
    }
}

/// A Python string literal: JSON's escapes are valid Python too.
pub(crate) fn python_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
}

/// A Python variable name made from a feature name: `image/class/label` → `image_class_label`.
fn python_identifier(name: &str) -> String {
    let mut identifier: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if identifier.is_empty() || identifier.starts_with(|c: char| c.is_ascii_digit()) {
        identifier.insert(0, 'f');
    }
    if is_python_keyword(&identifier) {
        identifier.push('_');
    }
    identifier
}

fn is_python_keyword(word: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    KEYWORDS.contains(&word) || ["flow", "reader", "record", "tf"].contains(&word)
}
