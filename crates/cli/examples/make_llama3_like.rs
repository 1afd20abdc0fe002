//! Writes the Llama-3-8B-shaped GGUF used to time `sipllm` (docs/benchmarks.md):
//! `cargo run --release -p sipllm-cli --example make_llama3_like -- OUT [VOCAB_DIV]`.
//!
//! The header is `sipllm_testkit::llama3` (the same content as gguf-py's writer makes
//! of the Llama-3-8B Q4_K_M layout: 128,256 tokens, 280,147 merges, 291 Q4_K_M tensor
//! infos); the tensor data is a sparse hole (`set_len`), ~4.9 GB apparent, a few MB on disk.

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;

use sipllm_gguf::{GgmlType, ggml::align_up, ggml::tensor_nbytes};
use sipllm_testkit::llama3;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: make_llama3_like OUT [VOCAB_DIV]");
        return ExitCode::from(2);
    };
    let div = args.next().and_then(|d| d.parse().ok()).unwrap_or(1usize);
    let builder = llama3::builder(div);
    let mut bytes = builder.build_header();
    let align = u64::from(builder.alignment());
    let data_offset = align_up(bytes.len() as u64, align).unwrap_or(bytes.len() as u64);
    bytes.resize(data_offset as usize, 0);
    // The data section ends at the last tensor's padded end.
    let data_len = builder
        .tensors()
        .iter()
        .zip(builder.offsets())
        .map(|(t, off)| {
            let n = tensor_nbytes(GgmlType::from_code(t.type_code), &t.dims).unwrap_or(0);
            align_up(off + n, align).unwrap_or(off + n)
        })
        .max()
        .unwrap_or(0);
    let result = File::create(&out).and_then(|mut f| {
        f.write_all(&bytes)?;
        f.set_len(data_offset + data_len)
    });
    match result {
        Ok(()) => {
            println!(
                "{out}: header {} bytes, {} tensors, file {} bytes (sparse)",
                bytes.len(),
                builder.tensors().len(),
                data_offset + data_len
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{out}: {e}");
            ExitCode::from(1)
        }
    }
}
