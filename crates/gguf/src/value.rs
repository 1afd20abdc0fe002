//! Metadata values: the 13 value types and zero-copy views that decode on demand.
//!
//! A parsed file records only spans. [`MetaValue`] decodes a scalar when asked; a string is a
//! [`MetaStr`] borrowing the header bytes; an array is an [`ArrayView`] — element type, count
//! and the stored element bytes — with typed iterators. Nothing here allocates unless you ask
//! for a `Vec`.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::str::Utf8Error;

use nom::Parser;
use smallvec::SmallVec;

use crate::grammar::{self, Encoding};
use crate::header::Endian;

pub use crate::value_type::ValueType;

/// A string stored in the file: bytes that are valid UTF-8 unless the lenient profile let
/// invalid ones through.
///
/// Also the string type of `sipllm-streaming`'s collapsed metadata view, for GGUF and `.llmw`
/// alike.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MetaStr<'a>(&'a [u8]);

impl<'a> From<&'a str> for MetaStr<'a> {
    fn from(s: &'a str) -> MetaStr<'a> {
        MetaStr(s.as_bytes())
    }
}

impl<'a> MetaStr<'a> {
    /// Wraps stored bytes.
    pub fn from_bytes(bytes: &'a [u8]) -> MetaStr<'a> {
        MetaStr(bytes)
    }

    /// The stored bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// The string, if it is valid UTF-8 (always, unless parsed leniently).
    pub fn as_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.0).ok()
    }

    /// The string, or why it is not UTF-8.
    pub fn to_str(&self) -> Result<&'a str, Utf8Error> {
        std::str::from_utf8(self.0)
    }

    /// The string with invalid sequences replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.0)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for MetaStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_str() {
            Some(s) => fmt::Debug::fmt(s, f),
            None => write!(f, "b{:?}", self.to_string_lossy()),
        }
    }
}

impl fmt::Display for MetaStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

impl PartialEq<str> for MetaStr<'_> {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for MetaStr<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// A decoded metadata value, borrowing strings and arrays from the header bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)]
pub enum MetaValue<'a> {
    Uint8(u8),
    Int8(i8),
    Uint16(u16),
    Int16(i16),
    Uint32(u32),
    Int32(i32),
    Float32(f32),
    Bool(bool),
    String(MetaStr<'a>),
    Array(ArrayView<'a>),
    Uint64(u64),
    Int64(i64),
    Float64(f64),
}

impl<'a> MetaValue<'a> {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            MetaValue::Uint8(_) => ValueType::Uint8,
            MetaValue::Int8(_) => ValueType::Int8,
            MetaValue::Uint16(_) => ValueType::Uint16,
            MetaValue::Int16(_) => ValueType::Int16,
            MetaValue::Uint32(_) => ValueType::Uint32,
            MetaValue::Int32(_) => ValueType::Int32,
            MetaValue::Float32(_) => ValueType::Float32,
            MetaValue::Bool(_) => ValueType::Bool,
            MetaValue::String(_) => ValueType::String,
            MetaValue::Array(_) => ValueType::Array,
            MetaValue::Uint64(_) => ValueType::Uint64,
            MetaValue::Int64(_) => ValueType::Int64,
            MetaValue::Float64(_) => ValueType::Float64,
        }
    }

    /// Any integer type, as `i128` (lossless for every GGUF integer).
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            MetaValue::Uint8(v) => v.into(),
            MetaValue::Int8(v) => v.into(),
            MetaValue::Uint16(v) => v.into(),
            MetaValue::Int16(v) => v.into(),
            MetaValue::Uint32(v) => v.into(),
            MetaValue::Int32(v) => v.into(),
            MetaValue::Uint64(v) => v.into(),
            MetaValue::Int64(v) => v.into(),
            _ => return None,
        })
    }

    /// Any integer type whose value fits `u64` (so a negative `INT32` gives `None`).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i128().and_then(|v| u64::try_from(v).ok())
    }

    /// Any integer type whose value fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// `FLOAT32` (widened exactly) or `FLOAT64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::Float32(v) => Some(v.into()),
            MetaValue::Float64(v) => Some(v),
            _ => None,
        }
    }

    /// A `BOOL`.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// A `STRING` that is valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        self.as_meta_str().and_then(|s| s.as_str())
    }

    /// A `STRING`, as stored.
    pub fn as_meta_str(&self) -> Option<MetaStr<'a>> {
        match *self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// An `ARRAY`.
    pub fn as_array(&self) -> Option<ArrayView<'a>> {
        match *self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Decodes one fixed-size scalar of type `ty` from exactly its bytes.
    pub(crate) fn decode_fixed(ty: ValueType, b: &[u8], endian: Endian) -> Option<MetaValue<'a>> {
        fn arr<const N: usize>(b: &[u8], endian: Endian) -> Option<[u8; N]> {
            let mut a: [u8; N] = b.try_into().ok()?;
            if endian == Endian::Big {
                a.reverse();
            }
            Some(a)
        }
        Some(match ty {
            ValueType::Uint8 => MetaValue::Uint8(u8::from_le_bytes(arr(b, endian)?)),
            ValueType::Int8 => MetaValue::Int8(i8::from_le_bytes(arr(b, endian)?)),
            ValueType::Uint16 => MetaValue::Uint16(u16::from_le_bytes(arr(b, endian)?)),
            ValueType::Int16 => MetaValue::Int16(i16::from_le_bytes(arr(b, endian)?)),
            ValueType::Uint32 => MetaValue::Uint32(u32::from_le_bytes(arr(b, endian)?)),
            ValueType::Int32 => MetaValue::Int32(i32::from_le_bytes(arr(b, endian)?)),
            ValueType::Float32 => MetaValue::Float32(f32::from_le_bytes(arr(b, endian)?)),
            // llama.cpp reads any non-zero byte as true; strict parsing rejected the others.
            ValueType::Bool => MetaValue::Bool(arr::<1>(b, endian)?[0] != 0),
            ValueType::Uint64 => MetaValue::Uint64(u64::from_le_bytes(arr(b, endian)?)),
            ValueType::Int64 => MetaValue::Int64(i64::from_le_bytes(arr(b, endian)?)),
            ValueType::Float64 => MetaValue::Float64(f64::from_le_bytes(arr(b, endian)?)),
            ValueType::String | ValueType::Array => return None,
        })
    }
}

