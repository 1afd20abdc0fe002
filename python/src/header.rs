//! The parsed header, as offsets and types, for the gguf-py–compatible `GGUFReader`.
//!
//! gguf-py's reader walks the header in Python, making one or two numpy views per array
//! element before it returns (20 s for a Llama-3 vocabulary). Here the header is parsed once by
//! sipllm-gguf and Python receives, per key/value pair and tensor info, where its pieces are;
//! it makes the views gguf-py would make only when a program touches them. The offsets are
//! absolute, into the same file Python maps.

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sipllm_gguf::{Endian, Error, Gguf, ParseOptions, Profile, ValueType, WarningKind};
use sipllm_streaming::HeaderBytes;
use sipllm_streaming::{Backend, FileBacking, OpenOptions};

use crate::errors::{Diag, gguf_error, stream_error};

/// What the strict profile rejects but gguf-py 0.19 reads, so `GGUFReader` reads it too (each
/// by its stable code). A ggml type this parser does not know is one: a tensor of a newer type
/// must not hide the metadata (the tensor's data is then refused, alone).
const GGUF_PY_READS: [&str; 9] = [
    "gguf::metadata::empty_key",
    "gguf::metadata::invalid_utf8_value",
    "gguf::metadata::invalid_bool",
    "gguf::tensor::name_too_long",
    "gguf::tensor::zero_dim",
    "gguf::tensor::unknown_type",
    "gguf::tensor::removed_type",
    "gguf::layout::misaligned",
    "gguf::layout::overlap",
];

/// A GGUF header parsed by sipllm-gguf: the bytes up to the end of the tensor directory and
/// the spans into them.
#[pyclass(frozen, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct Header {
    gguf: Gguf<HeaderBytes>,
    file_size: u64,
    /// The file it was read from, open, holding the shared lock `FileBacking::open` takes
    /// (the one `sipllm_gguf.open` holds): while the `GGUFReader` keeps this header, an
    /// in-place header rewrite (`sipllm edit --in-place`) is refused instead of rewriting
    /// the header under the reader's map. The reader maps this same open file
    /// ([`Header::fileno`]), not whatever the path names by then.
    file: FileBacking,
}

/// Reads and parses the header of the GGUF file at `path`.
///
/// `compat` selects gguf-py's acceptance: the strict profile, but reading what gguf-py 0.19
/// reads ([`GGUF_PY_READS`]), from one lenient parse; otherwise `profile` ("strict",
/// "llama-cpp", "lenient") applies.
#[pyfunction]
#[pyo3(signature = (path, compat = true, profile = "strict"))]
pub(crate) fn read_header(
    py: Python<'_>,
    path: &str,
    compat: bool,
    profile: &str,
) -> PyResult<Header> {
    // gguf-py's acceptance is the strict profile minus GGUF_PY_READS: one lenient parse gives
    // it. The lenient profile is the strict one with every tolerable error recorded as a
    // `Tolerated` warning instead of stopping the parse (crates/gguf/src/rules.rs,
    // `Findings::tolerate`), so a file is strict-clean when the parse tolerated nothing, and
    // compatible when everything it tolerated is in GGUF_PY_READS. The first tolerated error
    // outside it is raised as an error (the one the strict parse stops at when nothing gguf-py
    // reads comes before it). A fatal error is raised as every profile raises it.
    let profile = if compat { Profile::Lenient } else { crate::model::parse_profile(profile)? };
    let options = OpenOptions::default().with_parse(ParseOptions::new(profile));
    // The file is opened once and parsed once: the parse and the lock use this one open file.
    let backing = py
        .detach(|| FileBacking::open(path, Backend::Pread))
        .map_err(|e| stream_error(py, &e, path))?;
    let (gguf, _) = py
        .detach(|| sipllm_streaming::read_header(&backing, Some(Path::new(path)), &options))
        .map_err(|e| stream_error(py, &e, path))?;
    if compat {
        let refused = gguf.warnings().iter().find_map(|w| match w.kind() {
            WarningKind::Tolerated(kind) if !GGUF_PY_READS.contains(&w.code()) => {
                Some(Error::new(kind.clone(), w.offset(), w.len(), w.path().clone()))
            }
            _ => None,
        });
        if let Some(e) = refused {
            return Err(gguf_error(py, &Diag::from_error(&e), Some(path)));
        }
    }
    Ok(Header { gguf, file_size: backing.len(), file: backing })
}

