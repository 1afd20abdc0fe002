//! The native API: `open(path)` → a model through the `WeightSource` seam, `validate(path)`.

use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use sipllm_gguf::{Endian, Gguf, MetaValue, ParseOptions, Profile, ValueType, value::ArrayView};
use sipllm_streaming::HeaderBytes;
use sipllm_streaming::{Meta, OpenOptions, StreamError, StreamErrorKind, WeightSource};

use crate::errors::{Diag, stream_error};
use crate::exact;
use crate::strings::StrSeq;
use crate::values::{ValuesError, tensor_values};

/// A profile by the name the CLI gives it.
pub(crate) fn parse_profile(name: &str) -> PyResult<Profile> {
    match name {
        "strict" => Ok(Profile::Strict),
        "llama-cpp" | "llama_cpp" | "llamacpp" => Ok(Profile::LlamaCpp),
        "lenient" => Ok(Profile::Lenient),
        other => Err(PyValueError::new_err(format!(
            "unknown profile {other:?}: expected \"strict\", \"llama-cpp\" or \"lenient\""
        ))),
    }
}

fn options(profile: &str) -> PyResult<OpenOptions> {
    Ok(OpenOptions::default().with_parse(ParseOptions::new(parse_profile(profile)?)))
}

/// An opened model: GGUF, a split GGUF set, or `.llmw`. Header parsed, tensor data read only
/// when asked for.
#[pyclass(frozen, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct Model {
    pub(crate) inner: Arc<sipllm_streaming::Model>,
    pub(crate) path: String,
    /// Opened from a URL: no file to map.
    pub(crate) remote: bool,
    /// The tensors' stored names and their positions, made on first use (`exact`).
    names: OnceLock<exact::TensorNames>,
}

/// The name a path or URL is shown by: as given, or a URL with its credentials redacted.
pub(crate) fn shown(path: &str) -> String {
    if sipllm_remote::is_remote(path) { sipllm_remote::url::redact(path) } else { path.to_owned() }
}

/// Opens a file, or a URL (`http://`, `https://`, `hf://`) through sipllm-remote with the
/// CLI's defaults: the same sources, limits and errors.
fn open_model(path: &str, opts: &OpenOptions) -> Result<sipllm_streaming::Model, StreamError> {
    if sipllm_remote::is_remote(path) {
        let http = sipllm_remote::HttpOptions::default();
        return sipllm_remote::open_url(path, &http, opts).map(|r| r.model);
    }
    sipllm_streaming::Model::open(path, opts)
}

/// Opens the model at `path` — a file, or a URL — (its format from the first 4 bytes),
/// reading only its header.
#[pyfunction]
#[pyo3(signature = (path, profile = "strict"))]
pub(crate) fn open(py: Python<'_>, path: &str, profile: &str) -> PyResult<Model> {
    let opts = options(profile)?;
    let name = shown(path);
    let model = py.detach(|| open_model(path, &opts)).map_err(|e| stream_error(py, &e, &name))?;
    Ok(Model {
        inner: Arc::new(model),
        path: name,
        remote: sipllm_remote::is_remote(path),
        names: OnceLock::new(),
    })
}

/// How `path` is shown in messages: as given, or a URL with its credentials redacted.
#[pyfunction]
pub(crate) fn shown_name(path: &str) -> String {
    shown(path)
}

/// Whether `path` is a URL this package opens through range requests (`http://`,
/// `https://`, `hf://`, and the object stores' schemes, which it refuses with a typed
/// error).
#[pyfunction]
pub(crate) fn is_remote(path: &str) -> bool {
    sipllm_remote::is_remote(path)
}

type FindingRow = (&'static str, &'static str, Option<u64>, u64, String, String, String);

fn warnings_of(model: &sipllm_streaming::Model) -> Vec<FindingRow> {
    let gguf_warnings = |g: &Gguf<HeaderBytes>| -> Vec<FindingRow> {
        g.warnings().iter().map(|w| Diag::from_warning(w).into_tuple()).collect()
    };
    match model {
        sipllm_streaming::Model::Gguf(f) => gguf_warnings(f.gguf()),
        sipllm_streaming::Model::Split(set) => {
            set.shards().flat_map(|s| gguf_warnings(s.gguf())).collect()
        }
        _ => Vec::new(),
    }
}

