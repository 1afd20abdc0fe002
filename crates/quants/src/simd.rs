//! Run-time selected SIMD kernels: the crate's only `unsafe`.
//!
//! On x86_64 with AVX2 and F16C, every type runs through kernels compiled for those features:
//! hand-written intrinsics for F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K,
//! Q6_K, TQ1_0, TQ2_0, IQ1_S, IQ1_M, IQ4_NL, IQ4_XS, MXFP4 and NVFP4 (the memory-bound ones
//! with non-temporal stores for outputs past the last-level cache), and for the others the
//! portable block kernels of [`crate::scalar`] instantiated inside a
//! `#[target_feature(enable = "avx2,f16c")]` function (LLVM vectorizes them with 256-bit
//! registers). On aarch64 with NEON, hand-written NEON kernels for F16, BF16,
//! Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q6_K, TQ2_0, IQ1_S, IQ1_M, IQ4_NL, IQ4_XS,
//! MXFP4 and NVFP4; the other types' portable kernels already compile to NEON code (a
//! baseline feature there). The only `unsafe` is calling the dispatchers after the run-time
//! feature check said the CPU has what they need, and the intrinsics' unaligned loads and
//! stores, each on an array reference of exactly the size it moves. No kernel uses FMA or
//! reorders an operation: results are the scalar kernels' bits (tests/it/simd.rs).
#![allow(unsafe_code)]

use sipllm_gguf::GgmlType;

/// Dequantizes a checked `(src, dst)` pair with a SIMD kernel if this CPU has one for `ty`;
/// false if it has none (the caller runs the scalar kernel).
/// `stream` asks for non-temporal stores where the kernel set has them (x86_64), for an output
/// too big to stay in cache.
pub(crate) fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32], stream: bool) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            // SAFETY: the CPU supports AVX2 and F16C (checked just above), the only
            // requirement of the `#[target_feature(enable = "avx2,f16c")]` functions
            // `x86::dispatch` calls.
            return unsafe { x86::dispatch(ty, src, dst, stream) };
        }
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            // SAFETY: the CPU supports NEON (checked just above), the only requirement of
            // the `#[target_feature(enable = "neon")]` functions `arm::dispatch` calls.
            return unsafe { arm::dispatch(ty, src, dst) };
        }
    }
    let _ = (ty, src, dst, stream);
    false
}

/// The 16 runs of 16 values of a 256-value block (each run shares a scale in the K types),
/// for both kernel sets.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
#[inline(always)]
fn sixteens(o: &mut [f32; 256]) -> &mut [[f32; 16]; 16] {
    o.as_chunks_mut::<16>().0.try_into().unwrap_or_else(|_| unreachable!())
}

