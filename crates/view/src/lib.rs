//! What `sipllm inspect` shows of a model, as data: a format-neutral [`View`] of a parsed
//! header, so `inspect` and `tensors` render GGUF and `.llmw` files with one code path (text
//! and JSON alike), the `inspect --json` records ([`json`]) and the escaping of untrusted text
//! ([`escape`]).
//!
//! The `sipllm` command and the browser page (`web/`, wasm32) both render from here, so the
//! page shows the very facts the command prints. No I/O: the caller opens the model.
//!
//! Nothing is copied: values borrow the header bytes and arrays iterate lazily, so a 128k-token
//! vocabulary costs nothing until it is printed.

#![forbid(unsafe_code)]

pub mod escape;
pub mod json;

use smallvec::SmallVec;

use sipllm_gguf::{GgmlType, MetaValue, ValueType, value::ArrayView};
use sipllm_llmw::{Numbers, StrArray};

use sipllm_gguf::Gguf;
use sipllm_model::config::{ConfigError, ModelConfig};
use sipllm_streaming::{Format, HeaderBytes, Meta, Model, SplitFile, WeightSource};

/// The header facts `inspect` summarises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// File format.
    pub format: Format,
    /// Format version.
    pub version: u32,
    /// Byte order (`little` or `big`).
    pub endian: &'static str,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Alignment of tensor data.
    pub alignment: u64,
    /// Absolute offset of the data section.
    pub data_offset: u64,
    /// Declared number of metadata pairs.
    pub kv_count: u64,
    /// Declared number of tensors.
    pub tensor_count: u64,
}

/// One metadata pair.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Index in file order.
    pub index: usize,
    /// The key as stored (UTF-8 unless a lenient GGUF parse let other bytes through).
    pub key: &'a [u8],
    /// The value.
    pub value: Val<'a>,
}

/// A metadata value, from either format. Type names are GGUF's (`UINT8` … `FLOAT64`, `BOOL`,
/// `STRING`, `ARRAY`); `.llmw`'s `i64`, `f64` and string map to `INT64`, `FLOAT64` and
/// `STRING`.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    /// Any integer type (`i128` holds all of them exactly), with its type name.
    Int(&'static str, i128),
    /// A `FLOAT32`.
    F32(f32),
    /// A `FLOAT64`.
    F64(f64),
    /// A `BOOL`.
    Bool(bool),
    /// A `STRING`, as stored.
    Str(&'a [u8]),
    /// An `ARRAY`.
    Array(Arr<'a>),
}

impl<'a> Val<'a> {
    /// The type name as the GGUF spec spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Int(ty, _) => ty,
            Val::F32(_) => "FLOAT32",
            Val::F64(_) => "FLOAT64",
            Val::Bool(_) => "BOOL",
            Val::Str(_) => "STRING",
            Val::Array(_) => "ARRAY",
        }
    }

    /// Converts a GGUF value.
    pub fn from_gguf(v: MetaValue<'a>) -> Val<'a> {
        let ty = v.value_type();
        match v {
            MetaValue::Float32(x) => Val::F32(x),
            MetaValue::Float64(x) => Val::F64(x),
            MetaValue::Bool(b) => Val::Bool(b),
            MetaValue::String(s) => Val::Str(s.as_bytes()),
            MetaValue::Array(a) => Val::Array(Arr {
                elem_type: a.elem_type().name(),
                len: a.len(),
                items: Items::Gguf(a),
            }),
            other => Val::Int(ty.name(), other.as_i128().unwrap_or_default()),
        }
    }

    /// Converts a `.llmw` value.
    pub fn from_llmw(v: sipllm_llmw::MetaValue<'a>) -> Val<'a> {
        use sipllm_llmw::MetaValue as L;
        let int64 = ValueType::Int64.name();
        let float64 = ValueType::Float64.name();
        match v {
            L::I64(x) => Val::Int(int64, x.into()),
            L::F64(x) => Val::F64(x),
            L::Str(s) => Val::Str(s.as_bytes()),
            L::I64Array(a) => {
                Val::Array(Arr { elem_type: int64, len: a.len() as u64, items: Items::I64(a) })
            }
            L::F64Array(a) => {
                Val::Array(Arr { elem_type: float64, len: a.len() as u64, items: Items::F64(a) })
            }
            L::StrArray(a) => Val::Array(Arr {
                elem_type: ValueType::String.name(),
                len: a.len() as u64,
                items: Items::Str(a),
            }),
            // A type added to the format later: shown as an empty string rather than hidden.
            _ => Val::Str(b""),
        }
    }

    /// The value as a non-negative integer, if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Val::Int(_, v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a string, if it is valid UTF-8 text.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Val::Str(s) => std::str::from_utf8(s).ok(),
            _ => None,
        }
    }
}

