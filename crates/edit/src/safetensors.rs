//! GGUF (or `.llmw`, or a split set) → safetensors, streaming and exact ([`export`]).
//!
//! **The file.** safetensors' layout (`huggingface/safetensors`, `docs/source/index.mdx` and
//! the Rust crate's `tensor.rs`): an 8-byte little-endian header length N, N bytes of JSON
//! (padded with spaces so the data starts 8-byte aligned), then the data. The JSON maps each
//! tensor's name to `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets into the data,
//! which the tensors tile without gaps), plus `"__metadata__"`: a string → string map, here
//! `"format": "pt"` (what transformers checks before loading) and every **scalar** GGUF key as
//! a string (integers in decimal, booleans `true`/`false`, floats as the shortest decimal
//! that reads back as the same `f32` — or `f64` when the value is not an `f32` —, strings as
//! they are). Arrays (the tokenizer's vocabulary, merges …) are left out and counted; so are
//! the split keys, which describe the GGUF set and not the model, and the padding key of an
//! in-place edit. Data is laid out as the safetensors writer orders it: by element size,
//! largest first, then by name, so every tensor is aligned to its element size.
//!
//! **Shapes and names.** Each tensor has its row-major shape (the seam's
//! [`SourceTensor::shape`], the shape `sipllm tensors` prints: GGUF's dims reversed) and, by
//! default, its GGUF name; [`Names::Hf`] gives transformers' names instead ([`hf`]).
//!
//! **Values** ([`Dtype`]). `F32`: the values of
//! [`WeightSource::read_f32_at`], i.e. gguf-py's
//! dequantization bit for bit. `F16`/`BF16`: those exact `f32` values rounded once, to
//! nearest, ties to even (overflow to ±∞, NaN kept a NaN). `Keep`: F32/F16/BF16 tensors as
//! stored (and I8…I64/F64 too, which safetensors has), every other type dequantized to F32. A
//! tensor whose output equals its stored bytes (F32 → F32, F16 → F16, BF16 → BF16 of a
//! little-endian file, unchanged by [`hf`]) is copied byte for byte through
//! [`read_raw_at`](sipllm_streaming::WeightSource::read_raw_at): for those types gguf-py's
//! dequantization is exactly the stored value, so the copy is the same bytes, faster.
//!
//! **Memory.** Each tensor is streamed in chunks of at most [`CHUNK_VALUES`] values (whole
//! blocks): one raw chunk, its `f32` values and their encoding in the output type, about
//! 24 MiB plus the seam's own chunk, whatever the tensor or model size (an un-permuted Q/K
//! chunk is one attention head group, a few MiB). Nothing is held across tensors.
//!
//! **Atomic.** The file is written into an [`AtomicFile`] and renamed over `out` only when
//! complete and synced; with [`Names::Hf`] the `config.json` beside it too. A failure leaves
//! the destination as it was.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sipllm_format::Kind;
use sipllm_gguf::GgmlType;
use sipllm_streaming::{Meta, Model, SourceTensor, StreamError, StreamErrorKind, WeightSource};

use crate::error::{WriteError, WriteErrorKind};
use crate::half::{bf16_bits, f16_bits};
use crate::write::AtomicFile;

pub mod hf;

/// The most values one chunk of a tensor holds (8 MiB of `f32`).
pub const CHUNK_VALUES: u64 = 2 << 20;

/// safetensors' own limit on the JSON header (`MAX_HEADER_SIZE` of the reference reader).
pub const MAX_HEADER: usize = 100_000_000;

/// The element type of the output's tensors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dtype {
    /// Every tensor as `F32`: gguf-py's dequantization, bit for bit.
    #[default]
    F32,
    /// Every tensor as `F16`, rounded to nearest even from the exact `f32` values.
    F16,
    /// Every tensor as `BF16`, rounded to nearest even from the exact `f32` values.
    Bf16,
    /// F32/F16/BF16 (and integer/F64) tensors as stored, the rest dequantized to `F32`.
    Keep,
}

