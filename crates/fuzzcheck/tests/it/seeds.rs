//! The seed corpora in `fuzz/seeds/<target>/`, made reproducibly.
//!
//! `SIPLLM_WRITE_SEEDS=1 cargo test -p sipllm-fuzzcheck --test it seeds` (re)writes them: files
//! made with the GGUF test builder and the `.llmw` `LlmwWriter` (valid files of every shape,
//! and one malformed file per common mistake so the fuzzer starts on the error paths), the
//! bundled sample, and the first 4 KiB of a few `../shared/corpus` files. Without the variable
//! the test checks that the committed seeds are exactly what this file makes.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use sipllm_fuzzcheck::Schedule;
use sipllm_gguf::{Endian, GgmlType, ValueType};
use sipllm_llmw::LlmwWriter;
use sipllm_testkit::{GgufBuilder, Tensor, Value};

use crate::support::{files_in, fuzz_dir, say_skipped, shared_dir};

/// Where a seed comes from: made here (always reproducible) or cut from `../shared`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Made,
    Corpus,
}

type Seeds = BTreeMap<String, (Origin, Vec<u8>)>;

fn scalars() -> Vec<(&'static str, Value)> {
    vec![
        ("test.u8", Value::Uint8(200)),
        ("test.i8", Value::Int8(-7)),
        ("test.u16", Value::Uint16(65_000)),
        ("test.i16", Value::Int16(-30_000)),
        ("test.u32", Value::Uint32(4_000_000_000)),
        ("test.i32", Value::Int32(-2_000_000_000)),
        ("test.f32", Value::Float32(1.5)),
        ("test.bool", Value::Bool(true)),
        ("test.string", Value::str("héllo ✓")),
        ("test.u64", Value::Uint64(u64::MAX)),
        ("test.i64", Value::Int64(i64::MIN)),
        ("test.f64", Value::Float64(f64::NAN)),
    ]
}

fn with_scalars(mut b: GgufBuilder) -> GgufBuilder {
    b = b.kv("general.architecture", Value::str("llama"));
    for (k, v) in scalars() {
        b = b.kv(k, v);
    }
    b
}

fn small_tensors(b: GgufBuilder) -> GgufBuilder {
    b.tensor("token_embd.weight", GgmlType::F32, &[4, 3])
        .tensor("blk.0.attn_q.weight", GgmlType::Q8_0, &[32, 2])
        .tensor("output_norm.weight", GgmlType::F16, &[8])
}