/// The 16-byte pieces of a block (the last, partial piece left out), for both kernel sets.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
#[inline(always)]
fn pieces<const B: usize>(b: &[u8; B]) -> &[[u8; 16]] {
    b.as_chunks::<16>().0
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod x86 {
    use std::arch::x86_64::*;

    use super::{pieces, sixteens};

    use sipllm_gguf::GgmlType;

    use crate::scalar::{self, blocks, f16_to_f32, nan_first};
    use crate::tables::IQ1S_GRID;

    /// # Safety
    /// The CPU must support AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn dispatch(ty: GgmlType, src: &[u8], dst: &mut [f32], stream: bool) -> bool {
        // The portable kernels are `#[inline(always)]` and inlined here, so vectorized for
        // AVX2; the intrinsic ones are called from closures defined here, which inherit this
        // function's target features. (A kernel called through `&F` would go through a call
        // shim compiled without them: 2x slower.) Only the intrinsic kernels, which run at
        // the memory bandwidth, take `stream`: the portable ones are compute-bound, and the
        // staging copy costs them more (3–11 %) than the saved memory reads give back.
        match ty {
            // A copy: staging it would only add a second one.
            GgmlType::F32 => elements::<32, 8>(
                src,
                dst,
                false,
                |b: &[u8; 32], o: &mut [f32; 8]| scalar::f32(b, o),
                scalar::f32,
            ),
            GgmlType::F16 => elements::<16, 8>(src, dst, stream, |b, o| f16x8(b, o), scalar::f16),
            GgmlType::BF16 => {
                elements::<16, 8>(src, dst, stream, |b, o| bf16x8(b, o), scalar::bf16)
            }
            GgmlType::Q4_0 => run(src, dst, stream, |b, o| q4_0(b, o)),
            GgmlType::Q4_1 => run(src, dst, stream, |b, o| q4_1(b, o)),
            GgmlType::Q5_0 => run(src, dst, stream, |b, o| q5_0(b, o)),
            GgmlType::Q5_1 => run(src, dst, stream, |b, o| q5_1(b, o)),
            GgmlType::Q8_0 => run(src, dst, stream, |b, o| q8_0(b, o)),
            GgmlType::Q2_K => run(src, dst, stream, |b, o| q2_k(b, o)),
            GgmlType::Q3_K => run(src, dst, stream, |b, o| q3_k(b, o)),
            GgmlType::Q4_K => run(src, dst, stream, |b, o| q4_k(b, o)),
            GgmlType::Q5_K => blocks(src, dst, scalar::q5_k),
            GgmlType::Q6_K => run(src, dst, stream, |b, o| q6_k(b, o)),
            GgmlType::TQ1_0 => run(src, dst, stream, |b, o| tq1_0(b, o)),
            GgmlType::TQ2_0 => run(src, dst, stream, |b, o| tq2_0(b, o)),
            GgmlType::MXFP4 => run(src, dst, stream, |b, o| mxfp4(b, o)),
            GgmlType::NVFP4 => run(src, dst, stream, |b, o| nvfp4(b, o)),
            GgmlType::IQ2_XXS => blocks(src, dst, scalar::iq2_xxs),
            GgmlType::IQ2_XS => blocks(src, dst, scalar::iq2_xs),
            GgmlType::IQ2_S => blocks(src, dst, scalar::iq2_s),
            GgmlType::IQ3_XXS => blocks(src, dst, scalar::iq3_xxs),
            GgmlType::IQ3_S => blocks(src, dst, scalar::iq3_s),
            GgmlType::IQ1_S => blocks(src, dst, |b, o| iq1_s(b, o)),
            GgmlType::IQ1_M => blocks(src, dst, |b, o| iq1_m(b, o)),
            GgmlType::IQ4_NL => run(src, dst, stream, |b, o| iq4_nl(b, o)),
            GgmlType::IQ4_XS => run(src, dst, stream, |b, o| iq4_xs(b, o)),
            _ => return false,
        }
        true
    }

    /// An element-wise type: vectors of `N` values from `B` bytes through `vector`, the
    /// remainder (under `N` values) through `scalar`.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn elements<const B: usize, const N: usize>(
        src: &[u8],
        dst: &mut [f32],
        stream: bool,
        vector: impl Fn(&[u8; B], &mut [f32; N]) + Copy,
        scalar: fn(&[u8], &mut [f32]),
    ) {
        let whole = src.len() / B;
        let (src, src_rest) = src.split_at(whole * B);
        let (dst, dst_rest) = dst.split_at_mut(whole * N);
        run(src, dst, stream, vector);
        scalar(src_rest, dst_rest);
    }

    /// Whole blocks through `kernel`: straight into `dst`, or, with `stream`, through
    /// [`streamed`].
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn run<const B: usize, const N: usize>(
        src: &[u8],
        dst: &mut [f32],
        stream: bool,
        kernel: impl Fn(&[u8; B], &mut [f32; N]) + Copy,
    ) {
        if stream { streamed(src, dst, kernel) } else { blocks(src, dst, kernel) }
    }

    /// Values one group of blocks stages in [`streamed`]: 8 KiB, well inside L1.
    const STAGE: usize = 2048;

    /// The staging buffer, on a cache-line boundary so the kernels' stores never split a line.
    #[repr(C, align(64))]
    struct Stage([f32; STAGE]);

    /// Whole blocks through `kernel` for an output too big for the caches: each group of
    /// blocks is dequantized into a staging buffer in L1, then copied to `dst` with
    /// non-temporal stores. A plain store to a line that is not in cache first reads the line
    /// from memory (to own it), so an output written once costs its size twice in memory
    /// traffic; a non-temporal store writes whole lines without reading them. Outputs that
    /// are read again soon are better off in cache, which is why the caller asks for this
    /// only past the last-level cache's size.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn streamed<const B: usize, const N: usize>(
        src: &[u8],
        dst: &mut [f32],
        kernel: impl Fn(&[u8; B], &mut [f32; N]) + Copy,
    ) {
        const { assert!(N <= STAGE && STAGE.is_multiple_of(N)) };
        let per = STAGE / N;
        let mut stage = Stage([0.0; STAGE]);
        for (s, d) in src.chunks(per * B).zip(dst.chunks_mut(per * N)) {
            let Some(st) = stage.0.get_mut(..d.len()) else { unreachable!() };
            // By value: a `&F` call goes through a shim compiled without AVX2.
            blocks(s, st, kernel);
            stream_out(st, d);
        }
        // Non-temporal stores are weakly ordered: fence them before anything the caller
        // does next (a thread's join, an atomic) can publish the output.
        _mm_sfence();
    }

    /// Copies `src` to `dst` (same length): the whole 64-byte lines of `dst` with
    /// non-temporal stores, the partial lines at either end with plain ones (so no line
    /// mixes the two kinds).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn stream_out(src: &[f32], dst: &mut [f32]) {
        // Values before `dst`'s first 64-byte boundary (an f32 pointer is 4-byte aligned).
        let head = ((dst.as_ptr() as usize).wrapping_neg() % 64 / 4).min(dst.len());
        let (dst_head, dst) = dst.split_at_mut(head);
        let (src_head, src) = src.split_at(head);
        dst_head.copy_from_slice(src_head);
        let (lines, dst_tail) = dst.as_chunks_mut::<16>();
        let (src_lines, src_tail) = src.as_chunks::<16>();
        for (line, s) in lines.iter_mut().zip(src_lines) {
            stream16(line, s);
        }
        dst_tail.copy_from_slice(src_tail);
    }

    /// Writes one 64-byte line with non-temporal stores.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn stream16(line: &mut [f32; 16], s: &[f32; 16]) {
        debug_assert_eq!(line.as_ptr() as usize % 64, 0);
        let (lo, hi) = line.split_at_mut(8);
        let (slo, shi) = s.split_at(8);
        // SAFETY: `lo` and `hi` are 8 writable f32 (32 bytes) each, and 32-byte aligned as
        // `_mm256_stream_ps` requires: `line` starts on a 64-byte boundary (`stream_out`
        // split the values before the first boundary off, and each line is 64 bytes).
        // `slo` and `shi` are 8 readable f32 each; those loads are unaligned.
        unsafe {
            _mm256_stream_ps(lo.as_mut_ptr(), _mm256_loadu_ps(slo.as_ptr()));
            _mm256_stream_ps(hi.as_mut_ptr(), _mm256_loadu_ps(shi.as_ptr()));
        }
    }

    /// Loads 16 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load16(b: &[u8; 16]) -> __m128i {
        // SAFETY: `b` is 16 readable bytes; the load is unaligned.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    /// Stores 8 values.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn store8(o: &mut [f32; 8], v: __m256) {
        // SAFETY: `o` is 8 writable f32 (32 bytes); the store is unaligned.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), v) }
    }

    /// The 4 runs of 8 values of a 32-value block.
    #[inline(always)]
    fn eights(o: &mut [f32; 32]) -> &mut [[f32; 8]; 4] {
        o.as_chunks_mut::<8>().0.try_into().unwrap_or_else(|_| unreachable!())
    }

    /// The low and high nibbles of 16 bytes, each as 16 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn nibbles(q: &[u8; 16]) -> (__m128i, __m128i) {
        let q = load16(q);
        let m = _mm_set1_epi8(0x0f);
        (_mm_and_si128(q, m), _mm_and_si128(_mm_srli_epi16(q, 4), m))
    }

    /// Bytes 0–7 and 8–15 of `v`, each widened to eight i32.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn widen(v: __m128i) -> [__m256i; 2] {
        [_mm256_cvtepu8_epi32(v), _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8))]
    }

    /// The 32 nibbles of a Q4/Q5 block in value order: low nibbles (values 0–15), then high.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn nibbles32(q: &[u8; 16]) -> [__m256i; 4] {
        let (lo, hi) = nibbles(q);
        let [a, b] = widen(lo);
        let [c, d] = widen(hi);
        [a, b, c, d]
    }

    /// The 32 values of a Q5_0/Q5_1 block as bytes (values 0–15, then 16–31): the nibbles
    /// with bit `j` of `qh` as value `j`'s bit 4. Each byte of the fifth bits picks its
    /// byte of `qh` (`vpshufb`), tests its own bit of it and keeps 0x10 where it is set: four
    /// operations for all 32 values, where shifting each bit into an i32 lane took three per
    /// 8, and Q5_0's `q - 16` (-16..=15) then fits a byte too.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn q5_values(q: &[u8; 16], qh: u32) -> (__m128i, __m128i) {
        let (lo, hi) = nibbles(q);
        // All 32 fifth bits at once: byte i of the 256-bit vector is byte i / 8 of qh.
        let qh = _mm256_set1_epi32(qh as i32);
        let pick = _mm256_setr_epi64x(
            0,
            0x0101_0101_0101_0101,
            0x0202_0202_0202_0202,
            0x0303_0303_0303_0303,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
        let t = _mm256_and_si256(_mm256_shuffle_epi8(qh, pick), bit);
        let fifth = _mm256_and_si256(_mm256_cmpeq_epi8(t, bit), _mm256_set1_epi8(0x10));
        let first = _mm256_castsi256_si128(fifth);
        let second = _mm256_extracti128_si256::<1>(fifth);
        (_mm_or_si128(lo, first), _mm_or_si128(hi, second))
    }

    /// The two f16 in `h` (bits 0–15 and 16–31) as f32 lanes 0 and 1, lane 1 as
    /// `scalar::nan_first(d, m)` makes it. F16C's `vcvtph2ps` is one instruction where
    /// `scalar::f16_to_f32` is a dozen with branches, and at 32 values a block that is much
    /// of a block's time. The two differ only on a signalling NaN, which `vcvtph2ps` quiets
    /// and the scalar conversion keeps; no value sees it, as every scale is an operand of a
    /// multiply or an add, which quiets it the same way (tests/it/simd.rs holds every kernel
    /// to the scalar bits on NaN and Inf scales).
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn scale_pair(h: u32) -> __m128 {
        let v = _mm_cvtph_ps(_mm_cvtsi32_si128(h as i32));
        if h & 0x7fff > 0x7c00 {
            // d is a NaN: m is 0.
            return _mm_blend_ps::<0b0010>(v, _mm_setzero_ps());
        }
        v
    }

    /// A block's f16 scale `d` in every lane (converted as [`scale_pair`] says).
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn scale(d: &[u8; 2]) -> __m256 {
        _mm256_broadcastss_ps(scale_pair(u32::from(u16::from_le_bytes(*d))))
    }

    /// A block's f16 pair `d`, `m` (4 bytes), each in every lane of its vector.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn scale_min(h: &[u8; 4]) -> (__m256, __m256) {
        let v = scale_pair(u32::from_le_bytes(*h));
        (_mm256_broadcastss_ps(v), _mm256_broadcastss_ps(_mm_movehdup_ps(v)))
    }

    /// Q4_0: v = d * (q - 8), as scalar::q4_0.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn q4_0(b: &[u8; 18], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let d = scale(d);
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        let off = _mm256_set1_epi32(8);
        for (o, q) in eights(o).iter_mut().zip(nibbles32(q)) {
            store8(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(q, off))));
        }
    }

    /// Q4_1: v = d * q + m, as scalar::q4_1.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn q4_1(b: &[u8; 20], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<4>().unwrap_or_else(|| unreachable!());
        let (d, m) = scale_min(h);
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        for (o, q) in eights(o).iter_mut().zip(nibbles32(q)) {
            store8(o, _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
        }
    }

    /// Q5_0: v = d * (q - 16), as scalar::q5_0.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn q5_0(b: &[u8; 22], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<6>().unwrap_or_else(|| unreachable!());
        let d = scale(&[h[0], h[1]]);
        let qh = u32::from_le_bytes([h[2], h[3], h[4], h[5]]);
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        // q - 16 (-16..=15) fits a byte: subtract before widening.
        let off = _mm_set1_epi8(16);
        let (lo, hi) = q5_values(q, qh);
        let [a, b] = widen_signed(_mm_sub_epi8(lo, off));
        let [c, e] = widen_signed(_mm_sub_epi8(hi, off));
        for (o, q) in eights(o).iter_mut().zip([a, b, c, e]) {
            store8(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
        }
    }

    /// Q5_1: v = d * q + m, as scalar::q5_1.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn q5_1(b: &[u8; 24], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<8>().unwrap_or_else(|| unreachable!());
        let (d, m) = scale_min(&[h[0], h[1], h[2], h[3]]);
        let qh = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        let (lo, hi) = q5_values(q, qh);
        let [a, b] = widen(lo);
        let [c, e] = widen(hi);
        for (o, q) in eights(o).iter_mut().zip([a, b, c, e]) {
            store8(o, _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
        }
    }

    /// Q8_0: v = q * d, as scalar::q8_0.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn q8_0(b: &[u8; 34], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let d = scale(d);
        let (q, _) = q.as_chunks::<16>();
        let ([a, b], [c, e]) = (widen_signed(load16(&q[0])), widen_signed(load16(&q[1])));
        let q = [a, b, c, e];
        for (o, q) in eights(o).iter_mut().zip(q) {
            store8(o, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }

    /// `d * q - m` for 16 values `q` (8 per vector), in the scalar kernels' order.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn put16(o: &mut [f32; 16], q: [__m256i; 2], d: f32, m: f32) {
        let (d, m) = (_mm256_set1_ps(d), _mm256_set1_ps(m));
        let (o, _) = o.as_chunks_mut::<8>();
        for (o, q) in o.iter_mut().zip(q) {
            store8(o, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(q)), m));
        }
    }

    /// Each of 16 bytes shifted right by `shift` and masked with `mask`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn field(q: __m128i, shift: usize, mask: i8) -> __m128i {
        // 16-bit lanes shift bits across the byte boundary; the mask drops them.
        let q = _mm_srl_epi16(q, _mm_cvtsi32_si128(shift as i32));
        _mm_and_si128(q, _mm_set1_epi8(mask))
    }

    /// Bits `2s..2s + 2` of each of 16 bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn crumbs(q: __m128i, s: usize) -> __m128i {
        field(q, 2 * s, 3)
    }

    /// Bits `2m..2m + 2` of each of 16 bytes, as bits 4 and 5 (Q6_K's two high bits over
    /// its nibble): one shift of 16-bit lanes (the mask drops what crosses a byte) and an and.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn high_crumbs(q: __m128i, m: usize) -> __m128i {
        let q = match m {
            0 => _mm_slli_epi16(q, 4),
            1 => _mm_slli_epi16(q, 2),
            2 => q,
            _ => _mm_srli_epi16(q, 2),
        };
        _mm_and_si128(q, _mm_set1_epi8(0x30))
    }

    /// Bytes 0–7 and 8–15 of `v` as signed values, each widened to eight i32.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn widen_signed(v: __m128i) -> [__m256i; 2] {
        [_mm256_cvtepi8_epi32(v), _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))]
    }

    /// Q3_K: v = (d * (sc - 32)) * (ql - 4 * !hbit), as scalar::q3_k.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn q3_k(b: &[u8; 110], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[108], b[109]]));
        let sc = &b[96..108];
        let p = pieces(b);
        let runs = sixteens(o);
        let one = _mm_set1_epi8(1);
        for h in 0..2 {
            for sh in 0..4 {
                for half in 0..2 {
                    let g = h * 8 + sh * 2 + half;
                    let dl = _mm256_set1_ps(d * scalar::q3_k_scale(sc, g) as f32);
                    // Values 128h + 32sh + 16half + i: bits 2sh.. of byte 32 + 32h + 16half + i,
                    // and the high bit 4h + sh of byte 16half + i.
                    let ql = crumbs(load16(&p[2 + 2 * h + half]), sh);
                    let hb = field(load16(&p[half]), 4 * h + sh, 1);
                    let q = _mm_sub_epi8(ql, _mm_slli_epi16(_mm_xor_si128(hb, one), 2));
                    let (out, _) = runs[g].as_chunks_mut::<8>();
                    for (o, q) in out.iter_mut().zip(widen_signed(q)) {
                        store8(o, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(q)));
                    }
                }
            }
        }
    }

    /// Q2_K: v = (d * sc) * q - (dmin * m), as scalar::q2_k.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn q2_k(b: &[u8; 84], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[80], b[81]]));
        let dmin = f16_to_f32(u16::from_le_bytes([b[82], b[83]]));
        let p = pieces(b);
        let runs = sixteens(o);
        for h in 0..2 {
            for s in 0..4 {
                for half in 0..2 {
                    let (dl, ml) = scalar::q2_k_scale_min(b[h * 8 + s * 2 + half], d, dmin);
                    // Values 128h + 32s + 16half + i: bits 2s.. of byte 16 + 32h + 16half + i.
                    let q = crumbs(load16(&p[1 + h * 2 + half]), s);
                    put16(&mut runs[h * 8 + s * 2 + half], widen(q), dl, ml);
                }
            }
        }
    }

    /// Q4_K: v = (d * sc) * q - (dmin * m), as scalar::q4_k.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn q4_k(b: &[u8; 144], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let dmin = f16_to_f32(u16::from_le_bytes([b[2], b[3]]));
        let (sc, mn) = scalar::k_scale_min(&b[4..16]);
        let p = pieces(b);
        let runs = sixteens(o);
        for c in 0..4 {
            // Group 2c: the low nibbles of bytes 16 + 32c.. (pieces 1 + 2c, 2 + 2c); group
            // 2c + 1: their high nibbles.
            let dm = |g: usize| {
                let dl = d * f32::from(sc[g]);
                (dl, nan_first(dl, dmin * f32::from(mn[g])))
            };
            let ((d0, m0), (d1, m1)) = (dm(2 * c), dm(2 * c + 1));
            for k in 0..2 {
                let (lo, hi) = nibbles(&p[1 + 2 * c + k]);
                put16(&mut runs[4 * c + k], widen(lo), d0, m0);
                put16(&mut runs[4 * c + 2 + k], widen(hi), d1, m1);
            }
        }
    }

    /// Q6_K: v = (d * sc) * (q - 32), as scalar::q6_k.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn q6_k(b: &[u8; 210], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[208], b[209]]));
        let p = pieces(b);
        let runs = sixteens(o);
        let off = _mm_set1_epi8(32);
        for h in 0..2 {
            for m in 0..4 {
                for half in 0..2 {
                    // Values 128h + 32m + 16half + i: nibble m / 2 of byte
                    // 64h + 32(m % 2) + 16half + i, bits 2m.. of byte 128 + 32h + 16half + i.
                    let (lo, hi) = nibbles(&p[h * 4 + 2 * (m % 2) + half]);
                    let ql = if m < 2 { lo } else { hi };
                    let qh = high_crumbs(load16(&p[8 + h * 2 + half]), m);
                    // q - 32 in -32..=31 fits a byte: subtract before widening, once for
                    // 16 values.
                    let [x, y] = widen_signed(_mm_sub_epi8(_mm_or_si128(ql, qh), off));
                    let g = h * 8 + 2 * m + half;
                    let dl = _mm256_set1_ps(d * f32::from(b[192 + g] as i8));
                    let (out, _) = runs[g].as_chunks_mut::<8>();
                    for (o, q) in out.iter_mut().zip([x, y]) {
                        store8(o, _mm256_mul_ps(dl, _mm256_cvtepi32_ps(q)));
                    }
                }
            }
        }
    }

    /// A 16-entry table of signed values for `pshufb`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn lut16(k: [i8; 16]) -> __m128i {
        _mm_setr_epi8(
            k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13],
            k[14], k[15],
        )
    }

    /// The table values of 16 nibbles (one `pshufb`), as two vectors of eight i32.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn looked_up(table: __m128i, nibbles: __m128i) -> [__m256i; 2] {
        widen_signed(_mm_shuffle_epi8(table, nibbles))
    }

    /// 32 values `d * table[nibble]` of 16 bytes of nibbles: the low nibbles are values 0–15.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn nibble_run(q: &[u8; 16], d: f32, table: __m128i, o: &mut [f32; 32]) {
        let d = _mm256_set1_ps(d);
        let (lo, hi) = nibbles(q);
        let [a, b] = looked_up(table, lo);
        let [c, e] = looked_up(table, hi);
        for (o, k) in eights(o).iter_mut().zip([a, b, c, e]) {
            store8(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(k)));
        }
    }

    /// MXFP4: v = d * kvalue, as scalar::mxfp4.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mxfp4(b: &[u8; 17], o: &mut [f32; 32]) {
        let (e, q) = b.split_first().unwrap_or_else(|| unreachable!());
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        nibble_run(q, scalar::e8m0_half(*e), lut16(scalar::KVALUES_FP4), o);
    }

    /// NVFP4: v = d[sub-block] * kvalue, as scalar::nvfp4.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn nvfp4(b: &[u8; 36], o: &mut [f32; 64]) {
        let table = lut16(scalar::KVALUES_FP4);
        let (scales, q) = b.split_first_chunk::<4>().unwrap_or_else(|| unreachable!());
        let (q, _) = q.as_chunks::<8>();
        let (runs, _) = o.as_chunks_mut::<8>();
        for (s, (q, out)) in scales.iter().zip(q.iter().zip(runs.chunks_exact_mut(2))) {
            let d = _mm256_set1_ps(scalar::ue4m3_half(*s));
            // SAFETY: `q` is 8 readable bytes; `_mm_loadl_epi64` reads exactly 8, unaligned.
            let v = unsafe { _mm_loadl_epi64(q.as_ptr().cast()) };
            let m = _mm_set1_epi8(0x0f);
            let (lo, hi) = (_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
            // Low nibbles are the sub-block's values 0–7, high ones 8–15.
            for (o, n) in out.iter_mut().zip([lo, hi]) {
                let k = _mm256_cvtepi8_epi32(_mm_shuffle_epi8(table, n));
                store8(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(k)));
            }
        }
    }

    /// IQ4_NL: v = d * kvalue, as scalar::iq4_nl.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn iq4_nl(b: &[u8; 18], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        nibble_run(q, f16_to_f32(u16::from_le_bytes(*d)), lut16(scalar::KVALUES_IQ4NL), o);
    }

    /// IQ4_XS: v = (d * (s - 32)) * kvalue, as scalar::iq4_xs.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn iq4_xs(b: &[u8; 136], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let sh = u16::from_le_bytes([b[2], b[3]]);
        let (qs, _) = b[8..].as_chunks::<16>();
        let (runs, _) = o.as_chunks_mut::<32>();
        let table = lut16(scalar::KVALUES_IQ4NL);
        for (ib, (q, o)) in qs.iter().zip(runs).enumerate() {
            let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf;
            let hi = ((sh >> (2 * ib)) & 3) as u8;
            nibble_run(q, d * (i32::from(lo | (hi << 4)) - 32) as f32, table, o);
        }
    }

    /// TQ1_0: v = d * (digit - 1), as scalar::tq1_0.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn tq1_0(b: &[u8; 54], o: &mut [f32; 256]) {
        const POW3: [u8; 5] = [1, 3, 9, 27, 81];
        let d = f16_to_f32(u16::from_le_bytes([b[52], b[53]]));
        let dv = _mm256_set1_ps(d);
        let one = _mm256_set1_ps(1.0);
        let p16 = pieces(b);
        let runs = sixteens(o);
        // Digit p of 16 bytes: the top base-3 digit of (byte * 3^p mod 256) as a fraction,
        // ((v * 3) >> 8), in 16-bit lanes; then d * (digit - 1.0) in f32.
        let digits = |q: &[u8; 16], p: usize, out: &mut [f32; 16]| {
            let v = _mm256_cvtepu8_epi16(load16(q));
            let v = _mm256_and_si256(
                _mm256_mullo_epi16(v, _mm256_set1_epi16(i16::from(POW3[p]))),
                _mm256_set1_epi16(0xff),
            );
            let v = _mm256_srli_epi16(_mm256_mullo_epi16(v, _mm256_set1_epi16(3)), 8);
            let halves = [_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)];
            let (out, _) = out.as_chunks_mut::<8>();
            for (o, h) in out.iter_mut().zip(halves) {
                let t = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(h));
                store8(o, _mm256_mul_ps(dv, _mm256_sub_ps(t, one)));
            }
        };
        for p in 0..5 {
            // Values 32p + l (bytes 0–31) and 160 + 16p + l (bytes 32–47).
            digits(&p16[0], p, &mut runs[2 * p]);
            digits(&p16[1], p, &mut runs[2 * p + 1]);
            digits(&p16[2], p, &mut runs[10 + p]);
        }
        // Values 240 + 4p + l: four digits of bytes 48–51.
        let (last, _) = runs[15].as_chunks_mut::<4>();
        for (p, o) in last.iter_mut().enumerate() {
            for (l, o) in o.iter_mut().enumerate() {
                let v = b[48 + l].wrapping_mul(POW3[p]);
                *o = d * (((u16::from(v) * 3) >> 8) as f32 - 1.0);
            }
        }
    }

    /// TQ2_0: v = d * (q - 1), as scalar::tq2_0.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn tq2_0(b: &[u8; 66], o: &mut [f32; 256]) {
        let d = _mm256_set1_ps(f16_to_f32(u16::from_le_bytes([b[64], b[65]])));
        let p = pieces(b);
        let runs = sixteens(o);
        let one = _mm256_set1_epi32(1);
        for h in 0..2 {
            for s in 0..4 {
                for k in 0..2 {
                    // Values 128h + 32s + 16k + i: bits 2s.. of byte 32h + 16k + i.
                    let q = crumbs(load16(&p[2 * h + k]), s);
                    let (out, _) = runs[8 * h + 2 * s + k].as_chunks_mut::<8>();
                    for (o, q) in out.iter_mut().zip(widen(q)) {
                        let q = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, one));
                        store8(o, _mm256_mul_ps(d, q));
                    }
                }
            }
        }
    }

    /// 8 values `dl * (grid + delta)` of one IQ1 grid row (eight signed bytes), in the scalar
    /// kernels' order.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn iq1_row(row: u64, dl: __m256, delta: __m256, o: &mut [f32; 8]) {
        let g = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(row as i64)));
        store8(o, _mm256_mul_ps(dl, _mm256_add_ps(g, delta)));
    }

    /// IQ1_S: v = d * (2s + 1) * (grid + delta), as scalar::iq1_s.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn iq1_s(b: &[u8; 50], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let (rows, _) = o.as_chunks_mut::<8>();
        for (ib, rows) in rows.chunks_exact_mut(4).enumerate() {
            let qh = u16::from_le_bytes([b[34 + 2 * ib], b[35 + 2 * ib]]);
            let dl = _mm256_set1_ps(d * f32::from(2 * ((qh >> 12) & 7) + 1));
            let delta = _mm256_set1_ps(if qh & 0x8000 == 0 { 0.125 } else { -0.125 });
            for (l, o) in rows.iter_mut().enumerate() {
                let idx = usize::from(b[2 + ib * 4 + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
                iq1_row(IQ1S_GRID[idx], dl, delta, o);
            }
        }
    }

    /// IQ1_M: v = d * (2s + 1) * (grid + delta), as scalar::iq1_m.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn iq1_m(b: &[u8; 56], o: &mut [f32; 256]) {
        let s = [48, 50, 52, 54].map(|i| u16::from_le_bytes([b[i], b[i + 1]]));
        let d = f16_to_f32(
            ((s[0] & 0xf000) >> 12)
                | ((s[1] & 0xf000) >> 8)
                | ((s[2] & 0xf000) >> 4)
                | (s[3] & 0xf000),
        );
        let (rows, _) = o.as_chunks_mut::<8>();
        for (g, o) in rows.iter_mut().enumerate() {
            let sc = (s[g / 8] >> (3 * ((g / 2) % 4))) & 7;
            let dl = _mm256_set1_ps(d * f32::from(2 * sc + 1));
            let qh = b[32 + g / 2] >> (4 * (g % 2));
            let idx = usize::from(b[g]) | (usize::from(qh & 7) << 8);
            let delta = _mm256_set1_ps(if qh & 8 == 0 { 0.125 } else { -0.125 });
            iq1_row(IQ1S_GRID[idx], dl, delta, o);
        }
    }

    /// BF16: the top half of an f32.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn bf16x8(i: &[u8; 16], o: &mut [f32; 8]) {
        let h = _mm256_cvtepu16_epi32(load16(i));
        store8(o, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }

    /// F16 → F32 with `vcvtph2ps`, which is exact for every f16 but NaN: it sets a NaN's
    /// quiet bit (bit 22 of the f32), where numpy keeps a signalling NaN signalling. The fix
    /// is branch-free (random or corrupted bytes are NaN-dense): in NaN lanes, bit 22 goes
    /// back to the f16's bit 9 (shifted by 13 like the rest of the payload).
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    fn f16x8(i: &[u8; 16], o: &mut [f32; 8]) {
        let h = load16(i);
        let x = _mm256_castps_si256(_mm256_cvtph_ps(h));
        let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(
            _mm256_castsi256_ps(x),
            _mm256_castsi256_ps(x),
        ));
        let quiet = _mm256_and_si256(nan, _mm256_set1_epi32(0x0040_0000));
        let kept = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 13);
        let x = _mm256_xor_si256(x, _mm256_andnot_si256(kept, quiet));
        store8(o, _mm256_castsi256_ps(x));
    }
}

