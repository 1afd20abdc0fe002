//! `sipllm diff A B [--format json] [--metadata-only]` and `sipllm diff --diffable A`: the
//! rendering of [`sipllm_model::diff`]'s report, and the stable text dump.
//!
//! Exit codes: 0 equal, 1 different, 2 when either file cannot be opened or read (an invalid
//! file included: a diff has no verdict on a file it cannot read).

use std::io::{self, BufWriter, Write};

use serde_json::{Value as Json, json};
use sipllm_gguf::{Gguf, MetaValue};
use sipllm_model::diff::{
    Detail, DiffOptions, MetaChange, ModelDiff, Shown, TensorChange, TensorSummary, ValueSummary,
    diff_headers, diff_models, tensor_hashes, value_type_name as short,
};
use sipllm_streaming::{Meta, Model, StreamError, WeightSource};

use crate::cli::{DiffArgs, DiffFormat};
use crate::commands::{open_or_report, report_open_error};
use crate::open::Opened;
use crate::render::escape;
use crate::render::json::{hex, write_line};
use crate::render::value::{group, human_bytes, type_name};
use crate::{Ctx, Exit};

/// The `diff --format json` schema version (docs/cli.md).
pub const SCHEMA: &str = "sipllm.diff/1";

/// Runs `diff`.
pub fn run(args: &DiffArgs, ctx: &Ctx) -> io::Result<Exit> {
    let settings = args.parse.settings();
    let open = |path| match open_or_report(path, &settings, ctx) {
        Ok(o) => Ok(o),
        // Whatever the reason, a file that cannot be opened is trouble to a diff.
        Err(_) => Err(Exit::Trouble),
    };
    let a = match open(&args.a) {
        Ok(a) => a,
        Err(exit) => return Ok(exit),
    };
    let Some(model_a) = readable(&a) else { return Ok(Exit::Trouble) };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.diffable {
        return match dump(&mut out, model_a, !args.metadata_only) {
            Ok(Ok(())) => {
                out.flush()?;
                Ok(Exit::Ok)
            }
            Ok(Err(e)) => Ok(read_error(&args.a, &e, ctx)),
            Err(e) => Err(e),
        };
    }
    let Some(path_b) = &args.b else { return Ok(Exit::Trouble) };
    let b = match open(path_b) {
        Ok(b) => b,
        Err(exit) => return Ok(exit),
    };
    let Some(model_b) = readable(&b) else { return Ok(Exit::Trouble) };
    let options = DiffOptions {
        data: !args.metadata_only,
        max_indices: args.max_indices,
        ..DiffOptions::default()
    };
    let report = if options.data {
        match diff_models(model_a, model_b, &options) {
            Ok(r) => r,
            Err(e) => return Ok(read_error(e.path().unwrap_or(&args.a), &e, ctx)),
        }
    } else {
        diff_headers(model_a, model_b, &options)
    };
    match args.format {
        DiffFormat::Text => write_text(&mut out, &report, a.name(), b.name())?,
        DiffFormat::Json => write_line(&mut out, &to_json(&report, a.name(), b.name()))?,
    }
    out.flush()?;
    Ok(if report.is_equal() { Exit::Ok } else { Exit::Invalid })
}

/// The model, or (reported) why its tensors cannot be read.
fn readable(opened: &Opened) -> Option<&Model> {
    let model = opened.model();
    if model.is_none() {
        let _ = writeln!(
            io::stderr(),
            "sipllm: {}: tensor data lies outside the file; it cannot be compared",
            escape::str(opened.name())
        );
    }
    model
}

fn read_error(path: &std::path::Path, e: &StreamError, ctx: &Ctx) -> Exit {
    let _ = report_open_error(path, e, ctx);
    Exit::Trouble
}

// ----- text ------------------------------------------------------------------------------------

