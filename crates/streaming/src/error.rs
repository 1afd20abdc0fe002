//! The read side's one error type.
//!
//! [`StreamError`] keeps a parser error intact ([`StreamError::Parse`] holds the
//! [`sipllm_gguf::Error`], [`StreamError::ParseLlmw`] the [`sipllm_llmw::Error`], each with its
//! offset, logical path, code and help) and adds what only an I/O layer knows: the file path,
//! the offset and length of a failed read, how many bytes were missing at the end of the file,
//! which format magic was found. What a request named wrongly is a [`TensorError`] (a tensor
//! read) or a [`MetaError`] (a metadata key); what is wrong with a split set is a
//! [`SplitSetError`]. Every variant has a stable code (`stream::<area>::<name>`; a parse error
//! keeps the parser's `gguf::…` or `llmw::…` code) and a `&'static str` help text, through the
//! [`Kind`] trait the parsers' findings implement too. Writing has its own errors, in the
//! write-side crate (`sipllm-edit`).
//!
//! `Display` says **what** went wrong; **where** is context: [`StreamError::path`] (the file
//! the error is about is never repeated in the message; other files it involves, such as the
//! shard a value was compared with, are named) and [`StreamError::offset`]. A caller that only
//! prints gets both from [`StreamError::located`]; the CLI renders them around the message.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sipllm_format::Kind;
use sipllm_gguf::GgmlType;

use crate::bounds::ShortRead;

/// Everything that can go wrong opening a weight source, reading from it, or reading its
/// metadata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The file could not be opened (or its size read, or mapped).
    #[error("cannot open: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The path names a FIFO, socket or device, not a regular file: opening it could block
    /// forever (a FIFO without a writer) and it has no size to bounds-check against.
    #[error("cannot open: it is {kind}, not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// A read failed with an I/O error.
    #[error("I/O error reading {len} bytes at offset {offset}: {source}")]
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
        "unexpected end of file: {missing} of the {len} bytes requested at offset {offset} \
         are missing (the input ends at byte {})",
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
    /// Writing the local copy of a remote model (a temporary the remote source downloads to,
    /// for commands that copy every byte anyway) failed: the read's own scratch file, not an
    /// output.
    #[error("cannot write the local copy (a temporary file) at offset {offset}: {source}")]
    Spool {
        /// The temporary file.
        path: PathBuf,
        /// Offset of the failed write (0 for its creation).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The GGUF header or tensor directory is invalid: the parser's error, unchanged.
    #[error("{source}")]
    Parse {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The parser's error (offset, logical path, code, help).
        source: sipllm_gguf::Error,
    },
    /// The `.llmw` header or tensor directory is invalid: the `.llmw` parser's error,
    /// unchanged.
    #[error("{source}")]
    ParseLlmw {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// The parser's error (offset, logical path, code, help).
        source: sipllm_llmw::Error,
    },
    /// The first 4 bytes are not the magic of a format this crate reads.
    #[error(
        "not a model file: it starts with {} (\"{}\"), but a GGUF file starts with \"GGUF\" \
         (47 47 55 46) and a .llmw file with \"LLMW\" (4C 4C 4D 57)",
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
        "the file has {len} byte{}: too short for a model file, which starts with a 4-byte \
         magic (\"GGUF\" or \"LLMW\")",
        if *len == 1 { "" } else { "s" }
    )]
    TooShort {
        /// The file, when the source is a file.
        path: Option<PathBuf>,
        /// Its length in bytes (0 to 3).
        len: u64,
    },
    /// A positional read reaches outside the file.
    #[error(
        "a read of {len} bytes at offset {offset} reaches outside the file ({file_size} bytes)"
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
        "tensor {tensor:?}: its {nbytes} bytes at offset {offset} end past the end of the file \
         ({file_size} bytes)"
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
    /// A byte count does not fit this machine's address space (or could not be allocated).
    #[error("{what} of {bytes} bytes does not fit in memory")]
    TooLarge {
        /// What was to be held (e.g. `tensor "x"`, `header buffer`).
        what: String,
        /// The byte count.
        bytes: u64,
    },
    /// Another process holds an advisory lock on the file ([`crate::lock`]).
    #[error("{}", locked(*exclusive, *wait))]
    Locked {
        /// The file.
        path: PathBuf,
        /// True when an exclusive lock was wanted (the in-place writer), false for a reader.
        exclusive: bool,
        /// How long a reader waited ([`READ_WAIT`](crate::lock::READ_WAIT)); zero for the
        /// writer, which never waits.
        wait: Duration,
    },
    /// A tensor read that cannot be done as asked ([`TensorError`]).
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A metadata value that is absent or not what was asked for ([`MetaError`]).
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// A split set that is incomplete or inconsistent ([`SplitSetError`]).
    #[error(transparent)]
    Split(#[from] SplitSetError),
}

