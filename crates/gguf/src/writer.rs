//! The GGUF writer: serializes a header — metadata and tensor directory — in canonical layout.
//!
//! The writer produces bytes; it does no I/O. A caller (the streaming crate's file builder,
//! the CLI) writes [`GgufWriter::header_bytes`] and then each tensor's data at the offsets
//! [`GgufWriter::layout`] gives, padding with zeros.
//!
//! **Canonical layout** (what gguf-py's and ggml's writers produce, and what
//! [`GgufWriter::from_gguf`] reproduces byte for byte for a canonical file):
//!
//! 1. the fixed header, the key/value pairs in order, the tensor infos in order;
//! 2. when there are tensors: zero padding up to a multiple of the alignment (the data section
//!    starts there), then each tensor's data in directory order, each followed by zero padding
//!    to the alignment (after the last one too). Tensor offsets are the running sum.
//! 3. without tensors, ggml's and current gguf-py's writers still pad the directory to the
//!    alignment (the data section is empty); older converter outputs (the vocab files of
//!    llama.cpp's repository) end right after the directory. The writer pads by default
//!    ([`GgufWriter::pad_tensorless`]); [`GgufWriter::from_gguf`] keeps what the source did.
//!
//! Values from a parsed file are re-encoded in the writer's byte order; an array whose byte
//! order and length width already match is copied verbatim (a 128k-token vocabulary is one
//! `memcpy`).
//!
//! The header is produced whole ([`GgufWriter::header_bytes`]) or streamed into any
//! [`io::Write`] ([`GgufWriter::write_header`]), so a caller writing a file needs no second
//! copy of a multi-megabyte header in memory. The crate itself still opens no file.

use std::borrow::Cow;
use std::io;

use crate::ast::Gguf;
use crate::ggml::{GgmlType, SizeError, align_up, tensor_nbytes};
use crate::header::Endian;
use crate::value::{ArrayView, MetaValue, ValueType};

/// A value to write: a scalar, a string, or an array (owned, or borrowed from a parsed file).
/// The writer's input only; what a parse gives back is [`MetaValue`].
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Value<'a> {
    Uint8(u8),
    Int8(i8),
    Uint16(u16),
    Int16(i16),
    Uint32(u32),
    Int32(i32),
    Float32(f32),
    Bool(bool),
    /// String bytes (UTF-8 unless copied from a leniently parsed file).
    String(Cow<'a, [u8]>),
    /// An array built in memory: every element must be of `elem_type` (for nested arrays,
    /// every element is a [`Value::Array`] or [`Value::View`]).
    Array {
        elem_type: ValueType,
        elems: Vec<Value<'a>>,
    },
    /// An array borrowed from a parsed file.
    View(ArrayView<'a>),
    Uint64(u64),
    Int64(i64),
    Float64(f64),
}

/// Writes the numeric-array constructors of [`Value`]: one per element type, each one
/// allocation for the element list.
macro_rules! numeric_arrays {
    ($($(#[$doc:meta])* $name:ident($t:ty) => $variant:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(items: impl IntoIterator<Item = $t>) -> Value<'static> {
            Value::array_of(ValueType::$variant, items.into_iter().map(Value::$variant))
        }
    )*};
}

impl<'a> Value<'a> {
    /// A string value.
    pub fn str(s: &'a str) -> Value<'a> {
        Value::String(Cow::Borrowed(s.as_bytes()))
    }

    /// An owned string value.
    pub fn string(s: impl Into<String>) -> Value<'static> {
        Value::String(Cow::Owned(s.into().into_bytes()))
    }

    /// An array of strings.
    pub fn strings<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value<'static> {
        Value::Array {
            elem_type: ValueType::String,
            elems: items.into_iter().map(|s| Value::string(s.as_ref())).collect(),
        }
    }

    /// An array of `BOOL`.
    pub fn bools(items: impl IntoIterator<Item = bool>) -> Value<'static> {
        Value::array_of(ValueType::Bool, items.into_iter().map(Value::Bool))
    }

    numeric_arrays! {
        /// An array of `UINT8`.
        uint8s(u8) => Uint8;
        /// An array of `INT8`.
        int8s(i8) => Int8;
        /// An array of `UINT16`.
        uint16s(u16) => Uint16;
        /// An array of `INT16`.
        int16s(i16) => Int16;
        /// An array of `UINT32` (e.g. per-layer head counts).
        uint32s(u32) => Uint32;
        /// An array of `INT32` (e.g. `tokenizer.ggml.token_type`).
        int32s(i32) => Int32;
        /// An array of `UINT64`.
        uint64s(u64) => Uint64;
        /// An array of `INT64`.
        int64s(i64) => Int64;
        /// An array of `FLOAT32` (e.g. `tokenizer.ggml.scores`).
        float32s(f32) => Float32;
        /// An array of `FLOAT64`.
        float64s(f64) => Float64;
    }

    fn array_of(
        elem_type: ValueType,
        elems: impl Iterator<Item = Value<'static>>,
    ) -> Value<'static> {
        Value::Array { elem_type, elems: elems.collect() }
    }

    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Uint8(_) => ValueType::Uint8,
            Value::Int8(_) => ValueType::Int8,
            Value::Uint16(_) => ValueType::Uint16,
            Value::Int16(_) => ValueType::Int16,
            Value::Uint32(_) => ValueType::Uint32,
            Value::Int32(_) => ValueType::Int32,
            Value::Float32(_) => ValueType::Float32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array { .. } | Value::View(_) => ValueType::Array,
            Value::Uint64(_) => ValueType::Uint64,
            Value::Int64(_) => ValueType::Int64,
            Value::Float64(_) => ValueType::Float64,
        }
    }
}

