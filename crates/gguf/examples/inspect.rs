//! Prints a summary of a GGUF file: `cargo run --release --example inspect [FILE]`.
//!
//! With no FILE it inspects the sample bundled in the repository (`samples/tiny-llama.gguf`).
//! The `sipllm` CLI is the full tool; this example shows the library API in a few lines.

use std::process::ExitCode;

use sipllm_gguf::{MetaValue, ParseOptions};

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/tiny-llama.gguf");

fn main() -> ExitCode {
    let path = std::env::args().nth(1);
    let path = path.as_deref().unwrap_or_else(|| {
        println!("(no file given: inspecting the bundled sample)");
        SAMPLE
    });
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
    let gguf = match sipllm_gguf::parse_with(&bytes[..], &opts) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {path}: {e} [{}]\n  help: {}", e.code(), e.help());
            return ExitCode::from(1);
        }
    };
    println!(
        "{path}: GGUF v{} {}-endian, {} KVs, {} tensors, alignment {}, data at {}",
        gguf.version(),
        gguf.endian(),
        gguf.kv_len(),
        gguf.tensor_infos().len(),
        gguf.alignment(),
        gguf.data_offset()
    );
    for e in gguf.metadata() {
        let value = match e.value {
            MetaValue::Array(a) => format!("[{} x {}]", a.len(), a.elem_type()),
            MetaValue::String(s) => format!("{:?}", s.to_string_lossy()),
            v => format!("{v:?}"),
        };
        println!("  {:<45} {}", format!("{:?}", e.key.to_string_lossy()), value);
    }
    for t in gguf.tensors() {
        println!(
            "  {:<30} {:<6} {:?} @{} ({} bytes)",
            t.name.to_string_lossy().escape_debug().to_string(),
            t.info.ggml_type().name(),
            t.info.shape().as_slice(),
            t.info.abs_offset(),
            t.info.nbytes().unwrap_or(0)
        );
    }
    for w in gguf.warnings() {
        println!("  warning: {w} [{}]", w.code());
    }
    ExitCode::SUCCESS
}
