//! [`WarningKind`]: what a [`Warning`](super::Warning) is about.

use super::{ErrorKind, Kind};

/// What a [`Warning`](super::Warning) is about.
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

impl Kind for WarningKind {
    fn code(&self) -> &'static str {
        WarningKind::code(self)
    }

    fn help(&self) -> &'static str {
        WarningKind::help(self)
    }
}
