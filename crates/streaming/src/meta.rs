//! The collapsed metadata view every [`WeightSource`](crate::WeightSource) produces.
//!
//! An engine does not care whether a layer count was stored as `UINT32` or `INT64`, or a
//! vocabulary as a GGUF string array or a `.llmw` list: [`Meta`] collapses the 13 GGUF value
//! types into integers, floats, bools, strings and typed lists of each. It is a lazy view:
//! a GGUF list wraps the parser's [`ArrayView`] (element bytes in the header buffer) and
//! decodes elements as they are iterated; nothing is copied until `to_vec` is asked for, and
//! a string list iterates without allocating. A `.llmw` list wraps that parser's views
//! ([`sipllm_llmw::Numbers`], [`sipllm_llmw::StrArray`]) the same way ([`Meta::from_llmw`]).
//! Other formats build the same lists over slices ([`IntList::from_slice`],
//! [`FloatList::from_slice`], [`StrList::from_strings`]).

use std::fmt;

use sipllm_gguf::{
    MetaValue, ValueType, value::ArrayView, value::MetaStr, value::Strings, value::Values,
};
use sipllm_llmw::{NumberIter, Numbers, StrArray};

use crate::error::{MetaError, StreamError};

/// The collapsed type of a [`Meta`] value, for matching and error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaKind {
    /// [`Meta::Int`].
    Int,
    /// [`Meta::Float`].
    Float,
    /// [`Meta::Bool`].
    Bool,
    /// [`Meta::Str`].
    Str,
    /// [`Meta::Ints`].
    Ints,
    /// [`Meta::Floats`].
    Floats,
    /// [`Meta::Strs`].
    Strs,
    /// [`Meta::Array`].
    Array,
}

impl MetaKind {
    /// The name used in error messages (`integer`, `string array`, …).
    pub fn name(self) -> &'static str {
        match self {
            MetaKind::Int => "integer",
            MetaKind::Float => "float",
            MetaKind::Bool => "bool",
            MetaKind::Str => "string",
            MetaKind::Ints => "integer array",
            MetaKind::Floats => "float array",
            MetaKind::Strs => "string array",
            MetaKind::Array => "array of bools or arrays",
        }
    }
}

