//! `convert` to `.llmw` of a model with the bools every real model has
//! (`tokenizer.ggml.add_*_token`): refused with every key named, or with `drop_unsupported`
//! converted with each bool left out reported — key, value, and the `sipllm edit` options
//! that put it back into a GGUF made from the output.

use std::fs::File;

use sipllm_edit::convert::{ConvertError, ConvertOptions, Unfit, convert};
use sipllm_gguf::{GgmlType, ValueType};
use sipllm_streaming::{Model, OpenOptions, WeightSource};
use sipllm_testkit::{GgufBuilder, Value};

use crate::support::TempDir;

const BOOLS: [(&str, bool); 4] = [
    ("tokenizer.ggml.add_bos_token", true),
    ("tokenizer.ggml.add_eos_token", false),
    ("tokenizer.ggml.add_sep_token", false),
    ("tokenizer.ggml.add_space_prefix", true),
];

fn model() -> Vec<u8> {
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.block_count", Value::Uint32(1));
    for (k, v) in BOOLS {
        b = b.kv(k, Value::Bool(v));
    }
    b.kv("my.flags", Value::array(ValueType::Bool, vec![Value::Bool(true), Value::Bool(false)]))
        .tensor("token_embd.weight", GgmlType::F32, &[8, 4])
        .build()
}

fn open(path: &std::path::Path) -> (Model, File) {
    let file = File::open(path).unwrap();
    let model = Model::from_file(&file, path, &OpenOptions::default()).unwrap();
    (model, file)
}

#[test]
fn the_bools_of_a_real_model_are_named_with_their_values_and_how_to_restore_them() {
    let dir = TempDir::new("convert-bools");
    let src = dir.join("m.gguf");
    std::fs::write(&src, model()).unwrap();
    let (model, file) = open(&src);
    let out = dir.join("m.llmw");

    // Refused: every key named, nothing written.
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    let ConvertError::Unsupported { keys, .. } = &e else { panic!("{e:?}") };
    let named: Vec<&str> = keys.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(named[..4], BOOLS.map(|(k, _)| k));
    assert_eq!(named[4], "my.flags");
    assert!(!out.exists());

    // Dropped: the same keys, each with its value, and how to put them back.
    let done = convert(&model, &file, &out, &ConvertOptions { drop_unsupported: true }).unwrap();
    let dropped: Vec<(&str, String)> =
        done.dropped.iter().map(|d| (d.key.as_str(), d.why.to_string())).collect();
    assert_eq!(
        dropped,
        [
            ("tokenizer.ggml.add_bos_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_eos_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_sep_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_space_prefix", "BOOL: .llmw has no bool type".to_owned()),
            ("my.flags", "ARRAY of BOOL: .llmw has no bool arrays".to_owned()),
        ]
    );
    assert!(matches!(done.dropped[0].why, Unfit::Bool { value: true }));
    assert!(matches!(done.dropped[1].why, Unfit::Bool { value: false }));
    assert_eq!(
        done.restore_args(),
        [
            "--set",
            "tokenizer.ggml.add_bos_token=bool:true",
            "--set",
            "tokenizer.ggml.add_eos_token=bool:false",
            "--set",
            "tokenizer.ggml.add_sep_token=bool:false",
            "--set",
            "tokenizer.ggml.add_space_prefix=bool:true",
            "--set-array",
            "my.flags=bool:true,false",
        ]
    );
    assert_eq!(done.keys, 2);

    // The round trip has every other key, and not the bools (which restore_args gives back).
    let (llmw, llmw_file) = open(&out);
    assert!(llmw.meta("tokenizer.ggml.add_bos_token").is_none());
    let back = dir.join("back.gguf");
    let done = convert(&llmw, &llmw_file, &back, &ConvertOptions::default()).unwrap();
    assert!(done.dropped.is_empty() && done.restore_args().is_empty());
    let (gguf, _) = open(&back);
    assert_eq!(gguf.meta_uint("llama.block_count").unwrap(), 1);
    assert_eq!(gguf.tensors().len(), 1);
}
