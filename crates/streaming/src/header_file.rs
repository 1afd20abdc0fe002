//! [`HeaderFile`]: one opener for every container format — a file as a [`WeightSource`],
//! opened by reading only its header — and the [`Container`] each format implements.
//!
//! GGUF and `.llmw` differ only in their parser (a chunk-fed
//! [`HeaderDecoder`](sipllm_format::HeaderDecoder)), the AST it assembles, how their tensor
//! directory and metadata map onto the seam, and how their errors are wrapped. Everything
//! else — the refilling window, the tensor store and its bounds checks, the backings, the
//! names — is this one generic type: [`GgufFile`](crate::GgufFile) is `HeaderFile<Gguf>` and
//! [`LlmwFile`](crate::LlmwFile) is `HeaderFile<Llmw>`.

use std::path::{Path, PathBuf};

use sipllm_format::HeaderDecoder;

use crate::MetaStr;
use crate::backing::ReadAt;
use crate::error::{StreamError, StreamErrorKind};
#[cfg(feature = "file")]
use crate::file::FileBacking;
use crate::header_bytes::HeaderBytes;
use crate::meta::Meta;
use crate::options::OpenOptions;
use crate::source::{SourceTensor, WeightSource};
use crate::store::TensorStore;
use crate::window::{self, HeaderStats};

mod sealed {
    pub trait Sealed {}
}

/// A container format the read side opens: its chunk-fed decoder, the AST the decoder's
/// directory becomes, and how the AST maps onto the [`WeightSource`] seam. Implemented by
/// the parsers' AST types [`sipllm_gguf::Gguf`] and [`sipllm_llmw::Llmw`] (over
/// [`HeaderBytes`]); sealed, since a new format is a change to this crate.
pub trait Container: sealed::Sealed + std::fmt::Debug + Send + Sync + Sized {
    /// The format's chunk-fed decoder.
    #[doc(hidden)]
    type Decoder: HeaderDecoder;

    /// A decoder for a source of `file_size` bytes, with `options`' parse options.
    #[doc(hidden)]
    fn decoder(options: &OpenOptions, file_size: u64) -> Self::Decoder;

    /// Wraps the parser's error, keeping it intact.
    #[doc(hidden)]
    fn wrap(path: Option<&Path>, err: <Self::Decoder as HeaderDecoder>::Error) -> StreamError;

    /// The AST over the header bytes and the decoded directory, and the offset where the data
    /// section starts.
    #[doc(hidden)]
    fn assemble(
        buf: HeaderBytes,
        dir: <Self::Decoder as HeaderDecoder>::Directory,
    ) -> Result<(Self, u64), <Self::Decoder as HeaderDecoder>::Error>;

    /// The tensor directory as the seam sees it (shapes row-major, offsets absolute).
    #[doc(hidden)]
    fn tensor_infos(&self) -> Vec<SourceTensor>;

    /// One metadata value by key, as the seam sees it.
    #[doc(hidden)]
    fn meta(&self, key: &str) -> Option<Meta<'_>>;

    /// The byte order the file stores numbers in.
    #[doc(hidden)]
    fn endian(&self) -> sipllm_gguf::Endian;

    /// Every metadata pair, in file order.
    #[doc(hidden)]
    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_>;
}