fn gguf_made() -> Vec<(&'static str, Vec<u8>)> {
    let every_array = || {
        let mut b = GgufBuilder::new();
        for (k, v) in scalars() {
            let ty = ValueType::from_code(v.type_code()).unwrap();
            b = b.kv(&format!("{k}_array"), Value::array(ty, vec![v.clone(), v]));
        }
        b.kv(
            "test.nested",
            Value::array(
                ValueType::Array,
                vec![
                    Value::array(
                        ValueType::Array,
                        vec![Value::array(
                            ValueType::Uint8,
                            vec![Value::Uint8(1), Value::Uint8(2)],
                        )],
                    ),
                    Value::array(ValueType::Array, vec![Value::strings(["a", "bc"])]),
                    Value::array(ValueType::Array, vec![]),
                ],
            ),
        )
        .kv("test.empty_strings", Value::strings(Vec::<String>::new()))
    };
    let deep = |levels: usize| {
        let mut v = Value::array(ValueType::Int32, vec![Value::Int32(-1)]);
        for _ in 1..levels {
            v = Value::array(ValueType::Array, vec![v]);
        }
        GgufBuilder::new().kv("test.deep", v).build()
    };
    let vocab: Vec<String> = (0..48).map(|i| format!("tok{i}")).collect();
    let full = small_tensors(with_scalars(GgufBuilder::new()));
    let mut truncated = full.build();
    let last = sipllm_gguf::parse(&truncated).unwrap().tensor_infos().last().unwrap().abs_offset();
    truncated.truncate(last as usize + 1);
    let tensor = |name: &str, dims: Vec<u64>, type_code: u32, offset: Option<u64>| Tensor {
        name: name.as_bytes().to_vec(),
        dims,
        type_code,
        offset,
        n_dims: None,
        data: None,
    };
    vec![
        ("scalars.le.gguf", with_scalars(GgufBuilder::new()).build()),
        ("scalars.be.gguf", with_scalars(GgufBuilder::new().endian(Endian::Big)).build()),
        ("tensors.le.gguf", full.build()),
        (
            "tensors.be.gguf",
            small_tensors(with_scalars(GgufBuilder::new().endian(Endian::Big))).build(),
        ),
        ("v2.gguf", small_tensors(GgufBuilder::new().version(2)).build()),
        (
            "v1.gguf",
            GgufBuilder::new()
                .version(1)
                .kv("general.name", Value::str("v1"))
                .kv("test.u32", Value::Uint32(7))
                .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>"]))
                .tensor("w", GgmlType::F32, &[2, 2])
                .build(),
        ),
        ("arrays.gguf", every_array().build()),
        ("arrays.be.gguf", every_array().endian(Endian::Big).build()),
        ("nesting-8.gguf", deep(8)),
        ("nesting-9-over-limit.gguf", deep(9)),
        (
            "vocab.gguf",
            GgufBuilder::new()
                .kv("tokenizer.ggml.model", Value::str("gpt2"))
                .kv("tokenizer.ggml.tokens", Value::strings(&vocab))
                .kv(
                    "tokenizer.ggml.scores",
                    Value::array(
                        ValueType::Float32,
                        (0..48).map(|i| Value::Float32(i as f32)).collect(),
                    ),
                )
                .kv(
                    "tokenizer.ggml.token_type",
                    Value::array(ValueType::Int32, (0..48).map(|i| Value::Int32(i % 6)).collect()),
                )
                .kv("tokenizer.ggml.merges", Value::strings(["t o", "to k"]))
                .build(),
        ),
        (
            "alignment-64.gguf",
            small_tensors(GgufBuilder::new().kv("general.alignment", Value::Uint32(64)))
                .tensor("scalar", GgmlType::F32, &[])
                .tensor("blk.0.ffn.weight", GgmlType::Q4_K, &[256])
                .tensor("blk.0.bf16", GgmlType::BF16, &[2, 2, 2])
                .tensor("blk.0.i32", GgmlType::I32, &[1, 1, 1, 3])
                .build(),
        ),
        (
            "alignment-8.gguf",
            small_tensors(GgufBuilder::new().kv("general.alignment", Value::Uint32(8))).build(),
        ),
        ("header-only.gguf", full.clone().with_data(false).build()),
        ("truncated-data.gguf", truncated),
        // One malformed file per common mistake, so fuzzing starts on the error paths.
        ("bad-magic-fugg.gguf", GgufBuilder::new().magic(*b"FUGG").build()),
        ("bad-version-4.gguf", GgufBuilder::new().version(4).build()),
        ("bad-utf8-key.gguf", GgufBuilder::new().kv_bytes(b"bad\xffkey", Value::Uint8(1)).build()),
        (
            "bool-byte-2.gguf",
            GgufBuilder::new().kv("b", Value::Raw { type_code: 7, bytes: vec![2] }).build(),
        ),
        (
            "duplicate-key.gguf",
            GgufBuilder::new().kv("a.b", Value::Uint32(1)).kv("a.b", Value::Uint32(2)).build(),
        ),
        (
            "unknown-value-type-13.gguf",
            GgufBuilder::new().kv("x", Value::Raw { type_code: 13, bytes: vec![0; 8] }).build(),
        ),
        (
            "huge-array-count.gguf",
            GgufBuilder::new()
                .kv(
                    "x",
                    Value::ArrayWithLen {
                        elem_type: 0,
                        declared: 1 << 40,
                        elems: vec![Value::Uint8(1); 4],
                    },
                )
                .build(),
        ),
        (
            "huge-string-len.gguf",
            GgufBuilder::new()
                .kv("x", Value::StringWithLen { declared: u64::MAX / 2, bytes: b"abc".to_vec() })
                .build(),
        ),
        (
            "huge-kv-count.gguf",
            GgufBuilder::new().kv_count(u64::MAX).kv("x", Value::Uint8(1)).build(),
        ),
        (
            "alignment-not-pow2.gguf",
            small_tensors(
                GgufBuilder::new().kv("general.alignment", Value::Uint32(24)).layout_alignment(32),
            )
            .build(),
        ),
        (
            "alignment-wrong-type.gguf",
            GgufBuilder::new().kv("general.alignment", Value::Uint64(32)).build(),
        ),
        ("zero-dim.gguf", GgufBuilder::new().tensor_info(tensor("z", vec![0, 4], 0, None)).build()),
        (
            "five-dims.gguf",
            GgufBuilder::new().tensor_info(tensor("d", vec![1, 1, 1, 1, 1], 0, None)).build(),
        ),
        (
            "overflow-dims.gguf",
            GgufBuilder::new().tensor_info(tensor("o", vec![1 << 32, 1 << 32], 0, Some(0))).build(),
        ),
        (
            "unknown-ggml-type.gguf",
            GgufBuilder::new().tensor_info(tensor("u", vec![4], 99, Some(0))).build(),
        ),
        (
            "removed-ggml-type.gguf",
            GgufBuilder::new().tensor_info(tensor("r", vec![32], 4, Some(0))).build(),
        ),
        (
            "not-block-multiple.gguf",
            GgufBuilder::new().tensor_info(tensor("q", vec![31], 8, Some(0))).build(),
        ),
        (
            "misaligned-offset.gguf",
            GgufBuilder::new().tensor_info(tensor("m", vec![4], 0, Some(1))).build(),
        ),
        (
            "overlapping-tensors.gguf",
            GgufBuilder::new()
                .tensor_info(tensor("a", vec![8], 0, Some(0)))
                .tensor_info(tensor("b", vec![8], 0, Some(0)))
                .build(),
        ),
        (
            "gap-between-tensors.gguf",
            GgufBuilder::new()
                .tensor_info(tensor("a", vec![8], 0, Some(0)))
                .tensor_info(tensor("b", vec![8], 0, Some(128)))
                .build(),
        ),
        (
            "name-64-bytes.gguf",
            GgufBuilder::new().tensor(&"n".repeat(64), GgmlType::F32, &[1]).build(),
        ),
        (
            "duplicate-tensor.gguf",
            GgufBuilder::new()
                .tensor("t", GgmlType::F32, &[1])
                .tensor("t", GgmlType::F32, &[1])
                .build(),
        ),
        ("nonzero-padding.gguf", small_tensors(GgufBuilder::new()).pad_byte(0xee).build()),
        ("escape-in-key.gguf", GgufBuilder::new().kv("a\x1b[2Jb\u{202e}", Value::Uint8(1)).build()),
    ]
}