/// Every problem found in the file at `path` under `profile`: its warnings when it opens, or
/// the one error that stops it. An unreadable file raises `OSError`.
#[pyfunction]
#[pyo3(signature = (path, profile = "strict"))]
pub(crate) fn validate(py: Python<'_>, path: &str, profile: &str) -> PyResult<Vec<FindingRow>> {
    let opts = options(profile)?;
    match py.detach(|| open_model(path, &opts)) {
        Ok(model) => Ok(warnings_of(&model)),
        Err(e) if matches!(e.kind(), StreamErrorKind::Open { .. } | StreamErrorKind::Io { .. }) => {
            Err(stream_error(py, &e, &shown(path)))
        }
        Err(e) => Ok(vec![Diag::from_stream(&e).into_tuple()]),
    }
}

/// The numpy dtype string of a fixed-size value type in `endian`.
fn dtype(ty: ValueType, endian: Endian) -> Option<String> {
    let (kind, size) = match ty {
        ValueType::Bool => return Some("|b1".into()),
        ValueType::Uint8 => return Some("|u1".into()),
        ValueType::Int8 => return Some("|i1".into()),
        ValueType::Uint16 => ("u", 2),
        ValueType::Int16 => ("i", 2),
        ValueType::Uint32 => ("u", 4),
        ValueType::Int32 => ("i", 4),
        ValueType::Float32 => ("f", 4),
        ValueType::Uint64 => ("u", 8),
        ValueType::Int64 => ("i", 8),
        ValueType::Float64 => ("f", 8),
        ValueType::String | ValueType::Array => return None,
    };
    let order = if endian == Endian::Big { '>' } else { '<' };
    Some(format!("{order}{kind}{size}"))
}

/// `("array", dtype, bytes)`: a numeric GGUF array as stored, for `numpy.frombuffer`.
fn gguf_array<'py>(py: Python<'py>, a: &ArrayView<'_>) -> PyResult<Bound<'py, PyAny>> {
    match dtype(a.elem_type(), a.endian()) {
        Some(dt) => Ok(("array", dt, PyBytes::new(py, a.payload())).into_pyobject(py)?.into_any()),
        None => {
            // Strings or nested arrays inside an array of arrays: a list of converted values.
            let items: PyResult<Vec<Bound<'py, PyAny>>> =
                a.iter().map(|v| gguf_value(py, v)).collect();
            Ok(("list", PyList::new(py, items?)?).into_pyobject(py)?.into_any())
        }
    }
}

/// An element of an array of arrays.
fn gguf_value<'py>(py: Python<'py>, v: MetaValue<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        MetaValue::Array(a) => gguf_array(py, &a)?,
        MetaValue::String(s) => match s.as_str() {
            Some(s) => ("value", s).into_pyobject(py)?.into_any(),
            None => ("value", PyBytes::new(py, s.as_bytes())).into_pyobject(py)?.into_any(),
        },
        other => scalar(py, other)?,
    })
}

fn scalar<'py>(py: Python<'py>, v: MetaValue<'_>) -> PyResult<Bound<'py, PyAny>> {
    match collapsed_scalar(py, &Meta::from_gguf("".into(), v))? {
        Some(value) => Ok(value),
        None => Ok(("value", py.None()).into_pyobject(py)?.into_any()),
    }
}

/// `("value", …)` for an integer, float, bool or string; `None` for lists.
fn collapsed_scalar<'py>(py: Python<'py>, meta: &Meta<'_>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(Some(match *meta {
        Meta::Int(i) => ("value", i).into_pyobject(py)?.into_any(),
        Meta::Float(f) => ("value", f).into_pyobject(py)?.into_any(),
        Meta::Bool(b) => ("value", b).into_pyobject(py)?.into_any(),
        Meta::Str(s) => match s.as_str() {
            Some(s) => ("value", s).into_pyobject(py)?.into_any(),
            None => ("value", PyBytes::new(py, s.as_bytes())).into_pyobject(py)?.into_any(),
        },
        _ => return Ok(None),
    }))
}