/// An array value: element type, count and a lazy element iterator.
#[derive(Debug, Clone, Copy)]
pub struct Arr<'a> {
    /// Element type name.
    pub elem_type: &'static str,
    /// Element count.
    pub len: u64,
    items: Items<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Items<'a> {
    Gguf(ArrayView<'a>),
    I64(Numbers<'a, i64>),
    F64(Numbers<'a, f64>),
    Str(StrArray<'a>),
}

impl<'a> Arr<'a> {
    /// The elements, decoded one at a time.
    pub fn iter(&self) -> Box<dyn Iterator<Item = Val<'a>> + 'a> {
        let int64 = ValueType::Int64.name();
        match self.items {
            Items::Gguf(a) => Box::new(a.iter().map(Val::from_gguf)),
            Items::I64(a) => Box::new(a.iter().map(move |v| Val::Int(int64, v.into()))),
            Items::F64(a) => Box::new(a.iter().map(Val::F64)),
            Items::Str(a) => Box::new(a.iter().map(|s| Val::Str(s.as_bytes()))),
        }
    }

    /// The element bytes exactly as stored (after the element type and count; strings with
    /// their length prefixes): what `payload_sha256` hashes.
    pub fn payload(&self) -> &'a [u8] {
        match self.items {
            Items::Gguf(a) => a.payload(),
            Items::I64(a) => a.payload(),
            Items::F64(a) => a.payload(),
            Items::Str(a) => a.payload(),
        }
    }

    /// The GGUF array view, for GGUF arrays.
    pub fn gguf(&self) -> Option<ArrayView<'a>> {
        match self.items {
            Items::Gguf(a) => Some(a),
            _ => None,
        }
    }
}

/// One tensor, from either format.
#[derive(Debug, Clone)]
pub struct TensorRow<'a> {
    /// Index in directory order.
    pub index: usize,
    /// The name as stored.
    pub name: &'a [u8],
    /// The element type.
    pub ggml_type: GgmlType,
    /// Dimensions in GGUF order (`ne[0]`, the row length, first).
    pub ne: SmallVec<[u64; 4]>,
    /// Offset of the data relative to the data section.
    pub offset: u64,
    /// Absolute offset of the data in the file.
    pub abs_offset: u64,
    /// Byte size (`None` for a type of unknown size, which only lenient parsing admits).
    pub nbytes: Option<u64>,
    /// For a split set: the shard holding the tensor (its `split.no`, 0-based); `offset` and
    /// `abs_offset` are then positions in that shard's file.
    pub shard: Option<usize>,
}

impl TensorRow<'_> {
    /// Dimensions row-major, outermost first (GGUF order reversed).
    pub fn shape(&self) -> SmallVec<[u64; 4]> {
        self.ne.iter().rev().copied().collect()
    }

    /// Number of elements, `None` on overflow.
    pub fn elements(&self) -> Option<u64> {
        sipllm_gguf::ggml::tensor_element_count(&self.ne).ok()
    }
}

