//! Advisory locks between readers and the in-place header writer (see docs/writer.md, "Who
//! may read or write while an edit runs").
//!
//! * **Readers** ([`FileBacking::open`](crate::FileBacking::open), so every
//!   [`Model::open`](crate::Model::open), `GgufFile::open`, each shard of a split set) take a
//!   **shared** lock before they read a byte and hold it while the file is open. If an
//!   in-place rewrite holds the file, they wait for it, at most [`READ_WAIT`], so they never
//!   parse a half-rewritten header.
//! * **The in-place writer** (the write side's `rewrite_header_in_place`,
//!   `in_place::recover`) takes an **exclusive** lock without
//!   waiting: a second editor, or an editor while a reader has the file open, is refused
//!   ([`StreamErrorKind::Locked`]) instead of racing it.
//!
//! The locks are `flock(2)` locks: they belong to the open file (every duplicate of the
//! descriptor shares them) and vanish when it is closed, or when the process dies, so a crash
//! never leaves a stale lock. They are advisory: programs that do not take them (another
//! tool, `cp`, `dd`) are not stopped. A file system without `flock` support is read and
//! written unlocked (the writer's re-check of the header still refuses a lost update there).
//! Without Unix, locking is a no-op.
//!
//! Locks of two opens of one file conflict within one process too: a program that has a model
//! open through [`FileBacking::open`](crate::FileBacking::open) and rewrites its header in
//! place through another descriptor is refused; it closes the reader first (or rewrites
//! through a [`FileBacking::from_file`](crate::FileBacking::from_file) of the writer's
//! descriptor, which takes no lock).

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{StreamError, StreamErrorKind};

/// How long a reader waits for an in-place rewrite to release the file.
pub const READ_WAIT: Duration = Duration::from_secs(10);

/// How often a waiting reader tries again.
const POLL: Duration = Duration::from_millis(10);

/// Takes a shared lock on `file` (opened at `path`), waiting up to `wait` while an exclusive
/// one is held.
///
/// # Errors
///
/// [`StreamErrorKind::Locked`] (`exclusive: false`) when the exclusive lock is still held after
/// `wait`.
pub fn lock_shared(file: &File, path: &Path, wait: Duration) -> Result<(), StreamError> {
    let start = Instant::now();
    loop {
        match try_flock(file, false) {
            Attempt::Locked | Attempt::Unsupported => return Ok(()),
            Attempt::Busy if start.elapsed() < wait => std::thread::sleep(POLL),
            Attempt::Busy => {
                return Err(StreamError::at(
                    path.to_path_buf(),
                    StreamErrorKind::Locked { exclusive: false, wait },
                ));
            }
        }
    }
}

/// Takes an exclusive lock on `file` (opened at `path`) without waiting. Holding it already
/// (through this descriptor or a duplicate) succeeds.
///
/// # Errors
///
/// [`StreamErrorKind::Locked`] (`exclusive: true`) when another open file holds a lock on it (an
/// in-place edit, or a reader).
pub fn try_lock_exclusive(file: &File, path: &Path) -> Result<(), StreamError> {
    match try_flock(file, true) {
        Attempt::Locked | Attempt::Unsupported => Ok(()),
        Attempt::Busy => Err(StreamError::at(
            path.to_path_buf(),
            StreamErrorKind::Locked { exclusive: true, wait: Duration::ZERO },
        )),
    }
}

/// An exclusive lock on an open file, released when dropped (or when the file is closed).
///
/// Taking it through a descriptor that holds it already (or a duplicate of one) succeeds, and
/// dropping either releases it: hold one guard per open file.
#[derive(Debug)]
pub struct ExclusiveLock<'a> {
    file: &'a File,
    path: &'a Path,
}

impl<'a> ExclusiveLock<'a> {
    /// [`try_lock_exclusive`], as a guard.
    ///
    /// # Errors
    ///
    /// [`StreamErrorKind::Locked`] (`exclusive: true`).
    pub fn try_new(file: &'a File, path: &'a Path) -> Result<ExclusiveLock<'a>, StreamError> {
        try_lock_exclusive(file, path)?;
        Ok(ExclusiveLock { file, path })
    }

    /// The locked file.
    pub fn file(&self) -> &'a File {
        self.file
    }

    /// Its path.
    pub fn path(&self) -> &'a Path {
        self.path
    }
}

impl Drop for ExclusiveLock<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            let _ = rustix::fs::flock(self.file, rustix::fs::FlockOperation::Unlock);
        }
    }
}

/// Opens `path` read-only with a shared lock ([`lock_shared`], waiting at most
/// [`READ_WAIT`]), or read-write (`write`) with an exclusive one ([`try_lock_exclusive`]):
/// the file a command writes a model from, locked before a byte of it is read. Parse it with
/// [`Model::from_file`](crate::Model::from_file).
///
/// # Errors
///
/// [`StreamErrorKind::Open`], [`StreamErrorKind::NotAFile`], [`StreamErrorKind::Locked`].
pub fn open_locked(path: &Path, write: bool) -> Result<File, StreamError> {
    // Not `File::open`: that blocks forever on a FIFO without a writer.
    let file = crate::input::open_regular(path, write)?;
    if write {
        try_lock_exclusive(&file, path)?;
    } else {
        lock_shared(&file, path, READ_WAIT)?;
    }
    Ok(file)
}

// Without Unix, `flock` is unsupported: only that variant is made.
#[cfg_attr(not(unix), allow(dead_code))]
enum Attempt {
    Locked,
    Busy,
    Unsupported,
}

#[cfg(unix)]
fn try_flock(file: &File, exclusive: bool) -> Attempt {
    use rustix::fs::{FlockOperation, flock};
    let op = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    loop {
        match flock(file, op) {
            Ok(()) => return Attempt::Locked,
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::WOULDBLOCK) => return Attempt::Busy,
            // ENOLCK, EOPNOTSUPP, EINVAL: this file system has no flock.
            Err(_) => return Attempt::Unsupported,
        }
    }
}

#[cfg(not(unix))]
fn try_flock(_file: &File, _exclusive: bool) -> Attempt {
    Attempt::Unsupported
}