impl fmt::Display for MetaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A metadata value, collapsed to what an engine needs and borrowed from the source.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Meta<'a> {
    /// Any integer type (`i128` holds every GGUF integer losslessly).
    Int(i128),
    /// `FLOAT32` (widened exactly) or `FLOAT64`.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string.
    Str(MetaStr<'a>),
    /// An array of any integer type.
    Ints(IntList<'a>),
    /// An array of `FLOAT32` or `FLOAT64`.
    Floats(FloatList<'a>),
    /// An array of strings.
    Strs(StrList<'a>),
    /// A GGUF array with no collapsed form (of bools, or of arrays): the parser's view.
    Array(ArrayView<'a>),
}

impl<'a> Meta<'a> {
    /// Collapses a parsed GGUF value. `key` is kept by lists for their error messages.
    pub fn from_gguf(key: MetaStr<'a>, value: MetaValue<'a>) -> Meta<'a> {
        match value {
            MetaValue::Uint8(v) => Meta::Int(v.into()),
            MetaValue::Int8(v) => Meta::Int(v.into()),
            MetaValue::Uint16(v) => Meta::Int(v.into()),
            MetaValue::Int16(v) => Meta::Int(v.into()),
            MetaValue::Uint32(v) => Meta::Int(v.into()),
            MetaValue::Int32(v) => Meta::Int(v.into()),
            MetaValue::Uint64(v) => Meta::Int(v.into()),
            MetaValue::Int64(v) => Meta::Int(v.into()),
            MetaValue::Float32(v) => Meta::Float(v.into()),
            MetaValue::Float64(v) => Meta::Float(v),
            MetaValue::Bool(v) => Meta::Bool(v),
            MetaValue::String(s) => Meta::Str(s),
            MetaValue::Array(a) => match a.elem_type() {
                ValueType::Float32 | ValueType::Float64 => {
                    Meta::Floats(FloatList { key, repr: FloatRepr::Gguf(a) })
                }
                ValueType::String => Meta::Strs(StrList { key, repr: StrRepr::Gguf(a) }),
                ValueType::Bool | ValueType::Array => Meta::Array(a),
                _ => Meta::Ints(IntList { key, repr: IntRepr::Gguf(a) }),
            },
        }
    }

    /// Collapses a parsed `.llmw` value: `i64` → [`Meta::Int`], `f64` → [`Meta::Float`],
    /// string → [`Meta::Str`], and the three array types → [`Meta::Ints`], [`Meta::Floats`],
    /// [`Meta::Strs`] wrapping the parser's views (nothing is decoded or copied here). `key` is
    /// kept by lists for their error messages.
    ///
    /// `None` only for a value type newer than this crate (the `.llmw` value enum is
    /// non-exhaustive; every type of format versions 1 and 2 is mapped).
    pub fn from_llmw(key: MetaStr<'a>, value: sipllm_llmw::MetaValue<'a>) -> Option<Meta<'a>> {
        use sipllm_llmw::MetaValue as V;
        Some(match value {
            V::I64(v) => Meta::Int(v.into()),
            V::F64(v) => Meta::Float(v),
            V::Str(s) => Meta::Str(MetaStr::from(s)),
            V::I64Array(a) => Meta::Ints(IntList { key, repr: IntRepr::Llmw(a) }),
            V::F64Array(a) => Meta::Floats(FloatList { key, repr: FloatRepr::Llmw(a) }),
            V::StrArray(a) => Meta::Strs(StrList { key, repr: StrRepr::Llmw(a) }),
            _ => return None,
        })
    }

    /// The collapsed type.
    pub fn kind(&self) -> MetaKind {
        match self {
            Meta::Int(_) => MetaKind::Int,
            Meta::Float(_) => MetaKind::Float,
            Meta::Bool(_) => MetaKind::Bool,
            Meta::Str(_) => MetaKind::Str,
            Meta::Ints(_) => MetaKind::Ints,
            Meta::Floats(_) => MetaKind::Floats,
            Meta::Strs(_) => MetaKind::Strs,
            Meta::Array(_) => MetaKind::Array,
        }
    }

    /// An integer.
    pub fn as_int(&self) -> Option<i128> {
        match *self {
            Meta::Int(v) => Some(v),
            _ => None,
        }
    }

    /// A float.
    pub fn as_float(&self) -> Option<f64> {
        match *self {
            Meta::Float(v) => Some(v),
            _ => None,
        }
    }

    /// A float as `f32`: exact for a stored `FLOAT32`, rounded to nearest for `FLOAT64`.
    pub fn as_f32(&self) -> Option<f32> {
        self.as_float().map(|v| v as f32)
    }

    /// A bool.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Meta::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// A string, as stored.
    pub fn as_text(&self) -> Option<MetaStr<'a>> {
        match *self {
            Meta::Str(v) => Some(v),
            _ => None,
        }
    }

    /// A string that is valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        self.as_text().and_then(|t| t.as_str())
    }

    /// An integer list.
    pub fn as_ints(&self) -> Option<IntList<'a>> {
        match *self {
            Meta::Ints(v) => Some(v),
            _ => None,
        }
    }

    /// A float list.
    pub fn as_floats(&self) -> Option<FloatList<'a>> {
        match *self {
            Meta::Floats(v) => Some(v),
            _ => None,
        }
    }

    /// A string list.
    pub fn as_strs(&self) -> Option<StrList<'a>> {
        match *self {
            Meta::Strs(v) => Some(v),
            _ => None,
        }
    }
}

/// The value under `key` if it is of kind `expected`, else the error naming key and types.
pub(crate) fn expect<'a, T>(
    key: &str,
    value: Option<Meta<'a>>,
    expected: MetaKind,
    pick: impl FnOnce(&Meta<'a>) -> Option<T>,
) -> Result<T, StreamError> {
    let value = value.ok_or_else(|| StreamError::from(MetaError::Missing { key: key.into() }))?;
    pick(&value).ok_or_else(|| {
        StreamError::from(MetaError::Type {
            key: key.into(),
            expected: expected.name(),
            actual: value.kind().name(),
        })
    })
}

fn len_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

// ----- integer lists ---------------------------------------------------------------------------

