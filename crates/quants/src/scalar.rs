//! The portable kernels: one function per type, one block at a time, no `unsafe`.
//!
//! Each kernel computes every value with the same f32 operations, in the same order, as
//! gguf-py 0.19.0's `dequantize_blocks` (which is what makes the output bit-exact, NaN payloads
//! included): a scale is widened from f16 first, products are never fused, and `a * b * c` is
//! `(a * b) * c`. Indices into lookup tables come from masked bit fields no wider than the
//! table, so no lookup can fail. The block layouts are described in docs/quants.md.

// The loops index by the format's element numbers, which is how the layouts are defined.
#![allow(clippy::needless_range_loop)]

use crate::tables::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};

/// Exact IEEE half → single conversion (every f16 is an f32; NaN payloads are kept, signalling
/// NaNs stay signalling, as numpy's `astype(np.float32)` does).
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else if exp != 0 {
        sign | ((exp + 112) << 23) | (man << 13)
    } else if man == 0 {
        sign
    } else {
        // Subnormal: man * 2^-24, exact in f32. Normalise the mantissa.
        let shift = man.leading_zeros() - 21; // brings the top set bit to bit 10
        let man = (man << shift) & 0x3ff;
        sign | ((113 - shift) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

#[inline(always)]
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[i], b[i + 1]]))
}

#[inline(always)]
fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

#[inline(always)]
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The second operand of `a * q ± b`, made finite when `a` is NaN: then the result is `a`'s
/// NaN (quieted) whatever `b` is, as in gguf-py, where x86 returns the first operand's NaN.
/// Without this, the payload of a result with two NaN operands would depend on which operand
/// order LLVM picked (it treats `+` as commutative), and SIMD and scalar code could differ.
#[inline(always)]
pub(crate) fn nan_first(a: f32, b: f32) -> f32 {
    if a.is_nan() { 0.0 } else { b }
}

/// Applies a block kernel to every whole block. The caller has checked that `src` holds as
/// many blocks as `dst` has rows.
#[inline(always)]
pub(crate) fn blocks<const B: usize, const N: usize>(
    src: &[u8],
    dst: &mut [f32],
    kernel: impl Fn(&[u8; B], &mut [f32; N]),
) {
    let (inp, _) = src.as_chunks::<B>();
    let (out, _) = dst.as_chunks_mut::<N>();
    for (b, o) in inp.iter().zip(out) {
        kernel(b, o);
    }
}

pub(crate) fn f32(src: &[u8], dst: &mut [f32]) {
    let (inp, _) = src.as_chunks::<4>();
    for (b, o) in inp.iter().zip(dst) {
        *o = f32::from_le_bytes(*b);
    }
}

pub(crate) fn f16(src: &[u8], dst: &mut [f32]) {
    let (inp, _) = src.as_chunks::<2>();
    for (b, o) in inp.iter().zip(dst) {
        *o = f16_to_f32(u16::from_le_bytes(*b));
    }
}

pub(crate) fn bf16(src: &[u8], dst: &mut [f32]) {
    let (inp, _) = src.as_chunks::<2>();
    for (b, o) in inp.iter().zip(dst) {
        *o = f32::from_bits(u32::from(u16::from_le_bytes(*b)) << 16);
    }
}

/// Q4_0 (18 bytes, 32 values): f16 d, 16 bytes of nibbles (low nibbles are values 0–15, high
/// nibbles 16–31). v = d * (q - 8).
#[inline(always)]
pub(crate) fn q4_0(b: &[u8; 18], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    // Two loops with contiguous stores (one interleaved loop vectorizes worse).
    for j in 0..16 {
        o[j] = d * (i32::from(b[2 + j] & 0xf) - 8) as f32;
    }
    for j in 0..16 {
        o[j + 16] = d * (i32::from(b[2 + j] >> 4) - 8) as f32;
    }
}

/// Q4_1 (20 bytes, 32 values): f16 d, f16 m, 16 bytes of nibbles. v = d * q + m.
#[inline(always)]
pub(crate) fn q4_1(b: &[u8; 20], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    let m = nan_first(d, f16_at(b, 2));
    for j in 0..16 {
        o[j] = d * f32::from(b[4 + j] & 0xf) + m;
    }
    for j in 0..16 {
        o[j + 16] = d * f32::from(b[4 + j] >> 4) + m;
    }
}

