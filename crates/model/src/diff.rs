//! Comparing two models: what `sipllm diff` reports, as a typed [`ModelDiff`] other tools can
//! embed.
//!
//! Three layers, each only as deep as it needs to go:
//!
//! 1. **Metadata**, typed: a key in one model only is [`MetaChange::Added`] or
//!    [`MetaChange::Removed`]; a key whose stored type or value differs is
//!    [`MetaChange::Changed`]. GGUF values keep their stored type (`u32` and `i64` holding 2
//!    differ); `.llmw` values have that format's types (`i64`, `f64`, `str` and arrays of
//!    them). Arrays are never copied: a GGUF array stored alike in both files is compared as
//!    one slice of bytes (a 128k-token vocabulary is one `memcmp`), and otherwise element by
//!    element, giving the count of differing elements and the first few indices
//!    ([`Detail::Elements`]). Long strings are summarised by a prefix, their length and the
//!    first differing byte ([`Detail::Text`]). Floats compare by their bits, so a NaN equals
//!    itself.
//! 2. **The tensor table**: tensors in one model only, and tensors whose type or row-major
//!    shape differ. Offsets are not compared: where the data lies is layout, not content.
//! 3. **Tensor data**, unless [`DiffOptions::data`] is off: every tensor with the same name,
//!    type and shape in both is hashed (XXH3-128) and the hashes compared. Each model is read
//!    once, sequentially in its own file order, both at the same time on two threads.
//!
//! A split set is one model ([`SplitFile`](sipllm_streaming::SplitFile)): its metadata is its first
//! shard's, so against the merged file only the `split.*` keys differ.
//!
//! ```
//! use sipllm_gguf::GgmlType;
//! use sipllm_testkit::{GgufBuilder, Value};
//! use sipllm_model::diff::{DiffOptions, MetaChange, diff_models};
//! use sipllm_streaming::{MemSource, Model, OpenOptions};
//!
//! let file = |name: &str| {
//!     let bytes = GgufBuilder::new()
//!         .kv("general.name", Value::String(name.into()))
//!         .tensor("w", GgmlType::F32, &[4])
//!         .build();
//!     Model::from_source(MemSource::new(bytes), &OpenOptions::default())
//! };
//! let (a, b) = (file("one")?, file("two")?);
//! let d = diff_models(&a, &b, &DiffOptions::default())?;
//! assert!(!d.is_equal());
//! assert!(matches!(&d.metadata[..], [MetaChange::Changed { key, .. }] if key == b"general.name"));
//! assert!(d.tensors.is_empty());
//! assert_eq!(d.data.as_ref().map(|x| x.changed.len()), Some(0));
//! assert!(diff_models(&a, &a, &DiffOptions::default())?.is_equal());
//! # Ok::<(), sipllm_streaming::StreamError>(())
//! ```

use std::collections::HashMap;

use sipllm_gguf::{GgmlType, MetaValue, ValueType, value::ArrayView, value::MetaStr};
use smallvec::SmallVec;

use sipllm_streaming::Meta;
use sipllm_streaming::Model;
use sipllm_streaming::StreamError;
use sipllm_streaming::{SourceTensor, WeightSource};

/// What to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffOptions {
    /// Hash and compare tensor data (default: on). Off, only the headers are read.
    pub data: bool,
    /// How many differing indices (or tensor names) to list per array (default 5).
    pub max_indices: usize,
    /// How many bytes of a string value a summary keeps (default 64).
    pub max_text: usize,
}

impl Default for DiffOptions {
    fn default() -> DiffOptions {
        DiffOptions { data: true, max_indices: 5, max_text: 64 }
    }
}

impl DiffOptions {
    /// Only metadata and the tensor table: no tensor byte is read.
    pub fn metadata_only() -> DiffOptions {
        DiffOptions { data: false, ..DiffOptions::default() }
    }
}