impl Dtype {
    /// The name `--dtype` takes.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::Keep => "keep",
        }
    }
}

/// Whose tensor names the output has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Names {
    /// The GGUF names, unchanged.
    #[default]
    Gguf,
    /// transformers' parameter names, with the converter's Q/K permutation and norm offsets
    /// undone, and a `config.json` beside the file ([`hf`]).
    Hf,
}

/// How to export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The output's element type.
    pub dtype: Dtype,
    /// The output's names.
    pub names: Names,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Tensors written.
    pub tensors: usize,
    /// Bytes of tensor data.
    pub data_bytes: u64,
    /// Bytes of the whole file.
    pub file_bytes: u64,
    /// Tensors copied as stored (no dequantization).
    pub copied: usize,
    /// Scalar metadata keys written into `__metadata__`.
    pub keys: usize,
    /// Metadata keys left out (arrays, split keys, padding).
    pub keys_left_out: usize,
    /// With [`Names::Hf`]: the `config.json` written beside the file, and transformers'
    /// `model_type`.
    pub config: Option<(PathBuf, String)>,
    /// With [`Names::Hf`]: the GGUF tensors left out, which transformers computes from the
    /// config instead (`rope_freqs.weight`, Phi-3's `rope_factors_*`).
    pub left_out: Vec<String>,
}

/// An export that cannot be done or failed; the destination is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// Two tensors would have the same name in the output.
    #[error("two tensors would both be named {name:?} in the safetensors file")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A tensor named `__metadata__`, which safetensors reserves.
    #[error("a tensor is named \"__metadata__\", which safetensors reserves for its metadata")]
    ReservedName,
    /// A tensor whose type has no values (no dequantization) and no safetensors dtype.
    #[error(
        "tensor {tensor:?} is {}, which has no {dtype} values{}",
        ggml_type.name(),
        if *keep_ok { " (--dtype keep writes it as stored)" } else { "" }
    )]
    NoValues {
        /// The tensor.
        tensor: String,
        /// Its type.
        ggml_type: GgmlType,
        /// The requested output type.
        dtype: &'static str,
        /// Whether `Keep` would write it as stored.
        keep_ok: bool,
    },
    /// An integer or F64 tensor kept as stored in a big-endian file: its bytes would need
    /// swapping, which is not done.
    #[error("tensor {tensor:?} ({}) is stored big-endian; safetensors is little-endian", ggml_type.name())]
    BigEndian {
        /// The tensor.
        tensor: String,
        /// Its type.
        ggml_type: GgmlType,
    },
    /// The JSON header would exceed safetensors' limit.
    #[error("the safetensors header would be {bytes} bytes; readers refuse more than {MAX_HEADER}")]
    HeaderTooLarge {
        /// Its size.
        bytes: usize,
    },
    /// transformers' names were asked for, but the model cannot have them.
    #[error(transparent)]
    Hf(#[from] hf::HfError),
    /// Moving the finished file into place failed.
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

impl Kind for SafetensorsError {
    fn code(&self) -> &'static str {
        match self {
            SafetensorsError::DuplicateName { .. } => "edit::safetensors::duplicate_name",
            SafetensorsError::ReservedName => "edit::safetensors::reserved_name",
            SafetensorsError::NoValues { .. } => "edit::safetensors::no_values",
            SafetensorsError::BigEndian { .. } => "edit::safetensors::big_endian",
            SafetensorsError::HeaderTooLarge { .. } => "edit::safetensors::header_too_large",
            SafetensorsError::Hf(e) => e.code(),
            SafetensorsError::Commit { .. } => "edit::safetensors::commit",
            SafetensorsError::Write(e) => e.code(),
            SafetensorsError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SafetensorsError::DuplicateName { .. } | SafetensorsError::ReservedName => {
                "rename the tensor first (`sipllm edit --rename-tensor`)."
            }
            SafetensorsError::NoValues { .. } => {
                "export with --dtype keep, or leave the model as GGUF: this type has no values."
            }
            SafetensorsError::BigEndian { .. } => "export a little-endian copy of the model.",
            SafetensorsError::HeaderTooLarge { .. } => {
                "the model's scalar metadata is too large for safetensors; remove keys first \
                 (`sipllm edit --delete`)."
            }
            SafetensorsError::Hf(e) => e.help(),
            SafetensorsError::Commit { .. } => {
                "the destination's directory must be writable; the destination was not changed."
            }
            SafetensorsError::Write(e) => e.help(),
            SafetensorsError::Read(e) => e.help(),
        }
    }
}

