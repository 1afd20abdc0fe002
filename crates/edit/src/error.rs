//! The write side's errors, one type per area, each variant with a stable code and a
//! `&'static str` help through [`Kind`] (the trait the parsers' findings and the read side's
//! [`StreamError`] implement):
//!
//! * [`WriteError`] (`write::…`): creating, writing and committing an output file, the
//!   header or tensor data given to a builder, an output that is its input.
//! * [`SplitError`] (`split::…`): what splitting or merging refuses, or a write of it failing.
//! * [`InPlaceError`] (`in_place::…`): the crash-safe header rewrite and its recovery.
//! * [`EditError`](crate::edit::EditError) (`edit::…`) and
//!   [`ConvertError`](crate::convert::ConvertError) (`convert::…`) live with their modules,
//!   and [`InputError`](crate::InputError) (`input::…`) with [`read_capped`](crate::read_capped).
//!
//! Reading a model (the source of a copy, the file re-opened for a check) fails with the
//! read side's [`StreamError`], kept whole inside each type's `Read` variant: its code and
//! help are the read side's.
//!
//! As on the read side, a [`WriteError`]'s or [`SplitError`]'s message does not repeat the
//! file it is about: that is context (`path()`), rendered around it by the caller. An
//! [`InPlaceError`] names the model and its backup, since which of the two is in what state
//! is what it says.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::Kind;
use sipllm_gguf::GgmlType;
use sipllm_streaming::StreamError;

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

