//! transformers' parameter names for a GGUF model (`plan`), the value changes that undo
//! what llama.cpp's converter did to them, and the `config.json` transformers needs beside
//! the weights.
//!
//! Sources (read, not copied):
//!
//! * llama.cpp `convert_hf_to_gguf.py`: `LlamaModel.modify_tensors` permutes the rows of
//!   `q_proj` (with `n_head`) and `k_proj` (with `n_head_kv`) by `LlamaModel.permute`, for
//!   the models it converts as `llama` (Llama and Mistral); `Qwen2Model`, `Qwen3Model`,
//!   `Phi3MiniModel`, `Gemma2Model` and `Gemma3Model` do not permute. `Gemma2Model` and
//!   `Gemma3Model` store every `*norm.weight` as `w + 1` (Gemma's RMSNorm multiplies by
//!   `1 + w`).
//! * gguf-py `gguf/tensor_mapping.py` (`TensorNameMap`): which transformers name each GGUF
//!   name comes from, per architecture.
//! * transformers `modeling_gguf_pytorch_utils.py` (`load_gguf_checkpoint`, the llama tensor
//!   processor's `_reverse_permute_weights`, the Gemma norms' `- 1`) and
//!   `integrations/ggml.py` (`GGUF_CONFIG_MAPPING`: which GGUF key is which config field;
//!   `llama` with "mistral" in `general.name` is Mistral; `gemma3` is `gemma3_text`).
//!
//! What is covered, per GGUF architecture (the names below, in every block):
//!
//! | GGUF `general.architecture` | transformers `model_type` | Q/K un-permuted | norms − 1 |
//! |---|---|---|---|
//! | `llama` | `llama` (`mistral` when `general.name` says Mistral) | yes | no |
//! | `qwen2`, `qwen3` | `qwen2`, `qwen3` | no | no |
//! | `phi3` | `phi3` (fused `qkv_proj`, `gate_up_proj`) | no | no |
//! | `gemma2`, `gemma3` | `gemma2`, `gemma3_text` | no | yes |
//!
//! A tensor of these architectures that is not in the table is an error naming it (nothing is
//! guessed); `rope_freqs.weight` and Phi-3's `rope_factors_long/short.weight` are left out
//! (transformers computes them from the config's `rope_scaling`, which is not written: a
//! long-context rope scaling is not carried into `config.json`).

use serde_json::{Map, Value, json};
use sipllm_format::Kind;
use sipllm_streaming::WeightSource;

use super::Transform;

/// Why a model cannot be given transformers' names.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HfError {
    /// The architecture is not one this covers.
    #[error(
        "transformers' names are known for llama, mistral, qwen2, qwen3, phi3, gemma2 and \
         gemma3 models; this one is {arch:?}"
    )]
    Architecture {
        /// `general.architecture` (empty when missing).
        arch: String,
    },
    /// A key the names or the config need is missing or not a number.
    #[error("metadata key {key:?} is missing or not a number; transformers' names need it")]
    Key {
        /// The key.
        key: String,
    },
    /// Tensors with no transformers name for this architecture.
    #[error("{arch} tensors with no transformers name: {}", names.join(", "))]
    Unknown {
        /// The architecture.
        arch: String,
        /// The GGUF names.
        names: Vec<String>,
    },
    /// A Q or K matrix whose rows do not split into heads of an even size.
    #[error(
        "tensor {tensor:?} has {rows} rows, which do not split into {heads} heads of an even \
         size; its rotary permutation cannot be undone"
    )]
    Heads {
        /// The tensor.
        tensor: String,
        /// Its rows.
        rows: u64,
        /// The heads.
        heads: u64,
    },
}

