//! `sipllm verify FILE [--hash KIND,...] [--manifest OUT [--manifest-format F] | --check
//! MANIFEST]`: read every tensor back through a bounded buffer, check it is complete, hash it
//! and the whole model, and write or check a manifest — sipllm's or llama.cpp's
//! `llama-gguf-hash`'s.
//!
//! Tensors are read in directory order, which is file order in every file a converter writes
//! (so the disk sees one sequential pass), because the whole-model hash is, as llama-gguf-hash
//! computes it, the hash of every tensor's bytes concatenated in directory order (padding
//! excluded). The formats (docs/cli.md, from llama.cpp's `examples/gguf-hash/gguf-hash.cpp`):
//!
//! * sipllm: one line per tensor, `<lowercase hex hash>  <byte size>  <tensor name>` (the
//!   corpus `.tensors.sha256` files), one hash function;
//! * gguf-hash: `printf("%-8s  %s  %s\n", hash, hex, FILE ":" TENSOR)` per tensor and hash
//!   function (xxh64, xxh3, sha1, sha256, in that order), then `printf("%-8s  %s  %s\n", hash,
//!   hex, FILE)` per hash function for the whole model (uuid last: a UUIDv5 in llama.cpp's
//!   namespace, `ef001206-dadc-5f6d-a15f-3359e577d4e5`, over all tensor data).

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sha1::Digest as _;
use sipllm_streaming::{StreamError, WeightSource};

use crate::cli::{HashKind, ManifestFormat, VerifyArgs};
use crate::commands::{
    open_or_report, refuse_input_as_output, report_open_error, usage_error, write_output,
};
use crate::render::escape;
use crate::render::json::hex;
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

/// Largest tensor read whole with `read_raw`; larger ones are read in pieces of this size
/// (`WeightSource::read_chunked`).
const BUFFER: usize = 8 << 20;

/// llama.cpp's UUIDv5 namespace (`uuid.uuid5(uuid.NAMESPACE_URL,
/// 'en.wikipedia.org/wiki/Llama.cpp')`), hashed before the tensor data.
pub const UUID_NAMESPACE: [u8; 16] = [
    0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d, 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5,
];

/// A running hash.
enum Hasher {
    /// SHA-256.
    Sha256(Box<sha2::Sha256>),
    /// SHA-1.
    Sha1(Box<sha1::Sha1>),
    /// XXH64, seed 0.
    Xxh64(Box<xxhash_rust::xxh64::Xxh64>),
    /// XXH3-64.
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    /// SHA-1 over the UUID namespace and the data, for a UUIDv5.
    Uuid(Box<sha1::Sha1>),
}

impl Hasher {
    /// A fresh hash of `kind`.
    fn new(kind: HashKind) -> Hasher {
        match kind {
            HashKind::Sha256 => Hasher::Sha256(Box::default()),
            HashKind::Sha1 => Hasher::Sha1(Box::default()),
            HashKind::Xxh64 => Hasher::Xxh64(Box::new(xxhash_rust::xxh64::Xxh64::new(0))),
            HashKind::Xxh3 => Hasher::Xxh3(Box::default()),
            HashKind::Uuid => {
                let mut h = sha1::Sha1::default();
                h.update(UUID_NAMESPACE);
                Hasher::Uuid(Box::new(h))
            }
        }
    }

    /// Feeds `bytes`.
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha1(h) | Hasher::Uuid(h) => h.update(bytes),
            Hasher::Xxh64(h) => h.update(bytes),
            Hasher::Xxh3(h) => h.update(bytes),
        }
    }

    /// The result as llama-gguf-hash prints it: lowercase hex (a 64-bit hash big-endian, as
    /// `%016x` of the value), or the UUID as `8-4-4-4-12` hex groups.
    fn hex(self) -> String {
        match self {
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Sha1(h) => hex(&h.finalize()),
            Hasher::Xxh64(h) => format!("{:016x}", h.digest()),
            Hasher::Xxh3(h) => format!("{:016x}", h.digest()),
            Hasher::Uuid(h) => uuid_v5(&h.finalize()),
        }
    }
}

