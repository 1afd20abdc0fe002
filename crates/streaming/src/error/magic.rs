//! How a file that is not a model is described: the bytes found, and what they suggest.

/// The first bytes of a file as the hex a person compares with a dump (`47 47 55 46`).
pub(super) fn hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
    hex.join(" ")
}

/// The help for a file whose first bytes are not a model's: the supported formats, then a
/// hint from the bytes found (the usual mix-ups).
pub(super) fn magic_help(found: &[u8; 4]) -> &'static str {
    macro_rules! formats {
        ($hint:literal) => {
            concat!("supported formats: GGUF (\"GGUF\"), .llmw (\"LLMW\"). ", $hint)
        };
    }
    match found {
        b"vers" => formats!(
            "it looks like a Git LFS pointer (a small text file starting with \"version \
             https://git-lfs\"): the model itself was never fetched; run `git lfs pull` or \
             download the file directly."
        ),
        [b'P', b'K', 3, 4] => formats!(
            "it is a zip archive, such as a PyTorch checkpoint (.bin, .pt): convert the model to \
             GGUF first (llama.cpp's convert_hf_to_gguf.py)."
        ),
        b"lmgg" | b"fmgg" | b"tjgg" | b"algg" => formats!(
            "it is a legacy GGML/GGMF/GGJT file (llama.cpp before GGUF, August 2023): convert it \
             with llama.cpp's convert_llama_ggml_to_gguf.py."
        ),
        [b'<', ..] => formats!(
            "it looks like HTML or XML text, often an error page saved in place of a download: \
             download the file again."
        ),
        [b'{', ..] => formats!("it looks like JSON (a config or tokenizer file?): check the path."),
        _ => formats!(
            "check the path, and that the download or copy completed; the format is found from \
             the content, not from the file name."
        ),
    }
}