/// A list of integers: a GGUF array of any integer type, a `.llmw` `i64` array, or a slice
/// of `i64`.
#[derive(Clone, Copy)]
pub struct IntList<'a> {
    key: MetaStr<'a>,
    repr: IntRepr<'a>,
}

#[derive(Clone, Copy)]
enum IntRepr<'a> {
    Gguf(ArrayView<'a>),
    Llmw(Numbers<'a, i64>),
    Slice(&'a [i64]),
}

impl<'a> IntList<'a> {
    /// A list over `values` (for formats that store `i64`).
    pub fn from_slice(key: &'a str, values: &'a [i64]) -> IntList<'a> {
        IntList { key: key.into(), repr: IntRepr::Slice(values) }
    }

    /// A list over a `.llmw` `i64` array (decoded as iterated, not copied).
    pub fn from_llmw(key: &'a str, values: Numbers<'a, i64>) -> IntList<'a> {
        IntList { key: key.into(), repr: IntRepr::Llmw(values) }
    }

    /// The key this list is stored under.
    pub fn key(&self) -> MetaStr<'a> {
        self.key
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self.repr {
            IntRepr::Gguf(a) => len_of(a.len()),
            IntRepr::Llmw(a) => a.len(),
            IntRepr::Slice(s) => s.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `index`, in O(1).
    pub fn get(&self, index: usize) -> Option<i128> {
        match self.repr {
            IntRepr::Gguf(a) => a.get(index as u64).and_then(|v| v.as_i128()),
            IntRepr::Llmw(a) => a.get(index).map(i128::from),
            IntRepr::Slice(s) => s.get(index).map(|&v| v.into()),
        }
    }

    /// The elements, decoded as they are iterated.
    pub fn iter(&self) -> IntIter<'a> {
        IntIter(match self.repr {
            IntRepr::Slice(s) => IntIterRepr::Slice(s.iter()),
            IntRepr::Llmw(a) => IntIterRepr::Llmw(a.iter()),
            IntRepr::Gguf(a) => {
                let it = match a.elem_type() {
                    ValueType::Uint8 => a.values().map(IntIterRepr::U8),
                    ValueType::Int8 => a.values().map(IntIterRepr::I8),
                    ValueType::Uint16 => a.values().map(IntIterRepr::U16),
                    ValueType::Int16 => a.values().map(IntIterRepr::I16),
                    ValueType::Uint32 => a.values().map(IntIterRepr::U32),
                    ValueType::Int32 => a.values().map(IntIterRepr::I32),
                    ValueType::Uint64 => a.values().map(IntIterRepr::U64),
                    ValueType::Int64 => a.values().map(IntIterRepr::I64),
                    _ => None,
                };
                // Only integer arrays become an `IntList`, so the fallback is never taken.
                it.unwrap_or(IntIterRepr::Slice([].iter()))
            }
        })
    }

    /// The elements converted to `T` (e.g. `u32`, `usize`), one allocation; an element that
    /// does not fit `T` is [`MetaError::Range`] naming the key and index.
    pub fn to_vec<T: TryFrom<i128>>(&self) -> Result<Vec<T>, StreamError> {
        let mut out = Vec::with_capacity(self.len());
        for (i, v) in self.iter().enumerate() {
            out.push(T::try_from(v).map_err(|_| {
                StreamError::from(MetaError::Range {
                    key: self.key.to_string(),
                    index: Some(i as u64),
                    value: v,
                    target: std::any::type_name::<T>(),
                })
            })?);
        }
        Ok(out)
    }

    /// The parser's view, when the list comes from a GGUF file (typed, zero-copy access with
    /// [`ArrayView::values`]).
    pub fn as_gguf(&self) -> Option<ArrayView<'a>> {
        match self.repr {
            IntRepr::Gguf(a) => Some(a),
            IntRepr::Llmw(_) | IntRepr::Slice(_) => None,
        }
    }

    /// The `.llmw` parser's view, when the list comes from a `.llmw` file.
    pub fn as_llmw(&self) -> Option<Numbers<'a, i64>> {
        match self.repr {
            IntRepr::Llmw(a) => Some(a),
            IntRepr::Gguf(_) | IntRepr::Slice(_) => None,
        }
    }
}

