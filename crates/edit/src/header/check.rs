//! The post-write checks: a written file is re-opened under the strict profile and compared
//! with its plan before it replaces anything (out of place), or before the edit reports
//! success (in place).

use std::fs::File;
use std::path::Path;

use sipllm_streaming::{Backend, FileBacking, GgufFile, OpenOptions, ReadAt, WeightSource};

use super::Planned;
use super::error::{CheckError, TensorMismatch};
use crate::write::AtomicFile;

/// Bytes compared at each end of every tensor when checking a written file.
pub const SAMPLE: u64 = 4096;

/// A positional reader (the read side's pread backing) over a duplicate of `file`, the model
/// opened at `path`: the source bytes a check compares with, after the parsed model (and its
/// copy of the header) has been dropped.
///
/// # Errors
///
/// [`CheckError::Read`] when the descriptor cannot be duplicated.
pub fn source_reader(file: &File, path: &Path) -> Result<FileBacking, CheckError> {
    let read = |source| CheckError::Read { written: false, source };
    let clone = file.try_clone().map_err(|source| {
        read(sipllm_streaming::StreamError::at(
            path.to_path_buf(),
            sipllm_streaming::StreamErrorKind::Open { source },
        ))
    })?;
    FileBacking::from_file(clone, path, Backend::Pread).map_err(read)
}

/// Re-opens what was written (still the temporary) under the strict profile and checks it
/// against the plan: the header bytes hash to what the writer produced (`header`: length and
/// XXH3-64), every tensor has its planned name, type, shape, size and offset, and the first
/// and last [`SAMPLE`] bytes of each equal the source's (a sampled data check: full hashes are
/// `sipllm verify`'s job).
///
/// # Errors
///
/// The first difference, as a [`CheckError`].
pub fn check_written(
    tmp: &AtomicFile,
    (header_len, header_hash): (u64, u64),
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), CheckError> {
    let reopen = || {
        let file = tmp.file().try_clone().map_err(|source| {
            sipllm_streaming::StreamError::at(
                tmp.dest().to_path_buf(),
                sipllm_streaming::StreamErrorKind::Open { source },
            )
        })?;
        let backing = FileBacking::from_file(file, tmp.dest(), Backend::Pread)?;
        GgufFile::from_backing(backing, &OpenOptions::default())
    };
    let written = reopen().map_err(CheckError::Reopen)?;
    let gguf = written.gguf();
    let header = gguf.bytes().get(..usize::try_from(header_len).unwrap_or(usize::MAX));
    let got = header.map(xxhash_rust::xxh3::xxh3_64);
    if got != Some(header_hash) || (gguf.data_offset() != header_len && !planned.is_empty()) {
        return Err(CheckError::Header);
    }
    check_tensors(&written, planned, source)
}

/// Checks `written`'s tensors against the plan: names, types, shapes, sizes and offsets
/// exactly; data sampled ([`SAMPLE`] bytes at each end of each tensor, compared with `source`).
///
/// # Errors
///
/// The first difference, as a [`CheckError`].
pub fn check_tensors(
    written: &dyn WeightSource,
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), CheckError> {
    let tensors = written.tensors();
    if tensors.len() != planned.len() {
        return Err(CheckError::TensorCount { found: tensors.len(), planned: planned.len() });
    }
    let mut a = vec![0u8; SAMPLE as usize];
    let mut b = vec![0u8; SAMPLE as usize];
    for (t, p) in tensors.iter().zip(planned) {
        let same = t.name == p.name
            && t.ggml_type == p.ggml_type
            && t.shape.as_slice() == p.shape.as_slice()
            && t.nbytes == Some(p.nbytes)
            && t.abs_offset == p.to;
        if !same {
            return Err(CheckError::Tensor(Box::new(TensorMismatch {
                name: t.name.clone(),
                ggml_type: t.ggml_type,
                shape: t.shape.to_vec(),
                offset: t.abs_offset,
                nbytes: t.nbytes,
                planned: p.clone(),
            })));
        }
        let n = p.nbytes.min(SAMPLE);
        let k = usize::try_from(n).unwrap_or(0);
        for rel in [0, p.nbytes.saturating_sub(n)] {
            let (x, y) = (a.get_mut(..k).unwrap_or_default(), b.get_mut(..k).unwrap_or_default());
            let (Some(from), Some(to)) = (p.from.checked_add(rel), p.to.checked_add(rel)) else {
                return Err(CheckError::Overflow { tensor: p.name.clone() });
            };
            source.read_exact_at(from, x).map_err(|e| CheckError::Read {
                written: false,
                source: sipllm_streaming::StreamError::read(None, from, n, e),
            })?;
            written
                .read_raw_at(to, y)
                .map_err(|source| CheckError::Read { written: true, source })?;
            if x != y {
                return Err(CheckError::Data { tensor: p.name.clone(), at: rel });
            }
        }
    }
    Ok(())
}

/// Re-opens the model at `path` through `file` (the descriptor the in-place edit wrote to: the
/// file, whatever its path names now) and checks that its header is the one written
/// (`header`: length and XXH3-64) and that no tensor moved.
///
/// # Errors
///
/// The first difference, as a [`CheckError`].
pub fn check_in_place(
    path: &Path,
    (len, hash): (u64, u64),
    planned: &[Planned],
    file: &File,
) -> Result<(), CheckError> {
    let reopen = || {
        let clone = file.try_clone().map_err(|source| {
            sipllm_streaming::StreamError::at(
                path.to_path_buf(),
                sipllm_streaming::StreamErrorKind::Open { source },
            )
        })?;
        GgufFile::from_backing(
            FileBacking::from_file(clone, path, Backend::Pread)?,
            &OpenOptions::default(),
        )
    };
    let written = reopen().map_err(CheckError::Reopen)?;
    let header = written.gguf().bytes().get(..usize::try_from(len).unwrap_or(usize::MAX));
    if header.map(xxhash_rust::xxh3::xxh3_64) != Some(hash) {
        return Err(CheckError::Header);
    }
    // The source is the file itself: its tensor bytes must not have moved.
    check_tensors(&written, planned, written.store().source())
}
