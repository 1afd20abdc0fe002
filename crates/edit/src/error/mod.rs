//! The write side's errors, one type per area, each variant with a stable code and a
//! `&'static str` help through [`Kind`] (the trait the parsers' findings and the read side's
//! [`StreamError`] implement):
//!
//! * [`WriteError`] (`edit::write::…`): creating, writing and committing an output file, the
//!   header or tensor data given to a builder, an output that is its input.
//! * [`SplitError`] (`edit::split::…`): what splitting or merging refuses, or a write of it failing.
//! * [`InPlaceError`] (`edit::in_place::…`): the crash-safe header rewrite and its recovery.
//! * [`EditError`](crate::header::EditError) (`edit::…`) and
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
//!
//! One file per type: this one ([`WriteError`]), `split.rs`, `in_place.rs` (with
//! `backup_defect.rs`).

/// What every wrapper of a kind (the file once, around what went wrong) has alike: [`Kind`]
/// by its kind, and `code`, `help`, `kind`, `into_kind` without importing the trait.
/// Invoked in each wrapper's module (its field is private there).
macro_rules! wrapper {
    ($ty:ident => $kind:ident) => {
        impl Kind for $ty {
            fn code(&self) -> &'static str {
                self.0.kind.code()
            }

            fn help(&self) -> &'static str {
                self.0.kind.help()
            }
        }

        impl $ty {
            /// The stable code ([`Kind::code`], without importing the trait).
            pub fn code(&self) -> &'static str {
                Kind::code(self)
            }

            /// What to check or change ([`Kind::help`], without importing the trait).
            pub fn help(&self) -> &'static str {
                Kind::help(self)
            }

            /// What went wrong.
            pub fn kind(&self) -> &$kind {
                &self.0.kind
            }

            /// What went wrong, owned.
            pub fn into_kind(self) -> $kind {
                self.0.kind
            }
        }
    };
}

mod backup_defect;
mod in_place;
mod split;

pub use backup_defect::BackupDefect;
pub use in_place::{InPlaceError, InPlaceErrorKind};
pub use split::{SplitError, SplitErrorKind, SplitRefusal};

use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::{Kind, group};
use sipllm_streaming::StreamError;

/// Writing an output file failed or was refused; the destination was left as it was: the
/// file, once ([`path`](Self::path)), around what ([`kind`](Self::kind)).
///
/// One pointer wide, like the read side's [`StreamError`].
#[derive(Debug)]
pub struct WriteError(Box<WriteInner>);

/// The destination and the kind, behind [`WriteError`]'s one pointer.
#[derive(Debug)]
struct WriteInner {
    path: Option<PathBuf>,
    kind: WriteErrorKind,
}

