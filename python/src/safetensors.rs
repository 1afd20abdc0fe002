//! safetensors and zero-copy arrays: `Model.to_safetensors` runs sipllm-edit's streaming
//! export with the GIL released; `tensor_location` says which file and offset hold a
//! tensor's bytes, so that `Model.array` (Python) maps them with `numpy.memmap` — the pages of
//! the file itself, no copy, no `unsafe` here.

use std::path::Path;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use sipllm_edit::safetensors::{Dtype, ExportOptions, Names, SafetensorsError, export};
use sipllm_streaming::WeightSource;

use crate::errors::{Diag, gguf_error, stream_error};
use crate::model::Model;

/// Writes `model` as a safetensors file at `path` (see `sipllm_edit::safetensors`): `dtype`
/// `"f32"`, `"f16"`, `"bf16"` or `"keep"`; `names` `"gguf"` or `"hf"` (transformers' names
/// and a `config.json` beside the file). Returns (tensors, file bytes, tensors copied as
/// stored, config.json path or None).
#[pyfunction]
#[pyo3(signature = (model, path, dtype = "f32", names = "gguf"))]
pub(crate) fn to_safetensors(
    py: Python<'_>,
    model: &Model,
    path: &str,
    dtype: &str,
    names: &str,
) -> PyResult<(usize, u64, usize, Option<String>)> {
    let dtype = match dtype {
        "f32" => Dtype::F32,
        "f16" => Dtype::F16,
        "bf16" => Dtype::Bf16,
        "keep" => Dtype::Keep,
        other => {
            return Err(PyValueError::new_err(format!(
                "dtype must be \"f32\", \"f16\", \"bf16\" or \"keep\", not {other:?}"
            )));
        }
    };
    let names = match names {
        "gguf" => Names::Gguf,
        "hf" => Names::Hf,
        other => {
            return Err(PyValueError::new_err(format!(
                "names must be \"gguf\" or \"hf\", not {other:?}"
            )));
        }
    };
    let inner = &*model.inner;
    let options = ExportOptions { dtype, names };
    // Boxed: the error is large, and only the rare failure pays for it.
    let done =
        py.detach(|| export(inner, Path::new(path), &options, &mut |_| {}).map_err(Box::new));
    match done.map_err(|e| *e) {
        Ok(d) => {
            Ok((d.tensors, d.file_bytes, d.copied, d.config.map(|(p, _)| p.display().to_string())))
        }
        Err(SafetensorsError::Read(e)) => Err(stream_error(py, &e, &model.path)),
        Err(e) => {
            let diag = Diag {
                severity: "error",
                code: e.code(),
                offset: None,
                length: 0,
                path: String::new(),
                message: e.to_string(),
                help: e.help().to_owned(),
            };
            Err(gguf_error(py, &diag, Some(path)))
        }
    }
}

/// The file holding tensor `name`'s bytes, their offset in it (a split set's shard, and the
/// offset there) and whether they are big-endian; `None` when the model is not in local
/// files (a URL).
#[pyfunction]
pub(crate) fn tensor_location(model: &Model, name: &str) -> PyResult<Option<(String, u64, bool)>> {
    let inner = &*model.inner;
    let Some(t) = inner.find(name) else {
        return Err(PyKeyError::new_err(name.to_owned()));
    };
    if model.remote {
        // Its store is named by the URL, which is no file to map.
        return Ok(None);
    }
    let big = |g: &sipllm_streaming::GgufFile| g.gguf().endian() == sipllm_gguf::Endian::Big;
    Ok(match inner {
        sipllm_streaming::Model::Split(set) => set.shard_tensor(t).and_then(|(i, st)| {
            let p = set.paths().nth(i).flatten()?;
            Some((p.display().to_string(), st.abs_offset, big(set.first())))
        }),
        m => {
            let be = m.gguf().is_some_and(big);
            m.path().map(|p| (p.display().to_string(), t.abs_offset, be))
        }
    })
}