/// One key/value pair, by the spans the parser computed: every offset is absolute, into the
/// file the reader maps, so Python makes gguf-py's views without recomputing a layout.
#[pyclass(frozen, get_all, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct KvRecord {
    /// Where the pair starts: the key's length field (gguf-py's `ReaderField.offset`).
    offset: u64,
    /// The key (invalid UTF-8 replaced).
    key: String,
    /// Where the key's bytes start.
    key_offset: u64,
    /// The key's length in bytes.
    key_len: u64,
    /// Where the value type word is.
    type_offset: u64,
    /// The value type (`GGUFValueType` code).
    value_type: u32,
    /// Where the value starts: a scalar, a string's length field, an array's element type.
    value_offset: u64,
    /// The payload: a scalar's bytes, a string's bytes, an array's elements.
    payload_offset: u64,
    /// The payload's length in bytes.
    payload_len: u64,
    /// For arrays: where the element count is, the element type and the count.
    count_offset: Option<u64>,
    elem_type: Option<u32>,
    count: Option<u64>,
}

/// One tensor info, by the spans the parser computed (absolute offsets), with the size the
/// parser derived; the last three are `None` for a ggml type this parser does not know.
#[pyclass(frozen, get_all, module = "sipllm_gguf._native")]
#[derive(Debug)]
pub(crate) struct TensorRecord {
    /// Where the info starts: the name's length field.
    offset: u64,
    /// The name (invalid UTF-8 replaced).
    name: String,
    /// Where the name's bytes start.
    name_offset: u64,
    /// The name's length in bytes.
    name_len: u64,
    /// Where `n_dims` is.
    n_dims_offset: u64,
    n_dims: u32,
    /// Where the dimensions (u64 each) start.
    dims_offset: u64,
    /// Where the ggml type word is.
    type_offset: u64,
    /// The ggml type code.
    ggml_type: u32,
    /// Where the relative data offset is.
    offset_offset: u64,
    /// The absolute offset of the tensor's data.
    data_offset: u64,
    n_elements: u64,
    n_bytes: Option<u64>,
    block_size: Option<u64>,
    type_size: Option<u64>,
}

/// `base + add`, for offsets inside a parsed header (they fit; checked all the same).
fn at(base: u64, add: u64) -> PyResult<u64> {
    base.checked_add(add).ok_or_else(|| {
        pyo3::exceptions::PyOverflowError::new_err("an offset past the end of the address space")
    })
}

/// One numpy view of a `parts` entry: (absolute offset, value type code, element count).
type PartRow = (u64, u32, u64);

#[pymethods]
impl Header {
    /// GGUF version (2 or 3).
    #[getter]
    fn version(&self) -> u32 {
        self.gguf.version()
    }

    /// True when the file is big-endian (gguf-py's byte order "S" on a little-endian host).
    #[getter]
    fn big_endian(&self) -> bool {
        self.gguf.endian() == Endian::Big
    }

    /// The alignment in force.
    #[getter]
    fn alignment(&self) -> u32 {
        self.gguf.alignment()
    }

    /// Absolute offset of the data section.
    #[getter]
    fn data_offset(&self) -> u64 {
        self.gguf.data_offset()
    }

    /// Offset just past the last tensor info.
    #[getter]
    fn directory_end(&self) -> u64 {
        self.gguf.directory().directory_end()
    }

    /// The descriptor of the open (and locked) file the header was parsed from, for the
    /// reader's `numpy.memmap`: the views are then of the bytes this header describes.
    #[cfg(unix)]
    fn fileno(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.file().as_raw_fd()
    }

