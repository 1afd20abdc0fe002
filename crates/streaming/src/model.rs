//! Opening a model whatever its format: the [`Model`] enum, [`open_model`] /
//! [`open_model_from`], and [`ModelOrHeader`] — an open for inspection, which under the
//! lenient profile keeps the parsed header of a GGUF whose tensor data is not all inside the
//! file (a truncated download, a header-only copy) instead of failing.
//!
//! The bounds check is what makes a [`Model`] a weight source, so such a file cannot be one;
//! but its header parsed (the lenient parser warned of the data it does not hold), and a
//! person inspecting it wants that header. It comes from the one parse of the one open:
//! nothing is read twice. [`Model::open`] and [`ModelOrHeader::open`] are one private
//! `open_path`.

#[cfg(feature = "file")]
use std::fs::File;
use std::path::{Path, PathBuf};

use sipllm_gguf::{Gguf, Profile};

use crate::MetaStr;
use crate::backing::ReadAt;
use crate::error::StreamError;
#[cfg(feature = "file")]
use crate::error::StreamErrorKind;
#[cfg(feature = "file")]
use crate::file::FileBacking;
use crate::format::{Format, detect_for};
use crate::gguf_file::GgufFile;
use crate::header_bytes::HeaderBytes;
use crate::header_file::Opened;
use crate::llmw_file::LlmwFile;
use crate::meta::Meta;
use crate::options::OpenOptions;
use crate::source::{SourceTensor, WeightSource};
use crate::split::SplitFile;
#[cfg(feature = "file")]
use crate::split::SplitKeys;
use crate::store::TensorStore;
use crate::window::HeaderStats;

/// A model file of any supported format, opened as a [`WeightSource`], with its format's
/// details still reachable (the CLI inspects the parsed header). A shard of a split GGUF set
/// opens as the whole set ([`Model::Split`]).
///
/// `impl WeightSource for Model` delegates to the variant, so a `Model` can be used directly;
/// [`open_model`] boxes one.
///
/// Exhaustive on purpose: the analyses over it (`sipllm-model`'s `diff`, the CLI's views)
/// match every format, so a new format must fail to compile there, not fall into a `_` arm.
#[derive(Debug)]
pub enum Model {
    /// A GGUF file.
    Gguf(GgufFile),
    /// A `.llmw` file.
    Llmw(LlmwFile),
    /// A split GGUF set (`split.count > 1`), opened from any of its shards: one weight source
    /// over all of them.
    Split(SplitFile),
}

