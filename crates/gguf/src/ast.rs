//! The typed AST: spans into the header bytes, plus what was derived from them.
//!
//! [`Directory`] is everything the decoder learned — header fields, one [`MetaKv`] per key,
//! one [`TensorInfo`] per tensor, the layout and the warnings — as spans, without the bytes.
//! [`Gguf`] pairs a directory with the bytes it was parsed from and offers the accessors:
//! lookups by key and tensor name are O(1), values decode on demand, and nothing is copied.

use std::fmt;

use smallvec::SmallVec;

use crate::error::Warning;
use crate::ggml::GgmlType;
use crate::grammar::Encoding;
use crate::header::{Endian, Header};
use crate::value::{ArrayView, MetaStr, MetaValue, ValueType};
use sipllm_format::NameIndex;

pub use sipllm_format::Span;

/// The element type and count of an array value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayHead {
    /// Element type.
    pub elem_type: ValueType,
    /// Element count.
    pub len: u64,
}

/// One metadata key/value pair, as spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaKv {
    pub(crate) span: Span,
    pub(crate) key: Span,
    pub(crate) value_type: ValueType,
    pub(crate) value: Span,
    pub(crate) array: Option<ArrayHead>,
}

impl MetaKv {
    /// The whole pair, from the key's length field to the end of the value.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The key's bytes (after its length field).
    pub fn key_span(&self) -> Span {
        self.key
    }

    /// The value type.
    pub fn value_type(&self) -> ValueType {
        self.value_type
    }

    /// The value's payload: a scalar's bytes, a string's bytes (after its length field), or an
    /// array's element bytes (after its element type and count).
    pub fn value_span(&self) -> Span {
        self.value
    }

    /// For arrays, the element type and count.
    pub fn array_head(&self) -> Option<ArrayHead> {
        self.array
    }
}

/// One tensor info, as parsed, with its derived byte size and absolute offset: the parser's
/// record, spans into the header bytes (dims in GGUF order, [`shape`](Self::shape) row-major).
///
/// The format-neutral record a weight source hands out (owned name, row-major shape, GGUF and
/// `.llmw` alike) is `sipllm_streaming::TensorInfo`, built from this one at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub(crate) span: Span,
    pub(crate) name: Span,
    pub(crate) dims: SmallVec<[u64; 4]>,
    pub(crate) ggml_type: GgmlType,
    pub(crate) offset: u64,
    pub(crate) nbytes: Option<u64>,
    pub(crate) abs_offset: u64,
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

    /// Dimensions in GGUF order: `ne[0]` first, the fastest-varying (row length).
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Dimensions in row-major order (outermost first): the reverse of [`dims`](Self::dims).
    pub fn shape(&self) -> SmallVec<[u64; 4]> {
        self.dims.iter().rev().copied().collect()
    }

    /// The tensor type.
    pub fn ggml_type(&self) -> GgmlType {
        self.ggml_type
    }

    /// Offset of the data relative to the start of the data section, as stored.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Absolute offset of the data in the file (`data_offset + offset`).
    pub fn abs_offset(&self) -> u64 {
        self.abs_offset
    }

    /// Stored byte size; `None` only for types with no defined size (lenient parsing).
    pub fn nbytes(&self) -> Option<u64> {
        self.nbytes
    }

    /// Number of elements (product of the dimensions; validated not to overflow).
    pub fn element_count(&self) -> u64 {
        crate::ggml::tensor_element_count(&self.dims).unwrap_or(u64::MAX)
    }
}

/// Everything the decoder learned about a file's header, as spans (no bytes).
#[derive(Clone)]
pub struct Directory {
    pub(crate) header: Header,
    pub(crate) enc: Encoding,
    pub(crate) kvs: Vec<MetaKv>,
    pub(crate) tensors: Vec<TensorInfo>,
    pub(crate) keys: NameIndex,
    pub(crate) names: NameIndex,
    pub(crate) alignment: u32,
    pub(crate) directory_end: u64,
    pub(crate) data_offset: u64,
    pub(crate) warnings: Vec<Warning>,
}

