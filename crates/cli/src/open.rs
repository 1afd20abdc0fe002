//! The one place where every command opens a model file.
//!
//! [`open_file`] opens through the streaming crate's [`Model`] — `sipllm_streaming::open_model`
//! without the boxing, so the parsed header stays reachable: it sniffs the magic, parses a GGUF
//! (`GgufFile`) or `.llmw` file (`LlmwFile`) through the refilling window, and checks every
//! tensor lies inside the file. [`Opened`] gives the commands the [`WeightSource`] they read
//! tensors through, plus the parsed header each format's inspection needs.
//!
//! A FILE that is a URL (`http://`, `https://`, `hf://OWNER/REPO/PATH[@REVISION]`, and with
//! the `object-store` feature `s3://`, `gs://`, `az://`) opens through `sipllm-remote`
//! instead ([`open_remote`]): the same [`Model`] over range requests, so every reading
//! command works on it unchanged. Commands that write from a model ([`open_locked`])
//! fetch a remote one into an unnamed temporary file first: they copy every tensor byte
//! anyway.

use std::fmt;
use std::fs::File;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sipllm_remote::{HttpOptions, RemoteError, RemoteUrl};

use sipllm_gguf::{Gguf, ParseOptions, Profile};
use sipllm_llmw::Llmw;
use sipllm_streaming::HeaderBytes;
use sipllm_streaming::{
    Backend, HeaderOnly, MemSource, Model, ModelOrHeader, OpenOptions, SplitFile, StreamError,
    StreamErrorKind, WeightSource, lock,
};

pub use sipllm_streaming::Format;

/// The sample bundled into the binary: a tiny llama-shaped GGUF written by gguf-py.
pub const SAMPLE: &[u8] = include_bytes!("../samples/tiny-llama.gguf");

/// The name `sipllm` shows for the bundled sample.
pub const SAMPLE_NAME: &str = "samples/tiny-llama.gguf";

/// How to parse a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenSettings {
    /// The GGUF validation profile (`.llmw` has one fixed, strict rule set).
    pub profile: Profile,
    /// Read GGUF v1 files.
    pub allow_v1: bool,
    /// Open a shard of a split set as the single file it is (`--shard-only`), not the set.
    pub shard_only: bool,
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
    GgufHeaderOnly(HeaderOnly),
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
    fn new(name: String, opened: ModelOrHeader) -> Opened {
        match opened {
            ModelOrHeader::Model(model) => Opened {
                name,
                format: model.format(),
                file_size: model.file_size(),
                parsed: Parsed::Model(Box::new(model)),
            },
            ModelOrHeader::Header(header) => Opened {
                name,
                format: Format::Gguf,
                file_size: header.file_size(),
                parsed: Parsed::GgufHeaderOnly(header),
            },
        }
    }

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
    pub fn gguf(&self) -> Option<&Gguf<HeaderBytes>> {
        match &self.parsed {
            Parsed::Model(m) => m.gguf().map(|f| f.gguf()),
            Parsed::GgufHeaderOnly(h) => Some(h.gguf()),
        }
    }

    /// The model, when its tensors can be read (not for a header parsed leniently only).
    pub fn model(&self) -> Option<&Model> {
        match &self.parsed {
            Parsed::Model(m) => Some(m),
            Parsed::GgufHeaderOnly(_) => None,
        }
    }

    /// The split set, when the file is a shard of one (the whole set is opened).
    pub fn split(&self) -> Option<&SplitFile> {
        match &self.parsed {
            Parsed::Model(m) => m.split(),
            Parsed::GgufHeaderOnly(_) => None,
        }
    }

    /// Announces that `len` bytes at absolute offset `offset` will be read next: `readahead`
    /// for a file, one request for the whole range (up to 64 MiB) for a URL. Only a hint.
    pub fn prefetch_range(&self, offset: u64, len: u64) {
        let Parsed::Model(m) = &self.parsed else { return };
        let _ = match m.split() {
            Some(set) => match set.locate(offset).and_then(|(i, at)| Some((set.shard(i)?, at))) {
                Some((shard, at)) => shard.store().prefetch_range(at, len),
                None => Ok(()),
            },
            None => m.store().prefetch_range(offset, len),
        };
    }

    /// The parsed `.llmw` header, for `.llmw` files.
    pub fn llmw(&self) -> Option<&Llmw<HeaderBytes>> {
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
        e.kind(),
        StreamErrorKind::Open { .. }
            | StreamErrorKind::NotAFile { .. }
            | StreamErrorKind::Io { .. }
            | StreamErrorKind::UnexpectedEof { .. }
            | StreamErrorKind::TooLarge { .. }
            | StreamErrorKind::Spool { .. }
            | StreamErrorKind::Split(sipllm_streaming::SplitSetError::NotASet { .. })
            | StreamErrorKind::Locked { .. }
            | StreamErrorKind::Split(sipllm_streaming::SplitSetError::TooManyFiles { .. })
    )
}

