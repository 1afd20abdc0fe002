//! The parser against the reference reader: every file of the corpus parses to exactly what
//! gguf-py 0.19.0 says in its `.expect.json` (every key, type and value; arrays by
//! `payload_sha256`, the canonical-JSON `sha256` where it is reproducible, and head/tail or the
//! full list; every tensor; the layout), or — for `.expect-error.json` — is rejected by the
//! strict profile with the matching error kind.

use serde_json::Value as Json;
use sipllm_gguf::{ErrorKind, Gguf, MetaValue, ParseOptions, Profile, ValueType, value::ArrayView};
use sipllm_tests::{Expected, sha256_hex as hex_sha256};

fn opts_for(bytes: &[u8]) -> ParseOptions {
    ParseOptions::default().with_file_size(Some(bytes.len() as u64))
}

/// A scalar (or array element) as the expectation encodes it.
fn check_scalar(ctx: &str, v: &MetaValue<'_>, expect: &Json) {
    match v {
        MetaValue::Float32(_) | MetaValue::Float64(_) => {
            let got = v.as_f64().unwrap();
            match expect {
                Json::String(s) => {
                    let ok = match s.as_str() {
                        "NaN" => got.is_nan(),
                        "Infinity" => got == f64::INFINITY,
                        "-Infinity" => got == f64::NEG_INFINITY,
                        _ => false,
                    };
                    assert!(ok, "{ctx}: {got} vs {s}");
                }
                // JSON holds the shortest repr of the widened f32, which parses back exactly.
                _ => assert_eq!(Some(got), expect.as_f64(), "{ctx}"),
            }
        }
        MetaValue::Bool(b) => assert_eq!(Some(*b), expect.as_bool(), "{ctx}"),
        MetaValue::String(s) => match s.as_str() {
            Some(s) => assert_eq!(Some(s), expect.as_str(), "{ctx}"),
            None => {
                let hex: String = s.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
                assert_eq!(Some(hex.as_str()), expect["bytes_hex"].as_str(), "{ctx}");
            }
        },
        MetaValue::Array(_) => panic!("{ctx}: nested arrays do not occur in the corpus"),
        int => {
            let got = int.as_i128().unwrap();
            let want = expect
                .as_i64()
                .map(i128::from)
                .or(expect.as_u64().map(i128::from))
                .unwrap_or_else(|| panic!("{ctx}: expected an integer, got {expect}"));
            assert_eq!(got, want, "{ctx}");
        }
    }
}

fn check_array(ctx: &str, a: &ArrayView<'_>, m: &Json) {
    assert_eq!(a.elem_type().name(), m["array_type"].as_str().unwrap(), "{ctx}: array_type");
    assert_eq!(a.len(), m["len"].as_u64().unwrap(), "{ctx}: len");
    assert_eq!(hex_sha256(a.payload()), m["payload_sha256"].as_str().unwrap(), "{ctx}: payload");
    let elems: Vec<MetaValue<'_>> = a.iter().collect();
    assert_eq!(elems.len() as u64, a.len(), "{ctx}: iterated element count");
    match &m["value"] {
        Json::Array(list) => {
            assert_eq!(list.len(), elems.len(), "{ctx}");
            for (i, (v, e)) in elems.iter().zip(list).enumerate() {
                check_scalar(&format!("{ctx}[{i}]"), v, e);
            }
        }
        _ => {
            let head = m["head"].as_array().unwrap();
            let tail = m["tail"].as_array().unwrap();
            for (i, e) in head.iter().enumerate() {
                check_scalar(&format!("{ctx}[{i}]"), &elems[i], e);
            }
            let base = elems.len() - tail.len();
            for (i, e) in tail.iter().enumerate() {
                check_scalar(&format!("{ctx}[{}]", base + i), &elems[base + i], e);
            }
        }
    }
    // The canonical-JSON hash is exactly serde_json's output for string, integer and bool
    // lists (float text is Python's repr, so floats rely on payload_sha256 above).
    let canonical = match a.elem_type() {
        ValueType::String => Some(
            serde_json::to_string(
                &a.strings().unwrap().map(|s| s.as_str().unwrap()).collect::<Vec<_>>(),
            )
            .unwrap(),
        ),
        ValueType::Bool => Some(serde_json::to_string(&a.to_vec::<bool>().unwrap()).unwrap()),
        ValueType::Float32 | ValueType::Float64 | ValueType::Array => None,
        _ => Some(
            serde_json::to_string(
                &elems.iter().map(|v| v.as_i128().unwrap().to_string()).collect::<Vec<_>>(),
            )
            .unwrap()
            .replace('"', ""),
        ),
    };
    if let Some(json) = canonical {
        assert_eq!(hex_sha256(json.as_bytes()), m["sha256"].as_str().unwrap(), "{ctx}: sha256");
    }
}

