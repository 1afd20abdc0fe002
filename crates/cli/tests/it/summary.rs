//! `inspect`'s hyperparameters and file-type label (golden), the `inspect --json` summary and
//! schema version (schema tests), `--no-arrays` / `--array-limit` (against the reference
//! reader's `payload_sha256`), and the summary of a split set.

use serde_json::Value as Json;
use sipllm_gguf::GgmlType;
use sipllm_gguf::ValueType;
use sipllm_testkit::{GgufBuilder, Value};

use crate::files::write;
use crate::support::{golden, shared, sipllm, temp_dir};

fn ints(values: &[i32]) -> Value {
    Value::array(ValueType::Int32, values.iter().map(|&v| Value::Int32(v)).collect())
}

/// A Gemma-4-shaped model: per-layer KV heads and sliding-window flags, rope scaling, experts,
/// and no `general.file_type` (the label is guessed from the mostly-Q4_K tensors).
fn gemma4_like() -> Vec<u8> {
    let flags = [true, true, true, true, true, false].map(Value::Bool);
    GgufBuilder::new()
        .kv("general.architecture", Value::str("gemma4"))
        .kv("general.name", Value::str("gemma-4-like"))
        .kv("gemma4.context_length", Value::Uint32(131072))
        .kv("gemma4.embedding_length", Value::Uint32(256))
        .kv("gemma4.block_count", Value::Uint32(6))
        .kv("gemma4.feed_forward_length", Value::Uint32(1024))
        .kv("gemma4.attention.head_count", Value::Uint32(8))
        .kv("gemma4.attention.head_count_kv", ints(&[2, 2, 2, 2, 2, 4]))
        .kv("gemma4.attention.key_length", Value::Uint32(256))
        .kv("gemma4.attention.value_length", Value::Uint32(256))
        .kv("gemma4.attention.sliding_window", Value::Uint32(512))
        .kv("gemma4.attention.sliding_window_pattern", Value::array(ValueType::Bool, flags.into()))
        .kv("gemma4.attention.layer_norm_rms_epsilon", Value::Float32(1e-6))
        .kv("gemma4.rope.freq_base", Value::Float32(1e6))
        .kv("gemma4.rope.scaling.type", Value::str("yarn"))
        .kv("gemma4.rope.scaling.factor", Value::Float32(8.0))
        .kv("gemma4.expert_count", Value::Uint32(16))
        .kv("gemma4.expert_used_count", Value::Uint32(2))
        .kv("tokenizer.ggml.model", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["<pad>", "<bos>", "a", "b"]))
        .kv("tokenizer.ggml.scores", Value::array(ValueType::Float32, vec![Value::Float32(0.0); 4]))
        .kv("nested", Value::array(ValueType::Array, vec![ints(&[1, 2, 3]), ints(&[4])]))
        .tensor("token_embd.weight", GgmlType::Q6_K, &[256, 4])
        .tensor("blk.0.attn_q.weight", GgmlType::Q4_K, &[256, 256])
        .tensor("blk.0.attn_k.weight", GgmlType::Q4_K, &[256, 256])
        .tensor("blk.0.attn_norm.weight", GgmlType::F32, &[256])
        .build()
}

