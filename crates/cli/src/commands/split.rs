//! `sipllm split FILE --max-tensors N | --max-size SIZE [--out-dir DIR]
//! [--no-tensor-first-split] [--dry-run]`: write a GGUF file as a split set, as llama.cpp's
//! gguf-split does (see `docs/split.md`), or with `--dry-run` print the plan and write nothing.
//! A shard that ends over `--max-size` (a tensor larger than the limit: tensors are never
//! split) gets a note on standard error.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use sipllm_edit::split::{
    PlannedShard, SplitLimit, SplitOptions, WrittenFile, plan_split, split_file_with,
};
use sipllm_gguf::ParseOptions;
use sipllm_streaming::OpenOptions;

use crate::cli::{ParseArgs, SplitArgs};
use crate::commands::{UrlRefusal, refuse_url, report_split_error, usage_error};
use crate::render::escape;
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

/// Runs `split`.
pub fn run(args: &SplitArgs, ctx: &Ctx) -> io::Result<Exit> {
    if let Some(exit) = refuse_url(&args.file, UrlRefusal::Split, ctx) {
        return Ok(exit);
    }
    let limit = match (args.max_tensors, args.max_size) {
        (Some(n), None) => SplitLimit::Tensors(n),
        (None, Some(bytes)) => SplitLimit::Size(bytes),
        // clap's argument group makes exactly one of them required.
        _ => return Ok(usage_error("give exactly one of --max-tensors and --max-size")),
    };
    let mut options = SplitOptions::new(limit)
        .with_no_tensor_first_split(args.no_tensor_first_split)
        .with_open(open_options(&args.parse));
    options.out_dir = args.out_dir.clone();
    let rule = match limit {
        SplitLimit::Tensors(n) => format!("at most {} tensors per file", group(n)),
        SplitLimit::Size(n) => format!("at most {} bytes of tensor data per file", group(n)),
    };
    // The plan (the same checks and names as the split itself): printed for --dry-run, and
    // the source of the over-size notes.
    let plan = if args.dry_run || matches!(limit, SplitLimit::Size(_)) {
        match plan_split(&args.file, &options) {
            Ok(plan) => plan,
            Err(e) => return Ok(report_split_error(&args.file, &e, ctx)),
        }
    } else {
        Vec::new()
    };
    if args.dry_run {
        let mut out = BufWriter::new(io::stdout().lock());
        let tensors: usize = plan.iter().map(|p| p.tensors).sum();
        writeln!(
            out,
            "would split {} into {} files ({} tensors; {rule}); nothing written:",
            show(&args.file),
            plan.len(),
            group(tensors as u64)
        )?;
        plan_table(&mut out, &plan)?;
        out.flush()?;
        over_size_notes(&plan, limit);
        return Ok(Exit::Ok);
    }
    let bar = crate::progress::bar(ctx, 0);
    let written = split_file_with(&args.file, &options, &mut crate::progress::feed_total(&bar));
    bar.finish_and_clear();
    let written = match written {
        Ok(w) => w,
        Err(e) => return Ok(report_split_error(&args.file, &e, ctx)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let tensors: usize = written.iter().map(|w| w.tensors).sum();
    writeln!(
        out,
        "split {} into {} files ({} tensors; {rule}):",
        show(&args.file),
        written.len(),
        group(tensors as u64)
    )?;
    file_table(&mut out, &written)?;
    out.flush()?;
    drop(out);
    over_size_notes(&plan, limit);
    Ok(Exit::Ok)
}

/// One line per planned shard: path, tensors, tensor data as `--max-size` counts it.
fn plan_table(out: &mut dyn Write, plan: &[PlannedShard]) -> io::Result<()> {
    let width = plan.iter().map(|p| show(&p.path).chars().count()).max().unwrap_or(0);
    for p in plan {
        let name = show(&p.path);
        let pad = width - name.chars().count();
        let unit = if p.tensors == 1 { "tensor " } else { "tensors" };
        writeln!(
            out,
            "  {name}{:pad$}  {:>6} {unit}  {} bytes of tensor data ({})",
            "",
            group(p.tensors as u64),
            group(p.data_bytes),
            human_bytes(p.data_bytes)
        )?;
    }
    Ok(())
}

/// A note on standard error for each shard over a `--max-size` limit.
fn over_size_notes(plan: &[PlannedShard], limit: SplitLimit) {
    let SplitLimit::Size(max) = limit else { return };
    for p in plan.iter().filter(|p| p.over(limit)) {
        let (name, size) = p.largest.clone().unwrap_or_default();
        usage_error(&format!(
            "note: {} holds {} bytes of tensor data, more than --max-size {}: tensor {} alone is \
             {} bytes, and a tensor is never split across shards",
            show(&p.path),
            group(p.data_bytes),
            group(max),
            escape::quoted(name.as_bytes()),
            group(size)
        ));
    }
}

/// One line per written file: path, tensors, size.
pub fn file_table(out: &mut dyn Write, written: &[WrittenFile]) -> io::Result<()> {
    let names: Vec<String> = written.iter().map(|w| show(&w.path)).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let counts: Vec<String> = written.iter().map(|w| group(w.tensors as u64)).collect();
    let cwidth = counts.iter().map(String::len).max().unwrap_or(0);
    let sizes: Vec<String> = written.iter().map(|w| group(w.file_size)).collect();
    let swidth = sizes.iter().map(String::len).max().unwrap_or(0);
    for (((w, name), count), size) in written.iter().zip(&names).zip(&counts).zip(&sizes) {
        let pad = width - name.chars().count();
        let unit = if w.tensors == 1 { "tensor " } else { "tensors" };
        let human = human_bytes(w.file_size);
        writeln!(
            out,
            "  {name}{:pad$}  {count:>cwidth$} {unit}  {size:>swidth$} bytes ({human})",
            ""
        )?;
    }
    Ok(())
}

/// The open options for `--profile` and `--allow-v1`.
pub fn open_options(parse: &ParseArgs) -> OpenOptions {
    let s = parse.settings();
    OpenOptions::default().with_parse(ParseOptions::new(s.profile).with_v1(s.allow_v1))
}

/// A path for people, escaped.
pub fn show(path: &Path) -> String {
    escape::str(&path.display().to_string()).into_owned()
}
