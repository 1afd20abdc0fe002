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
//!    model — beside the file a symlink points at, [`HeaderBackup::path_of`] — with the
//!    model's identity (device, inode), its length, its data offset and the XXH3-64 of its
//!    whole old header region, the record itself checksummed and given the model's mode —
//!    written to a temporary, synced, and linked to its name only if no backup exists
//!    ([`AtomicFile::commit_new`]): the backup exists only once it is complete, and never
//!    replaces another's;
//! 2. [`overwrite_runs`]: the new bytes are written over those blocks and the model is synced
//!    (`fdatasync`);
//! 3. [`HeaderBackup::remove`]: the backup is removed and its directory synced.
//!
//! [`rewrite_header_in_place`] runs them in order, under an exclusive advisory lock on the
//! model ([`sipllm_streaming::lock`]: a second editor is refused, readers wait) and after checking, under
//! that lock, that the model's header is still the one the new header was planned from (a
//! concurrent edit that finished first is never silently undone). If step 2 fails it writes
//! the old bytes back itself and removes the backup ([`InPlaceErrorKind::RolledBack`]); if
//! that fails too, the backup stays ([`InPlaceErrorKind::Torn`]).
//!
//! A crash before step 1 completes leaves the model untouched (and at most a stray
//! temporary). A crash after it leaves the backup: [`HeaderBackup::pending`] tells a caller
//! that the model's header may be torn, and [`recover`] checks the backup — its checksum, the
//! model's identity and length, and that its blocks put over the model's current header give
//! exactly the recorded header hash — **before writing anything**, then writes the old bytes
//! back, checks the header region again, re-opens the model (strict profile) and only then
//! removes the backup.
//! Recovery is an undo: the old header, which was valid, comes back. Tensor data is never
//! touched.
//!
//! # The backup's layout
//!
//! Little-endian: [`MAGIC`] (`SIPLLMHB`), `u32` [`VERSION`] (2), `u32` run count, `u64` model
//! length, `u64` device and `u64` inode of the model (version 2 only), `u64` data offset (the
//! old header region's length), `u64` XXH3-64 of the old `[0, data_offset)`; per run `u64`
//! offset, `u64` length and the old bytes; then `u64` XXH3-64 of everything before it.
//! [`recover`] also reads version 1 (no identity).
//!
//! ```
//! use sipllm_edit::in_place::{BLOCK, changed_runs};
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

use sipllm_streaming::lock::ExclusiveLock;
use sipllm_streaming::{Backend, FileBacking, GgufFile, OpenOptions, StreamError, StreamErrorKind};

pub use crate::error::BackupDefect;
use crate::error::{InPlaceError, InPlaceErrorKind, WriteError};
use crate::identity::{self, FileId};
use crate::input::InputError;
use crate::write::AtomicFile;

/// The first 8 bytes of a header backup.
pub const MAGIC: &[u8; 8] = b"SIPLLMHB";