#[cfg(all(target_arch = "aarch64", not(miri)))]
mod arm {
    use std::arch::aarch64::*;

    use super::{pieces, sixteens};

    use sipllm_gguf::GgmlType;

    use crate::scalar::{self, blocks, f16_to_f32, nan_first};
    use crate::tables::IQ1S_GRID;

    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn dispatch(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> bool {
        match ty {
            GgmlType::F16 => elements(src, dst, |b, o| f16x8(b, o), scalar::f16),
            GgmlType::BF16 => elements(src, dst, |b, o| bf16x8(b, o), scalar::bf16),
            GgmlType::Q4_0 => blocks(src, dst, |b, o| q4_0(b, o)),
            GgmlType::Q4_1 => blocks(src, dst, |b, o| q4_1(b, o)),
            GgmlType::Q5_0 => blocks(src, dst, |b, o| q5_0(b, o)),
            GgmlType::Q5_1 => blocks(src, dst, |b, o| q5_1(b, o)),
            GgmlType::Q8_0 => blocks(src, dst, |b, o| q8_0(b, o)),
            GgmlType::Q2_K => blocks(src, dst, |b, o| q2_k(b, o)),
            GgmlType::Q3_K => blocks(src, dst, |b, o| q3_k(b, o)),
            GgmlType::Q4_K => blocks(src, dst, |b, o| q4_k(b, o)),
            GgmlType::Q6_K => blocks(src, dst, |b, o| q6_k(b, o)),
            GgmlType::MXFP4 => blocks(src, dst, |b, o| mxfp4(b, o)),
            GgmlType::NVFP4 => blocks(src, dst, |b, o| nvfp4(b, o)),
            GgmlType::IQ4_NL => blocks(src, dst, |b, o| iq4_nl(b, o)),
            GgmlType::IQ4_XS => blocks(src, dst, |b, o| iq4_xs(b, o)),
            GgmlType::TQ2_0 => blocks(src, dst, |b, o| tq2_0(b, o)),
            GgmlType::IQ1_S => blocks(src, dst, |b, o| iq1_s(b, o)),
            GgmlType::IQ1_M => blocks(src, dst, |b, o| iq1_m(b, o)),
            // The other types' portable kernels, compiled here with NEON enabled (a
            // baseline feature of aarch64, so this is what the scalar path runs too).
            _ => return false,
        }
        true
    }

    /// An element-wise type: 8 values from 16 bytes through `vector`, the remainder (under 8
    /// values) through `scalar`.
    #[target_feature(enable = "neon")]
    #[inline]
    fn elements(
        src: &[u8],
        dst: &mut [f32],
        vector: impl Fn(&[u8; 16], &mut [f32; 8]),
        scalar: fn(&[u8], &mut [f32]),
    ) {
        let whole = src.len() / 16;
        let (src, src_rest) = src.split_at(whole * 16);
        let (dst, dst_rest) = dst.split_at_mut(whole * 8);
        blocks(src, dst, vector);
        scalar(src_rest, dst_rest);
    }

    /// Loads 16 bytes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn load16(b: &[u8; 16]) -> uint8x16_t {
        // SAFETY: `b` is 16 readable bytes; `vld1q_u8` has no alignment requirement.
        unsafe { vld1q_u8(b.as_ptr()) }
    }

