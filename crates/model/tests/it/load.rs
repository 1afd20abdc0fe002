//! The load check against llama.cpp's own verdicts (`shared/goldens/llamacpp/load/`,
//! `archs/`): every file, the verdict equal to llama.cpp's, per class.
//!
//! The golden files are header-only. llama.cpp judged them extended to `full_size` with zeros
//! (a sparse tail), so the test serves each as such a source (`ZeroPadded`): the container
//! check of the tensor data's bounds then passes as it did for llama.cpp, and the model check
//! sees exactly the file llama.cpp saw.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use sipllm_gguf::Profile;
use sipllm_model::load::{self, Issue};
use sipllm_streaming::{Model, OpenOptions, ZeroPadded};

use crate::common::shared_dir;

/// The verdict: Ok(report) when the container opens, Err(code) when it does not.
fn judge(path: &Path, full_size: u64) -> Result<load::LoadReport, String> {
    let header = std::fs::read(path).unwrap();
    let mut options = OpenOptions::default();
    options.parse.profile = Profile::LlamaCpp;
    options.parse.limits = sipllm_gguf::Limits::for_profile(Profile::LlamaCpp);
    match Model::from_source(ZeroPadded::new(header, full_size), &options) {
        Ok(model) => Ok(load::check(&model)),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Default, Debug)]
struct Confusion {
    /// llama.cpp loads, we say loads.
    both_load: usize,
    /// llama.cpp refuses, we refuse.
    both_refuse: usize,
    /// llama.cpp loads, we refuse (a false alarm).
    false_refusal: usize,
    /// llama.cpp refuses, we say it loads (the error that must not happen).
    false_load: usize,
    /// llama.cpp crashes, we say it crashes.
    crash_named: usize,
    /// llama.cpp crashes.
    crashes: usize,
}

#[test]
fn every_golden_file_gets_llama_cpp_s_verdict() {
    let Some(shared) = shared_dir("every_golden_file_gets_llama_cpp_s_verdict") else { return };
    let dir = shared.join("goldens/llamacpp");
    if !dir.join("load/verdicts.json").is_file() {
        assert!(!sipllm_testkit::corpus::required(), "{} has no goldens", dir.display());
        eprintln!("*** SKIPPED: no goldens/llamacpp/load beside the checkout ***");
        return;
    }
    let verdicts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("load/verdicts.json")).unwrap())
            .unwrap();
    let archs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("archs.json")).unwrap()).unwrap();

    let mut cases: Vec<(String, std::path::PathBuf, u64, bool, bool, String)> = Vec::new();
    for v in verdicts.as_array().unwrap() {
        let file = v["file"].as_str().unwrap();
        cases.push((
            v["class"].as_str().unwrap().to_owned(),
            dir.join("load").join(file),
            v["full_size"].as_u64().unwrap(),
            v["ok"].as_bool().unwrap(),
            v["crash"].as_bool().unwrap_or(false),
            v["error"].as_str().unwrap_or("").to_owned(),
        ));
    }
    for a in archs.as_array().unwrap() {
        let file = a["file"].as_str().unwrap();
        cases.push((
            "unmodified".into(),
            dir.join("archs").join(file),
            a["full_size"].as_u64().unwrap(),
            true,
            false,
            String::new(),
        ));
    }

    let mut by_class: BTreeMap<String, Confusion> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (class, path, full, ok, crash, error) in &cases {
        let c = by_class.entry(class.clone()).or_default();
        let (loads, crashes, said) = match judge(path, *full) {
            Ok(report) => {
                let said = report
                    .findings
                    .iter()
                    .map(|f| format!("{}: {}", f.code(), f))
                    .collect::<Vec<_>>()
                    .join(" | ");
                (report.loads(), report.crashes(), said)
            }
            Err(e) => (false, false, e),
        };
        match (ok, loads) {
            (true, true) => c.both_load += 1,
            (false, false) => c.both_refuse += 1,
            (true, false) => c.false_refusal += 1,
            (false, true) => c.false_load += 1,
        }
        if *crash {
            c.crashes += 1;
            if crashes {
                c.crash_named += 1;
            }
        }
        if *ok != loads {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            wrong.push(format!(
                "{name}: llama.cpp {} ({error}); we: {said}",
                if *ok { "loads" } else { "refuses" }
            ));
        }
    }
    eprintln!("class: both load / both refuse / false refusal / false load / crashes named");
    for (class, c) in &by_class {
        eprintln!(
            "{class}: {} / {} / {} / {} / {} of {}",
            c.both_load, c.both_refuse, c.false_refusal, c.false_load, c.crash_named, c.crashes
        );
    }
    for w in &wrong {
        eprintln!("{w}");
    }
    let false_loads: usize = by_class.values().map(|c| c.false_load).sum();
    let false_refusals: usize = by_class.values().map(|c| c.false_refusal).sum();
    assert_eq!(false_loads, 0, "files llama.cpp refuses called loadable");
    assert_eq!(false_refusals, 0, "files llama.cpp loads called refused");
    let crashes: usize = by_class.values().map(|c| c.crashes).sum();
    let named: usize = by_class.values().map(|c| c.crash_named).sum();
    assert_eq!(named, crashes, "every crash named model::load::llama_cpp_crashes or block_count");
    assert_eq!(cases.len(), 776 + 128);
}