/// A metadata array: element type, count, and the stored element bytes.
///
/// Iteration decodes elements on the fly. Fixed-size elements support O(1) [`get`]; string
/// and nested arrays are walked sequentially (their elements have variable size).
///
/// [`get`]: ArrayView::get
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ArrayView<'a> {
    elem_type: ValueType,
    len: u64,
    payload: &'a [u8],
    enc: Encoding,
}

impl<'a> ArrayView<'a> {
    pub(crate) fn new(elem_type: ValueType, len: u64, payload: &'a [u8], enc: Encoding) -> Self {
        ArrayView { elem_type, len, payload, enc }
    }

    /// The element type.
    pub fn elem_type(&self) -> ValueType {
        self.elem_type
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element bytes exactly as stored (after the element type and count): what
    /// `payload_sha256` in the corpus expectations hashes.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// Byte order of the elements.
    pub fn endian(&self) -> Endian {
        self.enc.endian
    }

    /// True when string lengths and nested counts are 64-bit (v2, v3); false for v1.
    pub fn is_wide(&self) -> bool {
        self.enc.wide
    }

    /// Every element as a [`MetaValue`].
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter { view: *self, rest: self.payload, remaining: self.len }
    }

    /// Element `index`, in O(1) for fixed-size element types and O(index) otherwise.
    pub fn get(&self, index: u64) -> Option<MetaValue<'a>> {
        if index >= self.len {
            return None;
        }
        match self.elem_type.fixed_size() {
            Some(size) => {
                let start = usize::try_from(index).ok()?.checked_mul(size)?;
                let b = self.payload.get(start..start.checked_add(size)?)?;
                MetaValue::decode_fixed(self.elem_type, b, self.enc.endian)
            }
            None => self.iter().nth(usize::try_from(index).ok()?),
        }
    }

    /// The elements of a `STRING` array, without allocating; `None` for other element types.
    pub fn strings(&self) -> Option<Strings<'a>> {
        (self.elem_type == ValueType::String).then_some(Strings {
            rest: self.payload,
            remaining: self.len,
            enc: self.enc,
        })
    }

    /// The elements as `T` (which must be exactly the element type, e.g. `f32` for
    /// `FLOAT32`); `None` for other element types.
    pub fn values<T: Element>(&self) -> Option<Values<'a, T>> {
        (self.elem_type == T::TYPE).then_some(Values {
            chunks: self.payload.chunks_exact(size_of::<T::Bytes>()),
            endian: self.enc.endian,
            _t: PhantomData,
        })
    }

    /// The elements collected into a `Vec<T>` (one allocation); `None` for other types.
    pub fn to_vec<T: Element>(&self) -> Option<Vec<T>> {
        self.values::<T>().map(Iterator::collect)
    }
}

