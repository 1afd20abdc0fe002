//! The `.llmw` grammar as nom 8 combinators.
//!
//! Every parser here is a *streaming* parser over `&[u8]`: when its input ends early it
//! returns `Incomplete` with the number of bytes still missing, which the [`Decoder`] turns
//! into [`Event::NeedMore`](crate::Event::NeedMore). Parsers that fail for another reason
//! return `nom::Err::Failure` carrying an [`ErrorKind`] and the input position of the offending
//! field; the decoder turns that position into an absolute offset.
//!
//! The same primitives serve the decoder (which validates) and the value views (which decode
//! already-validated bytes), so every on-disk encoding is defined once. Every number is
//! little-endian.
//!
//! [`Decoder`]: crate::Decoder

use nom::error::ParseError;
use nom::number::Endianness;
use nom::{IResult, Parser};

use crate::error::ErrorKind;

/// The parse error carried through nom: where (a suffix of the input) and, for semantic
/// failures, what. `kind: None` is a plain grammar mismatch, which this grammar cannot produce
/// (every field is a fixed-size number or a length-prefixed byte string); it exists for nom's
/// trait.
#[derive(Debug)]
pub(crate) struct PErr<'a> {
    pub(crate) at: &'a [u8],
    pub(crate) kind: Option<ErrorKind>,
    /// Length of the offending field, for the error's byte range.
    pub(crate) len: u64,
}

impl<'a> PErr<'a> {
    pub(crate) fn fail(at: &'a [u8], len: u64, kind: ErrorKind) -> nom::Err<PErr<'a>> {
        nom::Err::Failure(PErr { at, kind: Some(kind), len })
    }
}

impl<'a> ParseError<&'a [u8]> for PErr<'a> {
    fn from_error_kind(input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        PErr { at: input, kind: None, len: 0 }
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        // Keep the innermost error: it has the most precise position.
        other
    }
}

pub(crate) type PResult<'a, T> = IResult<&'a [u8], T, PErr<'a>>;

/// The four magic bytes.
pub(crate) fn magic<'a>() -> impl Parser<&'a [u8], Output = [u8; 4], Error = PErr<'a>> {
    bytes(4).map(|b: &[u8]| {
        let mut magic = [0u8; 4];
        magic.copy_from_slice(b);
        magic
    })
}

pub(crate) fn u8_<'a>() -> impl Parser<&'a [u8], Output = u8, Error = PErr<'a>> {
    nom::number::u8()
}

pub(crate) fn u32_<'a>() -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    nom::number::u32(Endianness::Little)
}

pub(crate) fn u64_<'a>() -> impl Parser<&'a [u8], Output = u64, Error = PErr<'a>> {
    nom::number::u64(Endianness::Little)
}

pub(crate) fn i64_<'a>() -> impl Parser<&'a [u8], Output = i64, Error = PErr<'a>> {
    nom::number::i64(Endianness::Little)
}

pub(crate) fn f64_<'a>() -> impl Parser<&'a [u8], Output = f64, Error = PErr<'a>> {
    nom::number::f64(Endianness::Little)
}

/// `count` bytes, or `Incomplete` with exactly the number missing.
pub(crate) fn bytes<'a>(count: u64) -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    move |i: &'a [u8]| match usize::try_from(count) {
        Ok(n) => nom::bytes::take(n).parse(i),
        // More than the address space: it can never be present.
        Err(_) => Err(nom::Err::Incomplete(nom::Needed::Unknown)),
    }
}

/// A string: `u32` length, then that many bytes, without validation (for already-validated
/// bytes; the decoder checks limits and UTF-8 itself).
pub(crate) fn string<'a>() -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    u32_().flat_map(|len| bytes(len.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_u32_length_prefixed() {
        let b = [3, 0, 0, 0, b'a', b'b', b'c', b'!'];
        let (rest, s) = string().parse(&b[..]).unwrap();
        assert_eq!((s, rest), (&b"abc"[..], &b"!"[..]));
    }

    #[test]
    fn incomplete_reports_exactly_what_is_missing() {
        let b = [10, 0, 0, 0, b'a'];
        match string().parse(&b[..]) {
            Err(nom::Err::Incomplete(nom::Needed::Size(n))) => assert_eq!(n.get(), 9),
            other => panic!("{other:?}"),
        }
        match string().parse(&b[..3]) {
            Err(nom::Err::Incomplete(nom::Needed::Size(n))) => assert_eq!(n.get(), 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_are_little_endian() {
        let b = (-2i64).to_le_bytes();
        assert_eq!(i64_().parse(&b[..]).unwrap().1, -2);
        let b = 1.5f64.to_le_bytes();
        assert_eq!(f64_().parse(&b[..]).unwrap().1, 1.5);
    }
}