/// Scalars convert to the value of their own GGUF type (`2u32.into()` is `UINT32`).
macro_rules! scalar_from {
    ($($t:ty => $variant:ident),*) => {$(
        impl From<$t> for Value<'static> {
            fn from(v: $t) -> Value<'static> {
                Value::$variant(v)
            }
        }
    )*};
}
scalar_from!(u8 => Uint8, i8 => Int8, u16 => Uint16, i16 => Int16, u32 => Uint32, i32 => Int32,
    u64 => Uint64, i64 => Int64, f32 => Float32, f64 => Float64, bool => Bool);

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Value<'a> {
        Value::str(s)
    }
}

impl From<String> for Value<'static> {
    fn from(s: String) -> Value<'static> {
        Value::String(Cow::Owned(s.into_bytes()))
    }
}

/// What [`GgufWriter::set`] takes as a key: text (`&str`, `String`) or bytes (`&[u8]`,
/// `b"…"`, `Vec<u8>`, `Cow<[u8]>`; bytes that are not UTF-8 are written as given, which only
/// the lenient profile reads back).
pub trait KeyBytes<'a> {
    /// The key's bytes.
    fn into_key(self) -> Cow<'a, [u8]>;
}

impl<'a> KeyBytes<'a> for &'a str {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Borrowed(self.as_bytes())
    }
}

impl<'a> KeyBytes<'a> for &'a String {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Borrowed(self.as_bytes())
    }
}

impl<'a> KeyBytes<'a> for String {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Owned(self.into_bytes())
    }
}

impl<'a> KeyBytes<'a> for &'a [u8] {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Borrowed(self)
    }
}

impl<'a, const N: usize> KeyBytes<'a> for &'a [u8; N] {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Borrowed(self)
    }
}

impl<'a> KeyBytes<'a> for Vec<u8> {
    fn into_key(self) -> Cow<'a, [u8]> {
        Cow::Owned(self)
    }
}

impl<'a> KeyBytes<'a> for Cow<'a, [u8]> {
    fn into_key(self) -> Cow<'a, [u8]> {
        self
    }
}

