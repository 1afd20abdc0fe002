//! Tensor values from a tensor's stored bytes: dequantization of every ggml type gguf-py
//! 0.19.0 dequantizes, bit-exact with it.
//!
//! [`dequantize`] turns whole blocks of one [`GgmlType`] into f32 values, checking that the
//! input is a whole number of blocks and that the output holds exactly their element count.
//! It picks the fastest kernel the CPU has at run time (AVX2 on x86_64, else the portable
//! scalar kernels); [`dequantize_scalar`] always runs the portable ones, and the two give the
//! same bits. [`dequantize_parallel`] splits big inputs over scoped threads.
//! [`dequantize_to_values`] returns the values in a new [`Values`], memory chosen for fast
//! first writes (huge pages for big outputs).
//!
//! ```
//! use sipllm_gguf::GgmlType;
//! // One Q8_0 block: f16 scale 0.5, then 32 signed bytes.
//! let mut block = vec![0x00, 0x38];
//! block.extend((0..32).map(|i| i as u8));
//! let mut out = vec![0f32; 32];
//! sipllm_quants::dequantize(GgmlType::Q8_0, &block, &mut out)?;
//! assert_eq!(out[3], 1.5);
//! # Ok::<(), sipllm_quants::DequantError>(())
//! ```
//!
//! The crate does no I/O and has no `unsafe` outside its `simd` module.
#![deny(unsafe_code)]

mod error;
mod scalar;
mod simd;
#[allow(clippy::unreadable_literal)]
mod tables;
mod values;

pub use error::DequantError;
pub use sipllm_gguf::GgmlType;
pub use values::Values;

/// Every type this crate dequantizes, in ggml code order (the types gguf-py 0.19.0
/// dequantizes).
pub const SUPPORTED: [GgmlType; 26] = {
    use GgmlType::*;
    [
        F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS,
        IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, IQ1_M, BF16, TQ1_0, TQ2_0, MXFP4, NVFP4,
    ]
};

/// True if [`dequantize`] accepts the type.
pub fn is_supported(ty: GgmlType) -> bool {
    SUPPORTED.contains(&ty)
}

/// `(elements, bytes)` per block of a supported type.
fn block_shape(ty: GgmlType) -> Result<(usize, usize), DequantError> {
    if !is_supported(ty) {
        return Err(DequantError::UnsupportedType { ty });
    }
    match (ty.block_size(), ty.type_size()) {
        (Some(n), Some(b)) => Ok((n as usize, b as usize)),
        _ => Err(DequantError::UnsupportedType { ty }),
    }
}

/// The number of values `len` bytes of `ty` hold, checked: the type must be supported and
/// `len` a whole number of blocks.
pub fn element_count(ty: GgmlType, len: usize) -> Result<usize, DequantError> {
    let (n, b) = block_shape(ty)?;
    if !len.is_multiple_of(b) {
        return Err(DequantError::PartialBlock { ty, len, type_size: b });
    }
    // At most 8 values per stored byte (IQ1_S), so this cannot overflow for a real slice;
    // checked anyway.
    (len / b).checked_mul(n).ok_or(DequantError::OutputLength {
        ty,
        blocks: len / b,
        expected: usize::MAX,
        actual: 0,
    })
}

/// Elements and bytes per block of a supported type: `None` for the others.
pub fn block_layout(ty: GgmlType) -> Option<(usize, usize)> {
    block_shape(ty).ok()
}

fn check(ty: GgmlType, src: &[u8], dst: &[f32]) -> Result<(), DequantError> {
    let expected = element_count(ty, src.len())?;
    if dst.len() != expected {
        let (_, b) = block_shape(ty)?;
        return Err(DequantError::OutputLength {
            ty,
            blocks: src.len() / b,
            expected,
            actual: dst.len(),
        });
    }
    Ok(())
}

/// Dequantizes whole blocks of `ty` from `src` into `dst`, with the fastest kernel this CPU
/// has. `dst.len()` must be exactly [`element_count`]`(ty, src.len())`.
pub fn dequantize(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), DequantError> {
    check(ty, src, dst)?;
    run_fastest(ty, src, dst, streams(dst));
    Ok(())
}

/// [`dequantize`] with the portable kernels only (the reference the SIMD kernels are tested
/// against).
pub fn dequantize_scalar(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), DequantError> {
    check(ty, src, dst)?;
    run_scalar(ty, src, dst);
    Ok(())
}

