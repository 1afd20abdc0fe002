//! Running the `sipllm` command, temporary directories, the bundled sample.

use std::path::{Path, PathBuf};

pub(crate) use sipllm_testkit::command::Run;

/// Runs `sipllm args…` in `dir` without color; a panic or a signal fails the test.
pub(crate) fn sipllm(dir: &Path, args: &[&str]) -> Run {
    sipllm_testkit::command::run(env!("CARGO_BIN_EXE_sipllm-it"), dir, args)
}

/// A fresh directory for one test under the target directory.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sipllm-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The repository's bundled sample.
pub(crate) fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/tiny-llama.gguf")
}

/// The per-tensor manifest of `sipllm verify --hash HASH --manifest -` as (hash, size, name).
pub(crate) fn manifest(dir: &Path, file: &str, hash: &str) -> Vec<(String, String, String)> {
    sipllm_testkit::command::manifest(env!("CARGO_BIN_EXE_sipllm-it"), dir, file, hash)
}

/// The metadata of `inspect --json`, one JSON object (key, type, value) per pair.
pub(crate) fn metadata(dir: &Path, file: &str) -> Vec<serde_json::Value> {
    sipllm_testkit::command::metadata(env!("CARGO_BIN_EXE_sipllm-it"), dir, file)
}
