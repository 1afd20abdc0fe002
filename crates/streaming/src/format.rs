//! [`Format`]: which model format a file is, found from its content.
//!
//! The format is found from the content — one positional read of the first 4 bytes, compared
//! with each format's magic — never from the file name: a GGUF file named `.llmw` opens as
//! GGUF. The format's opener then reads its header through the refilling window (re-reading
//! those 4 bytes, which is simpler than threading them through and costs nothing).

use std::fmt;
use std::path::Path;

use sipllm_gguf::Profile;

use crate::backing::ReadAt;
use crate::error::{StreamError, StreamErrorKind};
use crate::options::OpenOptions;

/// A model file format this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// GGUF (llama.cpp's format): [`GgufFile`](crate::GgufFile).
    Gguf,
    /// `.llmw` (the engine's format): [`LlmwFile`](crate::LlmwFile).
    Llmw,
}

impl Format {
    /// Every format, in the order errors list them.
    pub const ALL: [Format; 2] = [Format::Gguf, Format::Llmw];

    /// The 4 bytes a file of this format starts with.
    pub fn magic(self) -> [u8; 4] {
        match self {
            Format::Gguf => sipllm_gguf::MAGIC,
            Format::Llmw => sipllm_llmw::MAGIC,
        }
    }

    /// The format whose magic is `bytes`.
    pub fn from_magic(bytes: [u8; 4]) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.magic() == bytes)
    }

    /// The short lowercase name (`gguf`, `llmw`), as in JSON output and file extensions.
    pub fn name(self) -> &'static str {
        match self {
            Format::Gguf => "gguf",
            Format::Llmw => "llmw",
        }
    }

    /// The name for messages (`GGUF`, `.llmw`).
    pub fn label(self) -> &'static str {
        match self {
            Format::Gguf => "GGUF",
            Format::Llmw => ".llmw",
        }
    }

    /// Finds the format of `source` from its first 4 bytes (one positional read).
    ///
    /// A source shorter than 4 bytes is [`StreamErrorKind::TooShort`]; 4 bytes that are no
    /// format's magic are [`StreamErrorKind::UnknownMagic`], which shows them in hex and ASCII.
    /// `path` is only used in error messages.
    pub fn detect(source: &dyn ReadAt, path: Option<&Path>) -> Result<Format, StreamError> {
        let len = source.len();
        let path_buf = || path.map(Path::to_path_buf);
        if len < 4 {
            return Err(StreamError::new(path_buf(), StreamErrorKind::TooShort { len }));
        }
        let mut found = [0u8; 4];
        source.read_exact_at(0, &mut found).map_err(|e| StreamError::read(path, 0, 4, e))?;
        Format::from_magic(found)
            .ok_or_else(|| StreamError::new(path_buf(), StreamErrorKind::UnknownMagic { found }))
    }
}

/// The format to open a source as: its magic's ([`Format::detect`]), except under the
/// llama-cpp profile, which answers "will llama.cpp load this?". llama.cpp reads only GGUF, so
/// there a `.llmw` file is parsed as GGUF and refused for its magic
/// (`gguf::header::bad_magic`), as ggml's `gguf_init_from_file` refuses it.
pub(crate) fn detect_for(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<Format, StreamError> {
    let format = Format::detect(source, path)?;
    Ok(if options.parse.profile == Profile::LlamaCpp { Format::Gguf } else { format })
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}
