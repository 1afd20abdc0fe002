//! Temporary paths and directories for tests: unique per process and per call, removed on
//! drop, and the sorted listing a crash-safety test compares against.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A path in the temporary directory that no other test (or test process) uses.
pub fn unique_temp_path(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let name = format!("sipllm-test-{}-{}-{tag}", std::process::id(), n);
    std::env::temp_dir().join(name)
}

/// A directory in the temporary directory, removed (with its contents) on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new unique directory (created).
    pub fn new(tag: &str) -> TempDir {
        let path = unique_temp_path(tag);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The file names in the directory, sorted.
    pub fn names(&self) -> Vec<String> {
        dir_entries(&self.0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The names in a directory, sorted: what a crash-safety test expects to find (and not).
pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