impl Kind for HfError {
    fn code(&self) -> &'static str {
        match self {
            HfError::Architecture { .. } => "edit::safetensors::hf_architecture",
            HfError::Key { .. } => "edit::safetensors::hf_key",
            HfError::Unknown { .. } => "edit::safetensors::hf_unknown_tensor",
            HfError::Heads { .. } => "edit::safetensors::hf_heads",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            HfError::Architecture { .. } | HfError::Unknown { .. } => {
                "export with the GGUF names (without --names hf)."
            }
            HfError::Key { .. } | HfError::Heads { .. } => {
                "the header does not describe its attention layout; check it with \
                 `sipllm inspect`, or export with the GGUF names."
            }
        }
    }
}

/// The names, values changes and config of one model.
#[derive(Debug)]
pub(crate) struct HfPlan {
    /// Per source tensor (in directory order): its name and change, or `None` if left out.
    pub(crate) tensors: Vec<Option<(String, Transform)>>,
    /// The tensors left out.
    pub(crate) left_out: Vec<String>,
    /// `config.json`'s text.
    pub(crate) config: String,
    /// transformers' `model_type`.
    pub(crate) model_type: String,
}

/// The architectures covered: GGUF name → (llama.cpp permuted Q/K, norms stored + 1).
fn family(arch: &str) -> Option<(bool, bool)> {
    Some(match arch {
        "llama" => (true, false),
        "qwen2" | "qwen3" | "phi3" => (false, false),
        "gemma2" | "gemma3" => (false, true),
        _ => return None,
    })
}

/// transformers' name for a GGUF block tensor's suffix (`attn_q.weight` …) in `arch`.
fn block_name(arch: &str, part: &str) -> Option<&'static str> {
    let gemma = arch.starts_with("gemma");
    Some(match (part, gemma, arch == "phi3") {
        ("attn_norm", ..) => "input_layernorm",
        ("attn_q", ..) => "self_attn.q_proj",
        ("attn_k", ..) => "self_attn.k_proj",
        ("attn_v", ..) => "self_attn.v_proj",
        ("attn_qkv", _, true) => "self_attn.qkv_proj",
        ("attn_output", ..) => "self_attn.o_proj",
        ("attn_q_norm", ..) => "self_attn.q_norm",
        ("attn_k_norm", ..) => "self_attn.k_norm",
        ("ffn_norm", false, _) => "post_attention_layernorm",
        ("ffn_norm", true, _) => "pre_feedforward_layernorm",
        ("post_attention_norm", true, _) => "post_attention_layernorm",
        ("post_ffw_norm", true, _) => "post_feedforward_layernorm",
        ("ffn_gate", ..) => "mlp.gate_proj",
        // Phi-3's gate and up projections are one fused matrix, which llama.cpp keeps whole
        // as ffn_up.
        ("ffn_up", _, true) => "mlp.gate_up_proj",
        ("ffn_up", ..) => "mlp.up_proj",
        ("ffn_down", ..) => "mlp.down_proj",
        _ => return None,
    })
}

/// What becomes of one GGUF tensor: `Ok(Some(name))`, left out (`Ok(None)`), or unknown.
fn hf_name(arch: &str, gguf: &str) -> Result<Option<String>, ()> {
    match gguf {
        "token_embd.weight" => return Ok(Some("model.embed_tokens.weight".into())),
        "output_norm.weight" => return Ok(Some("model.norm.weight".into())),
        "output.weight" => return Ok(Some("lm_head.weight".into())),
        "rope_freqs.weight" | "rope_factors_long.weight" | "rope_factors_short.weight" => {
            return Ok(None);
        }
        _ => {}
    }
    let rest = gguf.strip_prefix("blk.").ok_or(())?;
    let (layer, rest) = rest.split_once('.').ok_or(())?;
    if layer.is_empty() || !layer.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    let (part, kind) = rest.rsplit_once('.').ok_or(())?;
    if kind != "weight" && kind != "bias" {
        return Err(());
    }
    let name = block_name(arch, part).ok_or(())?;
    Ok(Some(format!("model.layers.{layer}.{name}.{kind}")))
}