/// Reads and parses container `C`'s header and tensor directory at the start of `source`.
///
/// Drives the parser's chunk-fed decoder over one growing buffer: each time it needs more
/// bytes, one read of `max(window, needed)` bytes (never past the end of the source) is
/// appended. Opening thus reads the header, directory and padding plus at most one window, in
/// O(header / window) reads; the buffer holds at most 1.25 × the bytes read. When the source
/// ends first, the error is the parser's truncation error naming the item that was cut. The
/// parser's `file_size` is the source's length, so it checks every tensor's data against it.
pub(crate) fn read<C: Container>(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<(C, HeaderStats), StreamError> {
    let mut decoder = C::decoder(options, source.len());
    let wrap = |e| C::wrap(path, e);
    let filled = window::fill(&mut decoder, source, path, options.window, wrap)?;
    let dir = decoder.finish().map_err(wrap)?;
    let stats = filled.stats();
    let (ast, data_offset) = C::assemble(filled.buf, dir).map_err(wrap)?;
    Ok((ast, stats.with_data_offset(data_offset)))
}

/// What an open that keeps a header found: the file as a weight source, or — its tensor data
/// not all inside the file — the parsed header, the source's size and the bounds error.
pub(crate) enum Opened<C> {
    File(HeaderFile<C>),
    OutOfBounds { ast: C, file_size: u64, error: StreamError },
}

impl<C> Opened<C> {
    /// The file, or the bounds error of a header kept.
    pub(crate) fn into_file(self) -> Result<HeaderFile<C>, StreamError> {
        match self {
            Opened::File(file) => Ok(file),
            Opened::OutOfBounds { error, .. } => Err(error),
        }
    }
}

/// A model file of container format `C` opened as a [`WeightSource`]: header and directory
/// parsed, every tensor checked to lie inside the file, tensor data read only on request.
/// Use it through its names [`GgufFile`](crate::GgufFile) and [`LlmwFile`](crate::LlmwFile).
#[derive(Debug)]
pub struct HeaderFile<C> {
    ast: C,
    store: TensorStore,
    stats: HeaderStats,
}

impl<C: Container> HeaderFile<C> {
    /// Opens the file at `path`: reads and parses its header and checks that every tensor
    /// lies inside the file. A file truncated inside its tensor data fails here with the
    /// parser's out-of-bounds error naming the first tensor that does not fit.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Self, StreamError> {
        Self::from_backing(FileBacking::open(path, options.backend)?, options)
    }

    /// Opens a file already opened with its backend (`options.backend` does not apply). The
    /// header is read with `pread` even under the mmap backend: it is copied out once, and
    /// mapping it would only add its pages to the resident set.
    #[cfg(feature = "file")]
    pub fn from_backing(backing: FileBacking, options: &OpenOptions) -> Result<Self, StreamError> {
        Self::from_backing_or_header(backing, options)?.into_file()
    }

    /// Opens a file held by any positional source ([`MemSource`](crate::MemSource), an
    /// instrumented wrapper, other storage). `options.backend` does not apply.
    pub fn from_source(
        source: impl ReadAt + 'static,
        options: &OpenOptions,
    ) -> Result<Self, StreamError> {
        let header = read::<C>(&source, None, options)?;
        Self::assemble_or_header(header, Box::new(source), None, options)?.into_file()
    }

    /// [`from_source`](Self::from_source) for a source with a name (a URL, say): `name` is
    /// what errors and [`path`](Self::path) give, though it is no local file.
    pub fn from_named_source(
        source: impl ReadAt + 'static,
        name: impl Into<PathBuf>,
        options: &OpenOptions,
    ) -> Result<Self, StreamError> {
        Self::from_named_source_or_header(source, name.into(), options)?.into_file()
    }

    /// [`from_backing`](Self::from_backing), keeping the parsed header when the only fault is
    /// tensor data outside the file.
    #[cfg(feature = "file")]
    pub(crate) fn from_backing_or_header(
        backing: FileBacking,
        options: &OpenOptions,
    ) -> Result<Opened<C>, StreamError> {
        let path = backing.path().to_path_buf();
        let header = read::<C>(&backing.pread_view(), Some(&path), options)?;
        Self::assemble_or_header(header, Box::new(backing), Some(path), options)
    }

    /// [`from_named_source`](Self::from_named_source), keeping the parsed header when the only
    /// fault is tensor data outside the source.
    pub(crate) fn from_named_source_or_header(
        source: impl ReadAt + 'static,
        name: PathBuf,
        options: &OpenOptions,
    ) -> Result<Opened<C>, StreamError> {
        let header = read::<C>(&source, Some(&name), options)?;
        Self::assemble_or_header(header, Box::new(source), Some(name), options)
    }

    fn assemble_or_header(
        (ast, stats): (C, HeaderStats),
        source: Box<dyn ReadAt>,
        path: Option<PathBuf>,
        options: &OpenOptions,
    ) -> Result<Opened<C>, StreamError> {
        let file_size = source.len();
        match TensorStore::new(source, path, ast.tensor_infos(), options.readahead) {
            Ok(store) => Ok(Opened::File(HeaderFile { ast, store, stats })),
            Err(error) if matches!(error.kind(), StreamErrorKind::TensorOutOfBounds { .. }) => {
                Ok(Opened::OutOfBounds { ast, file_size, error })
            }
            Err(error) => Err(error),
        }
    }

    /// The tensor store (the source, its size, readahead).
    pub fn store(&self) -> &TensorStore {
        &self.store
    }

    /// What opening read.
    pub fn header_stats(&self) -> HeaderStats {
        self.stats
    }

    /// The open file the header was read from and tensor data is read from, for files: a
    /// writer copies from it (never from a second open of the path, which may name another
    /// file by then).
    pub fn file(&self) -> Option<&std::fs::File> {
        self.store.source().as_file()
    }

    /// The path given at open, for files.
    pub fn path(&self) -> Option<&Path> {
        self.store.path()
    }

    /// The parser's AST over the header bytes.
    pub(crate) fn ast(&self) -> &C {
        &self.ast
    }
}

impl<C: Container> WeightSource for HeaderFile<C> {
    fn tensors(&self) -> &[SourceTensor] {
        self.store.tensors()
    }

    fn find(&self, name: &str) -> Option<&SourceTensor> {
        self.store.find(name)
    }

    fn read_raw(&self, tensor: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError> {
        self.store.read_raw(tensor, dst)
    }

    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.store.read_raw_at(abs_offset, dst)
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        self.ast.meta(key)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        self.ast.metadata()
    }

    fn prefetch(&self, tensor: &SourceTensor) -> Result<(), StreamError> {
        self.store.prefetch(tensor)
    }

    fn prefetch_range(&self, abs_offset: u64, len: u64) -> Result<(), StreamError> {
        self.store.prefetch_range(abs_offset, len)
    }

    fn file_size(&self) -> u64 {
        self.store.file_size()
    }

    fn endian(&self) -> sipllm_gguf::Endian {
        self.ast.endian()
    }
}

impl sealed::Sealed for sipllm_gguf::Gguf<HeaderBytes> {}
impl sealed::Sealed for sipllm_llmw::Llmw<HeaderBytes> {}