/// What went wrong writing an output file; the destination is the [`WriteError`] around it
/// (none for what a builder was given before any file was named).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteErrorKind {
    /// The output file could not be created.
    #[error("cannot create a temporary file beside it: {source}")]
    Create {
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the output failed.
    #[error("writing at offset {offset}: {source}")]
    Write {
        /// Offset of the failed write.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
    },
    /// The header to write is invalid.
    #[error("cannot write the header: {source}")]
    Header {
        /// The writer's reason.
        source: sipllm_gguf::writer::HeaderWriteError,
    },
    /// The `.llmw` writer refused the model or failed to write it (shown as the writer's
    /// error).
    #[error("{source}")]
    Llmw {
        /// The `.llmw` writer's error (I/O, or a model the format cannot hold).
        source: sipllm_llmw::LlmwWriteError,
    },
    /// No data was given for a tensor.
    #[error("no data given for tensor {tensor:?}")]
    MissingData {
        /// The tensor.
        tensor: String,
    },
    /// A tensor's data has the wrong length.
    #[error(
        "tensor {tensor:?} needs {} bytes of data but {} were given",
        group(*expected),
        group(*got)
    )]
    DataLength {
        /// The tensor.
        tensor: String,
        /// Bytes the tensor's type and dims call for.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// A writer was given an output (the error's path) that is one of its inputs (by file
    /// identity: a symlink or hard link to the input is the input); nothing was written.
    #[error("{}", output_is_input(what, input, None))]
    OutputIsInput {
        /// The input.
        input: PathBuf,
        /// What the output is (`the manifest`, `the output`, `shard 2`).
        what: &'static str,
    },
    /// Reading a source of the write (a model, a tensor's bytes) failed: the read side's
    /// error, unchanged.
    #[error(transparent)]
    Read(#[from] StreamError),
}

/// The message of [`WriteErrorKind::OutputIsInput`], naming the output when it is known.
fn output_is_input(what: &str, input: &Path, output: Option<&Path>) -> String {
    let which = match output {
        Some(output) if input == output => "the input itself".to_owned(),
        _ => format!("the input {} (another name for it)", input.display()),
    };
    let output = output.map(|o| format!(" {}", o.display())).unwrap_or_default();
    format!("{what}{output} is {which}: writing it would destroy the input; nothing was written")
}

impl Kind for WriteErrorKind {
    fn code(&self) -> &'static str {
        match self {
            WriteErrorKind::Create { .. } => "edit::write::create",
            WriteErrorKind::Write { .. } => "edit::write::io",
            WriteErrorKind::Header { .. } => "edit::write::header",
            WriteErrorKind::Llmw { .. } => "edit::write::llmw",
            WriteErrorKind::MissingData { .. } => "edit::write::missing_data",
            WriteErrorKind::DataLength { .. } => "edit::write::data_length",
            WriteErrorKind::OutputIsInput { .. } => "edit::write::output_is_input",
            WriteErrorKind::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            WriteErrorKind::Create { .. } => {
                "the destination's directory must exist and be \
                writable (the new file is written beside the destination, then renamed)."
            }
            WriteErrorKind::Write { .. } => {
                "the disk may be full or failing; the destination was \
                left untouched."
            }
            WriteErrorKind::Header { .. } => {
                "the metadata or tensor list to write is invalid; \
                nothing was written."
            }
            WriteErrorKind::Llmw { .. } => {
                "the disk may be full or failing, a tensor's \
                source could not be read, or the model has what .llmw cannot hold; the \
                destination was left untouched."
            }
            WriteErrorKind::MissingData { .. } | WriteErrorKind::DataLength { .. } => {
                "give every \
                tensor exactly its byte size of data (type and dims decide it)."
            }
            WriteErrorKind::OutputIsInput { .. } => {
                "give an output path that is not the input: a \
                symlink or a hard link to the input names the input too."
            }
            WriteErrorKind::Read(e) => e.help(),
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.kind {
            WriteErrorKind::OutputIsInput { input, what } => {
                f.write_str(&output_is_input(what, input, self.0.path.as_deref()))
            }
            kind => kind.fmt(f),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.kind.source()
    }
}

impl From<WriteErrorKind> for WriteError {
    fn from(kind: WriteErrorKind) -> WriteError {
        WriteError(Box::new(WriteInner { path: None, kind }))
    }
}

impl From<StreamError> for WriteError {
    fn from(e: StreamError) -> WriteError {
        WriteErrorKind::Read(e).into()
    }
}

impl WriteError {
    /// `kind`, happening to the destination `path`.
    pub fn at(path: impl Into<PathBuf>, kind: WriteErrorKind) -> WriteError {
        WriteError(Box::new(WriteInner { path: Some(path.into()), kind }))
    }

    /// Writing at `offset` of `path` failed ([`WriteErrorKind::Write`]).
    pub fn write(path: impl Into<PathBuf>, offset: u64, source: io::Error) -> WriteError {
        WriteError::at(path, WriteErrorKind::Write { offset, source })
    }

    /// The file the error concerns, when known: the destination, or for a failed read the
    /// source's file.
    pub fn path(&self) -> Option<&Path> {
        match (&self.0.path, &self.0.kind) {
            (Some(path), _) => Some(path),
            (None, WriteErrorKind::Read(e)) => e.path(),
            (None, _) => None,
        }
    }

    /// The absolute byte offset the error concerns, when there is one: a failed write's, or
    /// the read side's.
    pub fn offset(&self) -> Option<u64> {
        match &self.0.kind {
            WriteErrorKind::Write { offset, .. } => Some(*offset),
            WriteErrorKind::Read(e) => e.offset(),
            WriteErrorKind::Create { .. }
            | WriteErrorKind::Header { .. }
            | WriteErrorKind::Llmw { .. }
            | WriteErrorKind::MissingData { .. }
            | WriteErrorKind::DataLength { .. }
            | WriteErrorKind::OutputIsInput { .. } => None,
        }
    }

    /// The read side's error, for [`WriteErrorKind::Read`].
    pub fn read_error(&self) -> Option<&StreamError> {
        // One kind holds a read error.
        if let WriteErrorKind::Read(e) = &self.0.kind { Some(e) } else { None }
    }
}

wrapper!(WriteError => WriteErrorKind);

#[cfg(test)]
mod tests;
