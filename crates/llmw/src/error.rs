//! Parse errors.
//!
//! Every error says **where** (absolute byte offset and length in the `.llmw` file, plus a
//! logical [`Path`] such as `metadata[12] "tokenizer.tokens"[5031]`), **what** (a
//! `#[non_exhaustive]` kind with a stable code such as `llmw::metadata::duplicate_key`) and
//! **how to fix it** ([`Error::help`]). The format is strict and has no warnings: a file is
//! valid or it is rejected with the first problem in file order.
//!
//! The shape is the one both formats share (`sipllm_format`): the same [`Finding`], [`Path`]
//! and rendering as GGUF's errors; the kinds are `.llmw`'s own.

use std::fmt;

pub use sipllm_format::{Finding, Path, PathSeg};
use sipllm_gguf::GgmlType;

/// A fatal parse error: the bytes are not a valid `.llmw` file (or not under these limits).
///
/// The same [`Finding`] as the GGUF parser's errors: kind, absolute byte
/// range, logical path, stable code and help.
pub type Error = Finding<ErrorKind>;

/// Which string a UTF-8 problem was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrField {
    /// A metadata key.
    Key,
    /// A string value (scalar or array element).
    Value,
    /// A tensor name.
    TensorName,
}

impl fmt::Display for StrField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StrField::Key => "key",
            StrField::Value => "string value",
            StrField::TensorName => "tensor name",
        })
    }
}