/// Every difference between two models. Empty lists (and no changed data) mean equal.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDiff {
    /// Differences in the file itself: format, version, byte order.
    pub file: Vec<FileChange>,
    /// Metadata differences: the first model's keys in its order, then the keys only the
    /// second has, in its order.
    pub metadata: Vec<MetaChange>,
    /// Tensor-table differences, in the same order.
    pub tensors: Vec<TensorChange>,
    /// The data comparison; `None` when not asked for ([`DiffOptions::data`]).
    pub data: Option<DataDiff>,
}

impl ModelDiff {
    /// True when nothing compared differs.
    pub fn is_equal(&self) -> bool {
        self.file.is_empty()
            && self.metadata.is_empty()
            && self.tensors.is_empty()
            && self.data.as_ref().is_none_or(|d| d.changed.is_empty())
    }
}

/// A difference in the file's framing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// `format`, `version` or `endian`.
    pub what: &'static str,
    /// The first model's.
    pub old: String,
    /// The second model's.
    pub new: String,
}

/// One metadata difference. Keys are bytes as stored (UTF-8 unless parsed leniently).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaChange {
    /// Only the second model has the key.
    Added {
        /// The key.
        key: Vec<u8>,
        /// Its value there.
        new: ValueSummary,
    },
    /// Only the first model has the key.
    Removed {
        /// The key.
        key: Vec<u8>,
        /// Its value there.
        old: ValueSummary,
    },
    /// Both have the key, with a different type or value.
    Changed {
        /// The key.
        key: Vec<u8>,
        /// The first model's value.
        old: ValueSummary,
        /// The second model's value.
        new: ValueSummary,
        /// Where two arrays or strings of the same type differ.
        detail: Option<Detail>,
    },
}

impl MetaChange {
    /// The key.
    pub fn key(&self) -> &[u8] {
        match self {
            MetaChange::Added { key, .. }
            | MetaChange::Removed { key, .. }
            | MetaChange::Changed { key, .. } => key,
        }
    }
}

/// A value as a diff shows it: its stored type and a bounded summary.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueSummary {
    /// The stored type: `u32`, `f32`, `str`, `[str]`, `[[array]]`-style names (`[array]` for
    /// arrays of arrays); `.llmw` types are `i64`, `f64`, `str`, `[i64]`, `[f64]`, `[str]`.
    pub ty: String,
    /// The value, or its summary.
    pub value: Shown,
}

/// A bounded rendering of a value: scalars whole, strings by a prefix, arrays by count.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// An integer.
    Int(i128),
    /// A float (`f32` widened exactly).
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string: its first bytes (at most [`DiffOptions::max_text`]) and its length.
    Str {
        /// The first bytes.
        prefix: Vec<u8>,
        /// The whole length in bytes.
        len: u64,
    },
    /// An array: its element count (elements are never copied into a summary).
    Array {
        /// Number of elements.
        len: u64,
    },
}

/// Where two values of the same type differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// Arrays: over the indices both have, how many elements differ and the first few of
    /// them (at most [`DiffOptions::max_indices`]). Lengths are in the summaries.
    Elements {
        /// Differing elements among the common indices.
        differing: u64,
        /// The first differing indices, ascending.
        first: Vec<u64>,
    },
    /// Strings: the first byte offset at which they differ (the shorter one's length when
    /// one is a prefix of the other).
    Text {
        /// The offset.
        first_byte: u64,
    },
}

/// A tensor as a diff shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSummary {
    /// The name.
    pub name: String,
    /// The stored type.
    pub ggml_type: GgmlType,
    /// The row-major shape.
    pub shape: SmallVec<[u64; 4]>,
    /// The byte size, when known.
    pub nbytes: Option<u64>,
}

impl TensorSummary {
    fn of(t: &SourceTensor) -> TensorSummary {
        TensorSummary {
            name: t.name.clone(),
            ggml_type: t.ggml_type,
            shape: t.shape.clone(),
            nbytes: t.nbytes,
        }
    }
}

