//! GGUF → `.llmw` or `.llmw` → GGUF, whichever the source is not ([`convert`]).
//!
//! **GGUF → `.llmw`**: every integer type → `i64` (a `UINT64` above `i64::MAX` cannot be
//! held), `FLOAT32`/`FLOAT64` → `f64` (an `f32` widened exactly), `STRING` → string, arrays of
//! those → `i64`/`f64`/string arrays. `BOOL`, arrays of bools and arrays of arrays have no
//! `.llmw` form: every such key is reported ([`ConvertError::Unsupported`], each with why) and
//! nothing is written — unless [`ConvertOptions::drop_unsupported`], which leaves them out and
//! says which ([`Converted::dropped`]), with the value of each bool left out and the
//! `sipllm edit` options that put them back in a GGUF ([`Converted::restore_args`]): every
//! real model has the four `tokenizer.ggml.add_*_token` bools. [`PADDING_KEY`] (the padding of an in-place edit, a layout artifact) is left
//! out. Tensors keep their bytes; dims are reversed to row-major (a GGUF scalar, with no dims,
//! becomes `[1]`); data is streamed through the `.llmw` writer's buffer.
//!
//! **`.llmw` → GGUF**: `.llmw` cannot say which integer or float width a value had, so the
//! well-known keys of llama.cpp (`sipllm_model::keys`) get the type llama.cpp reads them as when the
//! value fits it exactly ([`to_gguf`]); every other `i64` is `INT64` and every other `f64` is
//! `FLOAT64` (both lossless). A model that went GGUF → `.llmw` → GGUF therefore comes back with
//! its keys, values and, for the well-known keys, its types. Tensor data is copied from the
//! source file in the kernel into the canonical GGUF layout.
//!
//! Either way the output is written to a temporary beside the destination, re-opened and
//! checked — every key's value (through the read side, which collapses both formats' values
//! the same way), every tensor's name, type, shape and size, and the first and last
//! [`SAMPLE`](crate::header::SAMPLE) bytes of its data — and only then renamed over it.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sipllm_format::Kind;
use sipllm_gguf::writer::{TensorDesc, Value};
use sipllm_gguf::{MetaValue, ValueType, writer::GgufWriter, writer::PADDING_KEY};
use sipllm_llmw::LlmwWriter;
use sipllm_streaming::{
    Backend, FileBacking, Format, GgufFile, LlmwFile, Meta, Model, OpenOptions, ReadAt,
    StreamError, StreamErrorKind, WeightSource,
};

use crate::error::{WriteError, WriteErrorKind};
use crate::header::{CheckError, Planned, check_tensors};
use crate::write::{AtomicFile, GgufFileBuilder, TensorData, write_llmw_into};
use sipllm_model::keys;

/// How to convert.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConvertOptions {
    /// Leave out the keys the output format cannot hold (and report them) instead of refusing.
    pub drop_unsupported: bool,
}

