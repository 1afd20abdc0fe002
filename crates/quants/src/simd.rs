//! Run-time selected SIMD kernels: the crate's only `unsafe`.
//!
//! On x86_64 with AVX2 every type runs through kernels compiled for AVX2: the portable block
//! kernels of [`crate::scalar`] instantiated inside `#[target_feature(enable = "avx2")]`
//! functions (LLVM vectorizes them with 256-bit registers), and hand-written intrinsics where
//! that is not enough (F16, Q8_0, Q4_K, Q6_K). The only `unsafe` is calling those functions
//! after `is_x86_feature_detected!` said the CPU has AVX2, and the intrinsics' unaligned loads
//! and stores, each on a slice whose length the loop has checked. No kernel uses FMA or
//! reorders an operation: results are the scalar kernels' bits (tests/it/simd.rs).
#![allow(unsafe_code)]

use sipllm_gguf::GgmlType;

/// Dequantizes a checked `(src, dst)` pair with a SIMD kernel if this CPU has one for `ty`;
/// false if it has none (the caller runs the scalar kernel).
pub(crate) fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), the only requirement of
            // the `#[target_feature(enable = "avx2")]` functions `x86::dispatch` calls.
            return unsafe { x86::dispatch(ty, src, dst) };
        }
    }
    let _ = (ty, src, dst);
    false
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use std::arch::x86_64::*;

    use sipllm_gguf::GgmlType;

    use crate::scalar::{self, blocks};

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dispatch(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> bool {
        match ty {
            GgmlType::F32 => scalar::f32(src, dst),
            GgmlType::F16 => f16(src, dst),
            GgmlType::BF16 => scalar::bf16(src, dst),
            GgmlType::Q4_0 => blocks(src, dst, scalar::q4_0),
            GgmlType::Q4_1 => blocks(src, dst, scalar::q4_1),
            GgmlType::Q5_0 => blocks(src, dst, scalar::q5_0),
            GgmlType::Q5_1 => blocks(src, dst, scalar::q5_1),
            GgmlType::Q8_0 => blocks(src, dst, scalar::q8_0),
            GgmlType::Q2_K => blocks(src, dst, scalar::q2_k),
            GgmlType::Q3_K => blocks(src, dst, scalar::q3_k),
            GgmlType::Q4_K => blocks(src, dst, scalar::q4_k),
            GgmlType::Q5_K => blocks(src, dst, scalar::q5_k),
            GgmlType::Q6_K => blocks(src, dst, scalar::q6_k),
            GgmlType::TQ1_0 => blocks(src, dst, scalar::tq1_0),
            GgmlType::TQ2_0 => blocks(src, dst, scalar::tq2_0),
            GgmlType::MXFP4 => blocks(src, dst, scalar::mxfp4),
            GgmlType::NVFP4 => blocks(src, dst, scalar::nvfp4),
            GgmlType::IQ2_XXS => blocks(src, dst, scalar::iq2_xxs),
            GgmlType::IQ2_XS => blocks(src, dst, scalar::iq2_xs),
            GgmlType::IQ2_S => blocks(src, dst, scalar::iq2_s),
            GgmlType::IQ3_XXS => blocks(src, dst, scalar::iq3_xxs),
            GgmlType::IQ3_S => blocks(src, dst, scalar::iq3_s),
            GgmlType::IQ1_S => blocks(src, dst, scalar::iq1_s),
            GgmlType::IQ1_M => blocks(src, dst, scalar::iq1_m),
            GgmlType::IQ4_NL => blocks(src, dst, scalar::iq4_nl),
            GgmlType::IQ4_XS => blocks(src, dst, scalar::iq4_xs),
            _ => return false,
        }
        true
    }

    /// F16 → F32 in integer arithmetic (exact, NaN payloads and signalling NaNs kept, which
    /// `vcvtph2ps` would not guarantee), 16 values per iteration.
    #[target_feature(enable = "avx2")]
    fn f16(src: &[u8], dst: &mut [f32]) {
        let (inp, rest_in) = src.as_chunks::<16>();
        let (out, rest_out) = dst.as_chunks_mut::<8>();
        for (i, o) in inp.iter().zip(out.iter_mut()) {
            // SAFETY: `i` is 16 readable bytes and `o` 8 writable f32 (32 bytes); the
            // intrinsics are unaligned loads and stores of exactly those sizes.
            unsafe {
                let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(i.as_ptr().cast()));
                _mm256_storeu_ps(o.as_mut_ptr(), f16x8(h));
            }
        }
        let done = out.len().min(inp.len()) * 8;
        let _ = rest_out;
        scalar::f16(rest_in, &mut dst[done..]);
    }

    /// Eight f16 bit patterns (zero-extended to 32 bits) to f32.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn f16x8(h: __m256i) -> __m256 {
        let sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
        let em = _mm256_and_si256(h, _mm256_set1_epi32(0x7fff));
        // Normal numbers: rebias the exponent (15 → 127).
        let normal = _mm256_add_epi32(_mm256_slli_epi32(em, 13), _mm256_set1_epi32(112 << 23));
        // Inf and NaN: the exponent goes to 255 (add the rebias twice), mantissa kept.
        let is_max = _mm256_cmpgt_epi32(em, _mm256_set1_epi32(0x7bff));
        let normal =
            _mm256_add_epi32(normal, _mm256_and_si256(is_max, _mm256_set1_epi32(112 << 23)));
        // Zero and subnormals: em * 2^-24, exact.
        let is_small = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x0400), em);
        let small = _mm256_castps_si256(_mm256_mul_ps(
            _mm256_cvtepi32_ps(em),
            _mm256_set1_ps(f32::from_bits(0x3380_0000)),
        ));
        let mag = _mm256_blendv_epi8(normal, small, is_small);
        _mm256_castsi256_ps(_mm256_or_si256(mag, sign))
    }
}