impl SafetensorsError {
    /// The stable code ([`Kind::code`], without importing the trait).
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// What to check or change ([`Kind::help`], without importing the trait).
    pub fn help(&self) -> &'static str {
        Kind::help(self)
    }
}

/// A safetensors element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StDtype {
    F64,
    I64,
    F32,
    I32,
    F16,
    Bf16,
    I16,
    I8,
}

impl StDtype {
    fn name(self) -> &'static str {
        match self {
            StDtype::F64 => "F64",
            StDtype::I64 => "I64",
            StDtype::F32 => "F32",
            StDtype::I32 => "I32",
            StDtype::F16 => "F16",
            StDtype::Bf16 => "BF16",
            StDtype::I16 => "I16",
            StDtype::I8 => "I8",
        }
    }

    fn size(self) -> u64 {
        match self {
            StDtype::F64 | StDtype::I64 => 8,
            StDtype::F32 | StDtype::I32 => 4,
            StDtype::F16 | StDtype::Bf16 | StDtype::I16 => 2,
            StDtype::I8 => 1,
        }
    }

    /// The safetensors type holding `ty`'s stored elements as they are, if any.
    fn stored(ty: GgmlType) -> Option<StDtype> {
        Some(match ty {
            GgmlType::F32 => StDtype::F32,
            GgmlType::F16 => StDtype::F16,
            GgmlType::BF16 => StDtype::Bf16,
            GgmlType::F64 => StDtype::F64,
            GgmlType::I64 => StDtype::I64,
            GgmlType::I32 => StDtype::I32,
            GgmlType::I16 => StDtype::I16,
            GgmlType::I8 => StDtype::I8,
            _ => return None,
        })
    }
}

/// A change of values on the way out ([`hf`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transform {
    /// None.
    None,
    /// Undo llama.cpp's rotary permutation of Q or K rows: `heads` heads of `rows / heads`
    /// rows each.
    Unpermute {
        /// Heads.
        heads: u64,
    },
    /// Subtract 1 (Gemma's norm weights, which llama.cpp stores as `1 + w`).
    SubtractOne,
}

/// One tensor of the output.
#[derive(Debug)]
struct Planned<'a> {
    name: String,
    src: &'a SourceTensor,
    dtype: StDtype,
    transform: Transform,
    /// Whether the stored bytes are the output's.
    raw: bool,
    nbytes: u64,
    /// Offset into the data section.
    begin: u64,
}

/// Whether the model's tensor data is little-endian (always, but for a big-endian GGUF).
fn little_endian(model: &Model) -> bool {
    let gguf = match model {
        Model::Gguf(g) => g.gguf(),
        Model::Split(s) => s.first().gguf(),
        _ => return true,
    };
    gguf.endian() == sipllm_gguf::Endian::Little
}