    /// Size of the file when it was read.
    #[getter]
    fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The warnings as finding tuples (severity, code, offset, length, path, message, help).
    #[allow(clippy::type_complexity)]
    fn warnings(
        &self,
    ) -> Vec<(&'static str, &'static str, Option<u64>, u64, String, String, String)> {
        self.gguf.warnings().iter().map(|w| Diag::from_warning(w).into_tuple()).collect()
    }

    /// Every key/value pair in file order.
    fn kvs(&self) -> PyResult<Vec<KvRecord>> {
        self.gguf
            .directory()
            .kvs()
            .iter()
            .map(|kv| {
                let head = kv.array_head();
                let key = kv.key_span();
                let value = kv.value_span();
                // The key's bytes end at the value type word (u32); the value follows it.
                let value_offset = at(key.end(), 4)?;
                Ok(KvRecord {
                    offset: kv.span().offset,
                    key: self.gguf.key(kv).to_string_lossy().into_owned(),
                    key_offset: key.offset,
                    key_len: key.len,
                    type_offset: key.end(),
                    value_type: kv.value_type().code(),
                    value_offset,
                    payload_offset: value.offset,
                    payload_len: value.len,
                    // An array's head: the element type (u32), then the count.
                    count_offset: head.map(|_| at(value_offset, 4)).transpose()?,
                    elem_type: head.map(|h| h.elem_type.code()),
                    count: head.map(|h| h.len),
                })
            })
            .collect()
    }

    /// Every tensor info in directory order.
    fn tensors(&self) -> PyResult<Vec<TensorRecord>> {
        self.gguf
            .tensors()
            .map(|t| {
                let ty = t.info.ggml_type();
                let name = t.info.name_span();
                let n_dims = t.info.dims().len() as u64;
                // After the name: n_dims (u32), the dims (u64 each), the type (u32), the
                // relative offset (u64).
                let dims_offset = at(name.end(), 4)?;
                let type_offset = at(dims_offset, n_dims.saturating_mul(8))?;
                Ok(TensorRecord {
                    offset: t.info.span().offset,
                    name: t.name.to_string_lossy().into_owned(),
                    name_offset: name.offset,
                    name_len: name.len,
                    n_dims_offset: name.end(),
                    n_dims: n_dims as u32,
                    dims_offset,
                    type_offset,
                    ggml_type: ty.code(),
                    offset_offset: at(type_offset, 4)?,
                    data_offset: t.info.abs_offset(),
                    n_elements: t.info.element_count(),
                    n_bytes: t.info.nbytes(),
                    block_size: ty.block_size(),
                    type_size: ty.type_size(),
                })
            })
            .collect()
    }

    /// For the string array at key/value index `index`: the absolute offset of each element's
    /// length field, then the end of the array (n + 1 native-endian u64s).
    fn string_starts<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyBytes>> {
        let (base, strings, end) = self.string_array(index)?;
        let n = strings.len();
        let bytes = n.checked_add(1).and_then(|k| k.checked_mul(8)).ok_or_else(too_large)?;
        PyBytes::new_with(py, bytes, |buf| {
            let mut out = buf.chunks_exact_mut(8);
            for s in strings {
                // Where the string's bytes start, from the pointer the parser's view handed
                // out (an address difference, no `unsafe`); its length field is the 8 bytes
                // before (strings in v2 and v3 have 64-bit lengths).
                let at = (s.as_bytes().as_ptr() as usize).wrapping_sub(base) as u64;
                if let Some(slot) = out.next() {
                    slot.copy_from_slice(&at.wrapping_sub(8).to_ne_bytes());
                }
            }
            if let Some(slot) = out.next() {
                slot.copy_from_slice(&end.to_ne_bytes());
            }
            Ok(())
        })
    }

