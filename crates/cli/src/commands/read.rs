//! `sipllm read FILE TENSOR [-o OUT] [--range START..END]`: a tensor's stored bytes, or a
//! byte range of them, copied through a bounded buffer to a file or a pipe (never to a
//! terminal).

use std::io::{self, Write};
use std::path::Path;

use sipllm_streaming::WeightSource;

use crate::cli::ReadArgs;
use crate::commands::range::parse_range;
use crate::commands::{
    open_or_report, refuse_input_as_output, report_open_error, usage_error, write_output,
};
use crate::render::escape;
use crate::render::value::group;
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
        let names = source.tensors().iter().map(|t| t.name.as_bytes());
        return Ok(usage_error(&format!(
            "no tensor named {} in {}{} ({} tensors; `sipllm tensors {}` lists them)",
            escape::quoted(args.tensor.as_bytes()),
            escape::str(opened.name()),
            crate::commands::did_you_mean(args.tensor.as_bytes(), names),
            group(source.tensors().len() as u64),
            escape::str(opened.name()),
        )));
    };
    if let Some(as_type) = args.as_type {
        return crate::commands::values::read(args, as_type, source, tensor, ctx);
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
        Some(path) if path != Path::new("-") => Ok(write_output(path, |out| {
            copy(source, start, range.end - range.start, out, &args.file, ctx)
        })),
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
    let bar = crate::progress::bar(ctx, len);
    let mut done = 0u64;
    while done < len {
        let n = usize::try_from(len - done).unwrap_or(CHUNK).min(CHUNK);
        let chunk = buf.get_mut(..n).unwrap_or_default();
        if let Err(e) = source.read_raw_at(start.saturating_add(done), chunk) {
            bar.finish_and_clear();
            return Ok(report_open_error(path, &e, ctx));
        }
        out.write_all(chunk)?;
        done += n as u64;
        bar.set_position(done);
    }
    bar.finish_and_clear();
    Ok(Exit::Ok)
}
