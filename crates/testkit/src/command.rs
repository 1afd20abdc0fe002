//! Running a command-line binary in a test: its exit code and output, and a transcript for
//! assertion messages and golden files.

use std::path::Path;
use std::process::Command;

/// The output of one run of the binary.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Standard output as bytes.
    pub stdout_bytes: Vec<u8>,
}

impl Run {
    /// Exit code, stdout and stderr in one text, the shape of a golden file.
    pub fn transcript(&self) -> String {
        let mut s = format!("exit: {}\n", self.code.map_or("signal".into(), |c| c.to_string()));
        if !self.stdout.is_empty() {
            s.push_str("--- stdout\n");
            s.push_str(&self.stdout);
        }
        if !self.stderr.is_empty() {
            s.push_str("--- stderr\n");
            s.push_str(&self.stderr);
        }
        s
    }
}

/// Runs `bin args…` in `dir`, without color, at the fixed non-terminal width; a panic (exit
/// 101) or a signal fails the test.
pub fn run(bin: &str, dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("COLUMNS")
        .output()
        .expect("the sipllm binary runs");
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_bytes: out.stdout,
    };
    assert_ne!(run.code, Some(101), "sipllm {args:?} panicked:\n{}", run.stderr);
    assert!(run.code.is_some(), "sipllm {args:?} was killed by a signal");
    run
}

/// The per-tensor manifest `BIN verify --hash HASH --manifest - FILE` prints, as (hash, size,
/// name) per tensor; a failing run fails the test.
pub fn manifest(bin: &str, dir: &Path, file: &str, hash: &str) -> Vec<(String, String, String)> {
    let run = run(bin, dir, &["verify", "--hash", hash, "--manifest", "-", file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    run.stdout
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, "  ");
            let mut next = || parts.next().unwrap().to_owned();
            (next(), next(), next())
        })
        .collect()
}

/// The metadata `BIN inspect --json --no-tensors FILE` prints: one JSON object (key, type,
/// value) per pair; a failing run fails the test.
pub fn metadata(bin: &str, dir: &Path, file: &str) -> Vec<serde_json::Value> {
    let run = run(bin, dir, &["inspect", "--json", "--no-tensors", file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["metadata"].as_array().unwrap().clone()
}
