//! String arrays for Python: a whole array decoded in one call, and a lazy sequence.

use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyIndexError, PyTypeError, PyUnicodeDecodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyString};
use sipllm_streaming::{Meta, MetaStr};

use crate::exact::{meta_exact, py_name, shown};

/// The `str` of stored bytes, or the `UnicodeDecodeError` Python's own decoding would raise.
fn to_py_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(PyString::new(py, s)),
        Err(e) => Err(PyErr::from_value(PyUnicodeDecodeError::new_utf8(py, bytes, e)?.into_any())),
    }
}

/// Decodes `count` GGUF strings (u64 length, then the bytes) stored back to back in `buf`,
/// lengths big-endian when `big`: the whole list in one call (gguf-py's `contents()` of a
/// string array makes a numpy view and a `bytes` per element).
#[pyfunction]
#[pyo3(signature = (buf, count, big = false))]
pub(crate) fn decode_strings<'py>(
    py: Python<'py>,
    buf: &[u8],
    count: usize,
    big: bool,
) -> PyResult<Bound<'py, PyList>> {
    let truncated = || PyValueError::new_err("string array truncated");
    // The count comes from the caller; every element needs at least its 8-byte length field.
    if count > buf.len() / 8 {
        return Err(truncated());
    }
    let mut rest = buf;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, tail) = rest.split_first_chunk::<8>().ok_or_else(truncated)?;
        let len = if big { u64::from_be_bytes(*len) } else { u64::from_le_bytes(*len) };
        let len = usize::try_from(len).map_err(|_| truncated())?;
        let (s, tail) = tail.split_at_checked(len).ok_or_else(truncated)?;
        out.push(to_py_str(py, s)?);
        rest = tail;
    }
    PyList::new(py, out)
}

/// A string array of an opened model as a lazy, read-only sequence of `str`: nothing is
/// decoded until an element is asked for; the first indexed access builds an index of the
/// element positions (two u32 or u64 per element), so later ones are O(1). An element that is
/// not UTF-8 (the lenient profile reads those) is its `bytes`, as a plain string value is.
#[pyclass(frozen, sequence, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct StrSeq {
    model: Arc<sipllm_streaming::Model>,
    /// The key's stored bytes (not always UTF-8: see `exact`).
    key: Vec<u8>,
    len: usize,
    /// (start, end) of each element's bytes, relative to the array's payload.
    index: OnceLock<Vec<(usize, usize)>>,
}

impl StrSeq {
    /// A sequence over the string array under `key`, if there is one.
    pub(crate) fn new(model: Arc<sipllm_streaming::Model>, key: &[u8]) -> Option<StrSeq> {
        let len = match meta_exact(&model, key)? {
            Meta::Strs(list) => list.len(),
            _ => return None,
        };
        Some(StrSeq { model, key: key.to_owned(), len, index: OnceLock::new() })
    }

    /// The array's stored bytes and its elements.
    fn with_strings<R>(
        &self,
        f: impl FnOnce(&[u8], &mut dyn Iterator<Item = MetaStr<'_>>) -> R,
    ) -> R {
        match meta_exact(&self.model, &self.key) {
            Some(Meta::Strs(list)) => {
                let payload = list
                    .as_gguf()
                    .map(|a| a.payload())
                    .or_else(|| list.as_llmw().map(|a| a.payload()))
                    .unwrap_or_default();
                f(payload, &mut list.iter())
            }
            _ => f(&[], &mut std::iter::empty()),
        }
    }

    fn index(&self) -> &[(usize, usize)] {
        self.index.get_or_init(|| {
            self.with_strings(|payload, strings| {
                let base = payload.as_ptr() as usize;
                // Positions from the pointers the parser's views hand out: an address
                // difference, no `unsafe`.
                strings
                    .map(|s| {
                        let start = (s.as_bytes().as_ptr() as usize).wrapping_sub(base);
                        (start, start.saturating_add(s.len()))
                    })
                    .collect()
            })
        })
    }

    fn element<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let &(start, end) =
            self.index().get(i).ok_or_else(|| PyIndexError::new_err("index out of range"))?;
        self.with_strings(|payload, _| {
            let bytes = payload
                .get(start..end)
                .ok_or_else(|| PyIndexError::new_err("index out of range"))?;
            Ok(py_name(py, bytes))
        })
    }

    fn normalize(&self, i: isize) -> PyResult<usize> {
        let n = self.len as isize;
        let j = if i < 0 { i + n } else { i };
        if (0..n).contains(&j) {
            Ok(j as usize)
        } else {
            Err(PyIndexError::new_err("string index out of range"))
        }
    }
}

#[pymethods]
impl StrSeq {
    fn __len__(&self) -> usize {
        self.len
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = key.cast::<PySlice>() {
            let ind = slice.indices(self.len as isize)?;
            let mut out = Vec::with_capacity(ind.slicelength);
            let mut i = ind.start;
            for _ in 0..ind.slicelength {
                out.push(self.element(py, i as usize)?);
                i += ind.step;
            }
            return Ok(PyList::new(py, out)?.into_any());
        }
        let i: isize = key
            .extract()
            .map_err(|_| PyTypeError::new_err("indices must be integers or slices"))?;
        Ok(self.element(py, self.normalize(i)?)?.into_any())
    }

    fn __iter__(slf: Py<StrSeq>) -> StrSeqIter {
        StrSeqIter { seq: slf, next: std::sync::atomic::AtomicUsize::new(0) }
    }

    fn __repr__(&self) -> String {
        format!("<StrSeq {:?}: {} strings>", shown(&self.key), self.len)
    }

    /// The key the array is stored under (`bytes` when it is not UTF-8).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        py_name(py, &self.key)
    }

    /// Every element as a `list[str]` (`bytes` for one that is not UTF-8), in one call.
    fn to_list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<Bound<'py, PyAny>> =
            self.with_strings(|_, strings| strings.map(|s| py_name(py, s.as_bytes())).collect());
        PyList::new(py, items)
    }
}

/// The iterator of a [`StrSeq`].
#[pyclass(frozen, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct StrSeqIter {
    seq: Py<StrSeq>,
    next: std::sync::atomic::AtomicUsize,
}

#[pymethods]
impl StrSeqIter {
    fn __iter__(slf: Py<StrSeqIter>) -> Py<StrSeqIter> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let seq = self.seq.get();
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i >= seq.len {
            // Stay exhausted.
            self.next.store(seq.len, std::sync::atomic::Ordering::Relaxed);
            return Ok(None);
        }
        seq.element(py, i).map(Some)
    }
}
