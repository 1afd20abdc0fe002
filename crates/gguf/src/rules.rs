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
//! | key | empty, UTF-8, duplicate, style (ASCII, snake_case, 65535 bytes) | [`key`] |
//! | value type | `general.alignment` must be UINT32 | [`value_type`] |
//! | value | string UTF-8; bool 0/1; alignment a power of two | [`string_value`], [`bool_value`], [`alignment`] |
//! | array head | arrays of arrays under llama-cpp | [`elem_type`], [`nested_array`] |
//! | array elements | bools 0/1, warned once per array | [`bool_elements`] |
//! | tensor name | length (64, 63 under llama-cpp), UTF-8, empty, NUL, duplicate | [`tensor_name`] |
//! | tensor shape and type | dims (zero, ≥ 2^63), ggml type (unknown, removed), sizes | [`tensor`] |
//!
//! A new rule (say, one more llama-cpp check on names) is one more line in one of these
//! functions, plus its kind in [`crate::error`] and its row in the table.

use sipllm_format::NameIndex;
use smallvec::SmallVec;

use crate::Span;
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

// ----- metadata ------------------------------------------------------------------------------

/// Keys should be dot-separated `lower_snake_case` segments of ASCII letters and digits.
fn is_snake_case_key(key: &[u8]) -> bool {
    key.split(|&b| b == b'.').all(|seg| {
        !seg.is_empty()
            && seg.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// A key: not empty, UTF-8 (not checked by llama.cpp), not a duplicate of `first` (the index of
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
pub(crate) const ALIGNMENT_KEY: &[u8] = b"general.alignment";

/// A value type: `general.alignment` must be a UINT32 scalar. `path` is the type field's.
pub(crate) fn value_type(
    out: &mut Findings,
    key: &[u8],
    ty: ValueType,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if key == ALIGNMENT_KEY && ty != ValueType::Uint32 {
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

/// A name as C sees it: the bytes before its first NUL (ggml's `ggml_set_name`, then `strcmp`).
fn c_str(name: &[u8]) -> &[u8] {
    name.split(|&b| b == 0).next().unwrap_or_default()
}

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
    } else if name.contains(&0) {
        out.warn(WarningKind::NulInName, span, &path);
    }
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
    if profile == Profile::LlamaCpp
        && ggml::tensor_element_count(dims).is_ok_and(|n| n > i64::MAX as u64)
    {
        return fatal(ErrorKind::ElementCountOverflow);
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
}