impl fmt::Debug for ArrayView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArrayView")
            .field("elem_type", &self.elem_type)
            .field("len", &self.len)
            .field("payload_bytes", &self.payload.len())
            .finish()
    }
}

impl<'a> IntoIterator for ArrayView<'a> {
    type Item = MetaValue<'a>;
    type IntoIter = ArrayIter<'a>;

    fn into_iter(self) -> ArrayIter<'a> {
        self.iter()
    }
}

/// Splits one element of type `ty` off the front of `rest`.
fn next_element<'a>(
    ty: ValueType,
    rest: &'a [u8],
    enc: Encoding,
) -> Option<(MetaValue<'a>, &'a [u8])> {
    match ty {
        ValueType::String => {
            let (rest, s) = grammar::string_at(enc, rest).ok()?;
            Some((MetaValue::String(MetaStr(s)), rest))
        }
        ValueType::Array => {
            let (rest, (code, len)) =
                (grammar::u32_(enc), grammar::len_field(enc)).parse(rest).ok()?;
            let elem_type = ValueType::from_code(code)?;
            let size = nested_payload_len(elem_type, len, rest, enc)?;
            let (payload, rest) = rest.split_at_checked(size)?;
            Some((MetaValue::Array(ArrayView::new(elem_type, len, payload, enc)), rest))
        }
        fixed => {
            let size = fixed.fixed_size()?;
            let (b, rest) = rest.split_at_checked(size)?;
            Some((MetaValue::decode_fixed(fixed, b, enc.endian)?, rest))
        }
    }
}

/// Byte length of a (validated) array payload of `len` elements at the front of `rest`.
///
/// Walks nested arrays with an explicit stack, not by recursion: the nesting depth comes from
/// the file (up to `Limits::max_depth`, which callers may raise), and recursing once per level
/// overflowed the thread's stack at a few thousand levels.
fn nested_payload_len(elem_type: ValueType, len: u64, rest: &[u8], enc: Encoding) -> Option<usize> {
    if let Some(size) = elem_type.fixed_size() {
        return usize::try_from(len).ok()?.checked_mul(size);
    }
    // (element type, elements still to skip) per open array, innermost last.
    let mut open: SmallVec<[(ValueType, u64); 8]> = SmallVec::new();
    open.push((elem_type, len));
    let mut cursor = rest;
    while let Some(top) = open.last_mut() {
        if top.1 == 0 {
            open.pop();
            continue;
        }
        top.1 -= 1;
        match top.0 {
            ValueType::Array => {
                let (after, (code, n)) =
                    (grammar::u32_(enc), grammar::len_field(enc)).parse(cursor).ok()?;
                let inner = ValueType::from_code(code)?;
                cursor = after;
                match inner.fixed_size() {
                    Some(size) => {
                        cursor = cursor.get(usize::try_from(n).ok()?.checked_mul(size)?..)?
                    }
                    None => open.push((inner, n)),
                }
            }
            ty => cursor = next_element(ty, cursor, enc)?.1,
        }
    }
    Some(rest.len() - cursor.len())
}

/// Iterator over an array's elements as [`MetaValue`]s.
#[derive(Debug, Clone)]
pub struct ArrayIter<'a> {
    view: ArrayView<'a>,
    rest: &'a [u8],
    remaining: u64,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = MetaValue<'a>;

    fn next(&mut self) -> Option<MetaValue<'a>> {
        if self.remaining == 0 {
            return None;
        }
        let (value, rest) = next_element(self.view.elem_type, self.rest, self.view.enc)?;
        self.rest = rest;
        self.remaining -= 1;
        Some(value)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

/// Iterator over a `STRING` array's elements, borrowing each from the header bytes.
#[derive(Debug, Clone)]
pub struct Strings<'a> {
    rest: &'a [u8],
    remaining: u64,
    enc: Encoding,
}

impl<'a> Iterator for Strings<'a> {
    type Item = MetaStr<'a>;

