//! [`GgufFile`]: a GGUF file as a [`WeightSource`], opened by reading only its header.

use std::path::{Path, PathBuf};

use sipllm_gguf::{Decoder, Gguf};

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

/// Reads and parses the header and tensor directory at the start of `source`.
///
/// Drives the parser's chunk-fed [`Decoder`] over one growing buffer (the refilling window
/// [`LlmwFile`](crate::LlmwFile) shares): each time it needs more bytes, one read of
/// `max(window, needed)` bytes (never past the end of the source) is appended. Opening thus
/// reads the header, directory and padding plus at most one window, in O(header / window)
/// reads. The buffer grows geometrically by 1.25× (`try_reserve_exact`), so
/// it holds at most 1.25 × the bytes read. When the source ends first, the error is the
/// parser's [`UnexpectedEof`](sipllm_gguf::ErrorKind::UnexpectedEof) naming the item that was
/// cut. `parse.file_size` is replaced by `source.len()`.
///
/// [`GgufFile`] uses this; call it directly to parse a header without the tensor bounds
/// guarantee of a weight source (e.g. to inspect a truncated file with the lenient profile).
pub fn read_header(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<(Gguf<HeaderBytes>, HeaderStats), StreamError> {
    let mut decoder = Decoder::new(options.parse.with_file_size(Some(source.len())));
    let filled = window::fill(&mut decoder, source, path, options.window)?;
    let dir = decoder.finish().map_err(|e| StreamError::parse(path, e))?;
    let stats = filled.stats(dir.data_offset());
    let gguf = Gguf::from_parts(filled.buf, dir).map_err(|e| StreamError::parse(path, e))?;
    Ok((gguf, stats))
}

/// A GGUF file opened as a [`WeightSource`]: header and directory parsed, tensor data read
/// only on request.
#[derive(Debug)]
pub struct GgufFile {
    gguf: Gguf<HeaderBytes>,
    store: TensorStore,
    stats: HeaderStats,
}

impl GgufFile {
    /// Opens the file at `path`: reads and parses its header (see [`read_header`]) and checks
    /// that every tensor lies inside the file. A file truncated inside its tensor data fails
    /// here with the parser's `gguf::layout::out_of_bounds` error naming the first tensor that
    /// does not fit.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<GgufFile, StreamError> {
        GgufFile::from_backing(FileBacking::open(path, options.backend)?, options)
    }

    /// Opens a GGUF from a file already opened with its backend (`options.backend` does not
    /// apply). The header is read with `pread` even under the mmap backend: it is copied out
    /// once, and mapping it would only add its pages to the resident set.
    #[cfg(feature = "file")]
    pub fn from_backing(
        backing: FileBacking,
        options: &OpenOptions,
    ) -> Result<GgufFile, StreamError> {
        let path = backing.path().to_path_buf();
        let header = read_header(&backing.pread_view(), Some(&path), options)?;
        GgufFile::assemble(header, Box::new(backing), Some(path), options)
    }

    /// Opens a GGUF held by any positional source ([`MemSource`](crate::MemSource), an
    /// instrumented wrapper, other storage). `options.backend` does not apply.
    pub fn from_source(
        source: impl ReadAt + 'static,
        options: &OpenOptions,
    ) -> Result<GgufFile, StreamError> {
        let header = read_header(&source, None, options)?;
        GgufFile::assemble(header, Box::new(source), None, options)
    }

    /// [`from_source`](Self::from_source) for a source with a name (a URL, say): `name` is
    /// what errors and [`path`](Self::path) give, though it is no local file.
    pub fn from_named_source(
        source: impl ReadAt + 'static,
        name: impl Into<PathBuf>,
        options: &OpenOptions,
    ) -> Result<GgufFile, StreamError> {
        let name = name.into();
        let header = read_header(&source, Some(&name), options)?;
        GgufFile::assemble(header, Box::new(source), Some(name), options)
    }

    fn assemble(
        (gguf, stats): (Gguf<HeaderBytes>, HeaderStats),
        source: Box<dyn ReadAt>,
        path: Option<PathBuf>,
        options: &OpenOptions,
    ) -> Result<GgufFile, StreamError> {
        let tensors = gguf
            .tensors()
            .map(|t| TensorInfo {
                name: t.name.to_string_lossy().into_owned(),
                ggml_type: t.info.ggml_type(),
                shape: t.info.shape(),
                abs_offset: t.info.abs_offset(),
                nbytes: t.info.nbytes(),
            })
            .collect();
        let store = TensorStore::new(source, path, tensors, options.readahead)?;
        Ok(GgufFile { gguf, store, stats })
    }

    /// The parsed header: the parser's AST over the header bytes (version, byte order,
    /// alignment, warnings, every value as stored).
    pub fn gguf(&self) -> &Gguf<HeaderBytes> {
        &self.gguf
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
}

impl WeightSource for GgufFile {
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
        let entry = self.gguf.get_entry(key)?;
        Some(Meta::from_gguf(entry.key, entry.value))
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        Box::new(self.gguf.metadata().map(|e| (e.key, Meta::from_gguf(e.key, e.value))))
    }

    fn prefetch(&self, tensor: &TensorInfo) -> Result<(), StreamError> {
        self.store.prefetch(tensor)
    }

    fn file_size(&self) -> u64 {
        self.store.file_size()
    }

    fn endian(&self) -> sipllm_gguf::Endian {
        self.gguf.endian()
    }
}