    /// Stores 4 values.
    #[target_feature(enable = "neon")]
    #[inline]
    fn store4(o: &mut [f32; 4], v: float32x4_t) {
        // SAFETY: `o` is 4 writable f32; `vst1q_f32` needs only f32 alignment.
        unsafe { vst1q_f32(o.as_mut_ptr(), v) }
    }

    /// The 8 runs of 4 values of a 32-value block.
    #[inline(always)]
    fn fours(o: &mut [f32; 32]) -> &mut [[f32; 4]; 8] {
        o.as_chunks_mut::<4>().0.try_into().unwrap_or_else(|_| unreachable!())
    }

    /// 16 bytes widened to 16 u32, in order.
    #[target_feature(enable = "neon")]
    #[inline]
    fn widen(v: uint8x16_t) -> [uint32x4_t; 4] {
        let lo = vmovl_u8(vget_low_u8(v));
        let hi = vmovl_u8(vget_high_u8(v));
        [
            vmovl_u16(vget_low_u16(lo)),
            vmovl_u16(vget_high_u16(lo)),
            vmovl_u16(vget_low_u16(hi)),
            vmovl_u16(vget_high_u16(hi)),
        ]
    }

    /// The 32 nibbles of a Q4 block in value order (low nibbles are values 0–15).
    #[target_feature(enable = "neon")]
    #[inline]
    fn nibbles32(q: &[u8; 16]) -> [uint32x4_t; 8] {
        let q = load16(q);
        let [a, b, c, d] = widen(vandq_u8(q, vdupq_n_u8(0x0f)));
        let [e, f, g, h] = widen(vshrq_n_u8::<4>(q));
        [a, b, c, d, e, f, g, h]
    }