/// A UUIDv5 from a SHA-1 digest (RFC 9562 §5.5: the first 16 bytes, version 5, variant 10).
fn uuid_v5(sha1: &[u8]) -> String {
    let mut u = [0u8; 16];
    for (d, s) in u.iter_mut().zip(sha1) {
        *d = *s;
    }
    u[6] = (u[6] & 0x0f) | 0x50;
    u[8] = (u[8] & 0x3f) | 0x80;
    let h = hex(&u);
    let part = |r: std::ops::Range<usize>| h.get(r).unwrap_or_default().to_owned();
    format!("{}-{}-{}-{}-{}", part(0..8), part(8..12), part(12..16), part(16..20), part(20..32))
}

/// One line of a sipllm manifest (or a tensor line of a gguf-hash one, which has no size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLine {
    /// Lower-case hex hash.
    pub hash: String,
    /// Byte size (`None`: not in the manifest, not compared).
    pub size: Option<u64>,
    /// Tensor name (escaped as `sipllm` writes it).
    pub name: String,
}

/// One line of a llama-gguf-hash manifest: `<hash name>  <hex>  <name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashLine {
    /// The hash function.
    pub kind: HashKind,
    /// Lower-case hex (a UUID for `uuid`).
    pub hash: String,
    /// `FILE:TENSOR`, or `FILE` for the whole model.
    pub name: String,
}

/// A manifest read by `--check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// sipllm's.
    Sipllm(Vec<ManifestLine>),
    /// llama-gguf-hash's.
    GgufHash(Vec<HashLine>),
}

/// A tensor name as a manifest line holds it: escaped by [`escape::text`], which escapes the
/// backslash, every control character (line feeds included) and every byte that is not UTF-8,
/// so each name is one line and two different names never encode alike.
pub fn manifest_name(name: &[u8]) -> String {
    escape::text(name).into_owned()
}

fn hash_kind(name: &str) -> Option<HashKind> {
    [HashKind::Xxh64, HashKind::Xxh3, HashKind::Sha1, HashKind::Sha256, HashKind::Uuid]
        .into_iter()
        .find(|k| k.name() == name)
}

/// Reads either manifest format: llama-gguf-hash's when a line starts with a hash name
/// (`xxh64`, `sha256`, …; a sipllm line starts with hex digits, which no hash name is).
pub fn parse_any_manifest(text: &str) -> Result<Manifest, String> {
    if text.lines().any(|l| l.split_whitespace().next().and_then(hash_kind).is_some()) {
        parse_gguf_hash_manifest(text).map(Manifest::GgufHash)
    } else {
        parse_manifest(text).map(Manifest::Sipllm)
    }
}

/// Parses a llama-gguf-hash manifest: `<hash name> <hex> <name>` per line, separated by
/// whitespace as llama-gguf-hash reads them (`istream >>`); empty lines are skipped. Its check
/// output (a `manifest  …` first line, `  -  Ok` suffixes, the verdict line) reads too: words
/// after the name are ignored, and lines that do not start with a hash name are skipped.
pub fn parse_gguf_hash_manifest(text: &str) -> Result<Vec<HashLine>, String> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(kind) = words.next().and_then(hash_kind) else { continue };
        let (Some(hash), Some(name)) = (words.next(), words.next()) else {
            return Err(format!(
                "line {}: expected `<hash name>  <hex>  <name>`, found {}",
                i + 1,
                escape::quoted(line.as_bytes())
            ));
        };
        let hex_ok =
            hash.bytes().all(|b| b.is_ascii_hexdigit() || (kind == HashKind::Uuid && b == b'-'));
        if hash.is_empty() || !hex_ok {
            return Err(format!(
                "line {}: {} is not a hex hash",
                i + 1,
                escape::quoted(hash.as_bytes())
            ));
        }
        lines.push(HashLine { kind, hash: hash.to_ascii_lowercase(), name: name.to_owned() });
    }
    if lines.is_empty() {
        return Err("no hash lines (`xxh64  <hex>  <name>` …)".to_owned());
    }
    Ok(lines)
}

/// Parses a sipllm manifest: `<hex>  <size>  <name>` per line; empty lines are skipped. The
/// name is everything after the second double space, encoded by [`manifest_name`].
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
        lines.push(ManifestLine {
            hash: hash.to_ascii_lowercase(),
            size: Some(size),
            name: name.to_owned(),
        });
    }
    Ok(lines)
}