#[test]
fn a_non_gguf_model_is_not_for_llama_cpp() {
    let toy = sipllm_edit::toy::ToyConfig::default().build().unwrap().llmw_bytes().unwrap();
    let model =
        Model::from_source(sipllm_streaming::MemSource::new(toy), &OpenOptions::default()).unwrap();
    let report = load::check(&model);
    assert!(!report.loads());
    assert!(matches!(report.findings[0].kind(), Issue::NotGguf));
}

/// The Llama-3-8B-shaped header (the testkit's, as the converter writes it), with `edit`
/// applied to its metadata and tensors, judged as if its data were there.
fn llama3_like(
    edit: impl FnOnce(&mut Vec<(Vec<u8>, sipllm_testkit::Value)>, &mut Vec<sipllm_testkit::Tensor>),
) -> load::LoadReport {
    let base = sipllm_testkit::llama3::builder(8);
    let mut kvs = base.kvs().to_vec();
    let mut tensors = base.tensors().to_vec();
    edit(&mut kvs, &mut tensors);
    let mut b = sipllm_testkit::GgufBuilder::new();
    for (k, v) in kvs {
        b = b.kv_bytes(&k, v);
    }
    for t in tensors {
        b = b.tensor_info(t);
    }
    let header = b.build_header();
    // The data section is ~4.6 GB: a source of zeros past the header stands in for it.
    let sizes: u64 = 8 << 30;
    let model =
        Model::from_source(ZeroPadded::new(header, sizes), &OpenOptions::default()).unwrap();
    load::check(&model)
}

fn codes(report: &load::LoadReport) -> Vec<&'static str> {
    report.findings.iter().map(|f| f.code()).collect()
}

fn set(kvs: &mut [(Vec<u8>, sipllm_testkit::Value)], key: &str, v: sipllm_testkit::Value) {
    let slot = kvs.iter_mut().find(|(k, _)| k == key.as_bytes()).unwrap();
    slot.1 = v;
}

#[test]
fn the_llama3_shaped_header_loads() {
    let report = llama3_like(|_, _| {});
    assert!(report.loads(), "{:?}", codes(&report));
    assert!(report.tensors_checked);
    assert_eq!(report.arch.as_deref(), Some("llama"));
}

#[test]
fn an_unknown_architecture_is_named() {
    let report = llama3_like(|kvs, _| {
        set(kvs, "general.architecture", sipllm_testkit::Value::str("gemma9"))
    });
    assert_eq!(codes(&report), ["model::load::unknown_arch"]);
    assert!(!report.loads() && !report.known_arch);
    assert!(report.findings[0].to_string().contains("gemma9"));
}

