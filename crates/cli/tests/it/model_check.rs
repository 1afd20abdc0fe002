//! `validate --model`: llama.cpp's verdict, its exit code and its findings, text and JSON.

use std::fs::File;
use std::path::PathBuf;

use crate::support::{golden, sipllm, temp_dir};

/// The Llama-3-8B-shaped header extended to its full size as a sparse file (no disk used),
/// with `edit` applied to its metadata first.
fn llama3_file(
    dir: &std::path::Path,
    name: &str,
    edit: impl FnOnce(&mut Vec<(Vec<u8>, sipllm_testkit::Value)>),
) -> PathBuf {
    let base = sipllm_testkit::llama3::builder(8);
    let mut kvs = base.kvs().to_vec();
    edit(&mut kvs);
    let mut b = sipllm_testkit::GgufBuilder::new();
    for (k, v) in kvs {
        b = b.kv_bytes(&k, v);
    }
    for t in base.tensors() {
        b = b.tensor_info(t.clone());
    }
    let path = dir.join(name);
    std::fs::write(&path, b.build_header()).unwrap();
    // The data of the 291 tensors ends below 5 GiB; the tail is a hole.
    File::options().write(true).open(&path).unwrap().set_len(5 << 30).unwrap();
    path
}

#[test]
fn validate_model_gives_llama_cpp_s_verdict_and_exit_code() {
    let dir = temp_dir("model-check");
    let ok = llama3_file(&dir, "ok.gguf", |_| {});
    let run = sipllm(&dir, &["validate", "--model", ok.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("; llama.cpp loads it)"), "{}", run.transcript());

    let bad = llama3_file(&dir, "bad.gguf", |kvs| {
        kvs.retain(|(k, _)| k != b"llama.attention.layer_norm_rms_epsilon");
    });
    // The container alone is fine; the model is not.
    let run = sipllm(&dir, &["validate", "--profile", "llama-cpp", bad.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let run = sipllm(&dir, &["validate", "--profile", "llama-cpp", "--model", "bad.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    golden("validate/model-missing-key.txt", &run.transcript());
    let run = sipllm(&dir, &["validate", "--model", "--format", "json", "bad.gguf"]);
    assert_eq!(run.code, Some(1));
    let line: serde_json::Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(line["code"], "model::load::missing_key");
    assert!(line["message"].as_str().unwrap().contains("llama.attention.layer_norm_rms_epsilon"));
    assert!(line["help"].as_str().unwrap().contains("get_key"));
}

#[test]
fn validate_model_names_a_crash() {
    let dir = temp_dir("model-check-crash");
    llama3_file(&dir, "zero.gguf", |kvs| {
        let slot = kvs.iter_mut().find(|(k, _)| k == b"llama.block_count").unwrap();
        slot.1 = sipllm_testkit::Value::Uint32(0);
    });
    let run = sipllm(&dir, &["validate", "--model", "zero.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(run.stdout.contains("model::load::block_count"), "{}", run.transcript());
    assert!(run.stdout.contains("llama.cpp crashes on it"), "{}", run.transcript());
}

#[test]
fn without_model_validate_is_unchanged_and_a_header_only_file_stops_at_the_container() {
    let dir = temp_dir("model-check-header-only");
    let base = sipllm_testkit::llama3::builder(8);
    std::fs::write(dir.join("h.gguf"), base.build_header()).unwrap();
    // llama.cpp refuses tensor data past the end of the file before it looks at the model.
    let run = sipllm(&dir, &["validate", "--model", "h.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(run.stdout.contains("gguf::"), "{}", run.transcript());
    assert!(!run.stdout.contains("model::load::"), "{}", run.transcript());
}