/// Q5_0 (22 bytes, 32 values): f16 d, u32 qh (bit j is value j's fifth bit), 16 bytes of
/// nibbles. v = d * (q - 16).
#[inline(always)]
pub(crate) fn q5_0(b: &[u8; 22], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    let qh = u32_at(b, 2);
    for j in 0..16 {
        let lo = u32::from(b[6 + j] & 0xf) | (((qh >> j) & 1) << 4);
        o[j] = d * (lo as i32 - 16) as f32;
    }
    for j in 0..16 {
        let hi = u32::from(b[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        o[j + 16] = d * (hi as i32 - 16) as f32;
    }
}

/// Q5_1 (24 bytes, 32 values): f16 d, f16 m, u32 qh, 16 bytes of nibbles. v = d * q + m.
#[inline(always)]
pub(crate) fn q5_1(b: &[u8; 24], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    let m = nan_first(d, f16_at(b, 2));
    let qh = u32_at(b, 4);
    for j in 0..16 {
        let lo = u32::from(b[8 + j] & 0xf) | (((qh >> j) & 1) << 4);
        o[j] = d * lo as f32 + m;
    }
    for j in 0..16 {
        let hi = u32::from(b[8 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        o[j + 16] = d * hi as f32 + m;
    }
}

/// Q8_0 (34 bytes, 32 values): f16 d, 32 signed bytes. v = q * d.
#[inline(always)]
pub(crate) fn q8_0(b: &[u8; 34], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    for j in 0..32 {
        o[j] = f32::from(b[2 + j] as i8) * d;
    }
}

/// Q2_K's `(d * sc, dmin * m)` of one group of 16 from its scale byte (low nibble scale,
/// high nibble min); the min is 0 where `d * sc` is NaN ([`nan_first`]).
#[inline(always)]
pub(crate) fn q2_k_scale_min(sc: u8, d: f32, dmin: f32) -> (f32, f32) {
    let dl = d * f32::from(sc & 0xf);
    (dl, nan_first(dl, dmin * f32::from(sc >> 4)))
}

/// Q2_K (84 bytes, 256 values): 16 scale bytes (low nibble scale, high nibble min), 64 bytes
/// of 2-bit values, f16 d, f16 dmin. Value `h*128 + s*32 + l` is bits `2s..2s+2` of byte
/// `h*32 + l`; v = (d * sc) * q - (dmin * m) for its group of 16.
#[inline(always)]
pub(crate) fn q2_k(b: &[u8; 84], o: &mut [f32; 256]) {
    let d = f16_at(b, 80);
    let dmin = f16_at(b, 82);
    // Runs of 16 values sharing a scale: h half, s shift, 16 of the 32 bytes.
    for h in 0..2 {
        for s in 0..4 {
            for half in 0..2 {
                let (dl, ml) = q2_k_scale_min(b[h * 8 + s * 2 + half], d, dmin);
                for i in 0..16 {
                    let l = half * 16 + i;
                    let q = (b[16 + h * 32 + l] >> (2 * s)) & 3;
                    o[h * 128 + s * 32 + l] = dl * f32::from(q) - ml;
                }
            }
        }
    }
}

/// Q3_K's signed 6-bit scale of group `g` (of 16), packed in the block's 12 scale bytes `sc`.
#[inline(always)]
pub(crate) fn q3_k_scale(sc: &[u8], g: usize) -> i32 {
    let lo = (sc[g % 8] >> (4 * (g / 8))) & 0xf;
    let hi = (sc[8 + g % 4] >> (2 * (g / 4))) & 3;
    i32::from(lo | (hi << 4)) - 32
}

/// Q3_K (110 bytes, 256 values): 32 bytes hmask, 64 bytes of 2-bit low parts, 12 bytes of
/// packed 6-bit scales, f16 d. v = (d * (sc - 32)) * (ql - 4 * !hbit).
#[inline(always)]
pub(crate) fn q3_k(b: &[u8; 110], o: &mut [f32; 256]) {
    let d = f16_at(b, 108);
    let sc = &b[96..108];
    for h in 0..2 {
        for sh in 0..4 {
            for half in 0..2 {
                let dl = d * q3_k_scale(sc, h * 8 + sh * 2 + half) as f32;
                // Value e = 128h + 32sh + l: its high bit is bit e / 32 = 4h + sh of byte l.
                for i in 0..16 {
                    let l = half * 16 + i;
                    let ql = (b[32 + h * 32 + l] >> (2 * sh)) & 3;
                    let hb = (b[l] >> (4 * h + sh)) & 1;
                    let q = i32::from(ql) - (i32::from(hb ^ 1) << 2);
                    o[h * 128 + sh * 32 + l] = dl * q as f32;
                }
            }
        }
    }
}

/// The 8 (scale, min) pairs of Q4_K and Q5_K, 6 bits each, packed in 12 bytes.
#[inline(always)]
pub(crate) fn k_scale_min(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut mn = [0u8; 8];
    for j in 0..4 {
        sc[j] = s[j] & 0x3f;
        mn[j] = s[4 + j] & 0x3f;
        sc[4 + j] = (s[8 + j] & 0xf) | ((s[j] >> 2) & 0x30);
        mn[4 + j] = (s[8 + j] >> 4) | ((s[4 + j] >> 2) & 0x30);
    }
    (sc, mn)
}

/// Q4_K (144 bytes, 256 values): f16 d, f16 dmin, 12 bytes of scales and mins, 128 bytes of
/// nibbles (group `2c` is the low nibbles of bytes `32c..32c+32`, group `2c+1` the high ones).
/// v = (d * sc) * q - (dmin * m).
#[inline(always)]
pub(crate) fn q4_k(b: &[u8; 144], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let (sc, mn) = k_scale_min(&b[4..16]);
    for c in 0..4 {
        let d0 = d * f32::from(sc[2 * c]);
        let m0 = nan_first(d0, dmin * f32::from(mn[2 * c]));
        let d1 = d * f32::from(sc[2 * c + 1]);
        let m1 = nan_first(d1, dmin * f32::from(mn[2 * c + 1]));
        for l in 0..32 {
            let q = b[16 + c * 32 + l];
            o[c * 64 + l] = d0 * f32::from(q & 0xf) - m0;
            o[c * 64 + 32 + l] = d1 * f32::from(q >> 4) - m1;
        }
    }
}

/// Q5_K (176 bytes, 256 values): as Q4_K with 32 bytes of fifth bits (bit g of byte l is
/// value `32g + l`'s) before the nibbles.
#[inline(always)]
pub(crate) fn q5_k(b: &[u8; 176], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let (sc, mn) = k_scale_min(&b[4..16]);
    for c in 0..4 {
        let d0 = d * f32::from(sc[2 * c]);
        let m0 = nan_first(d0, dmin * f32::from(mn[2 * c]));
        let d1 = d * f32::from(sc[2 * c + 1]);
        let m1 = nan_first(d1, dmin * f32::from(mn[2 * c + 1]));
        for l in 0..32 {
            let q = b[48 + c * 32 + l];
            let h = b[16 + l];
            let lo = (q & 0xf) | (((h >> (2 * c)) & 1) << 4);
            let hi = (q >> 4) | (((h >> (2 * c + 1)) & 1) << 4);
            o[c * 64 + l] = d0 * f32::from(lo) - m0;
            o[c * 64 + 32 + l] = d1 * f32::from(hi) - m1;
        }
    }
}

/// Q6_K (210 bytes, 256 values): 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16
/// signed scales, f16 d. v = (d * sc) * (q - 32).
#[inline(always)]
pub(crate) fn q6_k(b: &[u8; 210], o: &mut [f32; 256]) {
    let d = f16_at(b, 208);
    let mut ds = [0f32; 16];
    for (g, slot) in ds.iter_mut().enumerate() {
        *slot = d * f32::from(b[192 + g] as i8);
    }
    // Value h*128 + 32m + l takes nibble m/2 of byte h*64 + 32(m%2) + l and bits 2m..2m+2 of
    // byte 128 + h*32 + l; its scale is group (h*128 + 32m + l) / 16.
    for h in 0..2 {
        for m in 0..4 {
            for half in 0..2 {
                let dl = ds[h * 8 + 2 * m + half];
                for i in 0..16 {
                    let l = half * 16 + i;
                    let ql = (b[h * 64 + 32 * (m % 2) + l] >> (4 * (m / 2))) & 0xf;
                    let qh = (b[128 + h * 32 + l] >> (2 * m)) & 3;
                    let q = i32::from(ql | (qh << 4)) - 32;
                    o[h * 128 + 32 * m + l] = dl * q as f32;
                }
            }
        }
    }
}

/// TQ1_0 (54 bytes, 256 values): 48 bytes of five base-3 digits each (a fixed-point fraction),
/// 4 bytes of four digits each, f16 d. v = d * (digit - 1).
#[inline(always)]
pub(crate) fn tq1_0(b: &[u8; 54], o: &mut [f32; 256]) {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let d = f16_at(b, 52);
    let digit = |byte: u8, p: usize| -> f32 {
        let v = byte.wrapping_mul(POW3[p]);
        ((u16::from(v) * 3) >> 8) as f32 - 1.0
    };
    for p in 0..5 {
        for l in 0..32 {
            o[p * 32 + l] = d * digit(b[l], p);
        }
        for l in 0..16 {
            o[160 + p * 16 + l] = d * digit(b[32 + l], p);
        }
    }
    for p in 0..4 {
        for l in 0..4 {
            o[240 + p * 4 + l] = d * digit(b[48 + l], p);
        }
    }
}

/// TQ2_0 (66 bytes, 256 values): 64 bytes of 2-bit values (laid out as Q2_K's), f16 d.
/// v = d * (q - 1).
#[inline(always)]
pub(crate) fn tq2_0(b: &[u8; 66], o: &mut [f32; 256]) {
    let d = f16_at(b, 64);
    for h in 0..2 {
        for s in 0..4 {
            for l in 0..32 {
                let q = (b[h * 32 + l] >> (2 * s)) & 3;
                o[h * 128 + s * 32 + l] = d * (i32::from(q) - 1) as f32;
            }
        }
    }
}

/// E2M1 values doubled (MXFP4 and NVFP4 both scale them by half the block scale).
pub(crate) const KVALUES_FP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// An E8M0 scale halved: 2^(e - 128), with e < 2 as f32 subnormals.
#[inline(always)]
pub(crate) fn e8m0_half(e: u8) -> f32 {
    let e = u32::from(e);
    f32::from_bits(if e < 2 { 0x0020_0000 << e } else { (e - 1) << 23 })
}

/// MXFP4 (17 bytes, 32 values): E8M0 exponent, 16 bytes of E2M1 nibbles (low nibbles are
/// values 0–15). v = d * kvalue.
#[inline(always)]
pub(crate) fn mxfp4(b: &[u8; 17], o: &mut [f32; 32]) {
    let d = e8m0_half(b[0]);
    for j in 0..16 {
        let q = b[1 + j];
        o[j] = d * f32::from(KVALUES_FP4[usize::from(q & 0xf)]);
        o[j + 16] = d * f32::from(KVALUES_FP4[usize::from(q >> 4)]);
    }
}

/// An unsigned E4M3 scale (bias 7) halved, as gguf-py decodes it: 0x00 and 0x7F are 0.
#[inline(always)]
pub(crate) fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0xf);
    let man = f32::from(x & 7);
    let raw = if exp == 0 {
        man * f32::from_bits(0x3b00_0000) // 2^-9
    } else {
        (1.0 + man / 8.0) * f32::from_bits(((exp - 7 + 127) as u32) << 23)
    };
    raw * 0.5
}

/// NVFP4 (36 bytes, 64 values): 4 UE4M3 scales, then 4 sub-blocks of 8 bytes of E2M1 nibbles
/// (low nibbles are the sub-block's values 0–7). v = d[sub-block] * kvalue.
#[inline(always)]
pub(crate) fn nvfp4(b: &[u8; 36], o: &mut [f32; 64]) {
    for s in 0..4 {
        let d = ue4m3_half(b[s]);
        for j in 0..8 {
            let q = b[4 + s * 8 + j];
            o[s * 16 + j] = d * f32::from(KVALUES_FP4[usize::from(q & 0xf)]);
            o[s * 16 + 8 + j] = d * f32::from(KVALUES_FP4[usize::from(q >> 4)]);
        }
    }
}

/// The IQ sign patterns: 7 stored bits, the eighth makes the count of minus signs even.
const KSIGNS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = i as u8 | (((i as u8).count_ones() as u8 & 1) << 7);
        i += 1;
    }
    t
};

