//! [`InPlaceError`]: the crash-safe header rewrite and its recovery.

use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::{Kind, group};
use sipllm_streaming::StreamError;

use super::WriteError;

/// What is wrong with a header backup that [`recover`](crate::in_place::recover) refuses to use
/// ([`InPlaceError::BadBackup`]).
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
    /// Not a regular file (a FIFO, a device, a socket): refused before reading a byte, so a
    /// FIFO never hangs recovery and `/dev/zero` is never read without bound.
    NotAFile,
}

/// The in-place header rewrite, or its recovery, failed or was refused. Every variant says
/// what state the model is in (unchanged, restored, or recoverable from the kept backup).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InPlaceError {
    /// An in-place header rewrite was given a new header of another length than the old one.
    #[error(
        "{}: the new header has {} bytes but the old one {}: an in-place rewrite keeps the \
         header's length",
        path.display(),
        group(*new),
        group(*old)
    )]
    Length {
        /// The model.
        path: PathBuf,
        /// The old header region's length.
        old: u64,
        /// The new header's length.
        new: u64,
    },
    /// The header backup of an in-place rewrite could not be written; the model was not
    /// changed.
    #[error(
        "cannot write the header backup beside {}: {source}; {} was not changed",
        path.display(),
        path.display()
    )]
    BackupWrite {
        /// The model.
        path: PathBuf,
        /// The backup's path.
        backup: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the new header blocks failed, and the old blocks were written back (the backup
    /// is removed): the model is as it was.
    #[error("writing the new header failed: {source}; the old header was put back")]
    RolledBack {
        /// The model.
        path: PathBuf,
        /// Offset of the failed write (0 for the sync).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the new header blocks failed and so did writing the old ones back: the header
    /// may be half-written, and the backup is kept for recovery.
    #[error(
        "writing the new header failed: {source}; the header of {} may be damaged, and {} holds \
         its old bytes",
        path.display(),
        backup.display()
    )]
    Torn {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// Offset of the failed write (0 for the sync).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header backup could not be removed after the header was written (or restored).
    #[error(
        "{}, but the backup {} could not be removed: {source}{}",
        if *recovered {
            format!("{} is restored", path.display())
        } else {
            "the new header is written".to_owned()
        },
        backup.display(),
        if *recovered { "" } else { "; remove it by hand" }
    )]
    BackupRemove {
        /// The model.
        path: PathBuf,
        /// The backup.
        backup: PathBuf,
        /// True after a recovery, false after a rewrite.
        recovered: bool,
        /// The operating system's error.
        source: io::Error,
    },
    /// Recovery was asked for, but the model has no header backup.
    #[error(
        "no header backup for {} ({} does not exist): nothing to recover",
        path.display(),
        backup.display()
    )]
    NoBackup {
        /// The model.
        path: PathBuf,
        /// Where the backup would be.
        backup: PathBuf,
    },
    /// The header backup exists but cannot be read.
    #[error("cannot read {}: {source}", backup.display())]
    BackupRead {
        /// The model.
        path: PathBuf,
        /// The backup.
        backup: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header backup cannot be used; the model was not written.
    #[error("{}", bad_backup(path, backup, *defect))]
    BadBackup {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// What is wrong with it.
        defect: BackupDefect,
    },
    /// The model's length is not the one recorded in its header backup: the backup belongs to
    /// another file; the model was not written.
    #[error(
        "{} is {} bytes, but it was {} when {} was made: it is not the file the backup \
         belongs to, so it was not changed",
        path.display(),
        group(*len),
        group(*recorded_len),
        backup.display()
    )]
    WrongModel {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// The model's length now.
        len: u64,
        /// The length the backup recorded.
        recorded_len: u64,
    },
    /// Writing the backup's bytes over the model's header (or syncing them) failed.
    #[error(
        "writing the backup over {}'s header failed: {source}; the backup {} is kept",
        path.display(),
        backup.display()
    )]
    RestoreWrite {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// After the backup's bytes were written back, the header region does not hash to the
    /// value the backup recorded.
    #[error(
        "after writing the backup back, {}'s header does not match the one the backup recorded; \
         the backup {} is kept",
        path.display(),
        backup.display()
    )]
    RestoreMismatch {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
    },
    /// The restored header checks out against the backup, but the model does not open.
    #[error(
        "the header is restored, but {} still does not open ({source}); the backup {} is kept",
        path.display(),
        backup.display()
    )]
    RestoredInvalid {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// Why the model does not open.
        source: Box<StreamError>,
    },
    /// The file's header is no longer the one the in-place rewrite was planned from: another
    /// process changed it after it was read. Nothing was written.
    #[error(
        "{}'s header changed after it was read (another edit finished meanwhile?): the new \
         header was planned from the old one, so it was not written",
        path.display()
    )]
    Changed {
        /// The model.
        path: PathBuf,
    },
    /// The file is shorter than the header an in-place rewrite was given; nothing was written.
    #[error(
        "{} is {} bytes, shorter than the {}-byte header to rewrite in place: it was not \
         changed",
        path.display(),
        group(*len),
        group(*header_len)
    )]
    FileTooShort {
        /// The model.
        path: PathBuf,
        /// The file's length.
        len: u64,
        /// The header's length.
        header_len: u64,
    },
    /// An in-place rewrite was asked for while the model has a header backup (an interrupted
    /// earlier rewrite); nothing was written.
    #[error(
        "{} has a header backup, {}, left by an interrupted in-place rewrite: recover it first; \
         nothing was written",
        path.display(),
        backup.display()
    )]
    Pending {
        /// The model.
        path: PathBuf,
        /// The backup.
        backup: PathBuf,
    },
    /// The header backup was made for another file (its device and inode differ: the model was
    /// replaced or copied since); the model was not written.
    #[error(
        "{} was made for another file than {} (the model was replaced or copied since): it was \
         not changed",
        backup.display(),
        path.display()
    )]
    OtherFile {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
    },
    /// Restoring the backup's blocks over the model's current header would not give the
    /// header the backup recorded (its hash), so the backup does not belong to this state of
    /// the file; the model was not written.
    #[error(
        "{} does not fit {}'s current header: restoring it would not give the header it \
         recorded, so {} was not changed",
        backup.display(),
        path.display(),
        path.display()
    )]
    BackupMismatch {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
    },
    /// Writing the header backup or the model failed before anything of the model changed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Opening, locking or reading the model failed (the read side's error: `Locked` when
    /// another process holds it).
    #[error(transparent)]
    Read(#[from] StreamError),
}

