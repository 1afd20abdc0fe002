//! Metadata values: the six type tags and zero-copy views that decode on demand.
//!
//! A parsed file records only spans. [`MetaValue`] decodes a scalar when asked; a string is a
//! `&str` borrowing the header bytes; an array is a view over the stored element bytes with
//! typed iterators. Nothing here allocates unless you ask for a `Vec`.

use std::fmt;
use std::marker::PhantomData;

use nom::Parser;

use crate::grammar;

/// A metadata type tag (the `u8` before each value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetaType {
    /// Tag 0: a little-endian `i64`.
    I64,
    /// Tag 1: a little-endian IEEE-754 `f64`.
    F64,
    /// Tag 2: a `u32`-length UTF-8 string.
    Str,
    /// Tag 3 (version 2): a `u32` count, then that many `i64`.
    I64Array,
    /// Tag 4 (version 2): a `u32` count, then that many `f64`.
    F64Array,
    /// Tag 5 (version 2): a `u32` count, then that many strings.
    StrArray,
}

impl MetaType {
    /// All types in tag order.
    pub const ALL: [MetaType; 6] = [
        MetaType::I64,
        MetaType::F64,
        MetaType::Str,
        MetaType::I64Array,
        MetaType::F64Array,
        MetaType::StrArray,
    ];

    /// The type for a stored tag, if valid (0–5).
    pub fn from_tag(tag: u8) -> Option<MetaType> {
        Self::ALL.get(usize::from(tag)).copied()
    }

    /// The stored tag.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// True for the array types (tags 3–5).
    pub fn is_array(self) -> bool {
        matches!(self, MetaType::I64Array | MetaType::F64Array | MetaType::StrArray)
    }

    /// The first format version with this type: 1 for scalars, 2 for arrays.
    pub fn min_version(self) -> u32 {
        if self.is_array() { 2 } else { 1 }
    }

    /// The name as the docs spell it: `i64`, `f64`, `string`, `i64[]`, `f64[]`, `string[]`.
    pub fn name(self) -> &'static str {
        match self {
            MetaType::I64 => "i64",
            MetaType::F64 => "f64",
            MetaType::Str => "string",
            MetaType::I64Array => "i64[]",
            MetaType::F64Array => "f64[]",
            MetaType::StrArray => "string[]",
        }
    }
}

impl fmt::Display for MetaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decoded metadata value, borrowing strings and arrays from the header bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum MetaValue<'a> {
    /// An `i64`.
    I64(i64),
    /// An `f64` (any bit pattern, NaN included, is stored as is).
    F64(f64),
    /// A string.
    Str(&'a str),
    /// An array of `i64`.
    I64Array(Numbers<'a, i64>),
    /// An array of `f64`.
    F64Array(Numbers<'a, f64>),
    /// An array of strings.
    StrArray(StrArray<'a>),
}

impl<'a> MetaValue<'a> {
    /// The value's type.
    pub fn meta_type(&self) -> MetaType {
        match self {
            MetaValue::I64(_) => MetaType::I64,
            MetaValue::F64(_) => MetaType::F64,
            MetaValue::Str(_) => MetaType::Str,
            MetaValue::I64Array(_) => MetaType::I64Array,
            MetaValue::F64Array(_) => MetaType::F64Array,
            MetaValue::StrArray(_) => MetaType::StrArray,
        }
    }

    /// An `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            MetaValue::I64(v) => Some(v),
            _ => None,
        }
    }

    /// An `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F64(v) => Some(v),
            _ => None,
        }
    }

    /// A string.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            MetaValue::Str(v) => Some(v),
            _ => None,
        }
    }

    /// An `i64` array.
    pub fn as_i64_array(&self) -> Option<Numbers<'a, i64>> {
        match *self {
            MetaValue::I64Array(v) => Some(v),
            _ => None,
        }
    }

    /// An `f64` array.
    pub fn as_f64_array(&self) -> Option<Numbers<'a, f64>> {
        match *self {
            MetaValue::F64Array(v) => Some(v),
            _ => None,
        }
    }

    /// A string array.
    pub fn as_str_array(&self) -> Option<StrArray<'a>> {
        match *self {
            MetaValue::StrArray(v) => Some(v),
            _ => None,
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

/// An array element type with a fixed 8-byte little-endian encoding: `i64` or `f64`.
pub trait Number: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn from_le(bytes: [u8; 8]) -> Self;
}

impl Number for i64 {
    fn from_le(bytes: [u8; 8]) -> i64 {
        i64::from_le_bytes(bytes)
    }
}

impl Number for f64 {
    fn from_le(bytes: [u8; 8]) -> f64 {
        f64::from_le_bytes(bytes)
    }
}

fn decode_number<T: Number>(b: &[u8]) -> Option<T> {
    b.try_into().ok().map(T::from_le)
}

/// An array of `i64` or `f64`: a view over the stored element bytes, O(1) indexing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Numbers<'a, T> {
    payload: &'a [u8],
    _t: PhantomData<T>,
}