/// One tensor-table difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorChange {
    /// Only the second model has the tensor.
    Added(TensorSummary),
    /// Only the first model has the tensor.
    Removed(TensorSummary),
    /// Both have it, with a different type or shape (its data is not compared).
    Changed {
        /// The first model's.
        old: TensorSummary,
        /// The second model's.
        new: TensorSummary,
    },
    /// A tensor only the first model has by this name and one only the second has, with the
    /// same type, shape and data: a rename (found only when data is compared; in the first
    /// model's order, where its `Removed` would be).
    Renamed {
        /// The first model's.
        old: TensorSummary,
        /// The second model's.
        new: TensorSummary,
    },
}

/// The outcome of comparing tensor data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDiff {
    /// How many tensors were compared (same name, type and shape in both).
    pub compared: usize,
    /// Bytes hashed, per model.
    pub bytes: u64,
    /// The compared tensors whose data differs, in the first model's directory order.
    pub changed: Vec<String>,
}

/// Compares two models (see the [module docs](self)). Errors are the reads' (a file that
/// shrank since it was opened, an I/O error).
pub fn diff_models(a: &Model, b: &Model, options: &DiffOptions) -> Result<ModelDiff, StreamError> {
    let mut diff = diff_headers(a, b, options);
    if options.data {
        let (data, renamed) = diff_data(a, b, &diff.tensors)?;
        diff.data = Some(data);
        apply_renames(&mut diff.tensors, renamed);
    }
    Ok(diff)
}

/// The header part of [`diff_models`]: file framing, metadata and tensor table; reads
/// nothing (the headers are in memory since the models were opened).
pub fn diff_headers(a: &Model, b: &Model, options: &DiffOptions) -> ModelDiff {
    ModelDiff {
        file: diff_file(a, b),
        metadata: diff_metadata(&entries(a), &entries(b), options),
        tensors: diff_tensor_table(a.tensors(), b.tensors()),
        data: None,
    }
}

fn diff_file(a: &Model, b: &Model) -> Vec<FileChange> {
    let mut out = Vec::new();
    let mut push = |what, old: String, new: String| {
        if old != new {
            out.push(FileChange { what, old, new });
        }
    };
    push("format", a.format().label().to_owned(), b.format().label().to_owned());
    let (fa, fb) = (framing(a), framing(b));
    push("version", fa.0.to_string(), fb.0.to_string());
    if let (Some(x), Some(y)) = (fa.1, fb.1) {
        push("endian", x.to_owned(), y.to_owned());
    }
    out
}

/// Version, and for GGUF the byte order.
fn framing(m: &Model) -> (u32, Option<&'static str>) {
    let endian = |g: &sipllm_gguf::Gguf<sipllm_streaming::HeaderBytes>| match g.endian() {
        sipllm_gguf::Endian::Little => "little",
        sipllm_gguf::Endian::Big => "big",
    };
    match m {
        Model::Gguf(f) => (f.gguf().version(), Some(endian(f.gguf()))),
        Model::Split(s) => (s.first().gguf().version(), Some(endian(s.first().gguf()))),
        Model::Llmw(f) => (f.llmw().version(), None),
    }
}

/// One metadata pair, with its stored type.
struct Entry<'a> {
    key: &'a [u8],
    ty: Ty,
    value: Meta<'a>,
    raw: Option<MetaValue<'a>>,
}

/// A stored type: GGUF's (with the element type of an array) or a `.llmw` collapsed kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Gguf(ValueType, Option<ValueType>),
    Llmw(sipllm_streaming::MetaKind),
}

impl Ty {
    fn name(self) -> String {
        use sipllm_streaming::MetaKind as K;
        match self {
            Ty::Gguf(ValueType::Array, Some(e)) => format!("[{}]", value_type_name(e)),
            Ty::Gguf(t, _) => value_type_name(t).to_owned(),
            Ty::Llmw(k) => match k {
                K::Int => "i64",
                K::Float => "f64",
                K::Bool => "bool",
                K::Str => "str",
                K::Ints => "[i64]",
                K::Floats => "[f64]",
                K::Strs => "[str]",
                K::Array => "[array]",
            }
            .to_owned(),
        }
    }
}