/// What is wrong with the file. Each variant has a stable [`code`](ErrorKind::code) and a
/// [`help`](ErrorKind::help) text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The first four bytes are not `LLMW`.
    #[error("bad magic {}: expected \"LLMW\"", show_magic(found))]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// The format version is not 1 or 2.
    #[error("unsupported .llmw version {version}: versions 1 and 2 are read")]
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The input ended inside an item.
    #[error("unexpected end of input: at least {needed} more byte(s) needed")]
    UnexpectedEof {
        /// How many more bytes the item needed, at least.
        needed: u64,
    },
    /// A string, array or the padding would end beyond [`Limits::max_header_bytes`].
    ///
    /// [`Limits::max_header_bytes`]: crate::Limits::max_header_bytes
    #[error("the header would extend past {max} bytes (the header size limit)")]
    HeaderTooLarge {
        /// The limit.
        max: u64,
    },
    /// The header declares more metadata entries than the limit allows.
    #[error("{count} metadata entries declared; the limit is {max}")]
    TooManyMeta {
        /// Declared count.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// The header declares more tensors than the limit allows.
    #[error("{count} tensors declared; the limit is {max}")]
    TooManyTensors {
        /// Declared count.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// A string is longer than the limit.
    #[error("string of {len} bytes declared; the limit is {max}")]
    StringTooLong {
        /// Declared length.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// An array has more elements than the limit.
    #[error("array of {len} elements declared; the limit is {max}")]
    ArrayTooLong {
        /// Declared element count.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// A metadata key is empty.
    #[error("empty key")]
    EmptyKey,
    /// A key, string value or tensor name is not valid UTF-8.
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
        /// Index of the first entry with this key.
        first: u32,
    },
    /// A metadata type tag outside 0–5.
    #[error("unknown metadata type tag {tag}")]
    UnknownTag {
        /// The tag found.
        tag: u8,
    },
    /// An array tag (3–5) in a version 1 file.
    #[error("array type tag {tag} in a version 1 file: arrays need version 2")]
    ArrayInVersion1 {
        /// The tag found.
        tag: u8,
    },
    /// A tensor name is empty.
    #[error("empty tensor name")]
    EmptyTensorName,
    /// Two tensors have the same name.
    #[error("duplicate tensor name (first used by tensor[{first}])")]
    DuplicateTensor {
        /// Index of the first tensor with this name.
        first: u32,
    },
    /// A dtype code ggml never defined (beyond its table).
    #[error("unknown dtype {code}")]
    UnknownDtype {
        /// The code found.
        code: u32,
    },
    /// A dtype code ggml removed: its size is no longer defined.
    #[error("dtype {code} ({name}) was removed from ggml")]
    RemovedDtype {
        /// The code found.
        code: u32,
        /// Its historical name.
        name: &'static str,
    },
    /// `n_dims` is 0 or above 4.
    #[error("{n_dims} dimensions; 1 to 4 allowed")]
    BadDimCount {
        /// The value found.
        n_dims: u32,
    },
    /// A dimension is 0.
    #[error("dimension is 0")]
    ZeroDim,
    /// The innermost (last, row-length) dimension is not a multiple of the dtype's block size.
    #[error("row length {row_len} is not a multiple of the block size {block_size} of {dtype}")]
    NotBlockMultiple {
        /// The innermost dimension.
        row_len: u64,
        /// The dtype's block size.
        block_size: u64,
        /// The dtype.
        dtype: GgmlType,
    },
    /// The product of the dimensions overflows 64 bits.
    #[error("the element count overflows 64 bits")]
    ElementCountOverflow,
    /// The tensor's byte size overflows 64 bits.
    #[error("the byte size overflows 64 bits")]
    ByteSizeOverflow,
    /// The stored byte size disagrees with dtype × dims.
    #[error("byte size {declared} disagrees with dtype x dims = {expected}")]
    SizeMismatch {
        /// The size stored in the directory.
        declared: u64,
        /// What dtype and dims require.
        expected: u64,
    },
    /// A tensor offset is not a multiple of 64.
    #[error("offset {offset} is not a multiple of 64")]
    Misaligned {
        /// The offset found.
        offset: u64,
    },
    /// A tensor's data starts before the previous tensor's (tensors must be stored in
    /// directory order).
    #[error("data at {offset} starts before the previous tensor's data at {previous}")]
    OutOfOrder {
        /// This tensor's offset.
        offset: u64,
        /// The previous tensor's offset.
        previous: u64,
    },
    /// A tensor's data starts inside the previous tensor's data.
    #[error("data at {offset} overlaps the previous tensor's data, which ends at {previous_end}")]
    Overlap {
        /// This tensor's offset.
        offset: u64,
        /// End of the previous tensor's data.
        previous_end: u64,
    },
    /// `offset + size` overflows 64 bits.
    #[error("offset + size overflows 64 bits")]
    OffsetOverflow,
    /// Tensor data starts before the data section (inside the header or its padding).
    #[error("data at {offset} starts before the data section at {data_start}")]
    BeforeDataSection {
        /// The offset found.
        offset: u64,
        /// Where the data section starts.
        data_start: u64,
    },
    /// Tensor data ends past the end of the file.
    #[error("data ends at {end}, past the end of the file ({file_size} bytes)")]
    OutOfBounds {
        /// End of the tensor's data.
        end: u64,
        /// The file size.
        file_size: u64,
    },
    /// A byte of the padding between the directory and the data section is not zero.
    #[error("padding byte {value:#04x} is not zero")]
    NonZeroPadding {
        /// The byte found.
        value: u8,
    },
    /// The decoder was driven against its contract (a bug in the caller).
    #[error("decoder misuse: {reason}")]
    Misuse {
        /// What went wrong.
        reason: &'static str,
    },
}

fn show_magic(found: &[u8; 4]) -> String {
    let hex: Vec<String> = found.iter().map(|b| format!("{b:02x}")).collect();
    let ascii: String =
        found.iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
    format!("{} ({ascii:?})", hex.join(" "))
}

impl ErrorKind {
    /// Every code [`code`](Self::code) can return, in declaration order.
    pub const CODES: &'static [&'static str] = &[
        "llmw::header::bad_magic",
        "llmw::header::unsupported_version",
        "llmw::input::unexpected_eof",
        "llmw::limits::header_too_large",
        "llmw::limits::too_many_meta",
        "llmw::limits::too_many_tensors",
        "llmw::limits::string_too_long",
        "llmw::limits::array_too_long",
        "llmw::metadata::empty_key",
        "llmw::metadata::invalid_utf8_key",
        "llmw::metadata::invalid_utf8_value",
        "llmw::tensor::invalid_utf8_name",
        "llmw::metadata::duplicate_key",
        "llmw::metadata::unknown_tag",
        "llmw::metadata::array_in_v1",
        "llmw::tensor::empty_name",
        "llmw::tensor::duplicate_name",
        "llmw::tensor::unknown_dtype",
        "llmw::tensor::removed_dtype",
        "llmw::tensor::bad_dim_count",
        "llmw::tensor::zero_dim",
        "llmw::tensor::not_block_multiple",
        "llmw::tensor::element_count_overflow",
        "llmw::tensor::byte_size_overflow",
        "llmw::tensor::size_mismatch",
        "llmw::layout::misaligned",
        "llmw::layout::out_of_order",
        "llmw::layout::overlap",
        "llmw::layout::offset_overflow",
        "llmw::layout::before_data_section",
        "llmw::layout::out_of_bounds",
        "llmw::layout::nonzero_padding",
        "llmw::decoder::misuse",
    ];
}

impl ErrorKind {
    /// The stable code: `llmw::<area>::<name>`. Codes are API: they never change meaning.
    pub fn code(&self) -> &'static str {
        use ErrorKind::*;
        match self {
            BadMagic { .. } => "llmw::header::bad_magic",
            UnsupportedVersion { .. } => "llmw::header::unsupported_version",
            UnexpectedEof { .. } => "llmw::input::unexpected_eof",
            HeaderTooLarge { .. } => "llmw::limits::header_too_large",
            TooManyMeta { .. } => "llmw::limits::too_many_meta",
            TooManyTensors { .. } => "llmw::limits::too_many_tensors",
            StringTooLong { .. } => "llmw::limits::string_too_long",
            ArrayTooLong { .. } => "llmw::limits::array_too_long",
            EmptyKey => "llmw::metadata::empty_key",
            InvalidUtf8 { field: StrField::Key, .. } => "llmw::metadata::invalid_utf8_key",
            InvalidUtf8 { field: StrField::Value, .. } => "llmw::metadata::invalid_utf8_value",
            InvalidUtf8 { field: StrField::TensorName, .. } => "llmw::tensor::invalid_utf8_name",
            DuplicateKey { .. } => "llmw::metadata::duplicate_key",
            UnknownTag { .. } => "llmw::metadata::unknown_tag",
            ArrayInVersion1 { .. } => "llmw::metadata::array_in_v1",
            EmptyTensorName => "llmw::tensor::empty_name",
            DuplicateTensor { .. } => "llmw::tensor::duplicate_name",
            UnknownDtype { .. } => "llmw::tensor::unknown_dtype",
            RemovedDtype { .. } => "llmw::tensor::removed_dtype",
            BadDimCount { .. } => "llmw::tensor::bad_dim_count",
            ZeroDim => "llmw::tensor::zero_dim",
            NotBlockMultiple { .. } => "llmw::tensor::not_block_multiple",
            ElementCountOverflow => "llmw::tensor::element_count_overflow",
            ByteSizeOverflow => "llmw::tensor::byte_size_overflow",
            SizeMismatch { .. } => "llmw::tensor::size_mismatch",
            Misaligned { .. } => "llmw::layout::misaligned",
            OutOfOrder { .. } => "llmw::layout::out_of_order",
            Overlap { .. } => "llmw::layout::overlap",
            OffsetOverflow => "llmw::layout::offset_overflow",
            BeforeDataSection { .. } => "llmw::layout::before_data_section",
            OutOfBounds { .. } => "llmw::layout::out_of_bounds",
            NonZeroPadding { .. } => "llmw::layout::nonzero_padding",
            Misuse { .. } => "llmw::decoder::misuse",
        }
    }

    /// What to check or change: what in the file is wrong and what usually causes it.
    pub fn help(&self) -> &'static str {
        use ErrorKind::*;
        match self {
            BadMagic { .. } => {
                "this is not a .llmw file, or it is damaged at the start: check the path and \
                 that the copy completed (a GGUF file starts with \"GGUF\")."
            }
            UnsupportedVersion { .. } => {
                "this reader knows versions 1 (scalar metadata) and 2 (adds arrays); a newer \
                 version needs a newer reader, 0 is invalid."
            }
            UnexpectedEof { .. } => {
                "the file is truncated: the write or copy did not complete. Compare its size \
                 with the source, or write it again."
            }
            HeaderTooLarge { .. }
            | TooManyMeta { .. }
            | TooManyTensors { .. }
            | StringTooLong { .. }
            | ArrayTooLong { .. } => {
                "a declared size is far beyond any real model file, which usually means a \
                 corrupted length field; if the file is genuine, raise the limit in Limits."
            }
            EmptyKey => "every metadata key needs a name; the length field is probably 0.",
            InvalidUtf8 { .. } => {
                ".llmw keys, names and strings must be UTF-8; the writer stored raw bytes or \
                 the field is corrupted."
            }
            DuplicateKey { .. } => "a key may appear once; remove one of the two entries.",
            UnknownTag { .. } => {
                "metadata type tags are 0 (i64), 1 (f64), 2 (string) and, in version 2, 3-5 \
                 (arrays); the tag byte is corrupted or the file is from a newer writer."
            }
            ArrayInVersion1 { .. } => {
                "array tags 3-5 exist only in version 2; the writer must set version 2 (the \
                 LlmwWriter does this whenever an array is present)."
            }
            EmptyTensorName => "every tensor needs a name; the length field is probably 0.",
            DuplicateTensor { .. } => "each tensor name must be unique; rename one.",
            UnknownDtype { .. } => {
                "dtypes are ggml type codes; this one is newer than this reader or the field is \
                 corrupted."
            }
            RemovedDtype { .. } => "ggml removed this type; convert the tensor to a current type.",
            BadDimCount { .. } => {
                "tensors have 1 to 4 dimensions (store a scalar as dims [1]); the n_dims field \
                 is probably corrupted."
            }
            ZeroDim => {
                ".llmw tensors are never empty: every dimension must be at least 1. Leave the \
                 tensor out instead."
            }
            NotBlockMultiple { .. } => {
                "quantized rows are stored in whole blocks; the last (innermost) dimension must \
                 be a multiple of the block size."
            }
            ElementCountOverflow | ByteSizeOverflow => {
                "the dimensions multiply past 64 bits: they are corrupted (or crafted to \
                 overflow a reader's size math)."
            }
            SizeMismatch { .. } => {
                "the stored byte size must equal what dtype x dims requires; the dtype, the \
                 dims or the size field is wrong."
            }
            Misaligned { .. } => {
                "tensor data must start at a multiple of 64 bytes from the start of the file; \
                 the offset field is corrupted."
            }
            OutOfOrder { .. } => {
                "tensor data must be stored in directory order; rewrite the file with the \
                 LlmwWriter."
            }
            Overlap { .. } => "two tensors share bytes; the directory is corrupted.",
            OffsetOverflow => {
                "an offset is so large that offset + size overflows; the field is corrupted."
            }
            BeforeDataSection { .. } => {
                "tensor data must start at or after the data section (the end of the tensor \
                 directory rounded up to 64); the offset field is corrupted."
            }
            OutOfBounds { .. } => {
                "the file is shorter than its directory says: it is truncated or the offset is \
                 corrupted."
            }
            NonZeroPadding { .. } => {
                "the padding between the directory and the data section must be zero; \
                 non-zero bytes can hide data."
            }
            Misuse { .. } => "this is a bug in the program driving the decoder.",
        }
    }
}