/// The hash functions to compute: `--hash` as given (each once, in llama-gguf-hash's order), or
/// what the manifest to check holds, or sha256.
fn choose_kinds(asked: &[HashKind], check: Option<&Manifest>) -> Vec<HashKind> {
    let mut kinds: Vec<HashKind> = asked.to_vec();
    if kinds.is_empty() {
        kinds.push(match check {
            // 16 digits: xxh3 (an xxh64 manifest needs --hash xxh64).
            Some(Manifest::Sipllm(lines)) => match lines.first().map(|l| l.hash.len()) {
                Some(16) => HashKind::Xxh3,
                Some(40) => HashKind::Sha1,
                _ => HashKind::Sha256,
            },
            // The strongest the manifest has, as llama-gguf-hash chooses.
            Some(Manifest::GgufHash(lines)) => {
                let has = |k| lines.iter().any(|l| l.kind == k);
                [HashKind::Sha256, HashKind::Sha1, HashKind::Xxh64, HashKind::Xxh3, HashKind::Uuid]
                    .into_iter()
                    .find(|&k| has(k))
                    .unwrap_or(HashKind::Sha256)
            }
            None => HashKind::Sha256,
        });
    }
    kinds.sort();
    kinds.dedup();
    kinds
}

/// What hashing the model gave.
struct Hashes {
    /// Per tensor (directory order), per per-tensor kind (in `kinds` order, uuid left out).
    tensors: Vec<Vec<String>>,
    /// Per kind, the whole model's.
    model: Vec<(HashKind, String)>,
    bytes_read: u64,
}

/// The most bytes `--check` reads of a manifest: a line per tensor and hash kind, so the
/// 2^20 tensors a header within the parser's default limits holds at 256 bytes a line.
const MANIFEST_MAX_BYTES: u64 = 256 << 20;

/// The text of the manifest at `path`: a regular file of at most [`MANIFEST_MAX_BYTES`],
/// opened without blocking (a FIFO or `/dev/zero` is refused at once, not read forever), in
/// UTF-8; otherwise the message saying why not.
fn read_manifest(path: &Path) -> Result<String, String> {
    let bytes = sipllm_edit::read_file_capped(path, MANIFEST_MAX_BYTES).map_err(|e| {
        let why = match &e {
            sipllm_edit::InputError::TooLarge { max, .. } => {
                format!(
                    "it holds more than {max} bytes, more than any manifest (reading stopped there)"
                )
            }
            sipllm_edit::InputError::Read(StreamError::NotAFile { kind, .. }) => {
                format!("it is {kind}, not a regular file: a manifest is a file")
            }
            sipllm_edit::InputError::Read(
                StreamError::Open { source, .. } | StreamError::Io { source, .. },
            ) => source.to_string(),
            other => other.to_string(),
        };
        format!("cannot read the manifest {}: {why} ({})", show(path), e.code())
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format!("{}: not UTF-8 text (byte {})", show(path), e.utf8_error().valid_up_to())
    })
}

