//! Split GGUF sets: one model stored as several GGUF files ("shards"), as llama.cpp's
//! `gguf-split` and gguf-py's `GGUFWriter(split_max_tensors=…)` write them.
//!
//! # Conventions
//!
//! * **Names**: `<prefix>-%05d-of-%05d.gguf`, the first number 1-based
//!   (`model-00001-of-00004.gguf` … `model-00004-of-00004.gguf`). [`ShardName`] parses and
//!   [`shard_path`] formats them; a number wider than 5 digits parses too (`%05d` prints wider
//!   past 99,999, though `split.count`, a `UINT16`, never gets there).
//! * **Keys**: [`KEY_NO`] (`split.no`, `UINT16`, 0-based), [`KEY_COUNT`] (`split.count`,
//!   `UINT16`) and [`KEY_TENSORS_COUNT`] (`split.tensors.count`, `INT32`, the tensors of the
//!   whole set) — exactly these types, as llama.cpp's loader requires ([`SplitKeys::read`]).
//! * **Contents**: every shard is a complete GGUF file with its own header, tensor directory
//!   and data section. The first holds all of the model's metadata followed by the three split
//!   keys; the others hold only the split keys.
//! * A file whose `split.count` is absent or at most 1 is **not** a set (gguf-split's merge
//!   writes `split.count = 0`): it opens as one file.
//!
//! # Reading: [`SplitFile`]
//!
//! One [`WeightSource`](crate::WeightSource) over every shard; [`Model::open`](crate::Model)
//! returns it (as [`Model::Split`](crate::Model::Split)) for any shard of a set. See
//! [`SplitFile`] for the virtual address space that keeps `abs_offset`s unique.
//!
//! # Writing
//!
//! Splitting and merging are the write side's (`sipllm-edit`'s `split` module); the names and
//! keys here are shared with it.

mod name;
mod set;

pub use name::{ShardName, shard_file_name, shard_path};
pub use set::SplitFile;

use std::path::Path;

use sipllm_gguf::{Gguf, MetaValue, ValueType};

use crate::error::{SplitSetError, StreamError};

/// `split.no`: the shard's 0-based index, `UINT16`.
pub const KEY_NO: &str = "split.no";
/// `split.count`: the number of shards, `UINT16`.
pub const KEY_COUNT: &str = "split.count";
/// `split.tensors.count`: the number of tensors in the whole set, `INT32`.
pub const KEY_TENSORS_COUNT: &str = "split.tensors.count";
/// The three split keys, in the order gguf-py writes them.
pub const SPLIT_KEYS: [&str; 3] = [KEY_NO, KEY_COUNT, KEY_TENSORS_COUNT];

/// The split keys of one GGUF file, each `None` when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SplitKeys {
    /// `split.no` (0-based).
    pub no: Option<u16>,
    /// `split.count`.
    pub count: Option<u16>,
    /// `split.tensors.count`.
    pub tensors_count: Option<i32>,
}

impl SplitKeys {
    /// Reads the split keys of a parsed header. A key stored with another type than
    /// llama.cpp requires (`UINT16`, `UINT16`, `INT32`) is [`SplitSetError::KeyType`];
    /// `path` is only used in errors.
    pub fn read<B: AsRef<[u8]>>(
        gguf: &Gguf<B>,
        path: Option<&Path>,
    ) -> Result<SplitKeys, StreamError> {
        let wrong = |key: &'static str, expected: ValueType, found: ValueType| {
            StreamError::from(SplitSetError::KeyType {
                path: path.map(Path::to_path_buf),
                key,
                expected: expected.name(),
                found: found.name(),
            })
        };
        let u16_key = |key: &'static str| match gguf.get(key) {
            None => Ok(None),
            Some(MetaValue::Uint16(v)) => Ok(Some(v)),
            Some(other) => Err(wrong(key, ValueType::Uint16, other.value_type())),
        };
        let no = u16_key(KEY_NO)?;
        let count = u16_key(KEY_COUNT)?;
        let tensors_count = match gguf.get(KEY_TENSORS_COUNT) {
            None => None,
            Some(MetaValue::Int32(v)) => Some(v),
            Some(other) => {
                return Err(wrong(KEY_TENSORS_COUNT, ValueType::Int32, other.value_type()));
            }
        };
        Ok(SplitKeys { no, count, tensors_count })
    }

    /// True when the file is a shard of a set of more than one file (`split.count > 1`).
    pub fn is_set(&self) -> bool {
        self.count.is_some_and(|c| c > 1)
    }
}
