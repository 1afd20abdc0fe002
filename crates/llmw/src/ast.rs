//! The typed AST: spans into the header bytes, plus what was derived from them.
//!
//! [`Directory`] is everything the decoder learned — the fixed header, one [`MetaInfo`] per
//! metadata entry, one [`TensorInfo`] per tensor, and the layout — as spans, without the
//! bytes. [`Llmw`] pairs a directory with the bytes it was parsed from and offers the
//! accessors: lookups by key and tensor name are O(1), values decode on demand, and nothing is
//! copied.

use std::fmt;

use nom::Parser;
use smallvec::SmallVec;

use sipllm_format::NameIndex;
use sipllm_gguf::GgmlType;

use crate::error::{Error, ErrorKind, Path};
use crate::grammar;
use crate::value::{MetaType, MetaValue, Numbers, StrArray};
use crate::{ALIGNMENT, Span};

/// The fixed 16-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Format version: 1 (scalar metadata) or 2 (adds array tags).
    pub version: u32,
    /// Declared number of tensors.
    pub tensor_count: u32,
    /// Declared number of metadata entries.
    pub meta_count: u32,
}

impl Header {
    /// Size in bytes of the fixed header.
    pub const SIZE: u64 = 16;
}

/// One metadata entry, as spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaInfo {
    pub(crate) span: Span,
    pub(crate) key: Span,
    pub(crate) meta_type: MetaType,
    pub(crate) value: Span,
    pub(crate) count: u32,
}

impl MetaInfo {
    /// The whole entry, from the key's length field to the end of the value.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The key's bytes (after its length field).
    pub fn key_span(&self) -> Span {
        self.key
    }

    /// The value's type.
    pub fn meta_type(&self) -> MetaType {
        self.meta_type
    }

    /// The value's payload: a scalar's 8 bytes, a string's bytes (after its length field), or
    /// an array's element bytes (after its count).
    pub fn value_span(&self) -> Span {
        self.value
    }

    /// The element count of an array (1 for scalars and strings).
    pub fn count(&self) -> u32 {
        self.count
    }
}

/// One `.llmw` tensor, as described by the directory (the `.llmw` parser's record; the
/// format-neutral one is `sipllm_streaming::TensorInfo`) (validated: known dtype, 1–4 non-zero dims,
/// byte size equal to dtype × dims, 64-aligned absolute offset, in order, no overlap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub(crate) span: Span,
    pub(crate) name: Span,
    pub(crate) dtype: GgmlType,
    pub(crate) dims: SmallVec<[u64; 4]>,
    pub(crate) offset: u64,
    pub(crate) nbytes: u64,
}

impl TensorInfo {
    /// The whole tensor info in the directory.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The name's bytes (after its length field).
    pub fn name_span(&self) -> Span {
        self.name
    }

    /// The element type (a ggml type, never removed or unknown).
    pub fn dtype(&self) -> GgmlType {
        self.dtype
    }

    /// Dimensions as stored: row-major, outermost first (the last is the row length).
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Dimensions in GGUF/ggml order (`ne[0]` = row length first): `dims` reversed.
    pub fn gguf_dims(&self) -> SmallVec<[u64; 4]> {
        self.dims.iter().rev().copied().collect()
    }

    /// Absolute offset of the data from the start of the file (a multiple of 64).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Byte size of the data (equal to `tensor_nbytes(dtype, gguf_dims)`; never 0).
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// The data's absolute byte range.
    pub fn data_span(&self) -> Span {
        Span::new(self.offset, self.nbytes)
    }

    /// Number of elements (product of the dimensions; validated not to overflow).
    pub fn element_count(&self) -> u64 {
        sipllm_gguf::ggml::tensor_element_count(&self.dims).unwrap_or(u64::MAX)
    }

    /// Absolute offset of the 8-byte offset field in the directory (for error reports).
    pub(crate) fn offset_field(&self) -> u64 {
        self.span.end().saturating_sub(16)
    }
}

/// Everything the decoder learned about a file's header, as spans (no bytes).
#[derive(Clone)]
pub struct Directory {
    pub(crate) header: Header,
    pub(crate) meta: Vec<MetaInfo>,
    pub(crate) tensors: Vec<TensorInfo>,
    pub(crate) keys: NameIndex,
    pub(crate) names: NameIndex,
    pub(crate) directory_end: u64,
    pub(crate) data_start: u64,
}