/// Runs `verify`.
pub fn run(args: &VerifyArgs, ctx: &Ctx) -> io::Result<Exit> {
    let expected = match &args.check {
        Some(path) => match read_manifest(path) {
            Ok(text) => match parse_any_manifest(&text) {
                Ok(m) => Some(m),
                Err(e) => return Ok(usage_error(&format!("{}: {e}", show(path)))),
            },
            Err(msg) => return Ok(usage_error(&msg)),
        },
        None => None,
    };
    let kinds = choose_kinds(&args.hash, expected.as_ref());
    let per_tensor: Vec<HashKind> =
        kinds.iter().copied().filter(|&k| k != HashKind::Uuid).collect();
    let sipllm_format = matches!(expected, Some(Manifest::Sipllm(_)))
        || (args.manifest.is_some() && args.manifest_format == ManifestFormat::Sipllm);
    if sipllm_format && (kinds.len() != 1 || per_tensor.len() != 1) {
        return Ok(usage_error(
            "a sipllm manifest holds one per-tensor hash (xxh64, xxh3, sha1 or sha256); for \
             several, or uuid, use --manifest-format gguf-hash",
        ));
    }
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

    let started = Instant::now();
    let hashes = match hash_model(source, &kinds, &per_tensor, ctx) {
        Ok(h) => h,
        Err(failed) => {
            let (t, e) = *failed;
            let _ = writeln!(
                io::stderr(),
                "sipllm: tensor {} cannot be read back:",
                escape::quoted(t.as_bytes())
            );
            return Ok(report_open_error(&args.file, &e, ctx));
        }
    };
    let elapsed = started.elapsed();
    let tensors = source.tensors();
    // The names as the file stores them where they are at hand (a single GGUF file), so a
    // leniently read name that is not UTF-8 keeps its bytes instead of a lossy U+FFFD.
    let raw: Vec<&[u8]> = match (opened.gguf(), opened.split()) {
        (Some(g), None) => g.tensors().map(|t| t.name.as_bytes()).collect(),
        _ => Vec::new(),
    };
    let names: Vec<String> = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| manifest_name(raw.get(i).copied().unwrap_or(t.name.as_bytes())))
        .collect();
    let lines_of = |k: usize| -> Vec<ManifestLine> {
        tensors
            .iter()
            .zip(&names)
            .zip(&hashes.tensors)
            .map(|((t, name), h)| ManifestLine {
                hash: h.get(k).cloned().unwrap_or_default(),
                size: Some(t.nbytes.unwrap_or(0)),
                name: name.clone(),
            })
            .collect()
    };
    // The model's name in gguf-hash lines: FILE as given (a URL with credentials redacted).
    let file_name = opened.name().to_owned();
    let model_lines: Vec<String> = hashes
        .model
        .iter()
        .map(|(k, h)| format!("{:<8}  {h}  {}", k.name(), escape::str(&file_name)))
        .collect();

    let manifest_to_stdout = args.manifest.as_deref().is_some_and(|p| p == Path::new("-"));
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut exit = Exit::Ok;
    if let Some(path) = &args.manifest {
        let text = match args.manifest_format {
            ManifestFormat::Sipllm => sipllm_text(&lines_of(0)),
            ManifestFormat::GgufHash => {
                gguf_hash_text(&per_tensor, &names, &hashes, &file_name, &model_lines)
            }
        };
        if path == Path::new("-") {
            out.write_all(text.as_bytes())?;
        } else {
            let exit = write_output(path, |f| f.write_all(text.as_bytes()).map(|()| Exit::Ok));
            if exit != Exit::Ok {
                return Ok(exit);
            }
        }
    }
    let check_name = args.check.as_deref().map(show).unwrap_or_default();
    // Differences found by --check: the run then ends with them, not with "verified".
    let mut differences = 0usize;
    match &expected {
        Some(Manifest::Sipllm(lines)) => {
            let diffs = compare(lines, &lines_of(0));
            report(&mut out, &diffs, &format!("all {} tensors match {check_name}", tensors.len()))?;
            differences = diffs.len();
        }
        Some(Manifest::GgufHash(lines)) => {
            let ours: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
            let mut total = 0;
            for &kind in &kinds {
                let k = per_tensor.iter().position(|&p| p == kind);
                let model = hashes.model.iter().find(|(m, _)| *m == kind).map(|m| m.1.as_str());
                let diffs = check_gguf_hash(lines, kind, &ours, k.map(lines_of).as_deref(), model);
                for d in &diffs.lines {
                    writeln!(out, "MISMATCH  {d}")?;
                }
                total += diffs.lines.len();
                writeln!(out, "check: {}: {}", kind.name(), diffs.verdict)?;
            }
            differences = total;
        }
        None => {}
    }
    let set = opened.split().map(|s| format!(" of a set of {} files", s.shard_count()));
    let summary = format!(
        "{} {} tensors{}, {} bytes ({}) in {}: {}",
        if differences == 0 { "verified" } else { "read" },
        group(tensors.len() as u64),
        set.unwrap_or_default(),
        group(hashes.bytes_read),
        human_bytes(hashes.bytes_read),
        duration(elapsed),
        throughput(hashes.bytes_read, elapsed),
    );
    if manifest_to_stdout {
        // Standard output is the manifest alone.
        let mut err = io::stderr();
        if args.manifest_format == ManifestFormat::Sipllm {
            for l in &model_lines {
                let _ = writeln!(err, "{l}");
            }
        }
        let _ = writeln!(err, "{summary}");
    } else {
        for l in &model_lines {
            writeln!(out, "{l}")?;
        }
        writeln!(out, "{summary}")?;
    }
    if differences > 0 {
        exit = Exit::Invalid;
        let s = if differences == 1 { "" } else { "s" };
        writeln!(
            out,
            "FAILED: {} difference{s} against {check_name} (the MISMATCH lines above)",
            group(differences as u64)
        )?;
    }
    out.flush()?;
    Ok(exit)
}