/// A `bytes` of `len` filled by `fill` with the GIL released, or the Python form of its error.
fn read_bytes<'py>(
    py: Python<'py>,
    len: usize,
    path: &str,
    fill: impl FnOnce(&mut [u8]) -> Result<(), StreamError> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut failure = None;
    let bytes = PyBytes::new_with(py, len, |buf| {
        if let Err(e) = py.detach(|| fill(buf)) {
            failure = Some(e);
        }
        Ok(())
    })?;
    match failure {
        Some(e) => Err(stream_error(py, &e, path)),
        None => Ok(bytes),
    }
}

fn bytes_of<T: Copy>(values: impl Iterator<Item = T>, to: impl Fn(T) -> [u8; 8]) -> Vec<u8> {
    values.flat_map(to).collect()
}

impl Model {
    /// The opened model, for the other modules' functions that take a `Model`.
    pub(crate) fn source(&self) -> &sipllm_streaming::Model {
        &self.inner
    }

    fn gguf(&self) -> Option<&Gguf<HeaderBytes>> {
        match &*self.inner {
            sipllm_streaming::Model::Gguf(f) => Some(f.gguf()),
            sipllm_streaming::Model::Split(set) => Some(set.first().gguf()),
            _ => None,
        }
    }

    fn names(&self) -> &exact::TensorNames {
        self.names.get_or_init(|| exact::TensorNames::of(&self.inner))
    }

    /// The tensor whose stored name is `name` (a `str` by its UTF-8 bytes, or `bytes`).
    fn tensor(&self, name: &Bound<'_, PyAny>) -> PyResult<&sipllm_streaming::SourceTensor> {
        exact::name_bytes(name)
            .and_then(|n| self.names().index.get(&n).copied())
            .and_then(|i| self.inner.tensors().get(i))
            .ok_or_else(|| PyKeyError::new_err(name.clone().unbind()))
    }
}

