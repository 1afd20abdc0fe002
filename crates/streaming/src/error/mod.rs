//! The read side's one error type.
//!
//! [`StreamError`] is the location once — the file, when the source has a name — around a
//! [`StreamErrorKind`], what went wrong. A kind keeps a parser error intact
//! ([`StreamErrorKind::Parse`] holds the [`sipllm_gguf::Error`], [`StreamErrorKind::ParseLlmw`]
//! the [`sipllm_llmw::Error`], each with its offset, logical path, code and help) and adds what
//! only an I/O layer knows: the offset and length of a failed read, how many bytes were missing
//! at the end of the file, which format magic was found. What a request named wrongly is a
//! [`TensorError`] (a tensor read) or a [`MetaError`] (a metadata key); what is wrong with a
//! split set is a [`SplitSetError`]. Every kind has a stable code (`streaming::<area>::<name>`;
//! a parse error keeps the parser's `gguf::…` or `llmw::…` code) and a `&'static str` help
//! text, through the [`Kind`] trait the parsers' findings implement too. Writing has its own
//! errors, in the write-side crate (`sipllm-edit`).
//!
//! `Display` says **what** went wrong; **where** is context: [`StreamError::path`] (the file
//! the error is about is never repeated in the message; other files it involves, such as the
//! shard a value was compared with, are named) and [`StreamError::offset`]. A caller that only
//! prints gets both from [`StreamError::located`]; the CLI renders them around the message.
//!
//! One file per error type: this one (the source's), `tensor.rs`, `meta.rs`, `split.rs`.

mod file_kind;
mod magic;
mod meta;
mod split;
mod tensor;

pub use file_kind::FileKind;
pub use meta::MetaError;
pub use split::SplitSetError;
pub use tensor::TensorError;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sipllm_format::{Kind, group};

use crate::bounds::ShortRead;

use magic::{hex, magic_help};

/// Everything that can go wrong opening a weight source, reading from it, or reading its
/// metadata: where — the file, once ([`path`](Self::path)), and the byte
/// ([`offset`](Self::offset)) — around what ([`kind`](Self::kind)).
///
/// One pointer wide: a `Result<T, StreamError>` costs its callers no more than a `T`'s
/// worth of moves, however large a kind grows.
#[derive(Debug)]
pub struct StreamError(Box<Inner>);

/// The file and the kind, behind [`StreamError`]'s one pointer.
#[derive(Debug)]
struct Inner {
    path: Option<PathBuf>,
    kind: StreamErrorKind,
}

