//! Bit-exactness against gguf-py 0.19.0: every supported type dequantizes at least 64 MiB of
//! random blocks to the values whose sha256 `scripts/quants_expect.py` recorded in
//! `expect.tsv` (the bytes come from the same SplitMix64 stream in both languages; see the
//! script's docstring). Miri runs the expectation table's shape check only; the scalar
//! kernels run under it in `simd`.

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use sipllm_quants::{GgmlType, SUPPORTED, block_layout, dequantize, dequantize_scalar};

const EXPECT: &str = include_str!("../expect.tsv");
const TOTAL: usize = 64 << 20;
const SMALL_BLOCKS: usize = 64;
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

struct Expected {
    blocks: usize,
    all: String,
    small: String,
}

fn expected() -> HashMap<String, Expected> {
    EXPECT
        .lines()
        .filter(|l| l.starts_with("random\t"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "{l}");
            (
                f[1].to_string(),
                Expected {
                    blocks: f[2].parse().unwrap(),
                    all: f[3].to_string(),
                    small: f[4].to_string(),
                },
            )
        })
        .collect()
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bytes `[word0 * 8, word0 * 8 + len)` of type `code`'s random stream.
fn random_bytes(code: u32, word0: usize, len: usize) -> Vec<u8> {
    let seed = 0x51B1_1A00_0000_0000u64 | u64::from(code);
    let mut out = Vec::with_capacity(len + 8);
    for i in 0..len.div_ceil(8) {
        let w = mix(seed.wrapping_add(((word0 + i + 1) as u64).wrapping_mul(GAMMA)));
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Offsets of the f16 scale fields in a block (as the script's `F16_FIELDS`).
fn f16_fields(ty: GgmlType) -> &'static [usize] {
    use GgmlType::*;
    match ty {
        Q4_1 | Q5_1 | Q4_K | Q5_K => &[0, 2],
        Q2_K => &[80, 82],
        Q3_K => &[108],
        Q6_K => &[208],
        TQ1_0 => &[52],
        TQ2_0 => &[64],
        Q4_0 | Q5_0 | Q8_0 | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ4_NL
        | IQ4_XS => &[0],
        _ => &[],
    }
}

fn make_finite(ty: GgmlType, block: &mut [u8]) {
    for &off in f16_fields(ty) {
        let h = u16::from_le_bytes([block[off], block[off + 1]]);
        if h & 0x7c00 == 0x7c00 {
            block[off + 1] &= 0xbf;
        }
    }
    if ty == GgmlType::IQ1_M {
        let s2 = u16::from_le_bytes([block[52], block[53]]);
        let s3 = u16::from_le_bytes([block[54], block[55]]);
        if s2 & 0xc000 == 0xc000 && s3 & 0x7000 == 0x7000 {
            block[55] &= 0xbf;
        }
    }
}

/// Blocks `[first, first + n)` of type `ty`'s random input, scale fields made finite.
fn random_blocks(ty: GgmlType, first: usize, n: usize) -> Vec<u8> {
    let (_, size) = block_layout(ty).unwrap();
    // Chunks start on a whole word (the callers pass multiples of 8 blocks).
    assert_eq!(first * size % 8, 0);
    let mut raw = random_bytes(ty.code(), first * size / 8, n * size);
    for block in raw.chunks_exact_mut(size) {
        make_finite(ty, block);
    }
    raw
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn every_supported_type_has_an_expectation() {
    let exp = expected();
    for ty in SUPPORTED {
        let e = exp.get(ty.name()).unwrap_or_else(|| panic!("no row for {ty} in expect.tsv"));
        let (_, size) = block_layout(ty).unwrap();
        assert_eq!(e.blocks, TOTAL.div_ceil(size), "{ty}");
        assert!(e.blocks * size >= TOTAL);
    }
    assert_eq!(exp.len(), SUPPORTED.len());
}

#[test]
#[cfg_attr(miri, ignore = "hashing 26 x 64 blocks of values takes minutes under Miri")]
fn first_blocks_match_gguf_py_on_both_paths() {
    let exp = expected();
    for ty in SUPPORTED {
        let (n, _) = block_layout(ty).unwrap();
        let src = random_blocks(ty, 0, SMALL_BLOCKS);
        let mut fast = vec![0f32; SMALL_BLOCKS * n];
        let mut slow = vec![0f32; SMALL_BLOCKS * n];
        dequantize(ty, &src, &mut fast).unwrap();
        dequantize_scalar(ty, &src, &mut slow).unwrap();
        let (fast, slow) = (le_bytes(&fast), le_bytes(&slow));
        assert!(fast == slow, "{ty}: SIMD and scalar differ");
        let got = hex(&Sha256::digest(&slow));
        assert_eq!(got, exp[ty.name()].small, "{ty}: first {SMALL_BLOCKS} blocks");
    }
}

#[test]
#[cfg_attr(miri, ignore = "hashing 26 x 64 blocks of values takes minutes under Miri")]
fn unfixed_blocks_match_gguf_py_nan_payloads_included() {
    let mut failures = Vec::new();
    for line in EXPECT.lines().filter(|l| l.starts_with("raw\t")) {
        let f: Vec<&str> = line.split('\t').collect();
        let ty = GgmlType::from_name(f[1]).unwrap();
        let blocks: usize = f[2].parse().unwrap();
        let (n, size) = block_layout(ty).unwrap();
        let src = random_bytes(ty.code() | 0x1_0000, 0, blocks * size);
        for fast in [true, false] {
            let mut out = vec![0f32; blocks * n];
            if fast {
                dequantize(ty, &src, &mut out).unwrap();
            } else {
                dequantize_scalar(ty, &src, &mut out).unwrap();
            }
            if hex(&Sha256::digest(le_bytes(&out))) != f[3] {
                failures.push(format!("{ty} (dispatched: {fast})"));
            }
        }
    }
    assert!(failures.is_empty(), "differ from gguf-py: {failures:?}");
    assert_eq!(EXPECT.lines().filter(|l| l.starts_with("raw\t")).count(), SUPPORTED.len());
}

#[test]
#[cfg_attr(miri, ignore = "64 MiB per type is hours under Miri")]
fn sixty_four_mib_per_type_match_gguf_py() {
    let exp = expected();
    let mut failures = Vec::new();
    for ty in SUPPORTED {
        let (n, _) = block_layout(ty).unwrap();
        let e = &exp[ty.name()];
        // 40 MiB of values per call: past `STREAM_MIN_OUTPUT_BYTES`, so the non-temporal
        // store path is held to gguf-py's values too.
        let per = ((40 << 20) / (4 * n)).max(1);
        const { assert!(40 << 20 >= sipllm_quants::STREAM_MIN_OUTPUT_BYTES) };
        let mut hash = Sha256::new();
        let mut out = vec![0f32; per * n];
        let mut bytes = Vec::with_capacity(per * n * 4);
        let mut done = 0;
        while done < e.blocks {
            let k = per.min(e.blocks - done);
            let src = random_blocks(ty, done, k);
            let out = &mut out[..k * n];
            dequantize(ty, &src, out).unwrap();
            bytes.clear();
            bytes.extend(out.iter().flat_map(|v| v.to_le_bytes()));
            hash.update(&bytes);
            done += k;
        }
        let got = hex(&hash.finalize());
        if got != e.all {
            failures.push(format!("{ty}: {got} != {}", e.all));
        }
    }
    assert!(failures.is_empty(), "differ from gguf-py: {failures:#?}");
}
