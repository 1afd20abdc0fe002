//! The one place where every command opens a model file.
//!
//! [`open_file`] sniffs the magic, opens a GGUF through `sipllm_streaming::GgufFile` and a
//! `.llmw` file through [`LlmwFile`] (the `.llmw` parser behind the streaming crate's
//! format-neutral `TensorStore`), and returns an [`Opened`]: the [`WeightSource`] every
//! command reads tensors through, plus the parsed header each format's inspection needs.
//!
//! When the streaming crate's format-sniffing `open_model` lands, it replaces the sniffing and
//! [`LlmwFile`] here; nothing outside this module changes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sipllm_gguf::{Gguf, ParseOptions, Profile};
use sipllm_llmw::Llmw;
use sipllm_streaming::{
    Backend, FileBacking, FloatList, GgufFile, IntList, MemSource, Meta, OpenOptions, ReadAt,
    StrList, StreamError, TensorInfo, TensorStore, Text, WeightSource, read_header,
};

/// The sample bundled into the binary: a tiny llama-shaped GGUF written by gguf-py.
pub const SAMPLE: &[u8] = include_bytes!("../../../samples/tiny-llama.gguf");

/// The name `sipllm` shows for the bundled sample.
pub const SAMPLE_NAME: &str = "samples/tiny-llama.gguf";

/// The bytes per header read (the streaming crate's default window).
const WINDOW: u64 = 64 << 10;

/// The file formats `sipllm` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// GGUF (any version the parser reads, either byte order).
    Gguf,
    /// The engine's `.llmw` format.
    Llmw,
}

impl Format {
    /// The name in JSON output: `gguf` or `llmw`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Gguf => "gguf",
            Format::Llmw => "llmw",
        }
    }
}

/// How to parse a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenSettings {
    /// The GGUF validation profile (`.llmw` has one fixed, strict rule set).
    pub profile: Profile,
    /// Read GGUF v1 files.
    pub allow_v1: bool,
}

impl OpenSettings {
    fn options(&self) -> OpenOptions {
        OpenOptions::default()
            .with_parse(ParseOptions::new(self.profile).with_v1(self.allow_v1))
            .with_backend(Backend::Pread)
    }
}

/// What was opened, with the format-specific parse.
pub struct Opened {
    name: String,
    format: Format,
    file_size: u64,
    model: Model,
}

enum Model {
    /// A GGUF with all its tensors inside the file.
    Gguf(GgufFile),
    /// A GGUF whose tensor data is not all inside the file, parsed by the lenient profile:
    /// the header can be inspected but no tensor can be read.
    GgufHeaderOnly(Gguf<Vec<u8>>),
    /// A `.llmw` file.
    Llmw(LlmwFile),
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("file_size", &self.file_size)
            .field("readable", &self.source().is_some())
            .finish()
    }
}

impl Opened {
    /// The name to show (the path as given, or the sample's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The size of the file in bytes.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The weight source, unless the file was only parsed leniently because its tensor data
    /// lies (partly) outside the file.
    pub fn source(&self) -> Option<&dyn WeightSource> {
        match &self.model {
            Model::Gguf(f) => Some(f),
            Model::Llmw(f) => Some(f),
            Model::GgufHeaderOnly(_) => None,
        }
    }

    /// The parsed GGUF header, for GGUF files.
    pub fn gguf(&self) -> Option<&Gguf<Vec<u8>>> {
        match &self.model {
            Model::Gguf(f) => Some(f.gguf()),
            Model::GgufHeaderOnly(g) => Some(g),
            Model::Llmw(_) => None,
        }
    }

    /// The parsed `.llmw` header, for `.llmw` files.
    pub fn llmw(&self) -> Option<&Llmw<Vec<u8>>> {
        match &self.model {
            Model::Llmw(f) => Some(&f.llmw),
            _ => None,
        }
    }
}

/// Why a file could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// I/O, or a GGUF parse error (inside [`StreamError::Parse`]).
    Stream(StreamError),
    /// The `.llmw` parser rejected the file.
    Llmw(sipllm_llmw::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Stream(e) => e.fmt(f),
            OpenError::Llmw(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {}

impl From<StreamError> for OpenError {
    fn from(e: StreamError) -> OpenError {
        OpenError::Stream(e)
    }
}

impl OpenError {
    /// True when the file itself is invalid (exit code 1), false for I/O and resource problems
    /// (exit code 2).
    pub fn is_invalid_file(&self) -> bool {
        match self {
            OpenError::Llmw(_) => true,
            OpenError::Stream(e) => !matches!(
                e,
                StreamError::Open { .. }
                    | StreamError::Io { .. }
                    | StreamError::UnexpectedEof { .. }
                    | StreamError::TooLarge { .. }
            ),
        }
    }
}

/// Opens `path`: sniffs the format and parses the header with `settings`.
///
/// A GGUF whose tensor data does not fit in the file is an error, except under the lenient
/// profile, where the header is still returned (for inspection) without a weight source.
pub fn open_file(path: &Path, settings: &OpenSettings) -> Result<Opened, OpenError> {
    let backing = FileBacking::open(path, Backend::Pread)?;
    let file_size = backing.len();
    let name = path.display().to_string();
    let mut magic = [0u8; 4];
    let is_llmw = file_size >= 4
        && backing.read_exact_at(0, &mut magic).is_ok()
        && magic == sipllm_llmw::MAGIC;
    if is_llmw {
        let file = LlmwFile::open(Box::new(backing), Some(path.to_path_buf()))?;
        return Ok(Opened { name, format: Format::Llmw, file_size, model: Model::Llmw(file) });
    }
    let options = settings.options();
    match GgufFile::from_source(backing, &options) {
        Ok(file) => Ok(Opened { name, format: Format::Gguf, file_size, model: Model::Gguf(file) }),
        Err(StreamError::TensorOutOfBounds { .. }) if settings.profile == Profile::Lenient => {
            // The lenient parse succeeded (with an out-of-bounds warning) but the store refuses
            // tensors outside the file: keep the header for inspection.
            let backing = FileBacking::open(path, Backend::Pread)?;
            let (gguf, _) = read_header(&backing, Some(path), &options)?;
            Ok(Opened { name, format: Format::Gguf, file_size, model: Model::GgufHeaderOnly(gguf) })
        }
        Err(e) => Err(e.into()),
    }
}

/// Opens the sample GGUF bundled into the binary.
pub fn open_sample(settings: &OpenSettings) -> Result<Opened, OpenError> {
    let file = GgufFile::from_source(MemSource::new(SAMPLE), &settings.options())?;
    Ok(Opened {
        name: SAMPLE_NAME.to_owned(),
        format: Format::Gguf,
        file_size: SAMPLE.len() as u64,
        model: Model::Gguf(file),
    })
}

/// A `.llmw` file opened as a [`WeightSource`]: the parsed header plus the streaming crate's
/// format-neutral [`TensorStore`] for the bounds-checked reads.
pub struct LlmwFile {
    llmw: Llmw<Vec<u8>>,
    store: TensorStore,
    /// Array values decoded on first use (the seam's lists borrow decoded elements).
    lists: Vec<OnceLock<List>>,
}

enum List {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Strs(Vec<String>),
}

impl fmt::Debug for LlmwFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmwFile").field("llmw", &self.llmw).field("store", &self.store).finish()
    }
}