impl PartialEq for Directory {
    fn eq(&self, other: &Directory) -> bool {
        // The name indexes are derived from `kvs` and `tensors` (and hash with random keys),
        // so they are not compared.
        self.header == other.header
            && self.enc == other.enc
            && self.kvs == other.kvs
            && self.tensors == other.tensors
            && self.alignment == other.alignment
            && self.directory_end == other.directory_end
            && self.data_offset == other.data_offset
            && self.warnings == other.warnings
    }
}

impl Eq for Directory {}

impl fmt::Debug for Directory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Directory")
            .field("header", &self.header)
            .field("kvs", &self.kvs)
            .field("tensors", &self.tensors)
            .field("alignment", &self.alignment)
            .field("directory_end", &self.directory_end)
            .field("data_offset", &self.data_offset)
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl Directory {
    /// The fixed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata pairs in file order.
    pub fn kvs(&self) -> &[MetaKv] {
        &self.kvs
    }

    /// The tensor infos in directory order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The alignment in force: `general.alignment`, else 32.
    pub fn alignment(&self) -> u32 {
        self.alignment
    }

    /// Offset just past the last tensor info (the end of the header proper).
    pub fn directory_end(&self) -> u64 {
        self.directory_end
    }

    /// Absolute offset of the data section: `directory_end` rounded up to the alignment, also
    /// for files without tensors (where it may lie past the end of the file).
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Non-fatal findings, in file order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// How many header bytes the accessors need (`bytes.len()` must be at least this).
    pub fn required_len(&self) -> u64 {
        self.directory_end
    }
}

/// A parsed GGUF: the bytes (at least the header) and the [`Directory`] of spans into them.
///
/// `B` is anything that derefs to the bytes: `&[u8]` for a slice or memory map, `Vec<u8>` or
/// `Box<[u8]>` for a header read from a file.
#[derive(Clone)]
pub struct Gguf<B = Vec<u8>> {
    bytes: B,
    dir: Directory,
}

impl<B: AsRef<[u8]>> fmt::Debug for Gguf<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gguf")
            .field("bytes", &self.bytes.as_ref().len())
            .field("dir", &self.dir)
            .finish()
    }
}

impl<B: AsRef<[u8]>> PartialEq for Gguf<B> {
    fn eq(&self, other: &Gguf<B>) -> bool {
        self.dir == other.dir
            && self.bytes().get(..self.header_len()) == other.bytes().get(..other.header_len())
    }
}

/// One metadata pair, decoded on demand.
#[derive(Debug, Clone, Copy)]
pub struct MetaEntry<'a> {
    /// Index in file order.
    pub index: usize,
    /// The key.
    pub key: MetaStr<'a>,
    /// The value.
    pub value: MetaValue<'a>,
    /// The spans of this pair.
    pub kv: &'a MetaKv,
}

/// A tensor info together with its name.
#[derive(Debug, Clone, Copy)]
pub struct TensorRef<'a> {
    /// Index in directory order.
    pub index: usize,
    /// The name.
    pub name: MetaStr<'a>,
    /// Everything else.
    pub info: &'a TensorInfo,
}

impl<B: AsRef<[u8]>> Gguf<B> {
    /// Pairs a directory with the bytes it was parsed from; fails with
    /// [`ErrorKind::Misuse`](crate::ErrorKind::Misuse) if `bytes` is shorter than the
    /// directory requires.
    ///
    /// The bytes must be the ones the directory was decoded from; other bytes of sufficient
    /// length give wrong values but never a panic.
    pub fn from_parts(bytes: B, dir: Directory) -> Result<Gguf<B>, crate::Error> {
        let len = bytes.as_ref().len() as u64;
        if len < dir.required_len() {
            return Err(crate::Error::new(
                crate::ErrorKind::Misuse { reason: "bytes shorter than the directory" },
                len,
                0,
                crate::Path::root(),
            ));
        }
        Ok(Gguf { bytes, dir })
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
        self.bytes().get(..self.header_len()).unwrap_or_default()
    }