/// A tensor read that cannot be done as asked: the request, not the file, is at fault (or the
/// tensor's type cannot be read this way).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
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
    Missing {
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
}

/// A metadata value that is absent, or not of the type or range asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// A metadata key is absent.
    #[error("metadata key {key:?} is missing")]
    Missing {
        /// The key.
        key: String,
    },
    /// A metadata value has another type than the one asked for.
    #[error("metadata key {key:?}: expected {expected}, found {actual}")]
    Type {
        /// The key.
        key: String,
        /// The type asked for (e.g. `integer`).
        expected: &'static str,
        /// The type found (e.g. `float`).
        actual: &'static str,
    },
    /// A metadata integer does not fit the type asked for.
    #[error("metadata key {key:?}{}: value {value} does not fit {target}", elem(*index))]
    Range {
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
    Utf8 {
        /// The key.
        key: String,
        /// For arrays, the element index.
        index: Option<u64>,
    },
}

/// A split GGUF set (`model-00001-of-00004.gguf` …) that is incomplete or whose shards do not
/// belong together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SplitSetError {
    /// A shard of a split set does not exist (or is not among the files given).
    #[error(
        "shard {} of {count} of the split set (split.no = {split_no}) is missing{}", u32::from(*split_no) + 1,
        missing_where(missing)
    )]
    MissingShard {
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
        "the file name says shard {name_number} of {name_count}, but the metadata says \
         shard {} of {count} (split.no = {split_no}, split.count = {count})", u32::from(*split_no) + 1
    )]
    NameMismatch {
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
        "the file is shard {} of {count} of a split set (split.no = {split_no}), but its \
         name does not end in -NNNNN-of-NNNNN.gguf, so the other shards cannot be found", u32::from(*split_no) + 1
    )]
    BadName {
        /// The shard.
        path: PathBuf,
        /// Its `split.no`.
        split_no: u16,
        /// Its `split.count`.
        count: u16,
    },
    /// A split key has another value in this shard than in the first shard.
    #[error("{key} is {found} here, but {expected} in {}", shown(reference))]
    KeyMismatch {
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
    #[error("metadata key {key:?} has type {found}, but split files store it as {expected}")]
    KeyType {
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
    #[error("metadata key {key:?} is missing, but every shard of a split set has it")]
    KeyMissing {
        /// The shard.
        path: Option<PathBuf>,
        /// The key.
        key: &'static str,
    },
    /// A shard's `split.no` is not below `split.count`.
    #[error("split.no is {split_no}, but split.count is {count}: it must be below it")]
    BadIndex {
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
    DuplicateShard {
        /// The first file.
        first: Option<PathBuf>,
        /// The second file.
        second: Option<PathBuf>,
        /// Their `split.no`.
        split_no: u16,
    },
    /// Two shards (or one shard twice) hold a tensor of the same name.
    #[error("tensor {tensor:?} is in {} and again in {}", shown(first), shown(second))]
    DuplicateTensor {
        /// The tensor's name.
        tensor: String,
        /// The shard that holds it first.
        first: Option<PathBuf>,
        /// The shard that holds it again.
        second: Option<PathBuf>,
    },
    /// The shards hold another number of tensors than `split.tensors.count` says.
    #[error(
        "split.tensors.count says the set has {declared} tensors, but its {shards} shards hold \
         {found}"
    )]
    TensorCount {
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
        "not a split set: split.count is {}", count.map_or_else(|| "absent".to_owned(), |c| c.to_string())
    )]
    NotASet {
        /// The file.
        path: Option<PathBuf>,
        /// Its `split.count`, if any.
        count: Option<u16>,
    },
    /// The shards of a set do not all have the first shard's byte order.
    #[error(
        "the shard is {found}-endian, but {} is {expected}-endian: one set has one byte order",
        shown(reference)
    )]
    EndianMismatch {
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
    #[error("the set has {count} shards, but this process may open only {limit} files at once")]
    TooManyFiles {
        /// The file the set was opened from.
        set: PathBuf,
        /// `split.count`.
        count: u16,
        /// The open-file limit (`RLIMIT_NOFILE`).
        limit: u64,
    },
}