impl sipllm_format::grammar::Misuse for ErrorKind {
    fn misuse(reason: &'static str) -> ErrorKind {
        ErrorKind::Misuse { reason }
    }
}

impl sipllm_format::Kind for ErrorKind {
    fn code(&self) -> &'static str {
        ErrorKind::code(self)
    }

    fn help(&self) -> &'static str {
        ErrorKind::help(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared `Path` is tested where it lives (sipllm-format); `.llmw` names its
    /// row-major dimensions `dims[j]`.
    #[test]
    fn row_major_dims_render_as_dims() {
        let p = Path::root()
            .with(PathSeg::Tensor { index: 7, name: Some("blk.0.attn_q.weight".into()) })
            .with(PathSeg::Indexed { field: "dims", index: 1 });
        assert_eq!(p.to_string(), "tensor[7] \"blk.0.attn_q.weight\" dims[1]");
    }

    #[test]
    fn bad_magic_shows_hex_and_ascii() {
        let e = ErrorKind::BadMagic { found: *b"GGUF" };
        assert_eq!(e.to_string(), "bad magic 47 47 55 46 (\"GGUF\"): expected \"LLMW\"");
    }

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorKind::CODES {
            assert!(seen.insert(code), "duplicate code {code}");
            let parts: Vec<&str> = code.split("::").collect();
            assert_eq!(parts.len(), 3, "{code}");
            assert_eq!(parts[0], "llmw", "{code}");
            for part in &parts[1..] {
                assert!(
                    !part.is_empty()
                        && part
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{code}"
                );
            }
        }
    }
}
