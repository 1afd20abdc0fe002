//! `dequantize_to_values` (a new, possibly mapped, output) gives `dequantize`'s bits.

use sipllm_quants::{
    DequantError, GgmlType, Values, block_layout, dequantize, dequantize_parallel_to_values,
    dequantize_to_values, element_count,
};

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend((z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
#[cfg_attr(miri, ignore = "megabytes")]
fn big_values_have_the_bits_of_dequantize() {
    for ty in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ2_XS] {
        let (n, size) = block_layout(ty).unwrap();
        // Past the mapping threshold, and not a whole number of 2 MiB pages of output.
        let blocks = Values::MAP_MIN_BYTES / 4 / n * 3 + 7;
        let src = bytes(u64::from(ty.code()), blocks * size);
        let len = element_count(ty, src.len()).unwrap();
        assert!(len * 4 > Values::MAP_MIN_BYTES);
        let mut expect = vec![0f32; len];
        dequantize(ty, &src, &mut expect).unwrap();
        let one = dequantize_to_values(ty, &src).unwrap();
        assert_eq!(one.len(), len, "{ty}");
        assert!(bits(&one) == bits(&expect), "{ty}: values differ from dequantize's");
        let two = dequantize_parallel_to_values(ty, &src, 2).unwrap();
        assert!(bits(&two) == bits(&expect), "{ty}: 2 threads differ from dequantize's");
        assert!(bits(&one.into_vec()) == bits(&expect), "{ty}: into_vec");
    }
}

#[test]
fn small_values_have_the_bits_of_dequantize() {
    let ty = GgmlType::Q4_0;
    let src = bytes(7, 3 * 18);
    let mut expect = vec![0f32; 96];
    dequantize(ty, &src, &mut expect).unwrap();
    assert_eq!(bits(&dequantize_to_values(ty, &src).unwrap()), bits(&expect));
    assert_eq!(bits(&dequantize_parallel_to_values(ty, &src, 0).unwrap()), bits(&expect));
}

#[test]
fn values_check_the_input() {
    assert_eq!(
        dequantize_to_values(GgmlType::Q8_0, &[0; 35]).unwrap_err(),
        DequantError::PartialBlock { ty: GgmlType::Q8_0, len: 35, type_size: 34 }
    );
    assert_eq!(
        dequantize_parallel_to_values(GgmlType::I8, &[0; 4], 2).unwrap_err(),
        DequantError::UnsupportedType { ty: GgmlType::I8 }
    );
    assert_eq!(dequantize_to_values(GgmlType::F32, &[]).unwrap(), Values::default());
}
