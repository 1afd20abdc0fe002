//! Running the `sipllm` command, temporary directories, the bundled sample.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The output of one run of `sipllm`.
#[derive(Debug)]
pub(crate) struct Run {
    /// The exit code (`None`: killed by a signal).
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) stdout_bytes: Vec<u8>,
}

impl Run {
    /// Exit code, stdout and stderr in one text, for assertion messages.
    pub(crate) fn transcript(&self) -> String {
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

/// Runs `sipllm args…` in `dir` without color; a panic or a signal fails the test.
pub(crate) fn sipllm(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_sipllm-it"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
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

/// A fresh directory for one test under the target directory.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sipllm-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The repository's bundled sample.
pub(crate) fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/tiny-llama.gguf")
}

/// The per-tensor manifest of `sipllm verify --hash HASH --manifest -` as (hash, size, name).
pub(crate) fn manifest(dir: &Path, file: &str, hash: &str) -> Vec<(String, String, String)> {
    let run = sipllm(dir, &["verify", "--hash", hash, "--manifest", "-", file]);
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

/// The metadata of `inspect --json`, one JSON object (key, type, value) per pair.
pub(crate) fn metadata(dir: &Path, file: &str) -> Vec<serde_json::Value> {
    let run = sipllm(dir, &["inspect", "--json", "--no-tensors", file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["metadata"].as_array().unwrap().clone()
}
