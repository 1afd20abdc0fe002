//! The committed fuzz inputs — `fuzz/seeds/<target>/` and `fuzz/regressions/<target>/` — read
//! for the replays on stable Rust (the workspace's `tests/it/fuzz_replay.rs`, and this crate's
//! seed and allocation-bound tests).

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every regular file directly in `dir` as (name, bytes), sorted by name; hidden files and
/// READMEs skipped. An empty list when `dir` does not exist.
///
/// # Panics
///
/// When a listed file cannot be read.
pub fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
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