/// Writing an output file failed or was refused; the destination was left as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The output file could not be created.
    #[error("cannot create a temporary file beside it: {source}")]
    Create {
        /// The destination.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the output failed.
    #[error("writing at offset {offset}: {source}")]
    Write {
        /// The destination.
        path: PathBuf,
        /// Offset of the failed write.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header to write is invalid.
    #[error("cannot write the header: {source}")]
    Header {
        /// The writer's reason.
        source: sipllm_gguf::writer::WriteError,
    },
    /// The `.llmw` writer refused the model or failed to write it (shown as the writer's
    /// error; [`path`](StreamError::path) gives the destination).
    #[error("{source}")]
    Llmw {
        /// The destination.
        path: PathBuf,
        /// The `.llmw` writer's error (I/O, or a model the format cannot hold).
        source: sipllm_llmw::WriteError,
    },
    /// No data was given for a tensor.
    #[error("no data given for tensor {tensor:?}")]
    MissingData {
        /// The tensor.
        tensor: String,
    },
    /// A tensor's data has the wrong length.
    #[error("tensor {tensor:?} needs {expected} bytes of data but {got} were given")]
    DataLength {
        /// The tensor.
        tensor: String,
        /// Bytes the tensor's type and dims call for.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// A writer was given an output that is one of its inputs (by file identity: a symlink or
    /// hard link to the input is the input); nothing was written.
    #[error(
        "{what} {} is {}: writing it would destroy the input; nothing was written",
        output.display(),
        which_input(input, output)
    )]
    OutputIsInput {
        /// The input.
        input: PathBuf,
        /// The output given.
        output: PathBuf,
        /// What the output is (`the manifest`, `the output`, `shard 2`).
        what: &'static str,
    },
    /// Reading a source of the write (a model, a tensor's bytes) failed: the read side's
    /// error, unchanged.
    #[error(transparent)]
    Read(#[from] StreamError),
}

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

/// Splitting a model into a set, or merging a set, failed or was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// The file to split is itself a shard of a set.
    #[error(
        "the file is already shard {} of {count} of a split set: merge the set first",
        u32::from(*split_no) + 1
    )]
    AlreadySplit {
        /// The file.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split that cannot be done as asked (a zero limit, more shards than `split.count`
    /// can number, an empty shard).
    #[error("{reason}")]
    Refused {
        /// The input file.
        path: PathBuf,
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
        /// The input file.
        path: PathBuf,
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

/// The in-place header rewrite, or its recovery, failed or was refused. Every variant says
/// what state the model is in (unchanged, restored, or recoverable from the kept backup).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InPlaceError {
    /// An in-place header rewrite was given a new header of another length than the old one.
    #[error(
        "{}: the new header has {new} bytes but the old one {old}: an in-place rewrite keeps the \
         header's length",
        path.display()
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
        "{} is {len} bytes, but it was {recorded_len} when {} was made: it is not the file the \
         backup belongs to, so it was not changed",
        path.display(),
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
        "{} is {len} bytes, shorter than the {header_len}-byte header to rewrite in place: it \
         was not changed",
        path.display()
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

fn which_input(input: &Path, output: &Path) -> String {
    if input == output {
        "the input itself".to_owned()
    } else {
        format!("the input {} (another name for it)", input.display())
    }
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

impl Kind for WriteError {
    fn code(&self) -> &'static str {
        match self {
            WriteError::Create { .. } => "write::create",
            WriteError::Write { .. } => "write::io",
            WriteError::Header { .. } => "write::header",
            WriteError::Llmw { .. } => "write::llmw",
            WriteError::MissingData { .. } => "write::missing_data",
            WriteError::DataLength { .. } => "write::data_length",
            WriteError::OutputIsInput { .. } => "write::output_is_input",
            WriteError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            WriteError::Create { .. } => {
                "the destination's directory must exist and be \
                writable (the new file is written beside the destination, then renamed)."
            }
            WriteError::Write { .. } => {
                "the disk may be full or failing; the destination was \
                left untouched."
            }
            WriteError::Header { .. } => {
                "the metadata or tensor list to write is invalid; \
                nothing was written."
            }
            WriteError::Llmw { .. } => {
                "the disk may be full or failing, a tensor's \
                source could not be read, or the model has what .llmw cannot hold; the \
                destination was left untouched."
            }
            WriteError::MissingData { .. } | WriteError::DataLength { .. } => {
                "give every \
                tensor exactly its byte size of data (type and dims decide it)."
            }
            WriteError::OutputIsInput { .. } => {
                "give an output path that is not the input: a \
                symlink or a hard link to the input names the input too."
            }
            WriteError::Read(e) => e.help(),
        }
    }
}

impl Kind for SplitError {
    fn code(&self) -> &'static str {
        match self {
            SplitError::AlreadySplit { .. } => "split::already_split",
            SplitError::Refused { .. } => "split::refused",
            SplitError::Busy { .. } => "split::busy",
            SplitError::Write(e) => e.code(),
            SplitError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SplitError::AlreadySplit { .. } => {
                "merge the set into one file (`sipllm merge`) and split that."
            }
            SplitError::Refused { reason: SplitRefusal::UnknownSize { .. }, .. } => {
                "this tensor type is newer than this writer; a set cannot be planned without \
                 every tensor's byte size."
            }
            SplitError::Refused { .. } => {
                "choose a limit that gives every shard at least one tensor and at most 65,535 \
                 shards."
            }
            SplitError::Busy { .. } => {
                "wait for the other split into this directory to end, or write the set into \
                 another directory (`--out-dir DIR`)."
            }
            SplitError::Write(e) => e.help(),
            SplitError::Read(e) => e.help(),
        }
    }
}

impl Kind for InPlaceError {
    fn code(&self) -> &'static str {
        match self {
            InPlaceError::Length { .. } => "in_place::length_mismatch",
            InPlaceError::BackupWrite { .. } => "in_place::backup_write",
            InPlaceError::RolledBack { .. } => "in_place::rolled_back",
            InPlaceError::Torn { .. } => "in_place::torn",
            InPlaceError::BackupRemove { .. } => "in_place::backup_remove",
            InPlaceError::NoBackup { .. } => "in_place::no_backup",
            InPlaceError::BackupRead { .. } => "in_place::backup_read",
            InPlaceError::BadBackup { .. } => "in_place::bad_backup",
            InPlaceError::WrongModel { .. } => "in_place::wrong_model",
            InPlaceError::RestoreWrite { .. } => "in_place::restore_write",
            InPlaceError::RestoreMismatch { .. } => "in_place::restore_mismatch",
            InPlaceError::RestoredInvalid { .. } => "in_place::restored_invalid",
            InPlaceError::Changed { .. } => "in_place::changed",
            InPlaceError::FileTooShort { .. } => "in_place::file_too_short",
            InPlaceError::Pending { .. } => "in_place::pending",
            InPlaceError::OtherFile { .. } => "in_place::other_file",
            InPlaceError::BackupMismatch { .. } => "in_place::backup_mismatch",
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

macro_rules! inherent {
    ($($ty:ident),*) => {$(
        impl $ty {
            /// The stable code ([`Kind::code`], without importing the trait).
            pub fn code(&self) -> &'static str {
                Kind::code(self)
            }

            /// What to check or change ([`Kind::help`], without importing the trait).
            pub fn help(&self) -> &'static str {
                Kind::help(self)
            }
        }
    )*};
}

inherent!(WriteError, SplitError, InPlaceError);

impl WriteError {
    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WriteError::Create { path, .. }
            | WriteError::Write { path, .. }
            | WriteError::Llmw { path, .. }
            | WriteError::OutputIsInput { output: path, .. } => Some(path),
            WriteError::Read(e) => e.path(),
            _ => None,
        }
    }
}