/// A NaN scale makes its whole sub-block that NaN, quieted, sign kept: what x86 gives for
/// `nan * grid * ±1`, and what a compiler may not, since it may turn `* -1.0` into a negation
/// that flips a NaN's sign. Returns true if it filled `o`.
#[inline(always)]
fn nan_scale(db: f32, o: &mut [f32]) -> bool {
    if db.is_nan() {
        o.fill(f32::from_bits(db.to_bits() | 0x0040_0000));
        true
    } else {
        false
    }
}

#[inline(always)]
fn sign(bits: u8, j: usize) -> f32 {
    if (bits >> j) & 1 == 0 { 1.0 } else { -1.0 }
}

#[inline(always)]
fn grid_u8(row: u64, j: usize) -> f32 {
    f32::from((row >> (8 * j)) as u8)
}

/// IQ2_XXS (66 bytes, 256 values): f16 d, then 8 sub-blocks of two u32: four grid indices
/// (bytes of the first), four 7-bit sign patterns and a 4-bit scale (the second).
#[inline(always)]
pub(crate) fn iq2_xxs(b: &[u8; 66], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let aux1 = u32_at(b, 2 + 8 * ib + 4);
        let db = d * (0.5 + (aux1 >> 28) as f32) * 0.25;
        if nan_scale(db, &mut o[ib * 32..ib * 32 + 32]) {
            continue;
        }
        for l in 0..4 {
            let row = IQ2XXS_GRID[usize::from(b[2 + 8 * ib + l])];
            let signs = KSIGNS[((aux1 >> (7 * l)) & 0x7f) as usize];
            for j in 0..8 {
                o[ib * 32 + l * 8 + j] = db * grid_u8(row, j) * sign(signs, j);
            }
        }
    }
}

