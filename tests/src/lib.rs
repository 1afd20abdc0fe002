//! The shared corpus and the reference reader's expectations, loaded in one place for every
//! conformance test of the workspace (the parser's, the seam's and `sipllm inspect --json`'s).
//!
//! The corpus is `../shared/corpus/` beside the checkout (CI has it; a fresh clone need not):
//!
//! * `real/`: 12 vocab-only GGUF v3 files written by llama.cpp's converter;
//! * `real-historic/`: 9 older real files (v1, v2, a pre-release `FUGG` magic, a duplicate key,
//!   an unknown value type 13);
//! * `generated/`: 3 files written by gguf-py's writer (a big-endian vocabulary, and a tiny
//!   llama-shaped model with tensor data in both byte orders).
//!
//! Beside every `NAME.gguf` lies the reference reader's (gguf-py 0.19.0) view of it:
//! `NAME.expect.json` (every key, type and value in file order — arrays by length, the
//! `payload_sha256` of their stored element bytes, the `sha256` of their canonical JSON and
//! either the whole list or its first and last four elements — every tensor's name, type,
//! GGUF-order `shape`, relative `offset` and `nbytes`, and the layout), or
//! `NAME.expect-error.json` (`{"error": message}`: the file is rejected). The files with tensor
//! data also have `NAME.tensors.sha256` (`sha256 size name` per tensor).
//!
//! The build script sets `cfg(has_corpus)` when the corpus is present; the tests that need it
//! carry `#[cfg_attr(not(has_corpus), ignore = "…")]`, so that `cargo test` lists them as
//! ignored, with the reason, on a clone without it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// The corpus sub-directories, in the order the tests walk them.
pub const SUBDIRS: [&str; 3] = ["real", "real-historic", "generated"];

/// How many `.gguf` files each of [`SUBDIRS`] holds: a changed corpus must be noticed.
pub const FILE_COUNTS: [usize; 3] = [12, 9, 3];

/// Whether the corpus was found when this crate was built.
pub const PRESENT: bool = cfg!(has_corpus);

/// The corpus directory.
///
/// # Panics
///
/// When the corpus was absent at build time: only tests marked
/// `#[cfg_attr(not(has_corpus), ignore)]` may call this.
pub fn dir() -> &'static Path {
    match option_env!("SIPLLM_CORPUS_DIR") {
        Some(dir) => Path::new(dir),
        None => panic!(
            "../shared/corpus was not beside the checkout when sipllm-tests was built; \
             mark this test #[cfg_attr(not(has_corpus), ignore = \"…\")]"
        ),
    }
}

/// A file of the corpus by its path below the corpus directory (`generated/tiny-llama.le.gguf`).
pub fn path(relative: &str) -> PathBuf {
    dir().join(relative)
}

/// What the reference reader says about one corpus file.
#[derive(Debug)]
pub enum Expected {
    /// It parses to this (`.expect.json`).
    Parse(Json),
    /// It is rejected with this message (`.expect-error.json`).
    Error(String),
}

/// One `.gguf` file of the corpus with the reference reader's view of it.
#[derive(Debug)]
pub struct CorpusFile {
    /// The sub-directory (one of [`SUBDIRS`]).
    pub subdir: &'static str,
    /// The `.gguf` file.
    pub path: PathBuf,
    /// The expectation beside it.
    pub expected: Expected,
}

impl CorpusFile {
    /// The file's name (`ggml-vocab-phi-3.gguf`).
    pub fn name(&self) -> &str {
        self.path.file_name().and_then(|n| n.to_str()).expect("corpus names are UTF-8")
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }

    /// The `.expect.json` document, if the reference reader parses the file.
    pub fn expect(&self) -> Option<&Json> {
        match &self.expected {
            Expected::Parse(json) => Some(json),
            Expected::Error(_) => None,
        }
    }

    /// The `.tensors.sha256` lines, if the corpus has them for this file.
    pub fn tensor_hashes(&self) -> Option<Vec<TensorHash>> {
        let path = sibling(&self.path, ".tensors.sha256");
        path.exists().then(|| tensor_hashes(&path))
    }
}

/// Every corpus file with its expectation, in [`SUBDIRS`] order and by name within each,
/// read and parsed once per test binary.
///
/// # Panics
///
/// As [`dir`], and when a file's expectation is missing or malformed, or a sub-directory's
/// file count is not [`FILE_COUNTS`]'s.
pub fn all() -> &'static [CorpusFile] {
    static ALL: OnceLock<Vec<CorpusFile>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = Vec::new();
        for (subdir, count) in SUBDIRS.into_iter().zip(FILE_COUNTS) {
            let files = gguf_files(&dir().join(subdir));
            assert_eq!(files.len(), count, "corpus/{subdir}: the corpus file count changed");
            for path in files {
                let expected = load_expected(&path);
                all.push(CorpusFile { subdir, path, expected });
            }
        }
        all
    })
}

/// The corpus files of the given sub-directories, in [`all`]'s order.
pub fn files_in(subdirs: &[&str]) -> impl Iterator<Item = &'static CorpusFile> {
    let subdirs = subdirs.to_vec();
    all().iter().filter(move |f| subdirs.contains(&f.subdir))
}

fn load_expected(gguf: &Path) -> Expected {
    let read = |path: &Path| -> Json {
        let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let parse = sibling(gguf, ".expect.json");
    let error = sibling(gguf, ".expect-error.json");
    if parse.exists() {
        Expected::Parse(read(&parse))
    } else if error.exists() {
        let json = read(&error);
        let message = json["error"].as_str().unwrap_or_else(|| panic!("{}", error.display()));
        Expected::Error(message.to_owned())
    } else {
        panic!("{}: no .expect.json or .expect-error.json beside it", gguf.display())
    }
}

/// Every `.gguf` file directly in `dir`, sorted.
fn gguf_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable corpus directory").path())
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    files.sort();
    files
}

/// `dir/NAME.gguf` → `dir/NAME<suffix>`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).expect("corpus names are UTF-8");
    path.with_file_name(format!("{stem}{suffix}"))
}

/// One line of a `.tensors.sha256` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorHash {
    /// The hex sha256 of the tensor's stored bytes.
    pub sha256: String,
    /// Their count.
    pub size: u64,
    /// The tensor's name.
    pub name: String,
}

/// The lines of a `.tensors.sha256` file (`sha256 size name`).
///
/// # Panics
///
/// When the file cannot be read or a line is malformed.
pub fn tensor_hashes(path: &Path) -> Vec<TensorHash> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            let mut it = line.split_whitespace();
            let mut next = || it.next().unwrap_or_else(|| panic!("{}: {line:?}", path.display()));
            let (sha256, size, name) = (next().to_owned(), next(), next().to_owned());
            let size = size.parse().unwrap_or_else(|e| panic!("{}: {line:?}: {e}", path.display()));
            TensorHash { sha256, size, name }
        })
        .collect()
}

/// The hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
