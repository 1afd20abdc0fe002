//! [`TensorStore`]: the format-neutral half of a weight source.
//!
//! A source format (GGUF, `.llmw`, …) parses its own header and hands the store a
//! [`ReadAt`] and the list of [`SourceTensor`]s. The store checks once that every tensor lies in
//! the file, indexes the names, and from then on does every tensor read: located, size- and
//! bounds-checked, with the optional readahead of the next tensors in file order.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sipllm_format::NameIndex;

use crate::backing::{ReadAt, clamp_range};
use crate::error::{StreamError, StreamErrorKind, TensorError};
use crate::source::SourceTensor;

/// Owns a byte source and its tensor list; does the bounds-checked reads every
/// [`WeightSource`](crate::WeightSource) implementation shares.
pub struct TensorStore {
    source: Box<dyn ReadAt>,
    path: Option<PathBuf>,
    file_size: u64,
    tensors: Vec<SourceTensor>,
    names: NameIndex,
    /// Tensor indices sorted by `(abs_offset, index)`: file order.
    by_offset: Vec<u32>,
    readahead: usize,
    /// The byte range the last readahead covered, so sequential reads advise each byte once.
    prefetched: Mutex<(u64, u64)>,
}

impl fmt::Debug for TensorStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorStore")
            .field("path", &self.path)
            .field("file_size", &self.file_size)
            .field("tensors", &self.tensors.len())
            .field("readahead", &self.readahead)
            .finish()
    }
}

impl TensorStore {
    /// A store over `source` (of `source.len()` bytes), serving `tensors`.
    ///
    /// Fails with [`StreamErrorKind::TensorOutOfBounds`] naming the first tensor (in the given
    /// order) whose data does not lie inside the source, so a truncated file fails here and
    /// not in the middle of inference. `path` is only used in error messages. `readahead` is
    /// how many tensors after the one being read, in file order, [`read_raw`](Self::read_raw)
    /// prefetches (0: none).
    pub fn new(
        source: Box<dyn ReadAt>,
        path: Option<PathBuf>,
        tensors: Vec<SourceTensor>,
        readahead: usize,
    ) -> Result<TensorStore, StreamError> {
        let file_size = source.len();
        if let Some(t) = tensors.iter().find(|t| t.nbytes.is_some() && !fits(t, file_size)) {
            return Err(StreamError::new(
                path,
                StreamErrorKind::TensorOutOfBounds {
                    tensor: t.name.clone(),
                    offset: t.abs_offset,
                    nbytes: t.nbytes.unwrap_or_default(),
                    file_size,
                },
            ));
        }
        if u32::try_from(tensors.len()).is_err() {
            return Err(StreamError::from(StreamErrorKind::TooLarge {
                what: "tensor list".into(),
                bytes: tensors.len() as u64,
            }));
        }
        let mut names = NameIndex::new();
        for (i, t) in tensors.iter().enumerate() {
            // The last tensor of a name wins, as in the parser (duplicates exist only in
            // lenient GGUF files).
            names.insert(t.name.as_bytes(), i as u32, |j| name_of(&tensors, j));
        }
        let mut by_offset: Vec<u32> = (0..tensors.len() as u32).collect();
        by_offset.sort_by_key(|&i| (tensors.get(i as usize).map_or(0, |t| t.abs_offset), i));
        Ok(TensorStore {
            source,
            path,
            file_size,
            tensors,
            names,
            by_offset,
            readahead,
            prefetched: Mutex::new((0, 0)),
        })
    }

    /// Every tensor, in the order given at construction.
    pub fn tensors(&self) -> &[SourceTensor] {
        &self.tensors
    }

    /// The tensor with this name (the last, if a lenient file repeats a name).
    pub fn find(&self, name: &str) -> Option<&SourceTensor> {
        let i = self.names.find(name.as_bytes(), |j| name_of(&self.tensors, j))?;
        self.tensors.get(i as usize)
    }

    /// The size of the source.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The path given at construction.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many tensors [`read_raw`](Self::read_raw) reads ahead.
    pub fn readahead(&self) -> usize {
        self.readahead
    }

    /// The byte source.
    pub fn source(&self) -> &dyn ReadAt {
        &*self.source
    }

