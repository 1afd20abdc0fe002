//! Help texts for people at a command line.
//!
//! The parsers' help texts are written for programs that embed them: they name the Rust API
//! (`ParseOptions::allow_v1`, `Limits`, "the lenient profile"). A `sipllm` user needs the flag
//! instead (`--allow-v1`, `--profile lenient`). [`for_cli`] maps the stable codes whose help
//! names an API to the command line's own text; every other code keeps the library's help.
//! The libraries keep theirs for embedders.

use std::borrow::Cow;

/// The help for `code` as a command-line user needs it: this table's text when the
/// library's names an API, else `library_help` unchanged.
pub fn for_cli<'h>(code: &str, library_help: &'h str) -> Cow<'h, str> {
    match cli_text(code) {
        Some(text) => Cow::Borrowed(text),
        None => Cow::Borrowed(library_help),
    }
}

/// The command line's help text for the codes whose library help names an API.
fn cli_text(code: &str) -> Option<&'static str> {
    Some(match code {
        "gguf::header::v1_disabled" => {
            "GGUF v1 (2023, 32-bit lengths) is obsolete and rejected by llama.cpp; pass \
             `--allow-v1` to inspect it, or re-convert the model."
        }
        "gguf::header::endian_mismatch" => {
            "this file is big-endian; llama.cpp on a little-endian machine cannot load it. \
             Convert it with gguf-py's gguf-convert-endian, or read it here with \
             `--profile strict` (the default)."
        }
        "gguf::limits::header_too_large"
        | "gguf::limits::too_many_kvs"
        | "gguf::limits::too_many_tensors"
        | "gguf::limits::string_too_long"
        | "gguf::limits::array_too_long"
        | "gguf::limits::nesting_too_deep"
        | "llmw::limits::header_too_large"
        | "llmw::limits::too_many_meta"
        | "llmw::limits::too_many_tensors"
        | "llmw::limits::string_too_long"
        | "llmw::limits::array_too_long" => {
            "a declared size is far beyond any real model file, which usually means a \
             corrupted length field; check the file against its source. (The limits are fixed \
             at the command line; a program using the sipllm libraries can raise them.)"
        }
        "gguf::metadata::invalid_utf8_key"
        | "gguf::metadata::invalid_utf8_value"
        | "gguf::tensor::invalid_utf8_name" => {
            "GGUF strings must be UTF-8; the writer stored raw bytes. `--profile lenient` \
             reads them as bytes."
        }
        "gguf::metadata::duplicate_key" => {
            "a key may appear once; gguf-py and llama.cpp reject the file. Remove one of the \
             two entries (`--profile lenient` reads the file, keeping the last)."
        }
        "gguf::metadata::invalid_bool" => {
            "bools are stored as 0 or 1, but llama.cpp treats any non-zero byte as true: \
             `--profile llama-cpp` or `--profile lenient` accepts it."
        }
        "gguf::tensor::zero_dim" => {
            "a tensor with a zero dimension holds no data; llama.cpp accepts it \
             (`--profile llama-cpp`), the strict profile does not."
        }
        "gguf::tensor::unknown_type" => {
            "this tensor type is newer than this reader, or the type field is corrupted; \
             `--profile lenient` reads the metadata anyway."
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every `--flag` (and `--flag value`) a mapped text names is one `sipllm` has, and no
    /// text names the Rust API.
    #[test]
    fn the_texts_name_real_flags_and_no_api() {
        let cli = crate::cli::Cli::command();
        let mut flags: Vec<String> = Vec::new();
        for sub in cli.get_subcommands() {
            for arg in sub.get_arguments() {
                if let Some(long) = arg.get_long() {
                    flags.push(format!("--{long}"));
                    for v in arg.get_possible_values() {
                        flags.push(format!("--{long} {}", v.get_name()));
                    }
                }
            }
        }
        let codes = [
            "gguf::header::v1_disabled",
            "gguf::header::endian_mismatch",
            "gguf::limits::header_too_large",
            "llmw::limits::array_too_long",
            "gguf::metadata::invalid_utf8_value",
            "gguf::metadata::duplicate_key",
            "gguf::metadata::invalid_bool",
            "gguf::tensor::zero_dim",
            "gguf::tensor::unknown_type",
        ];
        for code in codes {
            let text = cli_text(code).expect(code);
            for api in ["ParseOptions", "Limits", "::", "the lenient profile"] {
                assert!(!text.contains(api), "{code}: {text}");
            }
            // Each `--…` in backquotes is a real flag (with its value, when one is given).
            for quoted in text.split('`').skip(1).step_by(2) {
                if quoted.starts_with("--") {
                    assert!(flags.iter().any(|f| f == quoted), "{code}: {quoted} is not a flag");
                }
            }
        }
        // A code the table does not know keeps the library's text.
        assert_eq!(for_cli("gguf::header::bad_magic", "as is"), "as is");
        // The v1 help names the flag, not the API.
        let lib = sipllm_gguf::ErrorKind::VersionOneDisabled.help();
        assert!(lib.contains("ParseOptions::allow_v1"), "{lib}");
        assert!(for_cli("gguf::header::v1_disabled", lib).contains("`--allow-v1`"));
    }
}