#[test]
fn a_missing_key_and_a_mistyped_one_are_refused() {
    let report = llama3_like(|kvs, _| kvs.retain(|(k, _)| k != b"llama.block_count"));
    assert_eq!(codes(&report), ["model::load::missing_key"]);
    assert!(report.findings[0].to_string().contains("llama.block_count"));
    let report = llama3_like(|kvs, _| {
        set(kvs, "llama.embedding_length", sipllm_testkit::Value::Uint64(4096))
    });
    assert_eq!(codes(&report), ["model::load::key_type"]);
    let msg = report.findings[0].to_string();
    assert!(msg.contains("UINT64") && msg.contains("UINT32"), "{msg}");
    // The per-layer form llama.cpp takes for head counts, of the wrong length.
    let report = llama3_like(|kvs, _| {
        let arr = sipllm_testkit::Value::array(
            sipllm_gguf::ValueType::Uint32,
            vec![sipllm_testkit::Value::Uint32(8); 31],
        );
        set(kvs, "llama.attention.head_count_kv", arr);
    });
    assert_eq!(codes(&report), ["model::load::key_type"]);
    assert!(report.findings[0].to_string().contains("31 values"));
    // ... and of the right length: loads.
    let report = llama3_like(|kvs, _| {
        let arr = sipllm_testkit::Value::array(
            sipllm_gguf::ValueType::Uint32,
            vec![sipllm_testkit::Value::Uint32(8); 32],
        );
        set(kvs, "llama.attention.head_count_kv", arr);
    });
    assert!(report.loads(), "{:?}", codes(&report));
}

#[test]
fn tensors_are_checked_by_name_shape_and_count() {
    let rename = |from: &str, to: &str| {
        let (from, to) = (from.to_owned(), to.to_owned());
        llama3_like(move |_, ts| {
            ts.iter_mut().find(|t| t.name == from.as_bytes()).unwrap().name = to.into_bytes()
        })
    };
    // Renamed: the loader misses it, then finds one tensor too many.
    let report = rename("blk.3.attn_q.weight", "blk.3.attn_q.weights");
    assert_eq!(codes(&report), ["model::load::missing_tensor", "model::load::extra_tensors"]);
    assert!(report.findings[0].to_string().contains("blk.3.attn_q.weight"));
    // token_embd renamed: required (output.weight does not stand in for it).
    let report = rename("token_embd.weight", "tok_embeddings.weight");
    assert!(codes(&report).contains(&"model::load::missing_tensor"));
    // output.weight removed: the loader falls back to token_embd (TENSOR_DUPLICATED).
    let report = llama3_like(|_, ts| ts.retain(|t| t.name != b"output.weight"));
    assert!(report.loads(), "{:?}", codes(&report));
    // A shape off by one row.
    let report = llama3_like(|_, ts| {
        ts.iter_mut().find(|t| t.name == b"blk.0.ffn_up.weight").unwrap().dims[1] += 1
    });
    assert_eq!(codes(&report), ["model::load::tensor_shape"]);
    let msg = report.findings[0].to_string();
    assert!(msg.contains("[4096, 14337]") && msg.contains("[4096, 14336]"), "{msg}");
    // A trailing dimension of 1 is the same shape to check_tensor_dims.
    let report = llama3_like(|_, ts| {
        ts.iter_mut().find(|t| t.name == b"blk.0.ffn_up.weight").unwrap().dims.push(1)
    });
    assert!(report.loads(), "{:?}", codes(&report));
    // A layer past the block count.
    let report =
        llama3_like(|kvs, _| set(kvs, "llama.block_count", sipllm_testkit::Value::Uint32(31)));
    assert_eq!(codes(&report), ["model::load::extra_tensors"]);
    assert!(report.findings[0].to_string().contains("blk.31."));
}