/// Opens `path`: sniffs the format and parses the header with `settings`.
///
/// A GGUF whose tensor data does not fit in the file is an error, except under the lenient
/// profile, where the header is still returned (for inspection) without a weight source.
pub fn open_file(path: &Path, settings: &OpenSettings) -> Result<Opened, StreamError> {
    if let Some(url) = remote_name(path) {
        return open_remote(url, settings);
    }
    let options = settings.options();
    // The read side keeps the header of a GGUF whose tensor data lies (partly) outside the
    // file under the lenient profile, from its one parse: inspectable, with no weight source.
    let opened = if settings.shard_only {
        // The file alone, even when it is a shard whose siblings are missing.
        ModelOrHeader::open_single(path, &options)
    } else {
        ModelOrHeader::open(path, &options)
    };
    Ok(Opened::new(path.display().to_string(), opened?))
}

/// Opens the sample GGUF bundled into the binary.
pub fn open_sample(settings: &OpenSettings) -> Result<Opened, StreamError> {
    let model = Model::from_source(MemSource::new(SAMPLE), &settings.options())?;
    Ok(Opened::new(SAMPLE_NAME.to_owned(), ModelOrHeader::Model(model)))
}

/// Opens `path` for a command that writes a model from it (`edit`, `convert`), and locks it
/// before anything is read (the streaming crate's [`lock`] protocol): read-only with a shared
/// lock (waiting for an in-place edit to finish), or read-write with an exclusive one (refused
/// at once while another process holds the file). Parse it with [`model_of`]: the one [`File`]
/// is what the header is read through and what the caller hands back to the streaming crate to
/// copy tensor data from or rewrite the header of, so both see the same file, even if `path` is
/// replaced meanwhile (an output renamed over its input).
///
/// A URL is fetched whole into an unnamed temporary file (in `TMPDIR`), which the returned
/// [`File`] then is: a written model needs every tensor byte anyway. The object's size is
/// checked against TMPDIR's free space first ([`StreamErrorKind::Spool`] when it does not fit).
/// A URL cannot be edited in place (`write`).
pub fn open_locked(path: &Path, write: bool) -> Result<File, StreamError> {
    let Some(url) = remote_name(path) else {
        return lock::open_locked(path, write);
    };
    let name = PathBuf::from(sipllm_remote::url::redact(url));
    if write {
        let refused = io::Error::new(
            io::ErrorKind::Unsupported,
            "a URL cannot be edited in place; give -o OUT to write an edited copy",
        );
        return Err(StreamError::at(name, StreamErrorKind::Open { source: refused }));
    }
    fetch(url)
}

