//! `sipllm inspect --json` against the reference reader's view (`.expect.json`, gguf-py 0.19.0)
//! of every corpus file that it parses, field by field.
//!
//! Arrays: when the expectation lists the whole array (`value`), every element is compared;
//! otherwise the length, the first and last four elements, and — for string, integer and bool
//! arrays — the sha256 of the canonical JSON of the whole list (`sha256`), which is exactly
//! `serde_json::to_string` of our list. Float arrays (whose canonical text is Python's) are
//! compared element by element at the head and tail, and in full count. Floats compare
//! numerically.

use std::path::Path;

use serde_json::Value;
use sipllm_tests::sha256_hex as hex;

use crate::support::sipllm;

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn inspect_json_agrees_with_the_reference_reader() {
    let mut checked = 0;
    for file in sipllm_tests::all() {
        if let Some(expect) = file.expect() {
            compare_file(&file.path, expect);
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} corpus files found");
}

fn compare_file(gguf: &Path, want: &Value) {
    let name = gguf.file_name().unwrap().to_string_lossy().into_owned();
    let run = sipllm(gguf.parent().unwrap(), &["inspect", "--json", &name]);
    assert_eq!(run.code, Some(0), "{name}:\n{}", run.transcript());
    let got: Value = serde_json::from_str(&run.stdout).expect("inspect --json is JSON");

    assert_eq!(got["format"], "gguf", "{name}");
    for field in ["version", "tensor_count", "kv_count", "alignment", "data_offset"] {
        assert_eq!(got[field], want[field], "{name}: {field}");
    }
    let file_size = std::fs::metadata(gguf).unwrap().len();
    assert_eq!(got["file_size"], file_size, "{name}");

    let (gm, wm) = (got["metadata"].as_array().unwrap(), want["metadata"].as_array().unwrap());
    assert_eq!(gm.len(), wm.len(), "{name}: metadata count");
    for (g, w) in gm.iter().zip(wm) {
        let key = w["key"].as_str().unwrap();
        let at = format!("{name}: {key}");
        assert_eq!(g["key"], w["key"], "{at}");
        assert_eq!(g["type"], w["type"], "{at}");
        if w["type"] == "ARRAY" {
            compare_array(g, w, &at);
        } else {
            assert!(same(&g["value"], &w["value"]), "{at}: {} vs {}", g["value"], w["value"]);
        }
    }

    let (gt, wt) = (got["tensors"].as_array().unwrap(), want["tensors"].as_array().unwrap());
    assert_eq!(gt.len(), wt.len(), "{name}: tensor count");
    let data_offset = want["data_offset"].as_u64().unwrap();
    for (g, w) in gt.iter().zip(wt) {
        let at = format!("{name}: tensor {}", w["name"]);
        for field in ["name", "ggml_type", "offset", "nbytes"] {
            assert_eq!(g[field], w[field], "{at}: {field}");
        }
        // The expectation's `shape` is GGUF order: our `ne`; our `shape` is its reverse.
        assert_eq!(g["ne"], w["shape"], "{at}: ne");
        let mut rev = w["shape"].as_array().unwrap().clone();
        rev.reverse();
        assert_eq!(g["shape"], Value::Array(rev), "{at}: shape");
        assert_eq!(
            g["abs_offset"].as_u64(),
            Some(data_offset + w["offset"].as_u64().unwrap()),
            "{at}: abs_offset"
        );
    }
}

fn compare_array(g: &Value, w: &Value, at: &str) {
    assert_eq!(g["array_type"], w["array_type"], "{at}: array_type");
    assert_eq!(g["len"], w["len"], "{at}: len");
    let list = g["value"].as_array().unwrap_or_else(|| panic!("{at}: value is a list"));
    assert_eq!(list.len() as u64, w["len"].as_u64().unwrap(), "{at}: element count");
    if let Some(all) = w.get("value") {
        assert!(same(&g["value"], all), "{at}: elements differ");
        return;
    }
    let head = w["head"].as_array().unwrap();
    let tail = w["tail"].as_array().unwrap();
    for (i, e) in head.iter().enumerate() {
        assert!(same(&list[i], e), "{at}[{i}]: {} vs {e}", list[i]);
    }
    for (i, e) in tail.iter().enumerate() {
        let j = list.len() - tail.len() + i;
        assert!(same(&list[j], e), "{at}[{j}]: {} vs {e}", list[j]);
    }
    if w["array_type"] != "FLOAT32" && w["array_type"] != "FLOAT64" {
        let canonical = serde_json::to_string(list).unwrap();
        let digest = hex(canonical.as_bytes());
        assert_eq!(digest, w["sha256"].as_str().unwrap(), "{at}: sha256 of the canonical list");
    }
}

/// JSON equality with numbers compared numerically (and the non-finite strings as strings).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_u64(), y.as_u64(), x.as_i64(), y.as_i64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
