//! The GGUF types llama.cpp reads well-known keys as.
//!
//! llama.cpp's key reader is type-strict: a `UINT64` `llama.context_length` fails to load
//! ("key … has wrong type"), though the value is fine. Two writers use this table:
//!
//! * the write side's `convert` (`.llmw` → GGUF), to choose a GGUF type for `.llmw`'s `i64` and `f64`
//!   values: a listed key gets its llama.cpp type when the value fits it exactly, so a model
//!   that went GGUF → `.llmw` → GGUF comes back with the types it had, and loads;
//! * an edit, to note when a set gives a listed key another type (the CLI shows the note).

use sipllm_gguf::ValueType;

/// The type(s) llama.cpp accepts for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyType {
    /// The scalar type, when the key may be a scalar.
    pub scalar: Option<ValueType>,
    /// The element type, when the key may be an array.
    pub array: Option<ValueType>,
}

impl KeyType {
    const fn scalar(t: ValueType) -> KeyType {
        KeyType { scalar: Some(t), array: None }
    }

    const fn array(t: ValueType) -> KeyType {
        KeyType { scalar: None, array: Some(t) }
    }

    /// True when a value of type `ty` (with element type `elem` for arrays) is accepted.
    pub fn accepts(&self, ty: ValueType, elem: Option<ValueType>) -> bool {
        match ty {
            ValueType::Array => self.array.is_some() && self.array == elem,
            t => self.scalar == Some(t),
        }
    }

    /// `UINT32`, `ARRAY of INT32`, `UINT32 or ARRAY of INT32`.
    pub fn describe(&self) -> String {
        let array = self.array.map(|t| format!("ARRAY of {}", t.name()));
        match (self.scalar, array) {
            (Some(s), Some(a)) => format!("{} or {a}", s.name()),
            (Some(s), None) => s.name().to_owned(),
            (None, Some(a)) => a,
            (None, None) => String::new(),
        }
    }
}

use ValueType::{Bool, Float32, Int32, String as Str, Uint8, Uint16, Uint32};

/// Keys outside the `{arch}.` namespace.
const GLOBAL: &[(&str, KeyType)] = &[
    ("general.architecture", KeyType::scalar(Str)),
    ("general.type", KeyType::scalar(Str)),
    ("general.name", KeyType::scalar(Str)),
    ("general.basename", KeyType::scalar(Str)),
    ("general.finetune", KeyType::scalar(Str)),
    ("general.size_label", KeyType::scalar(Str)),
    ("general.version", KeyType::scalar(Str)),
    ("general.author", KeyType::scalar(Str)),
    ("general.organization", KeyType::scalar(Str)),
    ("general.description", KeyType::scalar(Str)),
    ("general.license", KeyType::scalar(Str)),
    ("general.license.name", KeyType::scalar(Str)),
    ("general.license.link", KeyType::scalar(Str)),
    ("general.url", KeyType::scalar(Str)),
    ("general.repo_url", KeyType::scalar(Str)),
    ("general.uuid", KeyType::scalar(Str)),
    ("general.tags", KeyType::array(Str)),
    ("general.languages", KeyType::array(Str)),
    ("general.base_model.count", KeyType::scalar(Uint32)),
    ("general.quantization_version", KeyType::scalar(Uint32)),
    ("general.alignment", KeyType::scalar(Uint32)),
    ("general.file_type", KeyType::scalar(Uint32)),
    ("tokenizer.ggml.model", KeyType::scalar(Str)),
    ("tokenizer.ggml.pre", KeyType::scalar(Str)),
    ("tokenizer.ggml.tokens", KeyType::array(Str)),
    ("tokenizer.ggml.scores", KeyType::array(Float32)),
    ("tokenizer.ggml.token_type", KeyType::array(Int32)),
    ("tokenizer.ggml.merges", KeyType::array(Str)),
    ("tokenizer.ggml.add_bos_token", KeyType::scalar(Bool)),
    ("tokenizer.ggml.add_eos_token", KeyType::scalar(Bool)),
    ("tokenizer.ggml.add_space_prefix", KeyType::scalar(Bool)),
    ("tokenizer.ggml.remove_extra_whitespaces", KeyType::scalar(Bool)),
    ("tokenizer.ggml.precompiled_charsmap", KeyType::array(Uint8)),
    ("tokenizer.chat_template", KeyType::scalar(Str)),
    ("tokenizer.huggingface.json", KeyType::scalar(Str)),
    ("tokenizer.rwkv.world", KeyType::scalar(Str)),
    ("split.no", KeyType::scalar(Uint16)),
    ("split.count", KeyType::scalar(Uint16)),
    ("split.tensors.count", KeyType::scalar(Int32)),
    ("adapter.type", KeyType::scalar(Str)),
    ("adapter.lora.alpha", KeyType::scalar(Float32)),
];

