//! The dispatched (SIMD) kernels, the scalar kernels and the threaded path give the same bits
//! on any bytes, non-finite scales and NaN payloads included, for every length (so the SIMD
//! loops' remainders are covered too).

use sipllm_quants::{
    SUPPORTED, block_layout, dequantize, dequantize_parallel, dequantize_scalar, element_count,
};

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// The values' bits; under Miri, which picks NaN payloads of arithmetic results at random
/// (as Rust allows), every NaN counts as one.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| if cfg!(miri) && x.is_nan() { 0x7fc0_0000 } else { x.to_bits() }).collect()
}

#[test]
fn simd_and_scalar_give_identical_bits() {
    let counts: &[usize] =
        if cfg!(miri) { &[0, 1, 3] } else { &[0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 257] };
    for ty in SUPPORTED {
        let (_, size) = block_layout(ty).unwrap();
        for &blocks in counts {
            let src = bytes(u64::from(ty.code()) * 1000 + blocks as u64, blocks * size);
            let n = element_count(ty, src.len()).unwrap();
            let (mut fast, mut slow) = (vec![0f32; n], vec![1f32; n]);
            dequantize(ty, &src, &mut fast).unwrap();
            dequantize_scalar(ty, &src, &mut slow).unwrap();
            assert_eq!(bits(&fast), bits(&slow), "{ty}, {blocks} blocks");
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "threads over megabytes")]
fn threads_give_the_single_thread_bits() {
    for ty in SUPPORTED {
        let (_, size) = block_layout(ty).unwrap();
        // Above the per-thread threshold for 3 threads, and not a multiple of 3 blocks.
        let blocks = (3 << 20) / size + 5;
        let src = bytes(u64::from(ty.code()), blocks * size);
        let n = element_count(ty, src.len()).unwrap();
        let (mut one, mut many) = (vec![0f32; n], vec![1f32; n]);
        dequantize(ty, &src, &mut one).unwrap();
        dequantize_parallel(ty, &src, &mut many, 3).unwrap();
        assert_eq!(bits(&one), bits(&many), "{ty}");
    }
}

/// Every one of the 65536 f16 and bf16 bit patterns (zeros, subnormals, infinities, quiet
/// and signalling NaNs with every payload), at every position of a SIMD vector.
#[test]
fn every_half_bit_pattern_gives_the_scalar_bits() {
    use sipllm_quants::GgmlType;
    let n = if cfg!(miri) { 1 << 8 } else { 1 << 16 };
    for ty in [GgmlType::F16, GgmlType::BF16] {
        for shift in [0u32, 3] {
            // Shifting the patterns moves each to another lane; the shorter input leaves a
            // remainder for the tail loop.
            let len = n - shift as usize;
            let src: Vec<u8> =
                (0..len as u32).flat_map(|i| ((i + shift) as u16).to_le_bytes()).collect();
            let (mut fast, mut slow) = (vec![0f32; len], vec![1f32; len]);
            dequantize(ty, &src, &mut fast).unwrap();
            dequantize_scalar(ty, &src, &mut slow).unwrap();
            assert_eq!(bits(&fast), bits(&slow), "{ty}, shift {shift}");
        }
    }
}
