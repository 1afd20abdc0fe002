//! `sipllm read FILE TENSOR [-o OUT] [--range START..END]`: a tensor's stored bytes, or a
//! byte range of them, copied through a bounded buffer to a file or a pipe (never to a
//! terminal).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::Path;

use sipllm_streaming::WeightSource;

use crate::cli::ReadArgs;
use crate::commands::{open_or_report, refuse_input_as_output, report_open_error, usage_error};
use crate::render::escape;
use crate::{Ctx, Exit};

/// Bytes copied per read.
const CHUNK: usize = 4 << 20;

/// Runs `read`.
pub fn run(args: &ReadArgs, ctx: &Ctx) -> io::Result<Exit> {
    let to_stdout = args.output.as_deref().is_none_or(|p| p == Path::new("-"));
    if to_stdout && ctx.stdout_is_tty {
        return Ok(usage_error(
            "refusing to write binary tensor data to a terminal; use `-o FILE` or redirect \
             standard output (`> FILE`, `| xxd`)",
        ));
    }
    let opened = match open_or_report(&args.file, &args.parse.settings(), ctx) {
        Ok(o) => o,
        Err(exit) => return Ok(exit),
    };
    if let Some(out) = &args.output
        && let Err(exit) = refuse_input_as_output(&args.file, &opened, out, "the output", ctx)
    {
        return Ok(exit);
    }
    let Some(source) = opened.source() else {
        return Ok(usage_error("the file's tensor data cannot be read"));
    };
    let Some(tensor) = source.find(&args.tensor) else {
        return Ok(usage_error(&format!(
            "no tensor named {} in {} ({} tensors; `sipllm tensors {}` lists them)",
            escape::quoted(args.tensor.as_bytes()),
            escape::str(opened.name()),
            source.tensors().len(),
            escape::str(opened.name()),
        )));
    };
    if let Some(as_type) = args.as_type {
        return crate::commands::values::read(args, as_type, &opened, source, tensor, ctx);
    }
    let nbytes = match tensor.byte_size() {
        Ok(n) => n,
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let range = match args.range.as_deref().map(|r| parse_range(r, nbytes)).transpose() {
        Ok(r) => r.unwrap_or(0..nbytes),
        Err(msg) => return Ok(usage_error(&msg)),
    };
    let start = tensor.abs_offset.saturating_add(range.start);
    // One request for the range from a URL (at most 64 MiB each), however it is copied.
    opened.prefetch_range(start, range.end - range.start);
    match &args.output {
        Some(path) if path != Path::new("-") => {
            let file = match File::create(path) {
                Ok(f) => f,
                Err(e) => {
                    return Ok(usage_error(&format!(
                        "cannot create {}: {e}",
                        escape::str(&path.display().to_string())
                    )));
                }
            };
            let mut out = BufWriter::new(file);
            match copy(source, start, range.end - range.start, &mut out, &args.file, ctx) {
                Ok(exit) => {
                    if let Err(e) = out.flush() {
                        return Ok(usage_error(&format!("cannot write the output: {e}")));
                    }
                    Ok(exit)
                }
                Err(e) => Ok(usage_error(&format!("cannot write the output: {e}"))),
            }
        }
        _ => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let exit = copy(source, start, range.end - range.start, &mut out, &args.file, ctx)?;
            out.flush()?;
            Ok(exit)
        }
    }
}

/// Copies `len` bytes at `start` to `out` in chunks. A read error is reported (exit code 1
/// or 2); a write error is returned.
fn copy(
    source: &dyn WeightSource,
    start: u64,
    len: u64,
    out: &mut dyn Write,
    path: &Path,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(CHUNK).min(CHUNK)];
    let mut done = 0u64;
    while done < len {
        let n = usize::try_from(len - done).unwrap_or(CHUNK).min(CHUNK);
        let chunk = buf.get_mut(..n).unwrap_or_default();
        if let Err(e) = source.read_raw_at(start + done, chunk) {
            return Ok(report_open_error(path, &e, ctx));
        }
        out.write_all(chunk)?;
        done += n as u64;
    }
    Ok(Exit::Ok)
}

/// Parses `START..END` (either side optional; decimal or `0x` hex; END exclusive) against a
/// tensor of `nbytes` bytes.
pub fn parse_range(text: &str, nbytes: u64) -> Result<Range<u64>, String> {
    let bad = || {
        format!(
            "invalid --range {}: expected START..END (byte offsets within the tensor, END \
             exclusive, e.g. 0..1024, 4096.., ..0x100)",
            escape::quoted(text.as_bytes())
        )
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let num = |s: &str, default: u64| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(default);
        }
        let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        parsed.map_err(|_| bad())
    };
    let start = num(a, 0)?;
    let end = num(b, nbytes)?;
    if start > end || end > nbytes {
        return Err(format!(
            "--range {start}..{end} is not inside the tensor's {nbytes} bytes (0..{nbytes})"
        ));
    }
    Ok(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0..10", 100), Ok(0..10));
        assert_eq!(parse_range("..", 100), Ok(0..100));
        assert_eq!(parse_range("90..", 100), Ok(90..100));
        assert_eq!(parse_range("..0x10", 100), Ok(0..16));
        assert_eq!(parse_range("5..5", 100), Ok(5..5));
        assert!(parse_range("5..4", 100).is_err());
        assert!(parse_range("0..101", 100).is_err());
        assert!(parse_range("10", 100).is_err());
        assert!(parse_range("a..b", 100).is_err());
        assert!(parse_range("-1..3", 100).is_err());
    }
}
