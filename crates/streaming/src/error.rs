//! The crate's one error type.
//!
//! [`StreamError`] keeps a parser error intact ([`StreamError::Parse`] holds the
//! [`sipllm_gguf::Error`], [`StreamError::ParseLlmw`] the [`sipllm_llmw::Error`], each with its
//! offset, logical path, code and help) and adds what only an I/O layer knows: the file path,
//! the offset and length of a failed read, how many bytes were missing at the end of the file,
//! which format magic was found, which tensor or metadata key a request named. Every variant
//! has a stable [`code`](StreamError::code) (`stream::<area>::<name>`; a parse error keeps the
//! parser's `gguf::…` or `llmw::…` code) and a [`help`](StreamError::help) text.

use std::io;
use std::path::{Path, PathBuf};

use sipllm_gguf::GgmlType;

use crate::backing::ShortRead;
use crate::in_place::BackupDefect;
use crate::model::Format;

/// Everything that can go wrong opening a weight source or reading from it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The file could not be opened (or its size read, or mapped).
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The path names a FIFO, socket or device, not a regular file: opening it could block
    /// forever (a FIFO without a writer) and it has no size to bounds-check against.
    #[error("cannot open {}: it is {kind}, not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// An auxiliary input ([`read_capped`](crate::read_capped), e.g. `--set-file`) holds more
    /// than its cap; no more than `max + 1` bytes of it were read.
    #[error("{}: more than {max} bytes (reading stopped there)", path.display())]
    InputTooLarge {
        /// The input.
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// An auxiliary input that is a stream (a FIFO, a pipe, a device) ended before its first
    /// byte: a FIFO nobody has opened for writing reads as end-of-input at once.
    #[error("{}: {kind} that delivered no bytes (no writer?)", path.display())]
    InputEmptyStream {
        /// The input.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// A read failed with an I/O error.
    #[error("{}I/O error reading {len} bytes at offset {offset}: {source}", at(path))]
    Io {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// Absolute offset of the read.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The input ended before a read was complete (the file shrank after it was opened, or a
    /// source reported a length it does not have).
    #[error(
        "{}unexpected end of file: {missing} of the {len} bytes requested at offset {offset} \
         are missing (the input ends at byte {})",
        at(path),
        offset.saturating_add(len.saturating_sub(*missing))
    )]
    UnexpectedEof {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// Absolute offset of the read.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// Bytes that could not be read.
        missing: u64,
    },
    /// The GGUF header or tensor directory is invalid: the parser's error, unchanged.
    #[error("{}{source}", at(path))]
    Parse {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The parser's error (offset, logical path, code, help).
        source: sipllm_gguf::Error,
    },
    /// The `.llmw` header or tensor directory is invalid: the `.llmw` parser's error,
    /// unchanged.
    #[error("{}{source}", at(path))]
    ParseLlmw {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The parser's error (offset, logical path, code, help).
        source: sipllm_llmw::Error,
    },
    /// The first 4 bytes are not the magic of a format this crate reads.
    #[error(
        "{}not a model file: it starts with {} (\"{}\"), but a GGUF file starts with \"GGUF\" \
         (47 47 55 46) and a .llmw file with \"LLMW\" (4C 4C 4D 57)",
        at(path),
        hex(found),
        found.escape_ascii()
    )]
    UnknownMagic {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The 4 bytes found at offset 0.
        found: [u8; 4],
    },
    /// The input is shorter than a format magic (4 bytes), so its format cannot be known.
    #[error(
        "{}the file has {len} byte{}: too short for a model file, which starts with a 4-byte \
         magic (\"GGUF\" or \"LLMW\")",
        at(path),
        if *len == 1 { "" } else { "s" }
    )]
    TooShort {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// Its length in bytes (0 to 3).
        len: u64,
    },
    /// The destination buffer of a tensor read does not have the tensor's byte size.
    #[error("tensor {tensor:?} has {expected} bytes but the destination buffer has {got}")]
    SizeMismatch {
        /// The tensor's name.
        tensor: String,
        /// The tensor's byte size.
        expected: u64,
        /// The buffer's length.
        got: u64,
    },
    /// A positional read reaches outside the file.
    #[error(
        "{}a read of {len} bytes at offset {offset} reaches outside the file ({file_size} bytes)",
        at(path)
    )]
    OutOfBounds {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// Absolute offset requested.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// The size of the file.
        file_size: u64,
    },
    /// A tensor's data does not lie inside the file (checked when the source is opened).
    #[error(
        "{}tensor {tensor:?}: its {nbytes} bytes at offset {offset} end past the end of the file \
         ({file_size} bytes)",
        at(path)
    )]
    TensorOutOfBounds {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The first tensor (in directory order) that does not fit.
        tensor: String,
        /// Its absolute offset.
        offset: u64,
        /// Its byte size.
        nbytes: u64,
        /// The size of the file.
        file_size: u64,
    },
    /// A tensor read named a [`TensorInfo`](crate::TensorInfo) this source does not list.
    #[error("tensor {tensor:?} (at offset {offset}) is not a tensor of this source")]
    NotInSource {
        /// The name in the given info.
        tensor: String,
        /// The offset in the given info.
        offset: u64,
    },
    /// [`read_tensor`](crate::WeightSource::read_tensor) named a tensor this source does not
    /// have.
    #[error("no tensor named {name:?}")]
    TensorMissing {
        /// The name asked for.
        name: String,
    },
    /// The tensor's type has no defined byte size, so its bytes cannot be located.
    #[error("tensor {tensor:?}: the byte size of its type ({ggml_type}) is not known")]
    UnknownSize {
        /// The tensor's name.
        tensor: String,
        /// Its type.
        ggml_type: GgmlType,
    },
    /// A tensor's values cannot be computed from its bytes (unsupported type, or a size that
    /// is not whole blocks): the dequantizer's error, unchanged.
    #[error("tensor {tensor:?}: {source}")]
    Dequant {
        /// The tensor's name.
        tensor: String,
        /// The dequantizer's error (its code and help are kept).
        source: sipllm_quants::DequantError,
    },
    /// An element range of a values read lies outside the tensor, or the destination does
    /// not have the range's length.
    #[error(
        "tensor {tensor:?} has {count} elements: elements {start}..{end} into a buffer of \
         {got} values cannot be read"
    )]
    ElementRange {
        /// The tensor's name.
        tensor: String,
        /// First element requested.
        start: u64,
        /// One past the last element requested.
        end: u64,
        /// The tensor's element count.
        count: u64,
        /// The destination's length.
        got: u64,
    },
    /// A byte count does not fit this machine's address space (or could not be allocated).
    #[error("{what} of {bytes} bytes does not fit in memory")]
    TooLarge {
        /// What was to be held (e.g. `tensor "x"`, `header buffer`).
        what: String,
        /// The byte count.
        bytes: u64,
    },
    /// The output file could not be created.
    #[error("cannot create a temporary file for {}: {source}", path.display())]
    Create {
        /// The destination.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the output failed.
    #[error("writing {} at offset {offset}: {source}", path.display())]
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
    Writer {
        /// The writer's reason.
        source: sipllm_gguf::WriteError,
    },
    /// The `.llmw` writer refused the model or failed to write it (shown as the writer's
    /// error; [`path`](StreamError::path) gives the destination).
    #[error("{source}")]
    WriterLlmw {
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
    /// A metadata key is absent.
    #[error("metadata key {key:?} is missing")]
    MetaMissing {
        /// The key.
        key: String,
    },
    /// A metadata value has another type than the one asked for.
    #[error("metadata key {key:?}: expected {expected}, found {actual}")]
    MetaType {
        /// The key.
        key: String,
        /// The type asked for (e.g. `integer`).
        expected: &'static str,
        /// The type found (e.g. `float`).
        actual: &'static str,
    },
    /// A metadata integer does not fit the type asked for.
    #[error("metadata key {key:?}{}: value {value} does not fit {target}", elem(*index))]
    MetaRange {
        /// The key.
        key: String,
        /// For arrays, the element index.
        index: Option<u64>,
        /// The stored value.
        value: i128,
        /// The Rust type asked for (e.g. `u32`).
        target: &'static str,
    },
    /// A metadata string is not valid UTF-8 (only files parsed leniently contain these).
    #[error("metadata key {key:?}{}: the string is not valid UTF-8", elem(*index))]
    MetaUtf8 {
        /// The key.
        key: String,
        /// For arrays, the element index.
        index: Option<u64>,
    },
    /// A shard of a split set does not exist (or is not among the files given).
    #[error(
        "{}: shard {} of {count} of the split set (split.no = {split_no}) is missing{}",
        set.display(),
        u32::from(*split_no) + 1,
        missing_where(missing)
    )]
    SplitMissingShard {
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
        "{}: the file name says shard {name_number} of {name_count}, but the metadata says \
         shard {} of {count} (split.no = {split_no}, split.count = {count})",
        path.display(),
        u32::from(*split_no) + 1
    )]
    SplitNameMismatch {
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
        "{}: the file is shard {} of {count} of a split set (split.no = {split_no}), but its \
         name does not end in -NNNNN-of-NNNNN.gguf, so the other shards cannot be found",
        path.display(),
        u32::from(*split_no) + 1
    )]
    SplitBadName {
        /// The shard.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split key has another value in this shard than in the first shard.
    #[error("{}{key} is {found} here, but {expected} in {}", at(path), shown(reference))]
    SplitKeyMismatch {
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
    #[error(
        "{}metadata key {key:?} has type {found}, but split files store it as {expected}",
        at(path)
    )]
    SplitKeyType {
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
    #[error("{}metadata key {key:?} is missing, but every shard of a split set has it", at(path))]
    SplitKeyMissing {
        /// The shard.
        path: Option<PathBuf>,
        /// The key.
        key: &'static str,
    },
    /// A shard's `split.no` is not below `split.count`.
    #[error("{}split.no is {split_no}, but split.count is {count}: it must be below it", at(path))]
    SplitBadIndex {
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
    SplitDuplicateShard {
        /// The first file.
        first: Option<PathBuf>,
        /// The second file.
        second: Option<PathBuf>,
        /// Their `split.no`.
        split_no: u16,
    },
    /// Two shards (or one shard twice) hold a tensor of the same name.
    #[error("tensor {tensor:?} is in {} and again in {}", shown(first), shown(second))]
    SplitDuplicateTensor {
        /// The tensor's name.
        tensor: String,
        /// The shard that holds it first.
        first: Option<PathBuf>,
        /// The shard that holds it again.
        second: Option<PathBuf>,
    },
    /// The shards hold another number of tensors than `split.tensors.count` says.
    #[error(
        "{}split.tensors.count says the set has {declared} tensors, but its {shards} shards hold \
         {found}",
        at(path)
    )]
    SplitTensorCount {
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
        "{}not a split set: split.count is {}",
        at(path),
        count.map_or_else(|| "absent".to_owned(), |c| c.to_string())
    )]
    SplitNotASet {
        /// The file.
        path: Option<PathBuf>,
        /// Its `split.count`, if any.
        count: Option<u16>,
    },
    /// The file to split is itself a shard of a set.
    #[error(
        "{}: the file is already shard {} of {count} of a split set: merge the set first",
        path.display(),
        u32::from(*split_no) + 1
    )]
    SplitAlreadySplit {
        /// The file.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split or merge that cannot be done as asked (a zero limit, more shards than
    /// `split.count` can number, an empty shard, an output that is one of the inputs).
    #[error("{}: {reason}", path.display())]
    SplitRefused {
        /// The input file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An in-place header rewrite was given a new header of another length than the old one.
    #[error(
        "{}: the new header has {new} bytes but the old one {old}: an in-place rewrite keeps the \
         header's length",
        path.display()
    )]
    InPlaceLength {
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
    InPlaceBackupWrite {
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
    InPlaceRolledBack {
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
    InPlaceTorn {
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
    InPlaceBackupRemove {
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
    InPlaceNoBackup {
        /// The model.
        path: PathBuf,
        /// Where the backup would be.
        backup: PathBuf,
    },
    /// The header backup exists but cannot be read.
    #[error("cannot read {}: {source}", backup.display())]
    InPlaceBackupRead {
        /// The model.
        path: PathBuf,
        /// The backup.
        backup: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header backup cannot be used; the model was not written.
    #[error("{}", bad_backup(path, backup, *defect))]
    InPlaceBadBackup {
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
    InPlaceWrongModel {
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
    InPlaceRestoreWrite {
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
    InPlaceRestoreMismatch {
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
    InPlaceRestoredInvalid {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
        /// Why the model does not open.
        source: Box<StreamError>,
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
    /// Another process holds an advisory lock on the file ([`crate::lock`]).
    #[error("{}", locked(path, *exclusive))]
    Locked {
        /// The file.
        path: PathBuf,
        /// True when an exclusive lock was wanted (the in-place writer), false for a reader.
        exclusive: bool,
    },
    /// The file's header is no longer the one the in-place rewrite was planned from: another
    /// process changed it after it was read. Nothing was written.
    #[error(
        "{}'s header changed after it was read (another edit finished meanwhile?): the new \
         header was planned from the old one, so it was not written",
        path.display()
    )]
    InPlaceChanged {
        /// The model.
        path: PathBuf,
    },
    /// The file is shorter than the header an in-place rewrite was given; nothing was written.
    #[error(
        "{} is {len} bytes, shorter than the {header_len}-byte header to rewrite in place: it \
         was not changed",
        path.display()
    )]
    InPlaceFileTooShort {
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
    InPlacePending {
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
    InPlaceOtherFile {
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
    InPlaceBackupMismatch {
        /// The model.
        path: PathBuf,
        /// The backup, kept.
        backup: PathBuf,
    },
    /// The shards of a set do not all have the first shard's byte order.
    #[error(
        "{}the shard is {found}-endian, but {} is {expected}-endian: one set has one byte order",
        at(path),
        shown(reference)
    )]
    SplitEndianMismatch {
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
    #[error(
        "{}: the set has {count} shards, but this process may open only {limit} files at once",
        set.display()
    )]
    SplitTooManyFiles {
        /// The file the set was opened from.
        set: PathBuf,
        /// `split.count`.
        count: u16,
        /// The open-file limit (`RLIMIT_NOFILE`).
        limit: u64,
    },
}

fn at(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

fn locked(path: &Path, exclusive: bool) -> String {
    if exclusive {
        format!(
            "{} is in use by another process (an in-place edit, or a reader such as sipllm \
             verify): it was not changed",
            path.display()
        )
    } else {
        format!(
            "{} is being rewritten in place by another process, which did not finish within {} s",
            path.display(),
            crate::lock::READ_WAIT.as_secs()
        )
    }
}

fn which_input(input: &Path, output: &Path) -> String {
    if input == output {
        "the input itself".to_owned()
    } else {
        format!("the input {} (another name for it)", input.display())
    }
}

fn hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
    hex.join(" ")
}

/// A hint for a file that is not a model, from its first bytes (the usual mix-ups).
fn magic_hint(found: &[u8; 4]) -> &'static str {
    match found {
        b"vers" => {
            "it looks like a Git LFS pointer (a small text file starting with \"version \
             https://git-lfs\"): the model itself was never fetched; run `git lfs pull` or \
             download the file directly."
        }
        [b'P', b'K', 3, 4] => {
            "it is a zip archive, such as a PyTorch checkpoint (.bin, .pt): convert the model to \
             GGUF first (llama.cpp's convert_hf_to_gguf.py)."
        }
        b"lmgg" | b"fmgg" | b"tjgg" | b"algg" => {
            "it is a legacy GGML/GGMF/GGJT file (llama.cpp before GGUF, August 2023): convert it \
             with llama.cpp's convert_llama_ggml_to_gguf.py."
        }
        [b'<', ..] => {
            "it looks like HTML or XML text, often an error page saved in place of a download: \
             download the file again."
        }
        [b'{', ..] => "it looks like JSON (a config or tokenizer file?): check the path.",
        _ => {
            "check the path, and that the download or copy completed; the format is found from \
             the content, not from the file name."
        }
    }
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
    }
}

/// What a path that is not a regular file (nor a directory) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A FIFO (named pipe), or an anonymous pipe reached through `/dev/fd`.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// Something else that is not a regular file.
    Other,
}

impl FileKind {
    /// What `meta` describes, or `None` for a regular file or a directory.
    pub fn of(meta: &std::fs::Metadata) -> Option<FileKind> {
        let ty = meta.file_type();
        if ty.is_file() || ty.is_dir() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt as _;
            if ty.is_fifo() {
                return Some(FileKind::Fifo);
            }
            if ty.is_socket() {
                return Some(FileKind::Socket);
            }
            if ty.is_char_device() {
                return Some(FileKind::CharDevice);
            }
            if ty.is_block_device() {
                return Some(FileKind::BlockDevice);
            }
        }
        Some(FileKind::Other)
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Fifo => "a FIFO (pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        })
    }
}

fn elem(index: Option<u64>) -> String {
    index.map(|i| format!("[{i}]")).unwrap_or_default()
}

impl StreamError {
    /// The stable code: `stream::<area>::<name>`, or the parser's `gguf::…` code for
    /// [`StreamError::Parse`] and `llmw::…` code for [`StreamError::ParseLlmw`]. Codes are API
    /// and never reused.
    pub fn code(&self) -> &'static str {
        match self {
            StreamError::Open { .. } => "stream::io::open",
            StreamError::NotAFile { .. } => "stream::open::not_a_file",
            StreamError::InputTooLarge { .. } => "stream::input::too_large",
            StreamError::InputEmptyStream { .. } => "stream::input::empty_stream",
            StreamError::Io { .. } => "stream::io::read",
            StreamError::UnexpectedEof { .. } => "stream::io::unexpected_eof",
            StreamError::Parse { source, .. } => source.code(),
            StreamError::ParseLlmw { source, .. } => source.code(),
            StreamError::UnknownMagic { .. } => "stream::open::unknown_magic",
            StreamError::TooShort { .. } => "stream::open::too_short",
            StreamError::SizeMismatch { .. } => "stream::read::size_mismatch",
            StreamError::OutOfBounds { .. } => "stream::read::out_of_bounds",
            StreamError::TensorOutOfBounds { .. } => "stream::tensor::out_of_bounds",
            StreamError::NotInSource { .. } => "stream::tensor::not_in_source",
            StreamError::TensorMissing { .. } => "stream::tensor::missing",
            StreamError::UnknownSize { .. } => "stream::tensor::unknown_size",
            StreamError::Dequant { source, .. } => source.code(),
            StreamError::ElementRange { .. } => "stream::values::element_range",
            StreamError::TooLarge { .. } => "stream::memory::too_large",
            StreamError::Create { .. } => "stream::write::create",
            StreamError::Write { .. } => "stream::write::io",
            StreamError::Writer { .. } => "stream::write::header",
            StreamError::WriterLlmw { .. } => "stream::write::llmw",
            StreamError::MissingData { .. } => "stream::write::missing_data",
            StreamError::DataLength { .. } => "stream::write::data_length",
            StreamError::MetaMissing { .. } => "stream::meta::missing",
            StreamError::MetaType { .. } => "stream::meta::type_mismatch",
            StreamError::MetaRange { .. } => "stream::meta::out_of_range",
            StreamError::MetaUtf8 { .. } => "stream::meta::invalid_utf8",
            StreamError::SplitMissingShard { .. } => "stream::split::missing_shard",
            StreamError::SplitNameMismatch { .. } => "stream::split::name_mismatch",
            StreamError::SplitBadName { .. } => "stream::split::bad_name",
            StreamError::SplitKeyMismatch { .. } => "stream::split::key_mismatch",
            StreamError::SplitKeyType { .. } => "stream::split::key_type",
            StreamError::SplitKeyMissing { .. } => "stream::split::key_missing",
            StreamError::SplitBadIndex { .. } => "stream::split::bad_index",
            StreamError::SplitDuplicateShard { .. } => "stream::split::duplicate_shard",
            StreamError::SplitDuplicateTensor { .. } => "stream::split::duplicate_tensor",
            StreamError::SplitTensorCount { .. } => "stream::split::tensor_count",
            StreamError::SplitNotASet { .. } => "stream::split::not_a_set",
            StreamError::SplitAlreadySplit { .. } => "stream::split::already_split",
            StreamError::SplitRefused { .. } => "stream::split::refused",
            StreamError::InPlaceLength { .. } => "stream::in_place::length_mismatch",
            StreamError::InPlaceBackupWrite { .. } => "stream::in_place::backup_write",
            StreamError::InPlaceRolledBack { .. } => "stream::in_place::rolled_back",
            StreamError::InPlaceTorn { .. } => "stream::in_place::torn",
            StreamError::InPlaceBackupRemove { .. } => "stream::in_place::backup_remove",
            StreamError::InPlaceNoBackup { .. } => "stream::in_place::no_backup",
            StreamError::InPlaceBackupRead { .. } => "stream::in_place::backup_read",
            StreamError::InPlaceBadBackup { .. } => "stream::in_place::bad_backup",
            StreamError::InPlaceWrongModel { .. } => "stream::in_place::wrong_model",
            StreamError::InPlaceRestoreWrite { .. } => "stream::in_place::restore_write",
            StreamError::InPlaceRestoreMismatch { .. } => "stream::in_place::restore_mismatch",
            StreamError::InPlaceRestoredInvalid { .. } => "stream::in_place::restored_invalid",
            StreamError::OutputIsInput { .. } => "stream::write::output_is_input",
            StreamError::Locked { .. } => "stream::lock::busy",
            StreamError::InPlaceChanged { .. } => "stream::in_place::changed",
            StreamError::InPlaceFileTooShort { .. } => "stream::in_place::file_too_short",
            StreamError::InPlacePending { .. } => "stream::in_place::pending",
            StreamError::InPlaceOtherFile { .. } => "stream::in_place::other_file",
            StreamError::InPlaceBackupMismatch { .. } => "stream::in_place::backup_mismatch",
            StreamError::SplitEndianMismatch { .. } => "stream::split::endian_mismatch",
            StreamError::SplitTooManyFiles { .. } => "stream::split::too_many_files",
        }
    }

    /// What to check or change to fix the problem.
    pub fn help(&self) -> String {
        match self {
            StreamError::Open { .. } => {
                "check that the path exists, is a regular file and is readable.".into()
            }
            StreamError::NotAFile { .. } => "model files are read by position, so they must be \
                regular files: copy the stream or device into a file first (`cat SRC > \
                m.gguf`)."
                .into(),
            StreamError::InputTooLarge { .. } => "give a smaller file: a GGUF string holds at \
                most this many bytes."
                .into(),
            StreamError::InputEmptyStream { .. } => "start the program that writes into it \
                first, or give a regular file; an empty string value is `--set KEY=str:`."
                .into(),
            StreamError::Io { .. } => "the storage reported an error: check the device, the \
                network file system, or the permissions."
                .into(),
            StreamError::UnexpectedEof { .. } => "the file became shorter after it was opened \
                (another process truncated or replaced it): reopen it, and copy models with a \
                write-to-temporary-then-rename so readers never see a partial file."
                .into(),
            StreamError::Parse { source, .. } => source.help().into(),
            StreamError::ParseLlmw { source, .. } => source.help().into(),
            StreamError::UnknownMagic { found, .. } => {
                let formats: Vec<String> = Format::ALL
                    .iter()
                    .map(|f| format!("{} (\"{}\")", f.label(), f.magic().escape_ascii()))
                    .collect();
                format!("supported formats: {}. {}", formats.join(", "), magic_hint(found))
            }
            StreamError::TooShort { .. } => "the file is empty or cut off (an interrupted \
                download or copy), or the path names the wrong file: fetch it again."
                .into(),
            StreamError::SizeMismatch { .. } => "give a destination of at least the tensor's \
                `nbytes`, or use `read_raw_at` to read part of a tensor."
                .into(),
            StreamError::OutOfBounds { .. } => "positional reads must lie inside the file; the \
                offset or length was computed wrongly."
                .into(),
            StreamError::TensorOutOfBounds { .. } => "the file is shorter than its tensor \
                directory says: it is truncated (an incomplete download or copy). Compare its \
                size with the source."
                .into(),
            StreamError::TensorMissing { .. } => "list the names with `tensors()`; names are \
                exact (case-sensitive, no pattern)."
                .into(),
            StreamError::NotInSource { .. } => "pass a TensorInfo obtained from this source's \
                `tensors()` or `find()`, not one from another file."
                .into(),
            StreamError::UnknownSize { .. } => "this tensor type is newer than this reader (the \
                lenient profile lists it anyway); its bytes can only be read with `read_raw_at` \
                once its size is known from elsewhere."
                .into(),
            StreamError::Dequant { source, .. } => source.help().into(),
            StreamError::ElementRange { .. } => "pass a range with start <= end <= the \
                tensor's element count, and a buffer of end - start values."
                .into(),
            StreamError::TooLarge { .. } => "the size exceeds this machine's address space or \
                free memory; read the data in parts."
                .into(),
            StreamError::Create { .. } => "the destination's directory must exist and be \
                writable (the new file is written beside the destination, then renamed)."
                .into(),
            StreamError::Write { .. } => "the disk may be full or failing; the destination was \
                left untouched."
                .into(),
            StreamError::Writer { .. } => "the metadata or tensor list to write is invalid; \
                nothing was written."
                .into(),
            StreamError::WriterLlmw { .. } => "the disk may be full or failing, a tensor's \
                source could not be read, or the model has what .llmw cannot hold; the \
                destination was left untouched."
                .into(),
            StreamError::MissingData { .. } | StreamError::DataLength { .. } => "give every \
                tensor exactly its byte size of data (type and dims decide it)."
                .into(),
            StreamError::MetaMissing { .. } => "the model file lacks this key: check the \
                architecture prefix (e.g. `llama.` vs `qwen2.`) and the converter version."
                .into(),
            StreamError::MetaType { .. } => "the value is stored with another type; use the \
                accessor for the stored type, or `meta()` for the raw value."
                .into(),
            StreamError::MetaRange { .. } => "the stored value is out of range for the type \
                asked for; use a wider type or check the file."
                .into(),
            StreamError::MetaUtf8 { .. } => "the writer stored raw bytes; read the value with \
                `meta()` and `MetaStr::as_bytes`."
                .into(),
            StreamError::SplitMissingShard { .. } => "a split set is only complete with every \
                shard beside the first, named <prefix>-NNNNN-of-NNNNN.gguf as gguf-split wrote \
                them: download or copy the missing file."
                .into(),
            StreamError::SplitNameMismatch { .. } => "a shard was renamed or copied over another: \
                restore the names gguf-split gave (numbered from 1, while split.no counts from \
                0), or open the files as an explicit list, which ignores names."
                .into(),
            StreamError::SplitBadName { .. } => "rename the shards to \
                <prefix>-NNNNN-of-NNNNN.gguf (numbered from 1), or open them as an explicit list \
                of paths."
                .into(),
            StreamError::SplitKeyMismatch { .. } => "the shards come from different splits (an \
                older download mixed with a newer one?): fetch the whole set again."
                .into(),
            StreamError::SplitKeyType { .. } => "llama.cpp requires split.no and split.count as \
                UINT16 and split.tensors.count as INT32; rewrite the keys with those types."
                .into(),
            StreamError::SplitKeyMissing { .. } => "every shard carries split.no and \
                split.count, and the first also split.tensors.count: the file was not written by \
                a split tool, or its keys were removed."
                .into(),
            StreamError::SplitBadIndex { .. } | StreamError::SplitDuplicateShard { .. } => "the \
                shards' split.no values must be 0, 1, … split.count - 1, once each: a shard is \
                corrupt or belongs to another set."
                .into(),
            StreamError::SplitDuplicateTensor { .. } => "a tensor may be in only one shard \
                (llama.cpp rejects the set): a shard is duplicated or belongs to another set."
                .into(),
            StreamError::SplitTensorCount { .. } => "the shards do not add up to the model \
                the first shard describes: a shard is truncated, from another set, or missing."
                .into(),
            StreamError::SplitNotASet { .. } => "open the file as a single model; merging and \
                set operations need the first shard of a split set."
                .into(),
            StreamError::SplitAlreadySplit { .. } => "merge the set into one file (`sipllm \
                merge`) and split that."
                .into(),
            StreamError::SplitRefused { .. } => "choose a limit that gives every shard at least \
                one tensor and at most 65,535 shards."
                .into(),
            StreamError::InPlaceLength { .. } => "plan a new header of exactly the old header \
                region's length (`GgufWriter::pad_to`), or write a new file; nothing was written."
                .into(),
            StreamError::InPlaceBackupWrite { .. } => "the model's directory must be writable \
                and have room for the backup (the old bytes of the changed 4 KiB blocks); the \
                model was not changed."
                .into(),
            StreamError::InPlaceRolledBack { .. } => "the disk may be full or failing; the old \
                header was written back and synced, so the model is as it was."
                .into(),
            StreamError::InPlaceTorn { .. } => "the header may be half-written; the backup \
                beside the model holds the old bytes: restore them with `in_place::recover` \
                (`sipllm edit --recover FILE`). The tensor data was never touched."
                .into(),
            StreamError::InPlaceBackupRemove { .. } => "the model's header is complete and \
                synced; delete the backup by hand (while it exists, `sipllm` refuses to edit the \
                model)."
                .into(),
            StreamError::InPlaceNoBackup { .. } => "only a model whose in-place header rewrite \
                was interrupted has a backup (`.NAME.header-backup` beside it): there is nothing \
                to undo."
                .into(),
            StreamError::InPlaceBackupRead { .. } => "check the backup file's permissions; the \
                model was not changed."
                .into(),
            StreamError::InPlaceBadBackup { .. } => "the backup was not written by sipllm, or it \
                is damaged; the model was not changed. If the model validates (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
                .into(),
            StreamError::InPlaceWrongModel { .. } => "the model was replaced or resized since the \
                backup was made, so the backup's bytes do not belong to it: if the model \
                validates, delete the backup."
                .into(),
            StreamError::InPlaceRestoreWrite { .. } => "the disk may be full or failing; the \
                backup is kept, so recovery can run again once the cause is fixed."
                .into(),
            StreamError::InPlaceRestoreMismatch { .. } => "the model's header region was \
                changed outside the blocks the backup holds; the backup is kept. Restore the \
                model from a copy."
                .into(),
            StreamError::InPlaceRestoredInvalid { .. } => "the header the backup recorded is \
                back and matches its hash, but does not open under the strict profile (was the \
                model valid before the edit?); the backup is kept. Check the model with `sipllm \
                validate FILE` and restore it from a copy if needed."
                .into(),
            StreamError::OutputIsInput { .. } => "give an output path that is not the input: a \
                symlink or a hard link to the input names the input too."
                .into(),
            StreamError::Locked { exclusive: true, .. } => "wait until the other command has \
                finished (an engine or `sipllm verify` holding the file open keeps it locked for \
                as long as it runs), then edit again; or use -o OUT, which never writes to the \
                file."
                .into(),
            StreamError::Locked { exclusive: false, .. } => "an in-place edit holds the file for \
                milliseconds; one that holds it longer is stuck (stopped?): end it, run `sipllm \
                edit --recover FILE` if it left a header backup, and read again."
                .into(),
            StreamError::InPlaceChanged { .. } => "run the edit again: it is planned from the \
                header as it is now."
                .into(),
            StreamError::InPlaceFileTooShort { .. } => "the header given is not this file's: \
                plan the new header from the file's own header region."
                .into(),
            StreamError::InPlacePending { .. } => "run `sipllm edit --recover FILE` to restore \
                the header from the backup, then edit again."
                .into(),
            StreamError::InPlaceOtherFile { .. } => "the backup belongs to the file it was made \
                for; if this model is intact (`sipllm validate FILE`), delete the backup. If it \
                is damaged, restore it from a copy."
                .into(),
            StreamError::InPlaceBackupMismatch { .. } => "the model's header was changed since \
                the backup was made (another edit?). If the model is intact (`sipllm validate \
                FILE`), delete the backup; otherwise restore the model from a copy."
                .into(),
            StreamError::SplitEndianMismatch { .. } => "the shards come from different \
                writers; re-split the original model, so every shard has its byte order."
                .into(),
            StreamError::SplitTooManyFiles { .. } => "raise the open-file limit (`ulimit -n`, \
                or the hard limit in /etc/security/limits.conf), or merge the set on a machine \
                that allows it and re-split it into fewer, larger shards."
                .into(),
        }
    }

    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StreamError::Open { path, .. }
            | StreamError::NotAFile { path, .. }
            | StreamError::InputTooLarge { path, .. }
            | StreamError::InputEmptyStream { path, .. }
            | StreamError::Create { path, .. }
            | StreamError::Write { path, .. }
            | StreamError::WriterLlmw { path, .. }
            | StreamError::SplitMissingShard { set: path, .. }
            | StreamError::SplitNameMismatch { path, .. }
            | StreamError::SplitBadName { path, .. }
            | StreamError::SplitAlreadySplit { path, .. }
            | StreamError::SplitRefused { path, .. }
            | StreamError::InPlaceLength { path, .. }
            | StreamError::InPlaceBackupWrite { path, .. }
            | StreamError::InPlaceRolledBack { path, .. }
            | StreamError::InPlaceTorn { path, .. }
            | StreamError::InPlaceBackupRemove { path, .. }
            | StreamError::InPlaceNoBackup { path, .. }
            | StreamError::InPlaceBackupRead { path, .. }
            | StreamError::InPlaceBadBackup { path, .. }
            | StreamError::InPlaceWrongModel { path, .. }
            | StreamError::InPlaceRestoreWrite { path, .. }
            | StreamError::InPlaceRestoreMismatch { path, .. }
            | StreamError::InPlaceRestoredInvalid { path, .. }
            | StreamError::Locked { path, .. }
            | StreamError::InPlaceChanged { path, .. }
            | StreamError::InPlaceFileTooShort { path, .. }
            | StreamError::InPlacePending { path, .. }
            | StreamError::InPlaceOtherFile { path, .. }
            | StreamError::InPlaceBackupMismatch { path, .. }
            | StreamError::OutputIsInput { output: path, .. }
            | StreamError::SplitTooManyFiles { set: path, .. } => Some(path),
            StreamError::Io { path, .. }
            | StreamError::UnexpectedEof { path, .. }
            | StreamError::Parse { path, .. }
            | StreamError::ParseLlmw { path, .. }
            | StreamError::UnknownMagic { path, .. }
            | StreamError::TooShort { path, .. }
            | StreamError::OutOfBounds { path, .. }
            | StreamError::TensorOutOfBounds { path, .. }
            | StreamError::SplitKeyMismatch { path, .. }
            | StreamError::SplitKeyType { path, .. }
            | StreamError::SplitKeyMissing { path, .. }
            | StreamError::SplitBadIndex { path, .. }
            | StreamError::SplitTensorCount { path, .. }
            | StreamError::SplitNotASet { path, .. }
            | StreamError::SplitEndianMismatch { path, .. } => path.as_deref(),
            StreamError::SplitDuplicateShard { second, .. }
            | StreamError::SplitDuplicateTensor { second, .. } => second.as_deref(),
            _ => None,
        }
    }

    /// The absolute byte offset the error concerns, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            StreamError::Io { offset, .. }
            | StreamError::Write { offset, .. }
            | StreamError::InPlaceRolledBack { offset, .. }
            | StreamError::InPlaceTorn { offset, .. }
            | StreamError::UnexpectedEof { offset, .. }
            | StreamError::OutOfBounds { offset, .. }
            | StreamError::TensorOutOfBounds { offset, .. }
            | StreamError::NotInSource { offset, .. } => Some(*offset),
            StreamError::Parse { source, .. } => Some(source.offset()),
            StreamError::ParseLlmw { source, .. } => Some(source.offset()),
            StreamError::UnknownMagic { .. } => Some(0),
            StreamError::TooShort { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// The GGUF parser's error, for [`StreamError::Parse`].
    pub fn parse_error(&self) -> Option<&sipllm_gguf::Error> {
        match self {
            StreamError::Parse { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The `.llmw` parser's error, for [`StreamError::ParseLlmw`].
    pub fn llmw_error(&self) -> Option<&sipllm_llmw::Error> {
        match self {
            StreamError::ParseLlmw { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when the error is a parser's verdict on the file's bytes ([`StreamError::Parse`],
    /// [`StreamError::ParseLlmw`]), not I/O, a format mismatch, or a request.
    pub fn is_parse(&self) -> bool {
        matches!(self, StreamError::Parse { .. } | StreamError::ParseLlmw { .. })
    }

    /// Wraps a GGUF parser error.
    pub(crate) fn parse(path: Option<&Path>, source: sipllm_gguf::Error) -> StreamError {
        StreamError::Parse { path: path.map(Path::to_path_buf), source }
    }

    /// Wraps a `.llmw` parser error.
    pub(crate) fn parse_llmw(path: Option<&Path>, source: sipllm_llmw::Error) -> StreamError {
        StreamError::ParseLlmw { path: path.map(Path::to_path_buf), source }
    }

    /// Turns the I/O error of a read of `len` bytes at `offset` into a `StreamError`: a
    /// [`ShortRead`] becomes [`StreamError::UnexpectedEof`], anything else
    /// [`StreamError::Io`].
    pub(crate) fn read(path: Option<&Path>, offset: u64, len: u64, err: io::Error) -> StreamError {
        let path = path.map(Path::to_path_buf);
        match ShortRead::from_io(&err) {
            Some(short) => StreamError::UnexpectedEof {
                path,
                offset: short.offset,
                len: short.len,
                missing: short.missing,
            },
            None => StreamError::Io { path, offset, len, source: err },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_distinct_stable_code_and_help() {
        let io = || io::Error::from(io::ErrorKind::PermissionDenied);
        let path = Some(PathBuf::from("m.gguf"));
        let cases = [
            (StreamError::Open { path: "m.gguf".into(), source: io() }, "stream::io::open"),
            (
                StreamError::Io { path: path.clone(), offset: 1, len: 2, source: io() },
                "stream::io::read",
            ),
            (
                StreamError::UnexpectedEof { path: path.clone(), offset: 1, len: 8, missing: 3 },
                "stream::io::unexpected_eof",
            ),
            (
                StreamError::SizeMismatch { tensor: "t".into(), expected: 4, got: 2 },
                "stream::read::size_mismatch",
            ),
            (
                StreamError::OutOfBounds { path: None, offset: 9, len: 2, file_size: 10 },
                "stream::read::out_of_bounds",
            ),
            (
                StreamError::TensorOutOfBounds {
                    path: path.clone(),
                    tensor: "t".into(),
                    offset: 8,
                    nbytes: 4,
                    file_size: 10,
                },
                "stream::tensor::out_of_bounds",
            ),
            (
                StreamError::NotInSource { tensor: "t".into(), offset: 0 },
                "stream::tensor::not_in_source",
            ),
            (
                StreamError::UnknownSize { tensor: "t".into(), ggml_type: GgmlType::from_code(99) },
                "stream::tensor::unknown_size",
            ),
            (
                StreamError::TooLarge { what: "tensor \"t\"".into(), bytes: u64::MAX },
                "stream::memory::too_large",
            ),
            (StreamError::MetaMissing { key: "k".into() }, "stream::meta::missing"),
            (
                StreamError::MetaType { key: "k".into(), expected: "float", actual: "integer" },
                "stream::meta::type_mismatch",
            ),
            (
                StreamError::MetaRange { key: "k".into(), index: Some(3), value: -1, target: "u8" },
                "stream::meta::out_of_range",
            ),
            (StreamError::MetaUtf8 { key: "k".into(), index: None }, "stream::meta::invalid_utf8"),
            (
                StreamError::UnknownMagic { path: path.clone(), found: *b"PK\x03\x04" },
                "stream::open::unknown_magic",
            ),
            (StreamError::TooShort { path: path.clone(), len: 3 }, "stream::open::too_short"),
            (StreamError::Create { path: "m.gguf".into(), source: io() }, "stream::write::create"),
            (
                StreamError::Write { path: "m.gguf".into(), offset: 5, source: io() },
                "stream::write::io",
            ),
            (
                StreamError::Writer { source: sipllm_gguf::WriteError::BadAlignment },
                "stream::write::header",
            ),
            (
                StreamError::WriterLlmw {
                    path: "m.llmw".into(),
                    source: sipllm_llmw::WriteError::EmptyKey,
                },
                "stream::write::llmw",
            ),
            (StreamError::MissingData { tensor: "t".into() }, "stream::write::missing_data"),
            (
                StreamError::DataLength { tensor: "t".into(), expected: 4, got: 5 },
                "stream::write::data_length",
            ),
            (
                StreamError::SplitMissingShard {
                    set: "m-00001-of-00003.gguf".into(),
                    missing: Some("m-00002-of-00003.gguf".into()),
                    split_no: 1,
                    count: 3,
                },
                "stream::split::missing_shard",
            ),
            (
                StreamError::SplitNameMismatch {
                    path: "m-00003-of-00003.gguf".into(),
                    name_number: 3,
                    name_count: 3,
                    split_no: 1,
                    count: 3,
                },
                "stream::split::name_mismatch",
            ),
            (
                StreamError::SplitBadName { path: "m.gguf".into(), split_no: 0, count: 3 },
                "stream::split::bad_name",
            ),
            (
                StreamError::SplitKeyMismatch {
                    path: path.clone(),
                    key: "split.count",
                    expected: 3,
                    found: 4,
                    reference: None,
                },
                "stream::split::key_mismatch",
            ),
            (
                StreamError::SplitKeyType {
                    path: path.clone(),
                    key: "split.no",
                    expected: "UINT16",
                    found: "UINT32",
                },
                "stream::split::key_type",
            ),
            (
                StreamError::SplitKeyMissing { path: path.clone(), key: "split.no" },
                "stream::split::key_missing",
            ),
            (
                StreamError::SplitBadIndex { path: path.clone(), split_no: 3, count: 3 },
                "stream::split::bad_index",
            ),
            (
                StreamError::SplitDuplicateShard { first: None, second: None, split_no: 0 },
                "stream::split::duplicate_shard",
            ),
            (
                StreamError::SplitDuplicateTensor {
                    tensor: "t".into(),
                    first: path.clone(),
                    second: Some("n.gguf".into()),
                },
                "stream::split::duplicate_tensor",
            ),
            (
                StreamError::SplitTensorCount {
                    path: path.clone(),
                    declared: 6,
                    found: 5,
                    shards: 3,
                },
                "stream::split::tensor_count",
            ),
            (StreamError::SplitNotASet { path: None, count: None }, "stream::split::not_a_set"),
            (
                StreamError::SplitAlreadySplit { path: "m.gguf".into(), split_no: 0, count: 2 },
                "stream::split::already_split",
            ),
            (
                StreamError::SplitRefused { path: "m.gguf".into(), reason: "why".into() },
                "stream::split::refused",
            ),
            (
                StreamError::InPlaceLength { path: "m.gguf".into(), old: 576, new: 608 },
                "stream::in_place::length_mismatch",
            ),
            (
                StreamError::InPlaceBackupWrite {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                },
                "stream::in_place::backup_write",
            ),
            (
                StreamError::InPlaceRolledBack { path: "m.gguf".into(), offset: 0, source: io() },
                "stream::in_place::rolled_back",
            ),
            (
                StreamError::InPlaceTorn {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    offset: 4096,
                    source: io(),
                },
                "stream::in_place::torn",
            ),
            (
                StreamError::InPlaceBackupRemove {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    recovered: false,
                    source: io(),
                },
                "stream::in_place::backup_remove",
            ),
            (
                StreamError::InPlaceNoBackup {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                },
                "stream::in_place::no_backup",
            ),
            (
                StreamError::InPlaceBackupRead {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                },
                "stream::in_place::backup_read",
            ),
            (
                StreamError::InPlaceBadBackup {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    defect: BackupDefect::NotARecord,
                },
                "stream::in_place::bad_backup",
            ),
            (
                StreamError::InPlaceWrongModel {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    len: 2432,
                    recorded_len: 2433,
                },
                "stream::in_place::wrong_model",
            ),
            (
                StreamError::InPlaceRestoreWrite {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: io(),
                },
                "stream::in_place::restore_write",
            ),
            (
                StreamError::InPlaceRestoreMismatch {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                },
                "stream::in_place::restore_mismatch",
            ),
            (
                StreamError::InPlaceRestoredInvalid {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                    source: Box::new(StreamError::TooShort { path: path.clone(), len: 0 }),
                },
                "stream::in_place::restored_invalid",
            ),
            (
                StreamError::NotAFile { path: "m.gguf".into(), kind: FileKind::Fifo },
                "stream::open::not_a_file",
            ),
            (
                StreamError::InputTooLarge { path: "/dev/zero".into(), max: 1 << 26 },
                "stream::input::too_large",
            ),
            (
                StreamError::InputEmptyStream { path: "t.fifo".into(), kind: FileKind::Fifo },
                "stream::input::empty_stream",
            ),
            (
                StreamError::OutputIsInput {
                    input: "m.gguf".into(),
                    output: "link.gguf".into(),
                    what: "the manifest",
                },
                "stream::write::output_is_input",
            ),
            (StreamError::Locked { path: "m.gguf".into(), exclusive: true }, "stream::lock::busy"),
            (StreamError::InPlaceChanged { path: "m.gguf".into() }, "stream::in_place::changed"),
            (
                StreamError::InPlaceFileTooShort { path: "m.gguf".into(), len: 10, header_len: 64 },
                "stream::in_place::file_too_short",
            ),
            (
                StreamError::InPlacePending {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                },
                "stream::in_place::pending",
            ),
            (
                StreamError::InPlaceOtherFile {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                },
                "stream::in_place::other_file",
            ),
            (
                StreamError::InPlaceBackupMismatch {
                    path: "m.gguf".into(),
                    backup: ".m.gguf.header-backup".into(),
                },
                "stream::in_place::backup_mismatch",
            ),
            (
                StreamError::SplitEndianMismatch {
                    path: Some("m-00002-of-00002.gguf".into()),
                    expected: sipllm_gguf::Endian::Little,
                    found: sipllm_gguf::Endian::Big,
                    reference: Some("m-00001-of-00002.gguf".into()),
                },
                "stream::split::endian_mismatch",
            ),
            (
                StreamError::SplitTooManyFiles {
                    set: "m-00001-of-04000.gguf".into(),
                    count: 4000,
                    limit: 1024,
                },
                "stream::split::too_many_files",
            ),
            (
                StreamError::Dequant {
                    tensor: "t".into(),
                    source: sipllm_quants::DequantError::UnsupportedType { ty: GgmlType::I8 },
                },
                "quants::unsupported_type",
            ),
            (
                StreamError::ElementRange {
                    tensor: "t".into(),
                    start: 4,
                    end: 2,
                    count: 8,
                    got: 0,
                },
                "stream::values::element_range",
            ),
            (StreamError::TensorMissing { name: "t".into() }, "stream::tensor::missing"),
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

        assert_eq!(
            cases[2].0.to_string(),
            "m.gguf: unexpected end of file: 3 of the 8 bytes requested at offset 1 are missing \
             (the input ends at byte 6)"
        );
        assert_eq!(cases[2].0.offset(), Some(1));
        assert_eq!(cases[2].0.path(), Some(Path::new("m.gguf")));
        assert_eq!(
            cases[8].0.to_string(),
            "tensor \"t\" of 18446744073709551615 bytes does not fit in memory"
        );
        assert_eq!(cases[11].0.to_string(), "metadata key \"k\"[3]: value -1 does not fit u8");
        let split = |code: &str| {
            cases.iter().map(|(e, _)| e).find(|e| e.code() == code).map(|e| e.to_string())
        };
        assert_eq!(
            split("stream::split::missing_shard").unwrap(),
            "m-00001-of-00003.gguf: shard 2 of 3 of the split set (split.no = 1) is missing: \
             m-00002-of-00003.gguf does not exist"
        );
        assert_eq!(
            split("stream::split::duplicate_shard").unwrap(),
            "the source and the source are both shard 1 of the set (split.no = 0)"
        );
        assert_eq!(
            split("stream::split::not_a_set").unwrap(),
            "not a split set: split.count is absent"
        );
        assert_eq!(
            split("stream::split::key_mismatch").unwrap(),
            "m.gguf: split.count is 4 here, but 3 in the source"
        );
        assert_eq!(
            split("stream::write::output_is_input").unwrap(),
            "the manifest link.gguf is the input m.gguf (another name for it): writing it would \
             destroy the input; nothing was written"
        );
        assert_eq!(
            split("stream::split::endian_mismatch").unwrap(),
            "m-00002-of-00002.gguf: the shard is big-endian, but m-00001-of-00002.gguf is \
             little-endian: one set has one byte order"
        );
        assert_eq!(
            split("stream::lock::busy").unwrap(),
            "m.gguf is in use by another process (an in-place edit, or a reader such as sipllm \
             verify): it was not changed"
        );
    }

    #[test]
    fn in_place_errors_name_the_model_and_the_backup() {
        let model = PathBuf::from("m.gguf");
        let backup = PathBuf::from(".m.gguf.header-backup");
        let bad = |defect| StreamError::InPlaceBadBackup {
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
        let removed = |recovered| StreamError::InPlaceBackupRemove {
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
        let wrong = StreamError::InPlaceWrongModel {
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
        let torn = StreamError::InPlaceTorn {
            path: model.clone(),
            backup: backup.clone(),
            offset: 4096,
            source: io::Error::from(io::ErrorKind::StorageFull),
        };
        assert_eq!(torn.offset(), Some(4096));
        assert!(torn.help().contains("sipllm edit --recover"), "{}", torn.help());
        let invalid = StreamError::InPlaceRestoredInvalid {
            path: model.clone(),
            backup,
            source: Box::new(StreamError::TooShort { path: None, len: 0 }),
        };
        let chained = std::error::Error::source(&invalid).map(|s| s.to_string());
        assert!(chained.is_some_and(|s| s.contains("too short")));
        assert!(invalid.to_string().ends_with("the backup .m.gguf.header-backup is kept"));
    }

    #[test]
    fn unknown_magic_shows_hex_ascii_and_the_supported_magics() {
        let e = StreamError::UnknownMagic { path: Some("m.llmw".into()), found: *b"PK\x03\x04" };
        assert_eq!(
            e.to_string(),
            "m.llmw: not a model file: it starts with 50 4B 03 04 (\"PK\\x03\\x04\"), but a GGUF \
             file starts with \"GGUF\" (47 47 55 46) and a .llmw file with \"LLMW\" (4C 4C 4D 57)"
        );
        assert_eq!(e.offset(), Some(0));
        assert_eq!(e.path(), Some(Path::new("m.llmw")));
        let help = e.help();
        assert!(
            help.starts_with("supported formats: GGUF (\"GGUF\"), .llmw (\"LLMW\")."),
            "{help}"
        );
        assert!(help.contains("zip archive"), "{help}");

        let lfs = StreamError::UnknownMagic { path: None, found: *b"vers" };
        assert!(lfs.help().contains("git lfs pull"), "{}", lfs.help());
        let binary = StreamError::UnknownMagic { path: None, found: [0, 0xff, b'"', b'\\'] };
        assert!(
            binary.to_string().starts_with(
                "not a model file: it starts with 00 FF 22 5C (\"\\x00\\xff\\\"\\\\\"), but"
            ),
            "{binary}"
        );
        assert!(binary.help().contains("not from the file name"), "{}", binary.help());
    }

    #[test]
    fn too_short_says_how_long_the_file_is() {
        let e = StreamError::TooShort { path: Some("empty.gguf".into()), len: 0 };
        assert_eq!(
            e.to_string(),
            "empty.gguf: the file has 0 bytes: too short for a model file, which starts with a \
             4-byte magic (\"GGUF\" or \"LLMW\")"
        );
        assert_eq!(e.offset(), Some(0));
        let one = StreamError::TooShort { path: None, len: 1 };
        assert!(one.to_string().starts_with("the file has 1 byte: "), "{one}");
        assert!(one.help().contains("cut off"));
    }

    #[test]
    fn llmw_parse_errors_are_kept_intact() {
        let source = sipllm_llmw::parse(b"LLMW\x09\0\0\0\0\0\0\0\0\0\0\0").unwrap_err();
        let e = StreamError::parse_llmw(Some(Path::new("m.llmw")), source.clone());
        assert_eq!(e.code(), "llmw::header::unsupported_version");
        assert_eq!(e.code(), source.code());
        assert_eq!(e.help(), source.help());
        assert_eq!(e.offset(), Some(4));
        assert_eq!(e.path(), Some(Path::new("m.llmw")));
        assert_eq!(e.llmw_error(), Some(&source));
        assert_eq!(e.parse_error(), None);
        assert!(e.is_parse());
        assert_eq!(e.to_string(), format!("m.llmw: {source}"));
        let chained = std::error::Error::source(&e).map(|s| s.to_string());
        assert_eq!(chained, Some(source.to_string()));
    }

    #[test]
    fn read_errors_recover_the_short_read() {
        let short = ShortRead { offset: 100, len: 10, missing: 4 }.into_io();
        let e = StreamError::read(Some(Path::new("f")), 100, 10, short);
        assert!(matches!(e, StreamError::UnexpectedEof { offset: 100, len: 10, missing: 4, .. }));
        let other = io::Error::from(io::ErrorKind::UnexpectedEof);
        let e = StreamError::read(None, 5, 6, other);
        assert_eq!(e.code(), "stream::io::read", "an EOF without a ShortRead stays an I/O error");
    }
}
