//! Errors and warnings.
//!
//! Every finding says **where** (absolute byte offset and length in the GGUF, plus a logical
//! [`Path`] such as `metadata[12] "tokenizer.ggml.tokens"[5031]`), **what** (a
//! `#[non_exhaustive]` kind with a stable code such as `gguf::metadata::duplicate_key`) and **how
//! to fix it** ([`Error::help`]). The parser crate does not depend on miette: the CLI renders
//! these as diagnostics over a hex view of the file.

//!
//! The kinds' codes and helps are in `help.rs`, the warnings in `warning.rs`.

mod help;
mod warning;

pub use warning::WarningKind;

use std::fmt;

use sipllm_format::Span;
pub use sipllm_format::{Finding, Kind, MAX_SHOWN_NAME, Path, PathSeg, shown_name};

use crate::ggml::GgmlType;
use crate::value_type::ValueType;

/// The path of metadata pair `index`, named by its key when its span in `buf` is known.
pub(crate) fn kv_path(buf: &[u8], index: usize, key: Option<Span>) -> Path {
    Path::root().with(PathSeg::Metadata { index: index as u64, key: name_of(buf, key) })
}

/// The path of tensor info `index`, named when its name's span in `buf` is known.
pub(crate) fn tensor_path(buf: &[u8], index: usize, name: Option<Span>) -> Path {
    Path::root().with(PathSeg::Tensor { index: index as u64, name: name_of(buf, name) })
}

fn name_of(buf: &[u8], span: Option<Span>) -> Option<Box<str>> {
    span.and_then(|s| s.slice(buf)).map(sipllm_format::shown_name)
}

/// A fatal parse error: the file does not satisfy the selected profile.
pub type Error = Finding<ErrorKind>;

/// A non-fatal finding: the file is readable under the profile, but something deserves a look.
pub type Warning = Finding<WarningKind>;

/// Which string a UTF-8 problem was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrField {
    /// A metadata key.
    Key,
    /// A tensor name.
    TensorName,
    /// A string value (scalar or array element).
    Value,
}

impl fmt::Display for StrField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StrField::Key => "key",
            StrField::TensorName => "tensor name",
            StrField::Value => "string value",
        })
    }
}

