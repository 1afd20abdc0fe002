//! Findings: what is wrong with a file, where, and how to fix it.
//!
//! Every finding says **where** (an absolute byte offset and length, plus a logical [`Path`]
//! such as `metadata[12] "tokenizer.ggml.tokens"[5031]`), **what** (a kind with a stable code
//! such as `gguf::metadata::duplicate_key`) and **how to fix it** ([`Finding::help`]). The
//! format crates do not depend on miette: the CLI renders findings as diagnostics.

use std::fmt;

use crate::path::Path;

/// What a [`Finding`] is about: a kind with a stable code and a help text. Implemented by
/// each format's error and warning kinds (`sipllm_gguf::ErrorKind`, `sipllm_llmw::ErrorKind`, …).
pub trait Kind: fmt::Display {
    /// The stable code, e.g. `gguf::header::bad_magic`.
    fn code(&self) -> &'static str;
    /// What to check or change.
    fn help(&self) -> &'static str;
}

/// A finding about a file: **what** (a kind with a stable code and help), **where** (an
/// absolute byte range and a logical [`Path`]). GGUF's errors and warnings and `.llmw`'s
/// errors are findings, so every consumer renders them the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<K> {
    kind: K,
    offset: u64,
    len: u64,
    path: Path,
}

impl<K: Kind> Finding<K> {
    /// A finding of `kind` about the `len` bytes at `offset`, at `path`.
    pub fn new(kind: K, offset: u64, len: u64, path: Path) -> Finding<K> {
        Finding { kind, offset, len, path }
    }

    /// What is wrong.
    pub fn kind(&self) -> &K {
        &self.kind
    }

    /// Absolute byte offset of the bytes concerned, from the start of the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length of the byte range concerned (0 when the finding is about a position, e.g. the
    /// end of the input).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the finding points at a position rather than a byte range.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where in the file's logical structure.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stable code of the kind (an error a profile tolerates keeps its error's code).
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// What to check or change.
    pub fn help(&self) -> &'static str {
        self.kind.help()
    }

    /// The message without the location (the kind's `Display`).
    pub fn message(&self) -> String {
        self.kind.to_string()
    }
}

impl<K: Kind> fmt::Display for Finding<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} (at byte {})", self.kind, self.offset)
        } else {
            write!(f, "{}: {} (at byte {})", self.path, self.kind, self.offset)
        }
    }
}

impl<K: Kind + fmt::Debug> std::error::Error for Finding<K> {}
