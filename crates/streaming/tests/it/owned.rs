//! `OwnedStrs`: a vocabulary in one struct with its source, O(1) lookups equal to the list's.

use sipllm_edit::toy;
use sipllm_streaming::{GgufFile, MemSource, Model, OpenOptions, OwnedStrs};
use sipllm_testkit::{GgufBuilder, Value};

/// A struct holding the vocabulary next to (inside) its source: what E0597/E0505 forbid with a
/// borrowed view. `'static + Send + Sync`, so it can live in an engine and cross threads.
struct Engine {
    vocab: OwnedStrs,
}

fn assert_send_sync_static<T: Send + Sync + 'static>(_: &T) {}

#[test]
fn get_equals_the_lists_elements_and_the_source_stays_usable() {
    let tokens: Vec<String> =
        (0..5000).map(|i| if i % 7 == 0 { format!("é{i}") } else { format!("t{i}") }).collect();
    let bytes = GgufBuilder::new()
        .kv("tokenizer.ggml.tokens", Value::strings(&tokens))
        .kv("general.name", Value::str("x"))
        .build();
    let file = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap();
    let engine = Engine { vocab: OwnedStrs::new(file, "tokenizer.ggml.tokens").unwrap() };
    assert_send_sync_static(&engine);
    let v = &engine.vocab;
    assert_eq!(v.len(), 5000);
    assert!(format!("{v:?}").contains("indexed: true"));
    for (i, t) in tokens.iter().enumerate() {
        assert_eq!(v.get_str(i), Some(t.as_str()), "{i}");
    }
    assert_eq!(v.get(5000), None);
    assert!(v.list().iter().eq(tokens.iter().map(|t| sipllm_streaming::MetaStr::from(t.as_str()))));
    assert_eq!(v.source().meta_str("general.name").unwrap(), "x");
    assert_eq!(v.key(), "tokenizer.ggml.tokens");
    // The wrong key or type is the seam's typed error.
    let file = v.source().meta_strs("tokenizer.ggml.tokens").map(|l| l.len()).unwrap();
    assert_eq!(file, 5000);
    let boxed = engine.vocab.into_source();
    let e = OwnedStrs::from_boxed(boxed, "general.name").unwrap_err();
    assert_eq!(e.code(), "streaming::meta::type_mismatch");
}

#[test]
fn llmw_and_corpus_vocabularies_index_exactly() {
    let dir = std::env::temp_dir().join(format!("sipllm-owned-{}", std::process::id()));
    let files = toy::write_toy(1, &dir).unwrap();
    for path in [&files.gguf, &files.llmw] {
        let model = Model::open(path, &OpenOptions::default()).unwrap();
        let v = OwnedStrs::new(model, "tokenizer.ggml.tokens").unwrap();
        assert!(format!("{v:?}").contains("indexed: true"), "{}", path.display());
        let all: Vec<_> = v.list().iter().collect();
        assert_eq!(all.len(), v.len());
        for (i, t) in all.iter().enumerate() {
            assert_eq!(v.get(i), Some(*t));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let Some(shared) = crate::common::shared_dir("llmw_and_corpus_vocabularies_index_exactly")
    else {
        return;
    };
    for name in ["ggml-vocab-llama-spm", "ggml-vocab-gpt-2"] {
        let path = shared.join(format!("corpus/real/{name}.gguf"));
        let model = Model::open(&path, &OpenOptions::default()).unwrap();
        let v = OwnedStrs::new(model, "tokenizer.ggml.tokens").unwrap();
        let list = v.list();
        assert!(v.len() > 30_000);
        for (i, t) in list.iter().enumerate() {
            assert_eq!(v.get(i), Some(t), "{name}[{i}]");
        }
        // The big-endian copy too (its strings' lengths are stored byte-swapped).
    }
    let be = shared.join("corpus/generated/ggml-vocab-phi-3.be.gguf");
    let v =
        OwnedStrs::new(Model::open(&be, &OpenOptions::default()).unwrap(), "tokenizer.ggml.tokens")
            .unwrap();
    for (i, t) in v.list().iter().enumerate() {
        assert_eq!(v.get(i), Some(t), "be[{i}]");
    }
}
