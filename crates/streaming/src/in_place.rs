//! Rewriting a GGUF file's header in place, crash-safely, and undoing an interrupted rewrite.
//!
//! The caller (`sipllm edit --in-place`) plans a new header of exactly the old header's length
//! (`GgufWriter::pad_to`), so no tensor byte moves; this module writes it. The rewrite is a
//! sequence of steps, each a public function so a test can stop between any two (a simulated
//! crash):
//!
//! 0. [`changed_runs`]: the [`BLOCK`]-aligned runs of the header region `[0, data_offset)`
//!    whose bytes change (an edit near the start with its padding pair right after it touches
//!    a block or two, not the whole 7.7 MB of a Llama-3 header);
//! 1. [`HeaderBackup::write`]: those blocks' old bytes go to `.NAME.header-backup` beside the
//!    model ([`HeaderBackup::path_for`]), with the model's length, its data offset and the
//!    XXH3-64 of its whole old header region, the record itself checksummed — through an
//!    [`AtomicFile`] (synced, renamed, directory synced), so the backup exists only once it is
//!    complete;
//! 2. [`overwrite_runs`]: the new bytes are written over those blocks and the model is synced
//!    (`fdatasync`);
//! 3. [`HeaderBackup::remove`]: the backup is removed and its directory synced.
//!
//! [`rewrite_header_in_place`] runs them in order. If step 2 fails it writes the old bytes back
//! itself and removes the backup ([`StreamError::InPlaceRolledBack`]); if that fails too, the
//! backup stays ([`StreamError::InPlaceTorn`]).
//!
//! A crash before step 1 completes leaves the model untouched (and at most a stray
//! temporary). A crash after it leaves the backup: [`HeaderBackup::pending`] tells a caller
//! that the model's header may be torn, and [`recover`] checks the backup (its checksum, the
//! model's length), writes the old bytes back, checks the whole header region against the
//! recorded hash, re-opens the model (strict profile) and only then removes the backup.
//! Recovery is an undo: the old header, which was valid, comes back. Tensor data is never
//! touched.
//!
//! # The backup's layout
//!
//! Little-endian: [`MAGIC`] (`SIPLLMHB`), `u32` [`VERSION`] (1), `u32` run count, `u64` model
//! length, `u64` data offset (the old header region's length), `u64` XXH3-64 of the old
//! `[0, data_offset)`; per run `u64` offset, `u64` length and the old bytes; then `u64` XXH3-64
//! of everything before it.
//!
//! ```
//! use sipllm_streaming::in_place::{BLOCK, changed_runs};
//!
//! let old = vec![0u8; 3 * BLOCK];
//! let mut new = old.clone();
//! new[BLOCK + 7] = 1;
//! assert_eq!(changed_runs(&old, &new), [BLOCK..2 * BLOCK]);
//! ```

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sipllm_gguf::Limits;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::StreamError;
use crate::gguf_file::GgufFile;
use crate::options::OpenOptions;
use crate::write::AtomicFile;

/// The first 8 bytes of a header backup.
pub const MAGIC: &[u8; 8] = b"SIPLLMHB";

/// The backup layout's version.
pub const VERSION: u32 = 1;

/// The size of the blocks compared, backed up and rewritten.
pub const BLOCK: usize = 4096;

/// The [`BLOCK`]-aligned runs where `old` and `new` differ, adjacent blocks merged; the last
/// run ends at the longer input's end. Equal inputs give no runs.
pub fn changed_runs(old: &[u8], new: &[u8]) -> Vec<Range<usize>> {
    let n = old.len().max(new.len());
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    while at < n {
        let end = at.saturating_add(BLOCK).min(n);
        if old.get(at..end) != new.get(at..end) {
            match runs.last_mut() {
                Some(r) if r.end == at => r.end = end,
                _ => runs.push(at..end),
            }
        }
        at = end;
    }
    runs
}

