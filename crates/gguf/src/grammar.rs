//! The GGUF grammar as nom 8 combinators: one named parser per on-disk record, each next to
//! the raw, zero-copy record it returns, in file order.
//!
//! | record | parsers | layout |
//! | --- | --- | --- |
//! | header | [`magic`], [`version`], [`counts`] | `"GGUF"`, `u32` version, `len` tensor_count, `len` kv_count |
//! | metadata pair | [`kv_key`], [`value_type`], then [`string_value`], [`scalar`] or [`array_elem_type`] + [`array_count`] | `string` key, `u32` type, value |
//! | nested array head | [`nested_array_head`] | `u32` elem_type, `len` count |
//! | string element | [`checked_string_at`] | `len` length, bytes |
//! | tensor info | [`tensor_name`], [`tensor_shape`], [`tensor_placement`] | `string` name, `u32` n_dims, `len` × n_dims ne, `u32` ggml_type, `u64` offset |
//!
//! `len` is a `u64` in v2/v3 and a `u32` in v1; numbers are in the file's byte order
//! ([`Encoding`]). A record is split where a profile rule ([`crate::rules`]) must fire
//! between two fields, before the decoder asks for the next one: a duplicate key is reported
//! even when the file ends right after it, whatever the chunking.
//!
//! Every parser is a *streaming* parser over `&[u8]`: when its input ends early it returns
//! `Incomplete` with the number of bytes still missing, which the [`Decoder`] turns into
//! [`Event::NeedMore`](crate::Event::NeedMore). A parser that fails for another reason
//! returns a [`PErr`] with an [`ErrorKind`], the offending field's position and, through
//! [`field`], its name in the error's path. The grammar enforces what the format and the
//! [`Limits`] say (type codes, `n_dims` ≤ 4, declared lengths, checked before their bytes are
//! requested); the profiles' rules live in [`crate::rules`].
//!
//! The same primitives serve the decoder (which validates) and the value views (which decode
//! already-validated bytes), so there is one definition of every on-disk encoding.
//!
//! [`Decoder`]: crate::Decoder

use nom::Parser;
use nom::number::Endianness;
use smallvec::SmallVec;

use sipllm_format::PathSeg;
use sipllm_format::grammar::incomplete;
pub(crate) use sipllm_format::grammar::{bytes, bytes_at, field, offset_in};

use crate::error::ErrorKind;
use crate::header::{Endian, VersionProbe, probe_version};
use crate::options::Limits;
use crate::value_type::ValueType;

/// The parse error carried through nom (see [`sipllm_format::grammar::PErr`]).
pub(crate) type PErr<'a> = sipllm_format::grammar::PErr<'a, ErrorKind>;

/// A GGUF grammar parser's result.
pub(crate) type PResult<'a, T> = sipllm_format::grammar::PResult<'a, T, ErrorKind>;

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

/// The path segment of dimension `j` in GGUF order (`ne[j]`, `ne[0]` the fastest-varying).
pub(crate) fn ne(j: u32) -> PathSeg {
    PathSeg::Indexed { field: "ne", index: j }
}

// ----- primitives ----------------------------------------------------------------------------

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

/// A string whose declared length is checked against the limits before its bytes are
/// requested: the string limit, and the header limit on where the string would end (`buf` is
/// the whole input, for the absolute end). Errors point at the length field.
pub(crate) fn checked_string<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    move |i: &'b [u8]| checked_string_at(buf, enc, &limits, i)
}

/// [`checked_string`] as a plain nom parser function (the vocabulary hot loop's).
#[inline]
pub(crate) fn checked_string_at<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: &Limits,
    i: &'b [u8],
) -> PResult<'b, &'b [u8]> {
    let (rest, len) = len_field_at(enc, i)?;
    let len_size = enc.len_size() as u64;
    if len > limits.max_string_len {
        return Err(PErr::fail(
            i,
            len_size,
            ErrorKind::StringTooLong { len, max: limits.max_string_len },
        ));
    }
    if offset_in(buf, rest).saturating_add(len) > limits.max_header_bytes {
        return Err(PErr::fail(
            i,
            len_size,
            ErrorKind::HeaderTooLarge { max: limits.max_header_bytes },
        ));
    }
    bytes_at(len, rest)
}