/// Why a key is not in the output.
#[derive(Debug)]
#[non_exhaustive]
pub enum Unfit {
    /// The padding pair of an in-place edit (a layout artifact, always left out).
    Padding,
    /// The key is not UTF-8 text.
    KeyNotUtf8,
    /// A `BOOL`, with its value (for [`Dropped::restore`]).
    Bool {
        /// The value left out.
        value: bool,
    },
    /// A `STRING` that is not UTF-8 text.
    StringNotUtf8,
    /// An array longer than `.llmw`'s `u32` counts.
    TooLong {
        /// Its length.
        len: u64,
    },
    /// An `ARRAY of BOOL`, with its values (for [`Dropped::restore`]).
    BoolArray {
        /// The values left out, in order.
        values: Vec<bool>,
    },
    /// An `ARRAY of ARRAY`.
    NestedArray,
    /// An element of an `ARRAY of STRING` that is not UTF-8 text.
    ElementNotUtf8 {
        /// Its index.
        index: usize,
    },
    /// A `UINT64` above `i64::MAX`.
    Uint64TooLarge {
        /// The value.
        value: i128,
        /// Its index, for an array element.
        index: Option<usize>,
    },
    /// The `.llmw` writer refused the pair.
    Writer(sipllm_llmw::LlmwWriteError),
    /// A `.llmw` `general.alignment` that is not a GGUF `UINT32` power of two.
    Alignment {
        /// The value, as shown.
        shown: String,
    },
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let too_large = |v: &i128| format!("UINT64 value {v} is larger than .llmw's i64 can hold");
        match self {
            Unfit::Padding => f.write_str("padding of an in-place edit (layout only)"),
            Unfit::KeyNotUtf8 => f.write_str("the key is not UTF-8 text"),
            // (The value is in the variant, for `Dropped::restore`; the message stays the
            // one the CLI's golden transcripts show.)
            Unfit::Bool { .. } => f.write_str("BOOL: .llmw has no bool type"),
            Unfit::StringNotUtf8 => f.write_str("a STRING that is not UTF-8 text"),
            Unfit::TooLong { len } => write!(f, "an array of {len} elements; .llmw counts are u32"),
            Unfit::BoolArray { .. } => f.write_str("ARRAY of BOOL: .llmw has no bool arrays"),
            Unfit::NestedArray => f.write_str("ARRAY of ARRAY: .llmw has no nested arrays"),
            Unfit::ElementNotUtf8 { index } => {
                write!(f, "element {index} of an ARRAY of STRING is not UTF-8 text")
            }
            Unfit::Uint64TooLarge { value, index: None } => f.write_str(&too_large(value)),
            Unfit::Uint64TooLarge { value, index: Some(i) } => {
                write!(f, "element {i} of an ARRAY of UINT64: {}", too_large(value))
            }
            Unfit::Writer(e) => write!(f, "{e}"),
            Unfit::Alignment { shown } => write!(
                f,
                "GGUF's general.alignment must be a UINT32 power of two; this one is {shown}"
            ),
        }
    }
}

/// A key left out (or refused), and why.
#[derive(Debug)]
pub struct Dropped {
    /// The key (lossily decoded if it is not UTF-8).
    pub key: String,
    /// Why.
    pub why: Unfit,
}

impl Dropped {
    /// The `sipllm edit` option that puts the value back into a GGUF made from the output
    /// (`.llmw` → GGUF), for a value `.llmw` cannot hold but GGUF can: a bool
    /// (`["--set", "tokenizer.ggml.add_bos_token=bool:true"]`) or an array of bools
    /// (`["--set-array", "k=bool:true,false"]`). `None` for the rest (the padding pair, text
    /// that is not UTF-8, values too large for `.llmw`, nested arrays).
    pub fn restore(&self) -> Option<[String; 2]> {
        match &self.why {
            Unfit::Bool { value } => {
                Some(["--set".into(), format!("{}={}", self.key, bool_arg(*value))])
            }
            // An empty list has no `--set-array` form.
            Unfit::BoolArray { values } if !values.is_empty() => {
                let list: Vec<&str> =
                    values.iter().map(|v| if *v { "true" } else { "false" }).collect();
                Some(["--set-array".into(), format!("{}=bool:{}", self.key, list.join(","))])
            }
            _ => None,
        }
    }
}

fn bool_arg(value: bool) -> &'static str {
    if value { "bool:true" } else { "bool:false" }
}

/// What a conversion wrote.
#[derive(Debug)]
pub struct Converted {
    /// The source's format.
    pub from: Format,
    /// The output's.
    pub to: Format,
    /// Keys written.
    pub keys: usize,
    /// Tensors written.
    pub tensors: usize,
    /// Bytes of tensor data.
    pub data_bytes: u64,
    /// Keys left out, and why.
    pub dropped: Vec<Dropped>,
}

