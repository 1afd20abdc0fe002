//! [`InPlaceError`]: the crash-safe header rewrite and its recovery.

use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::{Kind, group};
use sipllm_streaming::StreamError;

use super::WriteError;
use super::backup_defect::{BackupDefect, bad_backup};

/// The in-place header rewrite, or its recovery, failed or was refused: the model and its
/// header backup, each once ([`path`](Self::path), [`backup`](Self::backup)), around what
/// ([`kind`](Self::kind)). Every kind says what state the model is in (unchanged, restored,
/// or recoverable from the kept backup), so the message names both files.
///
/// One pointer wide, like the read side's [`StreamError`].
#[derive(Debug)]
pub struct InPlaceError(Box<InPlaceInner>);

/// The model, its backup and the kind, behind [`InPlaceError`]'s one pointer.
#[derive(Debug)]
struct InPlaceInner {
    model: Option<PathBuf>,
    backup: Option<PathBuf>,
    kind: InPlaceErrorKind,
}

/// What went wrong rewriting a header in place or recovering it; the model and its backup
/// are the [`InPlaceError`] around it.
#[derive(Debug)]
#[non_exhaustive]
pub enum InPlaceErrorKind {
    /// An in-place header rewrite was given a new header of another length than the old one.
    Length {
        /// The old header region's length.
        old: u64,
        /// The new header's length.
        new: u64,
    },
    /// The header backup of an in-place rewrite could not be written; the model was not
    /// changed.
    BackupWrite {
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the new header blocks failed, and the old blocks were written back (the backup
    /// is removed): the model is as it was.
    RolledBack {
        /// Offset of the failed write (0 for the sync).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the new header blocks failed and so did writing the old ones back: the header
    /// may be half-written, and the backup is kept for recovery.
    Torn {
        /// Offset of the failed write (0 for the sync).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header backup could not be removed after the header was written (or restored).
    BackupRemove {
        /// True after a recovery, false after a rewrite.
        recovered: bool,
        /// The operating system's error.
        source: io::Error,
    },
    /// Recovery was asked for, but the model has no header backup.
    NoBackup,
    /// The header backup exists but cannot be read.
    BackupRead {
        /// The operating system's error.
        source: io::Error,
    },
    /// The header backup cannot be used; the model was not written.
    BadBackup {
        /// What is wrong with it.
        defect: BackupDefect,
    },
    /// The model's length is not the one recorded in its header backup: the backup belongs to
    /// another file; the model was not written.
    WrongModel {
        /// The model's length now.
        len: u64,
        /// The length the backup recorded.
        recorded_len: u64,
    },
    /// Writing the backup's bytes over the model's header (or syncing them) failed.
    RestoreWrite {
        /// The operating system's error.
        source: io::Error,
    },
    /// After the backup's bytes were written back, the header region does not hash to the
    /// value the backup recorded.
    RestoreMismatch,
    /// The restored header checks out against the backup, but the model does not open.
    RestoredInvalid {
        /// Why the model does not open.
        source: Box<StreamError>,
    },
    /// The file's header is no longer the one the in-place rewrite was planned from: another
    /// process changed it after it was read. Nothing was written.
    Changed,
    /// The file is shorter than the header an in-place rewrite was given; nothing was written.
    FileTooShort {
        /// The file's length.
        len: u64,
        /// The header's length.
        header_len: u64,
    },
    /// An in-place rewrite was asked for while the model has a header backup (an interrupted
    /// earlier rewrite); nothing was written.
    Pending,
    /// The header backup was made for another file (its device and inode differ: the model was
    /// replaced or copied since); the model was not written.
    OtherFile,
    /// Restoring the backup's blocks over the model's current header would not give the
    /// header the backup recorded (its hash), so the backup does not belong to this state of
    /// the file; the model was not written.
    BackupMismatch,
    /// Writing the header backup or the model failed before anything of the model changed.
    Write(WriteError),
    /// Opening, locking or reading the model failed (the read side's error: `Locked` when
    /// another process holds it).
    Read(StreamError),
}

impl InPlaceErrorKind {
    /// The message, naming `model` and `backup` (or, when unknown, saying "the model" and
    /// "its header backup"): the one formatter of the kind and of the error around it.
    fn describe(
        &self,
        model: Option<&Path>,
        backup: Option<&Path>,
        f: &mut std::fmt::Formatter<'_>,
    ) -> std::fmt::Result {
        let m = model.map_or_else(|| "the model".to_owned(), |p| p.display().to_string());
        let b = backup.map_or_else(|| "its header backup".to_owned(), |p| p.display().to_string());
        match self {
            InPlaceErrorKind::Length { old, new } => write!(
                f,
                "{m}: the new header has {} bytes but the old one {}: an in-place rewrite keeps \
                 the header's length",
                group(*new),
                group(*old)
            ),
            InPlaceErrorKind::BackupWrite { source } => {
                write!(
                    f,
                    "cannot write the header backup beside {m}: {source}; {m} was not changed"
                )
            }
            InPlaceErrorKind::RolledBack { source, .. } => {
                write!(f, "writing the new header failed: {source}; the old header was put back")
            }
            InPlaceErrorKind::Torn { source, .. } => write!(
                f,
                "writing the new header failed: {source}; the header of {m} may be damaged, and \
                 {b} holds its old bytes"
            ),
            InPlaceErrorKind::BackupRemove { recovered, source } => {
                if *recovered {
                    write!(f, "{m} is restored, but the backup {b} could not be removed: {source}")
                } else {
                    write!(
                        f,
                        "the new header is written, but the backup {b} could not be removed: \
                         {source}; remove it by hand"
                    )
                }
            }
            InPlaceErrorKind::NoBackup => {
                write!(f, "no header backup for {m} ({b} does not exist): nothing to recover")
            }
            InPlaceErrorKind::BackupRead { source } => write!(f, "cannot read {b}: {source}"),
            InPlaceErrorKind::BadBackup { defect } => f.write_str(&bad_backup(&m, &b, *defect)),
            InPlaceErrorKind::WrongModel { len, recorded_len } => write!(
                f,
                "{m} is {} bytes, but it was {} when {b} was made: it is not the file the backup \
                 belongs to, so it was not changed",
                group(*len),
                group(*recorded_len)
            ),
            InPlaceErrorKind::RestoreWrite { source } => write!(
                f,
                "writing the backup over {m}'s header failed: {source}; the backup {b} is kept"
            ),
            InPlaceErrorKind::RestoreMismatch => write!(
                f,
                "after writing the backup back, {m}'s header does not match the one the backup \
                 recorded; the backup {b} is kept"
            ),
            InPlaceErrorKind::RestoredInvalid { source } => write!(
                f,
                "the header is restored, but {m} still does not open ({source}); the backup {b} \
                 is kept"
            ),
            InPlaceErrorKind::Changed => write!(
                f,
                "{m}'s header changed after it was read (another edit finished meanwhile?): the \
                 new header was planned from the old one, so it was not written"
            ),
            InPlaceErrorKind::FileTooShort { len, header_len } => write!(
                f,
                "{m} is {} bytes, shorter than the {}-byte header to rewrite in place: it was \
                 not changed",
                group(*len),
                group(*header_len)
            ),
            InPlaceErrorKind::Pending => write!(
                f,
                "{m} has a header backup, {b}, left by an interrupted in-place rewrite: recover \
                 it first; nothing was written"
            ),
            InPlaceErrorKind::OtherFile => write!(
                f,
                "{b} was made for another file than {m} (the model was replaced or copied \
                 since): it was not changed"
            ),
            InPlaceErrorKind::BackupMismatch => write!(
                f,
                "{b} does not fit {m}'s current header: restoring it would not give the header \
                 it recorded, so {m} was not changed"
            ),
            InPlaceErrorKind::Write(e) => std::fmt::Display::fmt(e, f),
            InPlaceErrorKind::Read(e) => std::fmt::Display::fmt(e, f),
        }
    }

    /// The absolute byte offset of a failed write, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            InPlaceErrorKind::RolledBack { offset, .. } | InPlaceErrorKind::Torn { offset, .. } => {
                Some(*offset)
            }
            InPlaceErrorKind::Write(e) => e.offset(),
            InPlaceErrorKind::Read(e) => e.offset(),
            InPlaceErrorKind::Length { .. }
            | InPlaceErrorKind::BackupWrite { .. }
            | InPlaceErrorKind::BackupRemove { .. }
            | InPlaceErrorKind::NoBackup
            | InPlaceErrorKind::BackupRead { .. }
            | InPlaceErrorKind::BadBackup { .. }
            | InPlaceErrorKind::WrongModel { .. }
            | InPlaceErrorKind::RestoreWrite { .. }
            | InPlaceErrorKind::RestoreMismatch
            | InPlaceErrorKind::RestoredInvalid { .. }
            | InPlaceErrorKind::Changed
            | InPlaceErrorKind::FileTooShort { .. }
            | InPlaceErrorKind::Pending
            | InPlaceErrorKind::OtherFile
            | InPlaceErrorKind::BackupMismatch => None,
        }
    }
}

impl std::fmt::Display for InPlaceErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.describe(None, None, f)
    }
}