/// Names, changes and config for `source` (see the [module docs](self)).
pub(crate) fn plan(source: &dyn WeightSource) -> Result<HfPlan, HfError> {
    let arch = source.meta_str("general.architecture").unwrap_or_default().to_owned();
    let Some((permuted, norm_plus_one)) = family(&arch) else {
        return Err(HfError::Architecture { arch });
    };
    let key = |k: &str| format!("{arch}.{k}");
    let uint = |k: &str| source.meta_uint(&key(k)).ok();
    let need = |k: &str| uint(k).ok_or_else(|| HfError::Key { key: key(k) });
    let heads = need("attention.head_count")?;
    let kv_heads = uint("attention.head_count_kv").unwrap_or(heads);
    let name = source.meta_str("general.name").unwrap_or_default();
    let model_type = match arch.as_str() {
        "llama" if name.to_ascii_lowercase().contains("mistral") => "mistral",
        "gemma3" => "gemma3_text",
        a => a,
    }
    .to_owned();

    let mut tensors = Vec::new();
    let mut left_out = Vec::new();
    let mut unknown = Vec::new();
    for t in source.tensors() {
        let Ok(hf) = hf_name(&arch, &t.name) else {
            unknown.push(t.name.clone());
            tensors.push(None);
            continue;
        };
        let Some(hf) = hf else {
            left_out.push(t.name.clone());
            tensors.push(None);
            continue;
        };
        let mut transform = Transform::None;
        if norm_plus_one && t.name.ends_with("norm.weight") {
            transform = Transform::SubtractOne;
        }
        let q = t.name.ends_with(".attn_q.weight") || t.name.ends_with(".attn_q.bias");
        let k = t.name.ends_with(".attn_k.weight") || t.name.ends_with(".attn_k.bias");
        if permuted && (q || k) {
            let h = if q { heads } else { kv_heads };
            let rows = t.shape.first().copied().unwrap_or(0);
            if h == 0 || !rows.is_multiple_of(h) || !(rows / h).is_multiple_of(2) {
                return Err(HfError::Heads { tensor: t.name.clone(), rows, heads: h });
            }
            transform = Transform::Unpermute { heads: h };
        }
        tensors.push(Some((hf, transform)));
    }
    if !unknown.is_empty() {
        return Err(HfError::Unknown { arch, names: unknown });
    }
    let config = config_json(source, &arch, &model_type, heads, kv_heads)?;
    Ok(HfPlan { tensors, left_out, config, model_type })
}

/// transformers' class for a `model_type`.
fn class(model_type: &str) -> &'static str {
    match model_type {
        "mistral" => "MistralForCausalLM",
        "qwen2" => "Qwen2ForCausalLM",
        "qwen3" => "Qwen3ForCausalLM",
        "phi3" => "Phi3ForCausalLM",
        "gemma2" => "Gemma2ForCausalLM",
        "gemma3_text" => "Gemma3ForCausalLM",
        _ => "LlamaForCausalLM",
    }
}

