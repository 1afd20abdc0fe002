//! JSON output: the `inspect --json` schema (see `docs/cli.md`), the tensor records shared with
//! `tensors --json`, and a serde_json formatter that keeps terminal controls out of strings.
//!
//! Records are `#[derive(Serialize)]` structs, so the field order in the source is the order in
//! the output: the schema is the struct. Values and arrays serialize straight from the header
//! bytes (no intermediate `serde_json::Value`), so a 128k-token vocabulary streams out through
//! the caller's buffered writer.

use std::io;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use sha2::{Digest, Sha256};
use sipllm_model::config::{ConfigError, ModelConfig, PerLayer, SlidingWindowPattern};

use crate::escape::{is_unsafe_char, may_escape};
use crate::{Arr, Entry, SetFile, TensorRow, Val, View, WarningRow, weights};

/// A serde_json formatter that writes compact JSON and additionally escapes, as `\uXXXX`, the
/// characters JSON allows raw but a terminal would act on or not show (DEL, C1 controls, bidi
/// overrides, invisible characters: `escape::is_unsafe_char`). JSON parsers read them back
/// unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct SafeFormatter;

impl serde_json::ser::Formatter for SafeFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Every unsafe character's UTF-8 encoding contains one of the escaper's lead bytes:
        // most fragments have none and are written as they are.
        if !fragment.bytes().any(may_escape) {
            return writer.write_all(fragment.as_bytes());
        }
        let mut rest = fragment;
        while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_unsafe_char(c)) {
            writer.write_all(rest.get(..i).unwrap_or_default().as_bytes())?;
            // One `\uXXXX` per UTF-16 unit: a surrogate pair past the BMP (the tags, U+E0000…).
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(writer, "\\u{u:04x}")?;
            }
            rest = rest.get(i + c.len_utf8()..).unwrap_or_default();
        }
        writer.write_all(rest.as_bytes())
    }
}

/// Writes `value` as one line of compact JSON to `out`.
pub fn write_line<W: io::Write, T: Serialize + ?Sized>(out: &mut W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, SafeFormatter);
    // serde_json hands back the writer's own `io::Error` (a closed pipe stays `BrokenPipe`).
    value.serialize(&mut ser).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// The version of the `inspect --json` schema (docs/cli.md): raised whenever a field is
/// added, so a script can tell which fields to expect. 1 was the schema without this field.
pub const SCHEMA_VERSION: u32 = 2;

/// How `inspect --json` writes array values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayMode {
    /// Every element (the default).
    Full,
    /// At most this many elements (`--array-limit N`; `--no-arrays` is 0), with the array's
    /// `payload_sha256` and, when elements were left out, `"truncated": true`.
    Limit(u64),
    /// [`Limit`](Self::Limit) without `payload_sha256`: no pass over the elements not shown.
    /// What the browser page shows (hashing a Llama-3 header's 7 MB of arrays was most of its
    /// open time in wasm).
    Preview(u64),
}

/// The `inspect --json` document.
#[derive(Debug, Serialize)]
pub struct InspectDoc<'v, 'a> {
    schema_version: u32,
    format: &'static str,
    version: u32,
    endian: &'static str,
    file_size: u64,
    alignment: u64,
    data_offset: u64,
    kv_count: u64,
    tensor_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    split: Option<SplitDoc<'v>>,
    summary: SummaryDoc<'v>,
    metadata: Metadata<'v, 'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tensors: Option<Vec<TensorDoc<'v, 'a>>>,
    warnings: Vec<WarningDoc<'v>>,
}

impl<'v, 'a> InspectDoc<'v, 'a> {
    /// The document for `view`, listing only the entries and tensors given (after
    /// `--filter`); `tensors` is `None` for `--no-tensors`.
    pub fn new(
        view: &'v View<'a>,
        config: &'v (ModelConfig, Vec<ConfigError>),
        entries: Vec<&'v Entry<'a>>,
        tensors: Option<Vec<&'v TensorRow<'a>>>,
        arrays: ArrayMode,
    ) -> InspectDoc<'v, 'a> {
        let s = &view.summary;
        InspectDoc {
            schema_version: SCHEMA_VERSION,
            format: s.format.name(),
            version: s.version,
            endian: s.endian,
            file_size: s.file_size,
            alignment: s.alignment,
            data_offset: s.data_offset,
            kv_count: s.kv_count,
            tensor_count: s.tensor_count,
            split: view.split.as_ref().map(|set| SplitDoc {
                count: set.files.len(),
                tensors_count: set.declared_tensors,
                files: set.files.iter().map(SetFileDoc).collect(),
            }),
            summary: SummaryDoc::new(view, config),
            metadata: Metadata(entries, arrays),
            tensors: tensors.map(|ts| ts.into_iter().map(TensorDoc).collect()),
            warnings: view.warnings.iter().map(WarningDoc).collect(),
        }
    }
}

