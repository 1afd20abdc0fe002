//! The one place where every command opens a model file.
//!
//! [`open_file`] opens through the streaming crate's [`Model`] — `sipllm_streaming::open_model`
//! without the boxing, so the parsed header stays reachable: it sniffs the magic, parses a GGUF
//! (`GgufFile`) or `.llmw` file (`ModelFile`) through the refilling window, and checks every
//! tensor lies inside the file. [`Opened`] gives the commands the [`WeightSource`] they read
//! tensors through, plus the parsed header each format's inspection needs.

use std::fmt;
use std::fs::File;
use std::path::Path;

use sipllm_gguf::{Gguf, ParseOptions, Profile};
use sipllm_llmw::Llmw;
use sipllm_streaming::{
    Backend, FileBacking, MemSource, Model, OpenOptions, SplitFile, StreamError, WeightSource,
    lock, read_header,
};

pub use sipllm_streaming::Format;

/// The sample bundled into the binary: a tiny llama-shaped GGUF written by gguf-py.
pub const SAMPLE: &[u8] = include_bytes!("../../../samples/tiny-llama.gguf");

/// The name `sipllm` shows for the bundled sample.
pub const SAMPLE_NAME: &str = "samples/tiny-llama.gguf";

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
    parsed: Parsed,
}

enum Parsed {
    /// A GGUF or `.llmw` file with all its tensors inside the file.
    Model(Box<Model>),
    /// A GGUF whose tensor data is not all inside the file, parsed by the lenient profile:
    /// the header can be inspected but no tensor can be read.
    GgufHeaderOnly(Box<Gguf<Vec<u8>>>),
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
        match &self.parsed {
            Parsed::Model(m) => Some(m.as_weight_source()),
            Parsed::GgufHeaderOnly(_) => None,
        }
    }

    /// The parsed GGUF header, for GGUF files.
    pub fn gguf(&self) -> Option<&Gguf<Vec<u8>>> {
        match &self.parsed {
            Parsed::Model(m) => m.gguf().map(|f| f.gguf()),
            Parsed::GgufHeaderOnly(g) => Some(g),
        }
    }

    /// The split set, when the file is a shard of one (the whole set is opened).
    pub fn split(&self) -> Option<&SplitFile> {
        match &self.parsed {
            Parsed::Model(m) => m.split(),
            Parsed::GgufHeaderOnly(_) => None,
        }
    }

    /// The parsed `.llmw` header, for `.llmw` files.
    pub fn llmw(&self) -> Option<&Llmw<Vec<u8>>> {
        match &self.parsed {
            Parsed::Model(m) => m.llmw().map(|f| f.llmw()),
            Parsed::GgufHeaderOnly(_) => None,
        }
    }
}

/// True when an open error means the file itself is invalid (exit code 1): a parse error, an
/// unknown magic, a file too short for one, tensor data outside the file, a broken split set.
/// False for I/O and resource problems (a FIFO or device given as a model included) and for
/// requests that do not fit the file (`split` of a shard, `merge` of a file that is no set, an
/// output that is the input, a file another process holds locked) (exit code 2).
pub fn is_invalid_file(e: &StreamError) -> bool {
    !matches!(
        e,
        StreamError::Open { .. }
            | StreamError::NotAFile { .. }
            | StreamError::InputTooLarge { .. }
            | StreamError::InputEmptyStream { .. }
            | StreamError::Io { .. }
            | StreamError::UnexpectedEof { .. }
            | StreamError::TooLarge { .. }
            | StreamError::Create { .. }
            | StreamError::Write { .. }
            | StreamError::SplitNotASet { .. }
            | StreamError::SplitAlreadySplit { .. }
            | StreamError::SplitRefused { .. }
            | StreamError::OutputIsInput { .. }
            | StreamError::Locked { .. }
            | StreamError::SplitTooManyFiles { .. }
    )
}

/// Opens `path`: sniffs the format and parses the header with `settings`.
///
/// A GGUF whose tensor data does not fit in the file is an error, except under the lenient
/// profile, where the header is still returned (for inspection) without a weight source.
pub fn open_file(path: &Path, settings: &OpenSettings) -> Result<Opened, StreamError> {
    let options = settings.options();
    let name = path.display().to_string();
    match Model::open(path, &options) {
        Ok(model) => Ok(Opened {
            name,
            format: model.format(),
            file_size: model.file_size(),
            parsed: Parsed::Model(Box::new(model)),
        }),
        Err(StreamError::TensorOutOfBounds { .. }) if settings.profile == Profile::Lenient => {
            // The lenient parse succeeded (with an out-of-bounds warning) but the weight source
            // refuses tensors outside the file: keep the header for inspection.
            let backing = FileBacking::open(path, Backend::Pread)?;
            let (gguf, _) = read_header(&backing, Some(path), &options)?;
            Ok(Opened {
                name,
                format: Format::Gguf,
                file_size: backing.len(),
                parsed: Parsed::GgufHeaderOnly(Box::new(gguf)),
            })
        }
        Err(e) => Err(e),
    }
}

/// Opens the sample GGUF bundled into the binary.
pub fn open_sample(settings: &OpenSettings) -> Result<Opened, StreamError> {
    let model = Model::from_source(MemSource::new(SAMPLE), &settings.options())?;
    Ok(Opened {
        name: SAMPLE_NAME.to_owned(),
        format: model.format(),
        file_size: SAMPLE.len() as u64,
        parsed: Parsed::Model(Box::new(model)),
    })
}

/// Opens `path` for a command that writes a model from it (`edit`, `convert`), and locks it
/// before anything is read (the streaming crate's [`lock`] protocol): read-only with a shared
/// lock (waiting for an in-place edit to finish), or read-write with an exclusive one (refused
/// at once while another process holds the file). Parse it with [`model_of`]: the one [`File`]
/// is what the header is read through and what the caller hands back to the streaming crate to
/// copy tensor data from or rewrite the header of, so both see the same file, even if `path` is
/// replaced meanwhile (an output renamed over its input).
pub fn open_locked(path: &Path, write: bool) -> Result<File, StreamError> {
    lock::open_locked(path, write)
}

/// Parses the model open as `file` (strict profile, pread; see [`Model::from_file`]).
pub fn model_of(file: &File, path: &Path) -> Result<Model, StreamError> {
    Model::from_file(file, path, &OpenSettings::default().options())
}