impl Converted {
    /// The `sipllm edit` options that put back, in a GGUF converted from the output, every
    /// left-out value GGUF can hold ([`Dropped::restore`]), in key order: after
    /// `convert --drop-unsupported m.gguf m.llmw` and `convert m.llmw back.gguf`,
    /// `sipllm edit back.gguf -o fixed.gguf` with them gives the keys back.
    pub fn restore_args(&self) -> Vec<String> {
        self.dropped.iter().filter_map(Dropped::restore).flatten().collect()
    }
}

/// A conversion that cannot be done, or whose output failed. Nothing was written (or the
/// temporary was removed): the destination is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// A big-endian GGUF with tensors: its data would need byte-swapping per type.
    #[error(
        "the file is a big-endian GGUF: its tensor data is stored big-endian too, and .llmw is \
         little-endian; converting would mean byte-swapping every tensor by its type, which is \
         not done (a big-endian file without tensors converts)"
    )]
    BigEndian,
    /// Keys the output format cannot hold (all of them).
    #[error("the file has metadata {} cannot hold ({} key{})", to.label(), keys.len(), if keys.len() == 1 { "" } else { "s" })]
    Unsupported {
        /// The output format.
        to: Format,
        /// Every key, and why.
        keys: Vec<Dropped>,
    },
    /// Tensors `.llmw` cannot hold (the writer's reasons, all of them).
    #[error("the file has tensors .llmw cannot hold ({} tensor{})", tensors.len(), if tensors.len() == 1 { "" } else { "s" })]
    Tensors {
        /// Each refusal.
        tensors: Vec<sipllm_llmw::LlmwWriteError>,
    },
    /// The `.llmw` file cannot be laid out.
    #[error("cannot lay out the .llmw file: {0}")]
    LlmwLayout(sipllm_llmw::LlmwWriteError),
    /// The GGUF header is invalid.
    #[error("the GGUF header is invalid: {0}")]
    GgufHeader(sipllm_gguf::writer::HeaderWriteError),
    /// The source is neither a single GGUF nor a `.llmw` file (a split set: merge it first).
    #[error("this input cannot be converted (a split set? merge it first)")]
    Format,
    /// The written file failed its check.
    #[error("the written file failed its check: {0}")]
    Check(Box<CheckError>),
    /// Moving the checked temporary into place failed.
    #[error("cannot move the new file into place: {source}")]
    Commit {
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the output failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Reading the source failed.
    #[error(transparent)]
    Read(#[from] StreamError),
}

impl From<CheckError> for ConvertError {
    fn from(e: CheckError) -> ConvertError {
        ConvertError::Check(Box::new(e))
    }
}

impl Kind for ConvertError {
    fn code(&self) -> &'static str {
        match self {
            ConvertError::BigEndian => "edit::convert::big_endian",
            ConvertError::Unsupported { .. } => "edit::convert::unsupported_metadata",
            ConvertError::Tensors { .. } => "edit::convert::unsupported_tensors",
            ConvertError::LlmwLayout(_) => "edit::convert::llmw_layout",
            ConvertError::GgufHeader(_) => "edit::convert::gguf_header",
            ConvertError::Format => "edit::convert::format",
            ConvertError::Check(_) => "edit::convert::check_failed",
            ConvertError::Commit { .. } => "edit::convert::commit",
            ConvertError::Write(e) => e.code(),
            ConvertError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            ConvertError::BigEndian => "convert a little-endian copy of the model.",
            ConvertError::Unsupported { .. } => {
                "convert without them (`--drop-unsupported`), or remove or retype them first \
                 (`sipllm edit`)."
            }
            ConvertError::Tensors { .. } | ConvertError::LlmwLayout(_) => {
                "the model has what .llmw cannot hold; keep it as GGUF."
            }
            ConvertError::GgufHeader(_) => "the .llmw file's metadata makes no valid GGUF header.",
            ConvertError::Format => "merge a split set into one file first (`sipllm merge`).",
            ConvertError::Check(_) => {
                "the destination was not replaced; the disk or the file system may be failing."
            }
            ConvertError::Commit { .. } => {
                "the destination's directory must be writable; the destination was not changed."
            }
            ConvertError::Write(e) => e.help(),
            ConvertError::Read(e) => e.help(),
        }
    }
}