fn report(out: &mut dyn Write, diffs: &[String], ok: &str) -> io::Result<()> {
    for d in diffs {
        writeln!(out, "MISMATCH  {d}")?;
    }
    if diffs.is_empty() {
        writeln!(out, "check: {ok}")?;
    }
    Ok(())
}

/// Reads every tensor in directory order, feeding its per-tensor hashes and the model's.
fn hash_model(
    source: &dyn WeightSource,
    kinds: &[HashKind],
    per_tensor: &[HashKind],
    ctx: &Ctx,
) -> Result<Hashes, Box<(String, sipllm_streaming::StreamError)>> {
    let tensors = source.tensors();
    let total: u64 = tensors.iter().filter_map(|t| t.nbytes).fold(0, u64::saturating_add);
    let bar = crate::progress::bar(ctx, total);
    let mut model: Vec<Hasher> = kinds.iter().map(|&k| Hasher::new(k)).collect();
    let mut out = Vec::with_capacity(tensors.len());
    let mut buf = vec![0u8; BUFFER];
    let mut bytes_read = 0u64;
    for t in tensors {
        let mut own: Vec<Hasher> = per_tensor.iter().map(|&k| Hasher::new(k)).collect();
        let fed = source.read_chunked(t, &mut buf, &mut |chunk| {
            for h in own.iter_mut().chain(model.iter_mut()) {
                h.update(chunk);
            }
        });
        if let Err(e) = fed {
            bar.finish_and_clear();
            return Err(Box::new((t.name.clone(), e)));
        }
        bytes_read += t.nbytes.unwrap_or(0);
        bar.inc(t.nbytes.unwrap_or(0));
        out.push(own.into_iter().map(Hasher::hex).collect());
    }
    bar.finish_and_clear();
    let model = kinds.iter().copied().zip(model.into_iter().map(Hasher::hex)).collect();
    Ok(Hashes { tensors: out, model, bytes_read })
}

fn sipllm_text(lines: &[ManifestLine]) -> String {
    let mut text = String::new();
    for l in lines {
        text.push_str(&format!("{}  {}  {}\n", l.hash, l.size.unwrap_or(0), l.name));
    }
    text
}

/// What llama-gguf-hash prints for these hash functions (without `--no-layer`).
fn gguf_hash_text(
    per_tensor: &[HashKind],
    names: &[String],
    hashes: &Hashes,
    file: &str,
    model_lines: &[String],
) -> String {
    let file = escape::str(file);
    let mut text = String::new();
    for (name, own) in names.iter().zip(&hashes.tensors) {
        for (k, h) in per_tensor.iter().zip(own) {
            text.push_str(&format!("{:<8}  {h}  {file}:{name}\n", k.name()));
        }
    }
    for l in model_lines {
        text.push_str(l);
        text.push('\n');
    }
    text
}

/// The outcome of checking one hash function of a gguf-hash manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufHashCheck {
    /// Every difference.
    pub lines: Vec<String>,
    /// The one-line verdict (`8 tensors and the model match`, …).
    pub verdict: String,
}