impl std::fmt::Display for InPlaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.kind.describe(self.0.model.as_deref(), self.0.backup.as_deref(), f)
    }
}

impl std::error::Error for InPlaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            InPlaceErrorKind::BackupWrite { source }
            | InPlaceErrorKind::RolledBack { source, .. }
            | InPlaceErrorKind::Torn { source, .. }
            | InPlaceErrorKind::BackupRemove { source, .. }
            | InPlaceErrorKind::BackupRead { source }
            | InPlaceErrorKind::RestoreWrite { source } => Some(source),
            InPlaceErrorKind::RestoredInvalid { source } => Some(&**source),
            // Transparent, as the messages are the inner errors'.
            InPlaceErrorKind::Write(e) => std::error::Error::source(e),
            InPlaceErrorKind::Read(e) => std::error::Error::source(e),
            InPlaceErrorKind::Length { .. }
            | InPlaceErrorKind::NoBackup
            | InPlaceErrorKind::BadBackup { .. }
            | InPlaceErrorKind::WrongModel { .. }
            | InPlaceErrorKind::RestoreMismatch
            | InPlaceErrorKind::Changed
            | InPlaceErrorKind::FileTooShort { .. }
            | InPlaceErrorKind::Pending
            | InPlaceErrorKind::OtherFile
            | InPlaceErrorKind::BackupMismatch => None,
        }
    }
}