impl<'a> From<MetaValue<'a>> for Value<'a> {
    fn from(v: MetaValue<'a>) -> Value<'a> {
        match v {
            MetaValue::Uint8(x) => Value::Uint8(x),
            MetaValue::Int8(x) => Value::Int8(x),
            MetaValue::Uint16(x) => Value::Uint16(x),
            MetaValue::Int16(x) => Value::Int16(x),
            MetaValue::Uint32(x) => Value::Uint32(x),
            MetaValue::Int32(x) => Value::Int32(x),
            MetaValue::Float32(x) => Value::Float32(x),
            MetaValue::Bool(x) => Value::Bool(x),
            MetaValue::String(s) => Value::String(Cow::Borrowed(s.as_bytes())),
            MetaValue::Array(a) => Value::View(a),
            MetaValue::Uint64(x) => Value::Uint64(x),
            MetaValue::Int64(x) => Value::Int64(x),
            MetaValue::Float64(x) => Value::Float64(x),
        }
    }
}

/// A tensor info to write: the data's size and offset follow from the type and dims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc<'a> {
    /// Name bytes.
    pub name: Cow<'a, [u8]>,
    /// Dimensions in GGUF order (`ne[0]` first).
    pub dims: Vec<u64>,
    /// Tensor type.
    pub ggml_type: GgmlType,
}

/// Why a header cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderWriteError {
    /// Two pairs with the same key.
    #[error("duplicate key {key:?}")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// Two tensors with the same name.
    #[error("duplicate tensor name {name:?}")]
    DuplicateTensor {
        /// The name.
        name: String,
    },
    /// An array element whose type differs from the array's element type.
    #[error("key {key:?}: array element of type {found} in an array of {expected}")]
    MixedArray {
        /// The key.
        key: String,
        /// The array's element type.
        expected: ValueType,
        /// The element's type.
        found: ValueType,
    },
    /// `general.alignment` is not a UINT32 power of two.
    #[error("general.alignment must be a UINT32 power of two")]
    BadAlignment,
    /// A tensor whose size cannot be computed.
    #[error("tensor {name:?}: {source}")]
    TensorSize {
        /// The tensor.
        name: String,
        /// Why.
        source: SizeError,
    },
    /// More than 4 dimensions.
    #[error("tensor {name:?}: {n_dims} dimensions; at most 4")]
    TooManyDims {
        /// The tensor.
        name: String,
        /// Dimensions given.
        n_dims: usize,
    },
    /// Offsets overflow 64 bits.
    #[error("offsets overflow 64 bits")]
    Overflow,
    /// The version is not 2 or 3.
    #[error("version {0} cannot be written (2 and 3 can)")]
    Version(u32),
    /// [`GgufWriter::pad_to`]: the header needs more room than the target data offset leaves.
    #[error("the header needs {missing} more byte(s) than the space before the data section")]
    HeaderTooLarge {
        /// Bytes missing.
        missing: u64,
    },
    /// [`GgufWriter::pad_to`]: the header is a few bytes too short to end at the target data
    /// offset, and too long for the smallest padding pair to fit.
    #[error(
        "the header ends {slack} byte(s) before the data section: too few for a padding pair \
         ({min} bytes at least)"
    )]
    NoRoomForPadding {
        /// Bytes between the header's end and the data offset.
        slack: u64,
        /// The smallest padding pair.
        min: u64,
    },
    /// [`GgufWriter::pad_to`]: the padding pair would hold a string longer than a reader
    /// accepts (the parser's default [`Limits::max_string_len`](crate::Limits)), so the file
    /// would not re-open; it is refused before any of it is built.
    #[error(
        "the header would need a padding string of {len} bytes to end at the data section; a \
         GGUF string may hold at most {max} bytes"
    )]
    PaddingTooLarge {
        /// Bytes of padding string needed.
        len: u64,
        /// The largest string a reader accepts by default.
        max: u64,
    },
}

/// The key of the pair [`GgufWriter::pad_to`] adds to keep a shrunken header's data offset.
pub const PADDING_KEY: &str = "sipllm.header_padding";

