//! Running the binary, temporary files, golden files and the shared corpus.

use std::path::{Path, PathBuf};

pub(crate) use sipllm_testkit::command::Run;

/// Runs `sipllm args…` in `dir`, without color, at the fixed non-terminal width.
pub(crate) fn sipllm(dir: &Path, args: &[&str]) -> Run {
    sipllm_testkit::command::run(env!("CARGO_BIN_EXE_sipllm"), dir, args)
}

/// A fresh directory for one test under the target directory.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sipllm-cli").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The repository's bundled sample.
pub(crate) fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/tiny-llama.gguf")
}

/// `../shared/` beside the checkout, or `None` (after saying so loudly) when it is absent;
/// a panic instead under `SIPLLM_REQUIRE_CORPUS=1` (CI).
pub(crate) fn shared(test: &str) -> Option<PathBuf> {
    sipllm_testkit::corpus::shared_dir(test)
}

/// Compares `actual` with `tests/golden/<name>`; with `SIPLLM_UPDATE_GOLDEN=1` set, writes it
/// instead.
pub(crate) fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("SIPLLM_UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "golden file {} is missing ({e}); run with SIPLLM_UPDATE_GOLDEN=1 to create it.\n\
             actual output:\n{actual}",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "output differs from golden file {} (first difference on line {}); rerun with \
             SIPLLM_UPDATE_GOLDEN=1 if the change is intended.\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display(),
            first + 1
        );
    }
}

/// Runs `sipllm ARGS` in `dir` under `sh` with a file-size limit of 16 blocks (8 KiB), so a
/// write past it fails — a full disk, as far as the writer can tell: killed by SIGXFSZ, or
/// with the signal ignored (`ignore_signal`), an EFBIG error.
pub(crate) fn run_with_file_limit(
    dir: &Path,
    ignore_signal: bool,
    args: &[&str],
) -> std::process::Output {
    let trap = if ignore_signal { "trap '' XFSZ; " } else { "" };
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{trap}ulimit -f 16; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The temporaries (`*.tmp`) in `dir`: what a write left behind.
pub(crate) fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}