/// What went wrong opening a weight source, reading from it, or reading its metadata; the
/// file it happened to is the [`StreamError`] around it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamErrorKind {
    /// The file could not be opened (or its size read, or mapped).
    #[error("cannot open: {source}")]
    Open {
        /// The operating system's error.
        source: io::Error,
    },
    /// The path names a FIFO, socket or device, not a regular file: opening it could block
    /// forever (a FIFO without a writer) and it has no size to bounds-check against.
    #[error("cannot open: it is {kind}, not a regular file")]
    NotAFile {
        /// What it is.
        kind: FileKind,
    },
    /// A read failed with an I/O error.
    #[error("I/O error reading {len} bytes at offset {offset}: {source}")]
    Io {
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
        "unexpected end of file: {} of the {} bytes requested at offset {} are missing (the \
         input ends at byte {})",
        group(*missing),
        group(*len),
        group(*offset),
        group(offset.saturating_add(len.saturating_sub(*missing)))
    )]
    UnexpectedEof {
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
        /// Offset of the failed write (0 for its creation).
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The GGUF header or tensor directory is invalid: the parser's error, unchanged.
    #[error("{source}")]
    Parse {
        /// The parser's error (offset, logical path, code, help).
        source: sipllm_gguf::Error,
    },
    /// The `.llmw` header or tensor directory is invalid: the `.llmw` parser's error,
    /// unchanged.
    #[error("{source}")]
    ParseLlmw {
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
        /// Its length in bytes (0 to 3).
        len: u64,
    },
    /// A positional read reaches outside the file.
    #[error(
        "a read of {} bytes at offset {} reaches outside the file ({} bytes)",
        group(*len),
        group(*offset),
        group(*file_size)
    )]
    OutOfBounds {
        /// Absolute offset requested.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// The size of the file.
        file_size: u64,
    },
    /// A tensor's data does not lie inside the file (checked when the source is opened).
    #[error(
        "tensor {tensor:?}: its {} bytes at offset {} end past the end of the file ({} bytes)",
        group(*nbytes),
        group(*offset),
        group(*file_size)
    )]
    TensorOutOfBounds {
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
    #[error("{what} of {} bytes does not fit in memory", group(*bytes))]
    TooLarge {
        /// What was to be held (e.g. `tensor "x"`, `header buffer`).
        what: String,
        /// The byte count.
        bytes: u64,
    },
    /// Another process holds an advisory lock on the file ([`crate::lock`]).
    #[error("{}", locked(*exclusive, *wait))]
    Locked {
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

impl Kind for StreamErrorKind {
    fn code(&self) -> &'static str {
        match self {
            StreamErrorKind::Open { .. } => "streaming::io::open",
            StreamErrorKind::NotAFile { .. } => "streaming::open::not_a_file",
            StreamErrorKind::Io { .. } => "streaming::io::read",
            StreamErrorKind::UnexpectedEof { .. } => "streaming::io::unexpected_eof",
            StreamErrorKind::Parse { source, .. } => source.code(),
            StreamErrorKind::ParseLlmw { source, .. } => source.code(),
            StreamErrorKind::UnknownMagic { .. } => "streaming::open::unknown_magic",
            StreamErrorKind::TooShort { .. } => "streaming::open::too_short",
            StreamErrorKind::OutOfBounds { .. } => "streaming::read::out_of_bounds",
            StreamErrorKind::TensorOutOfBounds { .. } => "streaming::tensor::out_of_bounds",
            StreamErrorKind::TooLarge { .. } => "streaming::memory::too_large",
            StreamErrorKind::Locked { .. } => "streaming::lock::busy",
            StreamErrorKind::Spool { .. } => "streaming::io::spool",
            StreamErrorKind::Tensor(e) => e.code(),
            StreamErrorKind::Meta(e) => e.code(),
            StreamErrorKind::Split(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            StreamErrorKind::Open { .. } => {
                "check that the path exists, is a regular file and is readable."
            }
            StreamErrorKind::NotAFile { .. } => {
                "model files are read by position, so they must be \
                regular files: copy the stream or device into a file first (`cat SRC > \
                m.gguf`)."
            }
            StreamErrorKind::Io { .. } => {
                "the storage reported an error: check the device, the \
                network file system, or the permissions."
            }
            StreamErrorKind::UnexpectedEof { .. } => {
                "the file became shorter after it was opened \
                (another process truncated or replaced it): reopen it, and copy models with a \
                write-to-temporary-then-rename so readers never see a partial file."
            }
            StreamErrorKind::Spool { .. } => {
                "the temporary directory (TMPDIR) must be writable and have room for the whole \
                 model; or give a local file."
            }
            StreamErrorKind::Parse { source, .. } => source.help(),
            StreamErrorKind::ParseLlmw { source, .. } => source.help(),
            StreamErrorKind::UnknownMagic { found, .. } => magic_help(found),
            StreamErrorKind::TooShort { .. } => {
                "the file is empty or cut off (an interrupted \
                download or copy), or the path names the wrong file: fetch it again."
            }
            StreamErrorKind::OutOfBounds { .. } => {
                "positional reads must lie inside the file; the \
                offset or length was computed wrongly."
            }
            StreamErrorKind::TensorOutOfBounds { .. } => {
                "the file is shorter than its tensor \
                directory says: it is truncated (an incomplete download or copy). Compare its \
                size with the source."
            }
            StreamErrorKind::TooLarge { .. } => {
                "the size exceeds this machine's address space or \
                free memory; read the data in parts."
            }
            StreamErrorKind::Locked { exclusive: true, .. } => {
                "wait until the other command has \
                finished (an engine or `sipllm verify` holding the file open keeps it locked for \
                as long as it runs), then edit again; or use -o OUT, which never writes to the \
                file."
            }
            StreamErrorKind::Locked { exclusive: false, .. } => {
                "an in-place edit holds the file for \
                milliseconds; one that holds it longer is stuck (stopped?): end it, run `sipllm \
                edit --recover FILE` if it left a header backup, and read again."
            }
            StreamErrorKind::Tensor(e) => e.help(),
            StreamErrorKind::Meta(e) => e.help(),
            StreamErrorKind::Split(e) => e.help(),
        }
    }
}

impl Kind for StreamError {
    fn code(&self) -> &'static str {
        self.0.kind.code()
    }

    fn help(&self) -> &'static str {
        self.0.kind.help()
    }
}

