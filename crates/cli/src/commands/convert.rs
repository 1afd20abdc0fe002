//! `sipllm convert IN OUT [--drop-unsupported]`: GGUF → `.llmw` or `.llmw` → GGUF, whichever
//! IN is not (the format is read from IN's magic).
//!
//! **GGUF → `.llmw`** (the table of `docs/llmw.md`): every integer type → `i64` (a `UINT64`
//! above `i64::MAX` cannot be held), `FLOAT32`/`FLOAT64` → `f64` (an `f32` widened exactly),
//! `STRING` → string, arrays of those → `i64`/`f64`/string arrays. `BOOL`, arrays of bools
//! and arrays of arrays have no `.llmw` form: IN's unsupported keys are listed, each with
//! why, and nothing is written — unless `--drop-unsupported`, which leaves them out and says
//! which. `sipllm.header_padding` (the padding of an in-place edit, a layout artifact) is
//! left out. Tensors keep their bytes; dims are reversed to row-major (a GGUF scalar, with no
//! dims, becomes `[1]`); data is streamed through the `.llmw` writer's 64 KiB buffer.
//!
//! **`.llmw` → GGUF**: `.llmw` cannot say which integer or float width a value had, so the
//! well-known keys of llama.cpp ([`crate::keys`]) get the type llama.cpp reads them as when
//! the value fits it exactly (`llama.context_length` → `UINT32`, `tokenizer.ggml.scores` →
//! `ARRAY of FLOAT32`, `tokenizer.ggml.token_type` → `ARRAY of INT32`, …); every other `i64`
//! is `INT64` and every other `f64` is `FLOAT64` (both lossless). A model that went GGUF →
//! `.llmw` → GGUF therefore comes back with its keys, values and, for the well-known keys, its
//! types: byte for byte for models like the toy and tiny-llama. Tensor data is copied from IN
//! with `copy_file_range` into the canonical GGUF layout (alignment 32, or
//! `general.alignment`).
//!
//! Either way the output is written to a temporary file beside OUT, re-opened and checked —
//! every key's value (through the streaming seam, which collapses both formats' values the
//! same way), every tensor's name, type, shape and size, and the first and last 4 KiB of its
//! data — and only then renamed over OUT.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use sipllm_edit::edit::{Planned, SAMPLE, check_tensors};
use sipllm_edit::identity;
use sipllm_edit::write::{AtomicFile, GgufFileBuilder, TensorData, write_llmw_into};
use sipllm_gguf::writer::{TensorDesc, Value};
use sipllm_gguf::{GgufWriter, MetaValue, PADDING_KEY, ValueType};
use sipllm_llmw::ModelWriter;
use sipllm_streaming::{
    Backend, FileBacking, Format, GgufFile, Meta, Model, ModelFile, OpenOptions, ReadAt,
    StreamError, WeightSource,
};

use crate::cli::ConvertArgs;
use crate::commands::edit::pending;
use crate::commands::{report_open_error, report_write_error, usage_error};
use crate::open::{model_of, open_locked};
use crate::render::escape;
use crate::render::value::group;
use crate::{Ctx, Exit, keys};