/// Checks the `kind` lines of a gguf-hash manifest against the file's tensor names (`ours`),
/// their hashes (`actual`, `None` for uuid, which has no per-tensor hash) and the model hash.
///
/// Lines are matched by tensor name, not by the file name llama-gguf-hash put before it (the
/// path the manifest was made with, which need not be this file's): the model lines are the
/// ones named `F` where others are named `F:TENSOR`; without such a pair, a line whose name
/// ends in `:` and one of this file's tensor names is that tensor's, any other a model line.
/// Tensor lines are checked when the manifest has any for `kind` (each tensor of the file must
/// have one, and each one a tensor), the model line when it has one.
pub fn check_gguf_hash(
    lines: &[HashLine],
    kind: HashKind,
    ours: &[&str],
    actual: Option<&[ManifestLine]>,
    model: Option<&str>,
) -> GgufHashCheck {
    let all_names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    let file_name = all_names
        .iter()
        .find(|n| {
            all_names.iter().any(|m| {
                m.len() > n.len() + 1
                    && m.starts_with(**n)
                    && m.as_bytes().get(n.len()) == Some(&b':')
            })
        })
        .copied();
    let ours_set: std::collections::HashSet<&str> = ours.iter().copied().collect();
    let split = |name: &str| -> Option<String> {
        match file_name {
            Some(f) if name == f => None,
            Some(f) => name
                .strip_prefix(f)
                .and_then(|r| r.strip_prefix(':'))
                .map(str::to_owned)
                .or_else(|| Some(name.to_owned())),
            None => {
                // The longest suffix after a ':' that names one of our tensors.
                name.match_indices(':')
                    .map(|(i, _)| name.get(i + 1..).unwrap_or_default())
                    .find(|t| ours_set.contains(t))
                    .map(str::to_owned)
            }
        }
    };
    let mut tensor_lines = Vec::new();
    let mut model_lines = Vec::new();
    for l in lines.iter().filter(|l| l.kind == kind) {
        match split(&l.name) {
            Some(t) if kind != HashKind::Uuid => {
                tensor_lines.push(ManifestLine { hash: l.hash.clone(), size: None, name: t })
            }
            _ => model_lines.push(l),
        }
    }
    let mut diffs = Vec::new();
    let mut verdict = Vec::new();
    if let (false, Some(actual)) = (tensor_lines.is_empty(), actual) {
        let before = diffs.len();
        diffs.extend(compare(&tensor_lines, actual));
        if diffs.len() == before {
            verdict.push(format!("all {} tensors match", actual.len()));
        }
    }
    match (model_lines.as_slice(), model) {
        ([], _) | (_, None) => {}
        ([line, ..], Some(ours)) => {
            if line.hash == ours {
                verdict.push("the model matches".to_owned());
            } else {
                diffs.push(format!(
                    "model: {} {ours} in the file, {} in the manifest",
                    kind.name(),
                    line.hash
                ));
            }
        }
    }
    if tensor_lines.is_empty() && model_lines.is_empty() {
        diffs.push(format!("the manifest has no {} lines", kind.name()));
    }
    let verdict = if diffs.is_empty() {
        verdict.join("; ")
    } else {
        format!("{} difference(s)", diffs.len())
    };
    GgufHashCheck { lines: diffs, verdict }
}