impl From<WriteError> for InPlaceError {
    fn from(e: WriteError) -> InPlaceError {
        InPlaceError::new(None, None, InPlaceErrorKind::Write(e))
    }
}

impl From<StreamError> for InPlaceError {
    fn from(e: StreamError) -> InPlaceError {
        InPlaceError::new(None, None, InPlaceErrorKind::Read(e))
    }
}

impl InPlaceError {
    fn new(model: Option<PathBuf>, backup: Option<PathBuf>, kind: InPlaceErrorKind) -> Self {
        InPlaceError(Box::new(InPlaceInner { model, backup, kind }))
    }

    /// `kind`, happening to the model at `model` (no backup involved).
    pub fn at(model: impl Into<PathBuf>, kind: InPlaceErrorKind) -> InPlaceError {
        InPlaceError::new(Some(model.into()), None, kind)
    }

    /// `kind`, happening to the model at `model` and its header backup at `backup`.
    pub fn with_backup(
        model: impl Into<PathBuf>,
        backup: impl Into<PathBuf>,
        kind: InPlaceErrorKind,
    ) -> InPlaceError {
        InPlaceError::new(Some(model.into()), Some(backup.into()), kind)
    }

    /// The absolute byte offset of a failed write, when there is one.
    pub fn offset(&self) -> Option<u64> {
        self.0.kind.offset()
    }

    /// The model the error concerns: this error's, or the inner write or read error's.
    pub fn path(&self) -> Option<&Path> {
        match (&self.0.model, &self.0.kind) {
            (Some(model), _) => Some(model),
            (None, InPlaceErrorKind::Write(e)) => e.path(),
            (None, InPlaceErrorKind::Read(e)) => e.path(),
            (None, _) => None,
        }
    }

    /// The model's header backup the error concerns, when one does.
    pub fn backup(&self) -> Option<&Path> {
        self.0.backup.as_deref()
    }

    /// The read side's error, for [`InPlaceErrorKind::Read`].
    pub fn read_error(&self) -> Option<&StreamError> {
        // One kind holds a read error.
        if let InPlaceErrorKind::Read(e) = &self.0.kind { Some(e) } else { None }
    }

    /// The write error, for [`InPlaceErrorKind::Write`].
    pub fn write_error(&self) -> Option<&WriteError> {
        // One kind holds a write error.
        if let InPlaceErrorKind::Write(e) = &self.0.kind { Some(e) } else { None }
    }
}

