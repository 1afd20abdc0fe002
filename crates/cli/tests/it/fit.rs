//! `sipllm fit`: llama-server's flags, the JSON fields, refusals with their codes and exit
//! code 2, `--memory`, `-ngl`, and the table against a golden file. The Llama-3-8B-shaped
//! header (written header-only: its tensor data lies past the end, as in a header-only copy).

use std::path::Path;

use serde_json::Value as Json;
use sipllm_testkit::{GgufBuilder, Value};

use crate::support::{golden, sipllm, temp_dir};

fn llama3(dir: &Path) -> String {
    let mut bytes = sipllm_testkit::llama3::builder(1).build_header();
    bytes.resize(bytes.len().div_ceil(32) * 32, 0);
    let path = dir.join("llama3-like.gguf");
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

fn json(dir: &Path, args: &[&str]) -> Json {
    let run = sipllm(dir, args);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn llama_server_flags_and_the_json_fields() {
    let dir = temp_dir("fit-json");
    let file = llama3(&dir);
    let doc = json(&dir, &["fit", &file, "-c", "4096", "-np", "1", "-fa", "on", "--json"]);
    // llama.cpp's breakdown for this file at 4096 (goldens/llamacpp/llama3-like.json).
    assert_eq!(doc["kv_bytes"], 536_870_912);
    assert_eq!(doc["model_bytes"], 4_912_898_048u64);
    assert_eq!(doc["compute_bytes"]["cpu"], 279_447_552);
    assert_eq!(doc["output_bytes"], 128_256 * 4);
    assert_eq!(doc["recurrent_bytes"], 0);
    assert_eq!(doc["n_ctx"], 4096);
    let total = doc["total_bytes"].as_u64().unwrap();
    assert_eq!(total, 536_870_912 + 4_912_898_048 + 279_447_552 + 128_256 * 4);
    assert_eq!(doc["devices"].as_array().unwrap().len(), 1);

    // -ctk/-ctv q8_0: 1088 bytes per 1024-element row instead of 2048.
    let q8 = json(&dir, &["fit", &file, "-c", "4096", "-ctk", "q8_0", "-ctv", "q8_0", "--json"]);
    assert_eq!(q8["kv_bytes"], 285_212_672);
    // Not unified: one stream per sequence, 4096 / 4 cells each, the same bytes.
    let streams =
        json(&dir, &["fit", &file, "-c", "4096", "-np", "4", "--no-kv-unified", "--json"]);
    assert_eq!(
        (streams["n_stream"].as_u64(), streams["n_ctx_seq"].as_u64()),
        (Some(4), Some(1024))
    );
    assert_eq!(streams["kv_bytes"], 536_870_912);
    // The profiles: libllama's n_ctx is 512, llama-server's the training context (8192).
    assert_eq!(json(&dir, &["fit", &file, "--profile", "libllama", "--json"])["n_ctx"], 512);
    assert_eq!(json(&dir, &["fit", &file, "--json"])["n_ctx"], 8192);
    // Contexts are padded to 256 cells.
    assert_eq!(json(&dir, &["fit", &file, "-c", "1000", "--json"])["n_ctx"], 1024);
}

#[test]
fn gpu_layers_are_placed_as_llama_cpp_places_them() {
    let dir = temp_dir("fit-ngl");
    let file = llama3(&dir);
    let device = |doc: &Json, name: &str| {
        doc["devices"].as_array().unwrap().iter().find(|d| d["device"] == name).cloned()
    };
    // -ngl 1: only the output layer (output.weight, output_norm.weight) moves.
    let one = json(&dir, &["fit", &file, "-c", "4096", "-ngl", "1", "--json"]);
    let gpu = device(&one, "gpu").expect("a gpu device");
    assert_eq!(gpu["kv_bytes"], 0);
    assert!(gpu["model_bytes"].as_u64().unwrap() > 0);
    // -ngl 33 (every block and the output): every KV layer on the GPU, the token embeddings
    // stay on the host.
    let all = json(&dir, &["fit", &file, "-c", "4096", "-ngl", "33", "--json"]);
    let (cpu, gpu) = (device(&all, "cpu").unwrap(), device(&all, "gpu").unwrap());
    assert_eq!(gpu["kv_bytes"], 536_870_912);
    assert_eq!(cpu["kv_bytes"], 0);
    assert!(cpu["model_bytes"].as_u64().unwrap() > 0);
    assert_eq!(gpu["compute_estimated"], true);
    let sum = cpu["model_bytes"].as_u64().unwrap() + gpu["model_bytes"].as_u64().unwrap();
    assert_eq!(sum, 4_912_898_048);
    assert_eq!(
        json(&dir, &["fit", &file, "-c", "4096", "-ngl", "all", "--json"])["devices"],
        all["devices"]
    );
}

#[test]
fn memory_answers_the_largest_context_that_fits() {
    let dir = temp_dir("fit-memory");
    let file = llama3(&dir);
    let budget = 8u64 << 30;
    let doc = json(&dir, &["fit", &file, "-np", "1", "--memory", "8GiB", "--json"]);
    let n_ctx = doc["n_ctx"].as_u64().unwrap();
    assert_eq!(n_ctx % 256, 0);
    assert!(doc["total_bytes"].as_u64().unwrap() <= budget);
    let next = (n_ctx + 256).to_string();
    let over = json(&dir, &["fit", &file, "-np", "1", "-c", &next, "--json"]);
    assert!(over["total_bytes"].as_u64().unwrap() > budget, "{n_ctx} is not the largest");
    let tiny = sipllm(&dir, &["fit", &file, "--memory", "1MiB"]);
    assert_eq!(tiny.code, Some(1), "{}", tiny.transcript());
    assert!(tiny.stderr.contains("not even a 256-token context fits"));
}

#[test]
fn refusals_have_codes_and_exit_2() {
    let dir = temp_dir("fit-refusals");
    let file = llama3(&dir);
    let run = sipllm(&dir, &["fit", &file, "-ctv", "q4_0", "-fa", "off"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("model::fit::needs_flash_attn"), "{}", run.transcript());
    // Auto turns flash attention on for a quantized V cache, as llama.cpp does.
    assert_eq!(sipllm(&dir, &["fit", &file, "-ctv", "q4_0", "-fa", "auto"]).code, Some(0));
    let bad = sipllm(&dir, &["fit", &file, "-ctk", "q4_K"]);
    assert_eq!(bad.code, Some(2), "{}", bad.transcript());
    assert!(bad.stderr.contains("unsupported cache type"));

    let shared_kv = GgufBuilder::new()
        .kv("general.architecture", Value::str("gemma3n"))
        .kv("gemma3n.context_length", Value::Uint32(4096))
        .kv("gemma3n.embedding_length", Value::Uint32(64))
        .kv("gemma3n.block_count", Value::Uint32(2))
        .build();
    let path = dir.join("gemma3n.gguf");
    std::fs::write(&path, shared_kv).unwrap();
    let run = sipllm(&dir, &["fit", path.to_str().unwrap()]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(
        run.stderr.contains("model::fit::unsupported_arch") && run.stderr.contains("KV sharing")
    );
    assert!(run.stdout.is_empty(), "no number for an unmodelled architecture");
}

#[test]
fn the_table_fits_80_columns() {
    let dir = temp_dir("fit-table");
    let file = llama3(&dir);
    let run = sipllm(&dir, &["fit", &file, "-c", "32768", "-ngl", "20"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    for line in run.stdout.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    golden("fit-llama3.txt", &run.stdout.replace(&file, "llama3-like.gguf"));
}

#[test]
fn a_split_set_fits_as_its_whole_file() {
    let dir = temp_dir("fit-split");
    assert_eq!(sipllm(&dir, &["make-toy", "--out-dir", "."]).code, Some(0));
    let split = sipllm(&dir, &["split", "toy.gguf", "--max-tensors", "3", "--out-dir", "set"]);
    assert_eq!(split.code, Some(0), "{}", split.transcript());
    let whole = json(&dir, &["fit", "toy.gguf", "-c", "1024", "-ngl", "2", "--json"]);
    let shard =
        json(&dir, &["fit", "set/toy-00001-of-00007.gguf", "-c", "1024", "-ngl", "2", "--json"]);
    assert_eq!(whole, shard);
    assert_eq!(whole["architecture"], "llama");
}

#[test]
fn every_malformed_file_is_an_answer_or_a_coded_refusal() {
    let dir = temp_dir("fit-malformed");
    for case in crate::files::cases() {
        let file = crate::files::write(&dir, &format!("{}.gguf", case.name), &case.bytes);
        for args in [&["fit", file.as_str()][..], &["fit", file.as_str(), "--memory", "1GiB"]] {
            // support::sipllm fails the test on a panic (101) or a signal.
            let run = sipllm(&dir, args);
            assert!(matches!(run.code, Some(0..=2)), "{args:?}:\n{}", run.transcript());
            if run.code != Some(0) {
                assert!(run.stdout.is_empty(), "a refusal prints no figure: {}", run.transcript());
            }
        }
    }
}