fn locked(exclusive: bool, wait: Duration) -> String {
    if exclusive {
        "the file is in use by another process (an in-place edit, or a reader such as sipllm \
         verify): it was not changed"
            .to_owned()
    } else {
        format!(
            "the file is being rewritten in place by another process, which did not finish \
             within {} s",
            wait.as_secs()
        )
    }
}

fn hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
    hex.join(" ")
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

/// The help for a file whose first bytes are not a model's: the supported formats, then a
/// hint from the bytes found (the usual mix-ups).
fn magic_help(found: &[u8; 4]) -> &'static str {
    macro_rules! formats {
        ($hint:literal) => {
            concat!("supported formats: GGUF (\"GGUF\"), .llmw (\"LLMW\"). ", $hint)
        };
    }
    match found {
        b"vers" => formats!(
            "it looks like a Git LFS pointer (a small text file starting with \"version \
             https://git-lfs\"): the model itself was never fetched; run `git lfs pull` or \
             download the file directly."
        ),
        [b'P', b'K', 3, 4] => formats!(
            "it is a zip archive, such as a PyTorch checkpoint (.bin, .pt): convert the model to \
             GGUF first (llama.cpp's convert_hf_to_gguf.py)."
        ),
        b"lmgg" | b"fmgg" | b"tjgg" | b"algg" => formats!(
            "it is a legacy GGML/GGMF/GGJT file (llama.cpp before GGUF, August 2023): convert it \
             with llama.cpp's convert_llama_ggml_to_gguf.py."
        ),
        [b'<', ..] => formats!(
            "it looks like HTML or XML text, often an error page saved in place of a download: \
             download the file again."
        ),
        [b'{', ..] => formats!("it looks like JSON (a config or tokenizer file?): check the path."),
        _ => formats!(
            "check the path, and that the download or copy completed; the format is found from \
             the content, not from the file name."
        ),
    }
}

impl Kind for StreamError {
    fn code(&self) -> &'static str {
        match self {
            StreamError::Open { .. } => "stream::io::open",
            StreamError::NotAFile { .. } => "stream::open::not_a_file",
            StreamError::Io { .. } => "stream::io::read",
            StreamError::UnexpectedEof { .. } => "stream::io::unexpected_eof",
            StreamError::Parse { source, .. } => source.code(),
            StreamError::ParseLlmw { source, .. } => source.code(),
            StreamError::UnknownMagic { .. } => "stream::open::unknown_magic",
            StreamError::TooShort { .. } => "stream::open::too_short",
            StreamError::OutOfBounds { .. } => "stream::read::out_of_bounds",
            StreamError::TensorOutOfBounds { .. } => "stream::tensor::out_of_bounds",
            StreamError::TooLarge { .. } => "stream::memory::too_large",
            StreamError::Locked { .. } => "stream::lock::busy",
            StreamError::Spool { .. } => "stream::io::spool",
            StreamError::Tensor(e) => e.code(),
            StreamError::Meta(e) => e.code(),
            StreamError::Split(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            StreamError::Open { .. } => {
                "check that the path exists, is a regular file and is readable."
            }
            StreamError::NotAFile { .. } => {
                "model files are read by position, so they must be \
                regular files: copy the stream or device into a file first (`cat SRC > \
                m.gguf`)."
            }
            StreamError::Io { .. } => {
                "the storage reported an error: check the device, the \
                network file system, or the permissions."
            }
            StreamError::UnexpectedEof { .. } => {
                "the file became shorter after it was opened \
                (another process truncated or replaced it): reopen it, and copy models with a \
                write-to-temporary-then-rename so readers never see a partial file."
            }
            StreamError::Spool { .. } => {
                "the temporary directory (TMPDIR) must be writable and have room for the whole \
                 model; or give a local file."
            }
            StreamError::Parse { source, .. } => source.help(),
            StreamError::ParseLlmw { source, .. } => source.help(),
            StreamError::UnknownMagic { found, .. } => magic_help(found),
            StreamError::TooShort { .. } => {
                "the file is empty or cut off (an interrupted \
                download or copy), or the path names the wrong file: fetch it again."
            }
            StreamError::OutOfBounds { .. } => {
                "positional reads must lie inside the file; the \
                offset or length was computed wrongly."
            }
            StreamError::TensorOutOfBounds { .. } => {
                "the file is shorter than its tensor \
                directory says: it is truncated (an incomplete download or copy). Compare its \
                size with the source."
            }
            StreamError::TooLarge { .. } => {
                "the size exceeds this machine's address space or \
                free memory; read the data in parts."
            }
            StreamError::Locked { exclusive: true, .. } => {
                "wait until the other command has \
                finished (an engine or `sipllm verify` holding the file open keeps it locked for \
                as long as it runs), then edit again; or use -o OUT, which never writes to the \
                file."
            }
            StreamError::Locked { exclusive: false, .. } => {
                "an in-place edit holds the file for \
                milliseconds; one that holds it longer is stuck (stopped?): end it, run `sipllm \
                edit --recover FILE` if it left a header backup, and read again."
            }
            StreamError::Tensor(e) => e.help(),
            StreamError::Meta(e) => e.help(),
            StreamError::Split(e) => e.help(),
        }
    }
}

