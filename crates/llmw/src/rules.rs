//! The checks a record's fields must pass beyond the grammar: `.llmw` is strict (no profiles,
//! no warnings), so every rule here returns the first problem as an [`Error`]. One small
//! function per record, in file order, as `docs/llmw.md`'s validation table lists them.
//!
//! | record | rule | here |
//! | --- | --- | --- |
//! | key | not empty, UTF-8, not a duplicate | [`key`] |
//! | tag | 0–5; arrays (3–5) from version 2 | [`tag`] |
//! | string value or element | UTF-8 | [`utf8`] |
//! | tensor name | not empty, UTF-8, not a duplicate | [`tensor_name`] |
//! | dtype | known to ggml, not removed | [`dtype`] |
//! | dims | none 0; the row length a multiple of the block size; the byte size fits | [`shape`] |
//! | offset | 64-aligned; not before the previous tensor's data, nor inside it | [`offset`] |
//! | size | dtype × dims; offset + size fits | [`size`] |
//! | padding | zero; the data section after it; data inside the file | [`data_section`] |

use smallvec::SmallVec;

use sipllm_gguf::{GgmlType, ggml::SizeError, ggml::tensor_nbytes};

use crate::ALIGNMENT;
use crate::Span;
use crate::ast::TensorInfo;
use crate::error::{Error, ErrorKind, Path, StrField};
use crate::value::MetaType;

/// The UTF-8 check of a string at absolute `at`: the error points at the first invalid byte.
pub(crate) fn utf8(
    s: &[u8],
    at: u64,
    field: StrField,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if simdutf8::basic::from_utf8(s).is_ok() {
        return Ok(());
    }
    let valid_up_to = std::str::from_utf8(s).err().map_or(0, |e| e.valid_up_to()) as u64;
    Err(Error::new(
        ErrorKind::InvalidUtf8 { field, valid_up_to },
        at.saturating_add(valid_up_to),
        1,
        path(),
    ))
}

/// A key (at `span`, its length field at `len_at`): not empty, UTF-8, not a duplicate of entry
/// `first`. `path` is the key field's.
pub(crate) fn key(
    key: &[u8],
    span: Span,
    len_at: u64,
    first: Option<u32>,
    path: impl Fn() -> Path,
) -> Result<(), Error> {
    if key.is_empty() {
        return Err(Error::new(ErrorKind::EmptyKey, len_at, 4, path()));
    }
    utf8(key, span.offset, StrField::Key, &path)?;
    if let Some(first) = first {
        return Err(Error::new(ErrorKind::DuplicateKey { first }, span.offset, span.len, path()));
    }
    Ok(())
}

/// An entry's type tag (at `at`): 0–5, and an array tag (3–5) only from version 2 on.
pub(crate) fn tag(
    tag: u8,
    version: u32,
    at: u64,
    path: impl FnOnce() -> Path,
) -> Result<MetaType, Error> {
    let kind = match MetaType::from_tag(tag) {
        None => ErrorKind::UnknownTag { tag },
        Some(ty) if ty.min_version() > version => ErrorKind::ArrayInVersion1 { tag },
        Some(ty) => return Ok(ty),
    };
    Err(Error::new(kind, at, 1, path()))
}

/// A tensor name (at `span`, its length field at `len_at`): not empty, UTF-8, not a duplicate
/// of tensor `first`. `path` is the name field's.
pub(crate) fn tensor_name(
    name: &[u8],
    span: Span,
    len_at: u64,
    first: Option<u32>,
    path: impl Fn() -> Path,
) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::new(ErrorKind::EmptyTensorName, len_at, 4, path()));
    }
    utf8(name, span.offset, StrField::TensorName, &path)?;
    if let Some(first) = first {
        let kind = ErrorKind::DuplicateTensor { first };
        return Err(Error::new(kind, span.offset, span.len, path()));
    }
    Ok(())
}

/// A dtype code must name a ggml type with a size: not unknown, not removed. `at` is the
/// field's offset, `path` its path.
pub(crate) fn dtype(code: u32, at: u64, path: impl FnOnce() -> Path) -> Result<GgmlType, Error> {
    let dtype = GgmlType::from_code(code);
    let kind = match dtype {
        GgmlType::Unknown(code) => ErrorKind::UnknownDtype { code },
        GgmlType::Removed(code) => ErrorKind::RemovedDtype { code, name: dtype.name() },
        _ => return Ok(dtype),
    };
    Err(Error::new(kind, at, 4, path()))
}