impl Kind for InPlaceErrorKind {
    fn code(&self) -> &'static str {
        match self {
            InPlaceErrorKind::Length { .. } => "edit::in_place::length_mismatch",
            InPlaceErrorKind::BackupWrite { .. } => "edit::in_place::backup_write",
            InPlaceErrorKind::RolledBack { .. } => "edit::in_place::rolled_back",
            InPlaceErrorKind::Torn { .. } => "edit::in_place::torn",
            InPlaceErrorKind::BackupRemove { .. } => "edit::in_place::backup_remove",
            InPlaceErrorKind::NoBackup => "edit::in_place::no_backup",
            InPlaceErrorKind::BackupRead { .. } => "edit::in_place::backup_read",
            InPlaceErrorKind::BadBackup { .. } => "edit::in_place::bad_backup",
            InPlaceErrorKind::WrongModel { .. } => "edit::in_place::wrong_model",
            InPlaceErrorKind::RestoreWrite { .. } => "edit::in_place::restore_write",
            InPlaceErrorKind::RestoreMismatch => "edit::in_place::restore_mismatch",
            InPlaceErrorKind::RestoredInvalid { .. } => "edit::in_place::restored_invalid",
            InPlaceErrorKind::Changed => "edit::in_place::changed",
            InPlaceErrorKind::FileTooShort { .. } => "edit::in_place::file_too_short",
            InPlaceErrorKind::Pending => "edit::in_place::pending",
            InPlaceErrorKind::OtherFile => "edit::in_place::other_file",
            InPlaceErrorKind::BackupMismatch => "edit::in_place::backup_mismatch",
            InPlaceErrorKind::Write(e) => e.code(),
            InPlaceErrorKind::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            InPlaceErrorKind::Length { .. } => {
                "plan a new header of exactly the old header \
                region's length (`GgufWriter::pad_to`), or write a new file; nothing was written."
            }
            InPlaceErrorKind::BackupWrite { .. } => {
                "the model's directory must be writable \
                and have room for the backup (the old bytes of the changed 4 KiB blocks); the \
                model was not changed."
            }
            InPlaceErrorKind::RolledBack { .. } => {
                "the disk may be full or failing; the old \
                header was written back and synced, so the model is as it was."
            }
            InPlaceErrorKind::Torn { .. } => {
                "the header may be half-written; the backup \
                beside the model holds the old bytes: restore them with `in_place::recover` \
                (`sipllm edit --recover FILE`). The tensor data was never touched."
            }
            InPlaceErrorKind::BackupRemove { .. } => {
                "the model's header is complete and \
                synced; delete the backup by hand (while it exists, `sipllm` refuses to edit the \
                model)."
            }
            InPlaceErrorKind::NoBackup => {
                "only a model whose in-place header rewrite \
                was interrupted has a backup (`.NAME.header-backup` beside it): there is nothing \
                to undo."
            }
            InPlaceErrorKind::BackupRead { .. } => {
                "check the backup file's permissions; the \
                model was not changed."
            }
            InPlaceErrorKind::BadBackup { .. } => {
                "the backup was not written by sipllm, or it \
                is damaged; the model was not changed. If the model validates (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
            }
            InPlaceErrorKind::WrongModel { .. } => {
                "the model was replaced or resized since the \
                backup was made, so the backup's bytes do not belong to it: if the model \
                validates, delete the backup."
            }
            InPlaceErrorKind::RestoreWrite { .. } => {
                "the disk may be full or failing; the \
                backup is kept, so recovery can run again once the cause is fixed."
            }
            InPlaceErrorKind::RestoreMismatch => {
                "the model's header region was \
                changed outside the blocks the backup holds; the backup is kept. Restore the \
                model from a copy."
            }
            InPlaceErrorKind::RestoredInvalid { .. } => {
                "the header the backup recorded is \
                back and matches its hash, but does not open under the strict profile (was the \
                model valid before the edit?); the backup is kept. Check the model with `sipllm \
                validate FILE` and restore it from a copy if needed."
            }
            InPlaceErrorKind::Changed => {
                "run the edit again: it is planned from the \
                header as it is now."
            }
            InPlaceErrorKind::FileTooShort { .. } => {
                "the header given is not this file's: \
                plan the new header from the file's own header region."
            }
            InPlaceErrorKind::Pending => {
                "run `sipllm edit --recover FILE` to restore \
                the header from the backup, then edit again."
            }
            InPlaceErrorKind::OtherFile => {
                "the backup belongs to the file it was made \
                for; if this model is intact (`sipllm validate FILE`), delete the backup. If it \
                is damaged, restore it from a copy."
            }
            InPlaceErrorKind::BackupMismatch => {
                "the model's header was changed since \
                the backup was made (another edit?). If the model is intact (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
            }
            InPlaceErrorKind::Write(e) => e.help(),
            InPlaceErrorKind::Read(e) => e.help(),
        }
    }
}

wrapper!(InPlaceError => InPlaceErrorKind);
