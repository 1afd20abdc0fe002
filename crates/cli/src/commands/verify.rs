//! `sipllm verify FILE [--hash sha256|xxh3] [--manifest OUT | --check MANIFEST]`: read every
//! tensor back through a bounded buffer, check it is complete, hash it, and write or check a
//! per-tensor manifest.
//!
//! Tensors are read in file (offset) order, so the disk sees one sequential pass; manifest lines
//! are in directory order, one per tensor: `<lowercase hex hash>  <byte size>  <tensor name>`
//! (the format of the corpus `.tensors.sha256` files and of llama.cpp's per-tensor hashes).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::Digest as _;
use sipllm_streaming::{TensorInfo, WeightSource};

use crate::cli::{HashKind, VerifyArgs};
use crate::commands::{open_or_report, refuse_input_as_output, report_open_error, usage_error};
use crate::render::escape;
use crate::render::json::hex;
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

/// Largest tensor read whole with `read_raw`; larger ones are read in pieces of this size.
const BUFFER: usize = 8 << 20;

/// A running hash.
enum Hasher {
    Sha256(Box<sha2::Sha256>),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
}

impl Hasher {
    fn new(kind: HashKind) -> Hasher {
        match kind {
            HashKind::Sha256 => Hasher::Sha256(Box::default()),
            HashKind::Xxh3 => Hasher::Xxh3(Box::default()),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Xxh3(h) => h.update(bytes),
        }
    }

    fn hex(self) -> String {
        match self {
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Xxh3(h) => format!("{:016x}", h.digest()),
        }
    }
}

/// One manifest line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLine {
    /// Lower-case hex hash.
    pub hash: String,
    /// Byte size.
    pub size: u64,
    /// Tensor name (escaped as `sipllm` writes it).
    pub name: String,
}

/// A tensor name as a manifest line holds it: escaped by [`escape::text`], which escapes the
/// backslash, every control character (line feeds included) and every byte that is not UTF-8,
/// so each name is one line and two different names never encode alike.
pub fn manifest_name(name: &[u8]) -> String {
    escape::text(name).into_owned()
}

/// Parses a manifest: `<hex>  <size>  <name>` per line; empty lines are skipped. The name is
/// everything after the second double space, encoded by [`manifest_name`].
pub fn parse_manifest(text: &str) -> Result<Vec<ManifestLine>, String> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "line {}: expected `<hex hash>  <byte size>  <tensor name>`, found {}",
                i + 1,
                escape::quoted(line.as_bytes())
            )
        };
        let (hash, rest) = line.split_once("  ").ok_or_else(bad)?;
        let (size, name) = rest.split_once("  ").ok_or_else(bad)?;
        if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let size = size.trim().parse().map_err(|_| bad())?;
        lines.push(ManifestLine { hash: hash.to_ascii_lowercase(), size, name: name.to_owned() });
    }
    Ok(lines)
}

