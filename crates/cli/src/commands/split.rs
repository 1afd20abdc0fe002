//! `sipllm split FILE --max-tensors N | --max-size SIZE [--out-dir DIR]
//! [--no-tensor-first-split]`: write a GGUF file as a split set, as llama.cpp's gguf-split
//! does (see `docs/split.md`).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use sipllm_gguf::ParseOptions;
use sipllm_streaming::OpenOptions;
use sipllm_streaming::split::{SplitLimit, SplitOptions, WrittenFile, split_file};

use crate::cli::{ParseArgs, SplitArgs};
use crate::commands::{report_open_error, usage_error};
use crate::render::escape;
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

/// Runs `split`.
pub fn run(args: &SplitArgs, ctx: &Ctx) -> io::Result<Exit> {
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
    let written = match split_file(&args.file, &options) {
        Ok(w) => w,
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let tensors: usize = written.iter().map(|w| w.tensors).sum();
    let rule = match limit {
        SplitLimit::Tensors(n) => format!("at most {} tensors per file", group(n)),
        SplitLimit::Size(n) => format!("at most {} bytes of tensor data per file", group(n)),
    };
    writeln!(
        out,
        "split {} into {} files ({} tensors; {rule}):",
        show(&args.file),
        written.len(),
        group(tensors as u64)
    )?;
    file_table(&mut out, &written)?;
    out.flush()?;
    Ok(Exit::Ok)
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

/// Parses `--max-size`: a number of bytes, optionally followed by a unit: `K`, `M`, `G`, `T`
/// (powers of 1000, as gguf-split's `M` and `G`; `KB`… too) or `KiB`, `MiB`, `GiB`, `TiB`
/// (powers of 1024); `B` for bytes. Units are case-insensitive; the result must be at least 1.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = s.split_at(digits);
    if number.is_empty() {
        return Err(format!("{s:?} is not a size: expected a whole number, e.g. 2G or 500MiB"));
    }
    let unit = unit.trim().to_ascii_lowercase();
    let scale: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: use K, M, G, T (powers of 1000) or KiB, MiB, GiB, TiB"
            ));
        }
    };
    let n: u64 = number.parse().map_err(|_| format!("{s:?} is too large"))?;
    match n.checked_mul(scale) {
        Some(0) => Err("the size must be at least 1 byte".to_owned()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("{s:?} is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_gguf_split_and_more() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("500mb"), Ok(500_000_000));
        assert_eq!(parse_size("3 GiB"), Ok(3 << 30));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("7b"), Ok(7));
        assert!(parse_size("0").unwrap_err().contains("at least 1 byte"));
        assert!(parse_size("1.5G").unwrap_err().contains("unknown unit"));
        assert!(parse_size("G").unwrap_err().contains("not a size"));
        assert!(parse_size("-1").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
        assert!(parse_size("99999999999999999999999").unwrap_err().contains("too large"));
    }
}