    fn header_len(&self) -> usize {
        usize::try_from(self.dir.directory_end).unwrap_or(usize::MAX)
    }

    fn span_bytes(&self, span: Span) -> &[u8] {
        // The decoder only records spans inside the bytes it saw, and `from_parts` checked
        // the length, so this always succeeds; the fallback keeps misuse from panicking.
        span.slice(self.bytes()).unwrap_or_default()
    }

    /// The directory (spans, layout, warnings).
    pub fn directory(&self) -> &Directory {
        &self.dir
    }

    /// The fixed header.
    pub fn header(&self) -> &Header {
        &self.dir.header
    }

    /// GGUF version.
    pub fn version(&self) -> u32 {
        self.dir.header.version
    }

    /// Byte order.
    pub fn endian(&self) -> Endian {
        self.dir.header.endian
    }

    /// The alignment in force.
    pub fn alignment(&self) -> u32 {
        self.dir.alignment
    }

    /// Absolute offset of the data section.
    pub fn data_offset(&self) -> u64 {
        self.dir.data_offset
    }

    /// Non-fatal findings.
    pub fn warnings(&self) -> &[Warning] {
        &self.dir.warnings
    }

    /// Number of metadata pairs.
    pub fn kv_len(&self) -> usize {
        self.dir.kvs.len()
    }

    /// The key of a pair.
    pub fn key(&self, kv: &MetaKv) -> MetaStr<'_> {
        MetaStr::from_bytes(self.span_bytes(kv.key))
    }

    /// The value of a pair.
    pub fn value(&self, kv: &MetaKv) -> MetaValue<'_> {
        let b = self.span_bytes(kv.value);
        match (kv.value_type, kv.array) {
            (ValueType::String, _) => MetaValue::String(MetaStr::from_bytes(b)),
            (ValueType::Array, Some(head)) => {
                MetaValue::Array(ArrayView::new(head.elem_type, head.len, b, self.dir.enc))
            }
            (ty, _) => MetaValue::decode_fixed(ty, b, self.dir.header.endian)
                // Unreachable for a decoder-made directory: fixed spans have the type's size.
                .unwrap_or(MetaValue::Uint8(0)),
        }
    }

    /// Every pair in file order.
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = MetaEntry<'_>> + '_ {
        self.dir.kvs.iter().enumerate().map(|(index, kv)| MetaEntry {
            index,
            key: self.key(kv),
            value: self.value(kv),
            kv,
        })
    }

    /// The pair with this key (the last one, if the lenient profile let duplicates through).
    pub fn get_entry(&self, key: &str) -> Option<MetaEntry<'_>> {
        let idx = self.dir.keys.find(key.as_bytes(), |i| {
            self.dir.kvs.get(i as usize).map_or(&[][..], |kv| self.span_bytes(kv.key))
        })?;
        let index = idx as usize;
        let kv = self.dir.kvs.get(index)?;
        Some(MetaEntry { index, key: self.key(kv), value: self.value(kv), kv })
    }

    /// The value under this key.
    pub fn get(&self, key: &str) -> Option<MetaValue<'_>> {
        self.get_entry(key).map(|e| e.value)
    }

    /// A string value (valid UTF-8) under this key.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| v.as_str())
    }

    /// Any integer value under this key that fits `u64`.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.as_u64())
    }

    /// An array value under this key.
    pub fn get_array(&self, key: &str) -> Option<ArrayView<'_>> {
        self.get(key).and_then(|v| v.as_array())
    }

    /// The tensor infos in directory order.
    pub fn tensor_infos(&self) -> &[TensorInfo] {
        &self.dir.tensors
    }

    /// The name of a tensor.
    pub fn tensor_name(&self, info: &TensorInfo) -> MetaStr<'_> {
        MetaStr::from_bytes(self.span_bytes(info.name))
    }

    /// Every tensor with its name, in directory order.
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
}
