//! The stable code and the help of each [`ErrorKind`].

use super::{ErrorKind, StrField};

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