/// The token ids: `tokenizer.ggml.{NAME}_token_id`, all `UINT32`.
const TOKEN_IDS: &[&str] = &[
    "bos",
    "eos",
    "eot",
    "eom",
    "unknown",
    "padding",
    "cls",
    "mask",
    "seperator",
    "fim_pre",
    "fim_suf",
    "fim_mid",
    "fim_pad",
    "fim_rep",
    "fim_sep",
];

/// Keys under `{arch}.`, where `{arch}` is `general.architecture`.
const PER_ARCH: &[(&str, KeyType)] = &[
    ("context_length", KeyType::scalar(Uint32)),
    ("embedding_length", KeyType::scalar(Uint32)),
    ("block_count", KeyType::scalar(Uint32)),
    ("vocab_size", KeyType::scalar(Uint32)),
    ("feed_forward_length", KeyType { scalar: Some(Uint32), array: Some(Int32) }),
    ("attention.head_count", KeyType { scalar: Some(Uint32), array: Some(Int32) }),
    ("attention.head_count_kv", KeyType { scalar: Some(Uint32), array: Some(Int32) }),
    ("attention.key_length", KeyType::scalar(Uint32)),
    ("attention.value_length", KeyType::scalar(Uint32)),
    ("attention.sliding_window", KeyType::scalar(Uint32)),
    ("attention.layer_norm_epsilon", KeyType::scalar(Float32)),
    ("attention.layer_norm_rms_epsilon", KeyType::scalar(Float32)),
    ("rope.dimension_count", KeyType::scalar(Uint32)),
    ("rope.freq_base", KeyType::scalar(Float32)),
    ("rope.scaling.type", KeyType::scalar(Str)),
    ("rope.scaling.factor", KeyType::scalar(Float32)),
    ("rope.scaling.original_context_length", KeyType::scalar(Uint32)),
    ("expert_count", KeyType::scalar(Uint32)),
    ("expert_used_count", KeyType::scalar(Uint32)),
    ("ssm.conv_kernel", KeyType::scalar(Uint32)),
    ("ssm.inner_size", KeyType::scalar(Uint32)),
    ("ssm.state_size", KeyType::scalar(Uint32)),
    ("ssm.time_step_rank", KeyType::scalar(Uint32)),
];

/// The type llama.cpp reads `key` as, if it is a well-known key. `arch` is the model's
/// `general.architecture` (the prefix of the per-architecture keys).
pub fn expected(key: &str, arch: Option<&str>) -> Option<KeyType> {
    if let Some((_, t)) = GLOBAL.iter().find(|(k, _)| *k == key) {
        return Some(*t);
    }
    if key.starts_with("tokenizer.chat_template.") {
        return Some(KeyType::scalar(Str));
    }
    if let Some(id) = key.strip_prefix("tokenizer.ggml.").and_then(|k| k.strip_suffix("_token_id"))
        && TOKEN_IDS.contains(&id)
    {
        return Some(KeyType::scalar(Uint32));
    }
    let rest = key.strip_prefix(arch?)?.strip_prefix('.')?;
    PER_ARCH.iter().find(|(k, _)| *k == rest).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_keys() {
        let arch = Some("llama");
        let u32_ = Some(KeyType::scalar(Uint32));
        assert_eq!(expected("llama.context_length", arch), u32_);
        assert_eq!(expected("tokenizer.ggml.bos_token_id", arch), u32_);
        assert_eq!(expected("tokenizer.ggml.seperator_token_id", arch), u32_);
        assert_eq!(expected("tokenizer.ggml.foo_token_id", arch), None);
        assert_eq!(expected("general.alignment", None), u32_);
        assert_eq!(expected("llama.rope.freq_base", arch), Some(KeyType::scalar(Float32)));
        assert_eq!(expected("tokenizer.chat_template.rag", arch), Some(KeyType::scalar(Str)));
        // Per-architecture keys need the architecture.
        assert_eq!(expected("llama.context_length", None), None);
        assert_eq!(expected("llama.context_length", Some("qwen2")), None);
        assert_eq!(expected("command-r.block_count", Some("command-r")), u32_);
        assert_eq!(expected("llama.unknown_thing", arch), None);
        let ff = expected("llama.feed_forward_length", arch).unwrap();
        assert!(ff.accepts(Uint32, None));
        assert!(ff.accepts(ValueType::Array, Some(Int32)));
        assert!(!ff.accepts(ValueType::Array, Some(Uint32)));
        assert!(!ff.accepts(ValueType::Uint64, None));
        assert_eq!(ff.describe(), "UINT32 or ARRAY of INT32");
        assert_eq!(expected("split.no", None).unwrap().describe(), "UINT16");
    }
}