/// Runs `convert`.
pub fn run(args: &ConvertArgs, ctx: &Ctx) -> io::Result<Exit> {
    // Read under a shared lock (an in-place edit running finishes first), so a backup found
    // then is an interrupted edit's.
    let file = match open_locked(&args.input, false) {
        Ok(file) => file,
        Err(e) => return Ok(report_open_error(&args.input, &e, ctx)),
    };
    if let Some(e) = pending(&args.input) {
        crate::render::edit::in_place_error(&e, &display(&args.input));
        return Ok(Exit::Trouble);
    }
    let model = match model_of(&file, &args.input) {
        Ok(model) => model,
        Err(e) => return Ok(report_open_error(&args.input, &e, ctx)),
    };
    let to = match model.format() {
        Format::Gguf => Format::Llmw,
        _ => Format::Gguf,
    };
    if let Err(e) =
        identity::refuse_output_is_open_file(&file, &args.input, &args.output, "the output")
    {
        return Ok(report_write_error(&args.input, &e, ctx));
    }
    let out_name = display(&args.output);
    if args.output.is_dir() {
        return Ok(usage_error(&format!("{out_name} is a directory; give a file name")));
    }
    if let Some(ext) = args.output.extension().and_then(|e| e.to_str())
        && ext.eq_ignore_ascii_case(model.format().name())
    {
        return Ok(usage_error(&format!(
            "{out_name} ends in .{ext}, but a {} input converts to {}; name the output e.g. \
             model.{}",
            model.format().label(),
            to.label(),
            to.name()
        )));
    }
    let converted = match &model {
        Model::Gguf(g) => gguf_to_llmw(g, args),
        Model::Llmw(l) => llmw_to_gguf(l, &file, args),
        _ => Err(usage_error("this input format cannot be converted")),
    };
    let done = match converted {
        Ok(done) => done,
        Err(exit) => return Ok(exit),
    };
    let mut o = io::stdout().lock();
    writeln!(
        o,
        "converted {} ({}) -> {out_name} ({}): {} keys, {} tensors, {} bytes of tensor data",
        display(&args.input),
        model.format().label(),
        to.label(),
        done.keys,
        done.tensors,
        group(done.data_bytes)
    )?;
    for (key, why) in &done.dropped {
        writeln!(o, "  left out {}: {why}", quoted(key))?;
    }
    writeln!(
        o,
        "checked {out_name}: re-opened; every key has its value and every tensor its name, \
         type, shape and size; the first and last {SAMPLE} bytes of each tensor equal {}'s",
        display(&args.input)
    )?;
    o.flush()?;
    Ok(Exit::Ok)
}

/// What a conversion wrote.
struct Done {
    keys: usize,
    tensors: usize,
    data_bytes: u64,
    /// Keys left out, and why.
    dropped: Vec<(String, String)>,
}

fn display(p: &Path) -> String {
    escape::str(&p.display().to_string()).into_owned()
}

fn quoted(s: &str) -> String {
    escape::quoted(s.as_bytes())
}

