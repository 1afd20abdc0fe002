//! [`MetaError`]: a metadata value that is absent, or not of the type or range asked for.

use sipllm_format::Kind;

/// A metadata value that is absent, or not of the type or range asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// A metadata key is absent.
    #[error("metadata key {key:?} is missing")]
    Missing {
        /// The key.
        key: String,
    },
    /// A metadata value has another type than the one asked for.
    #[error("metadata key {key:?}: expected {expected}, found {actual}")]
    Type {
        /// The key.
        key: String,
        /// The type asked for (e.g. `integer`).
        expected: &'static str,
        /// The type found (e.g. `float`).
        actual: &'static str,
    },
    /// A metadata integer does not fit the type asked for.
    #[error("metadata key {key:?}{}: value {value} does not fit {target}", elem(*index))]
    Range {
        /// The key.
        key: String,
        /// For arrays, the element index.
        index: Option<u64>,
        /// The stored value.
        value: i128,
        /// The Rust type asked for (e.g. `u32`).
        target: &'static str,
    },
    /// A metadata string is not valid UTF-8 (only files parsed leniently contain these).
    #[error("metadata key {key:?}{}: the string is not valid UTF-8", elem(*index))]
    Utf8 {
        /// The key.
        key: String,
        /// For arrays, the element index.
        index: Option<u64>,
    },
}
fn elem(index: Option<u64>) -> String {
    index.map(|i| format!("[{i}]")).unwrap_or_default()
}
impl Kind for MetaError {
    fn code(&self) -> &'static str {
        match self {
            MetaError::Missing { .. } => "streaming::meta::missing",
            MetaError::Type { .. } => "streaming::meta::type_mismatch",
            MetaError::Range { .. } => "streaming::meta::out_of_range",
            MetaError::Utf8 { .. } => "streaming::meta::invalid_utf8",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            MetaError::Missing { .. } => {
                "the model file lacks this key: check the \
                architecture prefix (e.g. `llama.` vs `qwen2.`) and the converter version."
            }
            MetaError::Type { .. } => {
                "the value is stored with another type; use the \
                accessor for the stored type, or `meta()` for the raw value."
            }
            MetaError::Range { .. } => {
                "the stored value is out of range for the type \
                asked for; use a wider type or check the file."
            }
            MetaError::Utf8 { .. } => {
                "the writer stored raw bytes; read the value with \
                `meta()` and `MetaStr::as_bytes`."
            }
        }
    }
}
impl MetaError {
    /// The stable code (`streaming::meta::…`); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }
}