/// The values of whole blocks of `ty` in a new [`Values`] (memory chosen for fast first
/// writes: a fresh output costs page faults, which a `Vec` of 4 KiB pages makes several times
/// slower than the dequantization itself). The same bits as [`dequantize`].
///
/// ```
/// use sipllm_quants::GgmlType;
/// // One Q8_0 block: f16 scale 0.5, then 32 signed bytes.
/// let mut block = vec![0x00, 0x38];
/// block.extend((0..32).map(|i| i as u8));
/// let values = sipllm_quants::dequantize_to_values(GgmlType::Q8_0, &block)?;
/// assert_eq!((values.len(), values[3]), (32, 1.5));
/// # Ok::<(), sipllm_quants::DequantError>(())
/// ```
pub fn dequantize_to_values(ty: GgmlType, src: &[u8]) -> Result<Values, DequantError> {
    let mut values = Values::zeroed(element_count(ty, src.len())?)?;
    dequantize(ty, src, &mut values)?;
    Ok(values)
}

/// [`dequantize_to_values`] over up to `threads` threads, as [`dequantize_parallel`] splits
/// them (the new pages fault in parallel too).
pub fn dequantize_parallel_to_values(
    ty: GgmlType,
    src: &[u8],
    threads: usize,
) -> Result<Values, DequantError> {
    let mut values = Values::zeroed(element_count(ty, src.len())?)?;
    dequantize_parallel(ty, src, &mut values, threads)?;
    Ok(values)
}

/// Below this many input bytes per thread, [`dequantize_parallel`] stays on one thread
/// (starting a thread costs about as much as dequantizing a few hundred KiB).
pub const PARALLEL_MIN_BYTES_PER_THREAD: usize = 1 << 20;

/// [`dequantize`] over up to `threads` scoped threads (0 = the machine's parallelism), each
/// taking a contiguous run of whole blocks. Inputs under
/// [`PARALLEL_MIN_BYTES_PER_THREAD`] per thread use fewer threads, down to the calling one.
/// The output is the same as [`dequantize`]'s, bit for bit.
pub fn dequantize_parallel(
    ty: GgmlType,
    src: &[u8],
    dst: &mut [f32],
    threads: usize,
) -> Result<(), DequantError> {
    check(ty, src, dst)?;
    let (n, b) = block_shape(ty)?;
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    let blocks = src.len() / b;
    let threads = threads.min(src.len() / PARALLEL_MIN_BYTES_PER_THREAD).max(1);
    // Decided on the whole output, which is what has to fit in cache.
    let stream = streams(dst);
    if threads == 1 {
        run_fastest(ty, src, dst, stream);
        return Ok(());
    }
    let per = blocks.div_ceil(threads);
    std::thread::scope(|scope| {
        let mut jobs = src.chunks(per * b).zip(dst.chunks_mut(per * n));
        let first = jobs.next();
        for (s, d) in jobs {
            scope.spawn(move || run_fastest(ty, s, d, stream));
        }
        if let Some((s, d)) = first {
            run_fastest(ty, s, d, stream);
        }
    });
    Ok(())
}

/// From this many output bytes on, the SIMD kernels write with non-temporal stores (where the
/// CPU has them): an output this big does not stay in a last-level cache (32 MiB on the
/// machines the figures in docs/benchmarks.md come from), so it goes to memory either way,
/// and non-temporal stores save reading each line before it is written.
pub const STREAM_MIN_OUTPUT_BYTES: usize = 32 << 20;

/// Whether an output this big is written with non-temporal stores.
fn streams(dst: &[f32]) -> bool {
    std::mem::size_of_val(dst) >= STREAM_MIN_OUTPUT_BYTES
}

/// The SIMD kernel if the CPU has one for `ty`, else the portable one, for a checked pair;
/// `stream` asks for non-temporal stores.
fn run_fastest(ty: GgmlType, src: &[u8], dst: &mut [f32], stream: bool) {
    if !simd::dequantize(ty, src, dst, stream) {
        run_scalar(ty, src, dst);
    }
}