    fn next(&mut self) -> Option<MetaStr<'a>> {
        if self.remaining == 0 {
            return None;
        }
        let (rest, s) = grammar::string_at(self.enc, self.rest).ok()?;
        self.rest = rest;
        self.remaining -= 1;
        Some(MetaStr(s))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Strings<'_> {}

mod sealed {
    pub trait Sealed {}
}

/// A fixed-size element type an array can be read as (`u8` … `f64`, `bool`).
pub trait Element: Copy + sealed::Sealed {
    /// The GGUF type this Rust type reads.
    const TYPE: ValueType;
    #[doc(hidden)]
    type Bytes: Copy;
    #[doc(hidden)]
    fn decode(bytes: &[u8], endian: Endian) -> Self;
}

macro_rules! element {
    ($t:ty, $vt:ident, $n:literal) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ValueType = ValueType::$vt;
            type Bytes = [u8; $n];
            #[inline]
            fn decode(bytes: &[u8], endian: Endian) -> Self {
                let mut a = [0u8; $n];
                // `chunks_exact` hands out exactly $n bytes.
                a.copy_from_slice(bytes);
                match endian {
                    Endian::Little => <$t>::from_le_bytes(a),
                    Endian::Big => <$t>::from_be_bytes(a),
                }
            }
        }
    };
}

element!(u8, Uint8, 1);
element!(i8, Int8, 1);
element!(u16, Uint16, 2);
element!(i16, Int16, 2);
element!(u32, Uint32, 4);
element!(i32, Int32, 4);
element!(f32, Float32, 4);
element!(u64, Uint64, 8);
element!(i64, Int64, 8);
element!(f64, Float64, 8);

impl sealed::Sealed for bool {}
impl Element for bool {
    const TYPE: ValueType = ValueType::Bool;
    type Bytes = [u8; 1];
    #[inline]
    fn decode(bytes: &[u8], _endian: Endian) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

/// Typed iterator over a fixed-size array's elements.
#[derive(Debug, Clone)]
pub struct Values<'a, T> {
    chunks: std::slice::ChunksExact<'a, u8>,
    endian: Endian,
    _t: PhantomData<T>,
}

impl<T: Element> Iterator for Values<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        self.chunks.next().map(|b| T::decode(b, self.endian))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

impl<T: Element> ExactSizeIterator for Values<'_, T> {}

impl<T: Element> DoubleEndedIterator for Values<'_, T> {
    fn next_back(&mut self) -> Option<T> {
        self.chunks.next_back().map(|b| T::decode(b, self.endian))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_type_codes_and_names() {
        for (code, ty) in ValueType::ALL.iter().enumerate() {
            assert_eq!(ValueType::from_code(code as u32), Some(*ty));
            assert_eq!(ValueType::from_name(ty.name()), Some(*ty));
        }
        assert_eq!(ValueType::from_code(13), None);
        assert!(ValueType::Array.in_v1() && !ValueType::Uint64.in_v1());
    }

    #[test]
    fn arrays_decode_in_both_byte_orders() {
        let le: Vec<u8> = [1u32, 2, 0xdead_beef].iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = [1u32, 2, 0xdead_beef].iter().flat_map(|v| v.to_be_bytes()).collect();
        let a = ArrayView::new(ValueType::Uint32, 3, &le, Encoding::V3_LE);
        let b =
            ArrayView::new(ValueType::Uint32, 3, &be, Encoding { endian: Endian::Big, wide: true });
        assert_eq!(a.to_vec::<u32>(), Some(vec![1, 2, 0xdead_beef]));
        assert_eq!(b.to_vec::<u32>(), a.to_vec::<u32>());
        assert_eq!(b.get(2), Some(MetaValue::Uint32(0xdead_beef)));
        assert_eq!(b.get(3), None);
        assert_eq!(a.values::<i32>().map(|_| ()), None, "element type must match exactly");
    }

    #[test]
    fn nested_arrays_iterate() {
        // [[1u8, 2u8], ["x"]] as stored: each inner array is type + count + elements.
        let mut payload = Vec::new();
        payload.extend(0u32.to_le_bytes());
        payload.extend(2u64.to_le_bytes());
        payload.extend([1, 2]);
        payload.extend(8u32.to_le_bytes());
        payload.extend(1u64.to_le_bytes());
        payload.extend(1u64.to_le_bytes());
        payload.push(b'x');
        let outer = ArrayView::new(ValueType::Array, 2, &payload, Encoding::V3_LE);
        let inner: Vec<_> = outer.iter().map(|v| v.as_array().unwrap()).collect();
        assert_eq!(inner[0].to_vec::<u8>(), Some(vec![1, 2]));
        assert_eq!(inner[1].strings().unwrap().next().unwrap(), "x");
    }
}
