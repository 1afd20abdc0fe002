//! Diagnostics at a narrow and a wide terminal (`COLUMNS`): the hex view keeps one line per
//! row by showing fewer bytes per row (goldens at 60 and 100 columns), and help texts name
//! the command line's flags (`--allow-v1`), not the library's API.

use std::process::Command;

use sipllm_testkit::{GgufBuilder, Value};

use crate::files::write;
use crate::support::{golden, temp_dir};

/// `sipllm args…` at `columns` columns: the transcript (exit code, stdout, stderr).
fn at_width(dir: &std::path::Path, columns: usize, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("the sipllm binary runs");
    let mut s = format!("exit: {}\n", out.status.code().map_or("signal".into(), |c| c.to_string()));
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if !bytes.is_empty() {
            s.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
        }
    }
    s
}

/// A value that is not UTF-8, in the middle of the metadata.
fn bad_utf8() -> Vec<u8> {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::String(b"bad\xc3(name".to_vec()))
        .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hello"]))
        .build()
}

#[test]
fn the_hex_view_at_60_and_100_columns() {
    let dir = temp_dir("narrow-hexview");
    write(&dir, "bad-utf8.gguf", &bad_utf8());
    for columns in [60, 100] {
        let text = at_width(&dir, columns, &["validate", "bad-utf8.gguf"]);
        golden(&format!("validate/bad-utf8-{columns}-columns.txt"), &text);
        for line in text.lines() {
            // The message and help wrap; every line of the window fits.
            if line.contains(" │ ") || line.contains(" · ") {
                assert!(line.chars().count() <= columns, "{columns}: {line:?}\n{text}");
            }
        }
    }
    let narrow = at_width(&dir, 60, &["validate", "bad-utf8.gguf"]);
    assert!(narrow.contains("│ 0x00000048  00 00 00 00 00 67 65 6e  |.....gen|"), "{narrow}");
    assert!(!narrow.contains(" 08 09 0a 0b"), "8 bytes per row at 60 columns:\n{narrow}");
}

#[test]
fn help_texts_name_the_command_line_flags() {
    let dir = temp_dir("narrow-help");
    let v1 = GgufBuilder::new().version(1).kv("general.architecture", Value::str("llama")).build();
    write(&dir, "v1.gguf", &v1);
    let text = at_width(&dir, 100, &["validate", "v1.gguf"]);
    golden("validate/header-v1.txt", &text);
    assert!(text.contains("`--allow-v1`"), "{text}");
    assert!(!text.contains("ParseOptions"), "{text}");
    // The JSON report carries the same help.
    let text = at_width(&dir, 100, &["validate", "--format", "json", "v1.gguf"]);
    assert!(text.contains("`--allow-v1`"), "{text}");
    // And the flag does what the help says.
    let text = at_width(&dir, 100, &["validate", "--allow-v1", "v1.gguf"]);
    assert!(text.starts_with("exit: 0"), "{text}");
}