impl Model {
    /// Opens the file at `path`, whatever its format: one positional read of its first 4 bytes
    /// picks the format ([`Format::detect`]; the name is not consulted), then that format's
    /// opener reads the header through the refilling window with `options` (backend,
    /// readahead, window, and the format's parse options).
    ///
    /// A GGUF file whose `split.count` is above 1 is a shard of a split set: the other shards
    /// are found from its name and the whole set opens as [`Model::Split`] (see
    /// [`SplitFile::open`]), whichever shard `path` names. Split keys of the wrong type are
    /// [`SplitSetError::KeyType`](crate::SplitSetError::KeyType), in any GGUF file.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Model, StreamError> {
        open_path(path.as_ref(), options, true, false)?.into_model()
    }

    /// Opens the single file at `path` for a command that writes a model from it (an edit, a
    /// conversion): one [`File`] — read-only, or read-write when `write` — that the returned
    /// [`Model`] reads its header through (a duplicate of the descriptor, `options.backend`
    /// applying) and that the caller copies tensor data from
    /// (the write side's `TensorData::File`) or rewrites the header of
    /// (its `rewrite_header_in_place`). Both therefore see the
    /// same file, even if `path` is replaced meanwhile (an output renamed over its input).
    ///
    /// Read-only, it takes a shared lock first, as every reader does ([`crate::lock`]);
    /// read-write, it takes none (an in-place writer takes its exclusive lock before the
    /// header is read: [`File::options`] then [`lock`](crate::lock) then
    /// [`Model::from_file`]).
    ///
    /// The format is sniffed as by [`Model::open`], but a shard of a split set opens as the
    /// single GGUF file it is: the file is what gets written from, not the set.
    #[cfg(feature = "file")]
    pub fn open_with_file(
        path: impl AsRef<Path>,
        write: bool,
        options: &OpenOptions,
    ) -> Result<(File, Model), StreamError> {
        let path = path.as_ref();
        let file = crate::input::open_regular(path, write)?;
        if !write {
            crate::lock::lock_shared(&file, path, crate::lock::READ_WAIT)?;
        }
        let model = Model::from_file(&file, path, options)?;
        Ok((file, model))
    }

    /// Parses the single model file already open as `file` (at `path`, named in errors),
    /// through a duplicate of its descriptor: as [`open_with_file`](Self::open_with_file)
    /// without the open, for a caller that locks the file first.
    #[cfg(feature = "file")]
    pub fn from_file(
        file: &File,
        path: impl AsRef<Path>,
        options: &OpenOptions,
    ) -> Result<Model, StreamError> {
        let path = path.as_ref();
        let open_err =
            |source| StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source });
        let backing =
            FileBacking::from_file(file.try_clone().map_err(open_err)?, path, options.backend)?;
        Ok(match detect_for(&backing.pread_view(), Some(path), options)? {
            Format::Gguf => Model::Gguf(GgufFile::from_backing(backing, options)?),
            Format::Llmw => Model::Llmw(LlmwFile::from_backing(backing, options)?),
        })
    }

    /// Opens a model held by any positional source, whatever its format.
    /// `options.backend` does not apply. A source has no name to find sibling shards by, so a
    /// shard of a split set opens as the single GGUF file it is; make a set of sources with
    /// [`SplitFile::from_files`].
    pub fn from_source(
        source: impl ReadAt + 'static,
        options: &OpenOptions,
    ) -> Result<Model, StreamError> {
        Ok(match detect_for(&source, None, options)? {
            Format::Gguf => Model::Gguf(GgufFile::from_source(source, options)?),
            Format::Llmw => Model::Llmw(LlmwFile::from_source(source, options)?),
        })
    }

    /// [`from_source`](Self::from_source) for a source with a name (a URL, say): `name` is
    /// what errors and [`path`](Self::path) give, though it is no local file. A shard of a
    /// split set still opens as the single GGUF file it is.
    pub fn from_named_source(
        source: impl ReadAt + 'static,
        name: impl Into<PathBuf>,
        options: &OpenOptions,
    ) -> Result<Model, StreamError> {
        from_named(source, name.into(), options, false)?.into_model()
    }

    /// The file's format (a split set is [`Format::Gguf`]: its shards are GGUF files).
    pub fn format(&self) -> Format {
        match self {
            Model::Gguf(_) | Model::Split(_) => Format::Gguf,
            Model::Llmw(_) => Format::Llmw,
        }
    }

    /// The model as the seam.
    pub fn as_weight_source(&self) -> &dyn WeightSource {
        match self {
            Model::Gguf(f) => f,
            Model::Llmw(f) => f,
            Model::Split(f) => f,
        }
    }

    /// The GGUF file, for single-file GGUF models (`None` for a split set: see
    /// [`split`](Self::split)).
    pub fn gguf(&self) -> Option<&GgufFile> {
        match self {
            Model::Gguf(f) => Some(f),
            Model::Llmw(_) | Model::Split(_) => None,
        }
    }

    /// The `.llmw` file, for `.llmw` models.
    pub fn llmw(&self) -> Option<&LlmwFile> {
        match self {
            Model::Llmw(f) => Some(f),
            Model::Gguf(_) | Model::Split(_) => None,
        }
    }

    /// The split set, for split GGUF models.
    pub fn split(&self) -> Option<&SplitFile> {
        match self {
            Model::Split(f) => Some(f),
            Model::Gguf(_) | Model::Llmw(_) => None,
        }
    }

    /// The tensor store (the source, its size, readahead). A split set has one store per
    /// shard; this is the first shard's (see [`SplitFile::shards`]).
    pub fn store(&self) -> &TensorStore {
        match self {
            Model::Gguf(f) => f.store(),
            Model::Llmw(f) => f.store(),
            Model::Split(f) => f.first().store(),
        }
    }

    /// What opening read (for a split set, summed over its shards:
    /// [`SplitFile::header_stats`]).
    pub fn header_stats(&self) -> HeaderStats {
        match self {
            Model::Gguf(f) => f.header_stats(),
            Model::Llmw(f) => f.header_stats(),
            Model::Split(f) => f.header_stats(),
        }
    }

    /// The path given at open, for files (for a split set, the first shard's).
    pub fn path(&self) -> Option<&Path> {
        self.store().path()
    }
}