#[test]
fn a_rope_dimension_other_than_the_head_is_a_bad_value() {
    // load_hparams: llama requires n_rot == n_embd_head_k (4096 / 32 heads = 128).
    let report = llama3_like(|kvs, _| {
        set(kvs, "llama.rope.dimension_count", sipllm_testkit::Value::Uint32(64))
    });
    assert_eq!(codes(&report), ["model::load::bad_value"]);
    assert!(!report.loads() && !report.crashes());
    let f = &report.findings[0];
    assert_eq!(
        f.kind(),
        &Issue::BadValue {
            key: "llama.rope.dimension_count".into(),
            message: "invalid n_rot: 64, expected 128".into(),
        }
    );
    assert!(f.to_string().contains("invalid n_rot: 64, expected 128"), "{f}");
    // Located at the key's entry in the header.
    assert!(f.offset() > 0 && !f.is_empty() && !f.path().is_empty(), "{f:?}");
}

#[test]
fn past_sixteen_tensor_findings_the_rest_are_counted() {
    // Every layer's attn_q removed: 32 missing tensors, 16 listed and 16 counted.
    let report = llama3_like(|_, ts| ts.retain(|t| !t.name.ends_with(b".attn_q.weight")));
    let codes = codes(&report);
    assert_eq!(codes.len(), load::MAX_TENSOR_FINDINGS + 1, "{codes:?}");
    assert!(codes[..load::MAX_TENSOR_FINDINGS].iter().all(|c| *c == "model::load::missing_tensor"));
    assert_eq!(codes[load::MAX_TENSOR_FINDINGS], "model::load::more_tensor_findings");
    let last = report.findings.last().unwrap();
    assert_eq!(last.kind(), &Issue::MoreTensorFindings { count: 32 - load::MAX_TENSOR_FINDINGS });
    assert!(last.to_string().contains("16 more tensors are missing"), "{last}");
    assert!(report.findings[0].to_string().contains("blk.0.attn_q.weight"));
    // At the cap exactly, nothing is counted.
    let report = llama3_like(|_, ts| {
        ts.retain(|t| {
            let name = String::from_utf8_lossy(&t.name);
            let layer: Option<u32> =
                name.strip_prefix("blk.").and_then(|r| r.split('.').next()?.parse().ok());
            !(name.ends_with(".attn_q.weight") && layer.is_some_and(|l| l < 16))
        })
    });
    let codes = self::codes(&report);
    assert_eq!(codes, vec!["model::load::missing_tensor"; load::MAX_TENSOR_FINDINGS]);
}

#[test]
fn what_makes_llama_cpp_abort_is_told_apart() {
    for n in [0, 513] {
        let report =
            llama3_like(|kvs, _| set(kvs, "llama.block_count", sipllm_testkit::Value::Uint32(n)));
        assert_eq!(codes(&report), ["model::load::block_count"]);
        assert!(report.crashes() && !report.loads());
    }
    let report = llama3_like(|kvs, _| {
        kvs.push((b"llama.expert_used_count".to_vec(), sipllm_testkit::Value::Uint32(2)))
    });
    assert_eq!(codes(&report), ["model::load::llama_cpp_crashes"]);
    assert!(report.findings[0].to_string().contains("n_expert_used_max <= hparams.n_expert"));
}

#[test]
fn the_issue_s_example_is_refused() {
    // Issue 28: arch set to an unknown name, a key deleted, token_embd renamed.
    let report = llama3_like(|kvs, ts| {
        set(kvs, "general.architecture", sipllm_testkit::Value::str("gemma9"));
        kvs.retain(|(k, _)| k != b"llama.block_count");
        ts.iter_mut().find(|t| t.name == b"token_embd.weight").unwrap().name =
            b"tok.weight".to_vec();
    });
    assert!(!report.loads());
    assert_eq!(codes(&report), ["model::load::unknown_arch"]);
}

#[test]
fn every_table_names_a_known_architecture_and_parses() {
    use sipllm_model::arch;
    for t in arch::tables() {
        assert!(arch::is_known(t.name), "{}", t.name);
        assert!(t.source.starts_with("src/models/"), "{}", t.source);
    }
    assert!(arch::names().len() >= arch::tables().len());
    assert!(arch::is_known("llama") && !arch::is_known("gemma9") && !arch::is_known("LLAMA"));
}
