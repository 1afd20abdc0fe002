//! The crate's one error type.

use sipllm_gguf::GgmlType;

/// Why a buffer cannot be dequantized. Every variant but [`Alloc`](DequantError::Alloc) (a
/// limit: the memory for new values) is the caller's input (a parameter error): the crate
/// does no I/O. Each has a stable [`code`](DequantError::code) and a
/// [`help`](DequantError::help) text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DequantError {
    /// The type has no dequantizer here (the integer types, Q8_1, Q8_K, Q1_0, Q2_0, removed
    /// and unknown codes): gguf-py 0.19.0 does not dequantize them either.
    #[error("cannot dequantize tensors of type {ty}: unsupported type")]
    UnsupportedType {
        /// The type.
        ty: GgmlType,
    },
    /// The input is not a whole number of blocks.
    #[error(
        "{len} bytes of {ty} are not a whole number of {type_size}-byte blocks \
         ({} whole blocks and {} bytes left over)",
        len / type_size,
        len % type_size
    )]
    PartialBlock {
        /// The type.
        ty: GgmlType,
        /// Input bytes.
        len: usize,
        /// Bytes per block of the type.
        type_size: usize,
    },
    /// The output does not hold exactly the input's element count.
    #[error("{blocks} blocks of {ty} hold {expected} values, but the output has room for {actual}")]
    OutputLength {
        /// The type.
        ty: GgmlType,
        /// Whole blocks in the input.
        blocks: usize,
        /// Elements the input holds.
        expected: usize,
        /// Length of the output slice.
        actual: usize,
    },
    /// The memory for new values ([`Values::zeroed`](crate::Values::zeroed)) could not be
    /// had.
    #[error("could not allocate {bytes} bytes for the values")]
    Alloc {
        /// Bytes asked for (4 per value, saturating at `u64::MAX`).
        bytes: u64,
    },
}

impl DequantError {
    /// A stable machine-readable code (`quants::dequant::…`).
    pub fn code(&self) -> &'static str {
        match self {
            DequantError::UnsupportedType { .. } => "quants::dequant::unsupported_type",
            DequantError::PartialBlock { .. } => "quants::dequant::partial_block",
            DequantError::OutputLength { .. } => "quants::dequant::output_length",
            DequantError::Alloc { .. } => "quants::dequant::alloc",
        }
    }

    /// How to fix it.
    pub fn help(&self) -> &'static str {
        match self {
            DequantError::UnsupportedType { .. } => {
                "read the tensor's raw bytes instead (`sipllm read` without `--as f32`); \
                 `sipllm_quants::is_supported` lists the types that have values"
            }
            DequantError::PartialBlock { .. } => {
                "pass whole blocks: a tensor's byte length is its element count / block size * \
                 type size (sipllm_gguf::ggml::tensor_nbytes)"
            }
            DequantError::OutputLength { .. } => {
                "size the output to the element count: input bytes / type size * block size \
                 (sipllm_quants::element_count)"
            }
            DequantError::Alloc { .. } => {
                "the values do not fit in memory: dequantize them in parts into a reused \
                 buffer (sipllm_quants::dequantize, WeightSource::read_f32_at)"
            }
        }
    }
}
