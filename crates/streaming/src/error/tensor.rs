//! [`TensorError`]: a tensor read that cannot be done as asked.

use sipllm_format::{Kind, group};
use sipllm_gguf::GgmlType;

/// A tensor read that cannot be done as asked: the request, not the file, is at fault (or the
/// tensor's type cannot be read this way).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The destination buffer of a tensor read does not have the tensor's byte size.
    #[error(
        "tensor {tensor:?} has {} bytes but the destination buffer has {}",
        group(*expected),
        group(*got)
    )]
    SizeMismatch {
        /// The tensor's name.
        tensor: String,
        /// The tensor's byte size.
        expected: u64,
        /// The buffer's length.
        got: u64,
    },
    /// A tensor read named a [`SourceTensor`](crate::SourceTensor) this source does not list.
    #[error("tensor {tensor:?} (at offset {offset}) is not a tensor of this source")]
    NotInSource {
        /// The name in the given info.
        tensor: String,
        /// The offset in the given info.
        offset: u64,
    },
    /// [`read_tensor`](crate::WeightSource::read_tensor) named a tensor this source does not
    /// have.
    #[error("no tensor named {name:?}")]
    Missing {
        /// The name asked for.
        name: String,
    },
    /// The tensor's type has no defined byte size, so its bytes cannot be located.
    #[error("tensor {tensor:?}: the byte size of its type ({ggml_type}) is not known")]
    UnknownSize {
        /// The tensor's name.
        tensor: String,
        /// Its type.
        ggml_type: GgmlType,
    },
    /// A tensor's values cannot be computed from its bytes (unsupported type, or a size that
    /// is not whole blocks): the dequantizer's error, unchanged.
    #[error("tensor {tensor:?}: {source}")]
    Dequant {
        /// The tensor's name.
        tensor: String,
        /// The dequantizer's error (its code and help are kept).
        source: sipllm_quants::DequantError,
    },
    /// An element range of a values read lies outside the tensor, or the destination does
    /// not have the range's length.
    #[error(
        "tensor {tensor:?} has {count} elements: elements {start}..{end} into a buffer of \
         {got} values cannot be read"
    )]
    ElementRange {
        /// The tensor's name.
        tensor: String,
        /// First element requested.
        start: u64,
        /// One past the last element requested.
        end: u64,
        /// The tensor's element count.
        count: u64,
        /// The destination's length.
        got: u64,
    },
}
impl Kind for TensorError {
    fn code(&self) -> &'static str {
        match self {
            TensorError::SizeMismatch { .. } => "streaming::read::size_mismatch",
            TensorError::NotInSource { .. } => "streaming::tensor::not_in_source",
            TensorError::Missing { .. } => "streaming::tensor::missing",
            TensorError::UnknownSize { .. } => "streaming::tensor::unknown_size",
            TensorError::Dequant { source, .. } => source.code(),
            TensorError::ElementRange { .. } => "streaming::values::element_range",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            TensorError::SizeMismatch { .. } => {
                "give a destination of at least the tensor's \
                `nbytes`, or use `read_raw_at` to read part of a tensor."
            }
            TensorError::Missing { .. } => {
                "list the names with `tensors()`; names are exact \
                (case-sensitive, no pattern)."
            }
            TensorError::NotInSource { .. } => {
                "pass a SourceTensor obtained from this source's \
                `tensors()` or `find()`, not one from another file."
            }
            TensorError::UnknownSize { .. } => {
                "this tensor type is newer than this reader (the \
                lenient profile lists it anyway); its bytes can only be read with `read_raw_at` \
                once its size is known from elsewhere."
            }
            TensorError::Dequant { source, .. } => source.help(),
            TensorError::ElementRange { .. } => {
                "pass a range with start <= end <= the \
                tensor's element count, and a buffer of end - start values."
            }
        }
    }
}
impl TensorError {
    /// The stable code (`streaming::tensor::…`, `streaming::read::…`, `streaming::values::…`, or the
    /// dequantizer's); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }
}
