//! `sipllm verify FILE [--hash KIND,...] [--manifest OUT [--manifest-format F] | --check
//! MANIFEST]`: read every tensor back through a bounded buffer, check it is complete, hash it
//! and the whole model, and write or check a manifest — sipllm's or llama.cpp's
//! `llama-gguf-hash`'s.
//!
//! The manifests, their parsing, the hashing and the check are
//! [`sipllm_model::manifest`]'s (docs/model.md, "Hash manifests"); this command reads the
//! arguments and the manifest file, spells tensor names as manifests hold them
//! ([`manifest_name`]), shows progress and renders the outcome.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use sipllm_model::manifest::{self as mf, Manifest};
use sipllm_streaming::StreamErrorKind;

use crate::cli::{ManifestFormat, VerifyArgs};
use crate::commands::{
    open_or_report, refuse_input_as_output, report_open_error, usage_error, write_output,
};
use crate::render::escape;
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

pub use sipllm_model::manifest::UUID_NAMESPACE;

/// A tensor name as a manifest line holds it: escaped by [`escape::text`], which escapes the
/// backslash, every control character (line feeds included) and every byte that is not UTF-8,
/// so each name is one line and two different names never encode alike.
pub fn manifest_name(name: &[u8]) -> String {
    escape::text(name).into_owned()
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
            sipllm_edit::InputError::Read(r) => match r.kind() {
                StreamErrorKind::NotAFile { kind } => {
                    format!("it is {kind}, not a regular file: a manifest is a file")
                }
                StreamErrorKind::Open { source } | StreamErrorKind::Io { source, .. } => {
                    source.to_string()
                }
                _ => r.to_string(),
            },
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
            Ok(text) => match Manifest::parse(&text) {
                Ok(m) => Some(m),
                Err(e) => {
                    let e = escape::message(&e.to_string()).into_owned();
                    return Ok(usage_error(&format!("{}: {e}", show(path))));
                }
            },
            Err(msg) => return Ok(usage_error(&msg)),
        },
        None => None,
    };
    let asked: Vec<mf::HashKind> = args.hash.clone();
    let kinds = mf::choose_kinds(&asked, expected.as_ref());
    let per_tensor = kinds.iter().filter(|k| k.per_tensor()).count();
    let sipllm_format = matches!(expected, Some(Manifest::Sipllm(_)))
        || (args.manifest.is_some() && args.manifest_format == ManifestFormat::Sipllm);
    if sipllm_format && (kinds.len() != 1 || per_tensor != 1) {
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

    let started = Instant::now();
    let total: u64 = tensors.iter().filter_map(|t| t.nbytes).fold(0, u64::saturating_add);
    let bar = crate::progress::bar(ctx, total);
    let hashed = mf::hash_model(source, &kinds, &names, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    let hashes = match hashed {
        Ok(h) => h,
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "sipllm: tensor {} cannot be read back:",
                escape::quoted(e.tensor.as_bytes())
            );
            return Ok(report_open_error(&args.file, &e.source, ctx));
        }
    };
    let elapsed = started.elapsed();
    // The model's name in gguf-hash lines: FILE as given (a URL with credentials redacted).
    let file_name = escape::str(opened.name()).into_owned();
    let model_lines = hashes.model_lines(&file_name);

    let manifest_to_stdout = args.manifest.as_deref().is_some_and(|p| p == Path::new("-"));
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut exit = Exit::Ok;
    if let Some(path) = &args.manifest {
        let text = match args.manifest_format {
            ManifestFormat::Sipllm => {
                kinds.first().and_then(|&k| hashes.to_sipllm(k)).unwrap_or_default()
            }
            ManifestFormat::GgufHash => hashes.to_gguf_hash(&file_name),
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
    if let Some(manifest) = &expected {
        let report = mf::check(manifest, &hashes);
        for k in &report.kinds {
            for d in &k.differences {
                writeln!(out, "MISMATCH  {d}")?;
            }
            differences += k.differences.len();
            match manifest {
                Manifest::Sipllm(_) if k.differences.is_empty() => {
                    writeln!(out, "check: all {} tensors match {check_name}", tensors.len())?;
                }
                Manifest::Sipllm(_) => {}
                Manifest::GgufHash(_) => {
                    writeln!(out, "check: {}: {}", k.kind.name(), k.verdict())?;
                }
            }
        }
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
        let parsed = mf::parse_sipllm(&text).unwrap();
        let back: Vec<&str> = parsed.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(back, encoded);
        assert!(encoded.iter().all(|n| !n.contains(['\n', '\r'])));
    }
}
