//! [`ValueSummary`]: an owned, bounded summary of a metadata value, for reports that outlive
//! the parsed header a value borrows from (a 128,256-token vocabulary is summarized, not
//! copied).

use sipllm_gguf::ValueType;
use sipllm_gguf::writer::Value;

/// Bytes of a string kept.
const STRING_HEAD: usize = 256;
/// Elements of an array kept.
const ARRAY_HEAD: usize = 64;

/// A metadata value as a report shows it: scalars exact, strings and arrays cut to their first
/// bytes or elements with their full length kept.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ValueSummary {
    /// A number or a bool (never a string or an array).
    Scalar(Value<'static>),
    /// A string: its first bytes and its length.
    String {
        /// Up to 256 bytes.
        head: Vec<u8>,
        /// The string's length in bytes.
        len: u64,
    },
    /// An array built in memory: its first elements and its length.
    Array {
        /// The element type.
        elem_type: ValueType,
        /// Up to 64 elements.
        head: Vec<ValueSummary>,
        /// The element count.
        len: u64,
    },
    /// An array kept as the file stores it (elements not decoded): its type and length.
    Stored {
        /// The element type.
        elem_type: ValueType,
        /// The element count.
        len: u64,
    },
}

impl ValueSummary {
    /// The summary of `v`.
    pub fn of(v: &Value<'_>) -> ValueSummary {
        match v {
            Value::String(s) => ValueSummary::String {
                head: s.get(..STRING_HEAD.min(s.len())).unwrap_or_default().to_vec(),
                len: s.len() as u64,
            },
            Value::Array { elem_type, elems } => ValueSummary::Array {
                elem_type: *elem_type,
                head: elems.iter().take(ARRAY_HEAD).map(ValueSummary::of).collect(),
                len: elems.len() as u64,
            },
            Value::View(a) => ValueSummary::Stored { elem_type: a.elem_type(), len: a.len() },
            Value::Uint8(x) => ValueSummary::Scalar(Value::Uint8(*x)),
            Value::Int8(x) => ValueSummary::Scalar(Value::Int8(*x)),
            Value::Uint16(x) => ValueSummary::Scalar(Value::Uint16(*x)),
            Value::Int16(x) => ValueSummary::Scalar(Value::Int16(*x)),
            Value::Uint32(x) => ValueSummary::Scalar(Value::Uint32(*x)),
            Value::Int32(x) => ValueSummary::Scalar(Value::Int32(*x)),
            Value::Uint64(x) => ValueSummary::Scalar(Value::Uint64(*x)),
            Value::Int64(x) => ValueSummary::Scalar(Value::Int64(*x)),
            Value::Float32(x) => ValueSummary::Scalar(Value::Float32(*x)),
            Value::Float64(x) => ValueSummary::Scalar(Value::Float64(*x)),
            Value::Bool(x) => ValueSummary::Scalar(Value::Bool(*x)),
        }
    }
}