fn bad_backup(path: &Path, backup: &Path, defect: BackupDefect) -> String {
    let (b, m) = (backup.display(), path.display());
    match defect {
        BackupDefect::TooLarge => {
            format!("{b} is too large to be a header backup; {m} was not changed")
        }
        BackupDefect::HeaderPastEnd => format!(
            "{b} is damaged (its header would end past {m} or the header limit); {m} was not \
             changed"
        ),
        BackupDefect::RunPastHeader => {
            format!("{b} is damaged (a run past the header); {m} was not changed")
        }
        BackupDefect::NotARecord => format!(
            "{b} is not a header backup sipllm wrote (or it is damaged); {m} was not changed"
        ),
        BackupDefect::NotAFile => format!(
            "{b} is not a regular file (a FIFO, a device or a socket), so it is no header \
             backup; {m} was not changed"
        ),
    }
}

impl Kind for InPlaceError {
    fn code(&self) -> &'static str {
        match self {
            InPlaceError::Length { .. } => "edit::in_place::length_mismatch",
            InPlaceError::BackupWrite { .. } => "edit::in_place::backup_write",
            InPlaceError::RolledBack { .. } => "edit::in_place::rolled_back",
            InPlaceError::Torn { .. } => "edit::in_place::torn",
            InPlaceError::BackupRemove { .. } => "edit::in_place::backup_remove",
            InPlaceError::NoBackup { .. } => "edit::in_place::no_backup",
            InPlaceError::BackupRead { .. } => "edit::in_place::backup_read",
            InPlaceError::BadBackup { .. } => "edit::in_place::bad_backup",
            InPlaceError::WrongModel { .. } => "edit::in_place::wrong_model",
            InPlaceError::RestoreWrite { .. } => "edit::in_place::restore_write",
            InPlaceError::RestoreMismatch { .. } => "edit::in_place::restore_mismatch",
            InPlaceError::RestoredInvalid { .. } => "edit::in_place::restored_invalid",
            InPlaceError::Changed { .. } => "edit::in_place::changed",
            InPlaceError::FileTooShort { .. } => "edit::in_place::file_too_short",
            InPlaceError::Pending { .. } => "edit::in_place::pending",
            InPlaceError::OtherFile { .. } => "edit::in_place::other_file",
            InPlaceError::BackupMismatch { .. } => "edit::in_place::backup_mismatch",
            InPlaceError::Write(e) => e.code(),
            InPlaceError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            InPlaceError::Length { .. } => {
                "plan a new header of exactly the old header \
                region's length (`GgufWriter::pad_to`), or write a new file; nothing was written."
            }
            InPlaceError::BackupWrite { .. } => {
                "the model's directory must be writable \
                and have room for the backup (the old bytes of the changed 4 KiB blocks); the \
                model was not changed."
            }
            InPlaceError::RolledBack { .. } => {
                "the disk may be full or failing; the old \
                header was written back and synced, so the model is as it was."
            }
            InPlaceError::Torn { .. } => {
                "the header may be half-written; the backup \
                beside the model holds the old bytes: restore them with `in_place::recover` \
                (`sipllm edit --recover FILE`). The tensor data was never touched."
            }
            InPlaceError::BackupRemove { .. } => {
                "the model's header is complete and \
                synced; delete the backup by hand (while it exists, `sipllm` refuses to edit the \
                model)."
            }
            InPlaceError::NoBackup { .. } => {
                "only a model whose in-place header rewrite \
                was interrupted has a backup (`.NAME.header-backup` beside it): there is nothing \
                to undo."
            }
            InPlaceError::BackupRead { .. } => {
                "check the backup file's permissions; the \
                model was not changed."
            }
            InPlaceError::BadBackup { .. } => {
                "the backup was not written by sipllm, or it \
                is damaged; the model was not changed. If the model validates (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
            }
            InPlaceError::WrongModel { .. } => {
                "the model was replaced or resized since the \
                backup was made, so the backup's bytes do not belong to it: if the model \
                validates, delete the backup."
            }
            InPlaceError::RestoreWrite { .. } => {
                "the disk may be full or failing; the \
                backup is kept, so recovery can run again once the cause is fixed."
            }
            InPlaceError::RestoreMismatch { .. } => {
                "the model's header region was \
                changed outside the blocks the backup holds; the backup is kept. Restore the \
                model from a copy."
            }
            InPlaceError::RestoredInvalid { .. } => {
                "the header the backup recorded is \
                back and matches its hash, but does not open under the strict profile (was the \
                model valid before the edit?); the backup is kept. Check the model with `sipllm \
                validate FILE` and restore it from a copy if needed."
            }
            InPlaceError::Changed { .. } => {
                "run the edit again: it is planned from the \
                header as it is now."
            }
            InPlaceError::FileTooShort { .. } => {
                "the header given is not this file's: \
                plan the new header from the file's own header region."
            }
            InPlaceError::Pending { .. } => {
                "run `sipllm edit --recover FILE` to restore \
                the header from the backup, then edit again."
            }
            InPlaceError::OtherFile { .. } => {
                "the backup belongs to the file it was made \
                for; if this model is intact (`sipllm validate FILE`), delete the backup. If it \
                is damaged, restore it from a copy."
            }
            InPlaceError::BackupMismatch { .. } => {
                "the model's header was changed since \
                the backup was made (another edit?). If the model is intact (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
            }
            InPlaceError::Write(e) => e.help(),
            InPlaceError::Read(e) => e.help(),
        }
    }
}