impl From<GgufFile> for Model {
    fn from(f: GgufFile) -> Model {
        Model::Gguf(f)
    }
}

impl From<LlmwFile> for Model {
    fn from(f: LlmwFile) -> Model {
        Model::Llmw(f)
    }
}

impl From<SplitFile> for Model {
    fn from(f: SplitFile) -> Model {
        Model::Split(f)
    }
}

impl WeightSource for Model {
    fn tensors(&self) -> &[SourceTensor] {
        self.as_weight_source().tensors()
    }

    fn find(&self, name: &str) -> Option<&SourceTensor> {
        self.as_weight_source().find(name)
    }

    fn read_raw(&self, tensor: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError> {
        self.as_weight_source().read_raw(tensor, dst)
    }

    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.as_weight_source().read_raw_at(abs_offset, dst)
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        self.as_weight_source().meta(key)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        self.as_weight_source().metadata()
    }

    fn prefetch(&self, tensor: &SourceTensor) -> Result<(), StreamError> {
        self.as_weight_source().prefetch(tensor)
    }

    fn prefetch_range(&self, abs_offset: u64, len: u64) -> Result<(), StreamError> {
        self.as_weight_source().prefetch_range(abs_offset, len)
    }

    fn file_size(&self) -> u64 {
        self.as_weight_source().file_size()
    }

    fn endian(&self) -> sipllm_gguf::Endian {
        self.as_weight_source().endian()
    }
}

/// Opens the model file at `path`, GGUF or `.llmw`, as a boxed [`WeightSource`]: the format is
/// found from the first 4 bytes, not the name (see [`Model::open`]).
///
/// ```
/// use sipllm_edit::toy; // the write side's toy model (a dev-dependency here)
/// use sipllm_streaming::{OpenOptions, WeightSource, open_model};
///
/// let dir = std::env::temp_dir().join(format!("sipllm-open-model-doc-{}", std::process::id()));
/// let files = toy::write_toy(7, &dir)?; // toy.gguf and toy.llmw: the same model
/// let gguf = open_model(&files.gguf, &OpenOptions::default())?;
/// let llmw = open_model(&files.llmw, &OpenOptions::default())?;
///
/// // Same metadata, and the same tensors (names, row-major shapes, types, sizes); only the
/// // offsets differ between the formats.
/// assert_eq!(gguf.meta_uint("llama.block_count")?, 2);
/// assert_eq!(llmw.meta_uint("llama.block_count")?, 2);
/// let facts = |m: &dyn WeightSource| -> Vec<_> {
///     m.tensors().iter().map(|t| (t.name.clone(), t.shape.clone(), t.ggml_type, t.nbytes)).collect()
/// };
/// assert_eq!(facts(&*gguf), facts(&*llmw));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "file")]
pub fn open_model(
    path: impl AsRef<Path>,
    options: &OpenOptions,
) -> Result<Box<dyn WeightSource>, StreamError> {
    Model::open(path, options).map(|m| Box::new(m) as Box<dyn WeightSource>)
}

/// Opens a model held by any positional source, GGUF or `.llmw`, as a boxed
/// [`WeightSource`] (see [`Model::from_source`]).
pub fn open_model_from(
    source: impl ReadAt + 'static,
    options: &OpenOptions,
) -> Result<Box<dyn WeightSource>, StreamError> {
    Model::from_source(source, options).map(|m| Box::new(m) as Box<dyn WeightSource>)
}

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
        from_named(source, name.into(), options, keeps_header(options))
    }
}

/// The one open behind [`Model::from_named_source`] (no header kept) and
/// [`ModelOrHeader::from_named_source`].
fn from_named(
    source: impl ReadAt + 'static,
    name: PathBuf,
    options: &OpenOptions,
    keep_header: bool,
) -> Result<ModelOrHeader, StreamError> {
    Ok(match Format::detect(&source, Some(&name))? {
        Format::Gguf => {
            let opened = GgufFile::from_named_source_or_header(source, name, options)?;
            header_kept(opened, keep_header)?.map(Model::Gguf)
        }
        Format::Llmw => {
            ModelOrHeader::Model(Model::Llmw(LlmwFile::from_named_source(source, name, options)?))
        }
    })
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
    let format = detect_for(&backing.pread_view(), Some(path), options)?;
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