    /// gguf-py's `parts`, `data` and `types` of the value at key/value index `index` (for the
    /// rare arrays of arrays: gguf-py flattens them, and this walks them the way it does).
    fn layout(&self, index: usize) -> PyResult<(Vec<PartRow>, Vec<u64>, Vec<u32>)> {
        let kv = self.gguf.directory().kvs().get(index).ok_or_else(bad_index)?;
        let enc = Walker { bytes: self.gguf.bytes(), big: self.big_endian() };
        let mut out = (Vec::new(), Vec::new(), Vec::new());
        // The value starts after the key and the 4-byte type word (the value span of an array
        // starts after its element type and count).
        let start = kv.key_span().end().checked_add(4).ok_or_else(bad_index)?;
        enc.walk(start, kv.value_type(), 0, &mut out)
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("value outside the header"))?;
        Ok(out)
    }
}

impl Header {
    /// The string array at `index`: the address of the header bytes, the strings, and the
    /// absolute end of the array.
    fn string_array(
        &self,
        index: usize,
    ) -> PyResult<(usize, sipllm_gguf::value::Strings<'_>, u64)> {
        let kv = self.gguf.directory().kvs().get(index).ok_or_else(bad_index)?;
        let strings = self
            .gguf
            .value(kv)
            .as_array()
            .and_then(|a| a.strings())
            .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("not an array of strings"))?;
        Ok((self.gguf.bytes().as_ptr() as usize, strings, kv.value_span().end()))
    }
}

fn bad_index() -> PyErr {
    pyo3::exceptions::PyIndexError::new_err("no key/value pair at this index")
}

fn too_large() -> PyErr {
    pyo3::exceptions::PyOverflowError::new_err("array too large for this machine")
}

/// Walks a value as gguf-py's `_get_field_parts` does.
struct Walker<'a> {
    bytes: &'a [u8],
    big: bool,
}

impl Walker<'_> {
    fn u32_at(&self, at: u64) -> Option<u32> {
        let s = usize::try_from(at).ok()?;
        let b: [u8; 4] = self.bytes.get(s..s.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64_at(&self, at: u64) -> Option<u64> {
        let s = usize::try_from(at).ok()?;
        let b: [u8; 8] = self.bytes.get(s..s.checked_add(8)?)?.try_into().ok()?;
        Some(if self.big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    /// Appends the parts of the value of type `ty` at `at` to `out`, its data indices shifted
    /// by `out.0.len()` at entry, and (for the first element of an array, `first`) its types.
    /// Returns the value's size in bytes. Depth is bounded by the parser's `max_depth`.
    fn walk(
        &self,
        at: u64,
        ty: ValueType,
        depth: u32,
        out: &mut (Vec<PartRow>, Vec<u64>, Vec<u32>),
    ) -> Option<u64> {
        if depth > 64 {
            return None;
        }
        let base = out.0.len() as u64;
        match ty {
            ValueType::String => {
                let len = self.u64_at(at)?;
                out.0.push((at, ValueType::Uint64.code(), 1));
                out.0.push((at.checked_add(8)?, ValueType::Uint8.code(), len));
                out.1.push(base + 1);
                out.2.push(ty.code());
                8u64.checked_add(len)
            }
            ValueType::Array => {
                let code = self.u32_at(at)?;
                let elem = ValueType::from_code(code)?;
                let count = self.u64_at(at.checked_add(4)?)?;
                out.0.push((at, ValueType::Uint32.code(), 1));
                out.0.push((at.checked_add(4)?, ValueType::Uint64.code(), 1));
                out.2.push(ty.code());
                let mut pos = at.checked_add(12)?;
                for i in 0..count {
                    let types_before = out.2.len();
                    let size = self.walk(pos, elem, depth + 1, out)?;
                    if i > 0 {
                        // gguf-py keeps the types of the first element only.
                        out.2.truncate(types_before);
                    }
                    pos = pos.checked_add(size)?;
                }
                Some(pos - at)
            }
            fixed => {
                let size = fixed.fixed_size()? as u64;
                out.0.push((at, fixed.code(), 1));
                out.1.push(base);
                out.2.push(fixed.code());
                Some(size)
            }
        }
    }
}
