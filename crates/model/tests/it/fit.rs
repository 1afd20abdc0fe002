//! `fit` against llama.cpp's own allocator: the goldens of `goldens/llamacpp/` (the
//! Llama-3-8B-shaped file in 54 configurations, and 128 architectures at n_ctx 256), read
//! header-only.

use std::path::Path;

use crate::common::shared_dir;
use serde_json::Value as Json;
use sipllm_gguf::{GgmlType, Profile};
use sipllm_model::config::ModelConfig;
use sipllm_model::fit::{self, Device, FitError, FitParams, FlashAttn, Weight};
use sipllm_streaming::{Backend, FileBacking, MemSource, OpenOptions, read_header};

/// The configuration and tensor sizes of a header-only GGUF file.
fn header(path: &Path) -> (ModelConfig, Vec<(String, u64)>) {
    let backing = FileBacking::open(path, Backend::Pread).expect("opens");
    let options = OpenOptions::default().with_profile(Profile::Lenient);
    let (gguf, _) = read_header(&backing, Some(path), &options).expect("parses");
    fit::from_gguf_header(&gguf).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn weights(list: &[(String, u64)]) -> Vec<Weight<'_>> {
    list.iter().map(|(n, b)| Weight { name: n, nbytes: *b }).collect()
}

fn ty(name: &str) -> GgmlType {
    GgmlType::from_name(name).expect("a ggml type")
}

fn llama3_header() -> (ModelConfig, Vec<(String, u64)>) {
    let mut bytes = sipllm_testkit::llama3::builder(1).build_header();
    bytes.resize(bytes.len().div_ceil(32) * 32, 0); // the padding up to the data section
    let options = OpenOptions::default().with_profile(Profile::Lenient);
    let (gguf, _) = read_header(&MemSource::new(bytes), None, &options).expect("parses");
    fit::from_gguf_header(&gguf).expect("config")
}

#[test]
fn llama3_like_kv_and_compute_match_llama_cpp() {
    let Some(shared) = shared_dir("llama3_like_kv_and_compute_match_llama_cpp") else { return };
    let doc: Json = serde_json::from_str(
        &std::fs::read_to_string(shared.join("goldens/llamacpp/llama3-like.json")).unwrap(),
    )
    .unwrap();
    let (config, list) = llama3_header();
    let w = weights(&list);
    let (mut loaded, mut refused) = (0, 0);
    for e in doc.as_array().unwrap() {
        let mut p = FitParams::libllama();
        p.n_ctx = e["n_ctx"].as_u64().unwrap() as u32;
        p.type_k = ty(e["type_k"].as_str().unwrap());
        p.type_v = ty(e["type_v"].as_str().unwrap());
        p.flash_attn = if e["fa"] == 1 { FlashAttn::On } else { FlashAttn::Off };
        p.n_seq_max = e["n_seq"].as_u64().unwrap() as u32;
        p.kv_unified = e["kv_unified"] == 1;
        let got = fit::fit(&config, &w, &p);
        let what = format!("{e}");
        if e.get("error").is_some() {
            assert!(matches!(got, Err(FitError::NeedsFlashAttn { .. })), "{what}: {got:?}");
            refused += 1;
            continue;
        }
        let got = got.unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_eq!(got.kv_bytes, e["kv"].as_u64().unwrap(), "{what}");
        assert_eq!(u64::from(got.resolved.n_ctx), e["n_ctx_eff"].as_u64().unwrap(), "{what}");
        let want = e["compute"].as_u64().unwrap();
        let have = got.compute_bytes(Device::Cpu);
        assert_eq!(got.model_bytes, e["model_bytes"].as_u64().unwrap(), "{what}");
        let tolerance = (want / 100).max(16 << 20);
        assert!(have.abs_diff(want) <= tolerance, "{what}: compute {have} vs {want}");
        loaded += 1;
    }
    assert_eq!((loaded, refused), (36, 18));
}

