//! Parse options: the validation profile, resource limits, v1 opt-in and the file size.

/// Which rules the parser enforces. See `docs/parser.md` for the full table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// The spec plus safety: duplicates, bad UTF-8, bools other than 0/1, unknown types, names
    /// over 64 bytes, zero dimensions, misaligned, overlapping or out-of-file data are errors;
    /// gaps and out-of-order data are warnings.
    #[default]
    Strict,
    /// Exactly what current llama.cpp's reader (`gguf.cpp`, 2026-08) accepts on a
    /// little-endian machine: answers "will llama.cpp load this file?".
    LlamaCpp,
    /// Parse whatever can be parsed safely, turning tolerable errors into warnings: for
    /// inspecting broken files.
    Lenient,
}

impl Profile {
    /// The profile's name as the CLI spells it (`strict`, `llama-cpp`, `lenient`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Strict => "strict",
            Profile::LlamaCpp => "llama-cpp",
            Profile::Lenient => "lenient",
        }
    }
}

/// Resource limits. Nothing is allocated in proportion to a declared count, so these bound
/// work and the size of what a streaming reader buffers, not allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Longest string (key, tensor name or value), in bytes. Default 64 MiB: chat templates
    /// run to tens of KiB and embedded `tokenizer.huggingface.json` to a few MiB.
    pub max_string_len: u64,
    /// Most elements in one array. Default 2^26 (67 M): the largest vocabularies have under a
    /// million tokens and merges.
    pub max_array_len: u64,
    /// Deepest array nesting (an array of scalars is depth 1). Default 8.
    pub max_depth: u32,
    /// Most metadata key/value pairs. Default 2^20.
    pub max_kv_count: u64,
    /// Most tensors. Default 2^20.
    pub max_tensor_count: u64,
    /// No string, array or padding may end beyond this offset. Default 256 MiB: real headers
    /// are 1–20 MiB. A streaming reader never buffers more than this (plus one small field).
    pub max_header_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_string_len: 64 << 20,
            max_array_len: 1 << 26,
            max_depth: 8,
            max_kv_count: 1 << 20,
            max_tensor_count: 1 << 20,
            max_header_bytes: 256 << 20,
        }
    }
}

/// Everything that shapes a parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ParseOptions {
    /// Validation profile (default [`Profile::Strict`]).
    pub profile: Profile,
    /// Resource limits.
    pub limits: Limits,
    /// Read GGUF v1 files (32-bit lengths; 2023). Off by default; never under
    /// [`Profile::LlamaCpp`], because llama.cpp rejects v1.
    pub allow_v1: bool,
    /// Size of the whole file, when known. Tensor data must then lie inside it (an error
    /// except under [`Profile::Lenient`], where it is a warning).
    pub file_size: Option<u64>,
}

impl ParseOptions {
    /// Default options with the given profile.
    pub fn new(profile: Profile) -> ParseOptions {
        ParseOptions { profile, ..ParseOptions::default() }
    }

    /// Sets the profile.
    pub fn with_profile(mut self, profile: Profile) -> ParseOptions {
        self.profile = profile;
        self
    }

    /// Sets the limits.
    pub fn with_limits(mut self, limits: Limits) -> ParseOptions {
        self.limits = limits;
        self
    }

    /// Enables or disables GGUF v1 reading.
    pub fn with_v1(mut self, allow: bool) -> ParseOptions {
        self.allow_v1 = allow;
        self
    }

    /// Sets (or clears) the file size used for bounds checks.
    pub fn with_file_size(mut self, file_size: Option<u64>) -> ParseOptions {
        self.file_size = file_size;
        self
    }
}
