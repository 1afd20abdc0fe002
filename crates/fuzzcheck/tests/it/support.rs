//! Shared by the fuzzcheck tests: where `fuzz/` and `../shared` are, and reading their files.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

pub(crate) use sipllm_fuzzcheck::committed::{files_in, fuzz_dir};

/// `../shared` beside the checkout, if present (it is in CI; a fresh clone may not have it).
/// Absent under `SIPLLM_REQUIRE_CORPUS=1` (CI), it is a failure, not a skip.
pub(crate) fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let present = dir.join("corpus").is_dir();
    assert!(
        present || !sipllm_testkit::corpus::required(),
        "SIPLLM_REQUIRE_CORPUS=1 but {} has no corpus/",
        dir.display()
    );
    present.then_some(dir)
}

/// Says loudly that the corpus part of a test did not run.
pub(crate) fn say_skipped(what: &str) {
    eprintln!(
        "\n*** SKIPPED: {what}: ../shared/corpus is absent (CI has it; see shared/README.md) ***\n"
    );
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
