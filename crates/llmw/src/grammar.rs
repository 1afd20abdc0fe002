//! The `.llmw` grammar as nom 8 combinators: one named parser per on-disk record, each next to
//! what it returns, in file order (the layout is `docs/llmw.md`'s).
//!
//! | record | parsers | layout |
//! | --- | --- | --- |
//! | header | [`magic`], [`version`], [`tensor_count`], [`meta_count`] | `"LLMW"`, `u32` × 3 |
//! | metadata entry | [`meta_key`], [`meta_tag`], then [`number`], [`string_value`], [`number_array`] or [`array_count`] | `str` key, `u8` tag, value |
//! | string element | [`checked_string`] | `u32` length, bytes |
//! | tensor info | [`tensor_name`], [`dtype`], [`tensor_shape`], [`tensor_offset`], [`tensor_size`] | `str` name, `u32` dtype, `u32` n_dims, `u64` × n_dims dims, `u64` offset, `u64` size |
//!
//! Every number is little-endian; every count and length is 32-bit. A record is split after
//! each field that a check ([`crate::rules`]) must judge before the next one is requested, so
//! the error reported is the first problem in file order, whatever the chunking.
//!
//! Every parser is a *streaming* parser over `&[u8]`: when its input ends early it returns
//! `Incomplete` with the number of bytes still missing, which the [`Decoder`] turns into
//! [`Event::NeedMore`](crate::Event::NeedMore). A parser that fails for another reason
//! returns a [`PErr`] with an [`ErrorKind`], the offending field's position and, through
//! [`field`], its name in the error's path. The grammar enforces what the format and the
//! [`Limits`] say (magic, version, tags, `n_dims`, declared lengths, checked before their
//! bytes are requested); the checks that need more than the field are in [`crate::rules`].
//!
//! The same primitives serve the decoder (which validates) and the value views (which decode
//! already-validated bytes), so every on-disk encoding is defined once.
//!
//! [`Decoder`]: crate::Decoder

use nom::Parser;
use nom::number::Endianness;
use smallvec::SmallVec;

use sipllm_format::PathSeg;
pub(crate) use sipllm_format::grammar::{bytes, field, offset_in};

use crate::error::ErrorKind;
use crate::options::Limits;

/// The parse error carried through nom (see [`sipllm_format::grammar::PErr`]).
pub(crate) type PErr<'a> = sipllm_format::grammar::PErr<'a, ErrorKind>;

// ----- primitives ----------------------------------------------------------------------------

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

/// A string: `u32` length, then that many bytes, without validation (for already-validated
/// bytes).
pub(crate) fn string<'a>() -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    u32_().flat_map(|len| bytes(len.into()))
}

/// A string whose declared length is checked against the limits before its bytes are
/// requested: the string limit, and the header limit on where the string would end (`buf` is
/// the whole input, for the absolute end). Errors point at the 4-byte length field.
pub(crate) fn checked_string<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    move |i: &'b [u8]| {
        let (rest, len) = u32_().parse(i)?;
        if len > limits.max_string_len {
            let kind = ErrorKind::StringTooLong { len, max: limits.max_string_len };
            return Err(PErr::fail(i, 4, kind));
        }
        if offset_in(buf, rest).saturating_add(len.into()) > limits.max_header_bytes {
            let kind = ErrorKind::HeaderTooLarge { max: limits.max_header_bytes };
            return Err(PErr::fail(i, 4, kind));
        }
        bytes(len.into()).parse(rest)
    }
}

/// A `u32` field that must pass `check`, else fails with its kind at the field.
fn checked_u32<'a>(
    check: impl Fn(u32) -> Result<(), ErrorKind>,
) -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let (rest, v) = u32_().parse(i)?;
        match check(v) {
            Ok(()) => Ok((rest, v)),
            Err(kind) => Err(PErr::fail(i, 4, kind)),
        }
    }
}

// ----- header --------------------------------------------------------------------------------

/// The four magic bytes, `LLMW`.
pub(crate) fn magic<'a>() -> impl Parser<&'a [u8], Output = (), Error = PErr<'a>> {
    field(PathSeg::Header("magic"), |i: &'a [u8]| {
        let (rest, b) = bytes(4).parse(i)?;
        let mut found = [0u8; 4];
        found.copy_from_slice(b);
        if found == crate::MAGIC {
            Ok((rest, ()))
        } else {
            Err(PErr::fail(i, 4, ErrorKind::BadMagic { found }))
        }
    })
}

/// The format version: 1 or 2.
pub(crate) fn version<'a>() -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    let check = |version| {
        if (1..=crate::LATEST_VERSION).contains(&version) {
            Ok(())
        } else {
            Err(ErrorKind::UnsupportedVersion { version })
        }
    };
    field(PathSeg::Header("version"), checked_u32(check))
}

