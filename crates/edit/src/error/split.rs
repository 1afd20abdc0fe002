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

/// Splitting a model into a set, or merging a set, failed or was refused: the input file,
/// once ([`path`](Self::path)), around what ([`kind`](Self::kind)).
#[derive(Debug)]
pub struct SplitError(Box<SplitInner>);

/// The input and the kind, behind [`SplitError`]'s one pointer.
#[derive(Debug)]
struct SplitInner {
    path: Option<PathBuf>,
    kind: SplitErrorKind,
}

/// What splitting or merging refused, or which of its writes or reads failed; the input is
/// the [`SplitError`] around it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitErrorKind {
    /// The file to split is itself a shard of a set.
    #[error(
        "the file is already shard {} of {count} of a split set: merge the set first",
        u32::from(*split_no) + 1
    )]
    AlreadySplit {
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split that cannot be done as asked (a zero limit, more shards than `split.count`
    /// can number, an empty shard).
    #[error("{reason}")]
    Refused {
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

impl Kind for SplitErrorKind {
    fn code(&self) -> &'static str {
        match self {
            SplitErrorKind::AlreadySplit { .. } => "edit::split::already_split",
            SplitErrorKind::Refused { .. } => "edit::split::refused",
            SplitErrorKind::Busy { .. } => "edit::split::busy",
            SplitErrorKind::Write(e) => e.code(),
            SplitErrorKind::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SplitErrorKind::AlreadySplit { .. } => {
                "merge the set into one file (`sipllm merge`) and split that."
            }
            SplitErrorKind::Refused { reason: SplitRefusal::UnknownSize { .. } } => {
                "this tensor type is newer than this writer; a set cannot be planned without \
                 every tensor's byte size."
            }
            SplitErrorKind::Refused { .. } => {
                "choose a limit that gives every shard at least one tensor and at most 65,535 \
                 shards."
            }
            SplitErrorKind::Busy { .. } => {
                "wait for the other split into this directory to end, or write the set into \
                 another directory (`--out-dir DIR`)."
            }
            SplitErrorKind::Write(e) => e.help(),
            SplitErrorKind::Read(e) => e.help(),
        }
    }
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.kind.fmt(f)
    }
}

impl std::error::Error for SplitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0.kind)
    }
}

impl From<SplitErrorKind> for SplitError {
    fn from(kind: SplitErrorKind) -> SplitError {
        SplitError(Box::new(SplitInner { path: None, kind }))
    }
}

impl From<WriteError> for SplitError {
    fn from(e: WriteError) -> SplitError {
        SplitErrorKind::Write(e).into()
    }
}

impl From<StreamError> for SplitError {
    fn from(e: StreamError) -> SplitError {
        SplitErrorKind::Read(e).into()
    }
}

impl SplitError {
    /// `kind`, happening to the input at `path`.
    pub fn at(path: impl Into<PathBuf>, kind: SplitErrorKind) -> SplitError {
        SplitError(Box::new(SplitInner { path: Some(path.into()), kind }))
    }

    /// The write error, for [`SplitErrorKind::Write`].
    pub fn write_error(&self) -> Option<&WriteError> {
        // One kind holds a write error.
        if let SplitErrorKind::Write(e) = &self.0.kind { Some(e) } else { None }
    }

    /// The read side's error, for [`SplitErrorKind::Read`].
    pub fn read_error(&self) -> Option<&StreamError> {
        // One kind holds a read error.
        if let SplitErrorKind::Read(e) = &self.0.kind { Some(e) } else { None }
    }

    /// The file the error concerns, when known: the input, or an inner write's or read's.
    pub fn path(&self) -> Option<&Path> {
        match (&self.0.path, &self.0.kind) {
            (Some(path), _) => Some(path),
            (None, SplitErrorKind::Write(e)) => e.path(),
            (None, SplitErrorKind::Read(e)) => e.path(),
            (None, _) => None,
        }
    }
}

wrapper!(SplitError => SplitErrorKind);
