//! safetensors exports: the file read back by a parser written here from the format's
//! description, values against the read side's gguf-py-exact dequantization, rounding against
//! a brute-force nearest-even search, and transformers' names against llama.cpp's permutation
//! applied forwards.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use sipllm_edit::safetensors::{Dtype, ExportOptions, Exported, Names, export};
use sipllm_edit::safetensors::{MAX_HEADER, SafetensorsError};
use sipllm_gguf::{Endian, GgmlType, Profile};
use sipllm_streaming::{Model, OpenOptions, WeightSource};
use sipllm_testkit::{GgufBuilder, Tensor, Value};

use crate::support::{TempDir, shared_dir};

/// One tensor of a safetensors file.
#[derive(Debug)]
struct StTensor {
    dtype: String,
    shape: Vec<u64>,
    bytes: Vec<u8>,
}

/// Reads a safetensors file: header length, JSON, and each tensor's bytes, checking that the
/// data starts 8-aligned and the tensors tile it without gaps or overlaps.
fn read_st(path: &Path) -> (BTreeMap<String, StTensor>, BTreeMap<String, String>) {
    let file = std::fs::read(path).unwrap();
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    assert_eq!((8 + n) % 8, 0, "the data starts 8-aligned");
    let header: Json = serde_json::from_slice(&file[8..8 + n]).unwrap();
    let data = &file[8 + n..];
    let mut tensors = BTreeMap::new();
    let mut meta = BTreeMap::new();
    let mut spans = Vec::new();
    for (name, v) in header.as_object().unwrap() {
        if name == "__metadata__" {
            for (k, s) in v.as_object().unwrap() {
                meta.insert(k.clone(), s.as_str().expect("metadata values are strings").into());
            }
            continue;
        }
        let offs: Vec<u64> =
            v["data_offsets"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        spans.push((offs[0], offs[1]));
        tensors.insert(
            name.clone(),
            StTensor {
                dtype: v["dtype"].as_str().unwrap().into(),
                shape: v["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect(),
                bytes: data[offs[0] as usize..offs[1] as usize].to_vec(),
            },
        );
    }
    spans.sort_unstable();
    let mut at = 0;
    for (b, e) in spans {
        assert_eq!(b, at, "tensors tile the data");
        at = e;
    }
    assert_eq!(at as usize, data.len(), "the data ends with the last tensor");
    (tensors, meta)
}

fn export_to(model: &Path, out: &Path, dtype: Dtype, names: Names) -> Exported {
    let model = Model::open(model, &OpenOptions::default()).unwrap();
    let mut last = 0;
    let done = export(&model, out, &ExportOptions { dtype, names }, &mut |n| {
        assert!(n >= last, "progress only grows");
        last = n;
    })
    .unwrap();
    assert_eq!(last, done.data_bytes, "progress ends at the data size");
    done
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn f32_export_of_the_corpus_model_is_its_exact_values() {
    let Some(shared) = shared_dir("f32_export_of_the_corpus_model_is_its_exact_values") else {
        return;
    };
    let dir = shared.join("corpus/generated");
    let gguf = dir.join("tiny-llama.le.gguf");
    let tmp = TempDir::new("st-corpus");
    let out = tmp.join("m.safetensors");
    let done = export_to(&gguf, &out, Dtype::F32, Names::Gguf);
    let (tensors, meta) = read_st(&out);
    let model = Model::open(&gguf, &OpenOptions::default()).unwrap();
    let sums = std::fs::read_to_string(dir.join("tiny-llama.le.tensors.sha256")).unwrap();
    let mut checked = 0;
    for line in sums.lines() {
        let mut cols = line.split_whitespace();
        let (sum, _, name) = (cols.next().unwrap(), cols.next(), cols.next().unwrap());
        let info = model.find(name).unwrap();
        // The stored bytes are the reference's (sha256), and their values are the read
        // side's gguf-py-exact dequantization of exactly those bytes.
        let stored = model.read_tensor(name).unwrap();
        let hex: String = Sha256::digest(&stored).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, sum, "{name}");
        let mut values = vec![0f32; info.element_count().unwrap() as usize];
        sipllm_quants::dequantize(info.ggml_type, &stored, &mut values).unwrap();
        let t = &tensors[name];
        assert_eq!(t.dtype, "F32");
        assert_eq!(t.shape, info.shape.to_vec(), "{name}: row-major shape");
        assert_eq!(t.bytes, f32_bytes(&values), "{name}: the exact values, bit for bit");
        checked += 1;
    }
    assert_eq!(checked, model.tensors().len());
    assert_eq!(done.tensors, checked);
    assert_eq!(meta["format"], "pt");
    assert_eq!(meta["general.architecture"], "llama");
    assert!(!meta.contains_key("tokenizer.ggml.tokens"), "arrays are left out");
    assert!(done.keys_left_out > 0);
}

/// A one-tensor F32 model of `values`.
fn f32_model(path: &Path, values: &[f32]) {
    let b =
        GgufBuilder::new().kv("general.architecture", Value::str("llama")).tensor_info(Tensor {
            name: b"x".to_vec(),
            dims: vec![values.len() as u64],
            type_code: GgmlType::F32.code(),
            offset: None,
            n_dims: None,
            data: Some(f32_bytes(values)),
        });
    std::fs::write(path, b.build()).unwrap();
}

/// The nearest of `candidates` (bits, value; sorted by value) to `x`, a tie to the even bits;
/// what round-to-nearest-even means, by search.
fn nearest_even(x: f64, candidates: &[(u16, f64)]) -> u16 {
    let mut best = candidates[0];
    for &c in candidates {
        let (d, db) = ((c.1 - x).abs(), (best.1 - x).abs());
        if d < db || (d == db && c.0 & 1 == 0) {
            best = c;
        }
    }
    best.0
}

/// The value of half-precision bits, from the definition.
fn half_value(h: u16) -> f64 {
    let (e, m) = (i32::from((h >> 10) & 0x1F), f64::from(h & 0x3FF));
    if e == 0 { m * 2f64.powi(-24) } else { (1.0 + m / 1024.0) * 2f64.powi(e - 15) }
}

#[test]
fn f16_and_bf16_round_to_nearest_even_from_the_exact_values() {
    let tmp = TempDir::new("st-round");
    let src = tmp.join("m.gguf");
    let mut xs: Vec<f32> = vec![
        1.0 + 2f32.powi(-11),       // an f16 tie: to even (1.0)
        1.0 + 3.0 * 2f32.powi(-11), // an f16 tie: up to even
        f32::from_bits(0x3F80_8000),
        f32::from_bits(0x3F81_8000), // bf16 ties
        65519.0,
        0.1,
        -0.3,
        2f32.powi(-25) * 3.0, // f16 subnormal territory
        1e-9,
        3.4e38,
    ];
    let mut seed = 0x1234_5678u32;
    for _ in 0..500 {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        xs.push(f32::from_bits(seed & 0xBFFF_FFFF) % 70000.0);
    }
    xs.retain(|x| x.is_finite());
    f32_model(&src, &xs);
    // Every finite non-negative half and bfloat16, by value, and ∞ where IEEE 754 puts it
    // for rounding: at the next power of two (the exponent taken as unbounded), so a value
    // nearer that than the largest finite one overflows.
    let halves: Vec<(u16, f64)> =
        (0..0x7C00u16).map(|h| (h, half_value(h))).chain([(0x7C00, 2f64.powi(16))]).collect();
    let bf16s: Vec<(u16, f64)> = (0..0x7F80u16)
        .map(|h| (h, f64::from(f32::from_bits(u32::from(h) << 16))))
        .chain([(0x7F80, 2f64.powi(128))])
        .collect();
    for (dtype, name, table) in [(Dtype::F16, "F16", &halves), (Dtype::Bf16, "BF16", &bf16s)] {
        let out = tmp.join(&format!("{name}.safetensors"));
        export_to(&src, &out, dtype, Names::Gguf);
        let (tensors, _) = read_st(&out);
        let t = &tensors["x"];
        assert_eq!(t.dtype, name);
        let got: Vec<u16> =
            t.bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        for (x, g) in xs.iter().zip(&got) {
            let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
            let want = nearest_even(f64::from(x.abs()), table) | sign;
            assert_eq!(*g, want, "{name} of {x:e}");
        }
    }
}

#[test]
fn keep_writes_stored_floats_as_they_are_and_quants_as_f32() {
    let tmp = TempDir::new("st-keep");
    let src = tmp.join("m.gguf");
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("keep \"quoted\"\n"))
        .kv("llama.attention.layer_norm_rms_epsilon", Value::Float32(1e-5))
        .kv("x.flag", Value::Bool(true))
        .tensor("h", GgmlType::F16, &[32, 2])
        .tensor("q", GgmlType::Q8_0, &[64, 3])
        .tensor("i", GgmlType::I32, &[5]);
    std::fs::write(&src, b.build()).unwrap();
    let out = tmp.join("m.safetensors");
    let done = export_to(&src, &out, Dtype::Keep, Names::Gguf);
    assert_eq!(done.copied, 2, "the F16 and I32 tensors are copied");
    let (tensors, meta) = read_st(&out);
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    assert_eq!(tensors["h"].dtype, "F16");
    assert_eq!(tensors["h"].shape, [2, 32]);
    assert_eq!(tensors["h"].bytes, model.read_tensor("h").unwrap());
    assert_eq!(tensors["i"].dtype, "I32");
    assert_eq!(tensors["i"].bytes, model.read_tensor("i").unwrap());
    assert_eq!(tensors["q"].dtype, "F32");
    assert_eq!(tensors["q"].shape, [3, 64]);
    let q = model.find("q").unwrap();
    assert_eq!(tensors["q"].bytes, f32_bytes(&model.read_f32(q).unwrap()));
    assert_eq!(meta["general.name"], "keep \"quoted\"\n");
    assert_eq!(meta["llama.attention.layer_norm_rms_epsilon"], "0.00001");
    assert_eq!(meta["x.flag"], "true");
    // safetensors' order: 4-byte elements before 2-byte ones, each aligned to its size.
    let file = std::fs::read(&out).unwrap();
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let header: Json = serde_json::from_slice(&file[8..8 + n]).unwrap();
    assert!(header["h"]["data_offsets"][0].as_u64() > header["q"]["data_offsets"][0].as_u64());
    // An I32 tensor has no f32 values: refused by name, the destination untouched.
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    let err = export(
        &model,
        &tmp.join("no.safetensors"),
        &ExportOptions { dtype: Dtype::F32, names: Names::Gguf },
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!(err.code(), "edit::safetensors::no_values");
    assert!(err.to_string().contains("\"i\""), "{err}");
    assert!(!tmp.join("no.safetensors").exists());
    // The model's own file is never the output.
    let same = ExportOptions { dtype: Dtype::Keep, names: Names::Gguf };
    let err = export(&model, &src, &same, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "edit::write::output_is_input");
    assert!(Model::open(&src, &OpenOptions::default()).is_ok(), "the model is intact");
    assert_eq!(tmp.names(), ["m.gguf", "m.safetensors"], "no temporary left behind");
}

/// A deterministic f32 matrix: `rows × cols`, distinct values.
fn matrix(rows: usize, cols: usize, salt: f32) -> Vec<f32> {
    (0..rows * cols).map(|i| salt + i as f32 * 0.25).collect()
}

/// llama.cpp's `LlamaModel.permute`, forwards, as written there: the rows of each head
/// reshaped `(2, half)` and the two axes swapped.
fn llama_cpp_permute(w: &[f32], cols: usize, heads: usize) -> Vec<f32> {
    let rows = w.len() / cols;
    let half = rows / heads / 2;
    let mut out = vec![0f32; w.len()];
    for h in 0..heads {
        for a in 0..2 {
            for b in 0..half {
                // Element [h][a][b] of the (heads, 2, half) view goes to [h][b][a].
                let from = h * 2 * half + a * half + b;
                let to = h * 2 * half + b * 2 + a;
                out[to * cols..(to + 1) * cols].copy_from_slice(&w[from * cols..(from + 1) * cols]);
            }
        }
    }
    out
}

const EMBD: usize = 16;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HEAD_DIM: usize = 4;
const FF: usize = 32;
const VOCAB: usize = 10;

/// A one-block model of `arch` whose tensors hold known values; returns the transformers
/// tensors it must export to (name → shape, values).
fn hf_model(path: &Path, arch: &str, name: &str) -> BTreeMap<String, (Vec<u64>, Vec<f32>)> {
    let permuted = arch == "llama";
    let gemma = arch.starts_with("gemma");
    let phi3 = arch == "phi3";
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str(arch))
        .kv("general.name", Value::str(name))
        .kv(&format!("{arch}.block_count"), Value::Uint32(1))
        .kv(&format!("{arch}.embedding_length"), Value::Uint32(EMBD as u32))
        .kv(&format!("{arch}.feed_forward_length"), Value::Uint32(FF as u32))
        .kv(&format!("{arch}.context_length"), Value::Uint32(64))
        .kv(&format!("{arch}.attention.head_count"), Value::Uint32(HEADS as u32))
        .kv(&format!("{arch}.attention.head_count_kv"), Value::Uint32(KV_HEADS as u32))
        .kv(&format!("{arch}.attention.layer_norm_rms_epsilon"), Value::Float32(1e-6));
    let mut want = BTreeMap::new();
    let mut salt = 0.0;
    let mut add = |b: GgufBuilder, gguf: &str, hf: &str, rows: usize, cols: usize, heads: usize| {
        salt += 1000.0;
        let hf_values = matrix(rows, cols, salt);
        let norm = gguf.ends_with("norm.weight");
        // What llama.cpp's converter stores: Q/K permuted for llama, Gemma norms + 1.
        let stored = if permuted && heads > 0 {
            llama_cpp_permute(&hf_values, cols, heads)
        } else if gemma && norm {
            hf_values.iter().map(|v| v + 1.0).collect()
        } else {
            hf_values.clone()
        };
        // What transformers gets back: the stored value minus one for Gemma norms (in f32,
        // as transformers computes it).
        let back = if gemma && norm { stored.iter().map(|v| v - 1.0).collect() } else { hf_values };
        let shape = if cols == 1 { vec![rows as u64] } else { vec![rows as u64, cols as u64] };
        want.insert(hf.to_owned(), (shape, back));
        let dims = if cols == 1 { vec![rows as u64] } else { vec![cols as u64, rows as u64] };
        b.tensor_info(Tensor {
            name: gguf.as_bytes().to_vec(),
            dims,
            type_code: GgmlType::F32.code(),
            offset: None,
            n_dims: None,
            data: Some(f32_bytes(&stored)),
        })
    };
    let l = "model.layers.0";
    b = add(b, "token_embd.weight", "model.embed_tokens.weight", VOCAB, EMBD, 0);
    b = add(b, "blk.0.attn_norm.weight", &format!("{l}.input_layernorm.weight"), EMBD, 1, 0);
    if phi3 {
        let qkv = (HEADS + 2 * KV_HEADS) * HEAD_DIM;
        b = add(
            b,
            "blk.0.attn_qkv.weight",
            &format!("{l}.self_attn.qkv_proj.weight"),
            qkv,
            EMBD,
            0,
        );
        b = add(b, "blk.0.ffn_up.weight", &format!("{l}.mlp.gate_up_proj.weight"), 2 * FF, EMBD, 0);
    } else {
        let q = if permuted { HEADS } else { 0 };
        let k = if permuted { KV_HEADS } else { 0 };
        b = add(
            b,
            "blk.0.attn_q.weight",
            &format!("{l}.self_attn.q_proj.weight"),
            HEADS * HEAD_DIM,
            EMBD,
            q,
        );
        b = add(
            b,
            "blk.0.attn_k.weight",
            &format!("{l}.self_attn.k_proj.weight"),
            KV_HEADS * HEAD_DIM,
            EMBD,
            k,
        );
        b = add(
            b,
            "blk.0.attn_v.weight",
            &format!("{l}.self_attn.v_proj.weight"),
            KV_HEADS * HEAD_DIM,
            EMBD,
            0,
        );
        b = add(b, "blk.0.ffn_gate.weight", &format!("{l}.mlp.gate_proj.weight"), FF, EMBD, 0);
        b = add(b, "blk.0.ffn_up.weight", &format!("{l}.mlp.up_proj.weight"), FF, EMBD, 0);
    }
    if arch == "qwen2" {
        b = add(
            b,
            "blk.0.attn_q.bias",
            &format!("{l}.self_attn.q_proj.bias"),
            HEADS * HEAD_DIM,
            1,
            0,
        );
    }
    if arch == "qwen3" || arch == "gemma3" {
        b = add(
            b,
            "blk.0.attn_q_norm.weight",
            &format!("{l}.self_attn.q_norm.weight"),
            HEAD_DIM,
            1,
            0,
        );
        b = add(
            b,
            "blk.0.attn_k_norm.weight",
            &format!("{l}.self_attn.k_norm.weight"),
            HEAD_DIM,
            1,
            0,
        );
    }
    b = add(
        b,
        "blk.0.attn_output.weight",
        &format!("{l}.self_attn.o_proj.weight"),
        EMBD,
        HEADS * HEAD_DIM,
        0,
    );
    b = add(b, "blk.0.ffn_down.weight", &format!("{l}.mlp.down_proj.weight"), EMBD, FF, 0);
    if gemma {
        b = add(
            b,
            "blk.0.ffn_norm.weight",
            &format!("{l}.pre_feedforward_layernorm.weight"),
            EMBD,
            1,
            0,
        );
        b = add(
            b,
            "blk.0.post_attention_norm.weight",
            &format!("{l}.post_attention_layernorm.weight"),
            EMBD,
            1,
            0,
        );
        b = add(
            b,
            "blk.0.post_ffw_norm.weight",
            &format!("{l}.post_feedforward_layernorm.weight"),
            EMBD,
            1,
            0,
        );
    } else {
        b = add(
            b,
            "blk.0.ffn_norm.weight",
            &format!("{l}.post_attention_layernorm.weight"),
            EMBD,
            1,
            0,
        );
        b = add(b, "output.weight", "lm_head.weight", VOCAB, EMBD, 0);
    }
    b = add(b, "output_norm.weight", "model.norm.weight", EMBD, 1, 0);
    std::fs::write(path, b.build()).unwrap();
    want
}

#[test]
fn hf_names_shapes_and_unpermuted_qk_per_architecture() {
    let cases = [
        ("llama", "Llama mini", "llama"),
        ("llama", "Mistral-7B-mini", "mistral"),
        ("qwen2", "q2", "qwen2"),
        ("qwen3", "q3", "qwen3"),
        ("gemma2", "g2", "gemma2"),
        ("gemma3", "g3", "gemma3_text"),
        ("phi3", "p3", "phi3"),
    ];
    for (arch, name, model_type) in cases {
        let tmp = TempDir::new(&format!("st-hf-{model_type}"));
        let src = tmp.join("m.gguf");
        let want = hf_model(&src, arch, name);
        let out = tmp.join("model.safetensors");
        let done = export_to(&src, &out, Dtype::F32, Names::Hf);
        let (tensors, _) = read_st(&out);
        assert_eq!(
            tensors.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{model_type}: names"
        );
        for (hf, (shape, values)) in &want {
            let t = &tensors[hf];
            assert_eq!(&t.shape, shape, "{model_type} {hf}: shape");
            assert_eq!(f32s(&t.bytes), *values, "{model_type} {hf}: values");
        }
        let (path, mt) = done.config.unwrap();
        assert_eq!(mt, model_type);
        let config: Json = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(config["model_type"], model_type);
        assert_eq!(config["num_attention_heads"], HEADS);
        assert_eq!(config["num_key_value_heads"], KV_HEADS);
        assert_eq!(config["hidden_size"], EMBD);
        assert_eq!(config["intermediate_size"], FF);
        assert_eq!(config["num_hidden_layers"], 1);
        assert_eq!(config["vocab_size"], VOCAB);
        assert_eq!(config["tie_word_embeddings"], arch.starts_with("gemma"));
        assert_eq!(tmp.names(), ["config.json", "m.gguf", "model.safetensors"]);
    }
}

#[test]
fn hf_names_refuse_what_they_do_not_know() {
    let tmp = TempDir::new("st-hf-refuse");
    let src = tmp.join("m.gguf");
    let b = GgufBuilder::new().kv("general.architecture", Value::str("bert")).tensor(
        "token_embd.weight",
        GgmlType::F32,
        &[4, 2],
    );
    std::fs::write(&src, b.build()).unwrap();
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    let opts = ExportOptions { dtype: Dtype::F32, names: Names::Hf };
    let out = tmp.join("o.safetensors");
    let err = export(&model, &out, &opts, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "edit::safetensors::hf_architecture");
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.attention.head_count", Value::Uint32(3))
        .tensor("blk.0.attn_q.weight", GgmlType::F32, &[4, 4])
        .tensor("blk.0.mystery.weight", GgmlType::F32, &[4]);
    std::fs::write(&src, b.build()).unwrap();
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    let err = export(&model, &out, &opts, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "edit::safetensors::hf_heads", "4 rows do not split into 3 heads");
    assert!(!out.exists() && !tmp.join("config.json").exists());
    // With heads that split, the tensor no table names is the refusal, by name.
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.attention.head_count", Value::Uint32(2))
        .tensor("blk.0.attn_q.weight", GgmlType::F32, &[4, 4])
        .tensor("blk.0.mystery.weight", GgmlType::F32, &[4])
        .tensor("extra.weight", GgmlType::F32, &[4]);
    std::fs::write(&src, b.build()).unwrap();
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    let err = export(&model, &out, &opts, &mut |_| {}).unwrap_err();
    assert_eq!(err.code(), "edit::safetensors::hf_unknown_tensor");
    assert_eq!(
        err.to_string(),
        "llama tensors with no transformers name: blk.0.mystery.weight, extra.weight"
    );
    assert!(!out.exists() && !tmp.join("config.json").exists());
}

#[test]
fn a_big_endian_model_exports_as_its_little_endian_twin() {
    let Some(shared) = shared_dir("a_big_endian_model_exports_as_its_little_endian_twin") else {
        return;
    };
    let dir = shared.join("corpus/generated");
    let tmp = TempDir::new("st-endian");
    for dtype in [Dtype::F32, Dtype::Keep] {
        let (le, be) = (tmp.join("le.safetensors"), tmp.join("be.safetensors"));
        export_to(&dir.join("tiny-llama.le.gguf"), &le, dtype, Names::Gguf);
        export_to(&dir.join("tiny-llama.be.gguf"), &be, dtype, Names::Gguf);
        let ((a, _), (b, _)) = (read_st(&le), read_st(&be));
        for (name, t) in &a {
            assert_eq!(t.bytes, b[name].bytes, "{dtype:?} {name}");
        }
    }
}

fn refusal(src: &Path, options: &OpenOptions, dtype: Dtype) -> SafetensorsError {
    let model = Model::open(src, options).unwrap();
    let out = src.with_file_name("o.safetensors");
    let err = export(&model, &out, &ExportOptions { dtype, names: Names::Gguf }, &mut |_| {})
        .unwrap_err();
    assert!(!out.exists(), "{err}: nothing written");
    err
}

/// Tensor names the safetensors file cannot have: `__metadata__` (its metadata's key) and a
/// name twice (which only the lenient profile admits).
#[test]
fn names_the_file_cannot_hold_are_refused() {
    let tmp = TempDir::new("st-names");
    let src = tmp.join("m.gguf");
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("w", GgmlType::F32, &[4])
        .tensor("__metadata__", GgmlType::F32, &[4]);
    std::fs::write(&src, b.build()).unwrap();
    let err = refusal(&src, &OpenOptions::default(), Dtype::F32);
    assert!(matches!(err, SafetensorsError::ReservedName), "{err:?}");
    assert_eq!(err.code(), "edit::safetensors::reserved_name");
    assert_eq!(
        err.to_string(),
        "a tensor is named \"__metadata__\", which safetensors reserves for its metadata"
    );
    assert!(err.help().contains("--rename-tensor"), "{}", err.help());

    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("w", GgmlType::F32, &[4])
        .tensor("w", GgmlType::F32, &[8]);
    std::fs::write(&src, b.build()).unwrap();
    let lenient = OpenOptions::default().with_profile(Profile::Lenient);
    let err = refusal(&src, &lenient, Dtype::F32);
    assert_eq!(err.code(), "edit::safetensors::duplicate_name");
    assert_eq!(err.to_string(), "two tensors would both be named \"w\" in the safetensors file");
    assert_eq!(tmp.names(), ["m.gguf"]);
}

/// A big-endian integer tensor kept as stored would need its bytes swapped: refused (floats
/// are read as values, and converted).
#[test]
fn a_big_endian_integer_tensor_is_not_kept_as_stored() {
    let tmp = TempDir::new("st-be");
    let src = tmp.join("be.gguf");
    let b = GgufBuilder::new()
        .endian(Endian::Big)
        .kv("general.architecture", Value::str("llama"))
        .tensor("f", GgmlType::F32, &[4])
        .tensor("i", GgmlType::I32, &[4]);
    std::fs::write(&src, b.build()).unwrap();
    let err = refusal(&src, &OpenOptions::default(), Dtype::Keep);
    assert!(
        matches!(&err, SafetensorsError::BigEndian { tensor, ggml_type: GgmlType::I32 } if tensor == "i"),
        "{err:?}"
    );
    assert_eq!(err.code(), "edit::safetensors::big_endian");
    assert_eq!(
        err.to_string(),
        "tensor \"i\" (I32) is stored big-endian; safetensors is little-endian"
    );
    assert_eq!(tmp.names(), ["be.gguf"]);
}

/// Scalar metadata whose JSON is larger than safetensors' readers accept: a string of 17 MB
/// of control characters, each escaped as six (`\u0001`), makes a 102 MB header.
#[test]
fn a_header_larger_than_readers_accept_is_refused() {
    let tmp = TempDir::new("st-header");
    let src = tmp.join("m.gguf");
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("x.controls", Value::String(vec![1; 17_000_000]))
        .tensor("w", GgmlType::F32, &[4]);
    std::fs::write(&src, b.build()).unwrap();
    drop(b);
    let err = refusal(&src, &OpenOptions::default(), Dtype::F32);
    let SafetensorsError::HeaderTooLarge { bytes } = err else { panic!("{err:?}") };
    assert!(bytes >= 6 * 17_000_000, "every control character escaped: {bytes}");
    assert_eq!(MAX_HEADER, 100_000_000);
    assert_eq!(err.code(), "edit::safetensors::header_too_large");
    assert_eq!(
        err.to_string(),
        format!(
            "the safetensors header would be {bytes} bytes; readers refuse more than 100000000"
        )
    );
    assert_eq!(tmp.names(), ["m.gguf"]);
}

/// Another process makes the destination a directory while the data is written: the finished
/// temporary is not moved over it, and is removed.
#[test]
fn a_destination_taken_during_the_export_is_not_replaced() {
    let tmp = TempDir::new("st-commit");
    let src = tmp.join("m.gguf");
    f32_model(&src, &[1.0, 2.0, 3.0, 4.0]);
    let model = Model::open(&src, &OpenOptions::default()).unwrap();
    let out = tmp.join("m.safetensors");
    let mut take = |_: u64| {
        if !out.exists() {
            std::fs::create_dir(&out).unwrap();
        }
    };
    let err = export(&model, &out, &ExportOptions::default(), &mut take).unwrap_err();
    assert!(matches!(err, SafetensorsError::Commit { .. }), "{err:?}");
    assert_eq!(err.code(), "edit::safetensors::commit");
    assert_eq!(
        err.to_string(),
        "cannot move the new file into place: the destination exists and is not a regular file; \
         it is not replaced"
    );
    assert!(out.is_dir());
    assert_eq!(tmp.names(), ["m.gguf", "m.safetensors"], "no temporary left behind");
}
