//! Turning the libraries' typed errors into Python exceptions.
//!
//! A file the parser rejects raises `GGUFError`, a `ValueError` subclass (so code written for
//! gguf-py, which raises `ValueError`, keeps working) carrying the diagnostic: `code`
//! (`gguf::metadata::duplicate_key`), `offset` and `length` (absolute bytes), `path` (the
//! logical path, `metadata[14] "general.file_type"`), `filename`, `help`. A file that cannot be
//! read at all raises `OSError` (`FileNotFoundError`, `PermissionError`, …) as `open()` would;
//! a URL that cannot be read, the same classes carrying the remote error's `code`
//! (`remote::http::status`, …), `help`, `status` and `url`.
//!
//! Values of a type that has none (`quants::dequant::unsupported_type`) raise `UnsupportedTypeError`, a
//! subclass of both `GGUFError` and `NotImplementedError` (what gguf-py's `dequantize` raises
//! there), so code written for either keeps catching it.

use pyo3::exceptions::{
    PyConnectionError, PyFileNotFoundError, PyNotImplementedError, PyOSError, PyPermissionError,
    PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use sipllm_gguf::{Error, Warning, error::Kind};
use sipllm_quants::DequantError;
use sipllm_remote::{RemoteError, RemoteErrorKind};
use sipllm_streaming::{StreamError, StreamErrorKind};

pyo3::create_exception!(
    _native,
    GGUFError,
    PyValueError,
    "A GGUF file is invalid (or cannot be read as asked). A ValueError subclass carrying the \
     diagnostic: code, offset, length, path (logical), filename, help."
);

/// The code of the errors `UnsupportedTypeError` stands for.
const UNSUPPORTED_TYPE: &str = "quants::dequant::unsupported_type";

static UNSUPPORTED_TYPE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `UnsupportedTypeError(GGUFError, NotImplementedError)`, made once per interpreter (a class
/// with two bases, which `create_exception!` cannot make).
pub(crate) fn unsupported_type_error(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let ty = UNSUPPORTED_TYPE_ERROR.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases =
            PyTuple::new(py, [py.get_type::<GGUFError>(), py.get_type::<PyNotImplementedError>()])?;
        let ns = PyDict::new(py);
        ns.set_item("__module__", "sipllm_gguf._native")?;
        ns.set_item(
            "__doc__",
            "A tensor type that has no values here (the integer types, Q8_1, Q8_K, Q1_0, unknown \
             codes): a GGUFError and a NotImplementedError (what gguf-py's dequantize raises).",
        )?;
        let made = py.get_type::<PyType>().call1(("UnsupportedTypeError", bases, ns))?;
        Ok(made.cast_into::<PyType>()?.unbind())
    })?;
    Ok(ty.bind(py))
}

/// One diagnostic, flattened for Python.
#[derive(Debug, Clone)]
pub(crate) struct Diag {
    pub(crate) severity: &'static str,
    pub(crate) code: &'static str,
    pub(crate) offset: Option<u64>,
    pub(crate) length: u64,
    pub(crate) path: String,
    pub(crate) message: String,
    pub(crate) help: String,
}

impl Diag {
    fn finding<K: Kind>(severity: &'static str, f: &sipllm_gguf::error::Finding<K>) -> Diag {
        Diag {
            severity,
            code: f.code(),
            offset: Some(f.offset()),
            length: f.len(),
            path: f.path().to_string(),
            message: f.message(),
            help: f.help().to_owned(),
        }
    }

    pub(crate) fn from_warning(w: &Warning) -> Diag {
        Diag::finding("warning", w)
    }

    pub(crate) fn from_error(e: &Error) -> Diag {
        Diag::finding("error", e)
    }

    pub(crate) fn from_stream(e: &StreamError) -> Diag {
        if let Some(p) = e.parse_error() {
            return Diag::from_error(p);
        }
        if let Some(p) = e.llmw_error() {
            return Diag::finding("error", p);
        }
        // The message never repeats the file (the read side's errors keep it as context, like
        // the filename attribute here).
        let message = e.to_string();
        let (path, length) = match e.kind() {
            StreamErrorKind::UnknownMagic { .. } => ("header.magic", 4),
            StreamErrorKind::TooShort { .. } => ("header.magic", 0),
            _ => ("", 0),
        };
        Diag {
            severity: "error",
            code: e.code(),
            offset: e.offset(),
            length,
            path: path.to_owned(),
            message,
            help: e.help().to_owned(),
        }
    }

