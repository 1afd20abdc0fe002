//! [`LlmwFile`]: a `.llmw` file as a [`WeightSource`], opened by reading only its header.

use std::path::{Path, PathBuf};

use sipllm_llmw::{Decoder, Llmw};

use crate::MetaStr;
use crate::backing::ReadAt;
use crate::error::StreamError;
#[cfg(feature = "file")]
use crate::file::FileBacking;
use crate::header_bytes::HeaderBytes;
use crate::meta::Meta;
use crate::options::OpenOptions;
use crate::source::{TensorInfo, WeightSource};
use crate::store::TensorStore;
use crate::window::{self, HeaderStats};

/// Reads and parses the `.llmw` header and tensor directory at the start of `source`.
///
/// The same refilling window as GGUF's [`read_header`](crate::read_header) (one shared driver):
/// the `.llmw` parser's chunk-fed [`Decoder`] is fed one read of `max(window, needed)` bytes
/// at a time, never past the end of the source, so opening reads the header, directory and
/// padding plus at most one window. When the source ends first, the error is the parser's
/// `llmw::input::unexpected_eof` naming the item that was cut. `options.llmw.file_size` is
/// replaced by `source.len()`, so the parser checks that every tensor's data lies inside the
/// file (`llmw::layout::out_of_bounds`).
pub fn read_llmw_header(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<(Llmw<HeaderBytes>, HeaderStats), StreamError> {
    let mut decoder = Decoder::new(options.llmw.with_file_size(Some(source.len())));
    let filled = window::fill(&mut decoder, source, path, options.window)?;
    let dir = decoder.finish().map_err(|e| StreamError::parse_llmw(path, e))?;
    let stats = filled.stats(dir.data_start());
    let llmw = Llmw::from_parts(filled.buf, dir).map_err(|e| StreamError::parse_llmw(path, e))?;
    Ok((llmw, stats))
}

/// A `.llmw` file opened as a [`WeightSource`]: header and directory parsed, tensor data read
/// only on request — the sibling of [`GgufFile`](crate::GgufFile), with the same backings,
/// bounds checks and readahead (both embed a [`TensorStore`]).
///
/// Shapes are the `.llmw` dims as stored (row-major already). Metadata maps onto [`Meta`]
/// without copying: `i64` → [`Meta::Int`], `f64` → [`Meta::Float`], strings →
/// [`Meta::Str`], and the v2 arrays → [`Meta::Ints`], [`Meta::Floats`], [`Meta::Strs`]
/// wrapping the parser's views into the header buffer.
#[derive(Debug)]
pub struct LlmwFile {
    llmw: Llmw<HeaderBytes>,
    store: TensorStore,
    stats: HeaderStats,
}

impl LlmwFile {
    /// Opens the `.llmw` file at `path`: reads and parses its header (see
    /// [`read_llmw_header`]) and checks that every tensor lies inside the file.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<LlmwFile, StreamError> {
        LlmwFile::from_backing(FileBacking::open(path, options.backend)?, options)
    }

    /// Opens a `.llmw` file already opened with its backend (`options.backend` does not
    /// apply). The header is read with `pread` even under the mmap backend, as for GGUF.
    #[cfg(feature = "file")]
    pub fn from_backing(
        backing: FileBacking,
        options: &OpenOptions,
    ) -> Result<LlmwFile, StreamError> {
        let path = backing.path().to_path_buf();
        let header = read_llmw_header(&backing.pread_view(), Some(&path), options)?;
        LlmwFile::assemble(header, Box::new(backing), Some(path), options)
    }

    /// Opens a `.llmw` file held by any positional source. `options.backend` does not apply.
    pub fn from_source(
        source: impl ReadAt + 'static,
        options: &OpenOptions,
    ) -> Result<LlmwFile, StreamError> {
        let header = read_llmw_header(&source, None, options)?;
        LlmwFile::assemble(header, Box::new(source), None, options)
    }

    /// [`from_source`](Self::from_source) for a source with a name (a URL, say): `name` is
    /// what errors and [`path`](Self::path) give, though it is no local file.
    pub fn from_named_source(
        source: impl ReadAt + 'static,
        name: impl Into<PathBuf>,
        options: &OpenOptions,
    ) -> Result<LlmwFile, StreamError> {
        let name = name.into();
        let header = read_llmw_header(&source, Some(&name), options)?;
        LlmwFile::assemble(header, Box::new(source), Some(name), options)
    }

    fn assemble(
        (llmw, stats): (Llmw<HeaderBytes>, HeaderStats),
        source: Box<dyn ReadAt>,
        path: Option<PathBuf>,
        options: &OpenOptions,
    ) -> Result<LlmwFile, StreamError> {
        let tensors = llmw
            .tensors()
            .map(|t| TensorInfo {
                name: t.name.to_owned(),
                ggml_type: t.info.dtype(),
                shape: t.info.dims().iter().copied().collect(),
                abs_offset: t.info.offset(),
                nbytes: Some(t.info.nbytes()),
            })
            .collect();
        let store = TensorStore::new(source, path, tensors, options.readahead)?;
        Ok(LlmwFile { llmw, store, stats })
    }

    /// The parsed header: the `.llmw` parser's AST over the header bytes (version, every value
    /// as stored, the directory's spans).
    pub fn llmw(&self) -> &Llmw<HeaderBytes> {
        &self.llmw
    }

    /// The tensor store (the source, its size, readahead).
    pub fn store(&self) -> &TensorStore {
        &self.store
    }

    /// What opening read.
    pub fn header_stats(&self) -> HeaderStats {
        self.stats
    }

    /// The path given at open, for files.
    pub fn path(&self) -> Option<&Path> {
        self.store.path()
    }
}

impl WeightSource for LlmwFile {
    fn tensors(&self) -> &[TensorInfo] {
        self.store.tensors()
    }

    fn find(&self, name: &str) -> Option<&TensorInfo> {
        self.store.find(name)
    }

    fn read_raw(&self, tensor: &TensorInfo, dst: &mut [u8]) -> Result<usize, StreamError> {
        self.store.read_raw(tensor, dst)
    }

    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.store.read_raw_at(abs_offset, dst)
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        let entry = self.llmw.get_entry(key)?;
        Meta::from_llmw(MetaStr::from(entry.key), entry.value)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        Box::new(self.llmw.metadata().filter_map(|e| {
            let key = MetaStr::from(e.key);
            Some((key, Meta::from_llmw(key, e.value)?))
        }))
    }

    fn prefetch(&self, tensor: &TensorInfo) -> Result<(), StreamError> {
        self.store.prefetch(tensor)
    }

    fn file_size(&self) -> u64 {
        self.store.file_size()
    }

    /// `.llmw` stores every number little-endian (docs/llmw.md).
    fn endian(&self) -> sipllm_gguf::Endian {
        sipllm_gguf::Endian::Little
    }
}
