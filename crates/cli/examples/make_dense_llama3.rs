//! Writes a dense (real-data) GGUF of the Llama-3-8B Q4_K_M layout's first tensors, for the
//! safetensors export figure of docs/benchmarks.md:
//! `cargo run --release -p sipllm-cli --example make_dense_llama3 -- OUT STORED_BYTES [f32]`.
//!
//! `make_llama3_like` writes the whole layout with its data a sparse hole, whose f32 export
//! would be 32 GB of zeros; this one takes the layout's tensors in order (the embedding, then
//! whole layers) until STORED_BYTES, with non-repeating pseudo-random bytes, as stored
//! (Q4_K/Q6_K …: the dequantizing path) or, with `f32`, the same names and shapes as F32
//! (the copy path).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use sipllm_gguf::{GgmlType, ggml::align_up, ggml::tensor_nbytes};
use sipllm_testkit::{GgufBuilder, Tensor, Value, llama3};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(out), Some(target)) = (args.first(), args.get(1).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: make_dense_llama3 OUT STORED_BYTES [f32]");
        return ExitCode::from(2);
    };
    let as_f32 = args.get(2).is_some_and(|s| s == "f32");
    let mut b = GgufBuilder::new().kv("general.architecture", Value::str("llama"));
    let mut total = 0u64;
    for (name, dims, ty) in llama3::tensors(128_256) {
        let ty = if as_f32 { GgmlType::F32 } else { ty };
        let Some(n) = tensor_nbytes(ty, &dims).ok().and_then(|n| align_up(n, 32)) else { continue };
        if total + n > target {
            break;
        }
        total += n;
        b = b.tensor_info(Tensor {
            name: name.into_bytes(),
            dims,
            type_code: ty.code(),
            offset: None,
            n_dims: None,
            data: None,
        });
    }
    let mut header = b.build_header();
    header.resize(align_up(header.len() as u64, 32).unwrap_or(0) as usize, 0);
    let write = || -> std::io::Result<()> {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(out)?);
        w.write_all(&header)?;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = total;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // F32 data: finite values (a clear exponent bit), as real weights are.
                let v = if as_f32 { x & 0xBFFF_FFFF_BFFF_FFFF } else { x };
                word.copy_from_slice(&v.to_le_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            w.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        w.into_inner()?.sync_all()
    };
    match write() {
        Ok(()) => {
            println!("{out}: {} bytes of tensor data", header.len() as u64 + total);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{out}: {e}");
            ExitCode::from(1)
        }
    }
}
