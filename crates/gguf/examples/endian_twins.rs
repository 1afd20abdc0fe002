//! Writes a GGUF file's little- and big-endian twins with the writer:
//! `cargo run --release -p sipllm-gguf --example endian_twins -- IN.gguf OUT_PREFIX`
//! writes `OUT_PREFIX.le.gguf` and `OUT_PREFIX.be.gguf`.
//!
//! `scripts/gguf_py_twins.py OUT_PREFIX` then checks that the reference reader (gguf-py)
//! reads both identically: the cross-check of the writer's big-endian output.

use sipllm_gguf::{Endian, GgmlType, writer::GgufWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(prefix)) = (args.next(), args.next()) else {
        return Err("usage: endian_twins IN.gguf OUT_PREFIX".into());
    };
    let bytes = std::fs::read(&input)?;
    let gguf = sipllm_gguf::parse(&bytes)?;
    for (endian, suffix) in [(Endian::Little, "le"), (Endian::Big, "be")] {
        let writer = GgufWriter::from_gguf(&gguf).endian(endian);
        let out = writer.to_bytes(|i| {
            let t = &gguf.tensor_infos()[i];
            let start = t.abs_offset() as usize;
            let data = &bytes[start..start + t.nbytes().unwrap_or(0) as usize];
            // Tensor data is in the file's byte order too: swap float elements when the byte
            // order changes (quantized blocks are left as they are in this example).
            let width = match t.ggml_type() {
                GgmlType::F32 => 4,
                GgmlType::F16 | GgmlType::BF16 => 2,
                _ => 1,
            };
            if endian != gguf.endian() && width > 1 {
                data.chunks(width).flat_map(|c| c.iter().rev().copied()).collect()
            } else {
                data.to_vec()
            }
        })?;
        std::fs::write(format!("{prefix}.{suffix}.gguf"), out)?;
    }
    Ok(())
}