/// The 16 scales of IQ2_XS and IQ2_S: 4 bits each, d * (0.5 + s) * 0.25.
#[inline(always)]
fn iq2_scales(d: f32, s: &[u8]) -> [f32; 16] {
    let mut db = [0f32; 16];
    for i in 0..8 {
        db[2 * i] = d * (0.5 + f32::from(s[i] & 0xf)) * 0.25;
        db[2 * i + 1] = d * (0.5 + f32::from(s[i] >> 4)) * 0.25;
    }
    db
}

/// IQ2_XS (74 bytes, 256 values): f16 d, 32 u16 (9-bit grid index, 7-bit sign pattern), 8
/// bytes of 4-bit scales (one per 16 values).
#[inline(always)]
pub(crate) fn iq2_xs(b: &[u8; 74], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let db = iq2_scales(d, &b[66..74]);
    for i in 0..32 {
        let q = u16_at(b, 2 + 2 * i);
        let row = IQ2XS_GRID[usize::from(q & 511)];
        let signs = KSIGNS[usize::from(q >> 9)];
        if nan_scale(db[i / 2], &mut o[i * 8..i * 8 + 8]) {
            continue;
        }
        for j in 0..8 {
            o[i * 8 + j] = db[i / 2] * grid_u8(row, j) * sign(signs, j);
        }
    }
}

