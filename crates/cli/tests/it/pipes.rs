//! A closed standard output ends every command quietly with exit 0
//! (`sipllm inspect --json big.gguf | head -c 100`): the binary runs with its standard output
//! the write end of a pipe whose read end is already closed, so every write fails with
//! `EPIPE` (Rust programs ignore `SIGPIPE`).

use std::process::{Command, Stdio};

use crate::files::{valid, write};
use crate::support::temp_dir;

/// Runs `sipllm args…` with a closed pipe as standard output: (exit code, standard error).
fn closed_stdout(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the sipllm binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let dir = temp_dir("pipes");
    let file = write(&dir, "m.gguf", &valid());
    let commands: &[&[&str]] = &[
        &["inspect", &file],
        &["inspect", "--json", &file],
        &["inspect", "--full", &file],
        &["inspect"],
        &["tensors", &file],
        &["tensors", "--json", &file],
        &["tensors", "--stats", &file],
        &["validate", &file],
        &["validate", "--format", "json", &file],
        &["read", &file, "output_norm.weight"],
        &["read", "--as", "f32", &file, "output_norm.weight"],
        &["verify", &file],
        &["completions", "bash"],
        &["edit", "--set", "general.name=str:x", &file, "-o", "out.gguf"],
        &["--help"],
    ];
    for args in commands {
        let (code, stderr) = closed_stdout(&dir, args);
        assert_eq!(code, Some(0), "sipllm {args:?} on a closed pipe: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "sipllm {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "sipllm {args:?}: {stderr}");
    }
}