    /// A dequantization error; `path` names the input's part at fault (empty for all of it).
    pub(crate) fn from_dequant(e: &DequantError, path: &str) -> Diag {
        Diag {
            severity: "error",
            code: e.code(),
            offset: None,
            length: 0,
            path: path.to_owned(),
            message: e.to_string(),
            help: e.help().to_owned(),
        }
    }

    /// As a tuple for Python's `Finding`: (severity, code, offset, length, path, message, help).
    pub(crate) fn into_tuple(
        self,
    ) -> (&'static str, &'static str, Option<u64>, u64, String, String, String) {
        (self.severity, self.code, self.offset, self.length, self.path, self.message, self.help)
    }
}

/// A `GGUFError` for `diag` in `filename`.
pub(crate) fn gguf_error(py: Python<'_>, diag: &Diag, filename: Option<&str>) -> PyErr {
    let located = if diag.path.is_empty() {
        diag.message.clone()
    } else {
        format!("{}: {}", diag.path, diag.message)
    };
    let at = diag.offset.map(|o| format!(" at byte {o}")).unwrap_or_default();
    let text = match filename {
        Some(f) => format!("{f}: {located}{at} [{}]", diag.code),
        None => format!("{located}{at} [{}]", diag.code),
    };
    let err = if diag.code == UNSUPPORTED_TYPE {
        match unsupported_type_error(py) {
            Ok(ty) => PyErr::from_type(ty.clone(), text),
            Err(e) => return e,
        }
    } else {
        GGUFError::new_err(text)
    };
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("code", diag.code)?;
        value.setattr("offset", diag.offset)?;
        value.setattr("length", diag.length)?;
        value.setattr("path", diag.path.as_str())?;
        value.setattr("filename", filename)?;
        value.setattr("help", diag.help.as_str())?;
        value.setattr("detail", diag.message.as_str())?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The Python exception for a remote failure: an `OSError` — `FileNotFoundError` for a
/// 404, `PermissionError` for 401/403, `TimeoutError`, `ConnectionError`, else `OSError`
/// itself — carrying `code` (`remote::http::status`, …), `help`, `status` (the HTTP status or
/// `None`) and `url` (of the hop that failed, credentials redacted).
pub(crate) fn remote_error(py: Python<'_>, r: &RemoteError, filename: &str) -> PyErr {
    let text = match &r.url {
        Some(_) => format!("{r} [{}]", r.code()),
        None => format!("{filename}: {r} [{}]", r.code()),
    };
    let err = match (&r.kind, r.status) {
        (RemoteErrorKind::Status, Some(404)) => PyFileNotFoundError::new_err(text),
        (RemoteErrorKind::Status, Some(401 | 403)) => PyPermissionError::new_err(text),
        (RemoteErrorKind::Timeout { .. } | RemoteErrorKind::OpenTimeout { .. }, _) => {
            PyTimeoutError::new_err(text)
        }
        (RemoteErrorKind::Connect { .. }, _) => PyConnectionError::new_err(text),
        _ => PyOSError::new_err(text),
    };
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("code", r.code())?;
        value.setattr("help", r.help())?;
        value.setattr("status", r.status)?;
        // (Not `filename`: set, it would replace the message in `str(err)`.)
        value.setattr("url", r.url.as_deref().unwrap_or(filename))?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The Python exception for a streaming error: `OSError` for I/O (with the remote error's
/// code and help when a URL failed, [`remote_error`]), `GGUFError` otherwise.
pub(crate) fn stream_error(py: Python<'_>, e: &StreamError, filename: &str) -> PyErr {
    if let Some(r) = RemoteError::find_in(e) {
        return remote_error(py, r, filename);
    }
    match e.kind() {
        StreamErrorKind::Open { source, .. } | StreamErrorKind::Io { source, .. } => {
            match source.raw_os_error() {
                Some(errno) => PyOSError::new_err((errno, source.to_string(), filename.to_owned())),
                None => PyOSError::new_err(format!("{filename}: {source}")),
            }
        }
        _ => gguf_error(py, &Diag::from_stream(e), Some(filename)),
    }
}
