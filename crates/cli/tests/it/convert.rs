//! `sipllm convert` (GGUF ↔ `.llmw`: value equality, the unsupported-key list and
//! `--drop-unsupported`, refusals) and `sipllm make-toy`. The byte-for-byte round trips are
//! in the workspace's `tests/` crate (`round_trips`).

use sipllm_edit::toy::toy_model;
use sipllm_gguf::{Endian, GgmlType, ValueType};
use sipllm_testkit::{GgufBuilder, Value};

use crate::edit::{cmdline, manifest, metadata, model};
use crate::support::{golden, sipllm, temp_dir};

#[test]
fn make_toy_writes_both_formats_of_the_seeded_model() {
    let dir = temp_dir("make-toy");
    for seed in [0u64, 7] {
        let out = format!("toy{seed}");
        let run = sipllm(&dir, &["make-toy", "--seed", &seed.to_string(), "--out-dir", &out]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        assert!(run.stdout.contains(&format!("wrote {out}/toy.gguf (")), "{}", run.stdout);
        assert!(run.stdout.contains(&format!("wrote {out}/toy.llmw (")));
        let toy = toy_model(seed);
        let gguf = std::fs::read(dir.join(&out).join("toy.gguf")).unwrap();
        let llmw = std::fs::read(dir.join(&out).join("toy.llmw")).unwrap();
        assert_eq!(gguf, toy.gguf_bytes().unwrap());
        assert_eq!(llmw, toy.llmw_bytes().unwrap());
        for f in ["toy.gguf", "toy.llmw"] {
            let run = sipllm(&dir.join(&out), &["validate", f]);
            assert_eq!(run.code, Some(0), "{}", run.transcript());
        }
    }
    // The default seed is 0.
    let run = sipllm(&dir, &["make-toy", "--out-dir", "default"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(
        std::fs::read(dir.join("default/toy.gguf")).unwrap(),
        toy_model(0).gguf_bytes().unwrap()
    );
    // An out-dir that cannot be created (under a regular file): exit code 2.
    std::fs::write(dir.join("file"), b"x").unwrap();
    let run = sipllm(&dir, &["make-toy", "--out-dir", "file/sub"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("cannot write the toy model into file/sub"), "{}", run.stderr);
    assert_eq!(sipllm(&dir, &["make-toy"]).code, Some(2), "--out-dir is required");
}

#[test]
fn values_survive_and_widths_come_back_for_well_known_keys() {
    let dir = temp_dir("convert-values");
    let src = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.alignment", Value::Uint32(64))
        .kv("llama.context_length", Value::Uint64(4096)) // llama.cpp wants UINT32
        .kv("llama.feed_forward_length", Value::array(ValueType::Int32, vec![Value::Int32(8); 2]))
        .kv("llama.rope.freq_base", Value::Float64(500000.0)) // representable as f32
        .kv(
            "tokenizer.ggml.precompiled_charsmap",
            Value::array(ValueType::Uint8, vec![Value::Uint8(9); 3]),
        )
        .kv("my.u8", Value::Uint8(200))
        .kv("my.i16s", Value::array(ValueType::Int16, vec![Value::Int16(-5), Value::Int16(7)]))
        .kv("my.f32", Value::Float32(0.1))
        .kv("my.nan", Value::Float64(f64::NAN))
        .kv("my.empty", Value::array(ValueType::String, vec![]))
        .kv("my.big", Value::Uint64(i64::MAX as u64))
        .tensor("w", GgmlType::Q8_0, &[64, 2])
        .tensor("v", GgmlType::F32, &[3])
        .build();
    std::fs::write(dir.join("m.gguf"), &src).unwrap();
    let run = sipllm(&dir, &["convert", "m.gguf", "m.llmw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let run = sipllm(&dir, &["convert", "m.llmw", "back.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(manifest(&dir, "back.gguf", "sha256"), manifest(&dir, "m.gguf", "sha256"));
    let before = metadata(&dir, "m.gguf");
    let after = metadata(&dir, "back.gguf");
    let ty = |meta: &[serde_json::Value], key: &str| {
        let e = meta.iter().find(|e| e["key"] == key).unwrap();
        (e["type"].as_str().unwrap().to_owned(), e.get("array_type").cloned(), e["value"].clone())
    };
    for (key, want_type, want_elem) in [
        ("general.alignment", "UINT32", None),
        ("llama.context_length", "UINT32", None),
        ("llama.feed_forward_length", "ARRAY", Some("INT32")),
        ("llama.rope.freq_base", "FLOAT32", None),
        ("tokenizer.ggml.precompiled_charsmap", "ARRAY", Some("UINT8")),
        ("my.u8", "INT64", None),
        ("my.i16s", "ARRAY", Some("INT64")),
        ("my.f32", "FLOAT64", None),
        ("my.nan", "FLOAT64", None),
        ("my.empty", "ARRAY", Some("STRING")),
        ("my.big", "INT64", None),
    ] {
        let (t, elem, value) = ty(&after, key);
        assert_eq!(t, want_type, "{key}");
        assert_eq!(elem, want_elem.map(serde_json::Value::from), "{key}");
        // The same value (JSON numbers compare by value; f32 0.1 widened exactly).
        assert_eq!(value, ty(&before, key).2, "{key}");
    }
    // The GGUF output is laid out at the carried-over alignment.
    let out = std::fs::read(dir.join("back.gguf")).unwrap();
    let g = sipllm_gguf::parse(&out).unwrap();
    assert_eq!(g.alignment(), 64);
    assert_eq!(g.data_offset() % 64, 0);
}

#[test]
fn unsupported_keys_are_listed_or_dropped() {
    let dir = temp_dir("convert-unsupported");
    let src = model()
        .kv("my.bools", Value::array(ValueType::Bool, vec![Value::Bool(true)]))
        .kv(
            "my.nested",
            Value::array(ValueType::Array, vec![Value::array(ValueType::Uint8, vec![])]),
        )
        .kv("my.huge", Value::Uint64(u64::MAX))
        .kv(
            "my.huges",
            Value::array(ValueType::Uint64, vec![Value::Uint64(1), Value::Uint64(u64::MAX)]),
        )
        .build();
    std::fs::write(dir.join("m.gguf"), &src).unwrap();
    let run = sipllm(&dir, &["convert", "m.gguf", "m.llmw"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(!dir.join("m.llmw").exists());
    let mut transcript = format!("$ sipllm convert m.gguf m.llmw\n{}\n", run.transcript());

    let run = sipllm(&dir, &["convert", "--drop-unsupported", "m.gguf", "m.llmw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    transcript.push_str(&format!(
        "$ sipllm convert --drop-unsupported m.gguf m.llmw\n{}",
        run.transcript()
    ));
    golden("convert/unsupported.txt", &transcript);
    // What is left is every other key, with its value.
    let before = metadata(&dir, "m.gguf");
    let after = metadata(&dir, "m.llmw");
    let dropped = ["tokenizer.ggml.add_bos_token", "my.bools", "my.nested", "my.huge", "my.huges"];
    let kept: Vec<_> =
        before.iter().filter(|e| !dropped.contains(&e["key"].as_str().unwrap())).collect();
    assert_eq!(after.len(), kept.len());
    for (a, b) in kept.iter().zip(&after) {
        assert_eq!((&a["key"], &a["value"]), (&b["key"], &b["value"]));
    }
    assert_eq!(manifest(&dir, "m.llmw", "sha256"), manifest(&dir, "m.gguf", "sha256"));
    // The printed `sipllm edit` line, run on the GGUF converted back, restores the booleans.
    let printed: Vec<String> = run
        .stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("sipllm edit BACK.gguf"))
        .skip(1)
        .take_while(|l| l.starts_with("      --"))
        .flat_map(|l| {
            l.trim().trim_end_matches(" \\").split(' ').map(str::to_owned).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(printed.len(), 4, "{}", run.stdout);
    let run = sipllm(&dir, &["convert", "m.llmw", "back.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let mut args = vec!["edit", "back.gguf", "-o", "fixed.gguf"];
    args.extend(printed.iter().map(String::as_str));
    let run = sipllm(&dir, &args);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let fixed = metadata(&dir, "fixed.gguf");
    for key in ["tokenizer.ggml.add_bos_token", "my.bools"] {
        let want = before.iter().find(|e| e["key"] == key).unwrap();
        let got = fixed.iter().find(|e| e["key"] == key).unwrap_or_else(|| panic!("{key}"));
        assert_eq!((&got["type"], &got["value"]), (&want["type"], &want["value"]), "{key}");
    }
}

#[test]
fn conversion_refusals() {
    let dir = temp_dir("convert-refusals");
    std::fs::write(dir.join("m.gguf"), model().build()).unwrap();
    std::fs::write(dir.join("be.gguf"), model().endian(Endian::Big).build()).unwrap();
    let mut transcript = String::new();
    for args in [
        vec!["convert", "m.gguf", "out.gguf"],
        vec!["convert", "m.gguf", "."],
        vec!["convert", "missing.gguf", "out.llmw"],
        vec!["convert", "be.gguf", "out.llmw"],
    ] {
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(2), "{}", run.transcript());
        transcript.push_str(&format!("{}\n{}\n", cmdline(&args), run.transcript()));
    }
    assert!(!dir.join("out.gguf").exists() && !dir.join("out.llmw").exists());
    golden("convert/refusals.txt", &transcript);
    // A big-endian file without tensors has no data to byte-swap: it converts.
    let vocab = GgufBuilder::new()
        .endian(Endian::Big)
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["a", "b"]))
        .build();
    std::fs::write(dir.join("vocab.be.gguf"), vocab).unwrap();
    let run = sipllm(&dir, &["convert", "vocab.be.gguf", "vocab.llmw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(metadata(&dir, "vocab.llmw").len(), 2);
}

#[test]
fn safetensors_by_extension_or_to_from_a_file_or_a_split_set() {
    let dir = temp_dir("convert-safetensors");
    let src = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("a", GgmlType::F32, &[8, 2])
        .tensor("b", GgmlType::Q8_0, &[32, 3])
        .tensor("c", GgmlType::F16, &[4]);
    std::fs::write(dir.join("m.gguf"), src.build()).unwrap();
    let run = sipllm(&dir, &["convert", "m.gguf", "m.safetensors"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout
            .starts_with("exported m.gguf (GGUF) -> m.safetensors (safetensors, f32): 3 tensors"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.lines().all(|l| l.chars().count() <= 80), "{}", run.stdout);
    let single = std::fs::read(dir.join("m.safetensors")).unwrap();
    let n = u64::from_le_bytes(single[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&single[8..8 + n]).unwrap();
    assert_eq!(header["b"]["shape"], serde_json::json!([3, 32]));
    assert_eq!(header["__metadata__"]["format"], "pt");
    // --to names the format whatever the extension; a split set exports as the whole model.
    let run = sipllm(&dir, &["split", "m.gguf", "--max-tensors", "1", "--out-dir", "parts"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let run =
        sipllm(&dir, &["convert", "parts/m-00002-of-00003.gguf", "set.st", "--to", "safetensors"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(std::fs::read(dir.join("set.st")).unwrap(), single, "the same file as the whole");
    // --dtype and --names belong to safetensors; --to a format the input already is refused.
    let run = sipllm(&dir, &["convert", "m.gguf", "m.llmw", "--dtype", "f16"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    let run = sipllm(&dir, &["convert", "m.gguf", "x.out", "--to", "gguf"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    // --names hf of a model transformers has no names for: refused, nothing written.
    let run = sipllm(&dir, &["convert", "m.gguf", "h.safetensors", "--names", "hf"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("edit::safetensors::hf_key"), "{}", run.stderr);
    assert!(!dir.join("h.safetensors").exists() && !dir.join("config.json").exists());
    // An output that is the input is refused.
    let run = sipllm(&dir, &["convert", "m.gguf", "m.gguf", "--to", "safetensors"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(dir.join("m.gguf").exists());
}