impl ConvertError {
    /// The stable code ([`Kind::code`], without importing the trait).
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// What to check or change ([`Kind::help`], without importing the trait).
    pub fn help(&self) -> &'static str {
        Kind::help(self)
    }
}

/// Converts `model` (parsed through `file`, the descriptor its tensor bytes are copied from)
/// into the other format at `out`, through a checked temporary.
///
/// # Errors
///
/// [`ConvertError`]; nothing is written unless every key and tensor can be held (or the
/// unsupported keys are dropped by `options`).
pub fn convert(
    model: &Model,
    file: &File,
    out: &Path,
    options: &ConvertOptions,
) -> Result<Converted, ConvertError> {
    convert_with(model, file, out, options, &mut |_, _| {})
}

/// [`convert`], calling `progress(done, total)` with the bytes of tensor data written so far
/// and their total, as the data is written (the check after it is not counted).
pub fn convert_with(
    model: &Model,
    file: &File,
    out: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Converted, ConvertError> {
    match model {
        Model::Gguf(g) => gguf_to_llmw(g, out, options, progress),
        Model::Llmw(l) => llmw_to_gguf(l, file, out, options, progress),
        _ => Err(ConvertError::Format),
    }
}

/// The progress of a conversion to `.llmw`, shared by the tensors' readers (which the writer
/// drains one after the other): bytes read so far, of `total`.
struct Meter<'p> {
    done: std::cell::Cell<u64>,
    total: u64,
    report: std::cell::RefCell<&'p mut dyn FnMut(u64, u64)>,
}

impl Meter<'_> {
    fn add(&self, n: u64) {
        let done = self.done.get().saturating_add(n);
        self.done.set(done);
        // Not re-entered: the writer reads one tensor at a time on this thread.
        if let Ok(mut report) = self.report.try_borrow_mut() {
            report(done, self.total);
        }
    }
}

/// Keeps the unsupported keys out (`drop_unsupported`), or refuses with all of them.
fn unsupported(
    keys: Vec<Dropped>,
    options: &ConvertOptions,
    to: Format,
) -> Result<Vec<Dropped>, ConvertError> {
    if keys.is_empty() || options.drop_unsupported {
        Ok(keys)
    } else {
        Err(ConvertError::Unsupported { to, keys })
    }
}

/// A GGUF value as `.llmw` holds it.
enum LlmwValue<'a> {
    I64(i64),
    F64(f64),
    Str(&'a str),
    I64s(Vec<i64>),
    F64s(Vec<f64>),
    Strs(Vec<&'a str>),
}

/// Maps one GGUF value (the table in the module docs); `Err` says why it cannot be held.
fn to_llmw(value: MetaValue<'_>) -> Result<LlmwValue<'_>, Unfit> {
    Ok(match value {
        MetaValue::Float32(x) => LlmwValue::F64(f64::from(x)),
        MetaValue::Float64(x) => LlmwValue::F64(x),
        MetaValue::Bool(value) => return Err(Unfit::Bool { value }),
        MetaValue::String(s) => LlmwValue::Str(s.as_str().ok_or(Unfit::StringNotUtf8)?),
        MetaValue::Array(a) => {
            if u32::try_from(a.len()).is_err() {
                return Err(Unfit::TooLong { len: a.len() });
            }
            match a.elem_type() {
                ValueType::Bool => {
                    let values = a.iter().map(|v| matches!(v, MetaValue::Bool(true))).collect();
                    return Err(Unfit::BoolArray { values });
                }
                ValueType::Array => return Err(Unfit::NestedArray),
                ValueType::String => {
                    let mut v = Vec::new();
                    for (index, s) in a.strings().into_iter().flatten().enumerate() {
                        v.push(s.as_str().ok_or(Unfit::ElementNotUtf8 { index })?);
                    }
                    LlmwValue::Strs(v)
                }
                ValueType::Float32 | ValueType::Float64 => {
                    LlmwValue::F64s(a.iter().map(|v| v.as_f64().unwrap_or(f64::NAN)).collect())
                }
                _ => {
                    let mut v = Vec::new();
                    for (i, x) in a.iter().enumerate() {
                        let wide = x.as_i128().unwrap_or_default();
                        v.push(
                            i64::try_from(wide).map_err(|_| Unfit::Uint64TooLarge {
                                value: wide,
                                index: Some(i),
                            })?,
                        );
                    }
                    LlmwValue::I64s(v)
                }
            }
        }
        scalar => {
            let wide = scalar.as_i128().unwrap_or_default();
            LlmwValue::I64(
                i64::try_from(wide)
                    .map_err(|_| Unfit::Uint64TooLarge { value: wide, index: None })?,
            )
        }
    })
}

/// Reads `[pos, end)` of the source through the read side (`read_raw_at`), for
/// `LlmwWriter::add_tensor_from_reader`.
struct RangeReader<'a> {
    source: &'a dyn WeightSource,
    pos: u64,
    end: u64,
    meter: &'a Meter<'a>,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let n = left.min(buf.len());
        let chunk = buf.get_mut(..n).unwrap_or_default();
        self.source.read_raw_at(self.pos, chunk).map_err(io::Error::other)?;
        self.pos = self.pos.saturating_add(n as u64);
        self.meter.add(n as u64);
        Ok(n)
    }
}

