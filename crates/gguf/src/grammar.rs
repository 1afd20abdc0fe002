//! The GGUF grammar as nom 8 combinators.
//!
//! Every parser here is a *streaming* parser over `&[u8]`: when its input ends early it
//! returns `Incomplete` with the number of bytes still missing, which the [`Decoder`] turns into
//! [`Event::NeedMore`](crate::Event::NeedMore). Parsers that can fail for a reason other than
//! missing bytes return `nom::Err::Failure` carrying an [`ErrorKind`] and the input position of
//! the offending field; the decoder turns that position into an absolute offset.
//!
//! The same primitives serve the decoder (which validates) and the value views (which decode
//! already-validated bytes), so there is one definition of every on-disk encoding.
//!
//! [`Decoder`]: crate::Decoder

use nom::error::ParseError;
use nom::number::Endianness;
use nom::{IResult, Parser};

use crate::error::{ErrorKind, PathSeg};
use crate::header::Endian;

/// How numbers and lengths are encoded: byte order, and whether string lengths, array counts
/// and dimensions are 64-bit (v2, v3) or 32-bit (v1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Encoding {
    pub(crate) endian: Endian,
    pub(crate) wide: bool,
}

impl Encoding {
    pub(crate) const V3_LE: Encoding = Encoding { endian: Endian::Little, wide: true };

    fn nom(self) -> Endianness {
        match self.endian {
            Endian::Little => Endianness::Little,
            Endian::Big => Endianness::Big,
        }
    }

    /// Size in bytes of a length, count or dimension field.
    pub(crate) fn len_size(self) -> usize {
        if self.wide { 8 } else { 4 }
    }
}

/// The parse error carried through nom: where (a suffix of the input) and, for semantic
/// failures, what. `kind: None` is a plain grammar mismatch, which GGUF's grammar cannot
/// produce except through [`ErrorKind`]-carrying failures; it is kept for nom's trait.
#[derive(Debug)]
pub(crate) struct PErr<'a> {
    pub(crate) at: &'a [u8],
    pub(crate) kind: Option<ErrorKind>,
    /// Length of the offending field, for the error's byte range.
    pub(crate) len: u64,
    /// The field of the enclosing item, if known.
    pub(crate) field: Option<PathSeg>,
}

impl<'a> PErr<'a> {
    pub(crate) fn fail(at: &'a [u8], len: u64, kind: ErrorKind) -> nom::Err<PErr<'a>> {
        nom::Err::Failure(PErr { at, kind: Some(kind), len, field: None })
    }
}

impl<'a> ParseError<&'a [u8]> for PErr<'a> {
    fn from_error_kind(input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        PErr { at: input, kind: None, len: 0, field: None }
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        // Keep the innermost error: it has the most precise position.
        other
    }
}

pub(crate) type PResult<'a, T> = IResult<&'a [u8], T, PErr<'a>>;

/// Tags errors from `parser` with the field they occurred in (unless an inner parser already
/// named a more precise one).
pub(crate) fn field<'a, O>(
    seg: PathSeg,
    mut parser: impl Parser<&'a [u8], Output = O, Error = PErr<'a>>,
) -> impl Parser<&'a [u8], Output = O, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        parser.parse(i).map_err(|e| {
            e.map(|mut pe| {
                if pe.field.is_none() {
                    pe.field = Some(seg.clone());
                }
                pe
            })
        })
    }
}

pub(crate) fn u32_<'a>(enc: Encoding) -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    nom::number::u32(enc.nom())
}

pub(crate) fn u64_<'a>(enc: Encoding) -> impl Parser<&'a [u8], Output = u64, Error = PErr<'a>> {
    nom::number::u64(enc.nom())
}

/// A length, count or dimension: `u64` in v2/v3, `u32` in v1.
pub(crate) fn len_field<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = u64, Error = PErr<'a>> {
    move |i: &'a [u8]| len_field_at(enc, i)
}

/// [`len_field`] as a plain nom parser function: the vocabulary hot loop calls it once per
/// string, and the generic combinator machinery did not inline there (it was half the parse).
#[inline]
pub(crate) fn len_field_at(enc: Encoding, i: &[u8]) -> PResult<'_, u64> {
    let width = enc.len_size();
    let Some((head, rest)) = i.split_at_checked(width) else {
        return Err(incomplete(width - i.len()));
    };
    let mut word = [0u8; 8];
    let v = match (enc.wide, enc.endian) {
        (true, Endian::Little) => {
            word.copy_from_slice(head);
            u64::from_le_bytes(word)
        }
        (true, Endian::Big) => {
            word.copy_from_slice(head);
            u64::from_be_bytes(word)
        }
        (false, Endian::Little) => {
            word[..4].copy_from_slice(head);
            u64::from(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
        }
        (false, Endian::Big) => {
            word[..4].copy_from_slice(head);
            u64::from(u32::from_be_bytes([word[0], word[1], word[2], word[3]]))
        }
    };
    Ok((rest, v))
}

