//! [`SplitSetError`]: a split GGUF set that is incomplete or whose shards do not belong
//! together.

use std::path::{Path, PathBuf};

use sipllm_format::Kind;

/// A split GGUF set (`model-00001-of-00004.gguf` …) that is incomplete or whose shards do not
/// belong together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitSetError {
    /// A shard of a split set does not exist (or is not among the files given).
    #[error(
        "shard {} of {count} of the split set (split.no = {split_no}) is missing{}", u32::from(*split_no) + 1,
        missing_where(missing)
    )]
    MissingShard {
        /// The file the set was opened from (the first path given).
        set: PathBuf,
        /// Where the shard should be, when the path was derived from the shard names.
        missing: Option<PathBuf>,
        /// The missing shard's `split.no` (0-based; its file name counts from 1).
        split_no: u16,
        /// `split.count`.
        count: u16,
    },
    /// A shard's file name and its `split.no`/`split.count` disagree.
    #[error(
        "the file name says shard {name_number} of {name_count}, but the metadata says \
         shard {} of {count} (split.no = {split_no}, split.count = {count})", u32::from(*split_no) + 1
    )]
    NameMismatch {
        /// The shard.
        path: PathBuf,
        /// The shard number in the name (1-based).
        name_number: u64,
        /// The shard count in the name.
        name_count: u64,
        /// `split.no` (0-based).
        split_no: u16,
        /// `split.count`.
        count: u16,
    },
    /// A shard's file name does not follow `<prefix>-NNNNN-of-NNNNN.gguf`, so the other shards
    /// of its set cannot be found.
    #[error(
        "the file is shard {} of {count} of a split set (split.no = {split_no}), but its \
         name does not end in -NNNNN-of-NNNNN.gguf, so the other shards cannot be found", u32::from(*split_no) + 1
    )]
    BadName {
        /// The shard.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split key has another value in this shard than in the first shard.
    #[error("{key} is {found} here, but {expected} in {}", shown(reference))]
    KeyMismatch {
        /// The shard that disagrees.
        path: Option<PathBuf>,
        /// The key (`split.count` or `split.tensors.count`).
        key: &'static str,
        /// The value in the reference shard.
        expected: i64,
        /// The value in this shard.
        found: i64,
        /// The reference shard (the first shard, or the first file given).
        reference: Option<PathBuf>,
    },
    /// A split key is stored with another type than llama.cpp requires.
    #[error("metadata key {key:?} has type {found}, but split files store it as {expected}")]
    KeyType {
        /// The file.
        path: Option<PathBuf>,
        /// The key.
        key: &'static str,
        /// The type llama.cpp requires (`UINT16`, `INT32`).
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// A shard lacks a split key every shard must have.
    #[error("metadata key {key:?} is missing, but every shard of a split set has it")]
    KeyMissing {
        /// The shard.
        path: Option<PathBuf>,
        /// The key.
        key: &'static str,
    },
    /// A shard's `split.no` is not below `split.count`.
    #[error("split.no is {split_no}, but split.count is {count}: it must be below it")]
    BadIndex {
        /// The shard.
        path: Option<PathBuf>,
        /// `split.no`.
        split_no: u16,
        /// `split.count`.
        count: u16,
    },
    /// Two files given for one set have the same `split.no`.
    #[error(
        "{} and {} are both shard {} of the set (split.no = {split_no})",
        shown(first),
        shown(second),
        u32::from(*split_no) + 1
    )]
    DuplicateShard {
        /// The first file.
        first: Option<PathBuf>,
        /// The second file.
        second: Option<PathBuf>,
        /// Their `split.no`.
        split_no: u16,
    },
    /// Two shards (or one shard twice) hold a tensor of the same name.
    #[error("tensor {tensor:?} is in {} and again in {}", shown(first), shown(second))]
    DuplicateTensor {
        /// The tensor's name.
        tensor: String,
        /// The shard that holds it first.
        first: Option<PathBuf>,
        /// The shard that holds it again.
        second: Option<PathBuf>,
    },
    /// The shards hold another number of tensors than `split.tensors.count` says.
    #[error(
        "split.tensors.count says the set has {declared} tensors, but its {shards} shards hold \
         {found}"
    )]
    TensorCount {
        /// The first shard.
        path: Option<PathBuf>,
        /// `split.tensors.count`.
        declared: i64,
        /// Tensors found in all shards.
        found: u64,
        /// The number of shards.
        shards: u16,
    },
    /// The file is not a split set (`split.count` is absent or at most 1).
    #[error(
        "not a split set: split.count is {}", count.map_or_else(|| "absent".to_owned(), |c| c.to_string())
    )]
    NotASet {
        /// The file.
        path: Option<PathBuf>,
        /// Its `split.count`, if any.
        count: Option<u16>,
    },
    /// The shards of a set do not all have the first shard's byte order.
    #[error(
        "the shard is {found}-endian, but {} is {expected}-endian: one set has one byte order",
        shown(reference)
    )]
    EndianMismatch {
        /// The shard.
        path: Option<PathBuf>,
        /// The first shard's byte order.
        expected: sipllm_gguf::Endian,
        /// This shard's.
        found: sipllm_gguf::Endian,
        /// The first shard.
        reference: Option<PathBuf>,
    },
    /// A split set has more shards than this process may open files, even after raising its
    /// soft limit to the hard one.
    #[error("the set has {count} shards, but this process may open only {limit} files at once")]
    TooManyFiles {
        /// The file the set was opened from.
        set: PathBuf,
        /// `split.count`.
        count: u16,
        /// The open-file limit (`RLIMIT_NOFILE`).
        limit: u64,
    },
}
fn shown(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => p.display().to_string(),
        None => "the source".to_owned(),
    }
}
fn missing_where(missing: &Option<PathBuf>) -> String {
    match missing {
        Some(p) => format!(": {} does not exist", p.display()),
        None => ": it is not among the files given".to_owned(),
    }
}
impl Kind for SplitSetError {
    fn code(&self) -> &'static str {
        match self {
            SplitSetError::MissingShard { .. } => "streaming::split::missing_shard",
            SplitSetError::NameMismatch { .. } => "streaming::split::name_mismatch",
            SplitSetError::BadName { .. } => "streaming::split::bad_name",
            SplitSetError::KeyMismatch { .. } => "streaming::split::key_mismatch",
            SplitSetError::KeyType { .. } => "streaming::split::key_type",
            SplitSetError::KeyMissing { .. } => "streaming::split::key_missing",
            SplitSetError::BadIndex { .. } => "streaming::split::bad_index",
            SplitSetError::DuplicateShard { .. } => "streaming::split::duplicate_shard",
            SplitSetError::DuplicateTensor { .. } => "streaming::split::duplicate_tensor",
            SplitSetError::TensorCount { .. } => "streaming::split::tensor_count",
            SplitSetError::NotASet { .. } => "streaming::split::not_a_set",
            SplitSetError::EndianMismatch { .. } => "streaming::split::endian_mismatch",
            SplitSetError::TooManyFiles { .. } => "streaming::split::too_many_files",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SplitSetError::MissingShard { .. } => {
                "a split set is only complete with every \
                shard beside the first, named <prefix>-NNNNN-of-NNNNN.gguf as gguf-split wrote \
                them: download or copy the missing file."
            }
            SplitSetError::NameMismatch { .. } => {
                "a shard was renamed or copied over another: \
                restore the names gguf-split gave (numbered from 1, while split.no counts from \
                0), or open the files as an explicit list, which ignores names."
            }
            SplitSetError::BadName { .. } => {
                "rename the shards to \
                <prefix>-NNNNN-of-NNNNN.gguf (numbered from 1), or open them as an explicit list \
                of paths."
            }
            SplitSetError::KeyMismatch { .. } => {
                "the shards come from different splits (an \
                older download mixed with a newer one?): fetch the whole set again."
            }
            SplitSetError::KeyType { .. } => {
                "llama.cpp requires split.no and split.count as \
                UINT16 and split.tensors.count as INT32; rewrite the keys with those types."
            }
            SplitSetError::KeyMissing { .. } => {
                "every shard carries split.no and \
                split.count, and the first also split.tensors.count: the file was not written by \
                a split tool, or its keys were removed."
            }
            SplitSetError::BadIndex { .. } | SplitSetError::DuplicateShard { .. } => {
                "the \
                shards' split.no values must be 0, 1, … split.count - 1, once each: a shard is \
                corrupt or belongs to another set."
            }
            SplitSetError::DuplicateTensor { .. } => {
                "a tensor may be in only one shard \
                (llama.cpp rejects the set): a shard is duplicated or belongs to another set."
            }
            SplitSetError::TensorCount { .. } => {
                "the shards do not add up to the model \
                the first shard describes: a shard is truncated, from another set, or missing."
            }
            SplitSetError::NotASet { .. } => {
                "open the file as a single model; merging and \
                set operations need the first shard of a split set."
            }
            SplitSetError::EndianMismatch { .. } => {
                "the shards come from different \
                writers; re-split the original model, so every shard has its byte order."
            }
            SplitSetError::TooManyFiles { .. } => {
                "raise the open-file limit (`ulimit -n`, \
                or the hard limit in /etc/security/limits.conf), or merge the set on a machine \
                that allows it and re-split it into fewer, larger shards."
            }
        }
    }
}
impl SplitSetError {
    /// The stable code (`streaming::split::…`); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// The shard (or the file the set was opened from) the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SplitSetError::MissingShard { set: path, .. }
            | SplitSetError::NameMismatch { path, .. }
            | SplitSetError::BadName { path, .. }
            | SplitSetError::TooManyFiles { set: path, .. } => Some(path),
            SplitSetError::KeyMismatch { path, .. }
            | SplitSetError::KeyType { path, .. }
            | SplitSetError::KeyMissing { path, .. }
            | SplitSetError::BadIndex { path, .. }
            | SplitSetError::TensorCount { path, .. }
            | SplitSetError::NotASet { path, .. }
            | SplitSetError::EndianMismatch { path, .. } => path.as_deref(),
            SplitSetError::DuplicateShard { second, .. }
            | SplitSetError::DuplicateTensor { second, .. } => second.as_deref(),
        }
    }
}
