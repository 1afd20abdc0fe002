//! Errors and warnings.
//!
//! Every finding says **where** (absolute byte offset and length in the GGUF, plus a logical
//! [`Path`] such as `metadata[12] "tokenizer.ggml.tokens"[5031]`), **what** (a
//! `#[non_exhaustive]` kind with a stable code such as `gguf::metadata::duplicate_key`) and **how
//! to fix it** ([`Error::help`]). The parser crate does not depend on miette: the CLI renders
//! these as diagnostics over a hex view of the file.

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

impl ErrorKind {
    /// The stable code: `gguf::<area>::<name>`. Codes are API and never reused.
    pub fn code(&self) -> &'static str {
        use ErrorKind::*;
        match self {
            BadMagic { .. } => "gguf::header::bad_magic",
            UnsupportedVersion { .. } => "gguf::header::unsupported_version",
            VersionOneDisabled => "gguf::header::v1_disabled",
            EndianMismatch { .. } => "gguf::header::endian_mismatch",
            UnexpectedEof { .. } => "gguf::input::unexpected_eof",
            HeaderTooLarge { .. } => "gguf::limits::header_too_large",
            TooManyKvs { .. } => "gguf::limits::too_many_kvs",
            TooManyTensors { .. } => "gguf::limits::too_many_tensors",
            StringTooLong { .. } => "gguf::limits::string_too_long",
            ArrayTooLong { .. } => "gguf::limits::array_too_long",
            NestingTooDeep { .. } => "gguf::limits::nesting_too_deep",
            EmptyKey => "gguf::metadata::empty_key",
            InvalidUtf8 { field: StrField::Key, .. } => "gguf::metadata::invalid_utf8_key",
            InvalidUtf8 { field: StrField::Value, .. } => "gguf::metadata::invalid_utf8_value",
            InvalidUtf8 { field: StrField::TensorName, .. } => "gguf::tensor::invalid_utf8_name",
            DuplicateKey { .. } => "gguf::metadata::duplicate_key",
            UnknownValueType { .. } => "gguf::metadata::unknown_value_type",
            NestedArray => "gguf::metadata::nested_array",
            InvalidBool { .. } => "gguf::metadata::invalid_bool",
            AlignmentType { .. } => "gguf::metadata::alignment_type",
            BadAlignment { .. } => "gguf::metadata::bad_alignment",
            NameTooLong { .. } => "gguf::tensor::name_too_long",
            NulInKey => "gguf::metadata::nul_in_key",
            NulInName => "gguf::tensor::nul_in_name",
            DuplicateTensor { .. } => "gguf::tensor::duplicate_name",
            TooManyDims { .. } => "gguf::tensor::too_many_dims",
            ZeroDim => "gguf::tensor::zero_dim",
            DimTooLarge { .. } => "gguf::tensor::dim_too_large",
            ElementCountOverflow => "gguf::tensor::element_count_overflow",
            ByteSizeOverflow => "gguf::tensor::byte_size_overflow",
            UnknownGgmlType { .. } => "gguf::tensor::unknown_type",
            RemovedGgmlType { .. } => "gguf::tensor::removed_type",
            NotBlockMultiple { .. } => "gguf::tensor::not_block_multiple",
            MisalignedOffset { .. } => "gguf::layout::misaligned",
            NonContiguousOffset { .. } => "gguf::layout::not_contiguous",
            TensorOverlap { .. } => "gguf::layout::overlap",
            TensorOutOfBounds { .. } => "gguf::layout::out_of_bounds",
            OffsetOverflow => "gguf::layout::offset_overflow",
            Misuse { .. } => "gguf::decoder::misuse",
        }
    }

    /// What to check or change. Says what in the file is wrong and what usually causes it.
    pub fn help(&self) -> &'static str {
        use ErrorKind::*;
        match self {
            BadMagic { found: [b'F', b'U', b'G', b'G'] } => {
                "\"FUGG\" is the byte-swapped magic of \
                pre-release GGUF files (August 2023); no current reader accepts it. Re-convert \
                the model with a current llama.cpp converter."
            }
            BadMagic { found: [b'L', b'L', b'M', b'W'] } => {
                "this is a .llmw file, which llama.cpp cannot load (it reads only GGUF); \
                `sipllm convert` writes a GGUF copy."
            }
            BadMagic { .. } => {
                "this is not a GGUF file, or it is damaged at the start: check \
                the path, and that the download completed (an HTML error page or a Git LFS \
                pointer is a common cause)."
            }
            UnsupportedVersion { .. } => {
                "GGUF versions 2 and 3 are read (and 1 when enabled); \
                a newer version needs a newer reader, version 0 is invalid."
            }
            VersionOneDisabled => {
                "GGUF v1 (2023, 32-bit lengths) is obsolete and rejected by \
                llama.cpp; enable v1 reading (ParseOptions::allow_v1) to inspect it, or \
                re-convert the model."
            }
            EndianMismatch { .. } => {
                "this file is big-endian; llama.cpp on a little-endian \
                machine cannot load it. Convert it with gguf-py's gguf-convert-endian, or \
                use the strict profile to read it here."
            }
            UnexpectedEof { .. } => {
                "the file is truncated: the download or copy did not \
                complete. Compare its size with the source."
            }
            HeaderTooLarge { .. }
            | TooManyKvs { .. }
            | TooManyTensors { .. }
            | StringTooLong { .. }
            | ArrayTooLong { .. }
            | NestingTooDeep { .. } => {
                "a declared size is far beyond any real model file, which usually means a \
                 corrupted length field; if the file is genuine, raise the limit in Limits."
            }
            EmptyKey => {
                "every metadata key needs a name; the length field is probably 0 by \
                mistake."
            }
            InvalidUtf8 { .. } => {
                "GGUF strings must be UTF-8; the writer stored raw bytes. \
                The lenient profile reads them as bytes."
            }
            DuplicateKey { .. } => {
                "a key may appear once; gguf-py and llama.cpp reject the \
                file. Remove one of the two entries (the lenient profile keeps the last)."
            }
            UnknownValueType { .. } => {
                "valid value types are 0-12 (0-9 in v1); the type field \
                is corrupted or the file uses an experimental type."
            }
            NestedArray => "llama.cpp cannot load arrays of arrays; flatten the value.",
            InvalidBool { .. } => {
                "bools are stored as 0 or 1; llama.cpp treats any non-zero \
                byte as true (use the llama-cpp or lenient profile to accept it)."
            }
            AlignmentType { .. } => "store general.alignment as a UINT32 scalar.",
            BadAlignment { .. } => {
                "general.alignment must be a non-zero power of two (32 is \
                the default)."
            }
            NameTooLong { .. } => {
                "tensor names are at most 64 bytes by the spec, and ggml \
                needs fewer than 64; shorten the name."
            }
            NulInKey => {
                "remove the NUL byte: llama.cpp reads the key only up to it, so it can \
                stand for another key (general.alignment\\0x sets the alignment there) while \
                other readers see an unknown key."
            }
            NulInName => {
                "remove the NUL byte: llama.cpp cuts the name there, which can make two \
                names collide or name another tensor than other readers see."
            }
            DuplicateTensor { .. } => "each tensor name must be unique; rename one.",
            TooManyDims { .. } => {
                "ggml tensors have at most 4 dimensions; the n_dims field is \
                probably corrupted."
            }
            ZeroDim => {
                "a tensor with a zero dimension holds no data; llama.cpp accepts it, \
                the spec profile does not."
            }
            DimTooLarge { .. } => {
                "dimensions must be below 2^63; the field is probably \
                corrupted."
            }
            ElementCountOverflow | ByteSizeOverflow => {
                "the dimensions multiply past 64 bits: \
                they are corrupted (or crafted to overflow a reader's size math)."
            }
            UnknownGgmlType { .. } => {
                "this tensor type is newer than this reader, or the type \
                field is corrupted; the lenient profile reads the metadata anyway."
            }
            RemovedGgmlType { .. } => {
                "ggml removed this type; re-quantize the model with a \
                current llama.cpp."
            }
            NotBlockMultiple { .. } => {
                "quantized rows are stored in whole blocks; ne[0] must \
                be a multiple of the block size."
            }
            MisalignedOffset { .. } => {
                "tensor offsets must be multiples of general.alignment \
                (default 32); the directory or the alignment key is wrong."
            }
            NonContiguousOffset { .. } => {
                "llama.cpp requires tensor data packed in directory \
                order, each padded to the alignment; rewrite the file with a GGUF writer."
            }
            TensorOverlap { .. } => "two tensors share bytes; the directory is corrupted.",
            TensorOutOfBounds { .. } => {
                "the file is shorter than its directory says: it is \
                truncated or the offset is corrupted."
            }
            OffsetOverflow => {
                "an offset is so large that offset arithmetic overflows; the \
                field is corrupted."
            }
            Misuse { .. } => "this is a bug in the program driving the decoder.",
        }
    }
}