/// `count` bytes, or `Incomplete` with exactly the number missing.
pub(crate) fn bytes<'a>(count: u64) -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    move |i: &'a [u8]| bytes_at(count, i)
}

/// [`bytes`] as a plain nom parser function (the hot loop's).
#[inline]
pub(crate) fn bytes_at(count: u64, i: &[u8]) -> PResult<'_, &[u8]> {
    match usize::try_from(count) {
        Ok(n) => match i.split_at_checked(n) {
            Some((taken, rest)) => Ok((rest, taken)),
            None => Err(incomplete(n - i.len())),
        },
        // More than the address space: it can never be present.
        Err(_) => Err(nom::Err::Incomplete(nom::Needed::Unknown)),
    }
}

fn incomplete<'a>(missing: usize) -> nom::Err<PErr<'a>> {
    match std::num::NonZeroUsize::new(missing) {
        Some(n) => nom::Err::Incomplete(nom::Needed::Size(n)),
        None => nom::Err::Incomplete(nom::Needed::Unknown),
    }
}

/// A GGUF string: length then bytes, without validation (for already-validated bytes).
pub(crate) fn string<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    move |i: &'a [u8]| string_at(enc, i)
}

/// [`string`] as a plain nom parser function (what the value views iterate with).
#[inline]
pub(crate) fn string_at(enc: Encoding, i: &[u8]) -> PResult<'_, &[u8]> {
    let (rest, len) = len_field_at(enc, i)?;
    bytes_at(len, rest)
}

/// The fixed header: magic, version word, then the two counts in the file's encoding.
/// Returns the raw magic and version word; the caller decides the encoding from the version
/// word and parses the counts with [`counts`].
pub(crate) fn magic_and_version<'a>()
-> impl Parser<&'a [u8], Output = ([u8; 4], [u8; 4]), Error = PErr<'a>> {
    (field(PathSeg::Header("magic"), bytes(4)), field(PathSeg::Header("version"), bytes(4))).map(
        |(m, v): (&[u8], &[u8])| {
            let mut magic = [0u8; 4];
            magic.copy_from_slice(m);
            let mut version = [0u8; 4];
            version.copy_from_slice(v);
            (magic, version)
        },
    )
}

/// `tensor_count` and `kv_count` (`u64` in v2/v3, `u32` in v1).
pub(crate) fn counts<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = (u64, u64), Error = PErr<'a>> {
    (
        field(PathSeg::Header("tensor_count"), len_field(enc)),
        field(PathSeg::Header("kv_count"), len_field(enc)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_length_prefixed_in_the_file_encoding() {
        let le = [3, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c', b'!'];
        let (rest, s) = string(Encoding::V3_LE).parse(&le[..]).unwrap();
        assert_eq!((s, rest), (&b"abc"[..], &b"!"[..]));
        let be = [0, 0, 0, 0, 0, 0, 0, 2, b'h', b'i'];
        let enc = Encoding { endian: Endian::Big, wide: true };
        assert_eq!(string(enc).parse(&be[..]).unwrap().1, b"hi");
        let v1 = [2, 0, 0, 0, b'h', b'i'];
        let enc = Encoding { endian: Endian::Little, wide: false };
        assert_eq!(string(enc).parse(&v1[..]).unwrap().1, b"hi");
    }

    #[test]
    fn incomplete_reports_exactly_what_is_missing() {
        let le = [10, 0, 0, 0, 0, 0, 0, 0, b'a'];
        match string(Encoding::V3_LE).parse(&le[..]) {
            Err(nom::Err::Incomplete(nom::Needed::Size(n))) => assert_eq!(n.get(), 9),
            other => panic!("{other:?}"),
        }
        match string(Encoding::V3_LE).parse(&le[..3]) {
            Err(nom::Err::Incomplete(nom::Needed::Size(n))) => assert_eq!(n.get(), 5),
            other => panic!("{other:?}"),
        }
    }
}