/// A GGUF value type's short name, as diffs show it and as `sipllm edit` spells it: `u8` …
/// `f64`, `bool`, `str`, `array`.
pub fn value_type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Uint8 => "u8",
        ValueType::Int8 => "i8",
        ValueType::Uint16 => "u16",
        ValueType::Int16 => "i16",
        ValueType::Uint32 => "u32",
        ValueType::Int32 => "i32",
        ValueType::Uint64 => "u64",
        ValueType::Int64 => "i64",
        ValueType::Float32 => "f32",
        ValueType::Float64 => "f64",
        ValueType::Bool => "bool",
        ValueType::String => "str",
        ValueType::Array => "array",
    }
}

fn gguf_entries(g: &sipllm_gguf::Gguf<sipllm_streaming::HeaderBytes>) -> Vec<Entry<'_>> {
    g.metadata()
        .map(|e| Entry {
            key: e.key.as_bytes(),
            ty: Ty::Gguf(e.value.value_type(), e.value.as_array().map(|a| a.elem_type())),
            value: Meta::from_gguf(e.key, e.value),
            raw: Some(e.value),
        })
        .collect()
}

fn entries(m: &Model) -> Vec<Entry<'_>> {
    match m {
        Model::Gguf(f) => gguf_entries(f.gguf()),
        Model::Split(s) => gguf_entries(s.first().gguf()),
        Model::Llmw(f) => f
            .metadata()
            .map(|(k, v)| Entry { key: k.as_bytes(), ty: Ty::Llmw(v.kind()), value: v, raw: None })
            .collect(),
    }
}