/// What is wrong with a header backup that [`recover`] refuses to use
/// ([`StreamError::InPlaceBadBackup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackupDefect {
    /// The file is larger than any backup of a header within the parser's limit can be.
    TooLarge,
    /// The magic, version, layout or checksum is wrong: not a record `sipllm` wrote, or a
    /// damaged one.
    NotARecord,
    /// The recorded header region ends past the model or the parser's header limit.
    HeaderPastEnd,
    /// A recorded run reaches past the recorded header region.
    RunPastHeader,
}

/// A header backup written beside a model (step 1 of an in-place rewrite; see the
/// [module docs](self)), until [`remove`](HeaderBackup::remove)d.
///
/// Dropping it leaves the file in place, as a crash would.
#[derive(Debug)]
pub struct HeaderBackup {
    model: PathBuf,
    path: PathBuf,
}

impl HeaderBackup {
    /// The backup's path for `model`: `.NAME.header-backup` in the model's directory.
    pub fn path_for(model: &Path) -> PathBuf {
        let mut name = OsString::from(".");
        name.push(model.file_name().unwrap_or_default());
        name.push(".header-backup");
        model.with_file_name(name)
    }

    /// The backup's path when `model` has one: an in-place rewrite was interrupted, so the
    /// model's header may be half-written until [`recover`] restores it.
    pub fn pending(model: &Path) -> Option<PathBuf> {
        let path = HeaderBackup::path_for(model);
        path.exists().then_some(path)
    }

    /// Step 1: saves the `runs` of `old_header` (the model's current `[0, data_offset)`) and
    /// what [`recover`] needs to check a restore, as the backup of `model` (`model_len` bytes
    /// long). The record is written to a temporary beside the model, synced and renamed: it
    /// exists only once complete.
    ///
    /// # Errors
    ///
    /// [`StreamError::InPlaceBackupWrite`] when the backup cannot be written (the model is not
    /// touched), or when a run lies outside `old_header`.
    pub fn write(
        model: &Path,
        model_len: u64,
        old_header: &[u8],
        runs: &[Range<usize>],
    ) -> Result<HeaderBackup, StreamError> {
        let path = HeaderBackup::path_for(model);
        let fail = |source| StreamError::InPlaceBackupWrite {
            path: model.to_path_buf(),
            backup: path.clone(),
            source,
        };
        let record = encode(model_len, old_header, runs).map_err(fail)?;
        let tmp = AtomicFile::create(&path).map_err(fail)?;
        tmp.file().write_all_at(&record, 0).map_err(fail)?;
        tmp.commit().map_err(fail)?;
        Ok(HeaderBackup { model: model.to_path_buf(), path })
    }

    /// The backup's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model it belongs to.
    pub fn model(&self) -> &Path {
        &self.model
    }

    /// Step 3: removes the backup and syncs its directory (best effort: some file systems
    /// cannot sync a directory).
    ///
    /// # Errors
    ///
    /// [`StreamError::InPlaceBackupRemove`] when the file cannot be removed.
    pub fn remove(self) -> Result<(), StreamError> {
        self.remove_after(false)
    }

    fn remove_after(self, recovered: bool) -> Result<(), StreamError> {
        remove_file(&self.path).map_err(|source| StreamError::InPlaceBackupRemove {
            path: self.model.clone(),
            backup: self.path.clone(),
            recovered,
            source,
        })
    }
}

fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Best effort, as for any rename: some file systems cannot sync a directory.
        let _ = File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

fn u64_of(n: usize) -> io::Result<u64> {
    u64::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length overflows"))
}