/// Fetches the model the URL `url` names whole into an unnamed temporary file (in `TMPDIR`),
/// after checking the object's size against TMPDIR's free space ([`StreamErrorKind::Spool`] when
/// it does not fit): a private copy no other process can reach, so it needs no lock.
pub fn fetch(url: &str) -> Result<File, StreamError> {
    let name = PathBuf::from(sipllm_remote::url::redact(url));
    let url = parse_url(url)?;
    let http = http_options();
    // The size the server claims is checked against the room in TMPDIR before a byte is
    // fetched: a server that claims a petabyte no longer fills the disk until the write fails.
    let size = sipllm_remote::open_any(&url, &http)
        .map_err(|e| StreamError::at(name.clone(), StreamErrorKind::Open { source: e.into_io() }))?
        .len();
    let spool = std::env::temp_dir();
    sipllm_edit::check_room(&spool, size)
        .map_err(|source| StreamError::at(spool, StreamErrorKind::Spool { offset: 0, source }))?;
    with_transfer_bar(&name, || sipllm_remote::fetch_to_file(&url, &http))
}

/// Parses the model open as `file` (strict profile, pread; see [`Model::from_file`]), named
/// by `path` (a URL with its credentials redacted).
pub fn model_of(file: &File, path: &Path) -> Result<Model, StreamError> {
    Model::from_file(file, shown_name(path), &OpenSettings::default().options())
}

/// The URL `path` spells, if it is one (`http://`, `https://`, `hf://`, `s3://`, …).
pub fn remote_name(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| sipllm_remote::is_remote(s))
}

/// How `path` is shown: as given, or for a URL with its credentials redacted.
pub fn shown_name(path: &Path) -> String {
    match remote_name(path) {
        Some(url) => sipllm_remote::url::redact(url),
        None => path.display().to_string(),
    }
}

/// The remote error inside an open or read error, if the failure was a remote one.
pub fn remote_error(e: &StreamError) -> Option<&RemoteError> {
    RemoteError::find_in(e)
}

fn parse_url(url: &str) -> Result<RemoteUrl, StreamError> {
    RemoteUrl::parse_env(url).map_err(|e| {
        StreamError::at(
            PathBuf::from(sipllm_remote::url::redact(url)),
            StreamErrorKind::Open { source: e.into_io() },
        )
    })
}

/// The progress bar of long transfers: drawn on standard error when it is a terminal, while
/// `ACTIVE` (opening and fetching; `verify` draws its own bar while it reads).
struct Transfer {
    bar: ProgressBar,
    active: AtomicBool,
}

/// `--quiet`: no transfer bar (set once, before anything is opened).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences the transfer bar of downloads (`--quiet`); call before opening anything.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

fn transfer() -> &'static Transfer {
    static TRANSFER: std::sync::OnceLock<Transfer> = std::sync::OnceLock::new();
    TRANSFER.get_or_init(|| {
        let target = if io::stderr().is_terminal() && !QUIET.load(Ordering::Relaxed) {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("fetching {msg}: {bytes} ({binary_bytes_per_sec})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        Transfer { bar, active: AtomicBool::new(false) }
    })
}

/// The HTTP settings: the defaults, with the transfer bar fed while it is active.
fn http_options() -> HttpOptions {
    HttpOptions {
        on_progress: Some(Arc::new(|bytes| {
            let t = transfer();
            if t.active.load(Ordering::Relaxed) {
                t.bar.set_position(bytes);
            }
        })),
        ..HttpOptions::default()
    }
}

/// Runs `f` with the transfer bar showing `name`, and clears it after.
fn with_transfer_bar<T>(name: &Path, f: impl FnOnce() -> T) -> T {
    let t = transfer();
    t.bar.set_message(name.display().to_string());
    t.bar.reset();
    t.active.store(true, Ordering::Relaxed);
    let out = f();
    t.active.store(false, Ordering::Relaxed);
    t.bar.finish_and_clear();
    out
}

/// Opens the model a URL names: a remote source (a set of them for a split set) under the
/// same [`Model`] as files.
pub fn open_remote(url: &str, settings: &OpenSettings) -> Result<Opened, StreamError> {
    let shown = sipllm_remote::url::redact(url);
    let parsed = parse_url(url)?;
    let options = settings.options();
    let http = http_options();
    let name = PathBuf::from(&shown);
    with_transfer_bar(&name, || {
        let opened = sipllm_remote::open_model_or_header(&parsed, &http, &options)?;
        Ok(Opened::new(shown.clone(), opened.map(|remote| remote.model)))
    })
}
