//! Every typed error code of the workspace is unique and listed in `docs/errors.md`.
//!
//! A code is what an error kind's `code()` returns, written as a match arm
//! `Variant { .. } => "area::name"` in a crate's `src/`; `scripts/error_codes.py` reads the
//! same arms to write `docs/errors.md`. Codes are an API (scripts match on them), so a
//! duplicate would make two failures indistinguishable and an unlisted one undocumented.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `area::name` or deeper: lowercase ASCII, digits and `_` between `::`.
fn is_code(s: &str) -> bool {
    let parts: Vec<&str> = s.split("::").collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// The code of a `code()` arm on this line: a pattern starting with a variant (an optional
/// `Enum::` path, then a capitalised name), no string before the `=>`, a code string after it.
fn arm_code(line: &str) -> Option<&str> {
    let (pattern, rest) = line.split_once("=>")?;
    let pattern = pattern.trim_start();
    if pattern.contains('"') {
        return None;
    }
    let head: String =
        pattern.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let variant = head.rsplit("::").next()?;
    if !variant.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('"')?;
    let code = &rest[..rest.find('"')?];
    is_code(code).then_some(code)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_error_code_is_unique_and_listed_in_docs_errors_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crates = root.join("crates");
    if !crates.is_dir() {
        // The packaged copy of this crate (`cargo package`) has no workspace beside it.
        eprintln!("skipped: no crates/ beside {}", root.display());
        return;
    }
    let mut codes: BTreeMap<String, String> = BTreeMap::new();
    let mut duplicates = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap().flatten() {
        let mut files = Vec::new();
        let src = krate.path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
            for (n, line) in text.lines().enumerate() {
                if let Some(code) = arm_code(line) {
                    let at = format!("{shown}:{}", n + 1);
                    if let Some(first) = codes.insert(code.to_owned(), at.clone()) {
                        duplicates.push(format!("{code}: {first} and {at}"));
                    }
                }
            }
        }
    }
    assert!(codes.len() > 200, "only {} codes found: is the scan broken?", codes.len());
    assert!(duplicates.is_empty(), "codes raised in two places:\n{}", duplicates.join("\n"));

    let docs = std::fs::read_to_string(root.join("docs/errors.md")).unwrap();
    let listed: BTreeMap<String, ()> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(c, _)| (c.to_owned(), ())))
        .filter(|(c, _)| is_code(c))
        .collect();
    let unlisted: Vec<_> = codes.iter().filter(|(c, _)| !listed.contains_key(*c)).collect();
    let stale: Vec<_> = listed.keys().filter(|c| !codes.contains_key(*c)).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "docs/errors.md is stale (run `python3 scripts/error_codes.py`): not listed {unlisted:?}, \
         listed but raised nowhere {stale:?}"
    );
}

#[test]
fn the_scan_reads_arms_and_nothing_else() {
    assert_eq!(
        arm_code(r#"            BadMagic { .. } => "gguf::header::bad_magic","#),
        Some("gguf::header::bad_magic")
    );
    assert_eq!(arm_code(r#"    Self::Io(_) => "stream::io::read","#), Some("stream::io::read"));
    assert_eq!(
        arm_code(r#"    WarningKind::KeyTooLong { .. } => "gguf::metadata::key_too_long","#),
        Some("gguf::metadata::key_too_long")
    );
    assert_eq!(arm_code(r#"    Tolerated(kind) => kind.code(),"#), None);
    assert_eq!(arm_code(r#"    assert_eq!(e.code(), "x::y") => "a::b""#), None);
    assert_eq!(arm_code(r#"    "a" => "b::c","#), None);
    assert_eq!(arm_code(r#"    Foo => "Not::A_code","#), None);
    assert!(!is_code("std"));
    assert!(is_code("template::out_of_fuel"));
}