/// What a [`Warning`] is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WarningKind {
    /// An error the profile tolerates (mostly `Lenient`: duplicates, invalid UTF-8, …).
    #[error("{0} (tolerated by this profile)")]
    Tolerated(ErrorKind),
    /// A key with non-ASCII bytes (the spec says keys are ASCII).
    #[error("key is not ASCII")]
    KeyNotAscii,
    /// A key that is not `lower_snake_case` segments separated by dots.
    #[error("key is not dot-separated lower_snake_case")]
    KeyNotSnakeCase,
    /// A key over 65535 bytes (the spec's limit).
    #[error("key of {len} bytes exceeds the spec's 65535")]
    KeyTooLong {
        /// Key length.
        len: u64,
    },
    /// A tensor name of exactly 64 bytes: the spec allows it, ggml (`GGML_MAX_NAME`) does not.
    #[error("tensor name of 64 bytes: llama.cpp rejects names of 64 bytes or more")]
    NameRejectedByLlamaCpp,
    /// An empty tensor name.
    #[error("empty tensor name")]
    EmptyTensorName,
    /// A tensor name holding an invisible character (default-ignorable, a format character, a
    /// line or paragraph separator, U+2800: [`is_invisible`](crate::is_invisible)): it prints
    /// like a name without it. Keys holding one are already `key_not_ascii`.
    #[error("tensor name holds the invisible character U+{:04X} at byte {at}", u32::from(*ch))]
    InvisibleInName {
        /// The first such character.
        ch: char,
        /// Its byte offset in the name.
        at: u64,
    },
    /// More warnings than [`MAX_WARNINGS`](crate::decoder::MAX_WARNINGS); the rest were dropped.
    #[error("{count} further warning(s) not recorded")]
    Suppressed {
        /// Warnings dropped.
        count: u64,
    },
    /// Unused bytes between the previous tensor's (padded) end and this tensor's data.
    #[error("{gap} unused byte(s) before this tensor's data")]
    TensorGap {
        /// Bytes skipped.
        gap: u64,
    },
    /// Tensor data is not stored in directory order.
    #[error("data is stored before the previous tensor's (not in directory order)")]
    OutOfOrder,
    /// Non-zero bytes in the padding before the data section.
    #[error("padding before the data section holds non-zero bytes")]
    NonZeroPadding,
}