/// Where each tensor's data goes in the written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Length of [`GgufWriter::header_bytes`]: with tensors, the data section starts here
    /// (the parser's `data_offset`); without, the file ends here.
    pub header_len: u64,
    /// Per tensor, in directory order: (absolute offset, byte size).
    pub tensors: Vec<(u64, u64)>,
    /// Total file size (data section padded at the end; no data section without tensors).
    pub file_size: u64,
}

/// Builds and serializes a GGUF header in canonical layout. See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct GgufWriter<'a> {
    version: u32,
    endian: Endian,
    kvs: Vec<(Cow<'a, [u8]>, Value<'a>)>,
    tensors: Vec<TensorDesc<'a>>,
    pad_tensorless: bool,
}

impl<'a> GgufWriter<'a> {
    /// An empty v3 little-endian header.
    pub fn new() -> GgufWriter<'a> {
        GgufWriter {
            version: 3,
            endian: Endian::Little,
            kvs: Vec::new(),
            tensors: Vec::new(),
            pad_tensorless: true,
        }
    }

    /// Whether a file without tensors is padded to the alignment after its directory (default
    /// true, as ggml and gguf-py write; older converter outputs are not padded).
    pub fn pad_tensorless(mut self, pad: bool) -> Self {
        self.pad_tensorless = pad;
        self
    }

    /// Everything of a parsed file — version (v1 becomes v3), byte order, every pair and every
    /// tensor info — borrowing its strings and arrays. For a canonical file,
    /// `header_bytes()` equals the file's bytes up to its data section.
    ///
    /// A file without tensors keeps its padding choice: padded if `gguf`'s bytes reach its
    /// (padded) data offset. Pass the whole file, or set [`pad_tensorless`](Self::pad_tensorless)
    /// from the file size when only the header was read.
    pub fn from_gguf<B: AsRef<[u8]>>(gguf: &'a Gguf<B>) -> GgufWriter<'a> {
        let padded = gguf.bytes().len() as u64 >= gguf.data_offset();
        let mut w = GgufWriter::new().endian(gguf.endian()).pad_tensorless(padded);
        if gguf.version() == 2 {
            w.version = 2;
        }
        for e in gguf.metadata() {
            w.kvs.push((Cow::Borrowed(e.key.as_bytes()), e.value.into()));
        }
        for t in gguf.tensors() {
            w.tensors.push(TensorDesc {
                name: Cow::Borrowed(t.name.as_bytes()),
                dims: t.info.dims().to_vec(),
                ggml_type: t.info.ggml_type(),
            });
        }
        w
    }

    /// Sets the byte order.
    pub fn endian(mut self, endian: Endian) -> Self {
        self.endian = endian;
        self
    }

    /// Sets the version (2 or 3; the layout is the same).
    pub fn version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Appends a pair, or replaces the value of an existing key in place (keeping its
    /// position).
    ///
    /// `key` is a `&str` or `String` as well as bytes (`&[u8]`, `b"…"`, `Vec<u8>`; see
    /// [`KeyBytes`]):
    ///
    /// ```
    /// use sipllm_gguf::writer::GgufWriter;
    /// use sipllm_gguf::writer::Value;
    ///
    /// let mut w = GgufWriter::new();
    /// w.set("general.name", Value::str("tiny"))
    ///     .set(String::from("llama.block_count"), Value::from(2u32))
    ///     .set(b"llama.rope.freq_base", Value::from(5e5f32))
    ///     .set("tokenizer.ggml.token_type", Value::int32s([1, 3, 3]));
    /// assert_eq!(w.get("llama.block_count"), Some(&Value::Uint32(2)));
    /// assert!(w.remove("general.name"));
    /// ```
    pub fn set(&mut self, key: impl KeyBytes<'a>, value: Value<'a>) -> &mut Self {
        let key = key.into_key();
        match self.kvs.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.kvs.push((key, value)),
        }
        self
    }

    /// Removes a pair; returns whether the key existed.
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> bool {
        let key = key.as_ref();
        let before = self.kvs.len();
        self.kvs.retain(|(k, _)| k.as_ref() != key);
        self.kvs.len() != before
    }

    /// The value under `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Option<&Value<'a>> {
        let key = key.as_ref();
        self.kvs.iter().find(|(k, _)| k.as_ref() == key).map(|(_, v)| v)
    }

    /// The pairs, in order.
    pub fn kvs(&self) -> &[(Cow<'a, [u8]>, Value<'a>)] {
        &self.kvs
    }

    /// The pairs, in order (mutable: reorder, insert, remove; keys must stay unique, which
    /// [`layout`](Self::layout) checks).
    pub fn kvs_mut(&mut self) -> &mut Vec<(Cow<'a, [u8]>, Value<'a>)> {
        &mut self.kvs
    }

    /// Appends a tensor info.
    pub fn add_tensor(&mut self, tensor: TensorDesc<'a>) -> &mut Self {
        self.tensors.push(tensor);
        self
    }

    /// The tensor infos, in order (mutable: rename, reorder, remove).
    pub fn tensors_mut(&mut self) -> &mut Vec<TensorDesc<'a>> {
        &mut self.tensors
    }

    /// The tensor infos, in order.
    pub fn tensors(&self) -> &[TensorDesc<'a>] {
        &self.tensors
    }

    /// The alignment: `general.alignment` if present (it must be a UINT32 power of two), else
    /// 32.
    pub fn alignment(&self) -> Result<u32, HeaderWriteError> {
        match self.get(b"general.alignment") {
            None => Ok(crate::decoder::DEFAULT_ALIGNMENT),
            Some(Value::Uint32(a)) if a.is_power_of_two() => Ok(*a),
            Some(_) => Err(HeaderWriteError::BadAlignment),
        }
    }

    fn check(&self) -> Result<(), HeaderWriteError> {
        if !matches!(self.version, 2 | 3) {
            return Err(HeaderWriteError::Version(self.version));
        }
        let mut keys = sipllm_format::NameIndex::new();
        for (i, (key, value)) in self.kvs.iter().enumerate() {
            let resolve = |j: u32| self.kvs.get(j as usize).map_or(&[][..], |(k, _)| k.as_ref());
            if keys.find(key, resolve).is_some() {
                return Err(HeaderWriteError::DuplicateKey { key: lossy(key) });
            }
            keys.insert(key, i as u32, resolve);
            check_array(key, value)?;
        }
        self.alignment()?;
        let mut names = sipllm_format::NameIndex::new();
        for (i, t) in self.tensors.iter().enumerate() {
            let resolve =
                |j: u32| self.tensors.get(j as usize).map_or(&[][..], |t| t.name.as_ref());
            if names.find(&t.name, resolve).is_some() {
                return Err(HeaderWriteError::DuplicateTensor { name: lossy(&t.name) });
            }
            names.insert(&t.name, i as u32, resolve);
            if t.dims.len() > 4 {
                return Err(HeaderWriteError::TooManyDims {
                    name: lossy(&t.name),
                    n_dims: t.dims.len(),
                });
            }
        }
        Ok(())
    }

    /// Makes the header end exactly where the data section of an existing file starts, so only
    /// the header needs rewriting (an in-place edit). A header that grew past `data_offset`
    /// is [`HeaderWriteError::HeaderTooLarge`]; one that shrank so far that `data_offset` would move
    /// gets a padding pair ([`PADDING_KEY`], a string of spaces) after the other pairs.
    /// Any earlier padding pair is replaced. Returns the padding pair's size (0 if none).
    ///
    /// The padding string is at most the parser's default string limit (64 MiB): a longer one
    /// (`data_offset` far past the header, e.g. `u64::MAX`) is
    /// [`HeaderWriteError::PaddingTooLarge`], decided before anything is allocated.
    pub fn pad_to(&mut self, data_offset: u64) -> Result<u64, HeaderWriteError> {
        self.remove(PADDING_KEY.as_bytes());
        let alignment = u64::from(self.alignment()?);
        let end = self.encoded_len()?;
        if end > data_offset {
            return Err(HeaderWriteError::HeaderTooLarge { missing: end - data_offset });
        }
        if align_up(end, alignment) == Some(data_offset) {
            return Ok(0);
        }
        // key (8 + len), type (4), string length (8): the smallest padding pair.
        let min = 8 + PADDING_KEY.len() as u64 + 4 + 8;
        let slack = data_offset - end;
        if slack < min {
            return Err(HeaderWriteError::NoRoomForPadding { slack, min });
        }
        // The padding string is built in memory (it is part of the header); one a default
        // reader would refuse is refused here, before any of it is allocated.
        let len = slack - min;
        let max = crate::Limits::default().max_string_len;
        if len > max {
            return Err(HeaderWriteError::PaddingTooLarge { len, max });
        }
        let fill = usize::try_from(len).map_err(|_| HeaderWriteError::Overflow)?;
        self.kvs.push((
            Cow::Borrowed(PADDING_KEY.as_bytes()),
            Value::String(Cow::Owned(vec![b' '; fill])),
        ));
        Ok(slack)
    }

    /// Where every tensor's data goes (validating the header first).
    pub fn layout(&self) -> Result<Layout, HeaderWriteError> {
        self.check()?;
        let header_len = self.encoded_len()?;
        self.layout_from(header_len)
    }

    fn layout_from(&self, directory_end: u64) -> Result<Layout, HeaderWriteError> {
        let alignment = u64::from(self.alignment()?);
        let data_offset = align_up(directory_end, alignment).ok_or(HeaderWriteError::Overflow)?;
        if self.tensors.is_empty() {
            let end = if self.pad_tensorless { data_offset } else { directory_end };
            return Ok(Layout { header_len: end, tensors: Vec::new(), file_size: end });
        }
        let mut next = 0u64;
        let mut tensors = Vec::with_capacity(self.tensors.len());
        for t in &self.tensors {
            let nbytes = tensor_nbytes(t.ggml_type, &t.dims)
                .map_err(|source| HeaderWriteError::TensorSize { name: lossy(&t.name), source })?;
            let abs = data_offset.checked_add(next).ok_or(HeaderWriteError::Overflow)?;
            tensors.push((abs, nbytes));
            let end = next.checked_add(nbytes).ok_or(HeaderWriteError::Overflow)?;
            next = align_up(end, alignment).ok_or(HeaderWriteError::Overflow)?;
        }
        let file_size = data_offset.checked_add(next).ok_or(HeaderWriteError::Overflow)?;
        Ok(Layout { header_len: data_offset, tensors, file_size })
    }

    /// Length of the header up to the end of the tensor directory (no padding).
    fn encoded_len(&self) -> Result<u64, HeaderWriteError> {
        let mut counter = Sink::Count(0);
        self.encode(&mut counter, &[])?;
        match counter {
            Sink::Count(n) => Ok(n),
            Sink::Fill { .. } | Sink::Write { .. } => unreachable!("a counting sink stays one"),
        }
    }

    /// The header bytes: fixed header, pairs, tensor infos and (with tensors) the padding up
    /// to the data section. Its length is [`Layout::header_len`].
    pub fn header_bytes(&self) -> Result<Vec<u8>, HeaderWriteError> {
        let layout = self.layout()?;
        let offsets: Vec<u64> =
            layout.tensors.iter().map(|&(abs, _)| abs - layout.header_len).collect();
        let len = usize::try_from(layout.header_len).map_err(|_| HeaderWriteError::Overflow)?;
        // One zeroed allocation of the final length, written in place: the alignment padding
        // after the directory is never written, so with a large `general.alignment` (2^27)
        // it stays untouched zero pages — address space, not resident memory.
        let mut sink = Sink::Fill { buf: vec![0; len], pos: 0 };
        self.encode(&mut sink, &offsets)?;
        let Sink::Fill { buf, .. } = sink else { unreachable!("a fill sink stays one") };
        Ok(buf)
    }

    /// A whole file in memory: the header, then each tensor's data from `data(index)` (which
    /// must have the tensor's size; shorter data is zero-filled, longer truncated). For tests
    /// and small files; large files are written by the streaming crate's file builder.
    pub fn to_bytes(
        &self,
        mut data: impl FnMut(usize) -> Vec<u8>,
    ) -> Result<Vec<u8>, HeaderWriteError> {
        let layout = self.layout()?;
        let mut out = self.header_bytes()?;
        out.resize(layout.file_size as usize, 0);
        for (i, &(abs, n)) in layout.tensors.iter().enumerate() {
            let d = data(i);
            let n = (n as usize).min(d.len());
            let start = abs as usize;
            if let (Some(dst), Some(src)) = (out.get_mut(start..start + n), d.get(..n)) {
                dst.copy_from_slice(src);
            }
        }
        Ok(out)
    }

    /// Streams the header — exactly the bytes of [`header_bytes`](Self::header_bytes) — into
    /// `w`, without holding it in memory; returns its length ([`Layout::header_len`]).
    ///
    /// Many small writes are made: give a buffered writer. A header that does not validate
    /// (see [`layout`](Self::layout), which callers usually call first for the typed error) is
    /// an [`io::ErrorKind::InvalidInput`] error wrapping the [`HeaderWriteError`]; nothing is
    /// written then.
    pub fn write_header<W: io::Write + ?Sized>(&self, w: &mut W) -> io::Result<u64> {
        let (n, layout) = self.write_directory_inner(w)?;
        // Zero padding up to the data section (less than one alignment unit).
        let zeros = [0u8; 256];
        let mut left = layout.header_len.saturating_sub(n);
        while left > 0 {
            let k = usize::try_from(left).map_or(zeros.len(), |l| l.min(zeros.len()));
            w.write_all(zeros.get(..k).unwrap_or_default())?;
            left -= k as u64;
        }
        Ok(layout.header_len)
    }

    /// Streams the header *without* its trailing zero padding — the fixed header, the pairs
    /// and the tensor infos — into `w`, and returns `(bytes written, header_len)`: the caller
    /// leaves `header_len - written` zero bytes to come, e.g. as a hole in a file already
    /// extended with `set_len` (so a `general.alignment` of 2^27 costs no 128 MiB of zeros on
    /// disk). Errors as [`write_header`](Self::write_header).
    pub fn write_directory<W: io::Write + ?Sized>(&self, w: &mut W) -> io::Result<(u64, u64)> {
        let (n, layout) = self.write_directory_inner(w)?;
        Ok((n, layout.header_len))
    }

    fn write_directory_inner<W: io::Write + ?Sized>(&self, w: &mut W) -> io::Result<(u64, Layout)> {
        let invalid = |e: HeaderWriteError| io::Error::new(io::ErrorKind::InvalidInput, e);
        let layout = self.layout().map_err(invalid)?;
        let offsets: Vec<u64> =
            layout.tensors.iter().map(|&(abs, _)| abs - layout.header_len).collect();
        let mut w = w;
        let mut sink = Sink::Write { w: &mut w, n: 0, err: None };
        self.encode(&mut sink, &offsets).map_err(invalid)?;
        let Sink::Write { n, err, .. } = sink else { unreachable!("a write sink stays one") };
        if let Some(e) = err {
            return Err(e);
        }
        Ok((n, layout))
    }

    fn encode(&self, out: &mut Sink<'_>, offsets: &[u64]) -> Result<(), HeaderWriteError> {
        let e = Enc { endian: self.endian };
        out.put(b"GGUF");
        e.u32(out, self.version);
        e.u64(out, self.tensors.len() as u64);
        e.u64(out, self.kvs.len() as u64);
        for (key, value) in &self.kvs {
            e.string(out, key);
            e.u32(out, value.value_type().code());
            e.value(out, value);
        }
        for (i, t) in self.tensors.iter().enumerate() {
            e.string(out, &t.name);
            e.u32(out, t.dims.len() as u32);
            for &d in &t.dims {
                e.u64(out, d);
            }
            e.u32(out, t.ggml_type.code());
            e.u64(out, offsets.get(i).copied().unwrap_or(0));
        }
        Ok(())
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn check_array(key: &[u8], value: &Value<'_>) -> Result<(), HeaderWriteError> {
    if let Value::Array { elem_type, elems } = value {
        for v in elems {
            if v.value_type() != *elem_type {
                return Err(HeaderWriteError::MixedArray {
                    key: lossy(key),
                    expected: *elem_type,
                    found: v.value_type(),
                });
            }
            check_array(key, v)?;
        }
    }
    Ok(())
}

/// Output: bytes, a writer, or just a count (to size the header before writing it).
enum Sink<'w> {
    Count(u64),
    /// A zeroed buffer of the final length, filled from `pos` on.
    Fill {
        buf: Vec<u8>,
        pos: usize,
    },
    /// A writer: bytes written so far, and the first error (later output is dropped).
    Write {
        w: &'w mut dyn io::Write,
        n: u64,
        err: Option<io::Error>,
    },
}