impl PartialEq for Directory {
    fn eq(&self, other: &Directory) -> bool {
        // The name indexes are derived from `meta` and `tensors` (and hash with random keys),
        // so they are not compared.
        self.header == other.header
            && self.meta == other.meta
            && self.tensors == other.tensors
            && self.directory_end == other.directory_end
            && self.data_start == other.data_start
    }
}

impl Eq for Directory {}

impl fmt::Debug for Directory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Directory")
            .field("header", &self.header)
            .field("meta", &self.meta)
            .field("tensors", &self.tensors)
            .field("directory_end", &self.directory_end)
            .field("data_start", &self.data_start)
            .finish()
    }
}

impl Directory {
    /// The fixed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata entries in file order.
    pub fn meta(&self) -> &[MetaInfo] {
        &self.meta
    }

    /// The tensor infos in directory order (which is also data order).
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// Offset just past the last tensor info: the header bytes the accessors need.
    pub fn directory_end(&self) -> u64 {
        self.directory_end
    }

    /// Absolute offset of the data section: `directory_end` rounded up to 64. Defined for
    /// files without tensors too (where it may lie past the end of the file).
    pub fn data_start(&self) -> u64 {
        self.data_start
    }

    /// The alignment of tensor data (always 64 in `.llmw`).
    pub fn alignment(&self) -> u64 {
        ALIGNMENT
    }
}

/// One metadata entry, decoded on demand.
#[derive(Debug, Clone, Copy)]
pub struct MetaEntry<'a> {
    /// Index in file order.
    pub index: usize,
    /// The key.
    pub key: &'a str,
    /// The value.
    pub value: MetaValue<'a>,
    /// The spans of this entry.
    pub info: &'a MetaInfo,
}

/// A tensor info together with its name.
#[derive(Debug, Clone, Copy)]
pub struct TensorRef<'a> {
    /// Index in directory order.
    pub index: usize,
    /// The name.
    pub name: &'a str,
    /// Everything else.
    pub info: &'a TensorInfo,
}

/// A parsed `.llmw` file: the bytes (at least the header) and the [`Directory`] of spans into
/// them.
///
/// `B` is anything that derefs to the bytes: `&[u8]` for a slice or memory map, `Vec<u8>` or
/// `Box<[u8]>` for a header read from a file.
#[derive(Clone)]
pub struct Llmw<B = Vec<u8>> {
    bytes: B,
    dir: Directory,
}

impl<B: AsRef<[u8]>> fmt::Debug for Llmw<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Llmw")
            .field("bytes", &self.bytes.as_ref().len())
            .field("dir", &self.dir)
            .finish()
    }
}

impl<B: AsRef<[u8]>> PartialEq for Llmw<B> {
    fn eq(&self, other: &Llmw<B>) -> bool {
        self.dir == other.dir && self.header_bytes() == other.header_bytes()
    }
}

impl<B: AsRef<[u8]>> Llmw<B> {
    /// Pairs a directory with the bytes it was parsed from; fails with
    /// [`ErrorKind::Misuse`] if `bytes` is shorter than [`Directory::directory_end`].
    ///
    /// The bytes must be the ones the directory was decoded from; other bytes of sufficient
    /// length give wrong values (strings that are not UTF-8 read as absent) but never a panic.
    pub fn from_parts(bytes: B, dir: Directory) -> Result<Llmw<B>, Error> {
        let len = bytes.as_ref().len() as u64;
        if len < dir.directory_end {
            return Err(Error::new(
                ErrorKind::Misuse { reason: "bytes shorter than the directory" },
                len,
                0,
                Path::root(),
            ));
        }
        Ok(Llmw { bytes, dir })
    }

    /// Splits into bytes and directory.
    pub fn into_parts(self) -> (B, Directory) {
        (self.bytes, self.dir)
    }

    /// All the bytes given (at least the header).
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The header bytes: everything up to the end of the tensor directory.
    pub fn header_bytes(&self) -> &[u8] {
        let end = usize::try_from(self.dir.directory_end).unwrap_or(usize::MAX);
        self.bytes().get(..end).unwrap_or_default()
    }

    fn span_bytes(&self, span: Span) -> &[u8] {
        // The decoder only records spans inside the bytes it saw, and `from_parts` checked
        // the length, so this always succeeds; the fallback keeps misuse from panicking.
        span.slice(self.bytes()).unwrap_or_default()
    }

