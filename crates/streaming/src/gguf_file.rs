//! [`GgufFile`]: a GGUF file as a [`WeightSource`], opened by reading only its header.

use std::path::{Path, PathBuf};

use sipllm_gguf::{Decoder, Event, Gguf, ParseOptions, Profile};

use crate::backing::{Backend, FileBacking, ReadAt};
use crate::error::StreamError;
use crate::meta::{Meta, Text};
use crate::source::{TensorInfo, WeightSource};
use crate::store::TensorStore;

/// The initial header read size: 64 KiB.
pub const DEFAULT_WINDOW: usize = 64 << 10;

/// How to open a weight source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpenOptions {
    /// How the file is read (default [`Backend::Pread`]; see [`Backend`] for the mmap
    /// contract).
    pub backend: Backend,
    /// Parse options (profile, limits, v1). `file_size` is ignored: the source's length is
    /// always used, so the parser bounds-checks every tensor against the real file.
    pub parse: ParseOptions,
    /// Tensors to prefetch after the one being read, in file order (default 0: none).
    pub readahead: usize,
    /// Bytes per header read (default [`DEFAULT_WINDOW`]); a read is larger only when one
    /// item needs more. Values below 1 count as 1.
    pub window: usize,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            backend: Backend::Pread,
            parse: ParseOptions::default(),
            readahead: 0,
            window: DEFAULT_WINDOW,
        }
    }
}

impl OpenOptions {
    /// Sets the backend.
    pub fn with_backend(mut self, backend: Backend) -> OpenOptions {
        self.backend = backend;
        self
    }

    /// Sets the parse options.
    pub fn with_parse(mut self, parse: ParseOptions) -> OpenOptions {
        self.parse = parse;
        self
    }

    /// Sets the parser's profile.
    pub fn with_profile(mut self, profile: Profile) -> OpenOptions {
        self.parse.profile = profile;
        self
    }

    /// Sets how many tensors to read ahead.
    pub fn with_readahead(mut self, tensors: usize) -> OpenOptions {
        self.readahead = tensors;
        self
    }

    /// Sets the header read size.
    pub fn with_window(mut self, bytes: usize) -> OpenOptions {
        self.window = bytes;
        self
    }
}

/// What reading a header cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeaderStats {
    /// Read calls made.
    pub reads: u64,
    /// Bytes read (the header buffer's final length).
    pub bytes_read: u64,
    /// Offset of the data section (the header, directory and padding end here).
    pub data_offset: u64,
    /// Capacity of the header buffer (bytes held).
    pub capacity: u64,
}

/// Reads and parses the header and tensor directory at the start of `source`.
///
/// Drives the parser's chunk-fed [`Decoder`] over one growing buffer: each time it needs more
/// bytes, one read of `max(window, needed)` bytes (never past the end of the source) is
/// appended. Opening thus reads the header, directory and padding plus at most one window, in
/// O(header / window) reads. The buffer grows geometrically by 1.25× (`try_reserve_exact`), so
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
) -> Result<(Gguf<Vec<u8>>, HeaderStats), StreamError> {
    let file_size = source.len();
    let window = options.window.max(1) as u64;
    let mut decoder = Decoder::new(options.parse.with_file_size(Some(file_size)));
    let mut buf: Vec<u8> = Vec::new();
    let mut reads = 0u64;
    loop {
        let step = decoder.decode(&buf).map_err(|e| StreamError::parse(path, e))?;
        let needed = match step.event {
            Event::Done => break,
            Event::NeedMore { needed } => needed,
            _ => continue,
        };
        let have = buf.len() as u64;
        let end = have.saturating_add(needed.max(window)).min(file_size);
        if end <= have {
            return Err(StreamError::parse(path, decoder.end_of_input(&buf)));
        }
        let add = end - have;
        let too_large = || StreamError::TooLarge { what: "header buffer".into(), bytes: end };
        let add_usize = usize::try_from(add).map_err(|_| too_large())?;
        grow(&mut buf, add_usize).map_err(|_| too_large())?;
        let start = buf.len();
        buf.resize(start.saturating_add(add_usize), 0);
        let dst = buf.get_mut(start..).unwrap_or_default();
        source.read_exact_at(have, dst).map_err(|e| StreamError::read(path, have, add, e))?;
        reads += 1;
    }
    let dir = decoder.finish().map_err(|e| StreamError::parse(path, e))?;
    let stats = HeaderStats {
        reads,
        bytes_read: buf.len() as u64,
        data_offset: dir.data_offset(),
        capacity: buf.capacity() as u64,
    };
    let gguf = Gguf::from_parts(buf, dir).map_err(|e| StreamError::parse(path, e))?;
    Ok((gguf, stats))
}

/// Makes room for `add` more bytes: exactly, or 1.25× the current length if that is more,
/// so a header of n bytes costs O(log n) reallocations and at most 1.25 n of capacity.
fn grow(buf: &mut Vec<u8>, add: usize) -> Result<(), std::collections::TryReserveError> {
    let needed = buf.len().saturating_add(add);
    if needed <= buf.capacity() {
        return Ok(());
    }
    let target = needed.max(buf.len().saturating_add(buf.len() / 4));
    buf.try_reserve_exact(target - buf.len())
}

/// A GGUF file opened as a [`WeightSource`]: header and directory parsed, tensor data read
/// only on request.
#[derive(Debug)]
pub struct GgufFile {
    gguf: Gguf<Vec<u8>>,
    store: TensorStore,
    stats: HeaderStats,
}

impl GgufFile {
    /// Opens the file at `path`: reads and parses its header (see [`read_header`]) and checks
    /// that every tensor lies inside the file. A file truncated inside its tensor data fails
    /// here with the parser's `gguf::layout::out_of_bounds` error naming the first tensor that
    /// does not fit.
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<GgufFile, StreamError> {
        let path = path.as_ref();
        let backing = FileBacking::open(path, options.backend)?;
        // The header is copied out once, so it is read with pread even for the mmap backend.
        let header = read_header(&backing.pread_view(), Some(path), options)?;
        GgufFile::assemble(header, Box::new(backing), Some(path.to_path_buf()), options)
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

    fn assemble(
        (gguf, stats): (Gguf<Vec<u8>>, HeaderStats),
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
    pub fn gguf(&self) -> &Gguf<Vec<u8>> {
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

    fn read_raw(&self, tensor: &TensorInfo, dst: &mut [u8]) -> Result<(), StreamError> {
        self.store.read_raw(tensor, dst)
    }

    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.store.read_raw_at(abs_offset, dst)
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        let entry = self.gguf.get_entry(key)?;
        Some(Meta::from_gguf(Text::from_bytes(entry.key.as_bytes()), entry.value))
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (Text<'_>, Meta<'_>)> + '_> {
        Box::new(self.gguf.metadata().map(|e| {
            let key = Text::from_bytes(e.key.as_bytes());
            (key, Meta::from_gguf(key, e.value))
        }))
    }

    fn prefetch(&self, tensor: &TensorInfo) -> Result<(), StreamError> {
        self.store.prefetch(tensor)
    }

    fn file_size(&self) -> u64 {
        self.store.file_size()
    }
}
