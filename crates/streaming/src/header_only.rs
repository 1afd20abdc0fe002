//! [`ModelOrHeader`]: an open for inspection, which under the lenient profile keeps the
//! parsed header of a GGUF whose tensor data is not all inside the file (a truncated
//! download, a header-only copy) instead of failing.
//!
//! The bounds check is what makes a [`Model`] a weight source, so such a file cannot be one;
//! but its header parsed (the lenient parser warned of the data it does not hold), and a
//! person inspecting it wants that header. The header comes from the one parse of the one
//! open: nothing is read twice.

#[cfg(feature = "file")]
use std::path::Path;
use std::path::PathBuf;

use sipllm_gguf::{Gguf, Profile};

use crate::backing::ReadAt;
use crate::error::StreamError;
#[cfg(feature = "file")]
use crate::file::FileBacking;
use crate::gguf_file::GgufFile;
use crate::header_bytes::HeaderBytes;
use crate::header_file::Opened;
use crate::llmw_file::LlmwFile;
use crate::model::{Format, Model};
use crate::options::OpenOptions;
#[cfg(feature = "file")]
use crate::split::{SplitFile, SplitKeys};

/// A model opened for inspection: a weight source, or under the lenient profile the header
/// of a GGUF whose tensor data is not all inside it. `M` is the model's type: [`Model`] here,
/// a remote crate's model over range requests there.
#[derive(Debug)]
pub enum ModelOrHeader<M = Model> {
    /// Every tensor lies inside the file: the model, as [`Model::open`] gives it.
    Model(M),
    /// A GGUF whose tensor data is not all inside the file, parsed by the lenient profile.
    Header(HeaderOnly),
}

/// The header of a GGUF whose tensor data is not all inside the file: inspectable, but no
/// tensor can be read from it.
#[derive(Debug)]
pub struct HeaderOnly {
    gguf: Box<Gguf<HeaderBytes>>,
    file_size: u64,
    error: StreamError,
}

impl HeaderOnly {
    /// The parsed header.
    pub fn gguf(&self) -> &Gguf<HeaderBytes> {
        &self.gguf
    }

    /// The size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Why the file is no weight source: the first tensor outside it
    /// ([`StreamErrorKind::TensorOutOfBounds`](crate::StreamErrorKind::TensorOutOfBounds)).
    pub fn error(&self) -> &StreamError {
        &self.error
    }

    /// The parsed header, owned.
    pub fn into_gguf(self) -> Gguf<HeaderBytes> {
        *self.gguf
    }
}

impl<M> ModelOrHeader<M> {
    /// The model, or the bounds error of a header kept for inspection.
    pub fn into_model(self) -> Result<M, StreamError> {
        match self {
            ModelOrHeader::Model(m) => Ok(m),
            ModelOrHeader::Header(h) => Err(h.error),
        }
    }

    /// The model in `f(model)`; a header stays as it is.
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> ModelOrHeader<N> {
        match self {
            ModelOrHeader::Model(m) => ModelOrHeader::Model(f(m)),
            ModelOrHeader::Header(h) => ModelOrHeader::Header(h),
        }
    }
}

impl ModelOrHeader {
    /// Opens `path` as [`Model::open`] does (a shard of a split set as the whole set); under
    /// the lenient profile, a GGUF whose own tensor data is not all inside it opens as its
    /// [`Header`](ModelOrHeader::Header). A shard whose sibling's data is outside the sibling
    /// is that sibling's error: open the shard alone ([`open_single`](Self::open_single)) to
    /// inspect it.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Self, StreamError> {
        open_path(path.as_ref(), options, true, keeps_header(options))
    }

    /// [`open`](Self::open) for the single file at `path`: a shard of a split set opens as
    /// the GGUF file it is, even when its siblings are missing.
    #[cfg(feature = "file")]
    pub fn open_single(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Self, StreamError> {
        open_path(path.as_ref(), options, false, keeps_header(options))
    }

    /// [`Model::from_named_source`], keeping the header as [`open`](Self::open) does.
    pub fn from_named_source(
        source: impl ReadAt + 'static,
        name: impl Into<PathBuf>,
        options: &OpenOptions,
    ) -> Result<Self, StreamError> {
        let name = name.into();
        Ok(match Format::detect(&source, Some(&name))? {
            Format::Gguf => {
                let opened = GgufFile::from_named_source_or_header(source, name, options)?;
                header_kept(opened, keeps_header(options))?.map(Model::Gguf)
            }
            Format::Llmw => ModelOrHeader::Model(Model::Llmw(LlmwFile::from_named_source(
                source, name, options,
            )?)),
        })
    }
}

/// The lenient profile keeps headers; the others report the bounds error as ever.
fn keeps_header(options: &OpenOptions) -> bool {
    options.parse.profile == Profile::Lenient
}

/// The file opened, or its header when `keep` and its tensor data is outside it.
fn header_kept(
    opened: Opened<Gguf<HeaderBytes>>,
    keep: bool,
) -> Result<ModelOrHeader<GgufFile>, StreamError> {
    match opened {
        Opened::File(file) => Ok(ModelOrHeader::Model(file)),
        Opened::OutOfBounds { ast, file_size, error } if keep => {
            Ok(ModelOrHeader::Header(HeaderOnly { gguf: Box::new(ast), file_size, error }))
        }
        Opened::OutOfBounds { error, .. } => Err(error),
    }
}

/// Opens `path`, whatever its format: the one open behind [`Model::open`] (`whole_set`, no
/// header kept) and [`ModelOrHeader`]'s. One positional read of the first 4 bytes picks the
/// format ([`Format::detect`]; the name is not consulted), then that format's opener reads
/// the header through the refilling window.
#[cfg(feature = "file")]
pub(crate) fn open_path(
    path: &Path,
    options: &OpenOptions,
    whole_set: bool,
    keep_header: bool,
) -> Result<ModelOrHeader, StreamError> {
    let backing = FileBacking::open(path, options.backend)?;
    // Like the headers, the magic is read with pread whatever the backend.
    let format = crate::model::detect_for(&backing.pread_view(), Some(path), options)?;
    Ok(match format {
        Format::Gguf => {
            let opened = GgufFile::from_backing_or_header(backing, options)?;
            match header_kept(opened, keep_header)? {
                ModelOrHeader::Model(file) => ModelOrHeader::Model(
                    if whole_set && SplitKeys::read(file.gguf(), Some(path))?.is_set() {
                        Model::Split(SplitFile::from_shard(path, file, options)?)
                    } else {
                        Model::Gguf(file)
                    },
                ),
                ModelOrHeader::Header(h) => ModelOrHeader::Header(h),
            }
        }
        Format::Llmw => {
            ModelOrHeader::Model(Model::Llmw(LlmwFile::from_backing(backing, options)?))
        }
    })
}