/// The backup record (see the module docs).
fn encode(model_len: u64, old_header: &[u8], runs: &[Range<usize>]) -> io::Result<Vec<u8>> {
    let invalid = |msg: &str| io::Error::new(io::ErrorKind::InvalidInput, msg.to_owned());
    let count = u32::try_from(runs.len()).map_err(|_| invalid("too many runs"))?;
    let mut rec = Vec::new();
    rec.extend_from_slice(MAGIC);
    rec.extend_from_slice(&VERSION.to_le_bytes());
    rec.extend_from_slice(&count.to_le_bytes());
    rec.extend_from_slice(&model_len.to_le_bytes());
    rec.extend_from_slice(&u64_of(old_header.len())?.to_le_bytes());
    rec.extend_from_slice(&xxh3_64(old_header).to_le_bytes());
    for r in runs {
        let bytes =
            old_header.get(r.clone()).ok_or_else(|| invalid("a run lies outside the header"))?;
        rec.extend_from_slice(&u64_of(r.start)?.to_le_bytes());
        rec.extend_from_slice(&u64_of(bytes.len())?.to_le_bytes());
        rec.extend_from_slice(bytes);
    }
    let sum = xxh3_64(&rec);
    rec.extend_from_slice(&sum.to_le_bytes());
    Ok(rec)
}

/// A decoded backup.
struct Record<'a> {
    model_len: u64,
    data_offset: u64,
    header_hash: u64,
    runs: Vec<(u64, &'a [u8])>,
}

fn decode(rec: &[u8]) -> Option<Record<'_>> {
    let (body, sum) = rec.split_at_checked(rec.len().checked_sub(8)?)?;
    if xxh3_64(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut at = 0usize;
    let mut take = |n: usize| {
        let end = at.checked_add(n)?;
        let b = body.get(at..end)?;
        at = end;
        Some(b)
    };
    if take(8)? != MAGIC || take(4)? != VERSION.to_le_bytes() {
        return None;
    }
    let u32_ = |b: &[u8]| b.try_into().ok().map(u32::from_le_bytes);
    let u64_ = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    let count = u32_(take(4)?)?;
    let model_len = u64_(take(8)?)?;
    let data_offset = u64_(take(8)?)?;
    let header_hash = u64_(take(8)?)?;
    let mut runs = Vec::new();
    for _ in 0..count {
        let offset = u64_(take(8)?)?;
        let len = usize::try_from(u64_(take(8)?)?).ok()?;
        runs.push((offset, take(len)?));
    }
    (at == body.len()).then_some(Record { model_len, data_offset, header_hash, runs })
}

/// Writes the `runs` of `header` over `file` at the same offsets and syncs its data; the
/// error carries the offset of the write that failed.
fn write_runs(file: &File, header: &[u8], runs: &[Range<usize>]) -> Result<(), (u64, io::Error)> {
    for r in runs {
        let offset = u64_of(r.start).map_err(|e| (0, e))?;
        let bytes = header.get(r.clone()).ok_or_else(|| {
            (offset, io::Error::new(io::ErrorKind::InvalidInput, "a run lies outside the header"))
        })?;
        file.write_all_at(bytes, offset).map_err(|e| (offset, e))?;
    }
    file.sync_data().map_err(|e| (0, e))
}

/// Step 2: writes the `runs` of `header` over the model (`file`, opened for writing; `path`
/// names it in errors) at the same offsets, and syncs the model's data.
///
/// # Errors
///
/// [`StreamError::Write`] with the offset of the failed write (0 for the sync). The model may
/// then hold a mix of old and new blocks: [`rewrite_header_in_place`] writes the old bytes
/// back, or leaves the backup for [`recover`].
pub fn overwrite_runs(
    file: &File,
    path: &Path,
    header: &[u8],
    runs: &[Range<usize>],
) -> Result<(), StreamError> {
    write_runs(file, header, runs).map_err(|(offset, source)| StreamError::Write {
        path: path.to_path_buf(),
        offset,
        source,
    })
}