/// IQ2_S (82 bytes, 256 values): f16 d, 32 bytes of low grid-index bits, 32 bytes of sign
/// bits, 8 bytes of 2-bit high index parts, 8 bytes of 4-bit scales.
#[inline(always)]
pub(crate) fn iq2_s(b: &[u8; 82], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let db = iq2_scales(d, &b[74..82]);
    for g in 0..32 {
        let hi = (b[66 + g / 4] >> (2 * (g % 4))) & 3;
        let idx = usize::from(b[2 + g]) | (usize::from(hi) << 8);
        let row = IQ2S_GRID[idx];
        let signs = b[34 + g];
        if nan_scale(db[g / 2], &mut o[g * 8..g * 8 + 8]) {
            continue;
        }
        for j in 0..8 {
            o[g * 8 + j] = db[g / 2] * grid_u8(row, j) * sign(signs, j);
        }
    }
}

/// IQ3_XXS (98 bytes, 256 values): f16 d, 64 grid indices (4 values each), 8 u32 of four
/// 7-bit sign patterns and a 4-bit scale.
#[inline(always)]
pub(crate) fn iq3_xxs(b: &[u8; 98], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let aux = u32_at(b, 66 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        if nan_scale(db, &mut o[ib * 32..ib * 32 + 32]) {
            continue;
        }
        for l in 0..4 {
            let signs = KSIGNS[((aux >> (7 * l)) & 0x7f) as usize];
            for half in 0..2 {
                let row = IQ3XXS_GRID[usize::from(b[2 + ib * 8 + l * 2 + half])];
                for k in 0..4 {
                    let j = half * 4 + k;
                    o[ib * 32 + l * 8 + j] =
                        db * f32::from((row >> (8 * k)) as u8) * sign(signs, j);
                }
            }
        }
    }
}