/// Every difference between the expected manifest and the file's, in the file's order, then
/// the manifest's tensors the file lacks. Sizes are compared where the manifest has them.
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
            Some(e) if e.size.is_some() && e.size != a.size => diffs.push(format!(
                "{}: size {} in the file, {} in the manifest",
                a.name,
                a.size.unwrap_or(0),
                e.size.unwrap_or(0)
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
        ManifestLine { hash: hash.into(), size: Some(size), name: name.into() }
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

    /// The published XXH64 and XXH3-64 values of the empty input (seed 0), printed as
    /// llama-gguf-hash prints them; and the UUIDv5 of RFC 9562 built the way llama.cpp built
    /// its own namespace: `uuid5(NAMESPACE_URL, "en.wikipedia.org/wiki/Llama.cpp")` is that
    /// namespace.
    #[test]
    fn hashes_print_as_llama_gguf_hash_prints_them() {
        assert_eq!(Hasher::new(HashKind::Xxh64).hex(), "ef46db3751d8e999");
        assert_eq!(Hasher::new(HashKind::Xxh3).hex(), "2d06800538d394c2");
        assert_eq!(Hasher::new(HashKind::Sha1).hex(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        let namespace_url = [
            0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8,
        ];
        let mut h = sha1::Sha1::default();
        h.update(namespace_url);
        h.update(b"en.wikipedia.org/wiki/Llama.cpp");
        let id = uuid_v5(&h.finalize());
        assert_eq!(id, "ef001206-dadc-5f6d-a15f-3359e577d4e5");
        assert_eq!(id.replace('-', ""), hex(&UUID_NAMESPACE));
    }

    /// The manifest of llama.cpp's README (`llama-gguf-hash --all test.gguf`), and its
    /// `--check` output, read as manifests.
    #[test]
    fn llama_gguf_hash_manifests_parse() {
        let text = "xxh64     f66e9cd66a4396a0  test.gguf:tensor_0\n\
            sha1      59f79ecefd8125a996fdf419239051a7e99e5f20  test.gguf:tensor_0\n\
            sha256    c0510d38fa060c46265e0160a85c7243096b01dd31c2f355bdbb5516b20de1bd  test.gguf:tensor_0\n\
            xxh64     5a54d3aad816f302  test.gguf\n";
        let m = parse_any_manifest(text).unwrap();
        let Manifest::GgufHash(lines) = m else { panic!("{m:?}") };
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1].kind, HashKind::Sha1);
        assert_eq!(lines[1].name, "test.gguf:tensor_0");
        assert_eq!(
            lines[3],
            HashLine {
                kind: HashKind::Xxh64,
                hash: "5a54d3aad816f302".into(),
                name: "test.gguf".into()
            }
        );
        let check_output = "manifest  test.gguf.manifest  sha256  sha1  xxh64\n\
            sha256    c0510d38fa060c46265e0160a85c7243096b01dd31c2f355bdbb5516b20de1bd  test.gguf:tensor_0  -  Ok\n\
            \n\
            Verification results for test.gguf.manifest - Success\n";
        let Manifest::GgufHash(lines) = parse_any_manifest(check_output).unwrap() else { panic!() };
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].name, "test.gguf:tensor_0");
        assert!(parse_gguf_hash_manifest("sha256  zz  x").is_err());
        assert!(parse_gguf_hash_manifest("sha256  ab").is_err());
        // A sipllm manifest starts with hex digits.
        assert!(matches!(parse_any_manifest("ab01  64  w\n").unwrap(), Manifest::Sipllm(_)));
    }

    /// Tensor lines are matched by tensor name whatever path the manifest was made with; a
    /// model-only manifest (`--no-layer`) checks the model hash alone.
    #[test]
    fn gguf_hash_checks_match_by_tensor_name() {
        let hl =
            |kind, hash: &str, name: &str| HashLine { kind, hash: hash.into(), name: name.into() };
        let ours = ["a", "b:c"];
        let actual = [line("11", 1, "a"), line("22", 2, "b:c")];
        let manifest = [
            hl(HashKind::Sha1, "11", "/elsewhere/m:x.gguf:a"),
            hl(HashKind::Sha1, "22", "/elsewhere/m:x.gguf:b:c"),
            hl(HashKind::Sha1, "ff", "/elsewhere/m:x.gguf"),
            hl(HashKind::Xxh64, "99", "/elsewhere/m:x.gguf:a"),
        ];
        let c = check_gguf_hash(&manifest, HashKind::Sha1, &ours, Some(&actual), Some("ff"));
        assert_eq!(c.lines, Vec::<String>::new());
        assert_eq!(c.verdict, "all 2 tensors match; the model matches");
        let c = check_gguf_hash(&manifest, HashKind::Sha1, &ours, Some(&actual), Some("fe"));
        assert_eq!(c.lines, ["model: sha1 fe in the file, ff in the manifest"]);
        let wrong = [line("11", 1, "a"), line("23", 2, "b:c")];
        let c = check_gguf_hash(&manifest, HashKind::Sha1, &ours, Some(&wrong), Some("ff"));
        assert_eq!(c.lines, ["b:c: hash 23 in the file, 22 in the manifest"]);
        // Only xxh64 line for `a`: `b:c` is missing from the manifest.
        let c = check_gguf_hash(&manifest, HashKind::Xxh64, &ours, Some(&actual[..]), None);
        assert_eq!(c.lines.len(), 2, "{c:?}");
        // Model only.
        let model_only = [hl(HashKind::Sha256, "aa", "m.gguf")];
        let c = check_gguf_hash(&model_only, HashKind::Sha256, &ours, Some(&actual), Some("aa"));
        assert_eq!((c.lines.len(), c.verdict.as_str()), (0, "the model matches"));
        let c = check_gguf_hash(&model_only, HashKind::Sha1, &ours, Some(&actual), Some("aa"));
        assert_eq!(c.lines, ["the manifest has no sha1 lines"]);
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