/// A non-fatal finding of the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningRow {
    /// Stable code.
    pub code: &'static str,
    /// Absolute offset of the bytes concerned.
    pub offset: u64,
    /// The logical path (escaped by the parser), possibly empty.
    pub path: String,
    /// What was found, without the location.
    pub message: String,
    /// For a split set: the shard the warning is about (its `split.no`); `offset` is in
    /// that shard's file.
    pub shard: Option<usize>,
}

impl WarningRow {
    /// `path: message`, or the message alone when there is no path.
    pub fn located_message(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        }
    }
}

/// Everything `inspect` shows about one file.
#[derive(Debug, Clone)]
pub struct View<'a> {
    /// Header facts.
    pub summary: Summary,
    /// Metadata in file order.
    pub entries: Vec<Entry<'a>>,
    /// Tensors in directory order.
    pub tensors: Vec<TensorRow<'a>>,
    /// Parser warnings in file order (for a set, shard by shard).
    pub warnings: Vec<WarningRow>,
    /// For a split set: its files.
    pub split: Option<SetView>,
}

/// The files of a split set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetView {
    /// Every shard, in `split.no` order.
    pub files: Vec<SetFile>,
    /// `split.tensors.count`.
    pub declared_tensors: i32,
}

/// One shard of a split set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetFile {
    /// The path, as opened.
    pub name: String,
    /// Its size in bytes.
    pub file_size: u64,
    /// Tensors in it.
    pub tensors: usize,
}

impl<'a> View<'a> {
    /// The view of an opened model. A split set shows its first shard's header and metadata,
    /// every shard's tensors and warnings, and its files.
    pub fn of_model(model: &'a Model) -> View<'a> {
        let file_size = model.file_size();
        if let Some(set) = model.split() {
            return View::of_set(file_size, set);
        }
        if let Some(g) = model.gguf() {
            return View::of_header(g.gguf(), file_size);
        }
        let Some(l) = model.llmw() else {
            // A `Model` is one of the three.
            return View::empty(model.format(), file_size);
        };
        let l = l.llmw();
        let header = l.header();
        let data_start = l.data_start();
        View {
            summary: Summary {
                format: Format::Llmw,
                version: l.version(),
                endian: "little",
                file_size,
                alignment: sipllm_llmw::ALIGNMENT,
                data_offset: data_start,
                kv_count: header.meta_count.into(),
                tensor_count: header.tensor_count.into(),
            },
            entries: l
                .metadata()
                .map(|e| Entry {
                    index: e.index,
                    key: e.key.as_bytes(),
                    value: Val::from_llmw(e.value),
                })
                .collect(),
            tensors: l
                .tensors()
                .map(|t| TensorRow {
                    index: t.index,
                    name: t.name.as_bytes(),
                    ggml_type: t.info.dtype(),
                    ne: t.info.gguf_dims(),
                    offset: t.info.offset().saturating_sub(data_start),
                    abs_offset: t.info.offset(),
                    nbytes: Some(t.info.nbytes()),
                    shard: None,
                })
                .collect(),
            warnings: Vec::new(),
            split: None,
        }
    }

    /// The view of a GGUF header parsed on its own (without a weight source: e.g. leniently,
    /// when its tensor data is not all inside the file).
    pub fn of_header(g: &'a Gguf<HeaderBytes>, file_size: u64) -> View<'a> {
        let tensors = gguf_tensors(g, None, 0).collect();
        let warnings = gguf_warnings(g, None).collect();
        let tensor_count = g.header().tensor_count;
        View::of_gguf(g, file_size, tensor_count, tensors, warnings, None)
    }

    fn of_set(file_size: u64, set: &'a SplitFile) -> View<'a> {
        let first = set.first().gguf();
        let mut tensors = Vec::new();
        let mut warnings = Vec::new();
        let mut files = Vec::with_capacity(set.shard_count());
        let mut tensor_count = 0u64;
        for (s, shard) in set.shards().enumerate() {
            let g = shard.gguf();
            tensors.extend(gguf_tensors(g, Some(s), tensors.len()));
            warnings.extend(gguf_warnings(g, Some(s)));
            tensor_count = tensor_count.saturating_add(g.header().tensor_count);
            files.push(SetFile {
                name: shard.path().map(|p| p.display().to_string()).unwrap_or_default(),
                file_size: sipllm_streaming::WeightSource::file_size(shard),
                tensors: g.tensor_infos().len(),
            });
        }
        let split = Some(SetView { files, declared_tensors: set.declared_tensors() });
        View::of_gguf(first, file_size, tensor_count, tensors, warnings, split)
    }

    /// One GGUF header's summary and metadata, beside the tensors, warnings and counts of
    /// the file or set it heads.
    fn of_gguf(
        g: &'a Gguf<HeaderBytes>,
        file_size: u64,
        tensor_count: u64,
        tensors: Vec<TensorRow<'a>>,
        warnings: Vec<WarningRow>,
        split: Option<SetView>,
    ) -> View<'a> {
        View {
            summary: Summary {
                format: Format::Gguf,
                version: g.version(),
                endian: endian_name(g.endian()),
                file_size,
                alignment: g.alignment().into(),
                data_offset: g.data_offset(),
                kv_count: g.header().kv_count,
                tensor_count,
            },
            entries: g
                .metadata()
                .map(|e| Entry {
                    index: e.index,
                    key: e.key.as_bytes(),
                    value: Val::from_gguf(e.value),
                })
                .collect(),
            tensors,
            warnings,
            split,
        }
    }

    /// The view of nothing: the summary of an empty file of `format`.
    pub fn empty(format: Format, file_size: u64) -> View<'a> {
        View {
            summary: Summary {
                format,
                version: 0,
                endian: "little",
                file_size,
                alignment: 0,
                data_offset: 0,
                kv_count: 0,
                tensor_count: 0,
            },
            entries: Vec::new(),
            tensors: Vec::new(),
            warnings: Vec::new(),
            split: None,
        }
    }

    /// The value under `key` (the last one, if a lenient parse kept duplicates).
    pub fn get(&self, key: &str) -> Option<&Val<'a>> {
        self.entries.iter().rev().find(|e| e.key == key.as_bytes()).map(|e| &e.value)
    }

