//! Golden tests: exactly what a person sees (color off, fixed width), for `inspect` (text and
//! JSON) and for `validate`'s diagnostics on every malformed file in `files::cases`.
//!
//! Regenerate with `SIPLLM_UPDATE_GOLDEN=1 cargo test -p sipllm-cli`, then review the diff.

use crate::files::{self, cases, write};
use crate::support::{golden, sample_path, sipllm, temp_dir};

#[test]
fn validate_renders_each_malformed_file() {
    let dir = temp_dir("golden-validate");
    let all = cases();
    assert!(all.len() >= 10);
    let mut codes = std::collections::BTreeSet::new();
    for case in &all {
        let file = write(&dir, &format!("{}.gguf", case.name), &case.bytes);
        let mut args = vec!["validate", file.as_str()];
        args.extend_from_slice(case.args);
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(case.exit), "{}:\n{}", case.name, run.transcript());
        golden(&format!("validate/{}.txt", case.name), &run.transcript());
        // Every diagnostic names its code; collect them to check the cases are distinct.
        // miette puts the code alone on the diagnostic's first line.
        for line in run.stdout.lines() {
            if let Some(code) = line.strip_prefix("gguf::") {
                codes.insert(code.to_owned());
            }
        }
    }
    // At least 10 distinct error codes across header, metadata, array, tensor and layout.
    assert!(codes.len() >= 10, "{codes:?}");
    for area in ["header::", "metadata::", "limits::", "tensor::", "layout::", "input::"] {
        assert!(codes.iter().any(|c| c.starts_with(area)), "no {area} case in {codes:?}");
    }
}

