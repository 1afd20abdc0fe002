//! Behaviour on a terminal, through `script(1)` (util-linux) which gives the program a
//! pseudo-terminal: colors only there and only without `NO_COLOR`; binary data never written
//! to it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::files::{cases, valid, write};
use crate::support::temp_dir;

/// Runs `sipllm args…` on a pseudo-terminal; `None` when `script` is not installed.
fn on_tty(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Option<(Option<i32>, String)> {
    let bin = env!("CARGO_BIN_EXE_sipllm");
    let mut line = String::from(bin);
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("panicked"), "{text}");
    Some((out.status.code(), text))
}

fn skipped(test: &str) {
    eprintln!("SKIPPED: {test}: `script` (util-linux) is not installed; nothing was checked");
}

#[test]
fn colors_only_on_a_terminal_and_without_no_color() {
    let dir = temp_dir("tty-colors");
    let bad = write(&dir, "bad.gguf", &cases()[0].bytes);
    let Some((code, text)) = on_tty(&dir, &[], &["validate", &bad]) else {
        return skipped("colors_only_on_a_terminal_and_without_no_color");
    };
    assert_eq!(code, Some(1));
    assert!(text.contains("\x1b["), "no color on a terminal:\n{text}");
    let (_, text) = on_tty(&dir, &[("NO_COLOR", "1")], &["validate", &bad]).unwrap();
    assert!(!text.contains("\x1b["), "color despite NO_COLOR:\n{text}");
    let (_, text) = on_tty(&dir, &[], &["--color", "never", "validate", &bad]).unwrap();
    assert!(!text.contains("\x1b["), "color despite --color never:\n{text}");
    // Off a terminal: none (the golden tests run that way, with NO_COLOR unset here).
    let out = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(["validate", &bad])
        .current_dir(&dir)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\x1b["));
}

#[test]
fn binary_data_is_never_written_to_a_terminal() {
    let dir = temp_dir("tty-read");
    let file = write(&dir, "model.gguf", &valid());
    let Some((code, text)) = on_tty(&dir, &[], &["read", &file, "output_norm.weight"]) else {
        return skipped("binary_data_is_never_written_to_a_terminal");
    };
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("refusing to write binary tensor data to a terminal"), "{text}");
    // With -o the bytes go to the file.
    let (code, _) =
        on_tty(&dir, &[], &["read", &file, "output_norm.weight", "-o", "out.bin"]).unwrap();
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read(dir.join("out.bin")).unwrap().len(), 128);
}