/// What [`rewrite_header_in_place`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InPlaceStats {
    /// The header region's length (old and new alike).
    pub header_len: u64,
    /// The [`BLOCK`]-aligned runs backed up and rewritten (empty: the headers are equal and
    /// nothing was written).
    pub runs: Vec<Range<usize>>,
    /// Bytes backed up and rewritten (the runs' total).
    pub rewritten: u64,
}

/// Rewrites the model's header region in place, crash-safely (the steps of the
/// [module docs](self)): backs up the changed blocks beside the model, writes the new blocks
/// and syncs, removes the backup.
///
/// `file` is the model opened for reading and writing, `path` its path (the backup goes
/// beside it); `old_header` must be the model's current bytes `[0, old_header.len())` and
/// `new_header` the replacement, of the same length. Equal headers write nothing (the stats
/// then have no runs).
///
/// # Errors
///
/// - [`StreamError::InPlaceLength`]: the headers' lengths differ; nothing was written;
/// - [`StreamError::Open`]: the model's length cannot be read; nothing was written;
/// - [`StreamError::InPlaceBackupWrite`]: the backup could not be written; the model was not
///   changed;
/// - [`StreamError::InPlaceRolledBack`]: writing the new blocks failed and the old ones were
///   written back (the backup is removed);
/// - [`StreamError::InPlaceTorn`]: writing the new blocks failed and so did writing the old
///   ones back: the header may be torn and the backup is kept for [`recover`];
/// - [`StreamError::InPlaceBackupRemove`]: the new header is complete and synced, but the
///   backup could not be removed.
pub fn rewrite_header_in_place(
    file: &File,
    path: &Path,
    old_header: &[u8],
    new_header: &[u8],
) -> Result<InPlaceStats, StreamError> {
    let old_len = u64_of(old_header.len()).unwrap_or(u64::MAX);
    let header_len = u64_of(new_header.len()).unwrap_or(u64::MAX);
    if old_len != header_len {
        return Err(StreamError::InPlaceLength {
            path: path.to_path_buf(),
            old: old_len,
            new: header_len,
        });
    }
    let runs = changed_runs(old_header, new_header);
    let rewritten = runs.iter().fold(0u64, |n, r| n.saturating_add(r.len() as u64));
    let stats = InPlaceStats { header_len, runs, rewritten };
    if stats.runs.is_empty() {
        return Ok(stats);
    }
    let model_len = file
        .metadata()
        .map_err(|source| StreamError::Open { path: path.to_path_buf(), source })?
        .len();
    let backup = HeaderBackup::write(path, model_len, old_header, &stats.runs)?;
    if let Err((offset, source)) = write_runs(file, new_header, &stats.runs) {
        // Put the old bytes back right away; if that fails too, the backup stays.
        let backup_path = backup.path.clone();
        if write_runs(file, old_header, &stats.runs).is_ok() && backup.remove().is_ok() {
            return Err(StreamError::InPlaceRolledBack {
                path: path.to_path_buf(),
                offset,
                source,
            });
        }
        return Err(StreamError::InPlaceTorn {
            path: path.to_path_buf(),
            backup: backup_path,
            offset,
            source,
        });
    }
    backup.remove()?;
    Ok(stats)
}

/// What [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverStats {
    /// The backup that was restored and removed.
    pub backup: PathBuf,
    /// The number of runs written back.
    pub runs: usize,
    /// Bytes written back.
    pub restored: u64,
}