#[derive(Debug)]
struct Metadata<'v, 'a>(Vec<&'v Entry<'a>>, ArrayMode);

/// `"split"`: a split set's shard count, `split.tensors.count`, and files.
#[derive(Debug, Serialize)]
struct SplitDoc<'v> {
    count: usize,
    tensors_count: i32,
    files: Vec<SetFileDoc<'v>>,
}

#[derive(Debug)]
struct SetFileDoc<'v>(&'v SetFile);

impl Serialize for SetFileDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("path", &self.0.name)?;
        map.serialize_entry("file_size", &self.0.file_size)?;
        map.serialize_entry("tensors", &self.0.tensors)?;
        map.end()
    }
}

impl Serialize for Metadata<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for e in &self.0 {
            seq.serialize_element(&EntryDoc(e, self.1))?;
        }
        seq.end()
    }
}

#[derive(Debug)]
struct EntryDoc<'v, 'a>(&'v Entry<'a>, ArrayMode);

impl Serialize for EntryDoc<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("key", &Bytes(e.key))?;
        map.serialize_entry("type", e.value.type_name())?;
        let Val::Array(a) = &e.value else {
            map.serialize_entry("value", &ValDoc(e.value))?;
            return map.end();
        };
        map.serialize_entry("array_type", a.elem_type)?;
        map.serialize_entry("len", &a.len)?;
        match self.1 {
            ArrayMode::Full => map.serialize_entry("value", &ValDoc(e.value))?,
            ArrayMode::Limit(n) | ArrayMode::Preview(n) => {
                if let ArrayMode::Limit(_) = self.1 {
                    map.serialize_entry("payload_sha256", &hex(&Sha256::digest(a.payload())))?;
                }
                if n > 0 {
                    map.serialize_entry("value", &Limited(*a, n))?;
                }
                map.serialize_entry("truncated", &(a.len > n))?;
            }
        }
        map.end()
    }
}

/// The first `.1` elements of an array (nested arrays cut the same way).
#[derive(Debug)]
struct Limited<'a>(Arr<'a>, u64);

impl Serialize for Limited<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Limited(a, n) = *self;
        let shown = a.len.min(n);
        let mut seq = s.serialize_seq(usize::try_from(shown).ok())?;
        for item in a.iter().take(usize::try_from(shown).unwrap_or(usize::MAX)) {
            match item {
                Val::Array(inner) => seq.serialize_element(&Limited(inner, n))?,
                other => seq.serialize_element(&ValDoc(other))?,
            }
        }
        seq.end()
    }
}

/// `"summary"`: what a script would otherwise recompute from the metadata and tensors.
#[derive(Debug, Serialize)]
struct SummaryDoc<'v> {
    architecture: Option<&'v str>,
    known_architecture: bool,
    name: Option<&'v str>,
    file_type: Option<u64>,
    quantization: QuantizationDoc,
    hyperparameters: HyperDoc<'v>,
    /// Missing required keys and mistyped values (those fields are `null`).
    config_errors: Vec<ConfigErrorDoc>,
    parameters: u64,
    /// Stored bytes of every tensor (`null` when a type has no known size).
    bytes: Option<u64>,
    bits_per_weight: Option<f64>,
    types: Vec<TypeDoc>,
}