impl Kind for TensorError {
    fn code(&self) -> &'static str {
        match self {
            TensorError::SizeMismatch { .. } => "stream::read::size_mismatch",
            TensorError::NotInSource { .. } => "stream::tensor::not_in_source",
            TensorError::Missing { .. } => "stream::tensor::missing",
            TensorError::UnknownSize { .. } => "stream::tensor::unknown_size",
            TensorError::Dequant { source, .. } => source.code(),
            TensorError::ElementRange { .. } => "stream::values::element_range",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            TensorError::SizeMismatch { .. } => {
                "give a destination of at least the tensor's \
                `nbytes`, or use `read_raw_at` to read part of a tensor."
            }
            TensorError::Missing { .. } => {
                "list the names with `tensors()`; names are exact \
                (case-sensitive, no pattern)."
            }
            TensorError::NotInSource { .. } => {
                "pass a TensorInfo obtained from this source's \
                `tensors()` or `find()`, not one from another file."
            }
            TensorError::UnknownSize { .. } => {
                "this tensor type is newer than this reader (the \
                lenient profile lists it anyway); its bytes can only be read with `read_raw_at` \
                once its size is known from elsewhere."
            }
            TensorError::Dequant { source, .. } => source.help(),
            TensorError::ElementRange { .. } => {
                "pass a range with start <= end <= the \
                tensor's element count, and a buffer of end - start values."
            }
        }
    }
}

impl Kind for MetaError {
    fn code(&self) -> &'static str {
        match self {
            MetaError::Missing { .. } => "stream::meta::missing",
            MetaError::Type { .. } => "stream::meta::type_mismatch",
            MetaError::Range { .. } => "stream::meta::out_of_range",
            MetaError::Utf8 { .. } => "stream::meta::invalid_utf8",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            MetaError::Missing { .. } => {
                "the model file lacks this key: check the \
                architecture prefix (e.g. `llama.` vs `qwen2.`) and the converter version."
            }
            MetaError::Type { .. } => {
                "the value is stored with another type; use the \
                accessor for the stored type, or `meta()` for the raw value."
            }
            MetaError::Range { .. } => {
                "the stored value is out of range for the type \
                asked for; use a wider type or check the file."
            }
            MetaError::Utf8 { .. } => {
                "the writer stored raw bytes; read the value with \
                `meta()` and `MetaStr::as_bytes`."
            }
        }
    }
}