impl LlmwFile {
    /// Reads and parses the header of the `.llmw` file in `source` (one read per 64 KiB
    /// window, the way `sipllm_streaming::read_header` reads a GGUF) and checks every tensor
    /// lies inside it.
    pub fn open(source: Box<dyn ReadAt>, path: Option<PathBuf>) -> Result<LlmwFile, OpenError> {
        let file_size = source.len();
        let opts = sipllm_llmw::ParseOptions::default().with_file_size(Some(file_size));
        let mut decoder = sipllm_llmw::Decoder::new(opts);
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let step = decoder.decode(&buf).map_err(OpenError::Llmw)?;
            let needed = match step.event {
                sipllm_llmw::Event::Done => break,
                sipllm_llmw::Event::NeedMore { needed } => needed,
                _ => continue,
            };
            let have = buf.len() as u64;
            let end = have.saturating_add(needed.max(WINDOW)).min(file_size);
            if end <= have {
                return Err(OpenError::Llmw(decoder.end_of_input(&buf)));
            }
            let add = usize::try_from(end - have)
                .map_err(|_| StreamError::TooLarge { what: "header buffer".into(), bytes: end })?;
            buf.try_reserve(add)
                .map_err(|_| StreamError::TooLarge { what: "header buffer".into(), bytes: end })?;
            let start = buf.len();
            buf.resize(start + add, 0);
            let dst = buf.get_mut(start..).unwrap_or_default();
            source.read_exact_at(have, dst).map_err(|source| StreamError::Io {
                path: path.clone(),
                offset: have,
                len: end - have,
                source,
            })?;
        }
        let dir = decoder.finish().map_err(OpenError::Llmw)?;
        let llmw = Llmw::from_parts(buf, dir).map_err(OpenError::Llmw)?;
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
        let store = TensorStore::new(source, path, tensors, 0)?;
        let lists = (0..llmw.meta_len()).map(|_| OnceLock::new()).collect();
        Ok(LlmwFile { llmw, store, lists })
    }

    /// The parsed header.
    pub fn llmw(&self) -> &Llmw<Vec<u8>> {
        &self.llmw
    }

    fn meta_at(&self, index: usize) -> Option<(Text<'_>, Meta<'_>)> {
        use sipllm_llmw::MetaValue as V;
        let info = self.llmw.directory().meta().get(index)?;
        let key = self.llmw.key(info);
        let list = || self.lists.get(index);
        let meta = match self.llmw.value(info) {
            V::I64(v) => Meta::Int(v.into()),
            V::F64(v) => Meta::Float(v),
            V::Str(s) => Meta::Str(Text::from_bytes(s.as_bytes())),
            V::I64Array(a) => match list()?.get_or_init(|| List::Ints(a.to_vec())) {
                List::Ints(v) => Meta::Ints(IntList::from_slice(key, v)),
                _ => return None,
            },
            V::F64Array(a) => match list()?.get_or_init(|| List::Floats(a.to_vec())) {
                List::Floats(v) => Meta::Floats(FloatList::from_slice(key, v)),
                _ => return None,
            },
            V::StrArray(a) => {
                match list()?.get_or_init(|| List::Strs(a.iter().map(str::to_owned).collect())) {
                    List::Strs(v) => Meta::Strs(StrList::from_strings(key, v)),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some((Text::from_bytes(key.as_bytes()), meta))
    }
}

impl WeightSource for LlmwFile {
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
        let index = self.llmw.get_entry(key)?.index;
        self.meta_at(index).map(|(_, m)| m)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (Text<'_>, Meta<'_>)> + '_> {
        Box::new((0..self.llmw.meta_len()).filter_map(|i| self.meta_at(i)))
    }

    fn prefetch(&self, tensor: &TensorInfo) -> Result<(), StreamError> {
        self.store.prefetch(tensor)
    }

    fn file_size(&self) -> u64 {
        self.store.file_size()
    }
}
