//! Run-time selected SIMD kernels (the crate's only `unsafe`).
#![allow(unsafe_code)]

use sipllm_gguf::GgmlType;

/// Dequantizes a checked `(src, dst)` pair with a SIMD kernel if this CPU has one for `ty`;
/// false if it has none (the caller runs the scalar kernel).
pub(crate) fn dequantize(_ty: GgmlType, _src: &[u8], _dst: &mut [f32]) -> bool {
    false
}