fn diff_metadata(a: &[Entry<'_>], b: &[Entry<'_>], o: &DiffOptions) -> Vec<MetaChange> {
    // The last pair of a key wins, as in the parser (duplicates exist only in lenient files).
    let index = |list: &[Entry<'_>]| -> HashMap<Vec<u8>, usize> {
        list.iter().enumerate().map(|(i, e)| (e.key.to_vec(), i)).collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut out = Vec::new();
    for (i, ea) in a.iter().enumerate() {
        if ia.get(ea.key) != Some(&i) {
            continue;
        }
        match ib.get(ea.key).and_then(|&j| b.get(j)) {
            None => out.push(MetaChange::Removed { key: ea.key.to_vec(), old: summary(ea, o) }),
            Some(eb) => {
                if let Some(detail) = compare(ea, eb, o) {
                    out.push(MetaChange::Changed {
                        key: ea.key.to_vec(),
                        old: summary(ea, o),
                        new: summary(eb, o),
                        detail,
                    });
                }
            }
        }
    }
    for (j, eb) in b.iter().enumerate() {
        if ib.get(eb.key) == Some(&j) && !ia.contains_key(eb.key) {
            out.push(MetaChange::Added { key: eb.key.to_vec(), new: summary(eb, o) });
        }
    }
    out
}

fn summary(e: &Entry<'_>, o: &DiffOptions) -> ValueSummary {
    let value = match e.value {
        Meta::Int(v) => Shown::Int(v),
        Meta::Float(v) => Shown::Float(v),
        Meta::Bool(v) => Shown::Bool(v),
        Meta::Str(s) => {
            let b = s.as_bytes();
            Shown::Str { prefix: prefix(b, o.max_text).to_vec(), len: b.len() as u64 }
        }
        Meta::Ints(l) => Shown::Array { len: l.len() as u64 },
        Meta::Floats(l) => Shown::Array { len: l.len() as u64 },
        Meta::Strs(l) => Shown::Array { len: l.len() as u64 },
        Meta::Array(a) => Shown::Array { len: a.len() },
        // `Meta` is non-exhaustive: a kind newer than this module shows as an empty array.
        #[allow(unreachable_patterns)]
        _ => Shown::Array { len: 0 },
    };
    ValueSummary { ty: e.ty.name(), value }
}

/// The first `max` bytes of `b`, cut back to a character boundary when `b` is UTF-8 (so a
/// prefix of text is text).
fn prefix(b: &[u8], max: usize) -> &[u8] {
    if b.len() <= max {
        return b;
    }
    let mut end = max;
    if std::str::from_utf8(b).is_ok() {
        // A continuation byte is 0b10xx_xxxx; at most 3 of them precede a boundary.
        while end > 0 && b.get(end).is_some_and(|&c| c & 0xc0 == 0x80) {
            end -= 1;
        }
    }
    b.get(..end).unwrap_or(b)
}

/// `None` when equal; `Some(detail)` when the values differ.
fn compare(a: &Entry<'_>, b: &Entry<'_>, o: &DiffOptions) -> Option<Option<Detail>> {
    // By name: a GGUF `str` and a `.llmw` `str` are one type.
    if a.ty != b.ty && a.ty.name() != b.ty.name() {
        return Some(None);
    }
    // Two GGUF arrays stored alike: equal exactly when their stored bytes are.
    if let (Some(MetaValue::Array(x)), Some(MetaValue::Array(y))) = (a.raw, b.raw)
        && stored_alike(x, y)
        && x.len() == y.len()
        && x.payload() == y.payload()
    {
        return None;
    }
    let elements = |d: Option<Detail>| d.map(Some);
    let differ_if = |same: bool| if same { None } else { Some(None) };
    match (a.value, b.value) {
        (Meta::Int(x), Meta::Int(y)) => differ_if(x == y),
        (Meta::Float(x), Meta::Float(y)) => differ_if(x.to_bits() == y.to_bits()),
        (Meta::Bool(x), Meta::Bool(y)) => differ_if(x == y),
        (Meta::Str(x), Meta::Str(y)) => text(x, y, o.max_text),
        (Meta::Ints(x), Meta::Ints(y)) => {
            let d = lockstep(x.iter(), y.iter(), |p, q| p == q, o, x.len() == y.len());
            elements(d)
        }
        (Meta::Floats(x), Meta::Floats(y)) => {
            let same = |p: f64, q: f64| p.to_bits() == q.to_bits();
            elements(lockstep(x.iter(), y.iter(), same, o, x.len() == y.len()))
        }
        (Meta::Strs(x), Meta::Strs(y)) => {
            let same = |p: MetaStr<'_>, q: MetaStr<'_>| p.as_bytes() == q.as_bytes();
            elements(lockstep(x.iter(), y.iter(), same, o, x.len() == y.len()))
        }
        (Meta::Array(x), Meta::Array(y)) => {
            elements(lockstep(x.iter(), y.iter(), |p, q| p == q, o, x.len() == y.len()))
        }
        _ => Some(None),
    }
}

fn stored_alike(x: ArrayView<'_>, y: ArrayView<'_>) -> bool {
    x.elem_type() == y.elem_type() && x.endian() == y.endian() && x.is_wide() == y.is_wide()
}

/// Walks two lists together; `None` when they are equal (same length, every element equal).
fn lockstep<T>(
    x: impl Iterator<Item = T>,
    y: impl Iterator<Item = T>,
    same: impl Fn(T, T) -> bool,
    o: &DiffOptions,
    same_len: bool,
) -> Option<Detail> {
    let mut differing = 0u64;
    let mut first = Vec::new();
    for (i, (p, q)) in x.zip(y).enumerate() {
        if !same(p, q) {
            differing += 1;
            if first.len() < o.max_indices {
                first.push(i as u64);
            }
        }
    }
    (differing > 0 || !same_len).then_some(Detail::Elements { differing, first })
}

/// `None` when equal, else where the strings first differ (when a summary shows only a
/// prefix of either: otherwise the summaries show it).
fn text(x: MetaStr<'_>, y: MetaStr<'_>, max_text: usize) -> Option<Option<Detail>> {
    let (x, y) = (x.as_bytes(), y.as_bytes());
    if x == y {
        return None;
    }
    if x.len() <= max_text && y.len() <= max_text {
        return Some(None);
    }
    let at = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
    Some(Some(Detail::Text { first_byte: at as u64 }))
}

fn diff_tensor_table(a: &[SourceTensor], b: &[SourceTensor]) -> Vec<TensorChange> {
    let names = |list: &[SourceTensor]| -> HashMap<String, usize> {
        list.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect()
    };
    let (na, nb) = (names(a), names(b));
    let mut out = Vec::new();
    for t in a {
        match nb.get(&t.name).and_then(|&j| b.get(j)) {
            None => out.push(TensorChange::Removed(TensorSummary::of(t))),
            Some(u) if u.ggml_type != t.ggml_type || u.shape != t.shape => {
                out.push(TensorChange::Changed {
                    old: TensorSummary::of(t),
                    new: TensorSummary::of(u),
                })
            }
            Some(_) => {}
        }
    }
    for u in b {
        if !na.contains_key(&u.name) {
            out.push(TensorChange::Added(TensorSummary::of(u)));
        }
    }
    out
}

/// Bytes per read while hashing tensor data.
const CHUNK: usize = 256 << 10;

/// Hashes the tensors both models hold alike (same name, type and shape; size known), and
/// the tensors only one has that could be a rename (a tensor only the other has with the same
/// type and shape), each model read once in its own file order, the two on two threads;
/// compares the hashes. Returns the renames found, as (first model's, second model's).
fn diff_data(
    a: &Model,
    b: &Model,
    table: &[TensorChange],
) -> Result<(DataDiff, Renames), StreamError> {
    let changed_names: std::collections::HashSet<&str> = table
        .iter()
        .filter_map(|c| match c {
            TensorChange::Changed { old, .. } => Some(old.name.as_str()),
            TensorChange::Added(_) | TensorChange::Removed(_) | TensorChange::Renamed { .. } => {
                None
            }
        })
        .collect();
    // The last tensor of a name wins, as `find` does.
    let in_b: HashMap<&str, usize> =
        b.tensors().iter().enumerate().map(|(j, u)| (u.name.as_str(), j)).collect();
    // (index in a, index in b) of every tensor to compare, in a's directory order.
    let pairs: Vec<(usize, usize)> = a
        .tensors()
        .iter()
        .enumerate()
        .filter(|(_, t)| t.nbytes.is_some() && !changed_names.contains(t.name.as_str()))
        .filter_map(|(i, t)| Some((i, *in_b.get(t.name.as_str())?)))
        .collect();
    // Rename candidates: only in a, only in b, of one type and shape.
    let in_a: HashMap<&str, usize> =
        a.tensors().iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    fn only<'t>(
        list: &'t [SourceTensor],
        other: &HashMap<&str, usize>,
    ) -> Vec<(usize, &'t SourceTensor)> {
        list.iter()
            .enumerate()
            .filter(|(_, t)| t.nbytes.is_some() && !other.contains_key(t.name.as_str()))
            .collect()
    }
    let (only_a, only_b) = (only(a.tensors(), &in_b), only(b.tensors(), &in_a));
    let alike =
        |t: &SourceTensor, u: &SourceTensor| t.ggml_type == u.ggml_type && t.shape == u.shape;
    let cand_a: Vec<(usize, &SourceTensor)> =
        only_a.iter().copied().filter(|(_, t)| only_b.iter().any(|(_, u)| alike(t, u))).collect();
    let cand_b: Vec<(usize, &SourceTensor)> =
        only_b.iter().copied().filter(|(_, u)| cand_a.iter().any(|(_, t)| alike(t, u))).collect();
    let wanted_a: Vec<usize> =
        pairs.iter().map(|p| p.0).chain(cand_a.iter().map(|c| c.0)).collect();
    let wanted_b: Vec<usize> =
        pairs.iter().map(|p| p.1).chain(cand_b.iter().map(|c| c.0)).collect();
    let (ha, hb) = std::thread::scope(|s| {
        let tb = s.spawn(|| hash_tensors(b.as_weight_source(), &wanted_b));
        let ha = hash_tensors(a.as_weight_source(), &wanted_a);
        let hb = tb.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (ha, hb)
    });
    let (ha, hb) = (ha?, hb?);
    let mut changed = Vec::new();
    let mut bytes = 0u64;
    for (k, &(i, _)) in pairs.iter().enumerate() {
        let Some(t) = a.tensors().get(i) else { continue };
        bytes = bytes.saturating_add(t.nbytes.unwrap_or(0));
        if ha.get(k) != hb.get(k) {
            changed.push(t.name.clone());
        }
    }
    // Each candidate of a, in a's order, takes the first unpaired one of b alike in type,
    // shape and hash.
    let (ha_c, hb_c) = (ha.get(pairs.len()..).unwrap_or(&[]), hb.get(pairs.len()..).unwrap_or(&[]));
    let mut taken = vec![false; cand_b.len()];
    let mut renamed = Vec::new();
    for ((_, t), h) in cand_a.iter().zip(ha_c) {
        let found = cand_b
            .iter()
            .zip(hb_c)
            .zip(&taken)
            .position(|(((_, u), g), &used)| !used && g == h && alike(t, u));
        if let Some(k) = found
            && let (Some(slot), Some((_, u))) = (taken.get_mut(k), cand_b.get(k))
        {
            *slot = true;
            renamed.push((TensorSummary::of(t), TensorSummary::of(u)));
        }
    }
    Ok((DataDiff { compared: pairs.len(), bytes, changed }, renamed))
}

