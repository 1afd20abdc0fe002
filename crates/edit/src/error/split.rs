//! [`SplitError`]: what splitting or merging refuses, or a write of it failing.

use std::fmt;
use std::path::{Path, PathBuf};

use sipllm_format::Kind;
use sipllm_gguf::GgmlType;
use sipllm_streaming::StreamError;

use super::WriteError;

/// Why a split was refused before anything was written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitRefusal {
    /// `--max-tensors 0`.
    ZeroTensorLimit,
    /// `--max-size 0`.
    ZeroSizeLimit,
    /// A tensor whose type has no known byte size.
    UnknownSize {
        /// The tensor.
        tensor: String,
        /// Its type.
        ggml_type: GgmlType,
    },
    /// The file has no tensors.
    NoTensors,
    /// More tensors than `split.tensors.count` (`INT32`) can count.
    TooManyTensors {
        /// The tensor count.
        tensors: usize,
    },
    /// More shards than `split.count` (`UINT16`) can number.
    TooManyShards {
        /// The shards the limit gives.
        shards: usize,
    },
    /// A shard other than a metadata-only first one would have no tensors.
    EmptyShard {
        /// The shard's 1-based number.
        shard: usize,
    },
    /// The input path has no file name to derive the shard names from.
    NoFileName,
    /// The input was not opened from a file (its bytes cannot be copied in the kernel).
    NotAFile,
}

impl fmt::Display for SplitRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitRefusal::ZeroTensorLimit => f.write_str("the tensor limit must be at least 1"),
            SplitRefusal::ZeroSizeLimit => f.write_str("the size limit must be at least 1 byte"),
            SplitRefusal::UnknownSize { tensor, ggml_type } => write!(
                f,
                "tensor {tensor:?} has a type of unknown size ({ggml_type}), so its bytes cannot \
                 be located"
            ),
            SplitRefusal::NoTensors => {
                f.write_str("the file has no tensors: there is nothing to split")
            }
            SplitRefusal::TooManyTensors { tensors } => {
                write!(f, "{tensors} tensors do not fit split.tensors.count (INT32)")
            }
            SplitRefusal::TooManyShards { shards } => write!(
                f,
                "the limit gives {shards} shards, but split.count (UINT16) numbers at most \
                 65,535: raise the limit"
            ),
            SplitRefusal::EmptyShard { shard } => write!(f, "shard {shard} would have no tensors"),
            SplitRefusal::NoFileName => f.write_str("the path has no file name"),
            SplitRefusal::NotAFile => f.write_str("the input is not a file"),
        }
    }
}

/// Splitting a model into a set, or merging a set, failed or was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// The file to split is itself a shard of a set.
    #[error(
        "the file is already shard {} of {count} of a split set: merge the set first",
        u32::from(*split_no) + 1
    )]
    AlreadySplit {
        /// The file.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split that cannot be done as asked (a zero limit, more shards than `split.count`
    /// can number, an empty shard).
    #[error("{reason}")]
    Refused {
        /// The input file.
        path: PathBuf,
        /// Why.
        reason: SplitRefusal,
    },
    /// Another split is writing a set into the same directory (it holds the directory's
    /// lock): this one is refused before it touches a file, so neither removes the other's
    /// shards or temporaries.
    #[error(
        "another split is writing into {}; nothing was written (run again when it has ended)",
        dir.display()
    )]
    Busy {
        /// The input file.
        path: PathBuf,
        /// The output directory.
        dir: PathBuf,
    },
    /// Writing a shard or the merged file failed (or its path is the input's).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Opening or reading the input (or a shard of the set to merge) failed.
    #[error(transparent)]
    Read(#[from] StreamError),
}

impl Kind for SplitError {
    fn code(&self) -> &'static str {
        match self {
            SplitError::AlreadySplit { .. } => "edit::split::already_split",
            SplitError::Refused { .. } => "edit::split::refused",
            SplitError::Busy { .. } => "edit::split::busy",
            SplitError::Write(e) => e.code(),
            SplitError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SplitError::AlreadySplit { .. } => {
                "merge the set into one file (`sipllm merge`) and split that."
            }
            SplitError::Refused { reason: SplitRefusal::UnknownSize { .. }, .. } => {
                "this tensor type is newer than this writer; a set cannot be planned without \
                 every tensor's byte size."
            }
            SplitError::Refused { .. } => {
                "choose a limit that gives every shard at least one tensor and at most 65,535 \
                 shards."
            }
            SplitError::Busy { .. } => {
                "wait for the other split into this directory to end, or write the set into \
                 another directory (`--out-dir DIR`)."
            }
            SplitError::Write(e) => e.help(),
            SplitError::Read(e) => e.help(),
        }
    }
}

impl SplitError {
    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SplitError::AlreadySplit { path, .. }
            | SplitError::Refused { path, .. }
            | SplitError::Busy { path, .. } => Some(path),
            SplitError::Write(e) => e.path(),
            SplitError::Read(e) => e.path(),
        }
    }
}