impl std::fmt::Display for StreamError {
    /// What went wrong; the file is context ([`path`](Self::path), [`located`](Self::located)).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.kind.fmt(f)
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.kind.source()
    }
}

impl From<StreamErrorKind> for StreamError {
    /// An error about no file in particular (a request, a size), or one whose file is added
    /// later ([`in_file`](StreamError::in_file)).
    fn from(kind: StreamErrorKind) -> StreamError {
        StreamError(Box::new(Inner { path: None, kind }))
    }
}

macro_rules! from_area {
    ($($area:ident),*) => {$(
        impl From<$area> for StreamError {
            fn from(e: $area) -> StreamError {
                StreamErrorKind::from(e).into()
            }
        }
    )*};
}

from_area!(TensorError, MetaError, SplitSetError);
impl StreamError {
    /// `kind`, happening to the file at `path` (when the source is a file).
    pub fn new(path: Option<PathBuf>, kind: StreamErrorKind) -> StreamError {
        StreamError(Box::new(Inner { path, kind }))
    }

    /// `kind`, happening to the file at `path`.
    pub fn at(path: impl Into<PathBuf>, kind: StreamErrorKind) -> StreamError {
        StreamError(Box::new(Inner { path: Some(path.into()), kind }))
    }

    /// The same error, said of the file at `path` when it names none yet.
    pub fn in_file(mut self, path: Option<&Path>) -> StreamError {
        if self.0.path.is_none() {
            self.0.path = path.map(Path::to_path_buf);
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &StreamErrorKind {
        &self.0.kind
    }

    /// What went wrong, owned.
    pub fn into_kind(self) -> StreamErrorKind {
        self.0.kind
    }

    /// The stable code: `streaming::<area>::<name>`, or the parser's `gguf::…` code for
    /// [`StreamErrorKind::Parse`] and `llmw::…` code for [`StreamErrorKind::ParseLlmw`]. Codes
    /// are API and never reused. (The same as [`Kind::code`], without importing the trait.)
    pub fn code(&self) -> &'static str {
        self.0.kind.code()
    }

    /// What to check or change to fix the problem. (The same as [`Kind::help`].)
    pub fn help(&self) -> &'static str {
        self.0.kind.help()
    }