    /// The special tokens the metadata names (`tokenizer.ggml.bos_token_id` and every other
    /// `tokenizer.ggml.*_token_id` holding a non-negative integer), in metadata order, each
    /// with its text from `tokenizer.ggml.tokens` when the vocabulary has that id (one pass
    /// over the vocabulary, up to the largest id).
    pub fn special_tokens(&self) -> Vec<SpecialToken<'a>> {
        const PREFIX: &[u8] = b"tokenizer.ggml.";
        const SUFFIX: &[u8] = b"_token_id";
        let mut found: Vec<SpecialToken<'a>> = self
            .entries
            .iter()
            .filter_map(|e| {
                let role = e.key.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
                let id = e.value.as_u64()?;
                Some(SpecialToken { role, id, text: None })
            })
            .collect();
        let Some(Val::Array(tokens)) = self.get("tokenizer.ggml.tokens") else { return found };
        let Some(last) = found.iter().map(|t| t.id).max() else { return found };
        for (id, token) in (0..=last).zip(tokens.iter()) {
            if let Val::Str(text) = token {
                for t in found.iter_mut().filter(|t| t.id == id) {
                    t.text = Some(text);
                }
            }
        }
        found
    }
}

/// A special token the metadata names ([`View::special_tokens`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialToken<'a> {
    /// What it is: the key between `tokenizer.ggml.` and `_token_id` (`bos`, `eos`,
    /// `unknown`, `padding`, `eot`, …), as stored.
    pub role: &'a [u8],
    /// The token id.
    pub id: u64,
    /// Its text in `tokenizer.ggml.tokens`, as stored; `None` when the vocabulary is absent
    /// or shorter than the id.
    pub text: Option<&'a [u8]>,
}

