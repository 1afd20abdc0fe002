//! Exact names: metadata keys and tensor names as their stored bytes.
//!
//! The llama-cpp and lenient profiles admit keys and tensor names that are not UTF-8. The
//! read side names tensors by a lossy `String`, under which `w\xff.weight` and `w\xfe.weight`
//! are both `w\u{fffd}.weight`; Python must neither merge them nor find a key by a spelling
//! it was never stored under. So Python sees a name as `str` when its bytes are UTF-8 and as
//! `bytes` otherwise, and every lookup compares stored bytes: a `str` by its UTF-8 encoding,
//! `bytes` as they are.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use sipllm_streaming::{Meta, WeightSource};

/// `str` when `bytes` are UTF-8, else `bytes`: the exact name, in the form a lookup takes back.
pub(crate) fn py_name<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyAny> {
    match std::str::from_utf8(bytes) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, bytes).into_any(),
    }
}

/// The stored bytes a Python name stands for: a `str`'s UTF-8 encoding, or `bytes` as they
/// are; `None` for any other object (no key or tensor is called that).
pub(crate) fn name_bytes(name: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(s) = name.cast::<PyString>() {
        return s.to_cow().ok().map(|s| s.as_bytes().to_vec());
    }
    name.cast::<PyBytes>().ok().map(|b| b.as_bytes().to_vec())
}

/// How a name is shown in an error (`KeyError`'s argument is the object itself).
pub(crate) fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value under the key whose stored bytes are `key`. UTF-8 keys go through the source's
/// own (byte-exact) lookup; others are found by walking the metadata, which only the
/// llama-cpp and lenient profiles let hold them.
pub(crate) fn meta_exact<'m>(model: &'m sipllm_streaming::Model, key: &[u8]) -> Option<Meta<'m>> {
    match std::str::from_utf8(key) {
        Ok(k) => model.meta(k),
        // The last pair with the key, as the source's own lookup picks among duplicates.
        Err(_) => model.metadata().filter(|(k, _)| k.as_bytes() == key).last().map(|(_, m)| m),
    }
}

/// The stored bytes of every tensor's name, in the order of `model.tensors()`.
fn tensor_names(model: &sipllm_streaming::Model) -> Vec<Vec<u8>> {
    let lossy: Vec<Vec<u8>> = model.tensors().iter().map(|t| t.name.as_bytes().to_vec()).collect();
    let stored: Vec<Vec<u8>> = match model {
        sipllm_streaming::Model::Gguf(f) => {
            f.gguf().tensors().map(|t| t.name.as_bytes().to_vec()).collect()
        }
        sipllm_streaming::Model::Split(set) => set
            .shards()
            .flat_map(|s| s.gguf().tensors().map(|t| t.name.as_bytes().to_vec()))
            .collect::<Vec<_>>(),
        _ => return lossy,
    };
    // The read side lists a GGUF's tensors in directory order, shard after shard; should
    // that ever change, the lossy names are still right for every UTF-8 name.
    let same_order = stored.len() == lossy.len()
        && stored.iter().zip(&lossy).all(|(s, l)| String::from_utf8_lossy(s).as_bytes() == l);
    if same_order { stored } else { lossy }
}

/// A model's tensor names as stored, and the tensors' positions by them.
#[derive(Debug)]
pub(crate) struct TensorNames {
    /// In the order of `model.tensors()`.
    pub(crate) names: Vec<Vec<u8>>,
    /// Positions by stored name (the last of duplicates, as the read side's lookup).
    pub(crate) index: HashMap<Vec<u8>, usize>,
}

impl TensorNames {
    pub(crate) fn of(model: &sipllm_streaming::Model) -> TensorNames {
        let names = tensor_names(model);
        let index = names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect();
        TensorNames { names, index }
    }
}