/// `.llmw` files: valid ones from `LlmwWriter`, and byte-patched copies.
fn llmw_made() -> Vec<(&'static str, Vec<u8>)> {
    let f32_data: Vec<u8> = (0..48).collect();
    let q8_data = vec![7u8; 34 * 2];
    let f16_data = vec![1u8; 2 * 2 * 2 * 2 * 2];
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.architecture", "toy").unwrap();
    w.add_meta_i64("toy.context_length", -128).unwrap();
    w.add_meta_f64("toy.rope_theta", f64::NAN).unwrap();
    w.add_meta_str("toy.note", "héllo ✓").unwrap();
    w.add_tensor("embd", GgmlType::F32, &[3, 4], &f32_data).unwrap();
    let v1 = w.to_vec().unwrap();

    let vocab: Vec<String> = (0..40).map(|i| format!("tok{i}")).collect();
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.architecture", "toy").unwrap();
    w.add_meta_strs("tokenizer.tokens", &vocab).unwrap();
    w.add_meta_i64s("toy.layers", [1, -2, i64::MAX]).unwrap();
    w.add_meta_f64s("tokenizer.scores", (0..40).map(f64::from)).unwrap();
    w.add_meta_strs("toy.empty", Vec::<String>::new()).unwrap();
    w.add_tensor("embd", GgmlType::F32, &[4, 3], &f32_data).unwrap();
    w.add_tensor("blk.0.q", GgmlType::Q8_0, &[2, 32], &q8_data).unwrap();
    w.add_tensor("blk.0.norm", GgmlType::F16, &[2, 2, 2, 2], &f16_data).unwrap();
    let v2 = w.to_vec().unwrap();

    let mut meta_only = LlmwWriter::new();
    meta_only.add_meta_i64s("x", [1]).unwrap();
    let meta_only = meta_only.to_vec().unwrap();

    let patched = |at: usize, bytes: &[u8]| {
        let mut b = v2.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let parsed = sipllm_llmw::parse(&v2).unwrap();
    let t1 = parsed.tensor_infos()[1].span();
    let offset_field = (t1.end() - 16) as usize;
    let dim_field = (t1.end() - 16 - 16) as usize;
    vec![
        ("v1.llmw", v1.clone()),
        ("v2.llmw", v2.clone()),
        ("empty.llmw", LlmwWriter::new().to_vec().unwrap()),
        ("meta-only.llmw", meta_only),
        ("truncated-header.llmw", v2[..v2.len() / 3].to_vec()),
        ("truncated-data.llmw", v2[..v2.len() - 3].to_vec()),
        ("bad-version.llmw", patched(4, &9u32.to_le_bytes())),
        ("huge-meta-count.llmw", patched(12, &u32::MAX.to_le_bytes())),
        ("misaligned-offset.llmw", patched(offset_field, &(v2.len() as u64 - 67).to_le_bytes())),
        ("zero-dim.llmw", patched(dim_field, &0u64.to_le_bytes())),
    ]
}

fn schedules() -> [Vec<usize>; 5] {
    [vec![], vec![0], vec![3, 0, 7], vec![1, 4096], vec![64]]
}

/// Every seed, by `<target>/<name>`.
fn all_seeds() -> Seeds {
    let mut seeds = Seeds::new();
    let mut put = |target: &str, name: &str, origin: Origin, bytes: Vec<u8>| {
        seeds.insert(format!("{target}/{name}"), (origin, bytes));
    };
    let mut gguf =
        gguf_made().into_iter().map(|(n, b)| (n.to_string(), Origin::Made, b)).collect::<Vec<_>>();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/tiny-llama.gguf");
    let sample = fs::read(&sample).unwrap_or_else(|e| panic!("{}: {e}", sample.display()));
    gguf.push(("sample-tiny-llama.gguf".into(), Origin::Made, sample));
    if let Some(shared) = shared_dir() {
        for (rel, len) in [
            ("real/ggml-vocab-llama-spm.gguf", 4096),
            ("real/ggml-vocab-bert-bge.gguf", 4096),
            // Long enough for the decoder's string-array fast path (a 4 KiB window on).
            ("real/ggml-vocab-gpt-2.gguf", 16384),
            ("real-historic/ggml-vocab-llama.2023-08-18.v1.gguf", 4096),
            ("real-historic/ggml-vocab-llama.2023-08-17.fugg-magic.gguf", 1024),
            ("real-historic/test_writer.2024-02-06.gguf", 4096),
            ("generated/ggml-vocab-phi-3.be.gguf", 4096),
            ("generated/tiny-llama.be.gguf", 8192),
        ] {
            let path = shared.join("corpus").join(rel);
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let stem = Path::new(rel).file_stem().unwrap().to_string_lossy().into_owned();
            let head = bytes[..bytes.len().min(len)].to_vec();
            let suffix = if head.len() < bytes.len() {
                format!("head{}k", len / 1024)
            } else {
                "whole".into()
            };
            gguf.push((format!("corpus-{stem}.{suffix}.gguf"), Origin::Corpus, head));
        }
    }
    let llmw = llmw_made();
    for (name, origin, bytes) in &gguf {
        put("parse_slice", name, *origin, bytes.clone());
        put("roundtrip", name, *origin, bytes.clone());
        let has_tensors = sipllm_gguf::parse(bytes).is_ok_and(|g| !g.tensor_infos().is_empty());
        if has_tensors || name.starts_with("truncated") {
            put("weight_source", name, *origin, bytes.clone());
        }
    }
    let schedules = schedules();
    let both = gguf
        .iter()
        .map(|(n, o, b)| (n.as_str(), *o, b))
        .chain(llmw.iter().map(|(n, b)| (*n, Origin::Made, b)));
    for (name, origin, bytes) in both {
        // The schedule depends on the name only, so seeds do not change with ../shared.
        let pick = name.bytes().map(usize::from).sum::<usize>();
        let sched = &schedules[pick % schedules.len()];
        let mut input = Schedule::encode(sched);
        input.extend_from_slice(bytes);
        put("chunk_independent", name, origin, input);
    }
    for (name, bytes) in &llmw {
        put("llmw_parse", name, Origin::Made, bytes.clone());
        put("weight_source", name, Origin::Made, bytes.clone());
    }
    for (name, bytes) in string_array_made() {
        put("string_array", name, Origin::Made, bytes);
    }
    for (name, bytes) in dequantize_made() {
        put("dequantize", &name, Origin::Made, bytes);
    }
    seeds
}

/// `dequantize` inputs: type byte, mode byte, two shape bytes, data. Per supported type: two
/// blocks of patterned bytes with the exact output length, and a 3-row tensor through the
/// seam; plus each error: a partial block, a wrong output length, an unsupported type.
fn dequantize_made() -> Vec<(String, Vec<u8>)> {
    let pattern = |n: usize| (0..n).map(|i| (i * 37 + 11) as u8).collect::<Vec<u8>>();
    let mut out = Vec::new();
    for ty in sipllm_quants::SUPPORTED {
        let (_, size) = sipllm_quants::block_layout(ty).unwrap();
        let code = ty.code() as u8;
        let name = ty.name().to_ascii_lowercase();
        out.push((format!("{name}.slice"), [&[code, 0, 0, 0][..], &pattern(2 * size)].concat()));
        out.push((format!("{name}.seam"), [&[code, 4, 1, 3][..], &pattern(size)].concat()));
    }
    out.push(("q8_0.partial-block".into(), [&[8, 0, 0, 0][..], &pattern(40)].concat()));
    out.push(("q4_k.output-one-more".into(), [&[12, 1, 0, 0][..], &pattern(144)].concat()));
    out.push(("i32.unsupported".into(), [&[26, 0, 0, 0][..], &pattern(16)].concat()));
    out.push(("q8_1.unsupported-seam".into(), [&[9, 4, 0, 2][..], &pattern(36)].concat()));
    out.push(("unknown-45".into(), [&[45, 0, 0, 0][..], &pattern(8)].concat()));
    out
}

/// `string_array` inputs: a flags byte (bit 0 big-endian, bits 1-3 filler units, bit 4 long
/// enough to span many of the fast path's 64 KiB windows), then strings as a length byte and
/// the bytes.
fn string_array_made() -> Vec<(&'static str, Vec<u8>)> {
    let input = |flags: u8, strings: &[&[u8]]| {
        let mut out = vec![flags];
        for s in strings {
            out.push(s.len() as u8);
            out.extend_from_slice(s);
        }
        out
    };
    let long = |n: usize| vec![b'x'; n];
    let (l126, l127, l128, l130, l150, l255) =
        (long(126), long(127), long(128), long(130), long(150), long(255));
    let vocab: &[&[u8]] = &[b"a", "Ġthe".as_bytes(), "é".as_bytes(), "ż€😀".as_bytes(), b""];
    let around_127: &[&[u8]] = &[b"ab", &l126, &l127, &l128, b"cd", &l130, &l255];
    vec![
        ("vocab.le", input(0, vocab)),
        ("vocab.be", input(1, vocab)),
        ("around-127.le", input(2, around_127)),
        ("around-127.be", input(3, around_127)),
        // An invalid string deep in the array, after 3 filler units.
        ("invalid-late.le", input(6, &[b"ok", b"ab\xFFcd", b"fine"])),
        // A string ending in a lead byte, then a long one whose little-endian length field
        // starts with a continuation byte (150 = 0x96): one character if read together.
        ("lead-before-continuation-length.le", input(4, &[b"ok", b"ab\xC3", &l150])),
        // Strings holding what looks like a length field (5, then seven zero bytes).
        (
            "fake-length-fields.le",
            input(0, &[b"\x05\0\0\0\0\0\0\0abc", b"q", b"\x7f\0\0\0\0\0\0\0"]),
        ),
        // Big-endian, a length field ending in its low byte, 195 = 0xC3 (a lead byte), then a
        // string starting with a continuation byte: "é" if read together.
        (
            "length-completes-first-char.be",
            input(1, &[b"ok", &[&[0xA9][..], &[b'x'; 194]].concat()]),
        ),
        // Long arrays, across many of the fast path's windows: mixed widths and long strings,
        // and an invalid string after 7 filler units.
        ("helper-vocab.le", input(0x10, around_127)),
        ("helper-vocab.be", input(0x11, vocab)),
        ("helper-invalid-late.le", input(0x1E, &[b"ok", &l130, b"ab\xE2\x82", b"fine"])),
    ]
}

#[test]
fn seeds_are_reproducible() {
    let seeds = all_seeds();
    let have_shared = shared_dir().is_some();
    let root = fuzz_dir().join("seeds");
    let targets: Vec<&str> = sipllm_fuzzcheck::TARGETS.iter().map(|(t, _)| *t).collect();
    let total: usize = seeds.values().map(|(_, b)| b.len()).sum();
    assert!(total < 512 << 10, "the seeds total {total} bytes; keep them small");
    if std::env::var_os("SIPLLM_WRITE_SEEDS").is_some() {
        assert!(have_shared, "SIPLLM_WRITE_SEEDS needs ../shared/corpus for the corpus seeds");
        for t in &targets {
            let dir = root.join(t);
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
        }
        for (key, (_, bytes)) in &seeds {
            fs::write(root.join(key), bytes).unwrap();
        }
        eprintln!("wrote {} seeds ({total} bytes) under {}", seeds.len(), root.display());
        return;
    }
    if !have_shared {
        say_skipped("the corpus-derived seeds are not compared");
    }
    let mut committed = 0;
    for t in &targets {
        for (name, bytes) in files_in(&root.join(t)) {
            let key = format!("{t}/{name}");
            committed += 1;
            match seeds.get(&key) {
                Some((_, made)) => assert!(
                    *made == bytes,
                    "fuzz/seeds/{key} differs from what tests/it/seeds.rs makes: \
                     SIPLLM_WRITE_SEEDS=1 cargo test -p sipllm-fuzzcheck --test it seeds"
                ),
                None => assert!(
                    !have_shared && name.starts_with("corpus-"),
                    "fuzz/seeds/{key} is not made by tests/it/seeds.rs (stale? regenerate)"
                ),
            }
        }
    }
    for (key, (origin, _)) in &seeds {
        let present = root.join(key).is_file();
        assert!(
            present || (*origin == Origin::Corpus && !have_shared),
            "fuzz/seeds/{key} is missing: SIPLLM_WRITE_SEEDS=1 cargo test -p sipllm-fuzzcheck --test it seeds"
        );
    }
    eprintln!("{committed} committed seeds match tests/it/seeds.rs");
}

/// The seeds mean what their names say (so a builder change cannot silently turn the error
/// seeds into valid files, or the valid ones into errors).
#[test]
fn seeds_parse_as_named() {
    for (name, bytes) in gguf_made() {
        let r = sipllm_gguf::parse_with(
            &bytes[..],
            &sipllm_gguf::ParseOptions::default()
                .with_v1(true)
                .with_file_size(Some(bytes.len() as u64)),
        );
        let valid = [
            "scalars",
            "tensors",
            "v2",
            "v1",
            "arrays",
            "nesting-8",
            "vocab",
            "alignment-64",
            "alignment-8",
            "gap-between",
            "name-64",
            "nonzero-padding",
            "escape-in-key",
        ];
        let should_parse = valid.iter().any(|v| name.starts_with(v));
        assert_eq!(r.is_ok(), should_parse, "{name}: {:?}", r.err());
    }
    for (name, bytes) in llmw_made() {
        let r = sipllm_llmw::parse(&bytes);
        let should_parse = ["v1", "v2", "empty", "meta-only"].iter().any(|v| name.starts_with(v));
        assert_eq!(r.is_ok(), should_parse, "{name}: {:?}", r.err());
    }
}