/// A value type code valid in this version (0–12, 0–9 in v1), else `UnknownValueType`.
fn type_code<'a>(enc: Encoding) -> impl Parser<&'a [u8], Output = ValueType, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let (rest, code) = u32_(enc).parse(i)?;
        match ValueType::from_code(code) {
            Some(ty) if enc.wide || ty.in_v1() => Ok((rest, ty)),
            _ => Err(PErr::fail(i, 4, ErrorKind::UnknownValueType { code })),
        }
    }
}

// ----- header --------------------------------------------------------------------------------

/// The magic, judged as soon as its 4 bytes are present: a non-GGUF input of 4 to 7 bytes is
/// not a truncated GGUF.
pub(crate) fn magic<'a>() -> impl Parser<&'a [u8], Output = (), Error = PErr<'a>> {
    field(PathSeg::Header("magic"), |i: &'a [u8]| {
        let (rest, m) = bytes_at(4, i)?;
        let mut found = [0u8; 4];
        found.copy_from_slice(m);
        if found == crate::MAGIC {
            Ok((rest, ()))
        } else {
            Err(PErr::fail(i, 4, ErrorKind::BadMagic { found }))
        }
    })
}

/// The version word, as stored, and what it says (a version this parser reads, and the byte
/// order it implies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawVersion {
    /// The word, as stored.
    pub(crate) word: [u8; 4],
    pub(crate) version: u32,
    pub(crate) endian: Endian,
}

/// The version word: 1, 2 or 3 in either byte order, else `UnsupportedVersion`.
pub(crate) fn version<'a>() -> impl Parser<&'a [u8], Output = RawVersion, Error = PErr<'a>> {
    field(PathSeg::Header("version"), |i: &'a [u8]| {
        let (rest, w) = bytes_at(4, i)?;
        let mut word = [0u8; 4];
        word.copy_from_slice(w);
        match probe_version(word) {
            VersionProbe::Known { version, endian } => {
                Ok((rest, RawVersion { word, version, endian }))
            }
            VersionProbe::Unsupported { version } => {
                Err(PErr::fail(i, 4, ErrorKind::UnsupportedVersion { version }))
            }
        }
    })
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

// ----- metadata pair -------------------------------------------------------------------------

/// A pair's key (a string, limits checked).
pub(crate) fn kv_key<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    field(PathSeg::Field("key"), checked_string(buf, enc, limits))
}

/// A pair's value type.
pub(crate) fn value_type<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = ValueType, Error = PErr<'a>> {
    field(PathSeg::Field("type"), type_code(enc))
}

/// A string value (limits checked).
pub(crate) fn string_value<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    checked_string(buf, enc, limits)
}

/// A fixed-size scalar value of type `ty`, as stored (its bytes).
pub(crate) fn scalar<'a>(
    ty: ValueType,
) -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a>> {
    bytes(ty.fixed_size().unwrap_or(1) as u64)
}

/// An array value's element type (the first field of its head).
pub(crate) fn array_elem_type<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = ValueType, Error = PErr<'a>> {
    field(PathSeg::Field("elem_type"), type_code(enc))
}

/// An array value's element count (the second field of its head), checked against the limits
/// before any element is requested: see [`array_len_limit`].
pub(crate) fn array_count<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
    elem_type: ValueType,
) -> impl Parser<&'b [u8], Output = u64, Error = PErr<'b>> {
    field(PathSeg::Field("count"), move |i: &'b [u8]| {
        let (payload, len) = len_field_at(enc, i)?;
        match array_len_limit(enc, &limits, elem_type, len, offset_in(buf, payload)) {
            Ok(()) => Ok((payload, len)),
            Err(kind) => Err(PErr::fail(i, enc.len_size() as u64, kind)),
        }
    })
}