fn gguf_to_llmw(
    src: &GgufFile,
    out: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Converted, ConvertError> {
    let gguf = src.gguf();
    if gguf.endian() == sipllm_gguf::Endian::Big && !gguf.tensor_infos().is_empty() {
        return Err(ConvertError::BigEndian);
    }
    let total = gguf.tensor_infos().iter().filter_map(|t| t.nbytes()).fold(0, u64::saturating_add);
    let meter =
        Meter { done: std::cell::Cell::new(0), total, report: std::cell::RefCell::new(progress) };
    let mut writer = LlmwWriter::new();
    let mut refused = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for e in gguf.metadata() {
        let key = e.key.to_string_lossy().into_owned();
        if key == PADDING_KEY {
            dropped.push(Dropped { key, why: Unfit::Padding });
            continue;
        }
        let Some(k) = e.key.as_str() else {
            refused.push(Dropped { key, why: Unfit::KeyNotUtf8 });
            continue;
        };
        let added = match to_llmw(e.value) {
            Err(why) => {
                refused.push(Dropped { key, why });
                continue;
            }
            Ok(LlmwValue::I64(v)) => writer.add_meta_i64(k, v).map(drop),
            Ok(LlmwValue::F64(v)) => writer.add_meta_f64(k, v).map(drop),
            Ok(LlmwValue::Str(v)) => writer.add_meta_str(k, v).map(drop),
            Ok(LlmwValue::I64s(v)) => writer.add_meta_i64s(k, v).map(drop),
            Ok(LlmwValue::F64s(v)) => writer.add_meta_f64s(k, v).map(drop),
            Ok(LlmwValue::Strs(v)) => writer.add_meta_strs(k, v).map(drop),
        };
        match added {
            Ok(()) => kept.push(key),
            Err(e) => refused.push(Dropped { key, why: Unfit::Writer(e) }),
        }
    }
    dropped.append(&mut unsupported(refused, options, Format::Llmw)?);
    let mut planned = Vec::new();
    let mut bad_tensors = Vec::new();
    for t in gguf.tensors() {
        let name = t.name.to_string_lossy().into_owned();
        let mut shape: Vec<u64> = t.info.shape().to_vec();
        if shape.is_empty() {
            shape.push(1);
        }
        let (from, nbytes) = (t.info.abs_offset(), t.info.nbytes().unwrap_or(0));
        let end = from.saturating_add(nbytes);
        let reader = RangeReader { source: src, pos: from, end, meter: &meter };
        match writer.add_tensor_from_reader(&name, t.info.ggml_type(), &shape, reader) {
            Ok(_) => planned.push(Planned {
                name,
                ggml_type: t.info.ggml_type(),
                shape,
                nbytes,
                from,
                to: 0,
            }),
            Err(e) => bad_tensors.push(e),
        }
    }
    if !bad_tensors.is_empty() {
        return Err(ConvertError::Tensors { tensors: bad_tensors });
    }
    let layout = writer.layout().map_err(ConvertError::LlmwLayout)?;
    for (p, &(to, _)) in planned.iter_mut().zip(&layout.tensors) {
        p.to = to;
    }
    let source = src.store().source();
    let write = |tmp: &AtomicFile| write_llmw_into(writer, tmp).map(drop);
    write_check_and_commit(out, Format::Llmw, write, &kept, src, &planned, source)?;
    Ok(done(Format::Gguf, Format::Llmw, kept.len(), &planned, dropped))
}

fn done(
    from: Format,
    to: Format,
    keys: usize,
    planned: &[Planned],
    dropped: Vec<Dropped>,
) -> Converted {
    Converted {
        from,
        to,
        keys,
        tensors: planned.len(),
        data_bytes: planned.iter().map(|p| p.nbytes).sum(),
        dropped,
    }
}

fn llmw_to_gguf(
    src: &LlmwFile,
    file: &File,
    out: &Path,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Converted, ConvertError> {
    let llmw = src.llmw();
    let arch = llmw.get_str("general.architecture");
    let mut writer = GgufWriter::new();
    let mut refused = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    for e in llmw.metadata() {
        let value = to_gguf(e.key, e.value, arch);
        if e.key == "general.alignment" && !matches!(value, Value::Uint32(a) if a.is_power_of_two())
        {
            refused.push(Dropped {
                key: e.key.to_owned(),
                why: Unfit::Alignment { shown: shown(&e.value) },
            });
            continue;
        }
        writer.set(e.key.as_bytes(), value);
        kept.push(e.key.to_owned());
    }
    let dropped = unsupported(refused, options, Format::Gguf)?;
    for t in llmw.tensors() {
        writer.add_tensor(TensorDesc {
            name: Cow::Borrowed(t.name.as_bytes()),
            dims: t.info.gguf_dims().to_vec(),
            ggml_type: t.info.dtype(),
        });
    }
    let layout = writer.layout().map_err(ConvertError::GgufHeader)?;
    let planned: Vec<Planned> = llmw
        .tensors()
        .zip(&layout.tensors)
        .map(|(t, &(to, nbytes))| Planned {
            name: t.name.to_owned(),
            ggml_type: t.info.dtype(),
            shape: t.info.dims().to_vec(),
            nbytes,
            from: t.info.offset(),
            to,
        })
        .collect();
    let mut builder = GgufFileBuilder::new(writer);
    for (i, p) in planned.iter().enumerate() {
        builder.set_data(i, TensorData::File { file, offset: p.from });
    }
    let source = src.store().source();
    let write = |tmp: &AtomicFile| builder.write_into_with(tmp, progress).map(drop);
    write_check_and_commit(out, Format::Gguf, write, &kept, src, &planned, source)?;
    Ok(done(Format::Llmw, Format::Gguf, kept.len(), &planned, dropped))
}

/// A `.llmw` value in a refusal: numbers as they are, strings quoted, arrays by type.
fn shown(v: &sipllm_llmw::MetaValue<'_>) -> String {
    match v {
        sipllm_llmw::MetaValue::I64(x) => x.to_string(),
        sipllm_llmw::MetaValue::F64(x) => format!("{x:?}"),
        sipllm_llmw::MetaValue::Str(s) => format!("{s:?}"),
        other => format!("an {}", other.meta_type().name()),
    }
}

/// The GGUF value for a `.llmw` value: the well-known key's llama.cpp type when the value fits
/// it exactly, else `INT64` / `FLOAT64` (arrays alike).
pub fn to_gguf<'a>(key: &str, value: sipllm_llmw::MetaValue<'a>, arch: Option<&str>) -> Value<'a> {
    use sipllm_llmw::MetaValue as V;
    let hint = keys::expected(key, arch);
    match value {
        V::I64(v) => {
            hint.and_then(|h| h.scalar).and_then(|t| narrow(v, t)).unwrap_or(Value::Int64(v))
        }
        V::F64(v) => match hint.and_then(|h| h.scalar) {
            Some(ValueType::Float32) if fits_f32(v) => Value::Float32(v as f32),
            _ => Value::Float64(v),
        },
        V::Str(s) => Value::String(Cow::Borrowed(s.as_bytes())),
        V::I64Array(a) => {
            let target = hint.and_then(|h| h.array);
            let narrowed: Option<Vec<Value<'a>>> =
                target.and_then(|t| a.iter().map(|v| narrow(v, t)).collect());
            match (target, narrowed) {
                (Some(t), Some(elems)) => Value::Array { elem_type: t, elems },
                _ => Value::Array {
                    elem_type: ValueType::Int64,
                    elems: a.iter().map(Value::Int64).collect(),
                },
            }
        }
        V::F64Array(a) => {
            if hint.and_then(|h| h.array) == Some(ValueType::Float32) && a.iter().all(fits_f32) {
                Value::Array {
                    elem_type: ValueType::Float32,
                    elems: a.iter().map(|v| Value::Float32(v as f32)).collect(),
                }
            } else {
                Value::Array {
                    elem_type: ValueType::Float64,
                    elems: a.iter().map(Value::Float64).collect(),
                }
            }
        }
        V::StrArray(a) => Value::Array {
            elem_type: ValueType::String,
            elems: a.iter().map(|s| Value::String(Cow::Borrowed(s.as_bytes()))).collect(),
        },
        // A value type newer than this build: keep nothing rather than guess.
        _ => Value::Array { elem_type: ValueType::Int64, elems: Vec::new() },
    }
}