/// Parameters and stored bytes of a group of tensors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weights {
    /// Number of tensors.
    pub tensors: u64,
    /// Sum of the element counts.
    pub params: u64,
    /// Sum of the stored byte sizes (of the tensors whose size is known).
    pub bytes: u64,
    /// Tensors of a type of unknown size (lenient profile): `bytes` is then a lower bound.
    pub unknown_size: u64,
}

impl Weights {
    /// Stored bits per parameter, when every size is known and there are parameters.
    pub fn bits_per_weight(&self) -> Option<f64> {
        (self.params > 0 && self.unknown_size == 0)
            .then(|| self.bytes as f64 * 8.0 / self.params as f64)
    }

    fn add(&mut self, t: &TensorRow<'_>) {
        self.tensors += 1;
        self.params = self.params.saturating_add(t.elements().unwrap_or(0));
        match t.nbytes {
            Some(n) => self.bytes = self.bytes.saturating_add(n),
            None => self.unknown_size += 1,
        }
    }
}

/// The weights of `tensors` in total and per ggml type (in type-code order).
pub fn weights<'t>(
    tensors: impl IntoIterator<Item = &'t TensorRow<'t>>,
) -> (Weights, Vec<(GgmlType, Weights)>) {
    let mut total = Weights::default();
    let mut by_type: std::collections::BTreeMap<u32, (GgmlType, Weights)> = Default::default();
    for t in tensors {
        total.add(t);
        by_type.entry(t.ggml_type.code()).or_insert((t.ggml_type, Weights::default())).1.add(t);
    }
    (total, by_type.into_values().collect())
}

/// The model's [`ModelConfig`], read leniently (what can be read, and every problem), through
/// the weight source or, without one, from a GGUF header parsed on its own.
pub fn config(
    source: Option<&dyn WeightSource>,
    header: Option<&Gguf<HeaderBytes>>,
) -> (ModelConfig, Vec<ConfigError>) {
    if let Some(source) = source {
        return ModelConfig::from_source_lenient(source);
    }
    match header {
        Some(g) => ModelConfig::from_metadata_lenient(
            |key| g.get_entry(key).map(|e| Meta::from_gguf(e.key, e.value)),
            g.tensor_infos().iter().map(|t| t.ggml_type()),
        ),
        None => ModelConfig::from_metadata_lenient(|_| None, []),
    }
}

/// A ggml type's name as gguf-py prints it (`F32`, `Q4_K`, …); a code this build does not know
/// as `unknown(N)` (removed codes keep their historical name).
pub fn type_name(ty: GgmlType) -> String {
    match ty {
        GgmlType::Unknown(code) => format!("unknown({code})"),
        ty => ty.name().to_owned(),
    }
}

fn endian_name(e: sipllm_gguf::Endian) -> &'static str {
    match e {
        sipllm_gguf::Endian::Little => "little",
        sipllm_gguf::Endian::Big => "big",
    }
}

/// A GGUF header's tensors as rows, indexed from `first_index` (for a set: after the earlier
/// shards' tensors), tagged with `shard`.
fn gguf_tensors<'a>(
    g: &'a Gguf<HeaderBytes>,
    shard: Option<usize>,
    first_index: usize,
) -> impl Iterator<Item = TensorRow<'a>> + 'a {
    g.tensors().map(move |t| TensorRow {
        index: first_index + t.index,
        name: t.name.as_bytes(),
        ggml_type: t.info.ggml_type(),
        ne: t.info.dims().iter().copied().collect(),
        offset: t.info.offset(),
        abs_offset: t.info.abs_offset(),
        nbytes: t.info.nbytes(),
        shard,
    })
}

/// A GGUF header's warnings as rows, tagged with `shard`.
fn gguf_warnings(
    g: &Gguf<HeaderBytes>,
    shard: Option<usize>,
) -> impl Iterator<Item = WarningRow> + '_ {
    g.warnings().iter().map(move |w| WarningRow {
        code: w.code(),
        offset: w.offset(),
        path: w.path().to_string(),
        message: w.message(),
        shard,
    })
}