impl InPlaceError {
    /// The absolute byte offset of a failed write, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            InPlaceError::RolledBack { offset, .. } | InPlaceError::Torn { offset, .. } => {
                Some(*offset)
            }
            InPlaceError::Write(e) => e.offset(),
            InPlaceError::Read(e) => e.offset(),
            InPlaceError::Length { .. }
            | InPlaceError::BackupWrite { .. }
            | InPlaceError::BackupRemove { .. }
            | InPlaceError::NoBackup { .. }
            | InPlaceError::BackupRead { .. }
            | InPlaceError::BadBackup { .. }
            | InPlaceError::WrongModel { .. }
            | InPlaceError::RestoreWrite { .. }
            | InPlaceError::RestoreMismatch { .. }
            | InPlaceError::RestoredInvalid { .. }
            | InPlaceError::Changed { .. }
            | InPlaceError::FileTooShort { .. }
            | InPlaceError::Pending { .. }
            | InPlaceError::OtherFile { .. }
            | InPlaceError::BackupMismatch { .. } => None,
        }
    }

    /// The model the error concerns.
    pub fn path(&self) -> Option<&Path> {
        match self {
            InPlaceError::Write(e) => e.path(),
            InPlaceError::Read(e) => e.path(),
            InPlaceError::Length { path, .. }
            | InPlaceError::BackupWrite { path, .. }
            | InPlaceError::RolledBack { path, .. }
            | InPlaceError::Torn { path, .. }
            | InPlaceError::BackupRemove { path, .. }
            | InPlaceError::NoBackup { path, .. }
            | InPlaceError::BackupRead { path, .. }
            | InPlaceError::BadBackup { path, .. }
            | InPlaceError::WrongModel { path, .. }
            | InPlaceError::RestoreWrite { path, .. }
            | InPlaceError::RestoreMismatch { path, .. }
            | InPlaceError::RestoredInvalid { path, .. }
            | InPlaceError::Changed { path, .. }
            | InPlaceError::FileTooShort { path, .. }
            | InPlaceError::Pending { path, .. }
            | InPlaceError::OtherFile { path, .. }
            | InPlaceError::BackupMismatch { path, .. } => Some(path),
        }
    }
}
