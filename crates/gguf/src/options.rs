//! Parse options: the validation profile, resource limits, v1 opt-in and the file size.

/// Which rules the parser enforces. See `docs/parser.md` for the full table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// The spec plus safety: duplicates, bad UTF-8, NUL bytes in keys and tensor names (which
    /// ggml reads as shorter C strings), bools other than 0/1, unknown types, names over 64
    /// bytes, zero dimensions, misaligned, overlapping or out-of-file data are errors; gaps and
    /// out-of-order data are warnings.
    #[default]
    Strict,
    /// Exactly what current llama.cpp's reader (`gguf.cpp`, 2026-08) accepts on a
    /// little-endian machine, read as it reads it (keys and names as C strings): answers "will
    /// llama.cpp load this file?". Held to ggml d99724f2 by a differential run; the files
    /// ggml accepts but whose tensors cannot be used (data past the end, sizes that wrap) are
    /// refused, deliberately (`docs/parser.md`, "The llama-cpp profile against ggml").
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

impl Limits {
    /// llama.cpp's own caps (`gguf.cpp`, gguf-facts.md §4): strings up to 1 GiB, arrays up to
    /// 2^30 elements, and no cap on the counts or the header's size other than the bytes the
    /// file has. With them, [`Profile::LlamaCpp`] rejects exactly what llama.cpp rejects, so
    /// [`ParseOptions::new`] gives that profile these limits. A streaming reader may then
    /// buffer a header as large as the file — as llama.cpp does.
    pub fn llama_cpp() -> Limits {
        Limits {
            max_string_len: 1 << 30,
            max_array_len: 1 << 30,
            max_kv_count: u64::MAX,
            max_tensor_count: u64::MAX,
            max_header_bytes: u64::MAX,
            ..Limits::default()
        }
    }

    /// The limits [`ParseOptions::new`] gives a profile: [`Limits::llama_cpp`] for
    /// [`Profile::LlamaCpp`], [`Limits::default`] for the others.
    pub fn for_profile(profile: Profile) -> Limits {
        match profile {
            Profile::LlamaCpp => Limits::llama_cpp(),
            Profile::Strict | Profile::Lenient => Limits::default(),
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
    /// Default options with the given profile and its limits ([`Limits::for_profile`]).
    pub fn new(profile: Profile) -> ParseOptions {
        ParseOptions { profile, limits: Limits::for_profile(profile), ..ParseOptions::default() }
    }

    /// Sets the profile, keeping the limits (use [`ParseOptions::new`] for the profile's own).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, ErrorKind, Gguf, parse_with};
    use sipllm_testkit::{GgufBuilder, Value};

    /// A `UINT8` array pair's raw value: declaring `count` elements, `present` of them there.
    fn u8_array(count: u64, present: usize) -> Value {
        let mut bytes = 0u32.to_le_bytes().to_vec();
        bytes.extend(count.to_le_bytes());
        bytes.resize(bytes.len() + present, 7);
        Value::Raw { type_code: 9, bytes }
    }

    fn parse(file: &[u8], profile: Profile) -> Result<Gguf<&[u8]>, Error> {
        parse_with(file, &ParseOptions::new(profile))
    }

    // The first pair's value (its length or element type field) starts at 24 (header) + 9
    // (key "s" or "a") + 4 (type).
    const VALUE: u64 = 37;

    #[test]
    fn profiles_get_their_limits() {
        assert_eq!(ParseOptions::new(Profile::Strict).limits, Limits::default());
        assert_eq!(ParseOptions::new(Profile::Lenient).limits, Limits::default());
        assert_eq!(ParseOptions::new(Profile::LlamaCpp).limits, Limits::llama_cpp());
        // `with_profile` keeps limits set before it.
        let tight = Limits { max_depth: 2, ..Limits::default() };
        let opts = ParseOptions::default().with_limits(tight).with_profile(Profile::LlamaCpp);
        assert_eq!(opts.limits, tight);
    }

    /// A string and an array just past our caps and far within llama.cpp's: strict and lenient
    /// refuse them, the llama-cpp profile loads them, as llama.cpp does.
    #[test]
    #[cfg_attr(miri, ignore = "parses 128 MiB: hours under Miri")]
    fn llama_cpp_profile_loads_what_only_our_caps_refuse() {
        let string_len = Limits::default().max_string_len + 1;
        let array_len = Limits::default().max_array_len + 1;
        let string = vec![b'a'; string_len as usize];
        let file = GgufBuilder::new()
            .kv("s", Value::String(string.clone()))
            .kv("a", u8_array(array_len, array_len as usize))
            .build();
        for profile in [Profile::Strict, Profile::Lenient] {
            let err = parse(&file, profile).unwrap_err();
            assert_eq!(
                err.kind(),
                &ErrorKind::StringTooLong { len: string_len, max: 64 << 20 },
                "{profile:?}"
            );
            assert_eq!(err.offset(), VALUE);
        }
        let g = parse(&file, Profile::LlamaCpp).unwrap();
        assert_eq!(g.get_str("s").map(str::len), Some(string.len()));
        assert_eq!(g.get_array("a").map(|a| a.len()), Some(array_len));
    }

    /// llama.cpp refuses a string over 1 GiB and an array over 2^30 elements by their length
    /// field alone; at exactly those sizes it reads on (and here meets the end of the file).
    #[test]
    fn llama_cpp_caps_are_llama_cpps() {
        let cap = 1u64 << 30;
        let string = |declared| {
            GgufBuilder::new().kv("s", Value::StringWithLen { declared, bytes: vec![] }).build()
        };
        let array = |count| GgufBuilder::new().kv("a", u8_array(count, 0)).build();

        let err = parse(&string(cap + 1), Profile::LlamaCpp).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::StringTooLong { len: cap + 1, max: cap });
        assert_eq!(err.offset(), VALUE);
        let err = parse(&string(cap), Profile::LlamaCpp).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::UnexpectedEof { .. }), "{err}");

        let err = parse(&array(cap + 1), Profile::LlamaCpp).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::ArrayTooLong { len: cap + 1, max: cap });
        let err = parse(&array(cap), Profile::LlamaCpp).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::UnexpectedEof { .. }), "{err}");
    }
}