fn write_text(out: &mut dyn Write, d: &ModelDiff, a: &str, b: &str) -> io::Result<()> {
    writeln!(out, "--- {}", escape::str(a))?;
    writeln!(out, "+++ {}", escape::str(b))?;
    for f in &d.file {
        writeln!(out, "~ file {}: {} -> {}", f.what, f.old, f.new)?;
    }
    if !d.metadata.is_empty() {
        writeln!(out, "metadata: {}", counts(&d.metadata, kind_of_meta))?;
    }
    for c in &d.metadata {
        let key = escape::name(c.key());
        match c {
            MetaChange::Added { new, .. } => writeln!(out, "  + {key}  {}", value_text(new))?,
            MetaChange::Removed { old, .. } => writeln!(out, "  - {key}  {}", value_text(old))?,
            MetaChange::Changed { old, new, detail, .. } => {
                let common = array_len(old).min(array_len(new));
                let detail = detail.as_ref().map(|d| detail_text(d, common)).unwrap_or_default();
                writeln!(out, "  ~ {key}  {} -> {}{detail}", value_text(old), value_text(new))?
            }
        }
    }
    if !d.tensors.is_empty() {
        writeln!(out, "tensors: {}", counts(&d.tensors, kind_of_tensor))?;
    }
    for c in &d.tensors {
        match c {
            TensorChange::Added(t) => writeln!(out, "  + {}", tensor_text(t))?,
            TensorChange::Removed(t) => writeln!(out, "  - {}", tensor_text(t))?,
            TensorChange::Changed { old, new } => writeln!(
                out,
                "  ~ {}  {} {} -> {} {}",
                escape::name(old.name.as_bytes()),
                type_name(old.ggml_type),
                shape(&old.shape),
                type_name(new.ggml_type),
                shape(&new.shape)
            )?,
            TensorChange::Renamed { old, new } => writeln!(
                out,
                "  ~ {} -> {}  renamed: same type, shape and data",
                escape::name(old.name.as_bytes()),
                escape::name(new.name.as_bytes()),
            )?,
        }
    }
    match &d.data {
        None => writeln!(out, "data: not compared (--metadata-only)")?,
        Some(data) => {
            let compared = format!(
                "{} tensors compared by hash ({} of data in each model)",
                group(data.compared as u64),
                human_bytes(data.bytes)
            );
            if data.changed.is_empty() {
                writeln!(out, "data: {compared}, all equal")?;
            } else {
                writeln!(out, "data: {compared}, {} differ", group(data.changed.len() as u64))?;
                for name in &data.changed {
                    writeln!(out, "  ~ {}", escape::name(name.as_bytes()))?;
                }
            }
        }
    }
    // Under --metadata-only the data may differ: never a bare `equal` then.
    let verdict = match (d.is_equal(), &d.data) {
        (true, None) => "metadata equal (data not compared)",
        (true, Some(_)) => "equal",
        (false, _) => "different",
    };
    writeln!(out, "{verdict}")
}

fn kind_of_meta(c: &MetaChange) -> usize {
    match c {
        MetaChange::Changed { .. } => 0,
        MetaChange::Removed { .. } => 1,
        MetaChange::Added { .. } => 2,
    }
}

fn kind_of_tensor(c: &TensorChange) -> usize {
    match c {
        TensorChange::Changed { .. } => 0,
        TensorChange::Removed(_) => 1,
        TensorChange::Added(_) => 2,
        TensorChange::Renamed { .. } => 3,
    }
}