impl Kind for SplitSetError {
    fn code(&self) -> &'static str {
        match self {
            SplitSetError::MissingShard { .. } => "stream::split::missing_shard",
            SplitSetError::NameMismatch { .. } => "stream::split::name_mismatch",
            SplitSetError::BadName { .. } => "stream::split::bad_name",
            SplitSetError::KeyMismatch { .. } => "stream::split::key_mismatch",
            SplitSetError::KeyType { .. } => "stream::split::key_type",
            SplitSetError::KeyMissing { .. } => "stream::split::key_missing",
            SplitSetError::BadIndex { .. } => "stream::split::bad_index",
            SplitSetError::DuplicateShard { .. } => "stream::split::duplicate_shard",
            SplitSetError::DuplicateTensor { .. } => "stream::split::duplicate_tensor",
            SplitSetError::TensorCount { .. } => "stream::split::tensor_count",
            SplitSetError::NotASet { .. } => "stream::split::not_a_set",
            SplitSetError::EndianMismatch { .. } => "stream::split::endian_mismatch",
            SplitSetError::TooManyFiles { .. } => "stream::split::too_many_files",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            SplitSetError::MissingShard { .. } => {
                "a split set is only complete with every \
                shard beside the first, named <prefix>-NNNNN-of-NNNNN.gguf as gguf-split wrote \
                them: download or copy the missing file."
            }
            SplitSetError::NameMismatch { .. } => {
                "a shard was renamed or copied over another: \
                restore the names gguf-split gave (numbered from 1, while split.no counts from \
                0), or open the files as an explicit list, which ignores names."
            }
            SplitSetError::BadName { .. } => {
                "rename the shards to \
                <prefix>-NNNNN-of-NNNNN.gguf (numbered from 1), or open them as an explicit list \
                of paths."
            }
            SplitSetError::KeyMismatch { .. } => {
                "the shards come from different splits (an \
                older download mixed with a newer one?): fetch the whole set again."
            }
            SplitSetError::KeyType { .. } => {
                "llama.cpp requires split.no and split.count as \
                UINT16 and split.tensors.count as INT32; rewrite the keys with those types."
            }
            SplitSetError::KeyMissing { .. } => {
                "every shard carries split.no and \
                split.count, and the first also split.tensors.count: the file was not written by \
                a split tool, or its keys were removed."
            }
            SplitSetError::BadIndex { .. } | SplitSetError::DuplicateShard { .. } => {
                "the \
                shards' split.no values must be 0, 1, … split.count - 1, once each: a shard is \
                corrupt or belongs to another set."
            }
            SplitSetError::DuplicateTensor { .. } => {
                "a tensor may be in only one shard \
                (llama.cpp rejects the set): a shard is duplicated or belongs to another set."
            }
            SplitSetError::TensorCount { .. } => {
                "the shards do not add up to the model \
                the first shard describes: a shard is truncated, from another set, or missing."
            }
            SplitSetError::NotASet { .. } => {
                "open the file as a single model; merging and \
                set operations need the first shard of a split set."
            }
            SplitSetError::EndianMismatch { .. } => {
                "the shards come from different \
                writers; re-split the original model, so every shard has its byte order."
            }
            SplitSetError::TooManyFiles { .. } => {
                "raise the open-file limit (`ulimit -n`, \
                or the hard limit in /etc/security/limits.conf), or merge the set on a machine \
                that allows it and re-split it into fewer, larger shards."
            }
        }
    }
}

impl StreamError {
    /// The stable code: `stream::<area>::<name>`, or the parser's `gguf::…` code for
    /// [`StreamError::Parse`] and `llmw::…` code for [`StreamError::ParseLlmw`]. Codes are API
    /// and never reused. (The same as [`Kind::code`], without importing the trait.)
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// What to check or change to fix the problem. (The same as [`Kind::help`].)
    pub fn help(&self) -> &'static str {
        Kind::help(self)
    }

    /// `path: message` when the error names a file ([`path`](Self::path)), else the message:
    /// for a caller that prints the error as one line.
    pub fn located(&self) -> Located<'_> {
        Located(self)
    }

    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            StreamError::Open { path, .. }
            | StreamError::NotAFile { path, .. }
            | StreamError::Locked { path, .. }
            | StreamError::Spool { path, .. } => Some(path),
            StreamError::Io { path, .. }
            | StreamError::UnexpectedEof { path, .. }
            | StreamError::Parse { path, .. }
            | StreamError::ParseLlmw { path, .. }
            | StreamError::UnknownMagic { path, .. }
            | StreamError::TooShort { path, .. }
            | StreamError::OutOfBounds { path, .. }
            | StreamError::TensorOutOfBounds { path, .. } => path.as_deref(),
            StreamError::Split(e) => e.path(),
            StreamError::TooLarge { .. } | StreamError::Tensor(_) | StreamError::Meta(_) => None,
        }
    }

    /// The absolute byte offset the error concerns, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            StreamError::Io { offset, .. }
            | StreamError::Spool { offset, .. }
            | StreamError::UnexpectedEof { offset, .. }
            | StreamError::OutOfBounds { offset, .. }
            | StreamError::TensorOutOfBounds { offset, .. }
            | StreamError::Tensor(TensorError::NotInSource { offset, .. }) => Some(*offset),
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

    /// Turns the I/O error of a read of `len` bytes at `offset` (of the file at `path`, if
    /// any) into a `StreamError`: a [`ShortRead`] becomes [`StreamError::UnexpectedEof`],
    /// anything else [`StreamError::Io`]. For every reader of a [`ReadAt`](crate::ReadAt),
    /// this crate's and the write side's.
    pub fn read(path: Option<&Path>, offset: u64, len: u64, err: io::Error) -> StreamError {
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

/// A [`StreamError`] with its file: `path: message` ([`StreamError::located`]).
#[derive(Debug, Clone, Copy)]
pub struct Located<'a>(&'a StreamError);