/// The backup layout's version.
pub const VERSION: u32 = 2;

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
    /// The backup's path for `model`: `.NAME.header-backup` in the model's directory (by
    /// name alone: see [`path_of`](Self::path_of) for the path a model's backup really has).
    pub fn path_for(model: &Path) -> PathBuf {
        let mut name = OsString::from(".");
        name.push(model.file_name().unwrap_or_default());
        name.push(".header-backup");
        model.with_file_name(name)
    }

    /// The backup's path for the file `model` names: [`path_for`](Self::path_for) of the path
    /// with its symlinks followed ([`identity::resolve`]), so an edit through a link and one
    /// through the real path share one backup.
    pub fn path_of(model: &Path) -> PathBuf {
        HeaderBackup::path_for(&identity::resolve(model))
    }

    /// The backup's path when `model` has one: an in-place rewrite was interrupted, so the
    /// model's header may be half-written until [`recover`] restores it.
    pub fn pending(model: &Path) -> Option<PathBuf> {
        let path = HeaderBackup::path_of(model);
        std::fs::symlink_metadata(&path).is_ok().then_some(path)
    }

    /// Step 1: saves the `runs` of `old_header` (the model's current `[0, data_offset)`) and
    /// what [`recover`] needs to check a restore, as the backup of `model` (open as `file`,
    /// `model_len` bytes long). The record is written to a temporary beside the model, given
    /// the model's permissions, synced and linked to its name: it exists only once complete.
    ///
    /// # Errors
    ///
    /// [`InPlaceErrorKind::Pending`] when the model already has a backup (it is kept);
    /// [`InPlaceErrorKind::BackupWrite`] when the backup cannot be written (the model is not
    /// touched), or when a run lies outside `old_header`.
    pub fn write(
        model: &Path,
        file: &File,
        model_len: u64,
        old_header: &[u8],
        runs: &[Range<usize>],
    ) -> Result<HeaderBackup, InPlaceError> {
        let path = HeaderBackup::path_of(model);
        let fail = |source| {
            InPlaceError::with_backup(
                model.to_path_buf(),
                path.clone(),
                InPlaceErrorKind::BackupWrite { source },
            )
        };
        let meta = file.metadata().map_err(fail)?;
        let id = FileId::of_metadata(&meta);
        let record = encode(model_len, &id, old_header, runs).map_err(fail)?;
        let tmp = AtomicFile::create(&path).map_err(fail)?;
        // The backup holds the model's header: it is as private as the model (its permission
        // bits; no set-id or sticky bits).
        tmp.file().set_permissions(backup_permissions(&meta)).map_err(fail)?;
        tmp.file().write_all_at(&record, 0).map_err(fail)?;
        match tmp.commit_new() {
            Ok(()) => Ok(HeaderBackup { model: model.to_path_buf(), path }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(InPlaceError::with_backup(model.to_path_buf(), path, InPlaceErrorKind::Pending))
            }
            Err(e) => Err(fail(e)),
        }
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
    /// [`InPlaceErrorKind::BackupRemove`] when the file cannot be removed.
    pub fn remove(self) -> Result<(), InPlaceError> {
        self.remove_after(false)
    }

    fn remove_after(self, recovered: bool) -> Result<(), InPlaceError> {
        remove_file(&self.path).map_err(|source| {
            InPlaceError::with_backup(
                self.model.clone(),
                self.path.clone(),
                InPlaceErrorKind::BackupRemove { recovered, source },
            )
        })
    }
}

/// The model's read/write/execute permission bits, for its backup.
fn backup_permissions(model: &std::fs::Metadata) -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(model.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        model.permissions()
    }
}

fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)?;
    // Best effort, as for any rename: some file systems cannot sync a directory.
    crate::write::sync_dir(path);
    Ok(())
}

fn u64_of(n: usize) -> io::Result<u64> {
    u64::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length overflows"))
}