/// `1 changed, 3 only in A, 2 only in B` (the non-zero ones).
fn counts<T>(list: &[T], kind: impl Fn(&T) -> usize) -> String {
    let mut n = [0u64; 4];
    for c in list {
        if let Some(slot) = n.get_mut(kind(c)) {
            *slot += 1;
        }
    }
    let names = ["changed", "only in A", "only in B", "renamed"];
    n.iter()
        .zip(names)
        .filter(|(k, _)| **k > 0)
        .map(|(k, name)| format!("{} {name}", group(*k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn value_text(v: &ValueSummary) -> String {
    match &v.value {
        Shown::Int(i) => format!("{} {i}", v.ty),
        Shown::Float(f) => format!("{} {}", v.ty, float_text(*f, &v.ty)),
        Shown::Bool(b) => format!("{} {b}", v.ty),
        Shown::Str { prefix, len } if *len as usize == prefix.len() => {
            format!("{} {}", v.ty, escape::quoted(prefix))
        }
        Shown::Str { prefix, len } => {
            let q = escape::quoted(prefix);
            let open = q.strip_suffix('"').unwrap_or(&q);
            format!("{} {open}…\" ({} bytes)", v.ty, group(*len))
        }
        Shown::Array { len } => format!("{} × {}", v.ty, group(*len)),
    }
}

/// A float as stored: an `f32` shown at `f32` precision (`1e-5`, not `9.99999974737875e-6`).
fn float_text(f: f64, ty: &str) -> String {
    if ty == "f32" { format!("{:?}", f as f32) } else { format!("{f:?}") }
}

fn detail_text(d: &Detail, common: u64) -> String {
    match d {
        Detail::Elements { differing: 0, .. } => {
            format!(": the first {} elements are equal", group(common))
        }
        Detail::Elements { differing, first } => {
            let at: Vec<String> = first.iter().map(|i| i.to_string()).collect();
            let more = if (*differing as usize) > first.len() { ", …" } else { "" };
            let (n, of) = (group(*differing), group(common));
            format!(": {n} of {of} elements differ, at [{}{more}]", at.join(", "))
        }
        Detail::Text { first_byte } => format!(": first difference at byte {first_byte}"),
    }
}

fn array_len(v: &ValueSummary) -> u64 {
    match v.value {
        Shown::Array { len } => len,
        _ => 0,
    }
}

fn tensor_text(t: &TensorSummary) -> String {
    format!("{}  {} {}", escape::name(t.name.as_bytes()), type_name(t.ggml_type), shape(&t.shape))
}

fn shape(s: &[u64]) -> String {
    let dims: Vec<String> = s.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

// ----- JSON ------------------------------------------------------------------------------------

/// A byte string as JSON: a string when UTF-8, else `{"bytes_hex": …}` (as `inspect --json`).
fn bytes_json(b: &[u8]) -> Json {
    match std::str::from_utf8(b) {
        Ok(s) => Json::String(s.to_owned()),
        Err(_) => json!({ "bytes_hex": hex(b) }),
    }
}

fn int_json(v: i128) -> Json {
    if let Ok(i) = i64::try_from(v) {
        json!(i)
    } else if let Ok(u) = u64::try_from(v) {
        json!(u)
    } else {
        Json::String(v.to_string())
    }
}

/// Finite floats as numbers; `nan`, `inf`, `-inf` as strings (JSON has no such numbers).
fn float_json(f: f64) -> Json {
    if f.is_finite() {
        json!(f)
    } else if f.is_nan() {
        json!("nan")
    } else if f > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

fn value_json(v: &ValueSummary) -> Json {
    let mut o = serde_json::Map::new();
    o.insert("type".into(), json!(v.ty));
    match &v.value {
        Shown::Int(i) => {
            o.insert("value".into(), int_json(*i));
        }
        Shown::Float(f) => {
            o.insert("value".into(), float_json(*f));
        }
        Shown::Bool(b) => {
            o.insert("value".into(), json!(b));
        }
        Shown::Str { prefix, len } => {
            let key = if *len as usize == prefix.len() { "value" } else { "prefix" };
            o.insert(key.into(), bytes_json(prefix));
            o.insert("len".into(), json!(len));
        }
        Shown::Array { len } => {
            o.insert("len".into(), json!(len));
        }
    }
    Json::Object(o)
}

fn tensor_json(t: &TensorSummary) -> Json {
    json!({
        "ggml_type": type_name(t.ggml_type),
        "shape": t.shape.as_slice(),
        "nbytes": t.nbytes,
    })
}

/// The `diff --format json` document (schema `sipllm.diff/1`, docs/cli.md).
pub fn to_json(d: &ModelDiff, a: &str, b: &str) -> Json {
    let file: Vec<Json> =
        d.file.iter().map(|f| json!({ "what": f.what, "a": f.old, "b": f.new })).collect();
    let metadata: Vec<Json> = d
        .metadata
        .iter()
        .map(|c| match c {
            MetaChange::Added { key, new } => {
                json!({ "change": "added", "key": bytes_json(key), "b": value_json(new) })
            }
            MetaChange::Removed { key, old } => {
                json!({ "change": "removed", "key": bytes_json(key), "a": value_json(old) })
            }
            MetaChange::Changed { key, old, new, detail } => {
                let mut o = json!({
                    "change": "changed",
                    "key": bytes_json(key),
                    "a": value_json(old),
                    "b": value_json(new),
                });
                match detail {
                    Some(Detail::Elements { differing, first }) => {
                        o["differing"] = json!(differing);
                        o["first_indices"] = json!(first);
                    }
                    Some(Detail::Text { first_byte }) => o["first_byte"] = json!(first_byte),
                    None => {}
                }
                o
            }
        })
        .collect();
    let tensors: Vec<Json> = d
        .tensors
        .iter()
        .map(|c| match c {
            TensorChange::Added(t) => {
                json!({ "change": "added", "name": t.name, "b": tensor_json(t) })
            }
            TensorChange::Removed(t) => {
                json!({ "change": "removed", "name": t.name, "a": tensor_json(t) })
            }
            TensorChange::Changed { old, new } => json!({
                "change": "changed", "name": old.name, "a": tensor_json(old), "b": tensor_json(new),
            }),
            TensorChange::Renamed { old, new } => json!({
                "change": "renamed", "name": old.name, "new_name": new.name,
                "a": tensor_json(old), "b": tensor_json(new),
            }),
        })
        .collect();
    let data = d
        .data
        .as_ref()
        .map(|x| json!({ "compared": x.compared, "bytes": x.bytes, "changed": x.changed }));
    json!({
        "schema": SCHEMA,
        "a": a,
        "b": b,
        "equal": d.is_equal(),
        "file": file,
        "metadata": metadata,
        "tensors": tensors,
        "data": data,
    })
}

// ----- --diffable -------------------------------------------------------------------------------

/// Writes `model` as stable text: one line per key (arrays: a line with type and count, then
/// one per element), per tensor (type, shape, and with `data` the XXH3-128 of its bytes), no
/// offsets, everything escaped. The outer error is the output's, the inner the model's.
fn dump(out: &mut dyn Write, model: &Model, data: bool) -> io::Result<Result<(), StreamError>> {
    let gguf = match model {
        Model::Gguf(f) => Some(f.gguf()),
        Model::Split(s) => Some(s.first().gguf()),
        _ => None,
    };
    writeln!(out, "format {}", model.format().label())?;
    match gguf {
        Some(g) => {
            writeln!(out, "version {}", g.version())?;
            let big = g.endian() == sipllm_gguf::Endian::Big;
            writeln!(out, "endian {}", if big { "big" } else { "little" })?;
            dump_gguf(out, g)?;
        }
        None => dump_collapsed(out, model)?,
    }
    let hashes = if data {
        match tensor_hashes(model.as_weight_source()) {
            Ok(h) => h,
            Err(e) => return Ok(Err(e)),
        }
    } else {
        Vec::new()
    };
    for (i, t) in model.tensors().iter().enumerate() {
        write!(
            out,
            "tensor {} {} {}",
            escape::name(t.name.as_bytes()),
            type_name(t.ggml_type),
            shape(&t.shape)
        )?;
        match hashes.get(i) {
            Some(Some(h)) => writeln!(out, " xxh3-128:{h:032x}")?,
            Some(None) => writeln!(out, " size-unknown")?,
            None => writeln!(out)?,
        }
    }
    Ok(Ok(()))
}

fn dump_gguf(out: &mut dyn Write, g: &Gguf<impl AsRef<[u8]>>) -> io::Result<()> {
    for e in g.metadata() {
        let key = escape::name(e.key.as_bytes());
        match e.value {
            MetaValue::Array(a) => {
                writeln!(out, "kv {key} [{}] × {}", short(a.elem_type()), a.len())?;
                for (i, v) in a.iter().enumerate() {
                    writeln!(out, "kv {key}[{i}] {}", scalar(&v))?;
                }
            }
            v => writeln!(out, "kv {key} {} {}", short(v.value_type()), scalar(&v))?,
        }
    }
    Ok(())
}

/// A GGUF value on one line (a nested array as its element type and count).
fn scalar(v: &MetaValue<'_>) -> String {
    match *v {
        MetaValue::Float32(f) => format!("{f:?}"),
        MetaValue::Float64(f) => format!("{f:?}"),
        MetaValue::Bool(b) => b.to_string(),
        MetaValue::String(s) => escape::quoted(s.as_bytes()),
        MetaValue::Array(a) => format!("[{}] × {}", short(a.elem_type()), a.len()),
        ref other => other.as_i128().map(|i| i.to_string()).unwrap_or_default(),
    }
}

/// `.llmw` metadata, through the collapsed view (`i64`, `f64`, `str` and arrays of them).
fn dump_collapsed(out: &mut dyn Write, model: &Model) -> io::Result<()> {
    for (k, v) in model.metadata() {
        let key = escape::name(k.as_bytes());
        match v {
            Meta::Int(i) => writeln!(out, "kv {key} i64 {i}")?,
            Meta::Float(f) => writeln!(out, "kv {key} f64 {f:?}")?,
            Meta::Bool(b) => writeln!(out, "kv {key} bool {b}")?,
            Meta::Str(s) => writeln!(out, "kv {key} str {}", escape::quoted(s.as_bytes()))?,
            Meta::Ints(l) => {
                writeln!(out, "kv {key} [i64] × {}", l.len())?;
                for (i, x) in l.iter().enumerate() {
                    writeln!(out, "kv {key}[{i}] {x}")?;
                }
            }
            Meta::Floats(l) => {
                writeln!(out, "kv {key} [f64] × {}", l.len())?;
                for (i, x) in l.iter().enumerate() {
                    writeln!(out, "kv {key}[{i}] {x:?}")?;
                }
            }
            Meta::Strs(l) => {
                writeln!(out, "kv {key} [str] × {}", l.len())?;
                for (i, x) in l.iter().enumerate() {
                    writeln!(out, "kv {key}[{i}] {}", escape::quoted(x.as_bytes()))?;
                }
            }
            _ => writeln!(out, "kv {key} {}", v.kind())?,
        }
    }
    Ok(())
}