impl<'a, T: Number> Numbers<'a, T> {
    pub(crate) fn new(payload: &'a [u8]) -> Numbers<'a, T> {
        Numbers { payload, _t: PhantomData }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.payload.len() / 8
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.payload.len() < 8
    }

    /// Element `index`.
    pub fn get(&self, index: usize) -> Option<T> {
        let start = index.checked_mul(8)?;
        decode_number(self.payload.get(start..start.checked_add(8)?)?)
    }

    /// The element bytes exactly as stored (little-endian, 8 bytes each).
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Iterates over the elements.
    pub fn iter(&self) -> NumberIter<'a, T> {
        NumberIter { chunks: self.payload.chunks_exact(8), _t: PhantomData }
    }

    /// The elements collected into a `Vec` (one allocation).
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }
}

impl<T> fmt::Debug for Numbers<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Numbers")
            .field("type", &std::any::type_name::<T>())
            .field("len", &(self.payload.len() / 8))
            .finish()
    }
}

impl<'a, T: Number> IntoIterator for Numbers<'a, T> {
    type Item = T;
    type IntoIter = NumberIter<'a, T>;

    fn into_iter(self) -> NumberIter<'a, T> {
        self.iter()
    }
}

/// Iterator over a [`Numbers`] array.
#[derive(Debug, Clone)]
pub struct NumberIter<'a, T> {
    chunks: std::slice::ChunksExact<'a, u8>,
    _t: PhantomData<T>,
}

impl<T: Number> Iterator for NumberIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.chunks.next().and_then(decode_number)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

impl<T: Number> ExactSizeIterator for NumberIter<'_, T> {}

impl<T: Number> DoubleEndedIterator for NumberIter<'_, T> {
    fn next_back(&mut self) -> Option<T> {
        self.chunks.next_back().and_then(decode_number)
    }
}

/// An array of strings: a view over the stored elements (each a `u32` length and UTF-8
/// bytes). Iteration borrows each string from the header bytes without allocating; indexing
/// walks from the start (elements have variable size).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StrArray<'a> {
    payload: &'a [u8],
    len: u32,
}

impl<'a> StrArray<'a> {
    pub(crate) fn new(payload: &'a [u8], len: u32) -> StrArray<'a> {
        StrArray { payload, len }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element bytes exactly as stored (length fields included).
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Iterates over the strings.
    pub fn iter(&self) -> StrIter<'a> {
        StrIter { rest: self.payload, remaining: self.len }
    }

    /// Element `index`, in O(index).
    pub fn get(&self, index: usize) -> Option<&'a str> {
        self.iter().nth(index)
    }
}

impl fmt::Debug for StrArray<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrArray")
            .field("len", &self.len)
            .field("payload_bytes", &self.payload.len())
            .finish()
    }
}

impl<'a> IntoIterator for StrArray<'a> {
    type Item = &'a str;
    type IntoIter = StrIter<'a>;

    fn into_iter(self) -> StrIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`StrArray`].
///
/// The decoder validated every element, so iteration only stops early if the bytes are not the
/// ones the directory was decoded from (never a panic).
#[derive(Debug, Clone)]
pub struct StrIter<'a> {
    rest: &'a [u8],
    remaining: u32,
}

impl<'a> Iterator for StrIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.remaining == 0 {
            return None;
        }
        let parsed = grammar::string().parse(self.rest).ok();
        let Some((rest, s)) = parsed else {
            self.remaining = 0;
            return None;
        };
        let Ok(s) = simdutf8::basic::from_utf8(s) else {
            self.remaining = 0;
            return None;
        };
        self.rest = rest;
        self.remaining -= 1;
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for (tag, ty) in MetaType::ALL.iter().enumerate() {
            assert_eq!(MetaType::from_tag(tag as u8), Some(*ty));
            assert_eq!(ty.tag(), tag as u8);
        }
        assert_eq!(MetaType::from_tag(6), None);
        assert_eq!(MetaType::from_tag(255), None);
        assert_eq!(MetaType::Str.min_version(), 1);
        assert_eq!(MetaType::StrArray.min_version(), 2);
    }

    #[test]
    fn number_arrays_decode() {
        let payload: Vec<u8> = [1i64, -2, i64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = Numbers::<i64>::new(&payload);
        assert_eq!(a.len(), 3);
        assert_eq!(a.to_vec(), vec![1, -2, i64::MAX]);
        assert_eq!(a.get(1), Some(-2));
        assert_eq!(a.get(3), None);
        assert_eq!(a.get(usize::MAX), None);
        assert_eq!(a.iter().next_back(), Some(i64::MAX));
    }

    #[test]
    fn string_arrays_iterate_and_stop_on_foreign_bytes() {
        let mut payload = Vec::new();
        for s in ["a", "", "héllo"] {
            payload.extend((s.len() as u32).to_le_bytes());
            payload.extend(s.as_bytes());
        }
        let a = StrArray::new(&payload, 3);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec!["a", "", "héllo"]);
        assert_eq!(a.get(2), Some("héllo"));
        assert_eq!(a.get(3), None);
        // A count larger than the payload (bytes that were not decoded): stops, no panic.
        let a = StrArray::new(&payload, 9);
        assert_eq!(a.iter().count(), 3);
        let bad = [1, 0, 0, 0, 0xff];
        assert_eq!(StrArray::new(&bad, 1).iter().count(), 0);
    }
}