    /// Q4_0: v = d * (q - 8), as scalar::q4_0.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q4_0(b: &[u8; 18], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let d = vdupq_n_f32(f16_to_f32(u16::from_le_bytes(*d)));
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        let off = vdupq_n_s32(8);
        for (o, q) in fours(o).iter_mut().zip(nibbles32(q)) {
            let q = vsubq_s32(vreinterpretq_s32_u32(q), off);
            store4(o, vmulq_f32(d, vcvtq_f32_s32(q)));
        }
    }

    /// Q4_1: v = d * q + m, as scalar::q4_1 (no fused multiply-add).
    #[target_feature(enable = "neon")]
    #[inline]
    fn q4_1(b: &[u8; 20], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<4>().unwrap_or_else(|| unreachable!());
        let d = f16_to_f32(u16::from_le_bytes([h[0], h[1]]));
        let m = vdupq_n_f32(nan_first(d, f16_to_f32(u16::from_le_bytes([h[2], h[3]]))));
        let d = vdupq_n_f32(d);
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        for (o, q) in fours(o).iter_mut().zip(nibbles32(q)) {
            store4(o, vaddq_f32(vmulq_f32(d, vcvtq_f32_u32(q)), m));
        }
    }

    /// Q8_0: v = q * d, as scalar::q8_0.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q8_0(b: &[u8; 34], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let d = vdupq_n_f32(f16_to_f32(u16::from_le_bytes(*d)));
        let (q, _) = q.as_chunks::<16>();
        let mut v = [vdupq_n_s32(0); 8];
        for (k, q) in q.iter().enumerate() {
            let q = vreinterpretq_s8_u8(load16(q));
            let lo = vmovl_s8(vget_low_s8(q));
            let hi = vmovl_s8(vget_high_s8(q));
            v[4 * k] = vmovl_s16(vget_low_s16(lo));
            v[4 * k + 1] = vmovl_s16(vget_high_s16(lo));
            v[4 * k + 2] = vmovl_s16(vget_low_s16(hi));
            v[4 * k + 3] = vmovl_s16(vget_high_s16(hi));
        }
        for (o, q) in fours(o).iter_mut().zip(v) {
            store4(o, vmulq_f32(vcvtq_f32_s32(q), d));
        }
    }

    /// The low and high nibbles of 16 bytes, each as 16 bytes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn nibbles(q: &[u8; 16]) -> (uint8x16_t, uint8x16_t) {
        let q = load16(q);
        (vandq_u8(q, vdupq_n_u8(0x0f)), vshrq_n_u8::<4>(q))
    }

    /// 16 signed bytes widened to 16 i32, in order.
    #[target_feature(enable = "neon")]
    #[inline]
    fn widen_signed(v: int8x16_t) -> [int32x4_t; 4] {
        let lo = vmovl_s8(vget_low_s8(v));
        let hi = vmovl_s8(vget_high_s8(v));
        [
            vmovl_s16(vget_low_s16(lo)),
            vmovl_s16(vget_high_s16(lo)),
            vmovl_s16(vget_low_s16(hi)),
            vmovl_s16(vget_high_s16(hi)),
        ]
    }

    /// Each of 16 bytes shifted right by `shift` (under 8) and masked with `mask`.
    #[target_feature(enable = "neon")]
    #[inline]
    fn field(q: uint8x16_t, shift: usize, mask: u8) -> uint8x16_t {
        // `ushl` by a negative count is a logical right shift.
        vandq_u8(vshlq_u8(q, vdupq_n_s8(-(shift as i8))), vdupq_n_u8(mask))
    }

    /// Bits `2s..2s + 2` of each of 16 bytes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn crumbs(q: uint8x16_t, s: usize) -> uint8x16_t {
        field(q, 2 * s, 3)
    }

    /// The fifth bits of a Q5_0/Q5_1 block's 32 values (bit `j` of `qh` is value `j`'s), as
    /// 0x10 or 0 in bytes: values 0–15, then 16–31.
    #[target_feature(enable = "neon")]
    #[inline]
    fn fifth_bits(qh: u32) -> (uint8x16_t, uint8x16_t) {
        const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
        let [b0, b1, b2, b3] = qh.to_le_bytes();
        let bit = load16(&BIT);
        let five = vdupq_n_u8(0x10);
        // Two bytes of qh, each in 8 lanes, each lane testing its own bit.
        let half =
            |a: u8, b: u8| vandq_u8(vtstq_u8(vcombine_u8(vdup_n_u8(a), vdup_n_u8(b)), bit), five);
        (half(b0, b1), half(b2, b3))
    }

    /// The 4 runs of 4 values of a 16-value run.
    #[inline(always)]
    fn fours16(o: &mut [f32; 16]) -> &mut [[f32; 4]; 4] {
        o.as_chunks_mut::<4>().0.try_into().unwrap_or_else(|_| unreachable!())
    }

    /// `d * q - m` for 16 values `q`, in the scalar kernels' order (no fused multiply-add).
    #[target_feature(enable = "neon")]
    #[inline]
    fn put16(o: &mut [f32; 16], q: uint8x16_t, d: f32, m: f32) {
        let (d, m) = (vdupq_n_f32(d), vdupq_n_f32(m));
        for (o, q) in fours16(o).iter_mut().zip(widen(q)) {
            store4(o, vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(q)), m));
        }
    }

    /// `d * q` for 16 signed values `q`, in the scalar kernels' order.
    #[target_feature(enable = "neon")]
    #[inline]
    fn scaled16(o: &mut [f32; 16], q: int8x16_t, d: float32x4_t) {
        for (o, q) in fours16(o).iter_mut().zip(widen_signed(q)) {
            store4(o, vmulq_f32(d, vcvtq_f32_s32(q)));
        }
    }

    /// Q5_0: v = d * (q - 16), as scalar::q5_0.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q5_0(b: &[u8; 22], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<6>().unwrap_or_else(|| unreachable!());
        let d = vdupq_n_f32(f16_to_f32(u16::from_le_bytes([h[0], h[1]])));
        let (h0, h1) = fifth_bits(u32::from_le_bytes([h[2], h[3], h[4], h[5]]));
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        let (lo, hi) = nibbles(q);
        let (runs, _) = o.as_chunks_mut::<16>();
        let off = vdupq_n_s8(16);
        for (o, (q, h)) in runs.iter_mut().zip([(lo, h0), (hi, h1)]) {
            // q - 16 is in -16..16: exact in a signed byte.
            scaled16(o, vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(q, h)), off), d);
        }
    }

    /// Q5_1: v = d * q + m, as scalar::q5_1 (no fused multiply-add).
    #[target_feature(enable = "neon")]
    #[inline]
    fn q5_1(b: &[u8; 24], o: &mut [f32; 32]) {
        let (h, q) = b.split_first_chunk::<8>().unwrap_or_else(|| unreachable!());
        let d = f16_to_f32(u16::from_le_bytes([h[0], h[1]]));
        let m = vdupq_n_f32(nan_first(d, f16_to_f32(u16::from_le_bytes([h[2], h[3]]))));
        let d = vdupq_n_f32(d);
        let (h0, h1) = fifth_bits(u32::from_le_bytes([h[4], h[5], h[6], h[7]]));
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        let (lo, hi) = nibbles(q);
        let (runs, _) = o.as_chunks_mut::<16>();
        for (o, (q, h)) in runs.iter_mut().zip([(lo, h0), (hi, h1)]) {
            for (o, q) in fours16(o).iter_mut().zip(widen(vorrq_u8(q, h))) {
                store4(o, vaddq_f32(vmulq_f32(d, vcvtq_f32_u32(q)), m));
            }
        }
    }

    /// Q2_K: v = (d * sc) * q - (dmin * m), as scalar::q2_k.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q2_k(b: &[u8; 84], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[80], b[81]]));
        let dmin = f16_to_f32(u16::from_le_bytes([b[82], b[83]]));
        // The 16 groups' scales first: a loop LLVM vectorizes.
        let (mut dl, mut ml) = ([0f32; 16], [0f32; 16]);
        for (g, &sc) in b[..16].iter().enumerate() {
            (dl[g], ml[g]) = scalar::q2_k_scale_min(sc, d, dmin);
        }
        let p = pieces(b);
        let runs = sixteens(o);
        for h in 0..2 {
            for s in 0..4 {
                for half in 0..2 {
                    let g = h * 8 + s * 2 + half;
                    // Values 128h + 32s + 16half + i: bits 2s.. of byte 16 + 32h + 16half + i.
                    put16(&mut runs[g], crumbs(load16(&p[1 + h * 2 + half]), s), dl[g], ml[g]);
                }
            }
        }
    }

    /// Q3_K: v = (d * (sc - 32)) * (ql - 4 * !hbit), as scalar::q3_k.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q3_k(b: &[u8; 110], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[108], b[109]]));
        let sc = &b[96..108];
        let p = pieces(b);
        let runs = sixteens(o);
        let one = vdupq_n_u8(1);
        for h in 0..2 {
            for sh in 0..4 {
                for half in 0..2 {
                    let g = h * 8 + sh * 2 + half;
                    let dl = vdupq_n_f32(d * scalar::q3_k_scale(sc, g) as f32);
                    // Values 128h + 32sh + 16half + i: bits 2sh.. of byte 32 + 32h + 16half + i,
                    // and the high bit 4h + sh of byte 16half + i.
                    let ql = crumbs(load16(&p[2 + 2 * h + half]), sh);
                    let hb = field(load16(&p[half]), 4 * h + sh, 1);
                    let q = vsubq_u8(ql, vshlq_n_u8::<2>(veorq_u8(hb, one)));
                    scaled16(&mut runs[g], vreinterpretq_s8_u8(q), dl);
                }
            }
        }
    }

    /// Q4_K: v = (d * sc) * q - (dmin * m), as scalar::q4_k.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q4_k(b: &[u8; 144], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let dmin = f16_to_f32(u16::from_le_bytes([b[2], b[3]]));
        let (sc, mn) = scalar::k_scale_min(&b[4..16]);
        // The 8 groups' d * sc and dmin * m, 4 per vector (the scalar kernel's products),
        // the min 0 where d * sc is NaN (`nan_first`).
        let (mut dl, mut ml) = ([[0f32; 4]; 2], [[0f32; 4]; 2]);
        let (sc, mn) = (widen8(sc), widen8(mn));
        for k in 0..2 {
            let dk = vmulq_f32(vdupq_n_f32(d), vcvtq_f32_u32(sc[k]));
            let mk = vmulq_f32(vdupq_n_f32(dmin), vcvtq_f32_u32(mn[k]));
            store4(&mut dl[k], dk);
            store4(&mut ml[k], vbslq_f32(vceqq_f32(dk, dk), mk, vdupq_n_f32(0.0)));
        }
        let (dl, ml) = (dl.as_flattened(), ml.as_flattened());
        let p = pieces(b);
        let runs = sixteens(o);
        for c in 0..4 {
            // Group 2c: the low nibbles of bytes 16 + 32c.. (pieces 1 + 2c, 2 + 2c); group
            // 2c + 1: their high nibbles.
            for k in 0..2 {
                let (lo, hi) = nibbles(&p[1 + 2 * c + k]);
                put16(&mut runs[4 * c + k], lo, dl[2 * c], ml[2 * c]);
                put16(&mut runs[4 * c + 2 + k], hi, dl[2 * c + 1], ml[2 * c + 1]);
            }
        }
    }

    /// 8 bytes widened to 8 u32, in order.
    #[target_feature(enable = "neon")]
    #[inline]
    fn widen8(v: [u8; 8]) -> [uint32x4_t; 2] {
        let v = vmovl_u8(vcreate_u8(u64::from_le_bytes(v)));
        [vmovl_u16(vget_low_u16(v)), vmovl_u16(vget_high_u16(v))]
    }

    /// Q6_K: v = (d * sc) * (q - 32), as scalar::q6_k.
    #[target_feature(enable = "neon")]
    #[inline]
    fn q6_k(b: &[u8; 210], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[208], b[209]]));
        let p = pieces(b);
        let runs = sixteens(o);
        let off = vdupq_n_s8(32);
        for h in 0..2 {
            for m in 0..4 {
                for half in 0..2 {
                    // Values 128h + 32m + 16half + i: nibble m / 2 of byte
                    // 64h + 32(m % 2) + 16half + i, bits 2m.. of byte 128 + 32h + 16half + i.
                    let (lo, hi) = nibbles(&p[h * 4 + 2 * (m % 2) + half]);
                    let ql = if m < 2 { lo } else { hi };
                    let qh = vshlq_n_u8::<4>(crumbs(load16(&p[8 + h * 2 + half]), m));
                    // q - 32 is in -32..32: exact in a signed byte.
                    let q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(ql, qh)), off);
                    let g = h * 8 + 2 * m + half;
                    let dl = vdupq_n_f32(d * f32::from(b[192 + g] as i8));
                    scaled16(&mut runs[g], q, dl);
                }
            }
        }
    }

    /// A 16-entry table of signed values for `tbl`.
    #[target_feature(enable = "neon")]
    #[inline]
    fn lut16(k: [i8; 16]) -> int8x16_t {
        vreinterpretq_s8_u8(load16(&k.map(|v| v as u8)))
    }

    /// 32 values `d * table[nibble]` of 16 bytes of nibbles (one `tbl` per 16): the low
    /// nibbles are values 0–15.
    #[target_feature(enable = "neon")]
    #[inline]
    fn nibble_run(q: &[u8; 16], d: f32, table: int8x16_t, o: &mut [f32; 32]) {
        let d = vdupq_n_f32(d);
        let (lo, hi) = nibbles(q);
        let (runs, _) = o.as_chunks_mut::<16>();
        for (o, n) in runs.iter_mut().zip([lo, hi]) {
            scaled16(o, vqtbl1q_s8(table, n), d);
        }
    }

    /// IQ4_NL: v = d * kvalue, as scalar::iq4_nl.
    #[target_feature(enable = "neon")]
    #[inline]
    fn iq4_nl(b: &[u8; 18], o: &mut [f32; 32]) {
        let (d, q) = b.split_first_chunk::<2>().unwrap_or_else(|| unreachable!());
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        nibble_run(q, f16_to_f32(u16::from_le_bytes(*d)), lut16(scalar::KVALUES_IQ4NL), o);
    }

    /// IQ4_XS: v = (d * (s - 32)) * kvalue, as scalar::iq4_xs.
    #[target_feature(enable = "neon")]
    #[inline]
    fn iq4_xs(b: &[u8; 136], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let sh = u16::from_le_bytes([b[2], b[3]]);
        let (qs, _) = b[8..].as_chunks::<16>();
        let (runs, _) = o.as_chunks_mut::<32>();
        let table = lut16(scalar::KVALUES_IQ4NL);
        for (ib, (q, o)) in qs.iter().zip(runs).enumerate() {
            let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf;
            let hi = ((sh >> (2 * ib)) & 3) as u8;
            nibble_run(q, d * (i32::from(lo | (hi << 4)) - 32) as f32, table, o);
        }
    }

    /// MXFP4: v = d * kvalue, as scalar::mxfp4.
    #[target_feature(enable = "neon")]
    #[inline]
    fn mxfp4(b: &[u8; 17], o: &mut [f32; 32]) {
        let (e, q) = b.split_first().unwrap_or_else(|| unreachable!());
        let q: &[u8; 16] = q.try_into().unwrap_or_else(|_| unreachable!());
        nibble_run(q, scalar::e8m0_half(*e), lut16(scalar::KVALUES_FP4), o);
    }

    /// NVFP4: v = d[sub-block] * kvalue, as scalar::nvfp4.
    #[target_feature(enable = "neon")]
    #[inline]
    fn nvfp4(b: &[u8; 36], o: &mut [f32; 64]) {
        let table = lut16(scalar::KVALUES_FP4);
        let (scales, q) = b.split_first_chunk::<4>().unwrap_or_else(|| unreachable!());
        let (q, _) = q.as_chunks::<16>();
        let (runs, _) = o.as_chunks_mut::<16>();
        // Two sub-blocks (8 bytes each) per 16-byte load.
        for (k, q) in q.iter().enumerate() {
            let (lo, hi) = nibbles(q);
            for s in 0..2 {
                // Sub-block 2k + s's values 0–7 are its bytes' low nibbles, 8–15 the high.
                let n = if s == 0 {
                    vcombine_u8(vget_low_u8(lo), vget_low_u8(hi))
                } else {
                    vcombine_u8(vget_high_u8(lo), vget_high_u8(hi))
                };
                let d = vdupq_n_f32(scalar::ue4m3_half(scales[2 * k + s]));
                scaled16(&mut runs[2 * k + s], vqtbl1q_s8(table, n), d);
            }
        }
    }

    /// TQ2_0: v = d * (q - 1), as scalar::tq2_0.
    #[target_feature(enable = "neon")]
    #[inline]
    fn tq2_0(b: &[u8; 66], o: &mut [f32; 256]) {
        let d = vdupq_n_f32(f16_to_f32(u16::from_le_bytes([b[64], b[65]])));
        let p = pieces(b);
        let runs = sixteens(o);
        let one = vdupq_n_s8(1);
        for h in 0..2 {
            for s in 0..4 {
                for k in 0..2 {
                    // Values 128h + 32s + 16k + i: bits 2s.. of byte 32h + 16k + i.
                    let q = vreinterpretq_s8_u8(crumbs(load16(&p[2 * h + k]), s));
                    scaled16(&mut runs[8 * h + 2 * s + k], vsubq_s8(q, one), d);
                }
            }
        }
    }

    /// 8 values `dl * (grid + delta)` of one IQ1 grid row (eight signed bytes), in the scalar
    /// kernels' order.
    #[target_feature(enable = "neon")]
    #[inline]
    fn iq1_row(row: u64, dl: float32x4_t, delta: float32x4_t, o: &mut [f32; 8]) {
        let g = vmovl_s8(vcreate_s8(row));
        let g = [vmovl_s16(vget_low_s16(g)), vmovl_s16(vget_high_s16(g))];
        let (o, _) = o.as_chunks_mut::<4>();
        for (o, g) in o.iter_mut().zip(g) {
            store4(o, vmulq_f32(dl, vaddq_f32(vcvtq_f32_s32(g), delta)));
        }
    }

    /// IQ1_S: v = d * (2s + 1) * (grid + delta), as scalar::iq1_s.
    #[target_feature(enable = "neon")]
    #[inline]
    fn iq1_s(b: &[u8; 50], o: &mut [f32; 256]) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let (rows, _) = o.as_chunks_mut::<8>();
        for (ib, rows) in rows.chunks_exact_mut(4).enumerate() {
            let qh = u16::from_le_bytes([b[34 + 2 * ib], b[35 + 2 * ib]]);
            let dl = vdupq_n_f32(d * f32::from(2 * ((qh >> 12) & 7) + 1));
            let delta = vdupq_n_f32(if qh & 0x8000 == 0 { 0.125 } else { -0.125 });
            for (l, o) in rows.iter_mut().enumerate() {
                let idx = usize::from(b[2 + ib * 4 + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
                iq1_row(IQ1S_GRID[idx], dl, delta, o);
            }
        }
    }

    /// IQ1_M: v = d * (2s + 1) * (grid + delta), as scalar::iq1_m.
    #[target_feature(enable = "neon")]
    #[inline]
    fn iq1_m(b: &[u8; 56], o: &mut [f32; 256]) {
        let s = [48, 50, 52, 54].map(|i| u16::from_le_bytes([b[i], b[i + 1]]));
        let d = f16_to_f32(
            ((s[0] & 0xf000) >> 12)
                | ((s[1] & 0xf000) >> 8)
                | ((s[2] & 0xf000) >> 4)
                | (s[3] & 0xf000),
        );
        let (pairs, _) = o.as_chunks_mut::<16>();
        // Rows 2p and 2p + 1 share a scale and the two nibbles of byte 32 + p.
        for (p, o) in pairs.iter_mut().enumerate() {
            let sc = (s[p / 4] >> (3 * (p % 4))) & 7;
            let dl = vdupq_n_f32(d * f32::from(2 * sc + 1));
            let (rows, _) = o.as_chunks_mut::<8>();
            for (k, o) in rows.iter_mut().enumerate() {
                let g = 2 * p + k;
                let qh = b[32 + p] >> (4 * k);
                let idx = usize::from(b[g]) | (usize::from(qh & 7) << 8);
                let delta = vdupq_n_f32(if qh & 8 == 0 { 0.125 } else { -0.125 });
                iq1_row(IQ1S_GRID[idx], dl, delta, o);
            }
        }
    }

    /// BF16: the top half of an f32.
    #[target_feature(enable = "neon")]
    #[inline]
    fn bf16x8(i: &[u8; 16], o: &mut [f32; 8]) {
        let h = vreinterpretq_u16_u8(load16(i));
        let (lo, hi) = o.split_at_mut(4);
        let lo: &mut [f32; 4] = lo.try_into().unwrap_or_else(|_| unreachable!());
        let hi: &mut [f32; 4] = hi.try_into().unwrap_or_else(|_| unreachable!());
        store4(lo, vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_low_u16(h))));
        store4(hi, vreinterpretq_f32_u32(vshll_n_u16::<16>(vget_high_u16(h))));
    }

    /// F16 → F32 in integer arithmetic: exact, NaN payloads and signalling NaNs kept (the
    /// `fcvtl` instruction would quiet them, where numpy does not).
    #[target_feature(enable = "neon")]
    #[inline]
    fn f16x8(i: &[u8; 16], o: &mut [f32; 8]) {
        let h = vreinterpretq_u16_u8(load16(i));
        let (lo, hi) = o.split_at_mut(4);
        let lo: &mut [f32; 4] = lo.try_into().unwrap_or_else(|_| unreachable!());
        let hi: &mut [f32; 4] = hi.try_into().unwrap_or_else(|_| unreachable!());
        store4(lo, f16x4(vmovl_u16(vget_low_u16(h))));
        store4(hi, f16x4(vmovl_u16(vget_high_u16(h))));
    }

    /// Four f16 bit patterns (zero-extended to 32 bits) to f32.
    #[target_feature(enable = "neon")]
    #[inline]
    fn f16x4(h: uint32x4_t) -> float32x4_t {
        let sign = vshlq_n_u32::<16>(vandq_u32(h, vdupq_n_u32(0x8000)));
        let em = vandq_u32(h, vdupq_n_u32(0x7fff));
        // Normal numbers: rebias the exponent (15 → 127).
        let normal = vaddq_u32(vshlq_n_u32::<13>(em), vdupq_n_u32(112 << 23));
        // Inf and NaN: the exponent goes to 255 (add the rebias twice), mantissa kept.
        let is_max = vcgtq_u32(em, vdupq_n_u32(0x7bff));
        let normal = vaddq_u32(normal, vandq_u32(is_max, vdupq_n_u32(112 << 23)));
        // Zero and subnormals: em * 2^-24, exact.
        let is_small = vcltq_u32(em, vdupq_n_u32(0x0400));
        let small = vreinterpretq_u32_f32(vmulq_f32(
            vcvtq_f32_u32(em),
            vdupq_n_f32(f32::from_bits(0x3380_0000)),
        ));
        let mag = vbslq_u32(is_small, small, normal);
        vreinterpretq_f32_u32(vorrq_u32(mag, sign))
    }
}
