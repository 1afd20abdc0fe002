//! The profiles' rules: what each profile makes of a record the grammar read, one small
//! function per record, in the order `docs/parser.md`'s profile table lists them.
//!
//! A rule gets the raw record (bytes, spans, a path builder) and a [`Findings`] sink, and
//! either returns an [`Error`] (stop) or records warnings. A *tolerable* problem
//! ([`Findings::tolerate`]) is an error under `Strict` and `LlamaCpp` and a
//! [`WarningKind::Tolerated`] warning under `Lenient`; a *fatal* one is an error in every
//! profile; a *style* finding is always a warning. The layout rules (offsets, overlap, bounds)
//! are in [`crate::layout`] and reach the caller through [`Findings::layout`].
//!
//! | record | rule | here |
//! | --- | --- | --- |
//! | header | v1 opt-in, big-endian under llama-cpp | [`version`] |
//! | header | count limits | [`counts`] |
//! | key | empty, NUL (as ggml reads C strings), UTF-8, duplicate, style (ASCII, snake_case, 65535 bytes) | [`key`], [`nul_byte`] |
//! | value type | the alignment key (a C string under llama-cpp) must be UINT32 | [`is_alignment_key`], [`value_type`] |
//! | value | string UTF-8; bool 0/1; alignment a power of two | [`string_value`], [`bool_value`], [`alignment`] |
//! | array head | arrays of arrays under llama-cpp | [`elem_type`], [`nested_array`] |
//! | array elements | bools 0/1, warned once per array | [`bool_elements`] |
//! | tensor name | length (64, 63 under llama-cpp), UTF-8, empty, invisible characters (a warning, by Unicode property), NUL, duplicate (C strings under llama-cpp) | [`tensor_name`], [`TensorNames`] |
//! | tensor shape and type | dims (zero, ≥ 2^63), ggml's element-count check, ggml type (unknown, removed), sizes | [`tensor`], [`ggml_element_count`] |
//! | data section | unpadded without tensors under llama-cpp | [`data_offset`] |
//!
//! A new rule (say, one more llama-cpp check on names) is one more line in one of these
//! functions, plus its kind in [`crate::error`] and its row in the table.

use sipllm_format::NameIndex;
use smallvec::SmallVec;

use crate::ast::Span;
use crate::error::{Error, ErrorKind, Path, PathSeg, StrField, Warning, WarningKind};
use crate::ggml::{self, GgmlType, SizeError};
use crate::grammar::{Encoding, RawVersion, array_len_limit, ne};
use crate::header::Endian;
use crate::layout;
use crate::options::{Limits, ParseOptions, Profile};
use crate::value_type::ValueType;

/// Where rules put an item's findings: the profile decides what is tolerated, and the item's
/// warnings wait here until the item is committed.
#[derive(Debug)]
pub(crate) struct Findings {
    pub(crate) profile: Profile,
    pub(crate) warnings: SmallVec<[Warning; 2]>,
}

impl Findings {
    pub(crate) fn new(profile: Profile) -> Findings {
        Findings { profile, warnings: SmallVec::new() }
    }

    /// A tolerable problem: an error, or (lenient) a warning.
    pub(crate) fn tolerate(
        &mut self,
        kind: ErrorKind,
        span: Span,
        path: impl FnOnce() -> Path,
    ) -> Result<(), Error> {
        if self.profile == Profile::Lenient {
            self.warn(WarningKind::Tolerated(kind), span, path);
            Ok(())
        } else {
            Err(Error::new(kind, span.offset, span.len, path()))
        }
    }

    /// A warning in every profile.
    pub(crate) fn warn(&mut self, kind: WarningKind, span: Span, path: impl FnOnce() -> Path) {
        self.warnings.push(Warning::new(kind, span.offset, span.len, path()));
    }

    /// A layout finding ([`crate::layout`]) about `span`.
    pub(crate) fn layout(
        &mut self,
        finding: layout::Finding,
        span: Span,
        path: impl FnOnce() -> Path,
    ) -> Result<(), Error> {
        match finding {
            layout::Finding::Fatal(kind) => Err(Error::new(kind, span.offset, span.len, path())),
            layout::Finding::Tolerable(kind) => self.tolerate(kind, span, path),
            layout::Finding::Warning(kind) => {
                self.warn(kind, span, path);
                Ok(())
            }
        }
    }
}

// ----- header --------------------------------------------------------------------------------

