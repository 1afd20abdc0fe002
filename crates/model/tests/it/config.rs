//! `ModelConfig` against the reference reader's view of every corpus file (and the tiny
//! Llama model with tensor data), on `.llmw`, and the per-layer normalisation: scalar, array,
//! wrong length and wrong type.

use std::path::Path;

use crate::common::shared_dir;
use serde_json::Value as Json;
use sipllm_edit::toy;
use sipllm_gguf::{GgmlType, Profile, ValueType};
use sipllm_model::config::{ConfigError, ModelConfig, PerLayer, SlidingWindowPattern};
use sipllm_streaming::{MemSource, Model, OpenOptions};
use sipllm_testkit::{GgufBuilder, Value};

fn open(bytes: Vec<u8>) -> Model {
    Model::from_source(MemSource::new(bytes), &OpenOptions::default()).expect("opens")
}

fn config(bytes: Vec<u8>) -> Result<ModelConfig, ConfigError> {
    ModelConfig::from_source(&open(bytes))
}

fn ints(values: &[i32]) -> Value {
    Value::array(ValueType::Int32, values.iter().map(|&v| Value::Int32(v)).collect())
}

/// A model of `arch` with the keys llama.cpp requires (3 blocks) and `extra` keys.
fn model(arch: &str, extra: &[(&str, Value)]) -> Vec<u8> {
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str(arch))
        .kv(&format!("{arch}.context_length"), Value::Uint32(4096))
        .kv(&format!("{arch}.embedding_length"), Value::Uint32(256))
        .kv(&format!("{arch}.block_count"), Value::Uint32(3));
    for (k, v) in extra {
        b = b.kv(&k.replace("{arch}", arch), v.clone());
    }
    b.build()
}