/// Runs `verify`.
pub fn run(args: &VerifyArgs, ctx: &Ctx) -> io::Result<Exit> {
    let expected = match &args.check {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => match parse_manifest(&text) {
                Ok(lines) => Some(lines),
                Err(e) => return Ok(usage_error(&format!("{}: {e}", show(path)))),
            },
            Err(e) => return Ok(usage_error(&format!("cannot read {}: {e}", show(path)))),
        },
        None => None,
    };
    let kind = match (args.hash, &expected) {
        (Some(k), _) => k,
        (None, Some(lines)) if lines.first().is_some_and(|l| l.hash.len() == 16) => HashKind::Xxh3,
        _ => HashKind::Sha256,
    };
    let opened = match open_or_report(&args.file, &args.parse.settings(), ctx) {
        Ok(o) => o,
        Err(exit) => return Ok(exit),
    };
    if let Some(manifest) = &args.manifest
        && let Err(exit) =
            refuse_input_as_output(&args.file, &opened, manifest, "the manifest", ctx)
    {
        return Ok(exit);
    }
    let Some(source) = opened.source() else {
        let _ = writeln!(
            io::stderr(),
            "sipllm: {}: tensor data lies outside the file; nothing can be verified",
            escape::str(opened.name())
        );
        return Ok(Exit::Invalid);
    };

    let tensors = source.tensors();
    let total: u64 = tensors.iter().filter_map(|t| t.nbytes).fold(0, u64::saturating_add);
    let bar = progress_bar(ctx, total);
    let started = Instant::now();
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&i| (tensors.get(i).map_or(0, |t| t.abs_offset), i));
    let mut hashes: Vec<Option<String>> = vec![None; tensors.len()];
    let mut buf = Vec::new();
    let mut bytes_read = 0u64;
    for i in order {
        let Some(t) = tensors.get(i) else { continue };
        match hash_tensor(source, t, kind, &mut buf) {
            Ok(h) => {
                bytes_read += t.nbytes.unwrap_or(0);
                bar.inc(t.nbytes.unwrap_or(0));
                if let Some(slot) = hashes.get_mut(i) {
                    *slot = Some(h);
                }
            }
            Err(e) => {
                bar.finish_and_clear();
                let _ = writeln!(
                    io::stderr(),
                    "sipllm: tensor {} cannot be read back:",
                    escape::quoted(t.name.as_bytes())
                );
                return Ok(report_open_error(&args.file, &e, ctx));
            }
        }
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    // The names as the file stores them where they are at hand (a single GGUF file), so a
    // leniently read name that is not UTF-8 keeps its bytes instead of a lossy U+FFFD.
    let raw: Vec<&[u8]> = match (opened.gguf(), opened.split()) {
        (Some(g), None) => g.tensors().map(|t| t.name.as_bytes()).collect(),
        _ => Vec::new(),
    };
    let lines: Vec<ManifestLine> = tensors
        .iter()
        .enumerate()
        .zip(hashes)
        .map(|((i, t), h)| ManifestLine {
            hash: h.unwrap_or_default(),
            size: t.nbytes.unwrap_or(0),
            name: manifest_name(raw.get(i).copied().unwrap_or(t.name.as_bytes())),
        })
        .collect();

    let summary_to_stderr = args.manifest.as_deref().is_some_and(|p| p == Path::new("-"));
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut exit = Exit::Ok;
    if let Some(path) = &args.manifest
        && let Err(e) = write_manifest(path, &lines, &mut out)
    {
        return Ok(usage_error(&format!("cannot write {}: {e}", show(path))));
    }
    if let Some(expected) = &expected {
        let diffs = compare(expected, &lines);
        for d in &diffs {
            writeln!(out, "MISMATCH  {d}")?;
        }
        let name = args.check.as_deref().map(show).unwrap_or_default();
        if diffs.is_empty() {
            writeln!(out, "check: all {} tensors match {name}", lines.len())?;
        } else {
            writeln!(out, "check: {} difference(s) against {name}", diffs.len())?;
            exit = Exit::Invalid;
        }
    }
    let set = opened.split().map(|s| format!(" of a set of {} files", s.shard_count()));
    let summary = format!(
        "verified {} tensors{}, {} bytes ({}) in {}: {}",
        group(lines.len() as u64),
        set.unwrap_or_default(),
        group(bytes_read),
        human_bytes(bytes_read),
        duration(elapsed),
        throughput(bytes_read, elapsed),
    );
    if summary_to_stderr {
        let _ = writeln!(io::stderr(), "{summary}");
    } else {
        writeln!(out, "{summary}")?;
    }
    out.flush()?;
    Ok(exit)
}

/// Reads all of `t` through `buf` (at most [`BUFFER`] bytes) and hashes it.
fn hash_tensor(
    source: &dyn WeightSource,
    t: &TensorInfo,
    kind: HashKind,
    buf: &mut Vec<u8>,
) -> Result<String, sipllm_streaming::StreamError> {
    let n = t.byte_size()?;
    let mut hasher = Hasher::new(kind);
    if let Some(small) = usize::try_from(n).ok().filter(|&n| n <= BUFFER) {
        // The whole tensor at once, through the seam's checked whole-tensor read.
        buf.resize(small, 0);
        let dst = buf.get_mut(..small).unwrap_or_default();
        source.read_raw(t, dst)?;
        hasher.update(dst);
    } else {
        buf.resize(BUFFER, 0);
        let mut done = 0u64;
        while done < n {
            let len = usize::try_from(n - done).unwrap_or(BUFFER).min(BUFFER);
            let dst = buf.get_mut(..len).unwrap_or_default();
            source.read_raw_at(t.abs_offset + done, dst)?;
            hasher.update(dst);
            done += len as u64;
        }
    }
    Ok(hasher.hex())
}

fn write_manifest(path: &Path, lines: &[ManifestLine], stdout: &mut dyn Write) -> io::Result<()> {
    let mut text = String::new();
    for l in lines {
        text.push_str(&format!("{}  {}  {}\n", l.hash, l.size, l.name));
    }
    if path == Path::new("-") {
        return stdout.write_all(text.as_bytes());
    }
    let mut f = BufWriter::new(File::create(path)?);
    f.write_all(text.as_bytes())?;
    f.flush()
}