/// The portable kernels, for a checked `(src, dst)` pair.
fn run_scalar(ty: GgmlType, src: &[u8], dst: &mut [f32]) {
    use scalar::*;
    match ty {
        GgmlType::F32 => scalar::f32(src, dst),
        GgmlType::F16 => scalar::f16(src, dst),
        GgmlType::BF16 => bf16(src, dst),
        GgmlType::Q4_0 => blocks(src, dst, q4_0),
        GgmlType::Q4_1 => blocks(src, dst, q4_1),
        GgmlType::Q5_0 => blocks(src, dst, q5_0),
        GgmlType::Q5_1 => blocks(src, dst, q5_1),
        GgmlType::Q8_0 => blocks(src, dst, q8_0),
        GgmlType::Q2_K => blocks(src, dst, q2_k),
        GgmlType::Q3_K => blocks(src, dst, q3_k),
        GgmlType::Q4_K => blocks(src, dst, q4_k),
        GgmlType::Q5_K => blocks(src, dst, q5_k),
        GgmlType::Q6_K => blocks(src, dst, q6_k),
        GgmlType::TQ1_0 => blocks(src, dst, tq1_0),
        GgmlType::TQ2_0 => blocks(src, dst, tq2_0),
        GgmlType::MXFP4 => blocks(src, dst, mxfp4),
        GgmlType::NVFP4 => blocks(src, dst, nvfp4),
        GgmlType::IQ2_XXS => blocks(src, dst, iq2_xxs),
        GgmlType::IQ2_XS => blocks(src, dst, iq2_xs),
        GgmlType::IQ2_S => blocks(src, dst, iq2_s),
        GgmlType::IQ3_XXS => blocks(src, dst, iq3_xxs),
        GgmlType::IQ3_S => blocks(src, dst, iq3_s),
        GgmlType::IQ1_S => blocks(src, dst, iq1_s),
        GgmlType::IQ1_M => blocks(src, dst, iq1_m),
        GgmlType::IQ4_NL => blocks(src, dst, iq4_nl),
        GgmlType::IQ4_XS => blocks(src, dst, iq4_xs),
        // `check` admitted only supported types.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked() {
        let mut out = vec![0f32; 32];
        assert_eq!(dequantize(GgmlType::Q8_0, &[0u8; 34], &mut out), Ok(()));
        let e = dequantize(GgmlType::Q8_0, &[0u8; 33], &mut out).unwrap_err();
        assert_eq!(e.code(), "quants::dequant::partial_block");
        assert_eq!(e, DequantError::PartialBlock { ty: GgmlType::Q8_0, len: 33, type_size: 34 });
        let e = dequantize(GgmlType::Q8_0, &[0u8; 68], &mut out).unwrap_err();
        assert_eq!(
            e,
            DequantError::OutputLength { ty: GgmlType::Q8_0, blocks: 2, expected: 64, actual: 32 }
        );
        assert_eq!(e.code(), "quants::dequant::output_length");
    }

    #[test]
    fn unsupported_types_are_refused() {
        let mut out = vec![0f32; 256];
        for ty in [
            GgmlType::Q8_1,
            GgmlType::Q8_K,
            GgmlType::I8,
            GgmlType::I32,
            GgmlType::F64,
            GgmlType::Q1_0,
            GgmlType::Removed(4),
            GgmlType::Unknown(99),
        ] {
            let e = dequantize(ty, &[0u8; 8], &mut out).unwrap_err();
            assert_eq!(e, DequantError::UnsupportedType { ty });
            assert_eq!(e.code(), "quants::dequant::unsupported_type");
            assert!(!e.help().is_empty());
        }
        assert_eq!(SUPPORTED.iter().filter(|t| t.is_known()).count(), 26);
    }

    /// The non-temporal store path (taken by itself only for outputs of
    /// [`STREAM_MIN_OUTPUT_BYTES`] and more) gives the scalar kernels' bits for every type,
    /// for block counts around its staging groups, and for outputs at every f32 offset from
    /// a cache line (its head and tail are plain stores).
    #[test]
    #[cfg_attr(miri, ignore = "tests the SIMD path, which Miri builds leave out")]
    fn non_temporal_stores_give_the_scalar_bits() {
        for ty in SUPPORTED {
            let (_, size) = block_layout(ty).unwrap();
            for blocks in [0usize, 1, 3, 63, 64, 65, 130, 1031] {
                let mut s = (u64::from(ty.code()) << 32) | blocks as u64;
                let src: Vec<u8> = (0..blocks * size)
                    .map(|_| {
                        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (s >> 56) as u8
                    })
                    .collect();
                let n = element_count(ty, src.len()).unwrap();
                let mut want = vec![0f32; n];
                run_scalar(ty, &src, &mut want);
                for shift in 0..16 {
                    let mut got = vec![1f32; n + shift + 1];
                    run_fastest(ty, &src, &mut got[shift..shift + n], true);
                    let same = got[shift..shift + n]
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{ty}, {blocks} blocks, output at +{shift} f32");
                    assert!(
                        got[..shift].iter().all(|&v| v == 1.0),
                        "{ty}: wrote before the output"
                    );
                    assert_eq!(got[shift + n], 1.0, "{ty}: wrote past the output");
                }
            }
        }
    }

    #[test]
    fn empty_input_is_zero_values() {
        for ty in SUPPORTED {
            assert_eq!(dequantize(ty, &[], &mut []), Ok(()), "{ty}");
        }
    }
}
