//! Single-thread dequantization throughput (GB/s of f32 output) of sipllm-quants (dispatched
//! and scalar kernels, and over 2 threads) and candle-core, on the same random blocks.
//!
//!     cargo run --release -- [INPUT_MB=250] [TYPE...]

use std::time::Instant;

use candle_core::quantized::k_quants::{self as ck, GgmlType as _};
use sipllm_quants::GgmlType;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random blocks with every f16 field made finite (the scales of every quantized type sit
/// at one of these offsets; clearing the top exponent bit of a non-scale pair is harmless).
fn input(ty: GgmlType, bytes: usize) -> Vec<u8> {
    let (_, size) = sipllm_quants::block_layout(ty).unwrap();
    let n = bytes / size;
    let mut v: Vec<u8> = (0..(n * size).div_ceil(8) as u64)
        .flat_map(|i| mix(0x1234 + i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes())
        .collect();
    v.truncate(n * size);
    if !matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        for b in v.chunks_exact_mut(size) {
            for off in [0, 2, size - 2, size - 4] {
                if b[off + 1] & 0x7c == 0x7c {
                    b[off + 1] &= 0xbf;
                }
            }
        }
    }
    v
}

fn best<F: FnMut()>(mut f: F) -> f64 {
    f();
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Reinterprets bytes as candle blocks (the bench's one `unsafe`).
fn as_blocks<T>(bytes: &[u8]) -> &[T] {
    assert_eq!(bytes.as_ptr() as usize % std::mem::align_of::<T>(), 0);
    assert_eq!(bytes.len() % std::mem::size_of::<T>(), 0);
    // SAFETY: candle's blocks are `repr(C)` plain data (u8/i8/f16 fields, any bit pattern
    // valid); the pointer is aligned and the length a whole number of blocks (checked above).
    unsafe {
        std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len() / std::mem::size_of::<T>())
    }
}

fn candle(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Option<()> {
    match ty {
        GgmlType::Q4_0 => ck::BlockQ4_0::to_float(as_blocks(src), dst),
        GgmlType::Q4_1 => ck::BlockQ4_1::to_float(as_blocks(src), dst),
        GgmlType::Q5_0 => ck::BlockQ5_0::to_float(as_blocks(src), dst),
        GgmlType::Q5_1 => ck::BlockQ5_1::to_float(as_blocks(src), dst),
        GgmlType::Q8_0 => ck::BlockQ8_0::to_float(as_blocks(src), dst),
        GgmlType::Q2_K => ck::BlockQ2K::to_float(as_blocks(src), dst),
        GgmlType::Q3_K => ck::BlockQ3K::to_float(as_blocks(src), dst),
        GgmlType::Q4_K => ck::BlockQ4K::to_float(as_blocks(src), dst),
        GgmlType::Q5_K => ck::BlockQ5K::to_float(as_blocks(src), dst),
        GgmlType::Q6_K => ck::BlockQ6K::to_float(as_blocks(src), dst),
        GgmlType::F16 => half::f16::to_float(as_blocks(src), dst),
        GgmlType::BF16 => half::bf16::to_float(as_blocks(src), dst),
        _ => return None,
    }
    Some(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().map_or(250, |a| a.parse().expect("INPUT_MB"));
    let names: Vec<String> = args.collect();
    let types: Vec<GgmlType> = if names.is_empty() {
        sipllm_quants::SUPPORTED.to_vec()
    } else {
        names.iter().map(|n| GgmlType::from_name(n).expect("type name")).collect()
    };
    println!("input {mb} MB per type; GB/s of f32 output, best of 3, one thread unless noted");
    println!("{:<8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8}", "type", "ours", "scalar", "ours x2", "candle", "/candle", "x2/x1");
    for ty in types {
        let src = input(ty, mb * 1_000_000);
        let n = sipllm_quants::element_count(ty, src.len()).unwrap();
        let mut dst = vec![0f32; n];
        let gb = (n * 4) as f64 / 1e9;
        let ours = gb / best(|| sipllm_quants::dequantize(ty, &src, &mut dst).unwrap());
        let reference = dst.clone();
        let scalar = gb / best(|| sipllm_quants::dequantize_scalar(ty, &src, &mut dst).unwrap());
        assert!(dst.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()));
        let par = gb / best(|| sipllm_quants::dequantize_parallel(ty, &src, &mut dst, 2).unwrap());
        let theirs = candle(ty, &src, &mut dst).map(|()| gb / best(|| candle(ty, &src, &mut dst).unwrap()));
        let (c, ratio) = match theirs {
            Some(c) => (format!("{c:.2}"), format!("{:.1}x", ours / c)),
            None => ("-".into(), "-".into()),
        };
        println!("{:<8} {ours:>8.2} {scalar:>8.2} {par:>9.2} {c:>8} {ratio:>8} {:>7.2}x", ty.name(), par / ours);
    }
}