    fn span_str(&self, span: Span) -> &str {
        simdutf8::basic::from_utf8(self.span_bytes(span)).unwrap_or_default()
    }

    /// The directory (spans and layout).
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// The fixed header.
    pub fn header(&self) -> &Header {
        &self.dir.header
    }

    /// Format version (1 or 2).
    pub fn version(&self) -> u32 {
        self.dir.header.version
    }

    /// Absolute offset of the data section.
    pub fn data_start(&self) -> u64 {
        self.dir.data_start
    }

    /// Number of metadata entries.
    pub fn meta_len(&self) -> usize {
        self.dir.meta.len()
    }

    /// The key of an entry.
    pub fn key(&self, info: &MetaInfo) -> &str {
        self.span_str(info.key)
    }

    /// The value of an entry.
    pub fn value(&self, info: &MetaInfo) -> MetaValue<'_> {
        let b = self.span_bytes(info.value);
        match info.meta_type {
            MetaType::I64 => MetaValue::I64(grammar::i64_().parse(b).map_or(0, |(_, v)| v)),
            MetaType::F64 => MetaValue::F64(grammar::f64_().parse(b).map_or(0.0, |(_, v)| v)),
            MetaType::Str => MetaValue::Str(self.span_str(info.value)),
            MetaType::I64Array => MetaValue::I64Array(Numbers::new(b)),
            MetaType::F64Array => MetaValue::F64Array(Numbers::new(b)),
            MetaType::StrArray => MetaValue::StrArray(StrArray::new(b, info.count)),
        }
    }

    /// Every entry in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = MetaEntry<'_>> + '_ {
        self.dir.meta.iter().enumerate().map(|(index, info)| MetaEntry {
            index,
            key: self.key(info),
            value: self.value(info),
            info,
        })
    }

    /// The entry with this key.
    pub fn get_entry(&self, key: &str) -> Option<MetaEntry<'_>> {
        let idx = self.dir.keys.find(key.as_bytes(), |i| {
            self.dir.meta.get(i as usize).map_or(&[][..], |m| self.span_bytes(m.key))
        })?;
        let index = idx as usize;
        let info = self.dir.meta.get(index)?;
        Some(MetaEntry { index, key: self.key(info), value: self.value(info), info })
    }

    /// The value under this key.
    pub fn get(&self, key: &str) -> Option<MetaValue<'_>> {
        self.get_entry(key).map(|e| e.value)
    }

    /// An `i64` under this key.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key)?.as_i64()
    }

    /// An `f64` under this key.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    /// A string under this key.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// An `i64` array under this key.
    pub fn get_i64_array(&self, key: &str) -> Option<Numbers<'_, i64>> {
        self.get(key)?.as_i64_array()
    }

    /// An `f64` array under this key.
    pub fn get_f64_array(&self, key: &str) -> Option<Numbers<'_, f64>> {
        self.get(key)?.as_f64_array()
    }

    /// A string array under this key.
    pub fn get_str_array(&self, key: &str) -> Option<StrArray<'_>> {
        self.get(key)?.as_str_array()
    }

    /// The tensor infos in directory order.
    pub fn tensor_infos(&self) -> &[TensorInfo] {
        &self.dir.tensors
    }

    /// The name of a tensor.
    pub fn tensor_name(&self, info: &TensorInfo) -> &str {
        self.span_str(info.name)
    }

    /// Every tensor with its name, in directory (and data) order.
    pub fn tensors(&self) -> impl ExactSizeIterator<Item = TensorRef<'_>> + '_ {
        self.dir.tensors.iter().enumerate().map(|(index, info)| TensorRef {
            index,
            name: self.tensor_name(info),
            info,
        })
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: &str) -> Option<TensorRef<'_>> {
        let idx = self.dir.names.find(name.as_bytes(), |i| {
            self.dir.tensors.get(i as usize).map_or(&[][..], |t| self.span_bytes(t.name))
        })?;
        let index = idx as usize;
        let info = self.dir.tensors.get(index)?;
        Some(TensorRef { index, name: self.tensor_name(info), info })
    }

    /// A tensor's data, when the bytes given include it (a whole file in memory or mapped);
    /// `None` when only the header was given.
    pub fn tensor_data(&self, info: &TensorInfo) -> Option<&[u8]> {
        info.data_span().slice(self.bytes())
    }
}