/// v1 only when enabled and never under llama-cpp; big-endian files not under llama-cpp
/// (llama.cpp on a little-endian host reads the byte-swapped version and rejects the file).
pub(crate) fn version(opts: &ParseOptions, v: RawVersion) -> Result<(), ErrorKind> {
    if v.version == 1 && (!opts.allow_v1 || opts.profile == Profile::LlamaCpp) {
        return Err(ErrorKind::VersionOneDisabled);
    }
    if v.endian == Endian::Big && opts.profile == Profile::LlamaCpp {
        return Err(ErrorKind::EndianMismatch { version: u32::from_le_bytes(v.word) });
    }
    Ok(())
}

/// The declared counts against the limits. Counts above `u32::MAX` could not be indexed; the
/// default limits are far below, and the error reports the limit in force, not a larger
/// configured one. `len_size` is the width of a count field.
pub(crate) fn counts(
    limits: &Limits,
    len_size: u64,
    tensor_count: u64,
    kv_count: u64,
) -> Result<(), Error> {
    let max_tensors = limits.max_tensor_count.min(u32::MAX.into());
    if tensor_count > max_tensors {
        return Err(Error::new(
            ErrorKind::TooManyTensors { count: tensor_count, max: max_tensors },
            8,
            len_size,
            Path::root().with(PathSeg::Header("tensor_count")),
        ));
    }
    let max_kvs = limits.max_kv_count.min(u32::MAX.into());
    if kv_count > max_kvs {
        return Err(Error::new(
            ErrorKind::TooManyKvs { count: kv_count, max: max_kvs },
            8 + len_size,
            len_size,
            Path::root().with(PathSeg::Header("kv_count")),
        ));
    }
    Ok(())
}

// ----- names as C sees them -------------------------------------------------------------------

/// A name as C sees it: the bytes before its first NUL (ggml's `ggml_set_name`, then `strcmp`).
fn c_str(name: &[u8]) -> &[u8] {
    name.split(|&b| b == 0).next().unwrap_or_default()
}

/// A NUL byte inside a key (`kind` [`ErrorKind::NulInKey`]) or tensor name
/// ([`ErrorKind::NulInName`]): ggml cuts C strings there, so the name means something else to
/// llama.cpp than to every other reader. The strict profile refuses it; the others read it (the
/// llama-cpp profile as ggml does: [`is_alignment_key`], [`TensorNames`]) and warn.
fn nul_byte(
    out: &mut Findings,
    name: &[u8],
    kind: ErrorKind,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if !name.contains(&0) {
        return Ok(());
    }
    if out.profile == Profile::Strict {
        return Err(Error::new(kind, span.offset, span.len, path()));
    }
    out.warn(WarningKind::Tolerated(kind), span, path);
    Ok(())
}

// ----- metadata ------------------------------------------------------------------------------

