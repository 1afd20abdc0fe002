//! The exit-code contract: 0 valid, 1 invalid, 2 usage or I/O error; never 101 (a panic).
//! `support::sipllm` fails any run that exits 101 or dies by a signal.

use sipllm_cli::commands::validate::check;
use sipllm_cli::diagnostic::{FileDiagnostic, Renderer};
use sipllm_cli::open::OpenSettings;
use sipllm_gguf::Profile;
use sipllm_streaming::{Backend, FileBacking, ReadAt};
use sipllm_testkit::{GgufBuilder, Value};

use crate::files::{cases, valid, write};
use crate::support::{sample_path, sipllm, temp_dir};

#[test]
fn valid_invalid_and_missing_files() {
    let dir = temp_dir("exit-codes");
    let good = write(&dir, "good.gguf", &valid());
    let bad = write(&dir, "bad.gguf", &cases()[0].bytes);
    let sample = sample_path();
    let sample = sample.to_str().unwrap();

    assert_eq!(sipllm(&dir, &["validate", &good]).code, Some(0));
    assert_eq!(sipllm(&dir, &["validate", sample, &good]).code, Some(0));
    assert_eq!(sipllm(&dir, &["validate", &bad]).code, Some(1));
    assert_eq!(sipllm(&dir, &["validate", &good, &bad]).code, Some(1));
    let missing = sipllm(&dir, &["validate", "no-such-file.gguf"]);
    assert_eq!(missing.code, Some(2));
    assert!(missing.stdout.contains("streaming::io::open"), "{}", missing.transcript());
    assert!(missing.stdout.contains("no-such-file.gguf"));
    assert_eq!(sipllm(&dir, &["validate", &bad, "no-such-file.gguf"]).code, Some(2));
    // A directory is not a model file.
    assert_eq!(sipllm(&dir, &["validate", "."]).code, Some(2));

    // Usage errors.
    assert_eq!(sipllm(&dir, &["validate"]).code, Some(2));
    assert_eq!(sipllm(&dir, &["validate", "--profile", "loose", &good]).code, Some(2));
    assert_eq!(sipllm(&dir, &["frobnicate"]).code, Some(2));
    assert_eq!(sipllm(&dir, &[]).code, Some(2));
    assert_eq!(sipllm(&dir, &["inspect", "--filter", "[oops", &good]).code, Some(2));
    assert_eq!(sipllm(&dir, &["read", &good, "no.such.tensor", "-o", "x.bin"]).code, Some(2));
    assert_eq!(
        sipllm(&dir, &["read", &good, "output_norm.weight", "--range", "9..1"]).code,
        Some(2)
    );
    assert_eq!(sipllm(&dir, &["verify", &good, "--check", "no-manifest"]).code, Some(2));
    // --help and --version succeed.
    assert_eq!(sipllm(&dir, &["--help"]).code, Some(0));
    assert_eq!(sipllm(&dir, &["--version"]).code, Some(0));
    for cmd in [
        "inspect",
        "validate",
        "tensors",
        "read",
        "verify",
        "completions",
        "edit",
        "convert",
        "make-toy",
    ] {
        let help = sipllm(&dir, &[cmd, "--help"]);
        assert_eq!(help.code, Some(0));
        assert!(help.stdout.contains("Usage: sipllm"), "{cmd} --help:\n{}", help.stdout);
    }

    // Every other command follows the same contract on the same files.
    for cmd in ["inspect", "tensors", "verify"] {
        assert_eq!(sipllm(&dir, &[cmd, &good]).code, Some(0), "{cmd}");
        assert_eq!(sipllm(&dir, &[cmd, &bad]).code, Some(1), "{cmd}");
        assert_eq!(sipllm(&dir, &[cmd, "no-such-file.gguf"]).code, Some(2), "{cmd}");
    }
}

/// `--profile llama-cpp` runs under llama.cpp's own caps (`Limits::llama_cpp`): a string one
/// byte over our default 64 MiB limit (llama.cpp allows 1 GiB) is invalid for strict and
/// valid for llama-cpp.
#[test]
fn llama_cpp_profile_uses_llama_cpps_caps() {
    let dir = temp_dir("llama-cpp-caps");
    let template = vec![b'x'; (64 << 20) + 1];
    let bytes = GgufBuilder::new().kv("tokenizer.chat_template", Value::String(template)).build();
    let path = write(&dir, "long-template.gguf", &bytes);
    let strict = sipllm(&dir, &["validate", &path]);
    assert_eq!(strict.code, Some(1), "{}", strict.transcript());
    assert!(
        strict.transcript().contains("gguf::limits::string_too_long"),
        "{}",
        strict.transcript()
    );
    let llama = sipllm(&dir, &["validate", "--profile", "llama-cpp", &path]);
    assert_eq!(llama.code, Some(0), "{}", llama.transcript());
    std::fs::remove_file(dir.join(&path)).unwrap();
}

/// llama.cpp reads only GGUF: `validate --profile llama-cpp` refuses a `.llmw` file for its
/// magic (exit 1), as ggml does; the default profile validates it.
#[test]
fn llama_cpp_profile_refuses_llmw_files() {
    let dir = temp_dir("llama-cpp-llmw");
    let run = sipllm(&dir, &["make-toy", "--seed", "5", "--out-dir", "toy"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let llama = sipllm(&dir, &["validate", "--profile", "llama-cpp", "toy/toy.llmw"]);
    assert_eq!(llama.code, Some(1), "{}", llama.transcript());
    assert!(llama.transcript().contains("gguf::header::bad_magic"), "{}", llama.transcript());
    assert_eq!(sipllm(&dir, &["validate", "toy/toy.llmw"]).code, Some(0));
    assert_eq!(sipllm(&dir, &["validate", "--profile", "llama-cpp", "toy/toy.gguf"]).code, Some(0));
}

#[test]
fn every_malformed_file_under_every_profile_exits_0_or_1() {
    let dir = temp_dir("exit-codes-profiles");
    for case in cases() {
        let file = write(&dir, &format!("{}.gguf", case.name), &case.bytes);
        for profile in ["strict", "llama-cpp", "lenient"] {
            for cmd in [&["validate", "--profile", profile][..], &["inspect", "--profile", profile]]
            {
                let mut args = cmd.to_vec();
                args.push(&file);
                let run = sipllm(&dir, &args);
                assert!(matches!(run.code, Some(0 | 1)), "{args:?}:\n{}", run.transcript());
            }
        }
    }
}

/// Every truncation of a real file, parsed and rendered in-process under every profile: the
/// hex window and miette never panic, whatever the offset (including the end of the file).
#[test]
fn every_truncation_renders_without_panicking() {
    let dir = temp_dir("exit-codes-truncations");
    let bytes = valid();
    let path = dir.join("cut.gguf");
    let renderer = Renderer { color: false, width: 100 };
    for len in 0..=bytes.len() {
        std::fs::write(&path, &bytes[..len]).unwrap();
        for profile in [Profile::Strict, Profile::LlamaCpp, Profile::Lenient] {
            let outcome = check(&path, &OpenSettings { profile, ..OpenSettings::default() }, false);
            let backing = FileBacking::open(&path, Backend::Pread).unwrap();
            for f in outcome.findings {
                assert!(f.offset.is_some_and(|o| o <= len as u64), "{f:?} at len {len}");
                let diag = FileDiagnostic::new(f, "cut.gguf", Some(&backing as &dyn ReadAt));
                let text = renderer.render(&diag);
                assert!(text.contains("0x"), "no hex window at len {len}:\n{text}");
            }
        }
    }
}