/// The tensor count, within the limit.
pub(crate) fn tensor_count<'a>(
    limits: Limits,
) -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    let max = limits.max_tensor_count;
    let check = move |count| {
        if count > max { Err(ErrorKind::TooManyTensors { count, max }) } else { Ok(()) }
    };
    field(PathSeg::Header("tensor_count"), checked_u32(check))
}

/// The metadata count, within the limit.
pub(crate) fn meta_count<'a>(
    limits: Limits,
) -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    let max = limits.max_meta_count;
    let check =
        move |count| if count > max { Err(ErrorKind::TooManyMeta { count, max }) } else { Ok(()) };
    field(PathSeg::Header("meta_count"), checked_u32(check))
}

// ----- metadata entry ------------------------------------------------------------------------

/// An entry's key (a string, limits checked).
pub(crate) fn meta_key<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    field(PathSeg::Field("key"), checked_string(buf, limits))
}

/// An entry's type tag, as stored ([`crate::rules::tag`] judges it).
pub(crate) fn meta_tag<'a>() -> impl Parser<&'a [u8], Output = u8, Error = PErr<'a>> {
    u8_()
}

/// An `i64` or `f64` value, as stored (8 bytes).
pub(crate) fn number<'a>() -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    bytes(8)
}

/// A string value (limits checked).
pub(crate) fn string_value<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    field(PathSeg::Field("value"), checked_string(buf, limits))
}

/// An array's element count, within the array limit.
pub(crate) fn array_count<'a>(
    limits: Limits,
) -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    let max = limits.max_array_len;
    let check =
        move |len| if len > max { Err(ErrorKind::ArrayTooLong { len, max }) } else { Ok(()) };
    field(PathSeg::Field("count"), checked_u32(check))
}

/// An `i64[]` or `f64[]` value: its count (within the array limit, and its payload within the
/// header limit), then the payload; returns the payload and the count.
pub(crate) fn number_array<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = (&'b [u8], u32), Error = PErr<'b>> {
    move |i: &'b [u8]| {
        let (payload, len) = array_count(limits).parse(i)?;
        let size = u64::from(len) * 8;
        if offset_in(buf, payload).saturating_add(size) > limits.max_header_bytes {
            let kind = ErrorKind::HeaderTooLarge { max: limits.max_header_bytes };
            let count = Some(PathSeg::Field("count"));
            return Err(nom::Err::Failure(PErr { at: i, kind: Some(kind), len: 4, field: count }));
        }
        let (rest, values) = bytes(size).parse(payload)?;
        Ok((rest, (values, len)))
    }
}

// ----- tensor info ---------------------------------------------------------------------------

/// A tensor's name (a string, limits checked).
pub(crate) fn tensor_name<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    field(PathSeg::Field("name"), checked_string(buf, limits))
}

/// A tensor's dtype code (a ggml type code; [`crate::rules::dtype`] judges it).
pub(crate) fn dtype<'a>() -> impl Parser<&'a [u8], Output = u32, Error = PErr<'a>> {
    u32_()
}

/// A tensor's shape as stored: `n_dims`, then that many row-major dimensions.
#[derive(Debug, Clone)]
pub(crate) struct RawShape<'a> {
    /// The dimension fields (8 × `n_dims` bytes).
    pub(crate) field: &'a [u8],
    pub(crate) dims: SmallVec<[u64; 4]>,
}

/// `n_dims` (1 to 4, checked before the dimensions are requested), then the dimensions.
pub(crate) fn tensor_shape<'a>() -> impl Parser<&'a [u8], Output = RawShape<'a>, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let check = |n_dims| {
            if (1..=4).contains(&n_dims) { Ok(()) } else { Err(ErrorKind::BadDimCount { n_dims }) }
        };
        let (at_dims, n_dims) = field(PathSeg::Field("n_dims"), checked_u32(check)).parse(i)?;
        let (rest, dims) =
            nom::multi::fold(n_dims as usize, u64_(), SmallVec::<[u64; 4]>::new, |mut acc, d| {
                acc.push(d);
                acc
            })
            .parse(at_dims)?;
        let field = at_dims.get(..at_dims.len() - rest.len()).unwrap_or_default();
        Ok((rest, RawShape { field, dims }))
    }
}

/// A tensor's absolute data offset.
pub(crate) fn tensor_offset<'a>() -> impl Parser<&'a [u8], Output = u64, Error = PErr<'a>> {
    u64_()
}

/// A tensor's stored byte size.
pub(crate) fn tensor_size<'a>() -> impl Parser<&'a [u8], Output = u64, Error = PErr<'a>> {
    u64_()
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