/// Row-major `dims` (their fields at `dims_at`) of a tensor of `dtype` (code `code`, at
/// `dtype_at`): no dimension 0, the row length (the last) a whole number of blocks, a byte
/// size that fits. Returns the byte size. `path` is the tensor's; `dim_path(j)` dimension
/// `j`'s, `field_path(f)` field `f`'s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn shape(
    dims: &[u64],
    dims_at: u64,
    dtype: GgmlType,
    code: u32,
    dtype_at: u64,
    dim_path: impl Fn(usize) -> Path,
    field_path: impl Fn(&'static str) -> Path,
) -> Result<u64, Error> {
    let dim_at = |j: usize| dims_at + 8 * j as u64;
    if let Some(j) = dims.iter().position(|&d| d == 0) {
        return Err(Error::new(ErrorKind::ZeroDim, dim_at(j), 8, dim_path(j)));
    }
    // The workspace's one size rule, in GGUF order (`ne[0]` the row length).
    let gguf_dims: SmallVec<[u64; 4]> = dims.iter().rev().copied().collect();
    let dims_len = 8 * dims.len() as u64;
    match tensor_nbytes(dtype, &gguf_dims) {
        Ok(n) => Ok(n),
        Err(SizeError::NotBlockMultiple { ne0, block_size, ty }) => {
            let last = dims.len().saturating_sub(1);
            let kind = ErrorKind::NotBlockMultiple { row_len: ne0, block_size, dtype: ty };
            Err(Error::new(kind, dim_at(last), 8, dim_path(last)))
        }
        Err(SizeError::ElementCountOverflow) => {
            Err(Error::new(ErrorKind::ElementCountOverflow, dims_at, dims_len, field_path("dims")))
        }
        Err(SizeError::UnsizedType(_)) => {
            // Removed and unknown codes were rejected by `dtype`.
            Err(Error::new(ErrorKind::UnknownDtype { code }, dtype_at, 4, field_path("dtype")))
        }
        // `SizeError` is non-exhaustive: anything else is a size that cannot be stored.
        Err(_) => {
            Err(Error::new(ErrorKind::ByteSizeOverflow, dims_at, dims_len, field_path("dims")))
        }
    }
}

/// A tensor's offset (its field at `at`): 64-aligned, and after the previous tensor's data
/// (`prev`), not inside it.
pub(crate) fn offset(
    offset: u64,
    prev: Option<&TensorInfo>,
    at: u64,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    let kind = if !offset.is_multiple_of(ALIGNMENT) {
        ErrorKind::Misaligned { offset }
    } else {
        match prev {
            Some(prev) if offset < prev.offset => {
                ErrorKind::OutOfOrder { offset, previous: prev.offset }
            }
            Some(prev) if offset < prev.offset.saturating_add(prev.nbytes) => {
                ErrorKind::Overlap { offset, previous_end: prev.offset.saturating_add(prev.nbytes) }
            }
            _ => return Ok(()),
        }
    };
    Err(Error::new(kind, at, 8, path()))
}

/// A tensor's stored size (its field at `size_at`) must be what dtype × dims require
/// (`expected`), and end inside 64 bits from `offset` (its field at `offset_at`).
pub(crate) fn size(
    declared: u64,
    expected: u64,
    offset: u64,
    size_at: u64,
    offset_at: u64,
    field_path: impl Fn(&'static str) -> Path,
) -> Result<(), Error> {
    if declared != expected {
        let kind = ErrorKind::SizeMismatch { declared, expected };
        return Err(Error::new(kind, size_at, 8, field_path("size")));
    }
    if offset.checked_add(declared).is_none() {
        return Err(Error::new(ErrorKind::OffsetOverflow, offset_at, 8, field_path("offset")));
    }
    Ok(())
}

/// The padding (`pad`, from `directory_end`) must be zero, the first tensor's data must not
/// start before the data section (`data_start`), and with a known `file_size` every tensor's
/// data must end inside the file. `offset_path(i)` is tensor `i`'s offset field's path.
pub(crate) fn data_section(
    pad: &[u8],
    directory_end: u64,
    data_start: u64,
    tensors: &[TensorInfo],
    file_size: Option<u64>,
    padding_path: impl FnOnce() -> Path,
    offset_path: impl Fn(usize) -> Path,
) -> Result<(), Error> {
    if let Some((j, &value)) = pad.iter().enumerate().find(|(_, b)| **b != 0) {
        let kind = ErrorKind::NonZeroPadding { value };
        return Err(Error::new(kind, directory_end + j as u64, 1, padding_path()));
    }
    // Offsets increase in directory order, so the first tensor starts lowest.
    if let Some(first) = tensors.first()
        && first.offset < data_start
    {
        let kind = ErrorKind::BeforeDataSection { offset: first.offset, data_start };
        return Err(Error::new(kind, first.offset_field(), 8, offset_path(0)));
    }
    if let Some(file_size) = file_size {
        for (i, t) in tensors.iter().enumerate() {
            let end = t.offset.saturating_add(t.nbytes);
            if end > file_size {
                let kind = ErrorKind::OutOfBounds { end, file_size };
                return Err(Error::new(kind, t.offset_field(), 8, offset_path(i)));
            }
        }
    }
    Ok(())
}