/// IQ3_S (110 bytes, 256 values): f16 d, 64 bytes of low grid-index bits, 8 bytes of ninth
/// bits, 32 bytes of sign bits, 4 bytes of 4-bit scales; v = d * (1 + 2s) * grid * sign.
#[inline(always)]
pub(crate) fn iq3_s(b: &[u8; 110], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let s = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0xf;
        let db = d * f32::from(1 + 2 * s);
        if nan_scale(db, &mut o[ib * 32..ib * 32 + 32]) {
            continue;
        }
        for q in 0..8 {
            let g = ib * 8 + q;
            let hi = (b[66 + g / 8] >> (g % 8)) & 1;
            let row = IQ3S_GRID[usize::from(b[2 + g]) | (usize::from(hi) << 8)];
            let signs = b[74 + g / 2];
            for k in 0..4 {
                let e = g * 4 + k;
                o[e] = db * f32::from((row >> (8 * k)) as u8) * sign(signs, e % 8);
            }
        }
    }
}

#[inline(always)]
fn grid_i8(row: u64, j: usize) -> f32 {
    f32::from((row >> (8 * j)) as u8 as i8)
}

/// IQ1_S (50 bytes, 256 values): f16 d, 32 bytes of low grid-index bits, 8 u16 (four 3-bit
/// high index parts, a 3-bit scale, the delta's sign). v = d * (2s + 1) * (grid + delta).
#[inline(always)]
pub(crate) fn iq1_s(b: &[u8; 50], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for ib in 0..8 {
        let qh = u16_at(b, 34 + 2 * ib);
        let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
        let delta: f32 = if qh & 0x8000 == 0 { 0.125 } else { -0.125 };
        for l in 0..4 {
            let idx = usize::from(b[2 + ib * 4 + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
            let row = IQ1S_GRID[idx];
            for j in 0..8 {
                o[ib * 32 + l * 8 + j] = dl * (grid_i8(row, j) + delta);
            }
        }
    }
}

/// IQ1_M (56 bytes, 256 values): 32 bytes of low grid-index bits, 16 bytes of (3-bit high
/// index part, delta sign) nibbles, 4 u16 of 3-bit scales whose top nibbles form the f16 d.
#[inline(always)]
pub(crate) fn iq1_m(b: &[u8; 56], o: &mut [f32; 256]) {
    let s = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
    let d = f16_to_f32(
        ((s[0] & 0xf000) >> 12) | ((s[1] & 0xf000) >> 8) | ((s[2] & 0xf000) >> 4) | (s[3] & 0xf000),
    );
    for g in 0..32 {
        let sc = (s[g / 8] >> (3 * ((g / 2) % 4))) & 7;
        let dl = d * f32::from(2 * sc + 1);
        let qh = b[32 + g / 2] >> (4 * (g % 2));
        let idx = usize::from(b[g]) | (usize::from(qh & 7) << 8);
        let delta: f32 = if qh & 8 == 0 { 0.125 } else { -0.125 };
        let row = IQ1S_GRID[idx];
        for j in 0..8 {
            o[g * 8 + j] = dl * (grid_i8(row, j) + delta);
        }
    }
}

/// The IQ4 non-linear 4-bit values.
pub(crate) const KVALUES_IQ4NL: [i8; 16] =
    [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// IQ4_NL (18 bytes, 32 values): f16 d, 16 bytes of nibbles indexing the non-linear values.
#[inline(always)]
pub(crate) fn iq4_nl(b: &[u8; 18], o: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        o[j] = d * f32::from(KVALUES_IQ4NL[usize::from(q & 0xf)]);
        o[j + 16] = d * f32::from(KVALUES_IQ4NL[usize::from(q >> 4)]);
    }
}

/// IQ4_XS (136 bytes, 256 values): f16 d, u16 of 2-bit high scale parts, 4 bytes of 4-bit low
/// parts, 128 bytes of nibbles (16 per 32 values, as IQ4_NL). v = (d * (s - 32)) * kvalue.
#[inline(always)]
pub(crate) fn iq4_xs(b: &[u8; 136], o: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let sh = u16_at(b, 2);
    for ib in 0..8 {
        let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf;
        let hi = ((sh >> (2 * ib)) & 3) as u8;
        let dl = d * (i32::from(lo | (hi << 4)) - 32) as f32;
        for j in 0..16 {
            let q = b[8 + ib * 16 + j];
            o[ib * 32 + j] = dl * f32::from(KVALUES_IQ4NL[usize::from(q & 0xf)]);
            o[ib * 32 + 16 + j] = dl * f32::from(KVALUES_IQ4NL[usize::from(q >> 4)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_conversion_is_exact_for_every_value() {
        // Every value; under Miri every 61st (still every exponent and both signs).
        let step = if cfg!(miri) { 61 } else { 1 };
        for h in (0..=u16::MAX).step_by(step) {
            let f = f16_to_f32(h);
            let exp = (h >> 10) & 0x1f;
            let man = h & 0x3ff;
            let neg = h & 0x8000 != 0;
            if exp == 0x1f && man != 0 {
                assert!(f.is_nan());
                assert_eq!(f.to_bits() & 0x007f_ffff, u32::from(man) << 13, "{h:#x}");
                continue;
            }
            // Powers of two built from their bits (`powi` is not promised exact).
            let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
            let mag = if exp == 0x1f {
                f32::INFINITY
            } else if exp == 0 {
                f32::from(man) * pow2(-24)
            } else {
                (1.0 + f32::from(man) / 1024.0) * pow2(i32::from(exp) - 15)
            };
            assert_eq!(f.to_bits(), if neg { -mag } else { mag }.to_bits(), "{h:#x}");
        }
    }

    #[test]
    fn ksigns_have_even_parity() {
        for (i, &s) in KSIGNS.iter().enumerate() {
            assert_eq!(usize::from(s & 0x7f), i);
            assert_eq!(s.count_ones() % 2, 0);
        }
        assert_eq!(&KSIGNS[..4], &[0x00, 0x81, 0x82, 0x03]);
    }

    #[test]
    fn scale_decoders_match_the_format() {
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(128), 1.0);
        assert_eq!(e8m0_half(0).to_bits(), 0x0020_0000);
        assert_eq!(e8m0_half(255), f32::from_bits(254 << 23));
        assert_eq!(ue4m3_half(0x38), 0.5); // exp 7, man 0: 1.0, halved
        assert_eq!(ue4m3_half(0x7f), 0.0);
        assert_eq!(ue4m3_half(0x01), f32::from_bits(117 << 23)); // 2^-10
        assert_eq!(ue4m3_half(0xff), 240.0);
    }
}