/// True when `v` is an `f32` widened (NaN counts: its payload is not guaranteed anyway).
fn fits_f32(v: f64) -> bool {
    v.is_nan() || f64::from(v as f32) == v
}

/// `v` as integer type `t`, if it fits (and `t` is an integer type).
fn narrow(v: i64, t: ValueType) -> Option<Value<'static>> {
    Some(match t {
        ValueType::Uint8 => Value::Uint8(u8::try_from(v).ok()?),
        ValueType::Int8 => Value::Int8(i8::try_from(v).ok()?),
        ValueType::Uint16 => Value::Uint16(u16::try_from(v).ok()?),
        ValueType::Int16 => Value::Int16(i16::try_from(v).ok()?),
        ValueType::Uint32 => Value::Uint32(u32::try_from(v).ok()?),
        ValueType::Int32 => Value::Int32(i32::try_from(v).ok()?),
        ValueType::Uint64 => Value::Uint64(u64::try_from(v).ok()?),
        ValueType::Int64 => Value::Int64(v),
        _ => return None,
    })
}

/// Writes the output into a temporary beside `out` with `write`, re-opens it as `format`,
/// checks it (keys through the read side, tensors, sampled data), and renames it over `out`.
fn write_check_and_commit(
    out: &Path,
    format: Format,
    write: impl FnOnce(&AtomicFile) -> Result<(), WriteError>,
    kept: &[String],
    src: &dyn WeightSource,
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), ConvertError> {
    let tmp = AtomicFile::create(out)
        .map_err(|source| WriteError::at(out.to_path_buf(), WriteErrorKind::Create { source }))?;
    write(&tmp)?;
    let reopened = (|| {
        let file = tmp.file().try_clone().map_err(|source| {
            StreamError::at(out.to_path_buf(), StreamErrorKind::Open { source })
        })?;
        let backing = FileBacking::from_file(file, out, Backend::Pread)?;
        Ok::<_, StreamError>(match format {
            Format::Gguf => Model::from(GgufFile::from_backing(backing, &OpenOptions::default())?),
            _ => Model::from(LlmwFile::from_backing(backing, &OpenOptions::default())?),
        })
    })()
    .map_err(CheckError::Reopen)?;
    let written: &dyn WeightSource = reopened.as_weight_source();
    let n_keys = written.meta_keys().count();
    if n_keys != kept.len() {
        return Err(CheckError::KeyCount { found: n_keys, kept: kept.len() }.into());
    }
    for key in kept {
        let same = match (src.meta(key), written.meta(key)) {
            (Some(a), Some(b)) => same_meta(&a, &b),
            _ => false,
        };
        if !same {
            return Err(CheckError::Value { key: key.clone() }.into());
        }
    }
    check_tensors(written, planned, source)?;
    drop(reopened);
    tmp.commit().map_err(|source| ConvertError::Commit { source })
}