impl fmt::Debug for IntList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntList").field("key", &self.key).field("len", &self.len()).finish()
    }
}

/// Lists are equal when their elements are (the key is context, not value).
impl PartialEq for IntList<'_> {
    fn eq(&self, other: &IntList<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a> IntoIterator for IntList<'a> {
    type Item = i128;
    type IntoIter = IntIter<'a>;
    fn into_iter(self) -> IntIter<'a> {
        self.iter()
    }
}

/// Iterator over an [`IntList`].
#[derive(Debug, Clone)]
pub struct IntIter<'a>(IntIterRepr<'a>);

#[derive(Debug, Clone)]
enum IntIterRepr<'a> {
    U8(Values<'a, u8>),
    I8(Values<'a, i8>),
    U16(Values<'a, u16>),
    I16(Values<'a, i16>),
    U32(Values<'a, u32>),
    I32(Values<'a, i32>),
    U64(Values<'a, u64>),
    I64(Values<'a, i64>),
    Llmw(NumberIter<'a, i64>),
    Slice(std::slice::Iter<'a, i64>),
}

impl Iterator for IntIter<'_> {
    type Item = i128;

    #[inline]
    fn next(&mut self) -> Option<i128> {
        match &mut self.0 {
            IntIterRepr::U8(it) => it.next().map(i128::from),
            IntIterRepr::I8(it) => it.next().map(i128::from),
            IntIterRepr::U16(it) => it.next().map(i128::from),
            IntIterRepr::I16(it) => it.next().map(i128::from),
            IntIterRepr::U32(it) => it.next().map(i128::from),
            IntIterRepr::I32(it) => it.next().map(i128::from),
            IntIterRepr::U64(it) => it.next().map(i128::from),
            IntIterRepr::I64(it) => it.next().map(i128::from),
            IntIterRepr::Llmw(it) => it.next().map(i128::from),
            IntIterRepr::Slice(it) => it.next().map(|&v| i128::from(v)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IntIterRepr::U8(it) => it.size_hint(),
            IntIterRepr::I8(it) => it.size_hint(),
            IntIterRepr::U16(it) => it.size_hint(),
            IntIterRepr::I16(it) => it.size_hint(),
            IntIterRepr::U32(it) => it.size_hint(),
            IntIterRepr::I32(it) => it.size_hint(),
            IntIterRepr::U64(it) => it.size_hint(),
            IntIterRepr::I64(it) => it.size_hint(),
            IntIterRepr::Llmw(it) => it.size_hint(),
            IntIterRepr::Slice(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for IntIter<'_> {}

// ----- float lists -----------------------------------------------------------------------------

/// A list of floats: a GGUF `FLOAT32`/`FLOAT64` array, a `.llmw` `f64` array, or a slice of
/// `f64`.
#[derive(Clone, Copy)]
pub struct FloatList<'a> {
    key: MetaStr<'a>,
    repr: FloatRepr<'a>,
}

#[derive(Clone, Copy)]
enum FloatRepr<'a> {
    Gguf(ArrayView<'a>),
    Llmw(Numbers<'a, f64>),
    Slice(&'a [f64]),
}

impl<'a> FloatList<'a> {
    /// A list over `values` (for formats that store `f64`).
    pub fn from_slice(key: &'a str, values: &'a [f64]) -> FloatList<'a> {
        FloatList { key: key.into(), repr: FloatRepr::Slice(values) }
    }

    /// A list over a `.llmw` `f64` array (decoded as iterated, not copied).
    pub fn from_llmw(key: &'a str, values: Numbers<'a, f64>) -> FloatList<'a> {
        FloatList { key: key.into(), repr: FloatRepr::Llmw(values) }
    }

    /// The key this list is stored under.
    pub fn key(&self) -> MetaStr<'a> {
        self.key
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self.repr {
            FloatRepr::Gguf(a) => len_of(a.len()),
            FloatRepr::Llmw(a) => a.len(),
            FloatRepr::Slice(s) => s.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `index`, in O(1).
    pub fn get(&self, index: usize) -> Option<f64> {
        match self.repr {
            FloatRepr::Gguf(a) => match a.get(index as u64)? {
                MetaValue::Float32(v) => Some(v.into()),
                MetaValue::Float64(v) => Some(v),
                _ => None,
            },
            FloatRepr::Llmw(a) => a.get(index),
            FloatRepr::Slice(s) => s.get(index).copied(),
        }
    }

    /// The elements as `f64` (`FLOAT32` widened exactly), decoded as they are iterated.
    pub fn iter(&self) -> FloatIter<'a> {
        FloatIter(match self.repr {
            FloatRepr::Slice(s) => FloatIterRepr::Slice(s.iter()),
            FloatRepr::Llmw(a) => FloatIterRepr::Llmw(a.iter()),
            FloatRepr::Gguf(a) => a
                .values()
                .map(FloatIterRepr::F32)
                .or_else(|| a.values().map(FloatIterRepr::F64))
                .unwrap_or(FloatIterRepr::Slice([].iter())),
        })
    }

    /// Element `index` as `f32`, in O(1): exact for `FLOAT32` storage, rounded to nearest
    /// otherwise.
    pub fn get_f32(&self, index: usize) -> Option<f32> {
        self.get(index).map(|v| v as f32)
    }

    /// The elements as `f32`, decoded as they are iterated (no allocation): exact for
    /// `FLOAT32` storage (widening to `f64` and back is the identity), rounded to nearest
    /// otherwise.
    pub fn iter_f32(&self) -> FloatIterF32<'a> {
        FloatIterF32(self.iter())
    }

    /// True when the elements are stored as 32-bit floats (a GGUF `FLOAT32` array), so the
    /// `f32` accessors lose nothing.
    pub fn is_f32(&self) -> bool {
        matches!(self.repr, FloatRepr::Gguf(a) if a.elem_type() == ValueType::Float32)
    }

    /// The elements as `f64`, one allocation.
    pub fn to_vec(&self) -> Vec<f64> {
        self.iter().collect()
    }

    /// The elements as `f32`, one allocation: exact for `FLOAT32` storage, rounded to nearest
    /// otherwise.
    pub fn to_vec_f32(&self) -> Vec<f32> {
        match self.repr {
            FloatRepr::Gguf(a) => match a.to_vec::<f32>() {
                Some(v) => v,
                None => self.iter().map(|v| v as f32).collect(),
            },
            FloatRepr::Llmw(_) | FloatRepr::Slice(_) => self.iter().map(|v| v as f32).collect(),
        }
    }

    /// The parser's view, when the list comes from a GGUF file.
    pub fn as_gguf(&self) -> Option<ArrayView<'a>> {
        match self.repr {
            FloatRepr::Gguf(a) => Some(a),
            FloatRepr::Llmw(_) | FloatRepr::Slice(_) => None,
        }
    }

    /// The `.llmw` parser's view, when the list comes from a `.llmw` file.
    pub fn as_llmw(&self) -> Option<Numbers<'a, f64>> {
        match self.repr {
            FloatRepr::Llmw(a) => Some(a),
            FloatRepr::Gguf(_) | FloatRepr::Slice(_) => None,
        }
    }
}

impl fmt::Debug for FloatList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloatList").field("key", &self.key).field("len", &self.len()).finish()
    }
}

/// Lists are equal when their elements are (the key is context, not value).
impl PartialEq for FloatList<'_> {
    fn eq(&self, other: &FloatList<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a> IntoIterator for FloatList<'a> {
    type Item = f64;
    type IntoIter = FloatIter<'a>;
    fn into_iter(self) -> FloatIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`FloatList`].
#[derive(Debug, Clone)]
pub struct FloatIter<'a>(FloatIterRepr<'a>);

#[derive(Debug, Clone)]
enum FloatIterRepr<'a> {
    F32(Values<'a, f32>),
    F64(Values<'a, f64>),
    Llmw(NumberIter<'a, f64>),
    Slice(std::slice::Iter<'a, f64>),
}

impl Iterator for FloatIter<'_> {
    type Item = f64;

    #[inline]
    fn next(&mut self) -> Option<f64> {
        match &mut self.0 {
            FloatIterRepr::F32(it) => it.next().map(f64::from),
            FloatIterRepr::F64(it) => it.next(),
            FloatIterRepr::Llmw(it) => it.next(),
            FloatIterRepr::Slice(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            FloatIterRepr::F32(it) => it.size_hint(),
            FloatIterRepr::F64(it) => it.size_hint(),
            FloatIterRepr::Llmw(it) => it.size_hint(),
            FloatIterRepr::Slice(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for FloatIter<'_> {}

/// Iterator over a [`FloatList`] as `f32` ([`FloatList::iter_f32`]).
#[derive(Debug, Clone)]
pub struct FloatIterF32<'a>(FloatIter<'a>);

impl Iterator for FloatIterF32<'_> {
    type Item = f32;

    #[inline]
    fn next(&mut self) -> Option<f32> {
        self.0.next().map(|v| v as f32)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for FloatIterF32<'_> {}

// ----- string lists ----------------------------------------------------------------------------

/// A list of strings: a GGUF or `.llmw` string array (iterated without allocating), or a
/// slice of `String` or `&str`.
#[derive(Clone, Copy)]
pub struct StrList<'a> {
    key: MetaStr<'a>,
    repr: StrRepr<'a>,
}

#[derive(Clone, Copy)]
enum StrRepr<'a> {
    Gguf(ArrayView<'a>),
    Llmw(StrArray<'a>),
    Owned(&'a [String]),
    Borrowed(&'a [&'a str]),
}

impl<'a> StrList<'a> {
    /// A list over owned strings.
    pub fn from_strings(key: &'a str, values: &'a [String]) -> StrList<'a> {
        StrList { key: key.into(), repr: StrRepr::Owned(values) }
    }

    /// A list over borrowed strings.
    pub fn from_strs(key: &'a str, values: &'a [&'a str]) -> StrList<'a> {
        StrList { key: key.into(), repr: StrRepr::Borrowed(values) }
    }

    /// A list over a `.llmw` string array (iterated without allocating).
    pub fn from_llmw(key: &'a str, values: StrArray<'a>) -> StrList<'a> {
        StrList { key: key.into(), repr: StrRepr::Llmw(values) }
    }

    /// The key this list is stored under.
    pub fn key(&self) -> MetaStr<'a> {
        self.key
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self.repr {
            StrRepr::Gguf(a) => len_of(a.len()),
            StrRepr::Llmw(a) => a.len(),
            StrRepr::Owned(s) => s.len(),
            StrRepr::Borrowed(s) => s.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `index`: O(1) for slices, O(index) for files (strings have variable size; to
    /// look up many, collect [`to_vec`](Self::to_vec) once).
    pub fn get(&self, index: usize) -> Option<MetaStr<'a>> {
        self.iter().nth(index)
    }

    /// The elements, borrowed from the source; no allocation.
    pub fn iter(&self) -> StrIter<'a> {
        StrIter(match self.repr {
            StrRepr::Gguf(a) => match a.strings() {
                Some(s) => StrIterRepr::Gguf(s),
                None => StrIterRepr::Borrowed([].iter()),
            },
            StrRepr::Llmw(a) => StrIterRepr::Llmw { it: a.iter(), remaining: a.len() },
            StrRepr::Owned(s) => StrIterRepr::Owned(s.iter()),
            StrRepr::Borrowed(s) => StrIterRepr::Borrowed(s.iter()),
        })
    }

    /// The elements as `&str`, one allocation (for the vector, not the strings); an element
    /// that is not UTF-8 is [`MetaError::Utf8`] naming the key and index.
    pub fn to_vec(&self) -> Result<Vec<&'a str>, StreamError> {
        let mut out = Vec::with_capacity(self.len());
        for (i, t) in self.iter().enumerate() {
            out.push(t.as_str().ok_or_else(|| {
                StreamError::from(MetaError::Utf8 {
                    key: self.key.to_string(),
                    index: Some(i as u64),
                })
            })?);
        }
        Ok(out)
    }

    /// The parser's view, when the list comes from a GGUF file.
    pub fn as_gguf(&self) -> Option<ArrayView<'a>> {
        match self.repr {
            StrRepr::Gguf(a) => Some(a),
            _ => None,
        }
    }

    /// The `.llmw` parser's view, when the list comes from a `.llmw` file.
    pub fn as_llmw(&self) -> Option<StrArray<'a>> {
        match self.repr {
            StrRepr::Llmw(a) => Some(a),
            _ => None,
        }
    }
}

impl fmt::Debug for StrList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrList").field("key", &self.key).field("len", &self.len()).finish()
    }
}

/// Lists are equal when their elements are (the key is context, not value).
impl PartialEq for StrList<'_> {
    fn eq(&self, other: &StrList<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<'a> IntoIterator for StrList<'a> {
    type Item = MetaStr<'a>;
    type IntoIter = StrIter<'a>;
    fn into_iter(self) -> StrIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`StrList`].
#[derive(Debug, Clone)]
pub struct StrIter<'a>(StrIterRepr<'a>);

#[derive(Debug, Clone)]
enum StrIterRepr<'a> {
    Gguf(Strings<'a>),
    /// The `.llmw` iterator only bounds its length from above (it stops early on bytes that
    /// were not validated); `remaining` makes the size exact, as `ExactSizeIterator` requires.
    Llmw {
        it: sipllm_llmw::StrIter<'a>,
        remaining: usize,
    },
    Owned(std::slice::Iter<'a, String>),
    Borrowed(std::slice::Iter<'a, &'a str>),
}

impl<'a> Iterator for StrIter<'a> {
    type Item = MetaStr<'a>;

    #[inline]
    fn next(&mut self) -> Option<MetaStr<'a>> {
        match &mut self.0 {
            StrIterRepr::Gguf(it) => it.next(),
            StrIterRepr::Llmw { it, remaining } => match it.next() {
                Some(s) => {
                    *remaining = remaining.saturating_sub(1);
                    Some(MetaStr::from_bytes(s.as_bytes()))
                }
                None => {
                    *remaining = 0;
                    None
                }
            },
            StrIterRepr::Owned(it) => it.next().map(|s| MetaStr::from_bytes(s.as_bytes())),
            StrIterRepr::Borrowed(it) => it.next().map(|s| MetaStr::from_bytes(s.as_bytes())),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            StrIterRepr::Gguf(it) => it.size_hint(),
            StrIterRepr::Llmw { remaining, .. } => (*remaining, Some(*remaining)),
            StrIterRepr::Owned(it) => it.size_hint(),
            StrIterRepr::Borrowed(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for StrIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_lists_convert_and_report_range_errors() {
        let ints = [1i64, -2, 300];
        let list = IntList::from_slice("k.ints", &ints);
        assert_eq!(list.len(), 3);
        assert_eq!(list.get(1), Some(-2));
        assert_eq!(list.to_vec::<i32>().unwrap(), vec![1, -2, 300]);
        let err = list.to_vec::<u8>().unwrap_err();
        assert_eq!(err.code(), "streaming::meta::out_of_range");
        assert_eq!(err.to_string(), "metadata key \"k.ints\"[1]: value -2 does not fit u8");

        let floats = [0.5f64, 1e-5];
        let fl = FloatList::from_slice("k.f", &floats);
        assert_eq!(fl.to_vec(), floats);
        assert_eq!(fl.to_vec_f32(), vec![0.5f32, 1e-5f32]);

        let strings = vec!["a".to_string(), "bc".to_string()];
        let sl = StrList::from_strings("k.s", &strings);
        let strs = ["a", "bc"];
        assert_eq!(sl, StrList::from_strs("other", &strs), "equality ignores the key");
        assert_eq!(sl.to_vec().unwrap(), vec!["a", "bc"]);
        assert_eq!(sl.get(1), Some(MetaStr::from("bc")));
    }

    #[test]
    fn expect_names_key_and_types() {
        let e = expect("a.b", Some(Meta::Float(1.0)), MetaKind::Int, Meta::as_int).unwrap_err();
        assert_eq!(e.code(), "streaming::meta::type_mismatch");
        assert_eq!(e.to_string(), "metadata key \"a.b\": expected integer, found float");
        let e = expect("a.c", None, MetaKind::Int, Meta::as_int).unwrap_err();
        assert_eq!(e.code(), "streaming::meta::missing");
        assert_eq!(e.to_string(), "metadata key \"a.c\" is missing");
        assert_eq!(expect("a.d", Some(Meta::Int(7)), MetaKind::Int, Meta::as_int).unwrap(), 7);
    }
}
