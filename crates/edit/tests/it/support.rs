//! Helpers shared by the write side's integration tests: the shared corpus, temporary
//! directories, directory listings.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

/// `../shared` beside the checkout, or `None` after saying loudly that it is absent; a panic
/// instead under `SIPLLM_REQUIRE_CORPUS=1` (CI).
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    sipllm_testkit::corpus::shared_dir(test)
}

pub use sipllm_testkit::temp::{TempDir, dir_entries};