#[pymethods]
impl Model {
    /// `"gguf"` or `"llmw"`.
    #[getter]
    fn format(&self) -> &'static str {
        match self.inner.format() {
            sipllm_streaming::Format::Llmw => "llmw",
            _ => "gguf",
        }
    }

    /// The path given to `open` (a URL with its credentials redacted).
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The format version (for a split set, the first shard's).
    #[getter]
    fn version(&self) -> Option<u32> {
        match &*self.inner {
            sipllm_streaming::Model::Llmw(f) => Some(f.llmw().version()),
            _ => self.gguf().map(|g| g.version()),
        }
    }

    /// Size of the file (for a split set, of the set's virtual address space: every shard).
    #[getter]
    fn file_size(&self) -> u64 {
        self.inner.file_size()
    }

    /// Whether the file stores numbers big-endian (a big-endian GGUF; `.llmw` never does).
    #[getter]
    fn big_endian(&self) -> bool {
        self.inner.endian() == Endian::Big
    }

    /// Number of shards: 1 except for a split GGUF set.
    #[getter]
    fn shard_count(&self) -> usize {
        self.inner.split().map_or(1, |s| s.shard_count())
    }

    /// The warnings of the parse, as finding tuples.
    fn warnings(&self) -> Vec<FindingRow> {
        warnings_of(&self.inner)
    }

    /// Every metadata key in file order: `str`, or `bytes` when not UTF-8.
    fn keys<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyAny>> {
        self.inner.meta_keys().map(|k| exact::py_name(py, k.as_bytes())).collect()
    }

    /// The value under `key` as `(kind, payload)`: `("value", int | float | bool | str |
    /// bytes)`, `("array", dtype, bytes)`, `("strs", StrSeq)` or `("list", [...])`; `None` when
    /// absent.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(key) = exact::name_bytes(key) else { return Ok(None) };
        let Some(meta) = exact::meta_exact(&self.inner, &key) else { return Ok(None) };
        if let Some(value) = collapsed_scalar(py, &meta)? {
            return Ok(Some(value));
        }
        let value = match meta {
            Meta::Ints(list) => match list.as_gguf() {
                Some(a) => gguf_array(py, &a)?,
                None => {
                    let b = bytes_of(list.iter(), |v| (v as i64).to_le_bytes());
                    ("array", "<i8", PyBytes::new(py, &b)).into_pyobject(py)?.into_any()
                }
            },
            Meta::Floats(list) => match list.as_gguf() {
                Some(a) => gguf_array(py, &a)?,
                None => {
                    let b = bytes_of(list.iter(), f64::to_le_bytes);
                    ("array", "<f8", PyBytes::new(py, &b)).into_pyobject(py)?.into_any()
                }
            },
            Meta::Strs(_) => match StrSeq::new(self.inner.clone(), &key) {
                Some(seq) => ("strs", seq).into_pyobject(py)?.into_any(),
                None => return Ok(None),
            },
            Meta::Array(a) => gguf_array(py, &a)?,
            _ => return Ok(None),
        };
        Ok(Some(value))
    }

    /// The stored type of the value under `key`, as GGUF value type codes `(type, element type
    /// or None)`; `None` for `.llmw` files or absent keys.
    fn value_type(&self, key: &Bound<'_, PyAny>) -> Option<(u32, Option<u32>)> {
        let key = exact::name_bytes(key)?;
        let kv = self.gguf()?.metadata().filter(|e| e.key.as_bytes() == key).last()?.kv;
        Some((kv.value_type().code(), kv.array_head().map(|h| h.elem_type.code())))
    }

    /// The string array under `key` as a lazy sequence, or `None`.
    fn strings(&self, key: &Bound<'_, PyAny>) -> Option<StrSeq> {
        StrSeq::new(self.inner.clone(), &exact::name_bytes(key)?)
    }

    /// Every tensor: (name — `str`, or `bytes` when not UTF-8 —, type code, type name,
    /// row-major shape, nbytes or None, absolute offset).
    #[allow(clippy::type_complexity)]
    fn tensors<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(Bound<'py, PyAny>, u32, &'static str, Bound<'py, PyTuple>, Option<u64>, u64)>>
    {
        let names = &self.names().names;
        self.inner
            .tensors()
            .iter()
            .zip(names)
            .map(|(t, name)| {
                Ok((
                    exact::py_name(py, name),
                    t.ggml_type.code(),
                    t.ggml_type.name(),
                    PyTuple::new(py, t.shape.iter())?,
                    t.nbytes,
                    t.abs_offset,
                ))
            })
            .collect()
    }

    /// The stored bytes of tensor `name` (one read, the GIL released meanwhile).
    fn read<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let t = self.tensor(name)?;
        let len = t.byte_len().map_err(|e| stream_error(py, &e, &self.path))?;
        let model = &*self.inner;
        read_bytes(py, len, &self.path, |buf| {
            // From a URL: one request for exactly the tensor's bytes. Only a hint.
            let _ = model.prefetch(t);
            model.read_raw(t, buf).map(|_| ())
        })
    }

    /// The f32 values of elements `start..stop` (row-major, default: all) of tensor `name`
    /// into `out`, a 1-D numpy `uint8` view of a `float32` array of their size: dequantized
    /// as gguf-py does, bit for bit, in bounded chunks with the GIL released, on up to
    /// `threads` threads (0 = every core) for a whole tensor.
    #[pyo3(signature = (name, out, start = None, stop = None, threads = 1))]
    fn values(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
        start: Option<u64>,
        stop: Option<u64>,
        threads: usize,
    ) -> PyResult<()> {
        let t = self.tensor(name)?;
        let count = t.element_count().unwrap_or(u64::MAX);
        let range = start.unwrap_or(0)..stop.unwrap_or(count);
        tensor_values(py, self.inner.as_weight_source(), t, range, out, threads).map_err(
            |e| match e {
                ValuesError::Stream(e) => stream_error(py, &e, &self.path),
                ValuesError::Python(e) => e,
            },
        )
    }

    /// `length` bytes at absolute offset `offset` (for a split set, in its virtual address
    /// space, where the tensors' offsets are).
    fn read_at<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        length: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let model = &*self.inner;
        read_bytes(py, length, &self.path, |buf| {
            let _ = model.prefetch_range(offset, buf.len() as u64);
            model.read_raw_at(offset, buf)
        })
    }
}
