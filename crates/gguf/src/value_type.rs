//! The metadata value types: their codes, names and sizes.

use std::fmt;

/// A GGUF metadata value type (`gguf_type`), spelled as the spec spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ValueType {
    Uint8,
    Int8,
    Uint16,
    Int16,
    Uint32,
    Int32,
    Float32,
    Bool,
    String,
    Array,
    Uint64,
    Int64,
    Float64,
}

impl ValueType {
    /// All types in code order.
    pub const ALL: [ValueType; 13] = [
        ValueType::Uint8,
        ValueType::Int8,
        ValueType::Uint16,
        ValueType::Int16,
        ValueType::Uint32,
        ValueType::Int32,
        ValueType::Float32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::Uint64,
        ValueType::Int64,
        ValueType::Float64,
    ];

    /// The type for a stored code, if valid (0–12).
    pub fn from_code(code: u32) -> Option<ValueType> {
        usize::try_from(code).ok().and_then(|i| Self::ALL.get(i)).copied()
    }

    /// The stored code.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The name as the spec spells it: `UINT8` … `FLOAT64`, `BOOL`, `STRING`, `ARRAY`.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Uint8 => "UINT8",
            ValueType::Int8 => "INT8",
            ValueType::Uint16 => "UINT16",
            ValueType::Int16 => "INT16",
            ValueType::Uint32 => "UINT32",
            ValueType::Int32 => "INT32",
            ValueType::Float32 => "FLOAT32",
            ValueType::Bool => "BOOL",
            ValueType::String => "STRING",
            ValueType::Array => "ARRAY",
            ValueType::Uint64 => "UINT64",
            ValueType::Int64 => "INT64",
            ValueType::Float64 => "FLOAT64",
        }
    }

    /// Parses a spec name (`UINT32`, …).
    pub fn from_name(name: &str) -> Option<ValueType> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Bytes per value for fixed-size types; `None` for strings and arrays.
    pub fn fixed_size(self) -> Option<usize> {
        Some(match self {
            ValueType::Uint8 | ValueType::Int8 | ValueType::Bool => 1,
            ValueType::Uint16 | ValueType::Int16 => 2,
            ValueType::Uint32 | ValueType::Int32 | ValueType::Float32 => 4,
            ValueType::Uint64 | ValueType::Int64 | ValueType::Float64 => 8,
            ValueType::String | ValueType::Array => return None,
        })
    }

    /// True for types that exist in GGUF v1 (codes 0–9).
    pub fn in_v1(self) -> bool {
        self.code() <= 9
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