/// Exports `model` as a safetensors file at `out` (see the [module docs](self)); with
/// [`Names::Hf`] also `config.json` in `out`'s directory. `progress` is called with the bytes
/// of output written so far (for a bar; not at every byte).
///
/// # Errors
///
/// [`SafetensorsError`]; the destination (and `config.json`) are unchanged on any error.
pub fn export(
    model: &Model,
    out: &Path,
    options: &ExportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Exported, SafetensorsError> {
    let source = model.as_weight_source();
    // Never over a file of the model itself (it would be replaced by the export).
    let inputs: Vec<&Path> = match model {
        Model::Split(set) => set.paths().flatten().collect(),
        m => m.path().into_iter().collect(),
    };
    for input in inputs {
        crate::identity::refuse_output_is_input(input, out, "the output")?;
        if options.names == Names::Hf {
            let config = out.with_file_name("config.json");
            crate::identity::refuse_output_is_input(input, &config, "config.json")?;
        }
    }
    let le = little_endian(model);
    let mapping = match options.names {
        Names::Gguf => None,
        Names::Hf => Some(hf::plan(source)?),
    };
    let mut plan: Vec<Planned<'_>> = Vec::with_capacity(source.tensors().len());
    let mut seen = HashSet::new();
    for (i, t) in source.tensors().iter().enumerate() {
        let (name, transform) = match &mapping {
            Some(m) => match m.tensors.get(i).and_then(Option::as_ref) {
                Some((name, transform)) => (name.clone(), *transform),
                None => continue,
            },
            None => (t.name.clone(), Transform::None),
        };
        if name == "__metadata__" {
            return Err(SafetensorsError::ReservedName);
        }
        if !seen.insert(name.clone()) {
            return Err(SafetensorsError::DuplicateName { name });
        }
        let stored = StDtype::stored(t.ggml_type);
        let has_values = sipllm_quants::is_supported(t.ggml_type);
        let dtype = match options.dtype {
            Dtype::F32 => StDtype::F32,
            Dtype::F16 => StDtype::F16,
            Dtype::Bf16 => StDtype::Bf16,
            Dtype::Keep => match stored {
                Some(s) => s,
                None => StDtype::F32,
            },
        };
        let float = matches!(dtype, StDtype::F32 | StDtype::F16 | StDtype::Bf16);
        if float && !has_values && stored != Some(dtype) {
            return Err(SafetensorsError::NoValues {
                tensor: t.name.clone(),
                ggml_type: t.ggml_type,
                dtype: options.dtype.name(),
                keep_ok: stored.is_some(),
            });
        }
        let raw = stored == Some(dtype) && transform == Transform::None && le;
        if stored == Some(dtype) && !float && !le {
            return Err(SafetensorsError::BigEndian {
                tensor: t.name.clone(),
                ggml_type: t.ggml_type,
            });
        }
        if !float && transform != Transform::None {
            return Err(SafetensorsError::NoValues {
                tensor: t.name.clone(),
                ggml_type: t.ggml_type,
                dtype: options.dtype.name(),
                keep_ok: false,
            });
        }
        let count = t.element_count().ok_or_else(|| {
            StreamError::from(StreamErrorKind::TooLarge {
                what: format!("tensor {:?}", t.name),
                bytes: u64::MAX,
            })
        })?;
        let nbytes = count.checked_mul(dtype.size()).ok_or_else(|| {
            StreamError::from(StreamErrorKind::TooLarge {
                what: format!("tensor {:?}", t.name),
                bytes: u64::MAX,
            })
        })?;
        plan.push(Planned { name, src: t, dtype, transform, raw, nbytes, begin: 0 });
    }
    // safetensors' own order: larger elements first, then by name (each tensor stays
    // aligned to its element size).
    plan.sort_by(|a, b| b.dtype.size().cmp(&a.dtype.size()).then_with(|| a.name.cmp(&b.name)));
    let mut at = 0u64;
    for p in &mut plan {
        p.begin = at;
        at = at.checked_add(p.nbytes).ok_or_else(|| {
            StreamError::from(StreamErrorKind::TooLarge {
                what: "the safetensors data".into(),
                bytes: u64::MAX,
            })
        })?;
    }
    let data_bytes = at;
    let (header, keys, keys_left_out) = header_json(source, &plan)?;
    let data_start = 8 + header.len() as u64;
    let file_bytes = data_start.checked_add(data_bytes).ok_or_else(|| {
        StreamError::from(StreamErrorKind::TooLarge {
            what: "the safetensors file".into(),
            bytes: u64::MAX,
        })
    })?;

    let tmp = AtomicFile::create(out)
        .map_err(|source| WriteError::at(out.to_path_buf(), WriteErrorKind::Create { source }))?;
    let file = tmp.file();
    let write_err =
        |offset: u64, source: io::Error| WriteError::write(out.to_path_buf(), offset, source);
    // The whole size first: the file system can place it in one go.
    file.set_len(file_bytes).map_err(|e| write_err(0, e))?;
    let mut head = Vec::with_capacity(header.len() + 8);
    head.extend_from_slice(&(header.len() as u64).to_le_bytes());
    head.extend_from_slice(header.as_bytes());
    file.write_all_at(&head, 0).map_err(|e| write_err(0, e))?;
    let mut buffers = Buffers::default();
    let mut done = 0u64;
    let mut copied = 0;
    for p in &plan {
        let _ = source.prefetch(p.src);
        let base = data_start + p.begin;
        let mut sink = Sink { file, base, written: 0, write_err: &write_err };
        if p.raw {
            copied += 1;
            let mut failed = None;
            let buf = buffers.bytes(CHUNK_VALUES as usize * 4);
            source.read_chunked(p.src, buf, &mut |piece| {
                if failed.is_none()
                    && let Err(e) = sink.put(piece)
                {
                    failed = Some(e);
                }
                progress(done + sink.written);
            })?;
            if let Some(e) = failed {
                return Err(e.into());
            }
        } else {
            write_values(source, p, &mut buffers, &mut sink, &mut |n| progress(done + n))?;
        }
        done += p.nbytes;
    }
    progress(done);
    let config = match &mapping {
        Some(m) => {
            let path = out.with_file_name("config.json");
            let cfg = AtomicFile::create(&path).map_err(|source| {
                WriteError::at(path.clone(), WriteErrorKind::Create { source })
            })?;
            cfg.file()
                .write_all_at(m.config.as_bytes(), 0)
                .map_err(|source| WriteError::write(path.clone(), 0, source))?;
            tmp.commit().map_err(|source| SafetensorsError::Commit { source })?;
            cfg.commit().map_err(|source| SafetensorsError::Commit { source })?;
            Some((path, m.model_type.clone()))
        }
        None => {
            tmp.commit().map_err(|source| SafetensorsError::Commit { source })?;
            None
        }
    };
    Ok(Exported {
        tensors: plan.len(),
        data_bytes,
        file_bytes,
        copied,
        keys,
        keys_left_out,
        config,
        left_out: mapping.map(|m| m.left_out).unwrap_or_default(),
    })
}

/// Positional writes of one tensor's bytes, in order.
struct Sink<'a, E: Fn(u64, io::Error) -> WriteError> {
    file: &'a File,
    base: u64,
    written: u64,
    write_err: &'a E,
}