/// Replaces each renamed tensor's `Removed` (first model) with a `Renamed` and drops the
/// matching `Added` (second model).
fn apply_renames(table: &mut Vec<TensorChange>, renamed: Renames) {
    for (old, new) in renamed {
        let added = table.iter().position(|c| matches!(c, TensorChange::Added(u) if *u == new));
        let removed = table.iter().position(|c| matches!(c, TensorChange::Removed(t) if *t == old));
        if let (Some(x), Some(r)) = (added, removed) {
            table.remove(x);
            // `Added` entries follow every `Removed` one: `r` has not moved.
            if let Some(slot) = table.get_mut(r) {
                *slot = TensorChange::Renamed { old, new };
            }
        }
    }
}

/// Renamed tensors: (the first model's, the second model's).
type Renames = Vec<(TensorSummary, TensorSummary)>;

/// The XXH3-128 hash of every tensor's stored bytes, in directory order (a tensor of unknown
/// size hashes as `None`), the source read once in file order: what `sipllm diff --diffable`
/// lists and [`diff_models`] compares.
pub fn tensor_hashes(src: &dyn WeightSource) -> Result<Vec<Option<u128>>, StreamError> {
    let wanted: Vec<usize> =
        src.tensors().iter().enumerate().filter(|(_, t)| t.nbytes.is_some()).map(|p| p.0).collect();
    let hashes = hash_tensors(src, &wanted)?;
    let mut out = vec![None; src.tensors().len()];
    for (&i, h) in wanted.iter().zip(hashes) {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(h);
        }
    }
    Ok(out)
}

/// XXH3-128 of each of `wanted` (indices into `src.tensors()`), returned in `wanted`'s order
/// but read in file order.
fn hash_tensors(src: &dyn WeightSource, wanted: &[usize]) -> Result<Vec<u128>, StreamError> {
    let tensors = src.tensors();
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&k| wanted.get(k).and_then(|&i| tensors.get(i)).map(|t| t.abs_offset));
    let mut out = vec![0u128; wanted.len()];
    let mut buf = vec![0u8; CHUNK];
    for k in order {
        let Some(t) = wanted.get(k).and_then(|&i| tensors.get(i)) else { continue };
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        src.read_chunked(t, &mut buf, &mut |piece| h.update(piece))?;
        if let Some(slot) = out.get_mut(k) {
            *slot = h.digest128();
        }
    }
    Ok(out)
}