impl Sink<'_> {
    fn put(&mut self, b: &[u8]) {
        match self {
            Sink::Count(n) => *n += b.len() as u64,
            Sink::Fill { buf, pos } => {
                // The layout sized the buffer; a longer encoding is a bug, cut rather than grown.
                let end = pos.saturating_add(b.len()).min(buf.len());
                if let (Some(dst), Some(src)) = (buf.get_mut(*pos..end), b.get(..end - *pos)) {
                    dst.copy_from_slice(src);
                }
                *pos = end;
            }
            Sink::Write { w, n, err } => {
                if err.is_none() {
                    match w.write_all(b) {
                        Ok(()) => *n += b.len() as u64,
                        Err(e) => *err = Some(e),
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Enc {
    endian: Endian,
}

macro_rules! put_num {
    ($self:ident, $out:ident, $x:expr) => {
        match $self.endian {
            Endian::Little => $out.put(&$x.to_le_bytes()),
            Endian::Big => $out.put(&$x.to_be_bytes()),
        }
    };
}

impl Enc {
    fn u32(self, out: &mut Sink<'_>, v: u32) {
        put_num!(self, out, v)
    }

    fn u64(self, out: &mut Sink<'_>, v: u64) {
        put_num!(self, out, v)
    }

    fn string(self, out: &mut Sink<'_>, s: &[u8]) {
        self.u64(out, s.len() as u64);
        out.put(s);
    }

    fn value(self, out: &mut Sink<'_>, v: &Value<'_>) {
        match v {
            Value::Uint8(x) => put_num!(self, out, x),
            Value::Int8(x) => put_num!(self, out, x),
            Value::Uint16(x) => put_num!(self, out, x),
            Value::Int16(x) => put_num!(self, out, x),
            Value::Uint32(x) => put_num!(self, out, x),
            Value::Int32(x) => put_num!(self, out, x),
            Value::Float32(x) => put_num!(self, out, x),
            Value::Bool(x) => out.put(&[u8::from(*x)]),
            Value::String(s) => self.string(out, s),
            Value::Array { elem_type, elems } => {
                self.u32(out, elem_type.code());
                self.u64(out, elems.len() as u64);
                elems.iter().for_each(|e| self.value(out, e));
            }
            Value::View(a) => self.view(out, a),
            Value::Uint64(x) => put_num!(self, out, x),
            Value::Int64(x) => put_num!(self, out, x),
            Value::Float64(x) => put_num!(self, out, x),
        }
    }

    fn view(self, out: &mut Sink<'_>, a: &ArrayView<'_>) {
        self.u32(out, a.elem_type().code());
        self.u64(out, a.len());
        // Same byte order and 64-bit lengths: the stored elements are already what we would
        // write (bools too: a value other than 0/1 is copied as it was).
        if a.endian() == self.endian && a.is_wide() {
            out.put(a.payload());
            return;
        }
        for v in a.iter() {
            self.value(out, &Value::from(v));
        }
    }
}