fn check_expect(name: &str, gguf: &Gguf<&[u8]>, expect: &Json) {
    let h = gguf.header();
    assert_eq!(u64::from(h.version), expect["version"].as_u64().unwrap(), "{name}: version");
    assert_eq!(h.tensor_count, expect["tensor_count"].as_u64().unwrap(), "{name}");
    assert_eq!(h.kv_count, expect["kv_count"].as_u64().unwrap(), "{name}");
    assert_eq!(u64::from(gguf.alignment()), expect["alignment"].as_u64().unwrap(), "{name}");
    assert_eq!(gguf.data_offset(), expect["data_offset"].as_u64().unwrap(), "{name}");

    let metadata = expect["metadata"].as_array().unwrap();
    assert_eq!(gguf.kv_len(), metadata.len(), "{name}: metadata count");
    for (entry, m) in gguf.metadata().zip(metadata) {
        let key = entry.key.as_str().expect("keys are UTF-8");
        let ctx = format!("{name}: metadata[{}] {key:?}", entry.index);
        assert_eq!(key, m["key"].as_str().unwrap(), "{ctx}: key");
        assert_eq!(entry.value.value_type().name(), m["type"].as_str().unwrap(), "{ctx}: type");
        match &entry.value {
            MetaValue::Array(a) => check_array(&ctx, a, m),
            v => check_scalar(&ctx, v, &m["value"]),
        }
        // Lookup by key finds this very entry.
        assert_eq!(gguf.get_entry(key).map(|e| e.index), Some(entry.index), "{ctx}: lookup");
    }

    let tensors = expect["tensors"].as_array().unwrap();
    assert_eq!(gguf.tensor_infos().len(), tensors.len(), "{name}: tensor count");
    for (t, e) in gguf.tensors().zip(tensors) {
        let ctx = format!("{name}: tensor[{}]", t.index);
        assert_eq!(t.name.as_str(), e["name"].as_str(), "{ctx}: name");
        assert_eq!(t.info.ggml_type().name(), e["ggml_type"].as_str().unwrap(), "{ctx}: type");
        let shape: Vec<u64> =
            e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        assert_eq!(t.info.dims(), shape.as_slice(), "{ctx}: dims (GGUF order)");
        assert_eq!(t.info.offset(), e["offset"].as_u64().unwrap(), "{ctx}: offset");
        assert_eq!(t.info.nbytes(), e["nbytes"].as_u64(), "{ctx}: nbytes");
        assert_eq!(t.info.abs_offset(), gguf.data_offset() + t.info.offset(), "{ctx}");
        assert_eq!(gguf.tensor(t.name.as_str().unwrap()).map(|r| r.index), Some(t.index));
    }
}