impl<'v> SummaryDoc<'v> {
    fn new(view: &View<'_>, (c, problems): &'v (ModelConfig, Vec<ConfigError>)) -> SummaryDoc<'v> {
        let (total, by_type) = weights(&view.tensors);
        SummaryDoc {
            architecture: (!c.architecture.is_empty()).then_some(c.architecture.as_str()),
            known_architecture: c.known_architecture,
            name: c.name.as_deref(),
            file_type: c.file_type,
            quantization: QuantizationDoc {
                label: c.quantization.name(),
                guessed: c.quantization.is_guess(),
            },
            hyperparameters: HyperDoc(c),
            config_errors: problems
                .iter()
                .map(|e| ConfigErrorDoc {
                    code: e.code(),
                    key: e.key().to_owned(),
                    message: e.to_string(),
                })
                .collect(),
            parameters: total.params,
            bytes: (total.unknown_size == 0).then_some(total.bytes),
            bits_per_weight: total.bits_per_weight(),
            types: by_type
                .iter()
                .map(|(ty, w)| TypeDoc {
                    ggml_type: crate::type_name(*ty),
                    tensors: w.tensors,
                    parameters: w.params,
                    bytes: (w.unknown_size == 0).then_some(w.bytes),
                    bits_per_weight: w.bits_per_weight(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
struct QuantizationDoc {
    /// llama.cpp's name (`Q4_K_M`); `null` for a file type llama.cpp never named.
    label: Option<&'static str>,
    /// True when guessed from the tensor types (no `general.file_type`).
    guessed: bool,
}

#[derive(Debug, Serialize)]
struct ConfigErrorDoc {
    code: &'static str,
    key: String,
    message: String,
}

#[derive(Debug, Serialize)]
struct TypeDoc {
    ggml_type: String,
    tensors: u64,
    parameters: u64,
    bytes: Option<u64>,
    bits_per_weight: Option<f64>,
}

/// The [`ModelConfig`] fields: absent keys as `null`, per-layer values as a number (uniform)
/// or a list (one per layer).
#[derive(Debug)]
struct HyperDoc<'v>(&'v ModelConfig);

impl Serialize for HyperDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("context_length", &c.context_length)?;
        map.serialize_entry("embedding_length", &c.embedding_length)?;
        map.serialize_entry("block_count", &c.block_count)?;
        map.serialize_entry("feed_forward_length", &c.feed_forward_length.as_ref().map(Layered))?;
        map.serialize_entry("head_count", &c.head_count.as_ref().map(Layered))?;
        map.serialize_entry("head_count_kv", &c.head_count_kv.as_ref().map(Layered))?;
        map.serialize_entry("key_length", &c.key_length)?;
        map.serialize_entry("value_length", &c.value_length)?;
        map.serialize_entry("expert_count", &c.expert_count)?;
        map.serialize_entry("expert_used_count", &c.expert_used_count)?;
        map.serialize_entry("rope_freq_base", &c.rope.freq_base.map(Float))?;
        map.serialize_entry("rope_dimension_count", &c.rope.dimension_count)?;
        map.serialize_entry("rope_scaling_type", &c.rope.scaling_type)?;
        map.serialize_entry("rope_scaling_factor", &c.rope.scaling_factor.map(Float))?;
        map.serialize_entry(
            "rope_scaling_original_context_length",
            &c.rope.original_context_length,
        )?;
        map.serialize_entry("layer_norm_epsilon", &c.layer_norm_epsilon.map(Float))?;
        map.serialize_entry("layer_norm_rms_epsilon", &c.layer_norm_rms_epsilon.map(Float))?;
        map.serialize_entry("sliding_window", &c.sliding_window)?;
        map.serialize_entry(
            "sliding_window_pattern",
            &c.sliding_window_pattern.as_ref().map(Pattern),
        )?;
        map.serialize_entry("vocab_size", &c.vocab_size)?;
        map.serialize_entry("tokenizer", &c.tokenizer)?;
        map.end()
    }
}

/// A per-layer value: a number, or one number per layer.
#[derive(Debug)]
struct Layered<'v>(&'v PerLayer<u64>);

impl Serialize for Layered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            PerLayer::Uniform(v) => s.serialize_u64(*v),
            PerLayer::Layers(v) => v.serialize(s),
        }
    }
}

/// A sliding-window pattern: `{"period": N}` or one bool per layer (`true`: sliding).
#[derive(Debug)]
struct Pattern<'v>(&'v SlidingWindowPattern);

impl Serialize for Pattern<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            SlidingWindowPattern::Period(n) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("period", n)?;
                map.end()
            }
            SlidingWindowPattern::Layers(v) => v.serialize(s),
        }
    }
}

/// A float as the metadata values are written (non-finite as strings).
#[derive(Debug, Clone, Copy)]
struct Float(f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        float(s, self.0)
    }
}

/// A value: integers exact, floats as numbers (non-finite as strings), strings as strings (or
/// `{"bytes_hex": …}` when not UTF-8), arrays as lists (nested arrays as nested lists).
#[derive(Debug)]
pub struct ValDoc<'a>(pub Val<'a>);

impl Serialize for ValDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Val::Int(_, v) => match (u64::try_from(v), i64::try_from(v)) {
                (Ok(u), _) => s.serialize_u64(u),
                (_, Ok(i)) => s.serialize_i64(i),
                // No GGUF integer is outside u64 ∪ i64.
                _ => s.serialize_i128(v),
            },
            Val::F32(x) => float(s, f64::from(x)),
            Val::F64(x) => float(s, x),
            Val::Bool(b) => s.serialize_bool(b),
            Val::Str(b) => Bytes(b).serialize(s),
            Val::Array(a) => {
                let mut seq = s.serialize_seq(usize::try_from(a.len).ok())?;
                for item in a.iter() {
                    seq.serialize_element(&ValDoc(item))?;
                }
                seq.end()
            }
        }
    }
}