/// `config.json`: the fields transformers' GGUF loader reads from the same keys
/// (`GGUF_CONFIG_MAPPING`), the vocabulary size from the embedding's rows, tied embeddings
/// when there is no `output.weight`, and the special token ids.
fn config_json(
    source: &dyn WeightSource,
    arch: &str,
    model_type: &str,
    heads: u64,
    kv_heads: u64,
) -> Result<String, HfError> {
    let key = |k: &str| format!("{arch}.{k}");
    let mut c = Map::new();
    c.insert("architectures".into(), json!([class(model_type)]));
    c.insert("model_type".into(), json!(model_type));
    for (gguf, field) in [
        ("embedding_length", "hidden_size"),
        ("feed_forward_length", "intermediate_size"),
        ("block_count", "num_hidden_layers"),
        ("context_length", "max_position_embeddings"),
        ("attention.key_length", "head_dim"),
        ("attention.sliding_window", "sliding_window"),
    ] {
        if let Ok(v) = source.meta_uint(&key(gguf)) {
            c.insert(field.into(), json!(v));
        } else if gguf != "attention.key_length" && gguf != "attention.sliding_window" {
            return Err(HfError::Key { key: key(gguf) });
        }
    }
    c.insert("num_attention_heads".into(), json!(heads));
    c.insert("num_key_value_heads".into(), json!(kv_heads));
    for (gguf, field) in [
        ("attention.layer_norm_rms_epsilon", "rms_norm_eps"),
        ("rope.freq_base", "rope_theta"),
        ("attn_logit_softcapping", "attn_logit_softcapping"),
        ("final_logit_softcapping", "final_logit_softcapping"),
    ] {
        if let Ok(v) = source.meta_f32(&key(gguf)) {
            c.insert(field.into(), json!(v));
        }
    }
    for (gguf, field) in [
        ("tokenizer.ggml.bos_token_id", "bos_token_id"),
        ("tokenizer.ggml.eos_token_id", "eos_token_id"),
        ("tokenizer.ggml.padding_token_id", "pad_token_id"),
    ] {
        if let Ok(v) = source.meta_uint(gguf) {
            c.insert(field.into(), json!(v));
        }
    }
    if let Some(embd) = source.find("token_embd.weight")
        && let Some(&rows) = embd.shape.first()
    {
        c.insert("vocab_size".into(), json!(rows));
    }
    c.insert("tie_word_embeddings".into(), json!(source.find("output.weight").is_none()));
    let mut text = serde_json::to_string_pretty(&Value::Object(c)).unwrap_or_default();
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_per_architecture() {
        let n = |a: &str, g: &str| hf_name(a, g);
        assert_eq!(
            n("llama", "blk.3.attn_q.weight"),
            Ok(Some("model.layers.3.self_attn.q_proj.weight".into()))
        );
        assert_eq!(
            n("llama", "blk.0.ffn_norm.weight"),
            Ok(Some("model.layers.0.post_attention_layernorm.weight".into()))
        );
        assert_eq!(
            n("gemma2", "blk.0.ffn_norm.weight"),
            Ok(Some("model.layers.0.pre_feedforward_layernorm.weight".into()))
        );
        assert_eq!(
            n("gemma3", "blk.1.post_attention_norm.weight"),
            Ok(Some("model.layers.1.post_attention_layernorm.weight".into()))
        );
        assert_eq!(
            n("phi3", "blk.0.ffn_up.weight"),
            Ok(Some("model.layers.0.mlp.gate_up_proj.weight".into()))
        );
        assert_eq!(
            n("qwen2", "blk.2.attn_k.bias"),
            Ok(Some("model.layers.2.self_attn.k_proj.bias".into()))
        );
        assert_eq!(n("llama", "rope_freqs.weight"), Ok(None));
        assert_eq!(n("llama", "blk.0.attn_qkv.weight"), Err(()));
        assert_eq!(n("llama", "blk.0.post_ffw_norm.weight"), Err(()));
        assert_eq!(n("llama", "blk.x.attn_q.weight"), Err(()));
        assert_eq!(n("llama", "blk.0.attn_q.scale"), Err(()));
        assert_eq!(n("llama", "whatever"), Err(()));
    }

    #[test]
    fn every_error_has_a_distinct_code_and_help() {
        let errors = [
            HfError::Architecture { arch: "bert".into() },
            HfError::Key { key: "k".into() },
            HfError::Unknown { arch: "llama".into(), names: vec!["x".into()] },
            HfError::Heads { tensor: "t".into(), rows: 3, heads: 2 },
        ];
        let mut codes: Vec<&str> = errors.iter().map(|e| e.code()).collect();
        assert!(errors.iter().all(|e| !e.help().is_empty() && !e.to_string().is_empty()));
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), errors.len());
    }
}