/// Why keys cannot go into the output: an error listing them all, unless `--drop-unsupported`
/// (then they are returned, to be reported as left out).
fn unsupported_keys(
    unsupported: Vec<(String, String)>,
    args: &ConvertArgs,
    to: Format,
) -> Result<Vec<(String, String)>, Exit> {
    if unsupported.is_empty() || args.drop_unsupported {
        return Ok(unsupported);
    }
    let mut msg = format!(
        "{} has metadata {} cannot hold ({} key{}), so nothing was written; pass \
         --drop-unsupported to convert without {}:",
        display(&args.input),
        to.label(),
        unsupported.len(),
        if unsupported.len() == 1 { "" } else { "s" },
        if unsupported.len() == 1 { "it" } else { "them" }
    );
    for (key, why) in &unsupported {
        msg.push_str(&format!("\n  {}: {why}", quoted(key)));
    }
    Err(usage_error(&msg))
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
fn to_llmw(value: MetaValue<'_>) -> Result<LlmwValue<'_>, String> {
    let too_large = |v: i128| format!("UINT64 value {v} is larger than .llmw's i64 can hold");
    Ok(match value {
        MetaValue::Float32(x) => LlmwValue::F64(f64::from(x)),
        MetaValue::Float64(x) => LlmwValue::F64(x),
        MetaValue::Bool(_) => return Err("BOOL: .llmw has no bool type".to_owned()),
        MetaValue::String(s) => {
            LlmwValue::Str(s.as_str().ok_or_else(|| "a STRING that is not UTF-8 text".to_owned())?)
        }
        MetaValue::Array(a) => {
            if u32::try_from(a.len()).is_err() {
                return Err(format!("an array of {} elements; .llmw counts are u32", a.len()));
            }
            match a.elem_type() {
                ValueType::Bool => {
                    return Err("ARRAY of BOOL: .llmw has no bool arrays".to_owned());
                }
                ValueType::Array => {
                    return Err("ARRAY of ARRAY: .llmw has no nested arrays".to_owned());
                }
                ValueType::String => {
                    let mut v = Vec::new();
                    for (i, s) in a.strings().into_iter().flatten().enumerate() {
                        v.push(s.as_str().ok_or_else(|| {
                            format!("element {i} of an ARRAY of STRING is not UTF-8 text")
                        })?);
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
                        v.push(i64::try_from(wide).map_err(|_| {
                            format!("element {i} of an ARRAY of UINT64: {}", too_large(wide))
                        })?);
                    }
                    LlmwValue::I64s(v)
                }
            }
        }
        scalar => {
            let wide = scalar.as_i128().unwrap_or_default();
            LlmwValue::I64(i64::try_from(wide).map_err(|_| too_large(wide))?)
        }
    })
}

/// Reads `[pos, end)` of the source through the streaming seam (`read_raw_at`), for
/// `ModelWriter::add_tensor_from_reader`.
struct RangeReader<'a> {
    source: &'a dyn WeightSource,
    pos: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let n = left.min(buf.len());
        let chunk = buf.get_mut(..n).unwrap_or_default();
        self.source.read_raw_at(self.pos, chunk).map_err(io::Error::other)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

fn gguf_to_llmw(src: &GgufFile, args: &ConvertArgs) -> Result<Done, Exit> {
    let gguf = src.gguf();
    if gguf.endian() == sipllm_gguf::Endian::Big && !gguf.tensor_infos().is_empty() {
        return Err(usage_error(&format!(
            "{} is a big-endian GGUF: its tensor data is stored big-endian too, and .llmw is \
             little-endian. Converting would mean byte-swapping every tensor by its type, which \
             sipllm does not do (a big-endian file without tensors converts)",
            display(&args.input)
        )));
    }
    let mut writer = ModelWriter::new();
    let mut unsupported = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for e in gguf.metadata() {
        let key = e.key.to_string_lossy().into_owned();
        if key == PADDING_KEY {
            dropped.push((key, "padding of an in-place edit (layout only)".to_owned()));
            continue;
        }
        let Some(k) = e.key.as_str() else {
            unsupported.push((key, "the key is not UTF-8 text".to_owned()));
            continue;
        };
        let added = match to_llmw(e.value) {
            Err(why) => {
                unsupported.push((key, why));
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
            Err(e) => unsupported.push((key, escape::message(&e.to_string()).into_owned())),
        }
    }
    let mut dropped_unsupported = unsupported_keys(unsupported, args, Format::Llmw)?;
    dropped.append(&mut dropped_unsupported);
    let mut planned = Vec::new();
    let mut bad_tensors = Vec::new();
    for t in gguf.tensors() {
        let name = t.name.to_string_lossy().into_owned();
        let mut shape: Vec<u64> = t.info.shape().to_vec();
        if shape.is_empty() {
            shape.push(1);
        }
        let (from, nbytes) = (t.info.abs_offset(), t.info.nbytes().unwrap_or(0));
        let reader = RangeReader { source: src, pos: from, end: from.saturating_add(nbytes) };
        match writer.add_tensor_from_reader(&name, t.info.ggml_type(), &shape, reader) {
            Ok(_) => planned.push(Planned {
                name,
                ggml_type: t.info.ggml_type(),
                shape,
                nbytes,
                from,
                to: 0,
            }),
            Err(e) => bad_tensors.push(escape::message(&e.to_string()).into_owned()),
        }
    }
    if !bad_tensors.is_empty() {
        let mut msg = format!(
            "{} has tensors .llmw cannot hold, so nothing was written:",
            display(&args.input)
        );
        for b in &bad_tensors {
            msg.push_str(&format!("\n  {b}"));
        }
        return Err(usage_error(&msg));
    }
    let layout =
        writer.layout().map_err(|e| usage_error(&format!("cannot lay out the .llmw file: {e}")))?;
    for (p, &(to, _)) in planned.iter_mut().zip(&layout.tensors) {
        p.to = to;
    }
    let source = src.store().source();
    let write = |tmp: &AtomicFile| write_llmw_into(writer, tmp);
    write_check_and_commit(&args.output, Format::Llmw, write, &kept, src, &planned, source)?;
    Ok(Done {
        keys: kept.len(),
        tensors: planned.len(),
        data_bytes: planned.iter().map(|p| p.nbytes).sum(),
        dropped,
    })
}

fn llmw_to_gguf(src: &ModelFile, file: &File, args: &ConvertArgs) -> Result<Done, Exit> {
    let llmw = src.llmw();
    let arch = llmw.get_str("general.architecture");
    let mut writer = GgufWriter::new();
    let mut unsupported = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    for e in llmw.metadata() {
        let value = to_gguf(e.key, e.value, arch);
        if e.key == "general.alignment" && !matches!(value, Value::Uint32(a) if a.is_power_of_two())
        {
            unsupported.push((
                e.key.to_owned(),
                format!(
                    "GGUF's general.alignment must be a UINT32 power of two; this one is {}",
                    render_short(&e.value)
                ),
            ));
            continue;
        }
        writer.set(e.key.as_bytes(), value);
        kept.push(e.key.to_owned());
    }
    let dropped = unsupported_keys(unsupported, args, Format::Gguf)?;
    for t in llmw.tensors() {
        writer.add_tensor(TensorDesc {
            name: Cow::Borrowed(t.name.as_bytes()),
            dims: t.info.gguf_dims().to_vec(),
            ggml_type: t.info.dtype(),
        });
    }
    let layout = writer.layout().map_err(|e| {
        usage_error(&format!("the GGUF header is invalid: {}", escape::message(&e.to_string())))
    })?;
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
    let write = |tmp: &AtomicFile| builder.write_into(tmp);
    write_check_and_commit(&args.output, Format::Gguf, write, &kept, src, &planned, source)?;
    Ok(Done {
        keys: kept.len(),
        tensors: planned.len(),
        data_bytes: planned.iter().map(|p| p.nbytes).sum(),
        dropped,
    })
}

fn render_short(v: &sipllm_llmw::MetaValue<'_>) -> String {
    match v {
        sipllm_llmw::MetaValue::I64(x) => x.to_string(),
        sipllm_llmw::MetaValue::F64(x) => format!("{x:?}"),
        sipllm_llmw::MetaValue::Str(s) => quoted(s),
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
/// checks it (keys through the seam, tensors, sampled data), and renames it over `out`.
fn write_check_and_commit<T, E: std::fmt::Display>(
    out: &Path,
    format: Format,
    write: impl FnOnce(&AtomicFile) -> Result<T, E>,
    kept: &[String],
    src: &dyn WeightSource,
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), Exit> {
    let out_name = display(out);
    let tmp = AtomicFile::create(out)
        .map_err(|e| usage_error(&format!("cannot create a file beside {out_name}: {e}")))?;
    if let Err(e) = write(&tmp) {
        return Err(usage_error(&format!(
            "writing {out_name} failed: {}; {out_name} was not changed",
            escape::message(&e.to_string())
        )));
    }
    let fail = |msg: String| {
        usage_error(&format!(
            "the written file failed its check, so {out_name} was not replaced: {msg}"
        ))
    };
    let reopened = (|| {
        let file = tmp
            .file()
            .try_clone()
            .map_err(|source| StreamError::Open { path: out.to_path_buf(), source })?;
        let backing = FileBacking::from_file(file, out, Backend::Pread)?;
        Ok::<_, StreamError>(match format {
            Format::Gguf => Model::from(GgufFile::from_backing(backing, &OpenOptions::default())?),
            _ => Model::from(ModelFile::from_backing(backing, &OpenOptions::default())?),
        })
    })()
    .map_err(|e| fail(format!("it does not re-open: {}", escape::message(&e.to_string()))))?;
    let written: &dyn WeightSource = reopened.as_weight_source();
    let n_keys = written.meta_keys().count();
    if n_keys != kept.len() {
        return Err(fail(format!("{n_keys} keys instead of {}", kept.len())));
    }
    for key in kept {
        let same = match (src.meta(key), written.meta(key)) {
            (Some(a), Some(b)) => same_meta(&a, &b),
            _ => false,
        };
        if !same {
            return Err(fail(format!("key {} does not have its value", quoted(key))));
        }
    }
    check_tensors(written, planned, source).map_err(|e| fail(e.to_string()))?;
    drop(reopened);
    tmp.commit().map_err(|e| {
        usage_error(&format!("cannot move the new file into place at {out_name}: {e}"))
    })
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
}
