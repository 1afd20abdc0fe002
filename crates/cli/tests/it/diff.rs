//! `diff` (issue 17 item 4): identical files, one edited key, a re-split set against its
//! original, two real vocabularies, a truncated file, `--diffable`; and `--shard-only` on a
//! set with a missing shard.

use serde_json::Value as Json;

use crate::files::{valid, write};
use crate::support::{shared, sipllm, temp_dir};

fn json(stdout: &str) -> Json {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn identical_files_are_equal() {
    let dir = temp_dir("diff-identical");
    let a = write(&dir, "a.gguf", &valid());
    let b = write(&dir, "b.gguf", &valid());
    let run = sipllm(&dir, &["diff", &a, &b]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(
        run.stdout,
        "--- a.gguf\n+++ b.gguf\ndata: 3 tensors compared by hash (1.44 KiB of data in each model), all equal\nequal\n"
    );
    let run = sipllm(&dir, &["diff", "--format", "json", &a, &b]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let doc = json(&run.stdout);
    assert_eq!(doc["schema"], "sipllm.diff/1");
    assert_eq!(doc["equal"], true);
    assert_eq!(doc["metadata"], Json::Array(vec![]));
    assert_eq!(doc["data"]["compared"], 3);
}

#[test]
fn one_edited_key_is_the_only_difference() {
    let dir = temp_dir("diff-edited");
    let a = write(&dir, "a.gguf", &valid());
    let edit = sipllm(&dir, &["edit", &a, "--set", "general.name=str:renamed", "-o", "b.gguf"]);
    assert_eq!(edit.code, Some(0), "{}", edit.transcript());
    let run = sipllm(&dir, &["diff", &a, "b.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert_eq!(
        run.stdout,
        "--- a.gguf\n+++ b.gguf\nmetadata: 1 changed\n  ~ general.name  str \"tiny\" -> str \
         \"renamed\"\ndata: 3 tensors compared by hash (1.44 KiB of data in each model), all equal\ndifferent\n"
    );
    let doc = json(&sipllm(&dir, &["diff", "--format", "json", &a, "b.gguf"]).stdout);
    assert_eq!(doc["equal"], false);
    let meta = doc["metadata"].as_array().unwrap();
    assert_eq!(meta.len(), 1, "{doc}");
    assert_eq!(meta[0]["change"], "changed");
    assert_eq!(meta[0]["key"], "general.name");
    assert_eq!(meta[0]["a"]["value"], "tiny");
    assert_eq!(meta[0]["b"]["value"], "renamed");
    assert_eq!(meta[0]["b"]["type"], "str");
    assert_eq!(doc["tensors"], Json::Array(vec![]));
    assert_eq!(doc["data"]["changed"], Json::Array(vec![]));
    // --metadata-only reads no tensor data and says so.
    let run = sipllm(&dir, &["diff", "--metadata-only", "--format", "json", &a, "b.gguf"]);
    assert_eq!(run.code, Some(1));
    assert_eq!(json(&run.stdout)["data"], Json::Null);
}

#[test]
fn a_type_change_and_a_changed_tensor_are_reported() {
    use sipllm_gguf::GgmlType;
    use sipllm_testkit::{GgufBuilder, Value};
    let dir = temp_dir("diff-types");
    let a = GgufBuilder::new()
        .kv("llama.block_count", Value::Uint32(2))
        .tensor("w", GgmlType::F32, &[4, 2])
        .tensor("gone", GgmlType::F32, &[4])
        .build();
    let b = GgufBuilder::new()
        .kv("llama.block_count", Value::Int64(2))
        .tensor("w", GgmlType::F16, &[4, 2])
        .tensor("new", GgmlType::F32, &[4])
        .build();
    let (a, b) = (write(&dir, "a.gguf", &a), write(&dir, "b.gguf", &b));
    let run = sipllm(&dir, &["diff", &a, &b]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    // `new` holds `gone`'s bytes (the builder's pattern of the tensor's index): a rename.
    assert_eq!(
        run.stdout,
        "--- a.gguf\n+++ b.gguf\nmetadata: 1 changed\n  ~ llama.block_count  u32 2 -> i64 2\n\
         tensors: 1 changed, 1 renamed\n  ~ w  F32 [2, 4] -> F16 [2, 4]\n  \
         ~ gone -> new  renamed: same type, shape and data\ndata: 0 tensors compared by hash \
         (0 B of data in each model), all equal\ndifferent\n"
    );
    let run = sipllm(&dir, &["diff", "--format", "json", &a, &b]);
    let doc = json(&run.stdout);
    assert_eq!(doc["tensors"][1]["change"], "renamed", "{doc}");
    assert_eq!(
        (&doc["tensors"][1]["name"], &doc["tensors"][1]["new_name"]),
        (&"gone".into(), &"new".into())
    );
    // Without the data, a rename is a removal and an addition.
    let run = sipllm(&dir, &["diff", "--metadata-only", &a, &b]);
    assert!(
        run.stdout.contains("tensors: 1 changed, 1 only in A, 1 only in B\n  ~ w  F32 [2, 4] -> F16 [2, 4]\n  - gone  F32 [4]\n  + new  F32 [4]\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn changed_tensor_data_is_found_by_hash() {
    let dir = temp_dir("diff-data");
    let a = valid();
    let mut b = a.clone();
    let last = b.len() - 1;
    b[last] ^= 1; // the last byte of the last tensor's data
    let (a, b) = (write(&dir, "a.gguf", &a), write(&dir, "b.gguf", &b));
    let run = sipllm(&dir, &["diff", &a, &b]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(
        run.stdout.ends_with("3 tensors compared by hash (1.44 KiB of data in each model), 1 differ\n  ~ output_norm.weight\ndifferent\n"),
        "{}",
        run.stdout
    );
    // Metadata alone: exit 0, but never a bare `equal` for files whose data differs.
    let run = sipllm(&dir, &["diff", "--metadata-only", &a, &b]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout.ends_with(
            "data: not compared (--metadata-only)
metadata equal (data not compared)
"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn a_re_split_set_differs_from_its_original_only_in_the_split_keys() {
    let dir = temp_dir("diff-split");
    let orig = write(&dir, "m.gguf", &valid());
    let split = sipllm(&dir, &["split", &orig, "--max-tensors", "1", "--out-dir", "parts"]);
    assert_eq!(split.code, Some(0), "{}", split.transcript());
    let shard = "parts/m-00001-of-00003.gguf";
    for order in [[shard, orig.as_str()], [orig.as_str(), shard]] {
        let run = sipllm(&dir, &["diff", "--format", "json", order[0], order[1]]);
        assert_eq!(run.code, Some(1), "{}", run.transcript());
        let doc = json(&run.stdout);
        let keys: Vec<&str> = doc["metadata"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["split.no", "split.count", "split.tensors.count"], "{doc}");
        assert_eq!(doc["tensors"], Json::Array(vec![]));
        assert_eq!(doc["data"]["compared"], 3);
        assert_eq!(doc["data"]["changed"], Json::Array(vec![]));
    }
    // Merged back, the set is the original again.
    let merge = sipllm(&dir, &["merge", shard, "merged.gguf"]);
    assert_eq!(merge.code, Some(0), "{}", merge.transcript());
    assert_eq!(sipllm(&dir, &["diff", "merged.gguf", &orig]).code, Some(0));
}

#[test]
fn two_real_vocabularies_are_summarised_not_dumped() {
    let Some(shared) = shared("two_real_vocabularies_are_summarised_not_dumped") else { return };
    let real = shared.join("corpus/real");
    let a = real.join("ggml-vocab-llama-spm.gguf");
    let b = real.join("ggml-vocab-phi-3.gguf");
    let dir = temp_dir("diff-vocab");
    let run = sipllm(&dir, &["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    // 32,000 tokens against 32,064: summarised on one line each, never listed.
    assert!(run.stdout.len() < 4096, "{} bytes:\n{}", run.stdout.len(), run.stdout);
    assert!(
        run.stdout.contains(
            "  ~ tokenizer.ggml.tokens  [str] × 32,000 -> [str] × 32,064: the first 32,000 \
             elements are equal\n"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "  ~ tokenizer.ggml.scores  [f32] × 32,000 -> [f32] × 32,064: 3 of 32,000 elements \
         differ, at [0, 1, 2]\n"
    ));
    assert!(run.stdout.contains("  - llama.block_count  u32 32\n"));
    assert!(run.stdout.contains("  + phi3.block_count  u32 32\n"));
    // Two vocabularies that differ throughout: the indices are capped, the count is not.
    let c = real.join("ggml-vocab-gpt-2.gguf");
    let run = sipllm(
        &dir,
        &[
            "diff",
            "--format",
            "json",
            "--max-indices",
            "3",
            a.to_str().unwrap(),
            c.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(run.stdout.len() < 8192, "{} bytes", run.stdout.len());
    let doc = json(&run.stdout);
    let tokens = doc["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "tokenizer.ggml.tokens")
        .expect("tokens differ");
    assert_eq!(tokens["change"], "changed");
    assert_eq!(tokens["a"], serde_json::json!({ "type": "[str]", "len": 32000 }));
    assert_eq!(tokens["first_indices"].as_array().unwrap().len(), 3);
    assert!(tokens["differing"].as_u64().unwrap() > 30_000, "{tokens}");
}

#[test]
fn a_truncated_file_is_trouble() {
    let dir = temp_dir("diff-truncated");
    let bytes = valid();
    let a = write(&dir, "a.gguf", &bytes);
    let t = write(&dir, "t.gguf", &bytes[..bytes.len() - 10]);
    for args in [["diff", &a, &t], ["diff", &t, &a]] {
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(2), "{}", run.transcript());
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(run.stderr.contains("out_of_bounds"), "{}", run.stderr);
    }
    assert_eq!(sipllm(&dir, &["diff", &a, "missing.gguf"]).code, Some(2));
}

#[test]
fn diffable_dumps_are_stable_and_line_per_value() {
    let dir = temp_dir("diff-diffable");
    let a = write(&dir, "a.gguf", &valid());
    let edit = sipllm(&dir, &["edit", &a, "--set", "general.name=str:renamed", "-o", "b.gguf"]);
    assert_eq!(edit.code, Some(0), "{}", edit.transcript());
    let da = sipllm(&dir, &["diff", "--diffable", &a]);
    assert_eq!(da.code, Some(0), "{}", da.transcript());
    assert_eq!(da.stdout, sipllm(&dir, &["diff", "--diffable", &a]).stdout, "stable");
    let db = sipllm(&dir, &["diff", "--diffable", "b.gguf"]).stdout;
    let lines_a: Vec<&str> = da.stdout.lines().collect();
    let lines_b: Vec<&str> = db.lines().collect();
    assert_eq!(lines_a.len(), lines_b.len());
    let changed: Vec<(&str, &str)> =
        lines_a.iter().zip(&lines_b).filter(|(x, y)| x != y).map(|(x, y)| (*x, *y)).collect();
    assert_eq!(
        changed,
        [("kv general.name str \"tiny\"", "kv general.name str \"renamed\"")],
        "only the edited key's line differs (no offsets in the dump)"
    );
    for expected in [
        "format GGUF",
        "version 3",
        "endian little",
        "kv tokenizer.ggml.tokens [str] × 4",
        "kv tokenizer.ggml.tokens[2] \"hello\"",
        "kv llama.rope.freq_base f32 500000.0",
    ] {
        assert!(lines_a.contains(&expected), "{expected:?} in\n{}", da.stdout);
    }
    let tensor =
        lines_a.iter().find(|l| l.starts_with("tensor output_norm.weight F32 [32] xxh3-128:"));
    assert!(tensor.is_some(), "{}", da.stdout);
    let meta_only = sipllm(&dir, &["diff", "--diffable", "--metadata-only", &a]).stdout;
    assert!(meta_only.contains("tensor output_norm.weight F32 [32]\n"), "{meta_only}");
    assert!(!meta_only.contains("xxh3"));
    // --diffable takes one file.
    assert_eq!(sipllm(&dir, &["diff", "--diffable", &a, "b.gguf"]).code, Some(2));
    assert_eq!(sipllm(&dir, &["diff", &a]).code, Some(2));
}

#[test]
fn shard_only_reads_one_shard_of_an_incomplete_set() {
    let dir = temp_dir("shard-only");
    let orig = write(&dir, "m.gguf", &valid());
    let split = sipllm(&dir, &["split", &orig, "--max-tensors", "1"]);
    assert_eq!(split.code, Some(0), "{}", split.transcript());
    std::fs::remove_file(dir.join("m-00002-of-00003.gguf")).unwrap();
    let last = "m-00003-of-00003.gguf";
    let whole = sipllm(&dir, &["validate", last]);
    assert_eq!(whole.code, Some(1), "the set is incomplete: {}", whole.transcript());
    assert!(whole.stdout.contains("missing_shard") || whole.stderr.contains("missing_shard"));
    let alone = sipllm(&dir, &["validate", "--shard-only", last]);
    assert_eq!(alone.code, Some(0), "{}", alone.transcript());
    assert!(
        alone.stdout.contains("valid (GGUF v3, strict profile, shard 3 of 3 read alone)"),
        "{}",
        alone.stdout
    );
    let doc = json(&sipllm(&dir, &["inspect", "--json", "--shard-only", last]).stdout);
    assert_eq!(doc["tensor_count"], 1, "the shard's own tensors only");
    let names: Vec<&str> =
        doc["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["output_norm.weight"]);
    let tensors = sipllm(&dir, &["tensors", "--shard-only", last]);
    assert_eq!(tensors.code, Some(0), "{}", tensors.transcript());
    assert!(tensors.stdout.contains("output_norm.weight"));
    let verify = sipllm(&dir, &["verify", "--shard-only", last]);
    assert_eq!(verify.code, Some(0), "{}", verify.transcript());
    // Without --shard-only, inspect fails as before.
    assert_eq!(sipllm(&dir, &["inspect", last]).code, Some(1));
}