    /// Reads all of `tensor` into the start of `dst`, which may be longer, and returns its
    /// byte size (see [`WeightSource::read_raw`](crate::WeightSource::read_raw)). With
    /// readahead enabled, the next tensors in file order are prefetched before the copy starts.
    pub fn read_raw(&self, tensor: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError> {
        let pos = self.position(tensor)?;
        let expected = tensor.byte_size()?;
        let prefix = usize::try_from(expected).ok().and_then(|n| dst.get_mut(..n));
        let Some(dst) = prefix else {
            return Err(StreamError::from(TensorError::SizeMismatch {
                tensor: tensor.name.clone(),
                expected,
                got: dst.len() as u64,
            }));
        };
        if self.readahead > 0 {
            // Only a hint: a failure to advise must not fail the read.
            let _ = self.read_ahead(pos);
        }
        self.read_raw_at(tensor.abs_offset, dst)?;
        Ok(dst.len())
    }

    /// Reads `dst.len()` bytes at `abs_offset`, which must lie inside the source.
    pub fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        let len = dst.len() as u64;
        match abs_offset.checked_add(len) {
            Some(end) if end <= self.file_size => {}
            _ => {
                return Err(StreamError::new(
                    self.path.clone(),
                    StreamErrorKind::OutOfBounds {
                        offset: abs_offset,
                        len,
                        file_size: self.file_size,
                    },
                ));
            }
        }
        self.source
            .read_exact_at(abs_offset, dst)
            .map_err(|e| StreamError::read(self.path.as_deref(), abs_offset, len, e))
    }

    /// Advises the source that `tensor` will be read soon.
    pub fn prefetch(&self, tensor: &SourceTensor) -> Result<(), StreamError> {
        let len = tensor.byte_size()?;
        self.prefetch_range(tensor.abs_offset, len)
    }

    /// Advises the source that `offset..offset + len` (clamped to the source) will be read
    /// soon.
    pub fn prefetch_range(&self, offset: u64, len: u64) -> Result<(), StreamError> {
        let Some((offset, len)) = clamp_range(offset, len, self.file_size) else { return Ok(()) };
        self.source.prefetch(offset, len).map_err(|source| {
            StreamError::new(self.path.clone(), StreamErrorKind::Io { offset, len, source })
        })
    }

    /// Where `tensor` is in file order, after checking that it is one of this store's.
    fn position(&self, tensor: &SourceTensor) -> Result<usize, StreamError> {
        let start = self.by_offset.partition_point(|&i| self.offset_of(i) < tensor.abs_offset);
        let equal = self.by_offset.get(start..).unwrap_or_default();
        equal
            .iter()
            .take_while(|&&i| self.offset_of(i) == tensor.abs_offset)
            .position(|&i| self.tensors.get(i as usize) == Some(tensor))
            .map(|p| start + p)
            .ok_or_else(|| {
                StreamError::from(TensorError::NotInSource {
                    tensor: tensor.name.clone(),
                    offset: tensor.abs_offset,
                })
            })
    }

    fn offset_of(&self, i: u32) -> u64 {
        self.tensors.get(i as usize).map_or(u64::MAX, |t| t.abs_offset)
    }

    /// Prefetches the `readahead` tensors after file position `pos`, skipping bytes the
    /// previous call already covered: one advice call over the span they occupy.
    fn read_ahead(&self, pos: usize) -> Result<(), StreamError> {
        let next = self.by_offset.get(pos.saturating_add(1)..).unwrap_or_default();
        let mut span: Option<(u64, u64)> = None;
        for t in next.iter().take(self.readahead).filter_map(|&i| self.tensors.get(i as usize)) {
            let Some(end) = t.end() else { continue };
            span = Some(match span {
                None => (t.abs_offset, end),
                Some((start, old_end)) => (start, old_end.max(end)),
            });
        }
        let Some((mut start, end)) = span else { return Ok(()) };
        {
            let mut done = self.prefetched.lock().unwrap_or_else(|e| e.into_inner());
            let (lo, hi) = *done;
            if lo <= start && start < hi {
                start = hi;
            }
            if start >= end {
                return Ok(());
            }
            *done = if lo <= start && start <= hi { (lo, end) } else { (start, end) };
        }
        self.prefetch_range(start, end - start)
    }
}

fn name_of(tensors: &[SourceTensor], i: u32) -> &[u8] {
    tensors.get(i as usize).map_or(&[], |t| t.name.as_bytes())
}

fn fits(t: &SourceTensor, file_size: u64) -> bool {
    t.end().is_some_and(|end| end <= file_size)
}