impl WarningKind {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            WarningKind::Tolerated(kind) => kind.code(),
            WarningKind::KeyNotAscii => "gguf::metadata::key_not_ascii",
            WarningKind::KeyNotSnakeCase => "gguf::metadata::key_not_snake_case",
            WarningKind::KeyTooLong { .. } => "gguf::metadata::key_too_long",
            WarningKind::NameRejectedByLlamaCpp => "gguf::tensor::name_64_bytes",
            WarningKind::EmptyTensorName => "gguf::tensor::empty_name",
            WarningKind::InvisibleInName { .. } => "gguf::tensor::invisible_char",
            WarningKind::Suppressed { .. } => "gguf::limits::warnings_suppressed",
            WarningKind::TensorGap { .. } => "gguf::layout::gap",
            WarningKind::OutOfOrder => "gguf::layout::out_of_order",
            WarningKind::NonZeroPadding => "gguf::layout::nonzero_padding",
        }
    }

    /// What to check.
    pub fn help(&self) -> &'static str {
        match self {
            WarningKind::Tolerated(kind) => kind.help(),
            WarningKind::KeyNotAscii | WarningKind::KeyNotSnakeCase => {
                "the spec asks for \
                ASCII lower_snake_case keys separated by dots; readers accept others, but \
                tools matching well-known keys will not find this one."
            }
            WarningKind::KeyTooLong { .. } => "the spec caps keys at 65535 bytes.",
            WarningKind::NameRejectedByLlamaCpp => {
                "shorten the name to 63 bytes so llama.cpp \
                can load the file."
            }
            WarningKind::EmptyTensorName => {
                "give the tensor a name; tools look tensors up by \
                name."
            }
            WarningKind::InvisibleInName { .. } => {
                "the name prints like one without this \
                character, so a look-alike can hide a tensor; rename it (sipllm edit \
                --rename-tensor)."
            }
            WarningKind::Suppressed { .. } => {
                "the file has many problems; fix the ones \
                reported first."
            }
            WarningKind::TensorGap { .. } => {
                "legal, but writers pack tensors; llama.cpp \
                rejects files whose data is not packed."
            }
            WarningKind::OutOfOrder => {
                "legal, but llama.cpp rejects files whose data is not \
                in directory order."
            }
            WarningKind::NonZeroPadding => {
                "the spec says padding is zero; non-zero bytes can \
                hide data."
            }
        }
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

impl Kind for WarningKind {
    fn code(&self) -> &'static str {
        WarningKind::code(self)
    }

    fn help(&self) -> &'static str {
        WarningKind::help(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_the_docs_say() {
        let p = Path::root()
            .with(PathSeg::Metadata { index: 12, key: Some("tokenizer.ggml.tokens".into()) })
            .with(PathSeg::Element(5031));
        assert_eq!(p.to_string(), "metadata[12] \"tokenizer.ggml.tokens\"[5031]");
        let p = Path::root()
            .with(PathSeg::Tensor { index: 7, name: Some("blk.0.attn_q.weight".into()) })
            .with(crate::grammar::ne(1));
        assert_eq!(p.to_string(), "tensor[7] \"blk.0.attn_q.weight\" ne[1]");
        // Control characters from the file are escaped, never printed raw.
        let p = Path::root().with(PathSeg::Metadata { index: 0, key: Some("a\x1b[2Jb".into()) });
        assert_eq!(p.to_string(), "metadata[0] \"a\\u{1b}[2Jb\"");
    }

    #[test]
    fn bad_magic_shows_hex_and_ascii() {
        let e = ErrorKind::BadMagic { found: *b"FUGG" };
        assert_eq!(e.to_string(), "bad magic 46 55 47 47 (\"FUGG\"): expected \"GGUF\"");
        assert!(e.help().contains("pre-release"));
    }
}