impl<E: Fn(u64, io::Error) -> WriteError> Sink<'_, E> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        let at = self.base + self.written;
        self.file.write_all_at(bytes, at).map_err(|e| (self.write_err)(at, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// The reusable chunk buffers (grown once to the largest chunk, kept across tensors).
#[derive(Default)]
struct Buffers {
    bytes: Vec<u8>,
    values: Vec<f32>,
    permuted: Vec<f32>,
}

impl Buffers {
    fn bytes(&mut self, len: usize) -> &mut [u8] {
        if self.bytes.len() < len {
            self.bytes.resize(len, 0);
        }
        &mut self.bytes[..len]
    }
}

/// Streams one tensor's values: chunks of whole blocks (or whole head groups when
/// un-permuting), transformed, encoded in the output type, written in order.
fn write_values<E: Fn(u64, io::Error) -> WriteError>(
    source: &dyn WeightSource,
    p: &Planned<'_>,
    buffers: &mut Buffers,
    sink: &mut Sink<'_, E>,
    progress: &mut dyn FnMut(u64),
) -> Result<(), SafetensorsError> {
    let t = p.src;
    let count = t.element_count().unwrap_or(0);
    // Values per row (the product of every dim but the outermost; 1 for a vector).
    let row = t.shape.iter().skip(1).try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(0);
    let rows = t.shape.first().copied().unwrap_or(1);
    let step = match p.transform {
        Transform::Unpermute { heads } => {
            // One head's rows at a time: the permutation moves rows only within a head.
            // `hf::plan` checked that the rows divide into heads of an even row count.
            (rows / heads.max(1)).saturating_mul(row).max(1)
        }
        _ => {
            let block = t.ggml_type.block_size().map_or(1, u64::from).max(1);
            (CHUNK_VALUES / block).max(1) * block
        }
    };
    let cap = usize::try_from(step.min(count)).map_err(|_| {
        StreamError::from(StreamErrorKind::TooLarge {
            what: format!("a chunk of tensor {:?}", t.name),
            bytes: step.saturating_mul(4),
        })
    })?;
    if buffers.values.len() < cap {
        buffers.values.resize(cap, 0.0);
    }
    let mut at = 0u64;
    while at < count {
        let end = at.saturating_add(step).min(count);
        let n = (end - at) as usize;
        let values = &mut buffers.values[..n];
        source.read_f32_at(t, at..end, values)?;
        let values: &[f32] = match p.transform {
            Transform::None => values,
            Transform::SubtractOne => {
                values.iter_mut().for_each(|v| *v -= 1.0);
                values
            }
            Transform::Unpermute { .. } => {
                let out = &mut buffers.permuted;
                out.clear();
                unpermute_head(values, row as usize, out);
                out
            }
        };
        let len = n * p.dtype.size() as usize;
        if buffers.bytes.len() < len {
            buffers.bytes.resize(len, 0);
        }
        let bytes = &mut buffers.bytes[..len];
        match p.dtype {
            StDtype::F32 => {
                for (d, v) in bytes.chunks_exact_mut(4).zip(values) {
                    d.copy_from_slice(&v.to_le_bytes());
                }
            }
            StDtype::F16 => {
                for (d, v) in bytes.chunks_exact_mut(2).zip(values) {
                    d.copy_from_slice(&f16_bits(*v).to_le_bytes());
                }
            }
            StDtype::Bf16 => {
                for (d, v) in bytes.chunks_exact_mut(2).zip(values) {
                    d.copy_from_slice(&bf16_bits(*v).to_le_bytes());
                }
            }
            // The plan writes only the float types through values.
            _ => unreachable!("integer tensors are copied as stored"),
        }
        sink.put(bytes)?;
        progress(sink.written);
        at = end;
    }
    Ok(())
}

/// Undoes llama.cpp's rotary permutation of one head's rows (`values`: `2·half` rows of
/// `row` values), appending the result to `out`.
///
/// llama.cpp's converter (`convert_hf_to_gguf.py`, `LlamaModel.permute`) reshapes a head's
/// rows as `(2, half)` and swaps the two axes: the row at `(i, j)` of transformers' order
/// (`i·half + j`) is stored at `j·2 + i`. Row `r = i·half + j` of the output is therefore the
/// stored row `2·j + i` — which is what transformers' `_reverse_permute_weights`
/// (`modeling_gguf_pytorch_utils.py`) computes when loading a GGUF.
pub(crate) fn unpermute_head(values: &[f32], row: usize, out: &mut Vec<f32>) {
    let rows = values.len() / row.max(1);
    let half = rows / 2;
    for r in 0..rows {
        let (i, j) = (r / half.max(1), r % half.max(1));
        let from = (2 * j + i) * row;
        out.extend_from_slice(&values[from..from + row]);
    }
}

/// The JSON header (padded to 8-byte alignment of the data), the keys written, and the keys
/// left out.
fn header_json(
    source: &dyn WeightSource,
    plan: &[Planned<'_>],
) -> Result<(String, usize, usize), SafetensorsError> {
    use serde_json::{Map, Value, json};
    let mut meta = Map::new();
    let mut left_out = 0;
    for (key, value) in source.metadata() {
        let key = key.to_string_lossy().into_owned();
        let text = if key.starts_with("split.") || key == sipllm_gguf::writer::PADDING_KEY {
            None
        } else {
            meta_string(&value)
        };
        match text {
            Some(text) if key != "format" => {
                meta.insert(key, Value::String(text));
            }
            _ => left_out += 1,
        }
    }
    let keys = meta.len();
    meta.insert("format".into(), Value::String("pt".into()));
    let mut root = Map::new();
    root.insert("__metadata__".into(), Value::Object(meta));
    for p in plan {
        root.insert(
            p.name.clone(),
            json!({
                "dtype": p.dtype.name(),
                "shape": p.src.shape.as_slice(),
                "data_offsets": [p.begin, p.begin + p.nbytes],
            }),
        );
    }
    let mut text = Value::Object(root).to_string();
    // Spaces after the JSON (as the safetensors writer pads): the data starts 8-aligned.
    while !(8 + text.len()).is_multiple_of(8) {
        text.push(' ');
    }
    if text.len() > MAX_HEADER {
        return Err(SafetensorsError::HeaderTooLarge { bytes: text.len() });
    }
    Ok((text, keys, left_out))
}

/// A scalar metadata value as `__metadata__` holds it; `None` for arrays.
fn meta_string(value: &Meta<'_>) -> Option<String> {
    Some(match value {
        Meta::Int(v) => v.to_string(),
        Meta::Bool(b) => b.to_string(),
        Meta::Float(x) => {
            // A FLOAT32 widened: its shortest f32 form (1e-5, not 9.999999747378752e-6).
            if x.is_nan() || f64::from(*x as f32) == *x {
                (*x as f32).to_string()
            } else {
                x.to_string()
            }
        }
        Meta::Str(s) => s.to_string_lossy().into_owned(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpermute_inverts_llama_cpp_permute() {
        // llama.cpp's permute of 8 rows (one head, half = 4), one value per row: stored row
        // 2j + i holds transformers' row i·4 + j.
        let hf: Vec<f32> = (0..8).map(|r| r as f32).collect();
        let mut stored = vec![0f32; 8];
        for i in 0..2 {
            for j in 0..4 {
                stored[2 * j + i] = hf[i * 4 + j];
            }
        }
        assert_eq!(stored, [0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0]);
        let mut out = Vec::new();
        unpermute_head(&stored, 1, &mut out);
        assert_eq!(out, hf);
    }

    #[test]
    fn scalar_metadata_as_strings() {
        assert_eq!(meta_string(&Meta::Int(-3)).as_deref(), Some("-3"));
        assert_eq!(meta_string(&Meta::Bool(true)).as_deref(), Some("true"));
        assert_eq!(meta_string(&Meta::Float(f64::from(1e-5f32))).as_deref(), Some("0.00001"));
        assert_eq!(meta_string(&Meta::Float(0.1)).as_deref(), Some("0.1"));
        assert_eq!(meta_string(&Meta::Float(1e-5)).as_deref(), Some("0.00001"));
    }

    #[test]
    fn every_error_has_a_distinct_code_and_help() {
        let errors = [
            SafetensorsError::DuplicateName { name: "a".into() },
            SafetensorsError::ReservedName,
            SafetensorsError::NoValues {
                tensor: "t".into(),
                ggml_type: GgmlType::I8,
                dtype: "f32",
                keep_ok: true,
            },
            SafetensorsError::BigEndian { tensor: "t".into(), ggml_type: GgmlType::I8 },
            SafetensorsError::HeaderTooLarge { bytes: MAX_HEADER + 1 },
            SafetensorsError::Commit { source: io::Error::from(io::ErrorKind::PermissionDenied) },
        ];
        let mut codes: Vec<&str> = errors.iter().map(SafetensorsError::code).collect();
        assert!(codes.iter().all(|c| c.starts_with("edit::safetensors::")));
        assert!(errors.iter().all(|e| !e.help().is_empty() && !e.to_string().is_empty()));
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), errors.len());
    }
}