impl std::fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.path() {
            Some(path) => write!(f, "{}: {}", path.display(), self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

impl SplitSetError {
    /// The stable code (`stream::split::…`); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// The shard (or the file the set was opened from) the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SplitSetError::MissingShard { set: path, .. }
            | SplitSetError::NameMismatch { path, .. }
            | SplitSetError::BadName { path, .. }
            | SplitSetError::TooManyFiles { set: path, .. } => Some(path),
            SplitSetError::KeyMismatch { path, .. }
            | SplitSetError::KeyType { path, .. }
            | SplitSetError::KeyMissing { path, .. }
            | SplitSetError::BadIndex { path, .. }
            | SplitSetError::TensorCount { path, .. }
            | SplitSetError::NotASet { path, .. }
            | SplitSetError::EndianMismatch { path, .. } => path.as_deref(),
            SplitSetError::DuplicateShard { second, .. }
            | SplitSetError::DuplicateTensor { second, .. } => second.as_deref(),
        }
    }
}

impl TensorError {
    /// The stable code (`stream::tensor::…`, `stream::read::…`, `stream::values::…`, or the
    /// dequantizer's); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }
}

impl MetaError {
    /// The stable code (`stream::meta::…`); [`Kind::code`] without importing the trait.
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
                StreamError::Tensor(TensorError::SizeMismatch {
                    tensor: "t".into(),
                    expected: 4,
                    got: 2,
                }),
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
                StreamError::Tensor(TensorError::NotInSource { tensor: "t".into(), offset: 0 }),
                "stream::tensor::not_in_source",
            ),
            (
                StreamError::Tensor(TensorError::UnknownSize {
                    tensor: "t".into(),
                    ggml_type: GgmlType::from_code(99),
                }),
                "stream::tensor::unknown_size",
            ),
            (
                StreamError::TooLarge { what: "tensor \"t\"".into(), bytes: u64::MAX },
                "stream::memory::too_large",
            ),
            (StreamError::Meta(MetaError::Missing { key: "k".into() }), "stream::meta::missing"),
            (
                StreamError::Meta(MetaError::Type {
                    key: "k".into(),
                    expected: "float",
                    actual: "integer",
                }),
                "stream::meta::type_mismatch",
            ),
            (
                StreamError::Meta(MetaError::Range {
                    key: "k".into(),
                    index: Some(3),
                    value: -1,
                    target: "u8",
                }),
                "stream::meta::out_of_range",
            ),
            (
                StreamError::Meta(MetaError::Utf8 { key: "k".into(), index: None }),
                "stream::meta::invalid_utf8",
            ),
            (
                StreamError::UnknownMagic { path: path.clone(), found: *b"PK\x03\x04" },
                "stream::open::unknown_magic",
            ),
            (StreamError::TooShort { path: path.clone(), len: 3 }, "stream::open::too_short"),
            (
                StreamError::Spool { path: "/tmp/x".into(), offset: 0, source: io() },
                "stream::io::spool",
            ),
            (
                StreamError::Split(SplitSetError::MissingShard {
                    set: "m-00001-of-00003.gguf".into(),
                    missing: Some("m-00002-of-00003.gguf".into()),
                    split_no: 1,
                    count: 3,
                }),
                "stream::split::missing_shard",
            ),
            (
                StreamError::Split(SplitSetError::NameMismatch {
                    path: "m-00003-of-00003.gguf".into(),
                    name_number: 3,
                    name_count: 3,
                    split_no: 1,
                    count: 3,
                }),
                "stream::split::name_mismatch",
            ),
            (
                StreamError::Split(SplitSetError::BadName {
                    path: "m.gguf".into(),
                    split_no: 0,
                    count: 3,
                }),
                "stream::split::bad_name",
            ),
            (
                StreamError::Split(SplitSetError::KeyMismatch {
                    path: path.clone(),
                    key: "split.count",
                    expected: 3,
                    found: 4,
                    reference: None,
                }),
                "stream::split::key_mismatch",
            ),
            (
                StreamError::Split(SplitSetError::KeyType {
                    path: path.clone(),
                    key: "split.no",
                    expected: "UINT16",
                    found: "UINT32",
                }),
                "stream::split::key_type",
            ),
            (
                StreamError::Split(SplitSetError::KeyMissing {
                    path: path.clone(),
                    key: "split.no",
                }),
                "stream::split::key_missing",
            ),
            (
                StreamError::Split(SplitSetError::BadIndex {
                    path: path.clone(),
                    split_no: 3,
                    count: 3,
                }),
                "stream::split::bad_index",
            ),
            (
                StreamError::Split(SplitSetError::DuplicateShard {
                    first: None,
                    second: None,
                    split_no: 0,
                }),
                "stream::split::duplicate_shard",
            ),
            (
                StreamError::Split(SplitSetError::DuplicateTensor {
                    tensor: "t".into(),
                    first: path.clone(),
                    second: Some("n.gguf".into()),
                }),
                "stream::split::duplicate_tensor",
            ),
            (
                StreamError::Split(SplitSetError::TensorCount {
                    path: path.clone(),
                    declared: 6,
                    found: 5,
                    shards: 3,
                }),
                "stream::split::tensor_count",
            ),
            (
                StreamError::Split(SplitSetError::NotASet { path: None, count: None }),
                "stream::split::not_a_set",
            ),
            (
                StreamError::NotAFile { path: "m.gguf".into(), kind: FileKind::Fifo },
                "stream::open::not_a_file",
            ),
            (
                StreamError::Locked {
                    path: "m.gguf".into(),
                    exclusive: true,
                    wait: Duration::ZERO,
                },
                "stream::lock::busy",
            ),
            (
                StreamError::Split(SplitSetError::EndianMismatch {
                    path: Some("m-00002-of-00002.gguf".into()),
                    expected: sipllm_gguf::Endian::Little,
                    found: sipllm_gguf::Endian::Big,
                    reference: Some("m-00001-of-00002.gguf".into()),
                }),
                "stream::split::endian_mismatch",
            ),
            (
                StreamError::Split(SplitSetError::TooManyFiles {
                    set: "m-00001-of-04000.gguf".into(),
                    count: 4000,
                    limit: 1024,
                }),
                "stream::split::too_many_files",
            ),
            (
                StreamError::Tensor(TensorError::Dequant {
                    tensor: "t".into(),
                    source: sipllm_quants::DequantError::UnsupportedType { ty: GgmlType::I8 },
                }),
                "quants::unsupported_type",
            ),
            (
                StreamError::Tensor(TensorError::ElementRange {
                    tensor: "t".into(),
                    start: 4,
                    end: 2,
                    count: 8,
                    got: 0,
                }),
                "stream::values::element_range",
            ),
            (
                StreamError::Tensor(TensorError::Missing { name: "t".into() }),
                "stream::tensor::missing",
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

        assert_eq!(
            cases[2].0.located().to_string(),
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
            cases.iter().map(|(e, _)| e).find(|e| e.code() == code).map(|e| e.located().to_string())
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
            split("stream::split::endian_mismatch").unwrap(),
            "m-00002-of-00002.gguf: the shard is big-endian, but m-00001-of-00002.gguf is \
             little-endian: one set has one byte order"
        );
        assert_eq!(
            split("stream::lock::busy").unwrap(),
            "m.gguf: the file is in use by another process (an in-place edit, or a reader such \
             as sipllm verify): it was not changed"
        );
    }

    #[test]
    fn unknown_magic_shows_hex_ascii_and_the_supported_magics() {
        let e = StreamError::UnknownMagic { path: Some("m.llmw".into()), found: *b"PK\x03\x04" };
        assert_eq!(
            e.located().to_string(),
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
        assert_eq!(e.to_string().strip_prefix("empty.gguf"), None, "the path is context");
        assert_eq!(
            e.located().to_string(),
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
        assert_eq!(e.to_string(), source.to_string());
        assert_eq!(e.located().to_string(), format!("m.llmw: {source}"));
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