/// The head of an array nested in an array: element type (valid for this version, else
/// `UnknownValueType` at the type field) and count. Both fields are read before either is
/// judged; the decoder then applies the profile's rules and [`array_len_limit`].
pub(crate) fn nested_array_head<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = (ValueType, u64), Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let (rest, (code, len)) = (u32_(enc), len_field(enc)).parse(i)?;
        match ValueType::from_code(code) {
            Some(ty) if enc.wide || ty.in_v1() => Ok((rest, (ty, len))),
            _ => Err(PErr::fail(i, 4, ErrorKind::UnknownValueType { code })),
        }
    }
}

/// Validates an array's declared count (and where its payload would end at the least) as soon
/// as the array head is read.
pub(crate) fn array_len_limit(
    enc: Encoding,
    limits: &Limits,
    elem_type: ValueType,
    len: u64,
    payload_start: u64,
) -> Result<(), ErrorKind> {
    if len > limits.max_array_len {
        return Err(ErrorKind::ArrayTooLong { len, max: limits.max_array_len });
    }
    // Where the payload would end at the least: exactly, for fixed-size elements; for strings
    // and nested arrays, each element has at least its length (and type) fields.
    let min_size = match elem_type.fixed_size() {
        Some(size) => size as u64,
        None if elem_type == ValueType::String => enc.len_size() as u64,
        None => 4 + enc.len_size() as u64,
    };
    let end = len.checked_mul(min_size).and_then(|n| payload_start.checked_add(n));
    if end.is_none_or(|end| end > limits.max_header_bytes) {
        return Err(ErrorKind::HeaderTooLarge { max: limits.max_header_bytes });
    }
    Ok(())
}

// ----- tensor info ---------------------------------------------------------------------------

/// A tensor info's name (a string, limits checked). The name rules run before `n_dims` is
/// requested.
pub(crate) fn tensor_name<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    field(PathSeg::Field("name"), checked_string(buf, enc, limits))
}

/// A tensor's shape as stored: `n_dims`, then that many dimensions, GGML's `ne` (fastest
/// varying first).
#[derive(Debug, Clone)]
pub(crate) struct RawShape<'a> {
    /// The dimension fields (`len` × `n_dims` bytes).
    pub(crate) field: &'a [u8],
    pub(crate) dims: SmallVec<[u64; 4]>,
}

/// `n_dims` (at most 4, `GGML_MAX_DIMS`, checked before the dimensions are requested), then
/// the dimensions.
pub(crate) fn tensor_shape<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = RawShape<'a>, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let (at_dims, n_dims) = field(PathSeg::Field("n_dims"), |i: &'a [u8]| {
            let (rest, n_dims) = u32_(enc).parse(i)?;
            if n_dims > 4 {
                return Err(PErr::fail(i, 4, ErrorKind::TooManyDims { n_dims, max: 4 }));
            }
            Ok((rest, n_dims))
        })
        .parse(i)?;
        let (rest, dims) = nom::multi::fold(
            n_dims as usize,
            len_field(enc),
            SmallVec::<[u64; 4]>::new,
            |mut acc, d| {
                acc.push(d);
                acc
            },
        )
        .parse(at_dims)?;
        let field = at_dims.get(..at_dims.len() - rest.len()).unwrap_or_default();
        Ok((rest, RawShape { field, dims }))
    }
}

/// Where a tensor's data is, as stored: its ggml type code and its offset relative to the
/// data section.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawPlacement<'a> {
    /// The `ggml_type` field (4 bytes; the `offset` field follows it).
    pub(crate) type_field: &'a [u8],
    pub(crate) ggml_type: u32,
    pub(crate) offset: u64,
}

/// `ggml_type` then `offset`.
pub(crate) fn tensor_placement<'a>(
    enc: Encoding,
) -> impl Parser<&'a [u8], Output = RawPlacement<'a>, Error = PErr<'a>> {
    move |i: &'a [u8]| {
        let (rest, (ggml_type, offset)) = (u32_(enc), u64_(enc)).parse(i)?;
        Ok((rest, RawPlacement { type_field: i.get(..4).unwrap_or_default(), ggml_type, offset }))
    }
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
