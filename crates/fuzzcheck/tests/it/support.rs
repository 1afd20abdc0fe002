//! Shared by the fuzzcheck tests: where `fuzz/` and `../shared` are, and reading their files.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
pub(crate) fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// `../shared` beside the checkout, if present (it is in CI; a fresh clone may not have it).
pub(crate) fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    dir.join("corpus").is_dir().then_some(dir)
}

/// Says loudly that the corpus part of a test did not run.
pub(crate) fn say_skipped(what: &str) {
    eprintln!(
        "\n*** SKIPPED: {what}: ../shared/corpus is absent (CI has it; see shared/README.md) ***\n"
    );
}

/// Every regular file directly in `dir` (sorted by name; hidden files and READMEs skipped),
/// or an empty list when `dir` does not exist.
pub(crate) fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.eq_ignore_ascii_case("README.md") {
                return None;
            }
            let bytes = fs::read(e.path()).unwrap_or_else(|err| panic!("read {name}: {err}"));
            Some((name, bytes))
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// The corpus GGUF files (`real`, `real-historic`, `generated`), sorted, as paths.
pub(crate) fn corpus_files(shared: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["real", "real-historic", "generated"] {
        let Ok(entries) = fs::read_dir(shared.join("corpus").join(sub)) else { continue };
        for e in entries.filter_map(Result::ok) {
            if e.path().extension().is_some_and(|x| x == "gguf") {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}