#[test]
fn validate_json_lines() {
    let dir = temp_dir("golden-validate-json");
    let mut names = Vec::new();
    for case in cases().iter().filter(|c| {
        ["header-bad-magic", "array-invalid-utf8-element", "warning-gap"].contains(&c.name)
    }) {
        names.push(write(&dir, &format!("{}.gguf", case.name), &case.bytes));
    }
    names.push("missing.gguf".into());
    let mut args = vec!["validate", "--format", "json"];
    args.extend(names.iter().map(String::as_str));
    let run = sipllm(&dir, &args);
    // A missing file (2) outranks an invalid one (1).
    assert_eq!(run.code, Some(2));
    for line in run.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let fields = ["file", "severity", "code", "offset", "length", "path", "message", "help"];
        assert_eq!(v.as_object().unwrap().len(), fields.len(), "{line}");
        // In this order.
        let at: Vec<usize> =
            fields.iter().map(|f| line.find(&format!("\"{f}\":")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
    }
    // The I/O error's text comes from the OS; keep the golden independent of its wording.
    let stable: String = run
        .stdout
        .lines()
        .map(|l| {
            if l.contains("streaming::io::open") {
                "<missing.gguf: streaming::io::open>"
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    golden("validate/json-lines.txt", &stable);
}

#[test]
fn inspect_the_bundled_sample() {
    let dir = temp_dir("golden-inspect-sample");
    // No FILE: the sample compiled into the binary, from any directory.
    let run = sipllm(&dir, &["inspect"]);
    assert_eq!(run.code, Some(0));
    golden("inspect/sample.txt", &run.transcript());
    let run = sipllm(&dir, &["inspect", "--json"]);
    assert_eq!(run.code, Some(0));
    assert!(run.stderr.contains("bundled"), "the note goes to stderr with --json");
    golden("inspect/sample.json", &run.stdout);
    // The same bytes read from the repository's file give the same document.
    let path = sample_path();
    let from_file = sipllm(&dir, &["inspect", "--json", path.to_str().unwrap()]);
    let a: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_str(&from_file.stdout).unwrap();
    assert_eq!(a, b);
}

#[test]
fn inspect_odd_values_text_json_full_and_filter() {
    let dir = temp_dir("golden-inspect-odd");
    let file = write(&dir, "odd.gguf", &files::odd_values());
    let run = sipllm(&dir, &["inspect", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(!run.stdout.contains('\x1b'), "a terminal control reached the output");
    assert!(!run.stdout.contains('\u{202e}') && !run.stdout.contains('\u{9b}'));
    golden("inspect/odd.txt", &run.transcript());

    let run = sipllm(&dir, &["inspect", "--full", "--no-tensors", "--filter", "[nt]*", &file]);
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.contains("\"tok999\""), "--full shows every element");
    golden("inspect/odd-full-filtered.txt", &run.transcript());

    let run = sipllm(&dir, &["inspect", "--json", &file]);
    assert_eq!(run.code, Some(0));
    assert!(!run.stdout.contains('\x1b') && !run.stdout.contains('\u{202e}'));
    golden("inspect/odd.json", &run.stdout);
}

#[test]
fn inspect_a_valid_model_and_its_tensors() {
    let dir = temp_dir("golden-inspect-valid");
    let file = write(&dir, "valid.gguf", &files::valid());
    let run = sipllm(&dir, &["inspect", &file]);
    assert_eq!(run.code, Some(0));
    golden("inspect/valid.txt", &run.transcript());
    let run = sipllm(&dir, &["tensors", "--filter", "*.weight", &file]);
    assert_eq!(run.code, Some(0));
    golden("tensors/valid.txt", &run.transcript());
    let run = sipllm(&dir, &["tensors", "--json", &file]);
    assert_eq!(run.code, Some(0));
    golden("tensors/valid.json", &run.stdout);
}

#[test]
fn inspect_an_invalid_file_shows_the_diagnostic() {
    let dir = temp_dir("golden-inspect-invalid");
    let case =
        cases().into_iter().find(|c| c.name == "warning-lenient-duplicate-and-bad-utf8").unwrap();
    let file = write(&dir, "dup.gguf", &case.bytes);
    let run = sipllm(&dir, &["inspect", &file]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    golden("inspect/invalid.txt", &run.transcript());
    // The lenient profile reads it, with the duplicate as a warning.
    let run = sipllm(&dir, &["inspect", "--profile", "lenient", &file]);
    assert_eq!(run.code, Some(0));
    golden("inspect/invalid-lenient.txt", &run.transcript());
    // A string that is not UTF-8 is shown with `\x` escapes, and in JSON as `bytes_hex`.
    assert!(run.stdout.contains(r#""caf\xe9""#), "{}", run.stdout);
    let run = sipllm(&dir, &["inspect", "--profile", "lenient", "--json", &file]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["metadata"][5]["value"], serde_json::json!({"bytes_hex": "636166e9"}));
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 2);
    assert_eq!(doc["warnings"][0]["code"], "gguf::metadata::duplicate_key");
}

/// Issue 26, item 9: a name with an invisible character (here a tag, U+E0041) never reaches
/// the output raw, so it cannot print like the name without it; `validate` warns about it.
#[test]
fn invisible_characters_in_names_are_escaped_and_warned_about() {
    use sipllm_gguf::GgmlType;
    use sipllm_testkit::{GgufBuilder, Value};
    let dir = temp_dir("invisible-names");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("a\u{ad}b\u{2800}c\u{fe0f}"))
        .tensor("output.weight", GgmlType::F32, &[4])
        .tensor("output.weight\u{e0041}", GgmlType::F32, &[4])
        .build();
    let file = write(&dir, "invisible.gguf", &bytes);
    for args in [vec!["tensors", &file], vec!["inspect", &file], vec!["inspect", "--json", &file]] {
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        for c in ['\u{e0041}', '\u{ad}', '\u{2800}', '\u{fe0f}'] {
            assert!(!run.stdout.contains(c), "{args:?}: U+{:04X} raw", u32::from(c));
        }
        if args.contains(&"--json") {
            // JSON readers get the names back exactly (a surrogate pair past the BMP).
            assert!(run.stdout.contains(r"output.weight\udb40\udc41"), "{}", run.stdout);
        } else if args[0] == "tensors" {
            assert!(run.stdout.contains(r"output.weight\u{e0041}"), "{}", run.stdout);
        }
    }
    let run = sipllm(&dir, &["validate", &file]);
    assert!(run.stdout.contains("gguf::tensor::invisible_char"), "{}", run.transcript());
    assert!(run.stdout.contains("U+E0041"), "{}", run.transcript());
}
