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
