//! Where the reference corpus is: `../shared/` beside the checkout (CI has it; a fresh clone
//! may not). One helper for every crate's tests, so that a missing corpus is reported the same
//! way everywhere, and is a failure, not a skip, when `SIPLLM_REQUIRE_CORPUS=1` (set by CI).

use std::path::{Path, PathBuf};

/// `../shared` beside the checkout when its `corpus/` is there. Otherwise `None`, after saying
/// loudly on standard error that `test` did not compare against it — or a panic when the
/// environment sets `SIPLLM_REQUIRE_CORPUS=1`.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if dir.join("corpus").is_dir() {
        return Some(dir);
    }
    if required() {
        panic!("SIPLLM_REQUIRE_CORPUS=1 but {} has no corpus/ ({test} needs it)", dir.display());
    }
    eprintln!(
        "\n*** SKIPPED: {test}: {} is absent (CI has it); nothing was compared ***\n",
        dir.join("corpus").display()
    );
    None
}

/// Whether a missing corpus must fail the tests (`SIPLLM_REQUIRE_CORPUS=1`, set by CI).
pub fn required() -> bool {
    std::env::var_os("SIPLLM_REQUIRE_CORPUS").is_some_and(|v| v == "1")
}