    /// `path: message` when the error names a file ([`path`](Self::path)), else the message:
    /// for a caller that prints the error as one line.
    pub fn located(&self) -> Located<'_> {
        Located(self)
    }

    /// The file the error concerns, when known: the one this error was raised for, or the
    /// shard a split set's error is about.
    pub fn path(&self) -> Option<&Path> {
        match (&self.0.path, &self.0.kind) {
            (Some(path), _) => Some(path),
            (None, StreamErrorKind::Split(e)) => e.path(),
            (None, _) => None,
        }
    }

    /// The absolute byte offset the error concerns, when there is one.
    pub fn offset(&self) -> Option<u64> {
        self.0.kind.offset()
    }

    /// The GGUF parser's error, for [`StreamErrorKind::Parse`].
    pub fn parse_error(&self) -> Option<&sipllm_gguf::Error> {
        // One kind holds a GGUF parser's error.
        if let StreamErrorKind::Parse { source } = &self.0.kind { Some(source) } else { None }
    }

    /// The `.llmw` parser's error, for [`StreamErrorKind::ParseLlmw`].
    pub fn llmw_error(&self) -> Option<&sipllm_llmw::Error> {
        // One kind holds a `.llmw` parser's error.
        if let StreamErrorKind::ParseLlmw { source } = &self.0.kind { Some(source) } else { None }
    }

    /// True when the error is a parser's verdict on the file's bytes
    /// ([`StreamErrorKind::Parse`], [`StreamErrorKind::ParseLlmw`]), not I/O, a format
    /// mismatch, or a request.
    pub fn is_parse(&self) -> bool {
        matches!(self.0.kind, StreamErrorKind::Parse { .. } | StreamErrorKind::ParseLlmw { .. })
    }

    /// Wraps a GGUF parser error.
    pub(crate) fn parse(path: Option<&Path>, source: sipllm_gguf::Error) -> StreamError {
        StreamError::new(path.map(Path::to_path_buf), StreamErrorKind::Parse { source })
    }

    /// Wraps a `.llmw` parser error.
    pub(crate) fn parse_llmw(path: Option<&Path>, source: sipllm_llmw::Error) -> StreamError {
        StreamError::new(path.map(Path::to_path_buf), StreamErrorKind::ParseLlmw { source })
    }

    /// Turns the I/O error of a read of `len` bytes at `offset` (of the file at `path`, if
    /// any) into a `StreamError`: a [`ShortRead`] becomes [`StreamErrorKind::UnexpectedEof`],
    /// anything else [`StreamErrorKind::Io`]. For every reader of a
    /// [`ReadAt`](crate::ReadAt), this crate's and the write side's.
    pub fn read(path: Option<&Path>, offset: u64, len: u64, err: io::Error) -> StreamError {
        let kind = match ShortRead::from_io(&err) {
            Some(short) => StreamErrorKind::UnexpectedEof {
                offset: short.offset,
                len: short.len,
                missing: short.missing,
            },
            None => StreamErrorKind::Io { offset, len, source: err },
        };
        StreamError::new(path.map(Path::to_path_buf), kind)
    }
}

impl StreamErrorKind {
    /// The absolute byte offset the error concerns, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            StreamErrorKind::Io { offset, .. }
            | StreamErrorKind::Spool { offset, .. }
            | StreamErrorKind::UnexpectedEof { offset, .. }
            | StreamErrorKind::OutOfBounds { offset, .. }
            | StreamErrorKind::TensorOutOfBounds { offset, .. }
            | StreamErrorKind::Tensor(TensorError::NotInSource { offset, .. }) => Some(*offset),
            StreamErrorKind::Parse { source } => Some(source.offset()),
            StreamErrorKind::ParseLlmw { source } => Some(source.offset()),
            StreamErrorKind::UnknownMagic { .. } => Some(0),
            StreamErrorKind::TooShort { len } => Some(*len),
            // About a whole file, or a request: no byte of it is at fault.
            StreamErrorKind::Open { .. }
            | StreamErrorKind::NotAFile { .. }
            | StreamErrorKind::TooLarge { .. }
            | StreamErrorKind::Locked { .. }
            | StreamErrorKind::Tensor(_)
            | StreamErrorKind::Meta(_)
            | StreamErrorKind::Split(_) => None,
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

#[cfg(test)]
mod tests;