#[test]
fn hyperparameters_and_the_file_type_label() {
    let dir = temp_dir("summary-golden");
    let file = write(&dir, "gemma4.gguf", &gemma4_like());
    let run = sipllm(&dir, &["inspect", "--no-tensors", "--filter", "general.*", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    golden("inspect/gemma4-like.txt", &run.transcript());
    // A declared label, and one llama.cpp never used.
    for (code, label) in
        [(15, "Q4_K_M (general.file_type 15)"), (1000, "unknown (general.file_type 1000)")]
    {
        let bytes = GgufBuilder::new()
            .kv("general.architecture", Value::str("mystery"))
            .kv("general.file_type", Value::Uint32(code))
            .build();
        let file = write(&dir, "ft.gguf", &bytes);
        let run = sipllm(&dir, &["inspect", &file]);
        assert!(run.stdout.contains(&format!("\nfile type     {label}\n")), "{}", run.stdout);
    }
}

fn json(dir: &std::path::Path, args: &[&str]) -> Json {
    let run = sipllm(dir, args);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    serde_json::from_str(&run.stdout).expect("one JSON document")
}

#[test]
fn the_json_summary_follows_its_schema() {
    let dir = temp_dir("summary-json");
    let file = write(&dir, "gemma4.gguf", &gemma4_like());
    let doc = json(&dir, &["inspect", "--json", &file]);
    assert_eq!(doc["schema_version"], 2);
    let s = &doc["summary"];
    // (serde_json's map is sorted: compare sorted.)
    let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = vec![
        "architecture",
        "known_architecture",
        "name",
        "file_type",
        "quantization",
        "hyperparameters",
        "config_errors",
        "parameters",
        "bytes",
        "bits_per_weight",
        "types",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);
    let mut hyper: Vec<&str> =
        s["hyperparameters"].as_object().unwrap().keys().map(String::as_str).collect();
    hyper.sort_unstable();
    assert_eq!(hyper.len(), 21, "{hyper:?}");
    assert_eq!(s["architecture"], "gemma4");
    assert_eq!(s["known_architecture"], true);
    assert_eq!(s["file_type"], Json::Null);
    assert_eq!(s["quantization"], serde_json::json!({"label": "Q4_K_M", "guessed": true}));
    let h = &s["hyperparameters"];
    assert_eq!(h["context_length"], 131072);
    assert_eq!(h["head_count"], 8);
    assert_eq!(h["head_count_kv"], serde_json::json!([2, 2, 2, 2, 2, 4]));
    assert_eq!(
        h["sliding_window_pattern"],
        serde_json::json!([true, true, true, true, true, false])
    );
    assert_eq!(h["rope_scaling_type"], "yarn");
    assert_eq!(h["rope_scaling_factor"], 8.0);
    assert_eq!(h["layer_norm_rms_epsilon"], f64::from(1e-6f32));
    assert_eq!(h["layer_norm_epsilon"], Json::Null);
    assert_eq!(h["expert_used_count"], 2);
    assert_eq!(h["vocab_size"], 4);
    assert_eq!(s["config_errors"], serde_json::json!([]));
    // Parameters and bits per weight: 1024 Q6_K + 2 × 65536 Q4_K + 256 F32.
    assert_eq!(s["parameters"], 1024 + 2 * 65536 + 256);
    let bytes = 1024 / 256 * 210 + 2 * 65536 / 256 * 144 + 256 * 4;
    assert_eq!(s["bytes"], bytes);
    let bpw = s["bits_per_weight"].as_f64().unwrap();
    assert!((bpw - bytes as f64 * 8.0 / (1024.0 + 131072.0 + 256.0)).abs() < 1e-12);
    let types: Vec<(&str, u64)> = s["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["ggml_type"].as_str().unwrap(), t["tensors"].as_u64().unwrap()))
        .collect();
    assert_eq!(types, [("F32", 1), ("Q4_K", 2), ("Q6_K", 1)]);
    assert_eq!(s["types"][1]["bits_per_weight"], 4.5);
    // Problems are listed with their codes, and their fields are null.
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.block_count", Value::str("32"))
        .build();
    let file = write(&dir, "bad.gguf", &bytes);
    let doc = json(&dir, &["inspect", "--json", &file]);
    let errors = doc["summary"]["config_errors"].as_array().unwrap();
    let codes: Vec<(&str, &str)> =
        errors.iter().map(|e| (e["code"].as_str().unwrap(), e["key"].as_str().unwrap())).collect();
    assert_eq!(
        codes,
        [
            ("model::config::missing_key", "llama.context_length"),
            ("model::config::missing_key", "llama.embedding_length"),
            ("model::config::wrong_type", "llama.block_count"),
        ]
    );
    assert_eq!(doc["summary"]["hyperparameters"]["block_count"], Json::Null);
    assert_eq!(doc["summary"]["quantization"]["label"], Json::Null);
}

#[test]
fn arrays_can_be_left_out_or_cut_keeping_type_count_and_hash() {
    let dir = temp_dir("summary-arrays");
    let file = write(&dir, "gemma4.gguf", &gemma4_like());
    let full = json(&dir, &["inspect", "--json", &file]);
    let cut = json(&dir, &["inspect", "--json", "--array-limit", "2", &file]);
    let none = json(&dir, &["inspect", "--json", "--no-arrays", &file]);
    let entries = |d: &Json| d["metadata"].as_array().unwrap().clone();
    for ((f, c), n) in entries(&full).iter().zip(entries(&cut)).zip(entries(&none)) {
        if f["type"] != "ARRAY" {
            assert_eq!(f, &c);
            assert_eq!(f, &n);
            continue;
        }
        for d in [&c, &n] {
            assert_eq!(d["array_type"], f["array_type"]);
            assert_eq!(d["len"], f["len"]);
            assert_eq!(d["payload_sha256"].as_str().unwrap().len(), 64);
        }
        assert_eq!(c["payload_sha256"], n["payload_sha256"]);
        assert!(n.get("value").is_none(), "{n}");
        let len = f["len"].as_u64().unwrap();
        assert_eq!(n["truncated"], len > 0);
        assert_eq!(c["truncated"], len > 2);
        let head: Vec<Json> = f["value"].as_array().unwrap().iter().take(2).cloned().collect();
        if f["key"] == "nested" {
            // Nested arrays are cut the same way.
            assert_eq!(c["value"], serde_json::json!([[1, 2], [4]]));
        } else {
            assert_eq!(c["value"], Json::from(head));
        }
    }
    // The flags need --json and exclude each other.
    for args in [
        &["inspect", "--no-arrays", &file][..],
        &["inspect", "--json", "--no-arrays", "--array-limit", "3", &file],
    ] {
        let run = sipllm(&dir, args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
    }
}

/// `payload_sha256` is the reference reader's: the stored element bytes of every array of
/// every real corpus file.
#[test]
fn payload_hashes_match_the_reference_reader() {
    let Some(shared) = shared("payload_hashes_match_the_reference_reader") else { return };
    let dir = temp_dir("summary-payload");
    let mut arrays = 0;
    for entry in std::fs::read_dir(shared.join("corpus/real")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "gguf") {
            continue;
        }
        let expect: Json = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("expect.json")).unwrap(),
        )
        .unwrap();
        let doc = json(&dir, &["inspect", "--json", "--no-arrays", path.to_str().unwrap()]);
        for (ours, theirs) in
            doc["metadata"].as_array().unwrap().iter().zip(expect["metadata"].as_array().unwrap())
        {
            assert_eq!(ours["key"], theirs["key"]);
            if theirs["type"] == "ARRAY" {
                assert_eq!(
                    ours["payload_sha256"], theirs["payload_sha256"],
                    "{path:?} {}",
                    ours["key"]
                );
                assert_eq!(ours["len"], theirs["len"]);
                arrays += 1;
            }
        }
    }
    assert!(arrays >= 35, "{arrays} arrays compared");
}

/// A split set's summary is its merged file's: every shard's tensors, the first's metadata.
#[test]
fn a_split_set_has_the_summary_of_the_whole_model() {
    let dir = temp_dir("summary-split");
    write(&dir, "gemma4.gguf", &gemma4_like());
    let run = sipllm(&dir, &["split", "gemma4.gguf", "--max-tensors", "2"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let whole = json(&dir, &["inspect", "--json", "gemma4.gguf"]);
    let set = json(&dir, &["inspect", "--json", "gemma4-00001-of-00002.gguf"]);
    assert_eq!(set["split"]["count"], 2);
    assert_eq!(set["summary"], whole["summary"]);
}
