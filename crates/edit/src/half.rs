//! Rounding an exact `f32` to the two 16-bit float formats a file may hold: IEEE 754
//! binary16 ([`f16_bits`], ggml's `F16`) and bfloat16 ([`bf16_bits`], ggml's `BF16`), both to
//! nearest, ties to even. One implementation for the toy models' F16 weights and Q8_0 scales
//! and for safetensors exports.

/// The IEEE 754 binary16 bits of `x`, rounded to nearest, ties to even (what ggml's
/// `GGML_FP32_TO_FP16` computes); overflow gives ±∞, NaN stays NaN.
pub(crate) fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xFF) as i32;
    let man = b & 0x7F_FFFF;
    if exp == 0xFF {
        let nan = if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
        return sign | 0x7C00 | nan;
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        // Subnormal (or zero): the value is m × 2^-24 with m = (1.man) >> (14 - e).
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rem = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1FFF;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        // A carry into the exponent is the correct rounding (up to ∞).
        r += 1;
    }
    sign | r as u16
}

/// The `f32` value of IEEE 754 binary16 bits (exact).
#[cfg(test)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1F);
    let man = f32::from(h & 0x3FF);
    match exp {
        0 => sign * man * 2f32.powi(-24),
        0x1F if man == 0.0 => sign * f32::INFINITY,
        0x1F => f32::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15),
    }
}

/// The bfloat16 bits of `x` (its upper 16 bits), rounded to nearest, ties to even; overflow
/// gives ±∞; a NaN keeps its sign and upper payload bits and is made quiet (bit 6), so it
/// stays a NaN however its payload was. This is gguf-py's `quants.BF16` quantization
/// (`__compute_fp32_to_bf16`) and PyTorch's `float32 → bfloat16` for every non-NaN value.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7FFF_FFFF > 0x7F80_0000 {
        return ((b >> 16) | 0x40) as u16;
    }
    // Adding 0x7FFF plus the kept part's lowest bit rounds a tie to the even neighbour; a
    // carry into the exponent is the correct rounding (up to ∞). No overflow: b <= 0xFF80_0000.
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_rounds_to_nearest_even() {
        let cases: [(f32, u16); 14] = [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (1.0, 0x3C00),
            (-2.0, 0xC000),
            (0.5, 0x3800),
            (65504.0, 0x7BFF),
            (65520.0, 0x7C00), // rounds up to infinity
            (1e10, 0x7C00),
            (0.1, 0x2E66),
            (2f32.powi(-14), 0x0400),             // smallest normal
            (2f32.powi(-24), 0x0001),             // smallest subnormal
            (2f32.powi(-25), 0x0000),             // a tie: rounds to even (0)
            (1.0 + 2f32.powi(-11), 0x3C00),       // a tie: rounds to even
            (1.0 + 3.0 * 2f32.powi(-11), 0x3C02), // a tie: rounds up to even
        ];
        for (x, bits) in cases {
            assert_eq!(f16_bits(x), bits, "{x:e}");
        }
        assert_eq!(f16_bits(f32::INFINITY), 0x7C00);
        assert_eq!(f16_bits(f32::NEG_INFINITY), 0xFC00);
        assert!(f16_to_f32(f16_bits(f32::NAN)).is_nan());
        // Every half round-trips through f32.
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if !x.is_nan() {
                assert_eq!(f16_bits(x), h, "{h:#06x}");
            }
        }
    }

    #[test]
    fn bf16_conversion_rounds_to_nearest_even() {
        let cases: [(u32, u16); 9] = [
            (0x3F80_0000, 0x3F80), // 1.0
            (0x3F80_8000, 0x3F80), // a tie: stays even
            (0x3F81_8000, 0x3F82), // a tie: rounds up to even
            (0x3F80_8001, 0x3F81), // above the tie
            (0x3F80_7FFF, 0x3F80), // below the tie
            (0x7F7F_FFFF, 0x7F80), // f32::MAX rounds to ∞
            (0xFF80_0000, 0xFF80), // -∞ stays
            (0x7F80_0001, 0x7FC0), // a signalling NaN becomes quiet
            (0x8000_0000, 0x8000), // -0
        ];
        for (bits, want) in cases {
            assert_eq!(bf16_bits(f32::from_bits(bits)), want, "{bits:#010x}");
        }
        // Every bfloat16 round-trips through f32.
        for h in 0..=u16::MAX {
            let x = f32::from_bits(u32::from(h) << 16);
            if !x.is_nan() {
                assert_eq!(bf16_bits(x), h, "{h:#06x}");
            }
        }
    }
}
