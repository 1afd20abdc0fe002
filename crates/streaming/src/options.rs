//! [`OpenOptions`]: how every weight source is opened, whatever its format.

use sipllm_gguf::{ParseOptions, Profile};

use crate::backing::Backend;
use crate::window::DEFAULT_WINDOW;

/// How to open a weight source.
///
/// One set of options serves both formats: the backend, readahead and window apply to every
/// file; `parse` shapes a GGUF parse and `llmw` a `.llmw` one (each format ignores the other's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpenOptions {
    /// How the file is read (default [`Backend::Pread`]; see [`Backend`] for the mmap
    /// contract).
    pub backend: Backend,
    /// GGUF parse options (profile, limits, v1). `file_size` is ignored: the source's length
    /// is always used, so the parser bounds-checks every tensor against the real file.
    pub parse: ParseOptions,
    /// `.llmw` parse options (limits; the format has one strict profile). `file_size` is
    /// ignored, as for GGUF.
    pub llmw: sipllm_llmw::ParseOptions,
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
            llmw: sipllm_llmw::ParseOptions::default(),
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

    /// Sets the GGUF parse options.
    pub fn with_parse(mut self, parse: ParseOptions) -> OpenOptions {
        self.parse = parse;
        self
    }

    /// Sets the GGUF parser's profile, keeping the parse limits (for the profile's own limits,
    /// [`Limits::for_profile`](sipllm_gguf::Limits::for_profile), use
    /// `with_parse(ParseOptions::new(profile))`).
    pub fn with_profile(mut self, profile: Profile) -> OpenOptions {
        self.parse.profile = profile;
        self
    }

    /// Sets the `.llmw` parse options.
    pub fn with_llmw(mut self, llmw: sipllm_llmw::ParseOptions) -> OpenOptions {
        self.llmw = llmw;
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