/// The error kind gguf-py's message corresponds to.
fn expected_kind(message: &str) -> fn(&ErrorKind) -> bool {
    if message.contains("Duplicate") {
        |k| matches!(k, ErrorKind::DuplicateKey { .. })
    } else if message.contains("magic invalid") {
        |k| matches!(k, ErrorKind::BadMagic { .. })
    } else if message.contains("version 1") {
        |k| matches!(k, ErrorKind::VersionOneDisabled)
    } else if message.contains("not a valid GGUFValueType") {
        |k| matches!(k, ErrorKind::UnknownValueType { .. })
    } else {
        panic!("no error kind known for gguf-py message {message:?}")
    }
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn every_corpus_file_matches_the_reference_reader() {
    let mut checked = 0;
    for file in sipllm_tests::all() {
        let name = file.path.display().to_string();
        let bytes = file.bytes();
        let result = sipllm_gguf::parse_with(&bytes[..], &opts_for(&bytes));
        match &file.expected {
            Expected::Parse(expect) => {
                let gguf = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                check_expect(&name, &gguf, expect);
                assert!(gguf.warnings().is_empty(), "{name}: {:?}", gguf.warnings());
            }
            Expected::Error(message) => {
                let err = result.err().unwrap_or_else(|| panic!("{name}: parsed, {message}"));
                assert!(expected_kind(message)(err.kind()), "{name}: {err} vs {message}");
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 12 + 9 + 3, "corpus file count changed");
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn rejected_historic_files_fail_where_the_reference_says() {
    let corpus = sipllm_tests::dir();
    let dir = corpus.join("real-historic");
    let parse = |file: &str| {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        sipllm_gguf::parse_with(&bytes[..], &opts_for(&bytes)).map(|_| ()).unwrap_err()
    };
    let e = parse("test_writer.2024-02-06.gguf");
    assert_eq!(*e.kind(), ErrorKind::UnknownValueType { code: 13 });
    assert_eq!(e.offset(), 204, "the README says the type word is at byte 204");
    assert_eq!(e.path().to_string(), "metadata[6] \"dict1\" type");

    let e = parse("ggml-vocab-dbrx.2024-05-07.gguf");
    assert_eq!(*e.kind(), ErrorKind::DuplicateKey { first: 10 });
    assert_eq!(e.path().to_string(), "metadata[14] \"general.file_type\" key");
    assert_eq!(e.code(), "gguf::metadata::duplicate_key");

    let e = parse("ggml-vocab-llama.2023-08-17.fugg-magic.gguf");
    assert_eq!((e.kind().clone(), e.offset()), (ErrorKind::BadMagic { found: *b"FUGG" }, 0));
    assert!(e.help().contains("pre-release"), "FUGG gets its own hint");
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn v1_files_parse_when_enabled() {
    let corpus = sipllm_tests::dir();
    let dir = corpus.join("real-historic");
    for (file, kv_count) in
        [("ggml-vocab-llama.2023-08-18.v1.gguf", 12), ("ggml-vocab-llama.2023-08-19.v1.gguf", 13)]
    {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let opts = opts_for(&bytes).with_v1(true);
        let gguf = sipllm_gguf::parse_with(&bytes[..], &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(gguf.version(), 1);
        assert_eq!(gguf.header().kv_count, kv_count);
        assert_eq!(gguf.header().tensor_count, 0);
        // The README's raw walk: the header ends exactly at the end of the file.
        assert_eq!(gguf.directory().directory_end(), bytes.len() as u64, "{file}");
        let tokens = gguf.get_array("tokenizer.ggml.tokens").unwrap();
        assert_eq!(tokens.len(), 32_000);
        assert_eq!(tokens.strings().unwrap().count(), 32_000);
        assert_eq!(gguf.get_str("general.architecture"), Some("llama"));
        // llama.cpp rejects v1 even when the caller would allow it.
        let llama = opts.with_profile(Profile::LlamaCpp);
        let err = sipllm_gguf::parse_with(&bytes[..], &llama).unwrap_err();
        assert_eq!(*err.kind(), ErrorKind::VersionOneDisabled);
    }
    // The pre-release FUGG file is v1 inside, but its magic is still wrong.
    let bytes = std::fs::read(dir.join("ggml-vocab-llama.2023-08-17.fugg-magic.gguf")).unwrap();
    let err = sipllm_gguf::parse_with(&bytes[..], &opts_for(&bytes).with_v1(true)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::BadMagic { .. }));
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn big_endian_twins_decode_to_the_same_values() {
    let corpus = sipllm_tests::dir();
    let le = std::fs::read(corpus.join("real/ggml-vocab-phi-3.gguf")).unwrap();
    let be = std::fs::read(corpus.join("generated/ggml-vocab-phi-3.be.gguf")).unwrap();
    let le = sipllm_gguf::parse(&le).unwrap();
    let be = sipllm_gguf::parse(&be).unwrap();
    assert_eq!(be.endian(), sipllm_gguf::Endian::Big);
    assert_eq!(le.kv_len(), be.kv_len());
    for (a, b) in le.metadata().zip(be.metadata()) {
        assert_eq!(a.key, b.key);
        match (a.value, b.value) {
            (MetaValue::Array(x), MetaValue::Array(y)) => {
                assert!(x.iter().eq(y.iter()), "{}", a.key);
            }
            (x, y) => assert_eq!(x, y, "{}", a.key),
        }
    }
    // llama.cpp cannot load a big-endian file on a little-endian host.
    let bytes = std::fs::read(corpus.join("generated/ggml-vocab-phi-3.be.gguf")).unwrap();
    let llama = opts_for(&bytes).with_profile(Profile::LlamaCpp);
    let err = sipllm_gguf::parse_with(&bytes[..], &llama).unwrap_err();
    assert_eq!(*err.kind(), ErrorKind::EndianMismatch { version: 0x0300_0000 });
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn profiles_agree_on_clean_files_and_differ_on_the_duplicate() {
    let corpus = sipllm_tests::dir();
    for path in sipllm_tests::files_in(&["real"]).map(|f| &f.path) {
        let bytes = std::fs::read(path).unwrap();
        let strict = sipllm_gguf::parse_with(&bytes[..], &opts_for(&bytes)).unwrap();
        for profile in [Profile::LlamaCpp, Profile::Lenient] {
            let other =
                sipllm_gguf::parse_with(&bytes[..], &opts_for(&bytes).with_profile(profile))
                    .unwrap_or_else(|e| panic!("{}: {profile:?}: {e}", path.display()));
            if profile == Profile::LlamaCpp && strict.tensor_infos().is_empty() {
                // Without tensors, current ggml does not pad the data section's start (the
                // other profiles report gguf-py's padded offset): only that differs.
                let dir = other.directory();
                assert_eq!(other.data_offset(), dir.directory_end(), "{}", path.display());
                assert!(strict.data_offset() >= dir.directory_end(), "{}", path.display());
                assert!(strict.metadata().map(|e| e.kv).eq(other.metadata().map(|e| e.kv)));
                assert_eq!(strict.warnings(), other.warnings(), "{}", path.display());
            } else {
                assert_eq!(strict, other, "{}: {profile:?}", path.display());
            }
        }
    }
    // A real converter's output with a duplicate key: lenient keeps the last, and says so.
    let bytes =
        std::fs::read(corpus.join("real-historic/ggml-vocab-dbrx.2024-05-07.gguf")).unwrap();
    let lenient = opts_for(&bytes).with_profile(Profile::Lenient);
    let gguf = sipllm_gguf::parse_with(&bytes[..], &lenient).unwrap();
    assert_eq!(gguf.kv_len(), 25);
    assert_eq!(gguf.get_entry("general.file_type").unwrap().index, 14);
    let codes: Vec<&str> = gguf.warnings().iter().map(|w| w.code()).collect();
    assert_eq!(codes, ["gguf::metadata::duplicate_key"]);
    assert_eq!(gguf.warnings()[0].offset(), 569);
}