/// Equal values, a NaN equal to a NaN.
fn same_meta(a: &Meta<'_>, b: &Meta<'_>) -> bool {
    let f = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    match (a, b) {
        (Meta::Float(x), Meta::Float(y)) => f(*x, *y),
        (Meta::Floats(x), Meta::Floats(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| f(p, q))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_and_float_fit() {
        assert_eq!(narrow(5, ValueType::Uint32), Some(Value::Uint32(5)));
        assert_eq!(narrow(-1, ValueType::Uint32), None);
        assert_eq!(narrow(1 << 40, ValueType::Uint32), None);
        assert_eq!(narrow(1, ValueType::Float32), None);
        assert!(fits_f32(f64::from(1e-5f32)));
        assert!(!fits_f32(1e-5));
        assert!(fits_f32(f64::NAN));
        assert!(fits_f32(f64::INFINITY));
    }

    #[test]
    fn llmw_values_get_llama_cpp_types_when_they_fit() {
        use sipllm_llmw::MetaValue as V;
        let arch = Some("llama");
        assert_eq!(to_gguf("llama.context_length", V::I64(4096), arch), Value::Uint32(4096));
        assert_eq!(to_gguf("llama.context_length", V::I64(-1), arch), Value::Int64(-1));
        assert_eq!(to_gguf("llama.context_length", V::I64(1), None), Value::Int64(1));
        assert_eq!(to_gguf("split.no", V::I64(2), arch), Value::Uint16(2));
        assert_eq!(to_gguf("my.count", V::I64(2), arch), Value::Int64(2));
        let eps = f64::from(1e-5f32);
        assert_eq!(
            to_gguf("llama.attention.layer_norm_rms_epsilon", V::F64(eps), arch),
            Value::Float32(1e-5)
        );
        assert_eq!(
            to_gguf("llama.attention.layer_norm_rms_epsilon", V::F64(1e-5), arch),
            Value::Float64(1e-5)
        );
        assert_eq!(to_gguf("x.y", V::F64(0.5), arch), Value::Float64(0.5));
        assert_eq!(to_gguf("general.name", V::Str("n"), arch), Value::str("n"));
    }

    #[test]
    fn every_error_has_a_distinct_code_and_help() {
        let errors = [
            ConvertError::BigEndian,
            ConvertError::Unsupported {
                to: Format::Llmw,
                keys: vec![Dropped { key: "k".into(), why: Unfit::Bool { value: true } }],
            },
            ConvertError::Tensors { tensors: vec![] },
            ConvertError::LlmwLayout(sipllm_llmw::LlmwWriteError::EmptyKey),
            ConvertError::GgufHeader(sipllm_gguf::writer::HeaderWriteError::BadAlignment),
            ConvertError::Format,
            ConvertError::Check(Box::new(CheckError::Header)),
            ConvertError::Commit { source: io::Error::from(io::ErrorKind::PermissionDenied) },
        ];
        let mut codes: Vec<&str> = errors.iter().map(ConvertError::code).collect();
        assert!(codes.iter().all(|c| c.starts_with("edit::convert::")));
        assert!(errors.iter().all(|e| !e.help().is_empty() && !e.to_string().is_empty()));
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), errors.len());
        assert_eq!(errors[1].to_string(), "the file has metadata .llmw cannot hold (1 key)");
    }
}