/// Undoes an interrupted in-place rewrite of `model`: checks its backup (the record's
/// checksum, the model's length, runs inside the recorded header region), writes the old
/// bytes back and syncs, checks that the whole header region hashes to the recorded value,
/// re-opens the model (strict profile), and only then removes the backup.
///
/// A backup that fails a check before the write is kept and the model not written; one that
/// fails a check after it is kept too.
///
/// # Errors
///
/// - [`StreamError::InPlaceNoBackup`]: `model` has no backup;
/// - [`StreamError::InPlaceBackupRead`]: the backup cannot be read;
/// - [`StreamError::InPlaceBadBackup`]: the backup is not a record `sipllm` wrote, is
///   damaged, or describes a header past the model (the model is not written);
/// - [`StreamError::Open`]: the model cannot be opened for writing;
/// - [`StreamError::InPlaceWrongModel`]: the model's length is not the recorded one (it is
///   not written);
/// - [`StreamError::InPlaceRestoreWrite`]: writing or syncing the old bytes failed;
/// - [`StreamError::Io`] / [`StreamError::UnexpectedEof`]: reading the header region back
///   failed;
/// - [`StreamError::InPlaceRestoreMismatch`]: after the write, the header region does not hash
///   to the recorded value;
/// - [`StreamError::InPlaceRestoredInvalid`]: the restored model does not open;
/// - [`StreamError::InPlaceBackupRemove`]: all is restored and checked, but the backup could
///   not be removed.
pub fn recover(model: &Path) -> Result<RecoverStats, StreamError> {
    let backup = HeaderBackup::path_for(model);
    let path = || model.to_path_buf();
    let bad =
        |defect| StreamError::InPlaceBadBackup { path: path(), backup: backup.clone(), defect };
    let read_err =
        |source| StreamError::InPlaceBackupRead { path: path(), backup: backup.clone(), source };
    let max_header = Limits::default().max_header_bytes;
    let meta = match std::fs::metadata(&backup) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(StreamError::InPlaceNoBackup { path: path(), backup });
        }
        Err(e) => return Err(read_err(e)),
    };
    if meta.len() > max_header.saturating_mul(2) {
        return Err(bad(BackupDefect::TooLarge));
    }
    let bytes = std::fs::read(&backup).map_err(read_err)?;
    let rec = decode(&bytes).ok_or_else(|| bad(BackupDefect::NotARecord))?;
    let open_err = |source| StreamError::Open { path: path(), source };
    let file = File::options().read(true).write(true).open(model).map_err(open_err)?;
    let len = file.metadata().map_err(open_err)?.len();
    if len != rec.model_len {
        return Err(StreamError::InPlaceWrongModel {
            path: path(),
            backup,
            len,
            recorded_len: rec.model_len,
        });
    }
    if rec.data_offset > len.min(max_header) {
        return Err(bad(BackupDefect::HeaderPastEnd));
    }
    // Every run is checked before any is written: a refused backup leaves the model as it is.
    let mut restored = 0u64;
    for (offset, old) in &rec.runs {
        let n = old.len() as u64;
        match offset.checked_add(n) {
            Some(end) if end <= rec.data_offset => restored = restored.saturating_add(n),
            _ => return Err(bad(BackupDefect::RunPastHeader)),
        }
    }
    let restore_err =
        |source| StreamError::InPlaceRestoreWrite { path: path(), backup: backup.clone(), source };
    for (offset, old) in &rec.runs {
        file.write_all_at(old, *offset).map_err(restore_err)?;
    }
    file.sync_data().map_err(restore_err)?;
    let n = usize::try_from(rec.data_offset).map_err(|_| StreamError::TooLarge {
        what: "header region".to_owned(),
        bytes: rec.data_offset,
    })?;
    let mut header = vec![0u8; n];
    file.read_exact_at(&mut header, 0)
        .map_err(|e| StreamError::read(Some(model), 0, rec.data_offset, e))?;
    if xxh3_64(&header) != rec.header_hash {
        return Err(StreamError::InPlaceRestoreMismatch { path: path(), backup });
    }
    drop(header);
    drop(file);
    if let Err(e) = GgufFile::open(model, &OpenOptions::default()) {
        return Err(StreamError::InPlaceRestoredInvalid {
            path: path(),
            backup,
            source: Box::new(e),
        });
    }
    let runs = rec.runs.len();
    HeaderBackup { model: path(), path: backup.clone() }.remove_after(true)?;
    Ok(RecoverStats { backup, runs, restored })
}