/// What is wrong with the file. Each variant has a stable [`code`](ErrorKind::code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The first four bytes are not `GGUF`.
    #[error("bad magic {}: expected \"GGUF\"", show_magic(found))]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The version is not one this parser reads (0, above 3, or garbage).
    #[error("unsupported GGUF version {version}{}", swapped_hint(*version))]
    UnsupportedVersion {
        /// The version word, read little-endian.
        version: u32,
    },
    /// A GGUF v1 file, and v1 reading was not enabled.
    #[error("GGUF version 1 is not enabled")]
    VersionOneDisabled,
    /// A big-endian file under the `LlamaCpp` profile: llama.cpp on a little-endian host reads
    /// the byte-swapped version and rejects the file.
    #[error("big-endian GGUF (version word {version:#010x}): llama.cpp rejects byte-swapped files")]
    EndianMismatch {
        /// The version word, read little-endian.
        version: u32,
    },
    /// The input ended inside an item.
    #[error("unexpected end of input: at least {needed} more byte(s) needed")]
    UnexpectedEof {
        /// How many more bytes the item needed, at least.
        needed: u64,
    },
    /// A string or array would end beyond [`Limits::max_header_bytes`](crate::Limits).
    #[error("the header would extend past {max} bytes (the header size limit)")]
    HeaderTooLarge {
        /// The limit.
        max: u64,
    },
    /// The header declares more key/value pairs than the limit allows.
    #[error("{count} key/value pairs declared; the limit is {max}")]
    TooManyKvs {
        /// Declared count.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// The header declares more tensors than the limit allows.
    #[error("{count} tensors declared; the limit is {max}")]
    TooManyTensors {
        /// Declared count.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// A string is longer than the limit.
    #[error("string of {len} bytes declared; the limit is {max}")]
    StringTooLong {
        /// Declared length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// An array has more elements than the limit.
    #[error("array of {len} elements declared; the limit is {max}")]
    ArrayTooLong {
        /// Declared element count.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// Arrays are nested deeper than the limit.
    #[error("arrays nested deeper than {max} levels")]
    NestingTooDeep {
        /// The limit.
        max: u32,
    },
    /// A metadata key is empty.
    #[error("empty key")]
    EmptyKey,
    /// A key, tensor name or string value is not valid UTF-8.
    #[error("{field} is not valid UTF-8 (invalid byte at +{valid_up_to})")]
    InvalidUtf8 {
        /// Which kind of string.
        field: StrField,
        /// Bytes of valid UTF-8 before the first invalid byte.
        valid_up_to: u64,
    },
    /// The same key appears twice.
    #[error("duplicate key (first defined by metadata[{first}])")]
    DuplicateKey {
        /// Index of the first KV with this key.
        first: u64,
    },
    /// A value type (or array element type) code outside 0–12 (0–9 in v1).
    #[error("unknown value type {code}")]
    UnknownValueType {
        /// The code found.
        code: u32,
    },
    /// An array of arrays under the `LlamaCpp` profile (llama.cpp rejects them).
    #[error("nested array: llama.cpp rejects arrays of arrays")]
    NestedArray,
    /// A bool byte other than 0 or 1.
    #[error("bool byte {value:#04x} is neither 0 nor 1")]
    InvalidBool {
        /// The byte found.
        value: u8,
    },
    /// `general.alignment` is not a scalar UINT32.
    #[error("general.alignment must be UINT32 but is {found}")]
    AlignmentType {
        /// The type found (for arrays, `ARRAY`).
        found: ValueType,
    },
    /// `general.alignment` is zero or not a power of two.
    #[error("alignment {alignment} is not a non-zero power of two")]
    BadAlignment {
        /// The value found.
        alignment: u32,
    },
    /// A tensor name is longer than the profile allows.
    #[error("tensor name of {len} bytes; at most {max} allowed")]
    NameTooLong {
        /// Name length.
        len: u64,
        /// The maximum allowed.
        max: u64,
    },
    /// A metadata key with a NUL byte. ggml looks keys up as C strings (`strcmp`), so it
    /// finds this pair under the part before the NUL: `general.alignment\0x` is the alignment
    /// key to llama.cpp. Refused by the strict profile; a warning otherwise.
    #[error("key contains a NUL byte; llama.cpp looks the key up only up to it")]
    NulInKey,
    /// A tensor name with a NUL byte. ggml keeps only the part before it (`ggml_set_name`),
    /// so `ab\0cd` is `ab` to llama.cpp. Refused by the strict profile; a warning otherwise.
    #[error("tensor name contains a NUL byte; llama.cpp truncates the name there")]
    NulInName,
    /// Two tensors have the same name.
    #[error("duplicate tensor name (first used by tensor[{first}])")]
    DuplicateTensor {
        /// Index of the first tensor with this name.
        first: u64,
    },
    /// More than 4 dimensions.
    #[error("{n_dims} dimensions; at most {max} allowed")]
    TooManyDims {
        /// Declared dimension count.
        n_dims: u32,
        /// The maximum (4, `GGML_MAX_DIMS`).
        max: u32,
    },
    /// A dimension of 0 under the `Strict` profile.
    #[error("dimension is 0")]
    ZeroDim,
    /// A dimension of 2^63 or more under the `LlamaCpp` profile (ggml reads dims as `i64`).
    #[error("dimension {value} is negative as ggml reads it (i64)")]
    DimTooLarge {
        /// The value found.
        value: u64,
    },
    /// The product of the dimensions overflows.
    #[error("the element count overflows")]
    ElementCountOverflow,
    /// The tensor's byte size overflows.
    #[error("the byte size overflows")]
    ByteSizeOverflow,
    /// A ggml type code this parser does not know.
    #[error("unknown ggml type {code}")]
    UnknownGgmlType {
        /// The code found.
        code: u32,
    },
    /// A ggml type code that ggml removed.
    #[error("ggml type {code} ({name}) was removed from ggml")]
    RemovedGgmlType {
        /// The code found.
        code: u32,
        /// Its historical name.
        name: &'static str,
    },
    /// `ne[0]` is not a multiple of the type's block size.
    #[error("row length {ne0} is not a multiple of the {ty} block size {block_size}")]
    NotBlockMultiple {
        /// The row length (`ne[0]`).
        ne0: u64,
        /// The block size.
        block_size: u64,
        /// The tensor type.
        ty: GgmlType,
    },
    /// A tensor offset that is not a multiple of the alignment.
    #[error("offset {offset} is not a multiple of the alignment {alignment}")]
    MisalignedOffset {
        /// The relative offset.
        offset: u64,
        /// The alignment in force.
        alignment: u32,
    },
    /// Under the `LlamaCpp` profile: an offset that is not the running sum of the earlier
    /// tensors' padded sizes.
    #[error("offset {offset}, but llama.cpp expects {expected} (data packed in directory order)")]
    NonContiguousOffset {
        /// The relative offset found.
        offset: u64,
        /// The offset llama.cpp expects.
        expected: u64,
    },
    /// Two tensors' data ranges overlap.
    #[error("data overlaps tensor[{other}]")]
    TensorOverlap {
        /// Index of the other tensor.
        other: u64,
    },
    /// A tensor's data extends past the end of the file.
    #[error("data ends at byte {end} but the file has {file_size} bytes")]
    TensorOutOfBounds {
        /// Absolute end of the tensor's data.
        end: u64,
        /// The file size.
        file_size: u64,
    },
    /// An offset or the data-section start overflows 64 bits.
    #[error("offset arithmetic overflows 64 bits")]
    OffsetOverflow,
    /// The decoder was used against its contract (called after an error, or with a buffer
    /// that shrank).
    #[error("decoder misuse: {reason}")]
    Misuse {
        /// What the caller did.
        reason: &'static str,
    },
}

fn show_magic(found: &[u8; 4]) -> String {
    let ascii: String =
        found.iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
    format!("{:02x} {:02x} {:02x} {:02x} (\"{}\")", found[0], found[1], found[2], found[3], ascii)
}

fn swapped_hint(version: u32) -> &'static str {
    if version != 0 && version & 0xFFFF == 0 {
        " (looks byte-swapped, but the swapped value is not a supported version either)"
    } else {
        ""
    }
}

impl Kind for ErrorKind {
    fn code(&self) -> &'static str {
        ErrorKind::code(self)
    }

    fn help(&self) -> &'static str {
        ErrorKind::help(self)
    }
}

impl sipllm_format::grammar::Misuse for ErrorKind {
    fn misuse(reason: &'static str) -> ErrorKind {
        ErrorKind::Misuse { reason }
    }
}

#[cfg(test)]
mod tests;