/// Every difference between the expected manifest and the file's, in the file's order, then
/// the manifest's tensors the file lacks.
pub fn compare(expected: &[ManifestLine], actual: &[ManifestLine]) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut by_name: HashMap<&str, &ManifestLine> = HashMap::new();
    for e in expected {
        if by_name.insert(&e.name, e).is_some() {
            diffs.push(format!("{}: listed more than once in the manifest", e.name));
        }
    }
    let mut seen: HashMap<&str, ()> = HashMap::new();
    for a in actual {
        seen.insert(&a.name, ());
        match by_name.get(a.name.as_str()) {
            None => diffs.push(format!("{}: in the file, not in the manifest", a.name)),
            Some(e) if e.size != a.size => diffs.push(format!(
                "{}: size {} in the file, {} in the manifest",
                a.name, a.size, e.size
            )),
            Some(e) if e.hash != a.hash => diffs.push(format!(
                "{}: hash {} in the file, {} in the manifest",
                a.name, a.hash, e.hash
            )),
            Some(_) => {}
        }
    }
    for e in expected {
        if !seen.contains_key(e.name.as_str()) {
            diffs.push(format!("{}: in the manifest, not in the file", e.name));
        }
    }
    diffs
}

fn progress_bar(ctx: &Ctx, total: u64) -> ProgressBar {
    if !ctx.stderr_is_tty {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = if ctx.color_stderr {
        "{bar:40.cyan/blue} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
    } else {
        "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 { format!("{:.1} ms", s * 1e3) } else { format!("{s:.2} s") }
}

fn throughput(bytes: u64, d: Duration) -> String {
    let s = d.as_secs_f64();
    if s <= 0.0 {
        return "- /s".to_owned();
    }
    format!("{}/s", human_bytes((bytes as f64 / s) as u64))
}

fn show(path: &Path) -> String {
    escape::str(&path.display().to_string()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(hash: &str, size: u64, name: &str) -> ManifestLine {
        ManifestLine { hash: hash.into(), size, name: name.into() }
    }

    /// The manifest encoding is unambiguous: tricky names (line breaks, backslashes, double
    /// and edge spaces, escapes spelled out, bytes that are not UTF-8) encode to distinct
    /// single-line fields that parse back to themselves.
    #[test]
    fn manifest_names_encode_unambiguously_and_parse_back() {
        let names: [&[u8]; 14] = [
            b"a\nb",
            b"a\\nb",
            b"a  b",
            b"  lead",
            b"trail  ",
            b"\\",
            b"\\\\",
            b"x\x1b",
            b"x\\u{1b}",
            b"",
            b"\r",
            b"\xff",
            b"\\xff",
            "\u{2028}".as_bytes(),
        ];
        let encoded: Vec<String> = names.iter().map(|n| manifest_name(n)).collect();
        let mut distinct = encoded.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len(), "{encoded:?}");
        let text: String = encoded.iter().map(|n| format!("ab  1  {n}\n")).collect();
        let parsed = parse_manifest(&text).unwrap();
        let back: Vec<&str> = parsed.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(back, encoded);
        assert!(encoded.iter().all(|n| !n.contains(['\n', '\r'])));
    }

    #[test]
    fn manifests_parse() {
        let m = parse_manifest("ab01  64  blk.0.w\n\nCD  0  a name  with spaces\n").unwrap();
        assert_eq!(m, vec![line("ab01", 64, "blk.0.w"), line("cd", 0, "a name  with spaces")]);
        assert!(parse_manifest("zz  1  x").is_err());
        assert!(parse_manifest("ab 1 x").is_err());
        assert!(parse_manifest("ab  -1  x").is_err());
    }

    #[test]
    fn every_difference_is_listed() {
        let expected = [line("aa", 1, "a"), line("bb", 2, "b"), line("cc", 3, "c")];
        let actual =
            [line("aa", 1, "a"), line("bx", 2, "b"), line("cc", 4, "c"), line("dd", 1, "d")];
        assert_eq!(
            compare(&expected, &actual),
            [
                "b: hash bx in the file, bb in the manifest",
                "c: size 4 in the file, 3 in the manifest",
                "d: in the file, not in the manifest",
            ]
        );
        assert_eq!(compare(&actual[..1], &[]), ["a: in the manifest, not in the file"]);
        assert!(compare(&expected, &expected).is_empty());
    }
}