/// Keys should be dot-separated `lower_snake_case` segments of ASCII letters and digits.
fn is_snake_case_key(key: &[u8]) -> bool {
    key.split(|&b| b == b'.').all(|seg| {
        !seg.is_empty()
            && seg.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// A key: not empty, without NUL ([`nul_byte`]), UTF-8 (not checked by llama.cpp), not a duplicate of `first` (the index of
/// an earlier pair with this key), and in the spec's style. `path` is the key field's.
pub(crate) fn key(
    out: &mut Findings,
    key: &[u8],
    span: Span,
    first: Option<u32>,
    path: impl Fn() -> Path,
) -> Result<(), Error> {
    if key.is_empty() {
        out.tolerate(ErrorKind::EmptyKey, span, &path)?;
    }
    nul_byte(out, key, ErrorKind::NulInKey, span, &path)?;
    if out.profile != Profile::LlamaCpp
        && let Err(e) = std::str::from_utf8(key)
    {
        let kind =
            ErrorKind::InvalidUtf8 { field: StrField::Key, valid_up_to: e.valid_up_to() as u64 };
        out.tolerate(kind, span, &path)?;
    }
    if let Some(first) = first {
        out.tolerate(ErrorKind::DuplicateKey { first: first.into() }, span, &path)?;
    }
    let style = if key.len() > 65535 {
        Some(WarningKind::KeyTooLong { len: key.len() as u64 })
    } else if !key.is_ascii() {
        Some(WarningKind::KeyNotAscii)
    } else if !key.is_empty() && !is_snake_case_key(key) {
        Some(WarningKind::KeyNotSnakeCase)
    } else {
        None
    };
    if let Some(kind) = style {
        out.warn(kind, span, path);
    }
    Ok(())
}

/// The key that sets the data alignment.
const ALIGNMENT_KEY: &[u8] = b"general.alignment";

/// Whether `key` is the one the alignment is read from. ggml finds it with `gguf_find_key`,
/// the first key equal *as a C string* (`strcmp`), so under the llama-cpp profile
/// `general.alignment\0x` is the alignment key unless an earlier key already was (`found`);
/// later candidates are not even type-checked there. Under llama-cpp an earlier candidate either
/// set the alignment or failed the parse, so this needs no scan of the earlier keys (which a
/// file of many candidates would make quadratic). The other profiles match the whole key (and
/// the strict one refuses NUL bytes in keys).
pub(crate) fn is_alignment_key(profile: Profile, key: &[u8], found: bool) -> bool {
    if profile != Profile::LlamaCpp {
        return key == ALIGNMENT_KEY;
    }
    !found && c_str(key) == ALIGNMENT_KEY
}

/// A value type: the alignment key's ([`is_alignment_key`]) must be a UINT32 scalar. `path` is
/// the type field's.
pub(crate) fn value_type(
    out: &mut Findings,
    is_alignment: bool,
    ty: ValueType,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if is_alignment && ty != ValueType::Uint32 {
        out.tolerate(ErrorKind::AlignmentType { found: ty }, span, path)?;
    }
    Ok(())
}

/// A string value (scalar or element) must be UTF-8, except under llama-cpp (which does not
/// check).
pub(crate) fn string_value(
    out: &mut Findings,
    bytes: &[u8],
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if out.profile == Profile::LlamaCpp {
        return Ok(());
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        let kind =
            ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: e.valid_up_to() as u64 };
        out.tolerate(kind, span, path)?;
    }
    Ok(())
}

/// A bool byte must be 0 or 1, except under llama-cpp (which reads any non-zero byte as true).
pub(crate) fn bool_value(
    out: &mut Findings,
    value: u8,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if value > 1 && out.profile != Profile::LlamaCpp {
        out.tolerate(ErrorKind::InvalidBool { value }, span, path)?;
    }
    Ok(())
}

/// The value of `general.alignment` (a UINT32 `word` as stored): a non-zero power of two, which
/// is returned; otherwise tolerated and ignored.
pub(crate) fn alignment(
    out: &mut Findings,
    word: &[u8],
    endian: Endian,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<Option<u32>, Error> {
    let mut w = [0u8; 4];
    w.copy_from_slice(word.get(..4).unwrap_or(&[0; 4]));
    let alignment = match endian {
        Endian::Little => u32::from_le_bytes(w),
        Endian::Big => u32::from_be_bytes(w),
    };
    if alignment.is_power_of_two() {
        Ok(Some(alignment))
    } else {
        out.tolerate(ErrorKind::BadAlignment { alignment }, span, path)?;
        Ok(None)
    }
}

/// An array's element type: llama.cpp rejects arrays of arrays.
pub(crate) fn elem_type(profile: Profile, ty: ValueType) -> Result<(), ErrorKind> {
    if ty == ValueType::Array && profile == Profile::LlamaCpp {
        Err(ErrorKind::NestedArray)
    } else {
        Ok(())
    }
}

/// The head of a nested array (at `at`; depth `depth` before it): its element type under the
/// profile ([`elem_type`]), the nesting limit, and its count ([`array_len_limit`]). The error
/// is a kind with its offset and length.
#[allow(clippy::too_many_arguments)]
pub(crate) fn nested_array(
    profile: Profile,
    enc: Encoding,
    limits: &Limits,
    depth: u32,
    ty: ValueType,
    len: u64,
    at: u64,
    payload_start: u64,
) -> Result<(), (ErrorKind, u64, u64)> {
    elem_type(profile, ty).map_err(|k| (k, at, 4))?;
    if depth >= limits.max_depth {
        return Err((ErrorKind::NestingTooDeep { max: limits.max_depth }, at, 4));
    }
    array_len_limit(enc, limits, ty, len, payload_start)
        .map_err(|k| (k, at + 4, enc.len_size() as u64))
}

/// Bool elements (`bytes`, from absolute `at`): the first byte other than 0 or 1 is reported
/// ([`bool_value`]) and `true` returned, so an array warns once. `path(j)` is element `j`'s
/// path, counted from the first of `bytes`.
pub(crate) fn bool_elements(
    out: &mut Findings,
    bytes: &[u8],
    at: u64,
    path: impl FnOnce(u64) -> Path,
) -> Result<bool, Error> {
    let Some((j, &value)) = bytes.iter().enumerate().find(|(_, b)| **b > 1) else {
        return Ok(false);
    };
    bool_value(out, value, Span::new(at + j as u64, 1), || path(j as u64))?;
    Ok(true)
}

// ----- tensor infos --------------------------------------------------------------------------

/// The tensor-name index and, under llama-cpp, the names as ggml compares them: up to their
/// first NUL ("a\0x" and "a\0y" are the same tensor there).
#[derive(Debug, Default)]
pub(crate) struct TensorNames {
    pub(crate) names: NameIndex,
    c_names: NameIndex,
}

impl TensorNames {
    /// The earlier tensor this `name` duplicates, if any; `resolve` maps a tensor index to its
    /// name bytes.
    pub(crate) fn find<'b>(
        &self,
        profile: Profile,
        name: &[u8],
        resolve: impl Fn(u32) -> &'b [u8],
    ) -> Option<u32> {
        if profile == Profile::LlamaCpp {
            self.c_names.find(c_str(name), |i| c_str(resolve(i)))
        } else {
            self.names.find(name, resolve)
        }
    }

    /// Records tensor `index` under `name`.
    pub(crate) fn insert<'b>(
        &mut self,
        profile: Profile,
        name: &[u8],
        index: u32,
        resolve: impl Fn(u32) -> &'b [u8],
    ) {
        if profile == Profile::LlamaCpp {
            self.c_names.insert(c_str(name), index, |i| c_str(resolve(i)));
        }
        self.names.insert(name, index, resolve);
    }
}

/// A tensor name: at most 64 bytes (63 under llama-cpp: ggml needs fewer than
/// `GGML_MAX_NAME`), UTF-8 (not checked by llama.cpp), not empty, without NUL, not a duplicate
/// of tensor `first` (under llama-cpp, compared up to the first NUL). `path` is the name
/// field's.
pub(crate) fn tensor_name(
    out: &mut Findings,
    name: &[u8],
    span: Span,
    first: Option<u32>,
    path: impl Fn() -> Path,
) -> Result<(), Error> {
    let len = name.len() as u64;
    let max = if out.profile == Profile::LlamaCpp { 63 } else { 64 };
    if len > max {
        out.tolerate(ErrorKind::NameTooLong { len, max }, span, &path)?;
    } else if len == 64 {
        out.warn(WarningKind::NameRejectedByLlamaCpp, span, &path);
    }
    if out.profile != Profile::LlamaCpp
        && let Err(e) = std::str::from_utf8(name)
    {
        let kind = ErrorKind::InvalidUtf8 {
            field: StrField::TensorName,
            valid_up_to: e.valid_up_to() as u64,
        };
        out.tolerate(kind, span, &path)?;
    }
    if name.is_empty() {
        out.warn(WarningKind::EmptyTensorName, Span::new(span.offset, 0), &path);
    }
    if let Some((at, ch)) = sipllm_format::first_invisible(name) {
        out.warn(WarningKind::InvisibleInName { ch, at: at as u64 }, span, &path);
    }
    nul_byte(out, name, ErrorKind::NulInName, span, &path)?;
    if let Some(first) = first {
        out.tolerate(ErrorKind::DuplicateTensor { first: first.into() }, span, &path)?;
    }
    Ok(())
}

/// A tensor's dimensions and type, in the order ggml checks them; returns the data's byte size
/// when the type has one. `dims_at` is the offset of the first dimension field, `dim_size` the
/// width of one, `type_at` the offset of the type field; `path` is the tensor's.
pub(crate) fn tensor(
    out: &mut Findings,
    dims: &[u64],
    dims_at: u64,
    dim_size: u64,
    ggml_type: GgmlType,
    type_at: u64,
    path: impl Fn() -> Path,
) -> Result<Option<u64>, Error> {
    let profile = out.profile;
    let dim_span = |j: usize| Span::new(dims_at + j as u64 * dim_size, dim_size);
    let dim_path = |j: usize| path().with(ne(j as u32));
    for (j, &d) in dims.iter().enumerate() {
        let span = dim_span(j);
        if profile == Profile::LlamaCpp && d > i64::MAX as u64 {
            return Err(Error::new(
                ErrorKind::DimTooLarge { value: d },
                span.offset,
                span.len,
                dim_path(j),
            ));
        }
        if d == 0 && profile != Profile::LlamaCpp {
            out.tolerate(ErrorKind::ZeroDim, span, || dim_path(j))?;
        }
    }
    let type_span = Span::new(type_at, 4);
    let type_path = || path().with(PathSeg::Field("ggml_type"));
    match ggml_type {
        GgmlType::Unknown(code) => {
            out.tolerate(ErrorKind::UnknownGgmlType { code }, type_span, type_path)?
        }
        GgmlType::Removed(code) => {
            let kind = ErrorKind::RemovedGgmlType { code, name: ggml_type.name() };
            out.tolerate(kind, type_span, type_path)?
        }
        _ => {}
    }
    let dims_span = Span::new(dims_at, dims.len() as u64 * dim_size);
    let dims_path = || path().with(PathSeg::Field("ne"));
    let fatal = |kind| Err(Error::new(kind, dims_span.offset, dims_span.len, dims_path()));
    if let Err(kind) = ggml_element_count(profile, dims) {
        return fatal(kind);
    }
    // The element count must fit whatever the type: `tensor_nbytes` reports an unsized type
    // before it looks at the dims, so a tolerated unknown type would otherwise let an
    // overflowing count through (and `TensorInfo::element_count` promises it fits).
    if ggml::tensor_element_count(dims).is_err() {
        return fatal(ErrorKind::ElementCountOverflow);
    }
    match ggml::tensor_nbytes(ggml_type, dims) {
        Ok(n) => Ok(Some(n)),
        // Already reported above (or tolerated): the size is unknown.
        Err(SizeError::UnsizedType(_)) => Ok(None),
        Err(SizeError::NotBlockMultiple { ne0, block_size, ty }) => {
            let kind = ErrorKind::NotBlockMultiple { ne0, block_size, ty };
            if dims.is_empty() {
                // A scalar's row length is an implicit 1: there is no ne[0] to point at (its
                // "span" would be the type field), so point at the empty dims.
                out.tolerate(kind, dims_span, dims_path)?;
            } else {
                out.tolerate(kind, dim_span(0), || dim_path(0))?;
            }
            Ok(None)
        }
        Err(SizeError::ElementCountOverflow) => fatal(ErrorKind::ElementCountOverflow),
        Err(SizeError::ByteSizeOverflow) => fatal(ErrorKind::ByteSizeOverflow),
    }
}

/// ggml's element-count check, under the llama-cpp profile (`dims` already below 2^63).
///
/// ggml checks `INT64_MAX/ne[1] <= ne[0] || INT64_MAX/ne[2] <= ne[0]*ne[1] || …` only when
/// the element count, multiplied in wrapping `int64_t`, is positive. So it refuses counts a
/// little below `INT64_MAX` too (this function refuses exactly those), it accepts any shape
/// with a zero dimension (0 elements, whatever the others multiply to), and it lets through a
/// count whose wrapped product is 0 or negative. That last case is a deliberate difference:
/// a count above `INT64_MAX` is refused here too, and one above `u64::MAX` by [`tensor`]'s
/// own overflow check after this one.
fn ggml_element_count(profile: Profile, dims: &[u64]) -> Result<(), ErrorKind> {
    if profile != Profile::LlamaCpp {
        return Ok(());
    }
    let mut ne = [1i64; 4];
    for (n, &d) in ne.iter_mut().zip(dims) {
        *n = i64::try_from(d).map_err(|_| ErrorKind::DimTooLarge { value: d })?;
    }
    let wrapped = ne.iter().fold(1i64, |acc, &n| acc.wrapping_mul(n));
    if wrapped <= 0 {
        // ggml skips its check here. Deliberately not: a count that does not fit ggml's
        // `int64_t` is refused (a zero dimension makes the count 0, which fits).
        let fits = ggml::tensor_element_count(dims).is_ok_and(|n| n <= i64::MAX as u64);
        return if fits { Ok(()) } else { Err(ErrorKind::ElementCountOverflow) };
    }
    let [ne0, ne1, ne2, ne3] = ne;
    let refused = i64::MAX / ne1 <= ne0
        || i64::MAX / ne2 <= ne0.wrapping_mul(ne1)
        || i64::MAX / ne3 <= ne0.wrapping_mul(ne1).wrapping_mul(ne2);
    if refused { Err(ErrorKind::ElementCountOverflow) } else { Ok(()) }
}

// ----- the data section ----------------------------------------------------------------------

/// Where the data section starts. With tensors, at the directory's end rounded up to the
/// alignment (`aligned`), in every profile. Without tensors, current ggml (since 2026-05) does
/// not pad: the llama-cpp profile says `directory_end`, as `gguf_get_data_offset` does. The
/// strict and lenient profiles keep the padded offset, as gguf-py and older ggml report it.
pub(crate) fn data_offset(
    profile: Profile,
    has_tensors: bool,
    directory_end: u64,
    aligned: u64,
) -> u64 {
    if profile == Profile::LlamaCpp && !has_tensors { directory_end } else { aligned }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_keys() {
        assert!(is_snake_case_key(b"tokenizer.ggml.bos_token_id"));
        assert!(is_snake_case_key(b"general.base_model.0.name"));
        assert!(!is_snake_case_key(b"General.name"));
        assert!(!is_snake_case_key(b"a..b"));
        assert!(!is_snake_case_key(b"a-b"));
    }

    const LLAMA: Profile = Profile::LlamaCpp;

    #[test]
    fn c_strings_end_at_the_first_nul() {
        assert_eq!(c_str(b"ab\0cd\0"), b"ab");
        assert_eq!(c_str(b"\0x"), b"");
        assert_eq!(c_str(b"abc"), b"abc");
    }

    #[test]
    fn the_first_c_string_alignment_key_wins_under_llama_cpp_only() {
        assert!(is_alignment_key(LLAMA, b"general.alignment\0x", false));
        assert!(!is_alignment_key(Profile::Strict, b"general.alignment\0x", false));
        assert!(!is_alignment_key(Profile::Lenient, b"general.alignment\0x", false));
        assert!(is_alignment_key(Profile::Strict, b"general.alignment", false));
        // Found already: a later exact key is not the alignment key to ggml.
        assert!(!is_alignment_key(LLAMA, b"general.alignment", true));
        assert!(is_alignment_key(Profile::Lenient, b"general.alignment", true));
        assert!(!is_alignment_key(LLAMA, b"general.alignmentx", false));
    }

    #[test]
    fn ggml_element_check_boundaries() {
        let max = i64::MAX as u64;
        // ggml's integer divisions refuse products well below INT64_MAX: `MAX / ne[1] <= ne[0]`
        // holds for [2, MAX/3 + 1] (2 × that is 2/3 of MAX) but not for [2, MAX/3].
        let overflow = Err(ErrorKind::ElementCountOverflow);
        assert_eq!(ggml_element_count(LLAMA, &[2, max / 3 + 1]), overflow);
        assert_eq!(ggml_element_count(LLAMA, &[2, max / 3]), Ok(()));
        assert_eq!(ggml_element_count(LLAMA, &[3, max / 3]), overflow);
        // A zero dimension: 0 elements, whatever the rest multiply to.
        assert_eq!(ggml_element_count(LLAMA, &[1 << 40, 1 << 40, 0]), Ok(()));
        // A product that wraps to 0 or below passes ggml's check; not this one (deliberately).
        assert_eq!(ggml_element_count(LLAMA, &[1 << 32, 1 << 32]), overflow);
        assert_eq!(ggml_element_count(LLAMA, &[1 << 32, 1 << 31]), overflow);
        assert_eq!(ggml_element_count(LLAMA, &[3, (1 << 62) + 1]), overflow);
        // A product that wraps to a positive value is caught by the divisions.
        assert_eq!(
            ggml_element_count(LLAMA, &[(1 << 32) + 1, 1 << 32]),
            Err(ErrorKind::ElementCountOverflow)
        );
        // Other profiles leave it to the checked product.
        assert_eq!(ggml_element_count(Profile::Strict, &[3, max / 3]), Ok(()));
    }

    #[test]
    fn unpadded_data_offset_without_tensors_under_llama_cpp_only() {
        assert_eq!(data_offset(LLAMA, false, 45, 64), 45);
        assert_eq!(data_offset(LLAMA, true, 45, 64), 64);
        assert_eq!(data_offset(Profile::Strict, false, 45, 64), 64);
        assert_eq!(data_offset(Profile::Lenient, false, 45, 64), 64);
    }
}