#[test]
fn every_architecture_is_exact_or_refused() {
    let Some(shared) = shared_dir("every_architecture_is_exact_or_refused") else { return };
    let dir = shared.join("goldens/llamacpp");
    let doc: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("archs.json")).unwrap()).unwrap();
    let (mut exact, mut unsupported, mut wrong) = (Vec::new(), Vec::new(), Vec::new());
    for e in doc.as_array().unwrap() {
        let file = e["file"].as_str().unwrap();
        let (config, list) = header(&dir.join("archs").join(file));
        let w = weights(&list);
        // archs.json: f16 K and V, flash attention on, one sequence, n_ubatch 512, and (as its
        // constant parts show) sliding-window caches of the window's size.
        let mut p = FitParams::libllama();
        p.flash_attn = FlashAttn::On;
        p.swa_full = false;
        let at = |n_ctx: u32| {
            let mut p = p.clone();
            p.n_ctx = n_ctx;
            fit::fit(&config, &w, &p).map(|f| f.kv_bytes + f.recurrent_bytes)
        };
        match (at(1024), at(2048)) {
            (Ok(a), Ok(b)) => {
                let per_token = (b - a) as f64 / 1024.0;
                let constant = a as f64 - per_token * 1024.0;
                let want_pt = e["kv_bytes_per_token_f16"].as_f64().unwrap();
                let want_c = e["kv_constant_bytes"].as_f64().unwrap();
                let b256 = &e["load_n_ctx_256"]["bufs"][0];
                let p256 = {
                    let mut q = p.clone();
                    q.n_ctx = 256;
                    q
                };
                let f256 = fit::fit(&config, &w, &p256).unwrap();
                let ctx256 = f256.kv_bytes + f256.recurrent_bytes;
                // The model bytes: every tensor padded to the CPU buffer's 32-byte alignment.
                if per_token == want_pt
                    && constant == want_c
                    && ctx256 == b256["context"].as_u64().unwrap()
                    && f256.model_bytes == b256["model"].as_u64().unwrap()
                {
                    exact.push(file);
                } else {
                    wrong.push(format!(
                        "{file}: per token {per_token} vs {want_pt}, constant {constant} vs \
                         {want_c}, ctx256 {ctx256} vs {}, model bytes {} vs {}",
                        b256["context"], f256.model_bytes, b256["model"]
                    ));
                }
            }
            (Err(FitError::UnsupportedArch { .. }), _) => unsupported.push(file),
            (Err(e), _) | (_, Err(e)) => wrong.push(format!("{file}: {e}")),
        }
    }
    eprintln!("exact {}, unsupported {}: {unsupported:?}", exact.len(), unsupported.len());
    assert!(wrong.is_empty(), "{} silently wrong:\n{}", wrong.len(), wrong.join("\n"));
    assert!(exact.len() >= 93, "only {} exact", exact.len());
}

#[test]
fn hostile_parameters_are_errors_not_panics() {
    let (config, list) = llama3_header();
    let w = weights(&list);
    let mut seen_ok = 0;
    for n_ctx in [0, 1, 255, 257, 1 << 20, u32::MAX - 1, u32::MAX] {
        for n_seq_max in [0, 1, 3, 256, 257, u32::MAX] {
            for (n_batch, n_ubatch) in [(0, 0), (0, 512), (1, 0), (u32::MAX, u32::MAX)] {
                for ngl in [0, 1, 33, u32::MAX] {
                    let mut p = FitParams::server();
                    (p.n_ctx, p.n_seq_max, p.n_batch, p.n_ubatch, p.n_gpu_layers) =
                        (n_ctx, n_seq_max, n_batch, n_ubatch, ngl);
                    p.kv_unified = n_seq_max % 2 == 0;
                    p.type_k = GgmlType::Q4_0;
                    if let Ok(f) = fit::fit(&config, &w, &p) {
                        seen_ok += 1;
                        assert!(f.total_bytes() >= f.kv_bytes, "{p:?}");
                        assert_eq!(f.resolved.n_ctx % 256, 0, "{p:?}");
                    }
                }
            }
        }
    }
    assert!(seen_ok > 0);
    // A budget search over the largest contexts ends, and monotonically.
    let p = FitParams::libllama();
    let small = fit::max_context(&config, &w, &p, 6 << 30).unwrap().unwrap();
    let large = fit::max_context(&config, &w, &p, 600 << 30).unwrap().unwrap();
    assert!(small.resolved.n_ctx < large.resolved.n_ctx);
    assert!(fit::max_context(&config, &w, &p, u64::MAX).unwrap().is_some());
    assert!(fit::max_context(&config, &w, &p, 1 << 20).unwrap().is_none());
}

#[test]
fn unknown_architectures_and_impossible_block_counts_are_refused() {
    let (mut config, list) = llama3_header();
    let w = weights(&list);
    let p = FitParams::libllama();
    config.architecture = "llama9".into();
    assert!(matches!(fit::fit(&config, &w, &p), Err(FitError::UnsupportedArch { .. })));
    config.architecture = "llama".into();
    for bad in [0, 513, u64::MAX] {
        config.block_count = Some(bad);
        let e = fit::fit(&config, &w, &p).unwrap_err();
        assert_eq!(e.code(), "model::fit::hyperparameter", "{bad}: {e}");
    }
}