impl SplitError {
    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SplitError::AlreadySplit { path, .. }
            | SplitError::Refused { path, .. }
            | SplitError::Busy { path, .. } => Some(path),
            SplitError::Write(e) => e.path(),
            SplitError::Read(e) => e.path(),
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
            InPlaceError::Write(WriteError::Write { offset, .. }) => Some(*offset),
            InPlaceError::Read(e) => e.offset(),
            _ => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::InputError;
    use sipllm_streaming::FileKind;

    fn boxed(e: impl Kind + 'static) -> Box<dyn Kind> {
        Box::new(e)
    }

    #[test]
    fn every_variant_has_a_distinct_stable_code_and_help() {
        let io = || io::Error::from(io::ErrorKind::PermissionDenied);
        let cases: Vec<(Box<dyn Kind>, &str)> = vec![
            (boxed(WriteError::Create { path: "m.gguf".into(), source: io() }), "write::create"),
            (
                boxed(WriteError::Write { path: "m.gguf".into(), offset: 5, source: io() }),
                "write::io",
            ),
            (
                boxed(WriteError::Header { source: sipllm_gguf::writer::WriteError::BadAlignment }),
                "write::header",
            ),
            (
                boxed(WriteError::Llmw {
                    path: "m.llmw".into(),
                    source: sipllm_llmw::WriteError::EmptyKey,
                }),
                "write::llmw",
            ),
            (boxed(WriteError::MissingData { tensor: "t".into() }), "write::missing_data"),
            (
                boxed(WriteError::DataLength { tensor: "t".into(), expected: 4, got: 5 }),
                "write::data_length",
            ),
            (
                boxed(SplitError::AlreadySplit { path: "m.gguf".into(), split_no: 0, count: 2 }),
                "split::already_split",
            ),
            (
                boxed(SplitError::Refused {
                    path: "m.gguf".into(),
                    reason: SplitRefusal::NoTensors,
                }),
                "split::refused",
            ),
            (boxed(SplitError::Busy { path: "m.gguf".into(), dir: "out".into() }), "split::busy"),
            (
                boxed(InPlaceError::Length { path: "m.gguf".into(), old: 576, new: 608 }),
                "in_place::length_mismatch",
            ),
            (
                boxed(InPlaceError::BackupWrite {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                }),
                "in_place::backup_write",
            ),
            (
                boxed(InPlaceError::RolledBack { path: "m.gguf".into(), offset: 0, source: io() }),
                "in_place::rolled_back",
            ),
            (
                boxed(InPlaceError::Torn {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    offset: 4096,
                    source: io(),
                }),
                "in_place::torn",
            ),
            (
                boxed(InPlaceError::BackupRemove {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    recovered: false,
                    source: io(),
                }),
                "in_place::backup_remove",
            ),
            (
                boxed(InPlaceError::NoBackup {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                }),
                "in_place::no_backup",
            ),
            (
                boxed(InPlaceError::BackupRead {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                }),
                "in_place::backup_read",
            ),
            (
                boxed(InPlaceError::BadBackup {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    defect: BackupDefect::NotARecord,
                }),
                "in_place::bad_backup",
            ),
            (
                boxed(InPlaceError::WrongModel {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    len: 2432,
                    recorded_len: 2433,
                }),
                "in_place::wrong_model",
            ),
            (
                boxed(InPlaceError::RestoreWrite {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                }),
                "in_place::restore_write",
            ),
            (
                boxed(InPlaceError::RestoreMismatch {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                }),
                "in_place::restore_mismatch",
            ),
            (
                boxed(InPlaceError::RestoredInvalid {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: Box::new(StreamError::TooShort { path: Some("m.gguf".into()), len: 0 }),
                }),
                "in_place::restored_invalid",
            ),
            (
                boxed(InputError::TooLarge { path: "/dev/zero".into(), max: 1 << 26 }),
                "input::too_large",
            ),
            (
                boxed(InputError::EmptyStream { path: "t.fifo".into(), kind: FileKind::Fifo }),
                "input::empty_stream",
            ),
            (
                boxed(WriteError::OutputIsInput {
                    input: "m.gguf".into(),
                    output: "link.gguf".into(),
                    what: "the manifest",
                }),
                "write::output_is_input",
            ),
            (boxed(InPlaceError::Changed { path: "m.gguf".into() }), "in_place::changed"),
            (
                boxed(InPlaceError::FileTooShort {
                    path: "m.gguf".into(),
                    len: 10,
                    header_len: 64,
                }),
                "in_place::file_too_short",
            ),
            (
                boxed(InPlaceError::Pending {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                }),
                "in_place::pending",
            ),
            (
                boxed(InPlaceError::OtherFile {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                }),
                "in_place::other_file",
            ),
            (
                boxed(InPlaceError::BackupMismatch {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                }),
                "in_place::backup_mismatch",
            ),
        ];
        let mut codes: Vec<&str> = cases.iter().map(|(e, _)| e.code()).collect();
        for (err, code) in &cases {
            assert_eq!(err.code(), *code);
            assert!(!err.help().is_empty(), "{code}");
            assert!(!err.to_string().is_empty(), "{code}");
        }
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), cases.len(), "codes are distinct");
        let split = |code: &str| {
            cases.iter().map(|(e, _)| e).find(|e| e.code() == code).map(|e| e.to_string())
        };
        assert_eq!(
            split("write::output_is_input").unwrap(),
            "the manifest link.gguf is the input m.gguf (another name for it): writing it would \
             destroy the input; nothing was written"
        );
    }

    #[test]
    fn in_place_errors_name_the_model_and_the_backup() {
        let model = PathBuf::from("m.gguf");
        let backup = PathBuf::from(".m.gguf.header-backup");
        let bad = |defect| InPlaceError::BadBackup {
            path: model.clone(),
            backup: backup.clone(),
            defect,
        };
        assert_eq!(
            bad(BackupDefect::NotARecord).to_string(),
            ".m.gguf.header-backup is not a header backup sipllm wrote (or it is damaged); m.gguf \
             was not changed"
        );
        assert_eq!(
            bad(BackupDefect::TooLarge).to_string(),
            ".m.gguf.header-backup is too large to be a header backup; m.gguf was not changed"
        );
        assert_eq!(
            bad(BackupDefect::HeaderPastEnd).to_string(),
            ".m.gguf.header-backup is damaged (its header would end past m.gguf or the header \
             limit); m.gguf was not changed"
        );
        assert_eq!(
            bad(BackupDefect::RunPastHeader).to_string(),
            ".m.gguf.header-backup is damaged (a run past the header); m.gguf was not changed"
        );
        let removed = |recovered| InPlaceError::BackupRemove {
            path: model.clone(),
            backup: backup.clone(),
            recovered,
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert_eq!(
            removed(false).to_string(),
            "the new header is written, but the backup .m.gguf.header-backup could not be \
             removed: permission denied; remove it by hand"
        );
        assert_eq!(
            removed(true).to_string(),
            "m.gguf is restored, but the backup .m.gguf.header-backup could not be removed: \
             permission denied"
        );
        let wrong = InPlaceError::WrongModel {
            path: model.clone(),
            backup: backup.clone(),
            len: 2432,
            recorded_len: 2433,
        };
        assert_eq!(
            wrong.to_string(),
            "m.gguf is 2432 bytes, but it was 2433 when .m.gguf.header-backup was made: it is \
             not the file the backup belongs to, so it was not changed"
        );
        assert_eq!(wrong.path(), Some(model.as_path()));
        assert_eq!(wrong.offset(), None);
        let torn = InPlaceError::Torn {
            path: model.clone(),
            backup: backup.clone(),
            offset: 4096,
            source: io::Error::from(io::ErrorKind::StorageFull),
        };
        assert_eq!(torn.offset(), Some(4096));
        assert!(torn.help().contains("sipllm edit --recover"), "{}", torn.help());
        let invalid = InPlaceError::RestoredInvalid {
            path: model.clone(),
            backup,
            source: Box::new(StreamError::TooShort { path: None, len: 0 }),
        };
        let chained = std::error::Error::source(&invalid).map(|s| s.to_string());
        assert!(chained.is_some_and(|s| s.contains("too short")));
        assert!(invalid.to_string().ends_with("the backup .m.gguf.header-backup is kept"));
    }
}
