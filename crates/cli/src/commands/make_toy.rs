//! `sipllm make-toy --seed N --out-dir DIR`: the streaming crate's seeded toy model, written
//! as `DIR/toy.gguf` and `DIR/toy.llmw` (each through a temporary file renamed into place).

use std::io::{self, Write};

use sipllm_edit::toy::write_toy;

use crate::Exit;
use crate::cli::MakeToyArgs;
use crate::commands::usage_error;
use crate::render::escape;
use crate::render::value::group;

/// Runs `make-toy`.
pub fn run(args: &MakeToyArgs) -> io::Result<Exit> {
    let files = match write_toy(args.seed, &args.out_dir) {
        Ok(files) => files,
        Err(e) => {
            return Ok(usage_error(&format!(
                "cannot write the toy model into {}: {}",
                escape::str(&args.out_dir.display().to_string()),
                escape::message(&e.to_string())
            )));
        }
    };
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut out = io::stdout().lock();
    for path in [&files.gguf, &files.llmw] {
        writeln!(
            out,
            "wrote {} ({} bytes)",
            escape::str(&path.display().to_string()),
            group(size(path))
        )?;
    }
    writeln!(out, "toy model, seed {}: the same tensors and metadata in both formats", args.seed)?;
    out.flush()?;
    Ok(Exit::Ok)
}