#[test]
fn refused_parameters_cache_types_and_overflows_are_typed() {
    let (config, list) = llama3_header();
    let w = weights(&list);
    assert!(fit::fit(&config, &w, &FitParams::libllama()).is_ok());

    // Parameters llama.cpp's context refuses.
    let mut p = FitParams::libllama();
    p.n_seq_max = fit::MAX_SEQ + 1;
    let e = fit::fit(&config, &w, &p).unwrap_err();
    assert_eq!(e.code(), "model::fit::param");
    assert_eq!(e.to_string(), format!("n_seq_max: must be <= {}", fit::MAX_SEQ));
    p.n_seq_max = fit::MAX_SEQ;
    assert!(fit::fit(&config, &w, &p).is_ok());
    let mut p = FitParams::libllama();
    (p.n_batch, p.n_ubatch) = (0, 0);
    let e = fit::fit(&config, &w, &p).unwrap_err();
    assert!(matches!(e, FitError::Param { param: "n_batch", .. }), "{e:?}");
    // A cache type -ctk does not offer (q4_K is a ggml type, not a cache type).
    let e = fit::cache_type("q4_K").unwrap_err();
    assert_eq!(e.code(), "model::fit::param");
    assert!(e.to_string().starts_with("cache type: unsupported cache type \"q4_K\""), "{e}");
    assert_eq!(fit::cache_type("Q8_0").unwrap(), GgmlType::Q8_0);

    // A head of 100 elements: q8_0's blocks of 32 do not divide it.
    let mut odd = config.clone();
    odd.key_length = Some(100);
    let mut p = FitParams::libllama();
    p.flash_attn = FlashAttn::On;
    p.type_k = GgmlType::Q8_0;
    let e = fit::fit(&odd, &w, &p).unwrap_err();
    assert_eq!(e.code(), "model::fit::cache_type");
    assert_eq!(e, FitError::CacheType { which: "K", ty: GgmlType::Q8_0, row: 100, layer: 0 });
    assert!(e.to_string().contains("does not divide a row of 100 elements (layer 0)"), "{e}");
    // Without flash attention the K rows are whole layers' (100 × 8 KV heads): q8_0 divides
    // 800, q4_K's blocks of 256 do not.
    p.flash_attn = FlashAttn::Off;
    assert!(fit::fit(&odd, &w, &p).is_ok());
    p.type_k = GgmlType::Q4_K;
    let e = fit::fit(&odd, &w, &p).unwrap_err();
    assert_eq!(e, FitError::CacheType { which: "K", ty: GgmlType::Q4_K, row: 800, layer: 0 });
    // The 128-element heads of the model itself take q8_0.
    p.type_k = GgmlType::Q8_0;
    p.flash_attn = FlashAttn::On;
    assert!(fit::fit(&config, &w, &p).is_ok());

    // Sizes past 64 bits: a head no machine holds, a weight of 2^64 - 1 bytes.
    let mut huge = config.clone();
    huge.key_length = Some(u64::MAX);
    let e = fit::fit(&huge, &w, &FitParams::libllama()).unwrap_err();
    assert_eq!(e.code(), "model::fit::overflow");
    assert_eq!(e.to_string(), "a memory size overflows 64 bits");
    let mut heavy = list.clone();
    heavy[0].1 = u64::MAX;
    let e = fit::fit(&config, &weights(&heavy), &FitParams::libllama()).unwrap_err();
    assert_eq!((e.code(), e), ("model::fit::overflow", FitError::Overflow));
}

#[test]
fn sliding_window_caches_follow_swa_full() {
    let Some(shared) = shared_dir("sliding_window_caches_follow_swa_full") else { return };
    let (config, list) = header(&shared.join("goldens/llamacpp/archs/gemma3-dense.gguf"));
    let w = weights(&list);
    let mut p = FitParams::libllama();
    p.n_ctx = 8192;
    let full = fit::fit(&config, &w, &p).unwrap();
    p.swa_full = false;
    let windowed = fit::fit(&config, &w, &p).unwrap();
    assert!(windowed.kv_bytes < full.kv_bytes);
    // llama_kv_cache_iswa: GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256) cells.
    let window = config.sliding_window.unwrap();
    let want = (window + 512).div_ceil(256) * 256;
    assert_eq!(windowed.resolved.swa_cells.map(u64::from), Some(want.min(8192)));
    assert_eq!(full.resolved.swa_cells, Some(8192));
}
