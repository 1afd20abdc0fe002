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
//! One file per type: this one ([`WriteError`]), `split.rs`, `in_place.rs`.

mod in_place;
mod split;

pub use in_place::{BackupDefect, InPlaceError};
pub use split::{SplitError, SplitRefusal};

use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::{Kind, group};
use sipllm_streaming::StreamError;

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
        source: sipllm_gguf::writer::HeaderWriteError,
    },
    /// The `.llmw` writer refused the model or failed to write it (shown as the writer's
    /// error; [`path`](StreamError::path) gives the destination).
    #[error("{source}")]
    Llmw {
        /// The destination.
        path: PathBuf,
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

fn which_input(input: &Path, output: &Path) -> String {
    if input == output {
        "the input itself".to_owned()
    } else {
        format!("the input {} (another name for it)", input.display())
    }
}

impl Kind for WriteError {
    fn code(&self) -> &'static str {
        match self {
            WriteError::Create { .. } => "edit::write::create",
            WriteError::Write { .. } => "edit::write::io",
            WriteError::Header { .. } => "edit::write::header",
            WriteError::Llmw { .. } => "edit::write::llmw",
            WriteError::MissingData { .. } => "edit::write::missing_data",
            WriteError::DataLength { .. } => "edit::write::data_length",
            WriteError::OutputIsInput { .. } => "edit::write::output_is_input",
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

impl WriteError {
    /// The file the error concerns, when known.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WriteError::Create { path, .. }
            | WriteError::Write { path, .. }
            | WriteError::Llmw { path, .. }
            | WriteError::OutputIsInput { output: path, .. } => Some(path),
            WriteError::Read(e) => e.path(),
            // What a builder was given, before any file was named.
            WriteError::Header { .. }
            | WriteError::MissingData { .. }
            | WriteError::DataLength { .. } => None,
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

#[cfg(test)]
mod tests;