/// The expect file's metadata as key -> value (arrays: their `len`).
fn expected(path: &Path) -> Vec<(String, Json)> {
    let doc: Json = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = if e["type"] == "ARRAY" { e["len"].clone() } else { e["value"].clone() };
            (e["key"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

#[test]
fn every_corpus_file_matches_the_reference_reader() {
    let Some(shared) = shared_dir("every_corpus_file_matches_the_reference_reader") else {
        return;
    };
    let mut checked = 0;
    for dir in ["corpus/real", "corpus/real-historic", "corpus/generated"] {
        for entry in std::fs::read_dir(shared.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let Some(name) = path.to_str().and_then(|p| p.strip_suffix(".gguf")) else {
                continue;
            };
            let expect = Path::new(&format!("{name}.expect.json")).to_path_buf();
            if !expect.exists() {
                continue; // the reference reader refuses it too (`.expect-error.json`)
            }
            let kv = expected(&expect);
            let get = |key: &str| kv.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            // The lenient profile reads the duplicate-key file the reference reader reads.
            let options = OpenOptions::default().with_profile(Profile::Lenient);
            let m = Model::open(&path, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
            let c = ModelConfig::from_source(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
            let arch = c.architecture.clone();
            assert_eq!(Some(Json::from(arch.as_str())), get("general.architecture"), "{name}");
            assert!(c.known_architecture, "{name}: {arch}");
            let key = |s: &str| format!("{arch}.{s}");
            let uint = |v: Option<u64>| v.map(Json::from);
            let uniform = |v: &Option<PerLayer<u64>>| v.as_ref().and_then(PerLayer::uniform);
            let float = |v: Option<f64>| v.map(Json::from);
            assert_eq!(c.name.as_deref().map(Json::from), get("general.name"), "{name}");
            assert_eq!(uint(c.file_type), get("general.file_type"), "{name}");
            assert_eq!(uint(c.context_length), get(&key("context_length")), "{name}");
            assert_eq!(uint(c.embedding_length), get(&key("embedding_length")), "{name}");
            assert_eq!(uint(c.block_count), get(&key("block_count")), "{name}");
            assert_eq!(
                uint(uniform(&c.feed_forward_length)),
                get(&key("feed_forward_length")),
                "{name}"
            );
            assert_eq!(uint(uniform(&c.head_count)), get(&key("attention.head_count")), "{name}");
            assert_eq!(
                uint(uniform(&c.head_count_kv)),
                get(&key("attention.head_count_kv")),
                "{name}"
            );
            assert_eq!(uint(c.rope.dimension_count), get(&key("rope.dimension_count")), "{name}");
            assert_eq!(float(c.rope.freq_base), get(&key("rope.freq_base")), "{name}");
            assert_eq!(
                c.rope.scaling_type.as_deref().map(Json::from),
                get(&key("rope.scaling.type")),
                "{name}"
            );
            assert_eq!(float(c.rope.scaling_factor), get(&key("rope.scaling.factor")), "{name}");
            assert_eq!(
                uint(c.rope.original_context_length),
                get(&key("rope.scaling.original_context_length")),
                "{name}"
            );
            assert_eq!(
                float(c.layer_norm_epsilon),
                get(&key("attention.layer_norm_epsilon")),
                "{name}"
            );
            assert_eq!(
                float(c.layer_norm_rms_epsilon),
                get(&key("attention.layer_norm_rms_epsilon")),
                "{name}"
            );
            let vocab = get(&key("vocab_size")).or_else(|| get("tokenizer.ggml.tokens"));
            assert_eq!(uint(c.vocab_size), vocab, "{name}");
            assert_eq!(c.tokenizer.as_deref().map(Json::from), get("tokenizer.ggml.model"));
            // The label: llama.cpp's name of the stored file type, else a guess (vocab-only
            // files have no tensors to guess from).
            match c.file_type {
                Some(1) => assert_eq!(c.quantization.to_string(), "F16", "{name}"),
                Some(other) => panic!("{name}: file type {other} not in the corpus before"),
                None => assert_eq!(c.quantization.to_string(), "unknown", "{name}"),
            }
            checked += 1;
        }
    }
    // 12 real, 4 historic with an expect file, 3 generated.
    assert_eq!(checked, 19);
}

#[test]
fn a_llmw_file_and_its_gguf_twin_give_one_config() {
    let toy = toy::toy_model(7);
    let from_gguf = config(toy.gguf_bytes().unwrap()).unwrap();
    let llmw =
        Model::from_source(MemSource::new(toy.llmw_bytes().unwrap()), &OpenOptions::default())
            .unwrap();
    let from_llmw = ModelConfig::from_source(&llmw).unwrap();
    assert_eq!(from_gguf.architecture, "llama");
    assert_eq!(from_gguf.block_count, Some(u64::from(toy.config().n_layer)));
    assert_eq!(from_gguf.vocab_size, Some(u64::from(toy.config().n_vocab)));
    assert_eq!(from_gguf, from_llmw);
}

#[test]
fn the_quantization_label_is_declared_or_guessed() {
    let declared = config(model("llama", &[("general.file_type", Value::Uint32(15))])).unwrap();
    assert_eq!(declared.quantization.to_string(), "Q4_K_M");
    assert!(!declared.quantization.is_guess());
    let unknown = config(model("llama", &[("general.file_type", Value::Uint32(999))])).unwrap();
    assert_eq!(unknown.quantization.to_string(), "unknown (999)");
    // No key: the most common tensor type decides, and the label says it is a guess.
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("mystery"))
        .tensor("a", GgmlType::Q8_0, &[32])
        .tensor("b", GgmlType::Q8_0, &[32])
        .tensor("n", GgmlType::F32, &[4])
        .build();
    let guessed = config(bytes).unwrap();
    assert_eq!(guessed.quantization.to_string(), "Q8_0 (guessed)");
    assert!(guessed.quantization.is_guess());
}

#[test]
fn unknown_architectures_give_the_generic_fields() {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("mystery"))
        .kv("mystery.attention.head_count", Value::Uint64(8))
        .kv("mystery.attention.sliding_window", Value::Uint32(512))
        .build();
    let c = config(bytes).unwrap();
    assert!(!c.known_architecture);
    assert_eq!(c.context_length, None);
    assert_eq!(c.head_count, Some(PerLayer::Uniform(8)));
    assert_eq!(c.sliding_window, Some(512));
}

#[test]
fn required_and_mistyped_keys_are_errors_naming_the_key() {
    let e = config(GgufBuilder::new().kv("general.name", Value::str("x")).build()).unwrap_err();
    assert_eq!(e.code(), "model::config::missing_key");
    assert_eq!(e.key(), "general.architecture");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("qwen2"))
        .kv("qwen2.context_length", Value::Uint32(4096))
        .kv("qwen2.block_count", Value::Uint32(3))
        .build();
    let e = config(bytes).unwrap_err();
    assert_eq!(
        e,
        ConfigError::Missing { key: "qwen2.embedding_length".into(), architecture: "qwen2".into() }
    );
    assert!(e.to_string().contains("\"qwen2.embedding_length\""), "{e}");
    assert!(!e.help().is_empty());
    // An epsilon stored as an integer, a count stored as a string, a negative count.
    let e =
        config(model("llama", &[("{arch}.attention.layer_norm_rms_epsilon", Value::Uint32(0))]))
            .unwrap_err();
    assert_eq!(e.code(), "model::config::wrong_type");
    assert_eq!(e.key(), "llama.attention.layer_norm_rms_epsilon");
    let e = config(model("llama", &[("{arch}.expert_count", Value::str("8"))])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "metadata key \"llama.expert_count\": expected non-negative integer, found string"
    );
    let e =
        config(model("llama", &[("{arch}.attention.key_length", Value::Int32(-1))])).unwrap_err();
    assert_eq!(e.code(), "model::config::out_of_range");
}

#[test]
fn per_layer_values_scalar_array_wrong_length_wrong_type() {
    // Scalar.
    let c =
        config(model("gemma4", &[("{arch}.attention.head_count_kv", Value::Uint32(2))])).unwrap();
    let kv = c.head_count_kv.unwrap();
    assert_eq!(kv, PerLayer::Uniform(2));
    assert_eq!((kv.layer(0), kv.layer(2), kv.uniform(), kv.max()), (Some(2), Some(2), Some(2), 2));
    // An array of the right length.
    let c =
        config(model("gemma4", &[("{arch}.attention.head_count_kv", ints(&[1, 1, 4]))])).unwrap();
    let kv = c.head_count_kv.unwrap();
    assert_eq!(kv.layers(), Some(&[1u64, 1, 4][..]));
    assert_eq!((kv.layer(2), kv.layer(3), kv.uniform(), kv.max()), (Some(4), None, None, 4));
    assert_eq!(kv.to_string(), "[1, 1, 4]");
    // The wrong length.
    let e =
        config(model("gemma4", &[("{arch}.attention.head_count_kv", ints(&[1, 1]))])).unwrap_err();
    assert_eq!(
        e,
        ConfigError::WrongLength {
            key: "gemma4.attention.head_count_kv".into(),
            len: 2,
            block_count: 3
        }
    );
    assert_eq!(e.code(), "model::config::per_layer_length");
    // The wrong type: a float, a string array, a negative element.
    let e = config(model("gemma4", &[("{arch}.feed_forward_length", Value::Float32(1.0))]))
        .unwrap_err();
    assert_eq!(
        e,
        ConfigError::WrongType {
            key: "gemma4.feed_forward_length".into(),
            index: None,
            expected: "integer or per-layer integer array",
            found: "float",
        }
    );
    let e = config(model("gemma4", &[("{arch}.attention.head_count", Value::strings(["a"; 3]))]))
        .unwrap_err();
    assert_eq!(e.code(), "model::config::wrong_type");
    assert_eq!(e.key(), "gemma4.attention.head_count");
    let e =
        config(model("gemma4", &[("{arch}.attention.head_count", ints(&[8, -8, 8]))])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "metadata key \"gemma4.attention.head_count\"[1]: -8 is out of range (0 to 2^64 - 1)"
    );
}

#[test]
fn sliding_window_patterns_per_layer_or_period() {
    let bools = Value::array(ValueType::Bool, [true, true, false].map(Value::Bool).into());
    let key = "{arch}.attention.sliding_window_pattern";
    let c = config(model(
        "gemma4",
        &[(key, bools), ("{arch}.attention.sliding_window", Value::Uint32(512))],
    ))
    .unwrap();
    let p = c.sliding_window_pattern.unwrap();
    assert_eq!(p, SlidingWindowPattern::Layers(vec![true, true, false]));
    assert_eq!(
        (p.is_sliding(0), p.is_sliding(2), p.is_sliding(3)),
        (Some(true), Some(false), None)
    );
    assert_eq!(p.to_string(), "SSF");
    assert_eq!(c.sliding_window, Some(512));
    // A period (llama.cpp's set_swa_pattern): of every 6 layers the last is full attention.
    let c = config(model("gemma3", &[(key, Value::Uint32(6))])).unwrap();
    let p = c.sliding_window_pattern.unwrap();
    assert_eq!(
        (0..7).map(|l| p.is_sliding(l).unwrap()).collect::<Vec<_>>(),
        [true, true, true, true, true, false, true]
    );
    // The wrong length, the wrong type.
    let two = Value::array(ValueType::Bool, [true, false].map(Value::Bool).into());
    let e = config(model("gemma4", &[(key, two)])).unwrap_err();
    assert_eq!(e.code(), "model::config::per_layer_length");
    let e = config(model("gemma4", &[(key, Value::Float32(6.0))])).unwrap_err();
    assert_eq!(e.code(), "model::config::wrong_type");
    let e = config(model("gemma4", &[(key, ints(&[0, 1, 2]))])).unwrap_err();
    assert_eq!(e.code(), "model::config::out_of_range");
}

#[test]
fn the_lenient_reading_keeps_what_it_can_and_lists_every_problem() {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.block_count", Value::Uint32(2))
        .kv("llama.attention.head_count", Value::Float32(8.0))
        .kv("llama.rope.freq_base", Value::Float32(500000.0))
        .build();
    let m = open(bytes);
    let (c, problems) = ModelConfig::from_source_lenient(&m);
    assert_eq!(c.block_count, Some(2));
    assert_eq!(c.head_count, None);
    assert_eq!(c.rope.freq_base, Some(500000.0));
    let keys: Vec<(&str, &str)> = problems.iter().map(|e| (e.code(), e.key())).collect();
    assert_eq!(
        keys,
        [
            ("model::config::missing_key", "llama.context_length"),
            ("model::config::missing_key", "llama.embedding_length"),
            ("model::config::wrong_type", "llama.attention.head_count"),
        ]
    );
    // The strict reading fails on the first of them.
    assert_eq!(ModelConfig::from_source(&m).unwrap_err(), problems[0]);
    // No architecture at all: the generic fields, and that one problem.
    let m = open(GgufBuilder::new().kv("general.name", Value::str("x")).build());
    let (c, problems) = ModelConfig::from_source_lenient(&m);
    assert_eq!((c.architecture.as_str(), c.name.as_deref()), ("", Some("x")));
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].key(), "general.architecture");
}

#[test]
fn a_string_that_is_not_utf8_is_an_error_naming_the_key() {
    // Raw bytes where text belongs: only the lenient profile parses such a file.
    let bytes = model("llama", &[("general.name", Value::String(b"caf\xe9".to_vec()))]);
    let strict = Model::from_source(MemSource::new(bytes.clone()), &OpenOptions::default());
    assert!(strict.is_err(), "the strict profile refuses invalid UTF-8");
    let options = OpenOptions::default().with_profile(Profile::Lenient);
    let m = Model::from_source(MemSource::new(bytes), &options).expect("opens leniently");
    let e = ModelConfig::from_source(&m).unwrap_err();
    assert_eq!(e.code(), "model::config::invalid_utf8");
    assert_eq!(e, ConfigError::NotUtf8 { key: "general.name".into() });
    assert_eq!(e.key(), "general.name");
    assert_eq!(e.to_string(), "metadata key \"general.name\" is not valid UTF-8");
    assert!(e.help().contains("raw bytes"), "{}", e.help());
    // The lenient reading leaves the name out and keeps the rest.
    let (c, problems) = ModelConfig::from_source_lenient(&m);
    assert_eq!((c.name, c.block_count), (None, Some(3)));
    assert_eq!(problems, [e]);
}