fn float<S: Serializer>(s: S, x: f64) -> Result<S::Ok, S::Error> {
    if x.is_nan() {
        s.serialize_str("NaN")
    } else if x == f64::INFINITY {
        s.serialize_str("Infinity")
    } else if x == f64::NEG_INFINITY {
        s.serialize_str("-Infinity")
    } else {
        s.serialize_f64(x)
    }
}

/// Stored string bytes: a JSON string when UTF-8, else `{"bytes_hex": "…"}`.
#[derive(Debug)]
pub struct Bytes<'a>(pub &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match simdutf8::basic::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("bytes_hex", &hex(self.0))?;
                map.end()
            }
        }
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// One tensor record (`inspect --json` `tensors[]`, and each line of `tensors --json`).
#[derive(Debug)]
pub struct TensorDoc<'v, 'a>(pub &'v TensorRow<'a>);

impl Serialize for TensorDoc<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut map = s.serialize_map(Some(7 + usize::from(t.shard.is_some())))?;
        map.serialize_entry("name", &Bytes(t.name))?;
        map.serialize_entry("ggml_type", &GgmlTypeName(t.ggml_type))?;
        map.serialize_entry("ne", t.ne.as_slice())?;
        map.serialize_entry("shape", t.shape().as_slice())?;
        if let Some(shard) = t.shard {
            map.serialize_entry("shard", &shard)?;
        }
        map.serialize_entry("offset", &t.offset)?;
        map.serialize_entry("abs_offset", &t.abs_offset)?;
        map.serialize_entry("nbytes", &t.nbytes)?;
        map.end()
    }
}

/// A ggml type as gguf-py prints it; codes this build does not know as `"unknown(N)"`.
#[derive(Debug)]
struct GgmlTypeName(sipllm_gguf::GgmlType);

impl Serialize for GgmlTypeName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::type_name(self.0))
    }
}

#[derive(Debug, Serialize)]
struct WarningDoc<'v>(#[serde(serialize_with = "warning")] &'v WarningRow);

fn warning<S: Serializer>(w: &&WarningRow, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(3 + usize::from(w.shard.is_some())))?;
    if let Some(shard) = w.shard {
        map.serialize_entry("shard", &shard)?;
    }
    map.serialize_entry("code", w.code)?;
    map.serialize_entry("offset", &w.offset)?;
    map.serialize_entry("message", &w.located_message())?;
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_json<T: Serialize>(v: &T) -> String {
        let mut out = Vec::new();
        write_line(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn terminal_controls_are_escaped_but_read_back() {
        let s = "a\u{1b}b\u{9b}c\u{202e}d\u{7f}é🦙";
        let json = to_json(&s);
        assert_eq!(json, "\"a\\u001bb\\u009bc\\u202ed\\u007fé🦙\"\n");
        let back: String = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn every_unsafe_character_is_escaped() {
        // Checks the byte prefilter in `write_string_fragment` misses none.
        for c in (0..=0x10ffffu32).filter_map(char::from_u32).filter(|&c| is_unsafe_char(c)) {
            let s = format!("x{c}y");
            let json = to_json(&s);
            let json = json.trim_end_matches('\n');
            assert!(!json.contains(c), "U+{:04X} written raw: {json}", c as u32);
            assert_eq!(serde_json::from_str::<String>(json).unwrap(), s);
        }
    }

    #[test]
    fn values_follow_the_schema() {
        assert_eq!(to_json(&ValDoc(Val::Int("UINT64", u64::MAX.into()))), "18446744073709551615\n");
        assert_eq!(to_json(&ValDoc(Val::Int("INT64", i64::MIN.into()))), "-9223372036854775808\n");
        assert_eq!(to_json(&ValDoc(Val::F32(1e-5))), "9.999999747378752e-6\n");
        assert_eq!(to_json(&ValDoc(Val::F64(f64::NAN))), "\"NaN\"\n");
        assert_eq!(to_json(&ValDoc(Val::F32(f32::NEG_INFINITY))), "\"-Infinity\"\n");
        assert_eq!(to_json(&ValDoc(Val::Str(b"\xffok"))), "{\"bytes_hex\":\"ff6f6b\"}\n");
    }
}