/// The backup record (see the module docs).
fn encode(
    model_len: u64,
    id: &FileId,
    old_header: &[u8],
    runs: &[Range<usize>],
) -> io::Result<Vec<u8>> {
    let invalid = |msg: &str| io::Error::new(io::ErrorKind::InvalidInput, msg.to_owned());
    let count = u32::try_from(runs.len()).map_err(|_| invalid("too many runs"))?;
    let mut rec = Vec::new();
    rec.extend_from_slice(MAGIC);
    rec.extend_from_slice(&VERSION.to_le_bytes());
    rec.extend_from_slice(&count.to_le_bytes());
    rec.extend_from_slice(&model_len.to_le_bytes());
    let (dev, ino) = id.dev_ino();
    rec.extend_from_slice(&dev.to_le_bytes());
    rec.extend_from_slice(&ino.to_le_bytes());
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
    /// `(device, inode)` of the model (version 2; `None` in a version 1 record).
    id: Option<(u64, u64)>,
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
    let u32_ = |b: &[u8]| b.try_into().ok().map(u32::from_le_bytes);
    let u64_ = |b: &[u8]| b.try_into().ok().map(u64::from_le_bytes);
    if take(8)? != MAGIC {
        return None;
    }
    let version = u32_(take(4)?)?;
    if !(1..=VERSION).contains(&version) {
        return None;
    }
    let count = u32_(take(4)?)?;
    let model_len = u64_(take(8)?)?;
    let id = if version >= 2 { Some((u64_(take(8)?)?, u64_(take(8)?)?)) } else { None };
    let data_offset = u64_(take(8)?)?;
    let header_hash = u64_(take(8)?)?;
    let mut runs = Vec::new();
    for _ in 0..count {
        let offset = u64_(take(8)?)?;
        let len = usize::try_from(u64_(take(8)?)?).ok()?;
        runs.push((offset, take(len)?));
    }
    (at == body.len()).then_some(Record { model_len, id, data_offset, header_hash, runs })
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
/// [`WriteErrorKind::Write`](crate::WriteErrorKind::Write) with the offset of the failed write (0 for the sync). The model may
/// then hold a mix of old and new blocks: [`rewrite_header_in_place`] writes the old bytes
/// back, or leaves the backup for [`recover`].
pub fn overwrite_runs(
    file: &File,
    path: &Path,
    header: &[u8],
    runs: &[Range<usize>],
) -> Result<(), InPlaceError> {
    write_runs(file, header, runs).map_err(|(offset, source)| {
        InPlaceError::from(WriteError::write(path.to_path_buf(), offset, source))
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
/// beside the file it names); `old_header` must be the model's current bytes
/// `[0, old_header.len())` and `new_header` the replacement, of the same length. Equal headers
/// write nothing (the stats then have no runs).
///
/// First an exclusive advisory lock is taken on `file` ([`sipllm_streaming::lock`]) and, under it, the
/// model's bytes are compared with `old_header`: a header another process rewrote since it was
/// read is refused, so a concurrent edit is never lost. The lock is released on return; a
/// caller that checks the result under it takes an [`ExclusiveLock`] itself and calls
/// [`rewrite_header_locked`].
///
/// # Errors
///
/// - [`InPlaceErrorKind::Length`]: the headers' lengths differ; nothing was written;
/// - [`StreamErrorKind::Locked`]: another process holds a lock on the model (an in-place edit,
///   or a reader); nothing was written;
/// - [`StreamErrorKind::Open`]: the model's length cannot be read; nothing was written;
/// - [`InPlaceErrorKind::FileTooShort`]: the model is shorter than the header; nothing was
///   written;
/// - [`InPlaceErrorKind::Changed`]: the model's header is not `old_header` (any more);
///   nothing was written;
/// - [`InPlaceErrorKind::Pending`]: the model has a backup already (an interrupted
///   rewrite); nothing was written;
/// - [`InPlaceErrorKind::BackupWrite`]: the backup could not be written; the model was not
///   changed;
/// - [`InPlaceErrorKind::RolledBack`]: writing the new blocks failed and the old ones were
///   written back (the backup is removed);
/// - [`InPlaceErrorKind::Torn`]: writing the new blocks failed and so did writing the old
///   ones back: the header may be torn and the backup is kept for [`recover`];
/// - [`InPlaceErrorKind::BackupRemove`]: the new header is complete and synced, but the
///   backup could not be removed.
pub fn rewrite_header_in_place(
    file: &File,
    path: &Path,
    old_header: &[u8],
    new_header: &[u8],
) -> Result<InPlaceStats, InPlaceError> {
    if old_header == new_header {
        return Ok(InPlaceStats {
            header_len: u64_of(new_header.len()).unwrap_or(u64::MAX),
            ..InPlaceStats::default()
        });
    }
    let lock = ExclusiveLock::try_new(file, path)?;
    rewrite_header_locked(&lock, old_header, new_header)
}

/// [`rewrite_header_in_place`] under a lock the caller holds (and releases when it is done
/// with the file: after its own check of the rewritten header, say).
///
/// # Errors
///
/// As [`rewrite_header_in_place`].
pub fn rewrite_header_locked(
    lock: &ExclusiveLock<'_>,
    old_header: &[u8],
    new_header: &[u8],
) -> Result<InPlaceStats, InPlaceError> {
    let (file, path) = (lock.file(), lock.path());
    let old_len = u64_of(old_header.len()).unwrap_or(u64::MAX);
    let header_len = u64_of(new_header.len()).unwrap_or(u64::MAX);
    if old_len != header_len {
        return Err(InPlaceError::at(
            path.to_path_buf(),
            InPlaceErrorKind::Length { old: old_len, new: header_len },
        ));
    }
    let runs = changed_runs(old_header, new_header);
    let rewritten = runs.iter().fold(0u64, |n, r| n.saturating_add(r.len() as u64));
    let stats = InPlaceStats { header_len, runs, rewritten };
    if stats.runs.is_empty() {
        return Ok(stats);
    }
    let model_len = file
        .metadata()
        .map_err(|source| StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source }))?
        .len();
    if model_len < header_len {
        return Err(InPlaceError::at(
            path.to_path_buf(),
            InPlaceErrorKind::FileTooShort { len: model_len, header_len },
        ));
    }
    if !file_starts_with(file, old_header)
        .map_err(|e| StreamError::read(Some(path), 0, old_len, e))?
    {
        return Err(InPlaceError::at(path.to_path_buf(), InPlaceErrorKind::Changed));
    }
    if let Some(backup) = HeaderBackup::pending(path) {
        return Err(InPlaceError::with_backup(
            path.to_path_buf(),
            backup,
            InPlaceErrorKind::Pending,
        ));
    }
    let backup = HeaderBackup::write(path, file, model_len, old_header, &stats.runs)?;
    if let Err((offset, source)) = write_runs(file, new_header, &stats.runs) {
        // Put the old bytes back right away; if that fails too, the backup stays.
        let backup_path = backup.path.clone();
        if write_runs(file, old_header, &stats.runs).is_ok() && backup.remove().is_ok() {
            return Err(InPlaceError::at(
                path.to_path_buf(),
                InPlaceErrorKind::RolledBack { offset, source },
            ));
        }
        return Err(InPlaceError::with_backup(
            path.to_path_buf(),
            backup_path,
            InPlaceErrorKind::Torn { offset, source },
        ));
    }
    backup.remove()?;
    Ok(stats)
}

/// Bytes compared per read when checking the model still holds the old header.
const COMPARE_CHUNK: usize = 64 << 10;

/// True when `file` begins with `expected` (compared through one bounded buffer).
fn file_starts_with(file: &File, expected: &[u8]) -> io::Result<bool> {
    let mut buf = vec![0u8; COMPARE_CHUNK.min(expected.len())];
    for (i, want) in expected.chunks(COMPARE_CHUNK).enumerate() {
        let got = buf.get_mut(..want.len()).unwrap_or_default();
        file.read_exact_at(got, u64_of(i.saturating_mul(COMPARE_CHUNK))?)?;
        if got != want {
            return Ok(false);
        }
    }
    Ok(true)
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

/// Undoes an interrupted in-place rewrite of `model`: under an exclusive lock on the model,
/// checks its backup — the record's checksum, the model's identity and length, runs inside the
/// recorded header region, and that the backup's blocks put over the model's **current**
/// header give the recorded header hash — all before writing anything; then writes the old
/// bytes back and syncs, checks that the whole header region hashes to the recorded value,
/// re-opens the model (strict profile, through the locked descriptor), and only then removes
/// the backup.
///
/// The backup is looked up beside the file `model` names ([`HeaderBackup::path_of`]): an edit
/// interrupted through a symlink is recovered through the real path and the other way round.
/// A backup that fails a check before the write is kept and the model not written; one that
/// fails a check after it is kept too.
///
/// # Errors
///
/// - [`InPlaceErrorKind::NoBackup`]: `model` has no backup;
/// - [`InPlaceErrorKind::BackupRead`]: the backup cannot be read;
/// - [`InPlaceErrorKind::BadBackup`]: the backup is not a record `sipllm` wrote, is
///   damaged, or describes a header past the model (the model is not written);
/// - [`StreamErrorKind::Open`]: the model cannot be opened for writing;
/// - [`StreamErrorKind::Locked`]: another process holds a lock on the model;
/// - [`InPlaceErrorKind::OtherFile`]: the backup was made for another file (device and
///   inode differ); the model is not written;
/// - [`InPlaceErrorKind::WrongModel`]: the model's length is not the recorded one (it is
///   not written);
/// - [`StreamErrorKind::Io`] / [`StreamErrorKind::UnexpectedEof`]: reading the header region failed;
/// - [`InPlaceErrorKind::BackupMismatch`]: the backup's blocks over the current header would
///   not give the recorded header; the model is not written;
/// - [`InPlaceErrorKind::RestoreWrite`]: writing or syncing the old bytes failed;
/// - [`InPlaceErrorKind::RestoreMismatch`]: after the write, the header region does not hash
///   to the recorded value;
/// - [`InPlaceErrorKind::RestoredInvalid`]: the restored model does not open;
/// - [`InPlaceErrorKind::BackupRemove`]: all is restored and checked, but the backup could
///   not be removed.
pub fn recover(model: &Path) -> Result<RecoverStats, InPlaceError> {
    let backup = HeaderBackup::path_of(model);
    let path = || model.to_path_buf();
    let bad = |defect| {
        InPlaceError::with_backup(path(), backup.clone(), InPlaceErrorKind::BadBackup { defect })
    };
    let read_err = |source| {
        InPlaceError::with_backup(path(), backup.clone(), InPlaceErrorKind::BackupRead { source })
    };
    let max_header = Limits::default().max_header_bytes;
    // Capped and regular files only, opened without blocking: a FIFO or `/dev/zero` put
    // there is refused at once, not read forever.
    let bytes = match crate::input::read_file_capped(&backup, max_header.saturating_mul(2)) {
        Ok(bytes) => bytes,
        Err(InputError::TooLarge { .. }) => return Err(bad(BackupDefect::TooLarge)),
        Err(InputError::Read(e)) => match e.into_kind() {
            StreamErrorKind::NotAFile { .. } => return Err(bad(BackupDefect::NotAFile)),
            StreamErrorKind::Open { source } if source.kind() == io::ErrorKind::NotFound => {
                return Err(InPlaceError::with_backup(path(), backup, InPlaceErrorKind::NoBackup));
            }
            StreamErrorKind::Open { source } | StreamErrorKind::Io { source, .. } => {
                return Err(read_err(source));
            }
            kind => return Err(read_err(io::Error::other(StreamError::from(kind)))),
        },
        Err(e) => return Err(read_err(io::Error::other(e))),
    };
    let rec = decode(&bytes).ok_or_else(|| bad(BackupDefect::NotARecord))?;
    let open_err = |source| StreamError::at(path(), StreamErrorKind::Open { source });
    // Not a plain open: that blocks forever on a FIFO without a writer.
    let file = sipllm_streaming::open_regular(model, true)?;
    let _lock = ExclusiveLock::try_new(&file, model)?;
    let model_meta = file.metadata().map_err(open_err)?;
    if rec.id.is_some_and(|id| id != FileId::of_metadata(&model_meta).dev_ino()) {
        return Err(InPlaceError::with_backup(path(), backup, InPlaceErrorKind::OtherFile));
    }
    let len = model_meta.len();
    if len != rec.model_len {
        return Err(InPlaceError::with_backup(
            path(),
            backup,
            InPlaceErrorKind::WrongModel { len, recorded_len: rec.model_len },
        ));
    }
    if rec.data_offset > len.min(max_header) {
        return Err(bad(BackupDefect::HeaderPastEnd));
    }
    let mut restored = 0u64;
    for (offset, old) in &rec.runs {
        let n = old.len() as u64;
        match offset.checked_add(n) {
            Some(end) if end <= rec.data_offset => restored = restored.saturating_add(n),
            _ => return Err(bad(BackupDefect::RunPastHeader)),
        }
    }
    let n = usize::try_from(rec.data_offset).map_err(|_| {
        StreamError::from(StreamErrorKind::TooLarge {
            what: "header region".to_owned(),
            bytes: rec.data_offset,
        })
    })?;
    let read_header = |header: &mut [u8]| {
        file.read_exact_at(header, 0)
            .map_err(|e| StreamError::read(Some(model), 0, rec.data_offset, e))
    };
    // What the restore would give, computed before a byte is written: a backup that does not
    // belong to this state of the file (a stale one, or another file's) is refused here.
    let mut header = vec![0u8; n];
    read_header(&mut header)?;
    for (offset, old) in &rec.runs {
        let at = usize::try_from(*offset).unwrap_or(usize::MAX);
        if let Some(dst) = at.checked_add(old.len()).and_then(|end| header.get_mut(at..end)) {
            dst.copy_from_slice(old);
        }
    }
    if xxh3_64(&header) != rec.header_hash {
        return Err(InPlaceError::with_backup(path(), backup, InPlaceErrorKind::BackupMismatch));
    }
    let restore_err = |source| {
        InPlaceError::with_backup(path(), backup.clone(), InPlaceErrorKind::RestoreWrite { source })
    };
    for (offset, old) in &rec.runs {
        file.write_all_at(old, *offset).map_err(restore_err)?;
    }
    file.sync_data().map_err(restore_err)?;
    read_header(&mut header)?;
    if xxh3_64(&header) != rec.header_hash {
        return Err(InPlaceError::with_backup(path(), backup, InPlaceErrorKind::RestoreMismatch));
    }
    drop(header);
    // Through the locked descriptor: opening the path anew would wait for our own lock.
    let reopened = file
        .try_clone()
        .map_err(open_err)
        .and_then(|clone| FileBacking::from_file(clone, model, Backend::Pread))
        .and_then(|backing| GgufFile::from_backing(backing, &OpenOptions::default()));
    if let Err(e) = reopened {
        return Err(InPlaceError::with_backup(
            path(),
            backup,
            InPlaceErrorKind::RestoredInvalid { source: Box::new(e) },
        ));
    }
    let runs = rec.runs.len();
    HeaderBackup { model: path(), path: backup.clone() }.remove_after(true)?;
    Ok(RecoverStats { backup, runs, restored })
}
