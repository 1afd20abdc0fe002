//! [`ModelConfig`]: the well-known hyperparameters of a model, typed and normalised, read
//! through the [`WeightSource`] seam (so GGUF files, split sets and `.llmw` files alike).
//!
//! GGUF stores hyperparameters under architecture-prefixed keys (`llama.block_count`,
//! `gemma3.attention.sliding_window`) with whatever integer type the writer chose, and some
//! models store a per-layer array where others store a scalar (Gemma 4's
//! `attention.head_count_kv`, `attention.sliding_window_pattern`): the commonest source of
//! panics in other readers. `ModelConfig` reads the keys llama.cpp names in its key table
//! (`llama-arch.cpp`), accepts any integer type for counts and `FLOAT32`/`FLOAT64` for
//! floats, and normalises each per-layer value to a [`PerLayer`] checked against the block
//! count.
//!
//! Errors are typed ([`ConfigError`], with a stable code and a help text) and name the key.
//! Required are `general.architecture` and, for an architecture llama.cpp knows, the keys its
//! loader requires of every model (`{arch}.context_length`, `{arch}.embedding_length`,
//! `{arch}.block_count`); every other field is optional, but present with a wrong type is an
//! error too. An unknown architecture gives the same fields, all optional.
//!
//! ```
//! use sipllm_gguf::ValueType;
//! use sipllm_testkit::{GgufBuilder, Value};
//! use sipllm_streaming::{MemSource, Model, OpenOptions};
//! use sipllm_model::config::ModelConfig;
//!
//! let bytes = GgufBuilder::new()
//!     .kv("general.architecture", Value::str("gemma4"))
//!     .kv("general.file_type", Value::Uint32(15))
//!     .kv("gemma4.context_length", Value::Uint32(8192))
//!     .kv("gemma4.embedding_length", Value::Uint32(640))
//!     .kv("gemma4.block_count", Value::Uint32(3))
//!     .kv("gemma4.attention.head_count", Value::Uint32(4))
//!     // One value per layer: 1 KV head in two layers, 2 in the last.
//!     .kv("gemma4.attention.head_count_kv", Value::array(ValueType::Int32, [1, 1, 2].map(Value::Int32).into()))
//!     .build();
//! let model = Model::from_source(MemSource::new(bytes), &OpenOptions::default())?;
//! let config = ModelConfig::from_source(&model)?;
//! assert_eq!(config.architecture, "gemma4");
//! assert_eq!(config.quantization.to_string(), "Q4_K_M");
//! let kv = config.head_count_kv.as_ref().unwrap();
//! assert_eq!((kv.layer(0), kv.layer(2), kv.max()), (Some(1), Some(2), 2));
//! assert_eq!(config.head_count.as_ref().and_then(|h| h.layer(2)), Some(4)); // a scalar
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use crate::ftype::Quantization;
use sipllm_gguf::{GgmlType, MetaValue};

use sipllm_streaming::Meta;
use sipllm_streaming::WeightSource;

/// The architectures llama.cpp's loader knows (`LLM_ARCH_NAMES`): for these the keys every
/// model must have are required. The load check's list ([`crate::arch::names`]), generated
/// from llama.cpp 0c1e570's source.
pub fn known_architectures() -> &'static [&'static str] {
    crate::arch::names()
}

/// A typed, normalised view of a model's well-known hyperparameters.
///
/// Field names follow the GGUF keys (`{arch}.` left out); `None` means the key is absent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelConfig {
    /// `general.architecture`: the prefix of the `{arch}.*` keys.
    pub architecture: String,
    /// True when llama.cpp knows the architecture ([`known_architectures`]).
    pub known_architecture: bool,
    /// `general.name`.
    pub name: Option<String>,
    /// `general.file_type`, as stored.
    pub file_type: Option<u64>,
    /// llama.cpp's label for the file type, or one guessed from the tensor types when the key
    /// is absent ([`Quantization::is_guess`]).
    pub quantization: Quantization,
    /// `{arch}.context_length`: the training context.
    pub context_length: Option<u64>,
    /// `{arch}.embedding_length`.
    pub embedding_length: Option<u64>,
    /// `{arch}.block_count`: the number of layers every per-layer value is checked against.
    pub block_count: Option<u64>,
    /// `{arch}.feed_forward_length` (per layer in some models).
    pub feed_forward_length: Option<PerLayer<u64>>,
    /// `{arch}.attention.head_count` (per layer in some models).
    pub head_count: Option<PerLayer<u64>>,
    /// `{arch}.attention.head_count_kv` (per layer in some models, e.g. Gemma 4).
    pub head_count_kv: Option<PerLayer<u64>>,
    /// `{arch}.attention.key_length`.
    pub key_length: Option<u64>,
    /// `{arch}.attention.value_length`.
    pub value_length: Option<u64>,
    /// `{arch}.expert_count`.
    pub expert_count: Option<u64>,
    /// `{arch}.expert_used_count`.
    pub expert_used_count: Option<u64>,
    /// `{arch}.rope.*`.
    pub rope: Rope,
    /// `{arch}.attention.layer_norm_epsilon`.
    pub layer_norm_epsilon: Option<f64>,
    /// `{arch}.attention.layer_norm_rms_epsilon`.
    pub layer_norm_rms_epsilon: Option<f64>,
    /// `{arch}.attention.sliding_window`: the window of the sliding-window layers.
    pub sliding_window: Option<u64>,
    /// `{arch}.attention.sliding_window_pattern`: which layers use the sliding window.
    pub sliding_window_pattern: Option<SlidingWindowPattern>,
    /// The vocabulary size: `{arch}.vocab_size`, else the length of `tokenizer.ggml.tokens`.
    pub vocab_size: Option<u64>,
    /// `tokenizer.ggml.model`.
    pub tokenizer: Option<String>,
    /// The keys that size a model's memory beyond the common ones (the KV cache of
    /// sliding-window, MLA and multi-token-prediction layers, recurrent state): what
    /// [`fit`](crate::fit) reads.
    pub memory: MemoryKeys,
}

/// `{arch}.*` keys that size the KV cache and the recurrent state, as llama.cpp's
/// `llama_model_base::load_hparams` and the architectures' `load_arch_hparams` read them
/// (`src/llama-model.cpp`, `src/models/*.cpp`). `None`: the key is absent.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MemoryKeys {
    /// `{arch}.embedding_length_out`.
    pub embedding_length_out: Option<u64>,
    /// `{arch}.attention.key_length_swa`: the K head size of sliding-window layers.
    pub key_length_swa: Option<u64>,
    /// `{arch}.attention.value_length_swa`.
    pub value_length_swa: Option<u64>,
    /// `{arch}.attention.key_length_mla`: present on models that cache the MLA latent.
    pub key_length_mla: Option<u64>,
    /// `{arch}.attention.value_length_mla`.
    pub value_length_mla: Option<u64>,
    /// `{arch}.attention.kv_lora_rank`: the MLA latent's size.
    pub kv_lora_rank: Option<u64>,
    /// `{arch}.attention.shared_kv_layers`: trailing layers that reuse an earlier layer's cache.
    pub shared_kv_layers: Option<u64>,
    /// `{arch}.nextn_predict_layers`: multi-token-prediction layers counted in `block_count`
    /// that the main context does not cache.
    pub nextn_predict_layers: Option<u64>,
    /// `{arch}.full_attention_interval`: every n-th layer attends, the others are recurrent.
    pub full_attention_interval: Option<u64>,
    /// `{arch}.attention.recurrent_layers`: non-zero where a layer is recurrent (per layer, or
    /// one value for all).
    pub recurrent_layers: Option<PerLayer<u64>>,
    /// `{arch}.ssm.conv_kernel`.
    pub ssm_conv_kernel: Option<u64>,
    /// `{arch}.ssm.inner_size`.
    pub ssm_inner_size: Option<u64>,
    /// `{arch}.ssm.state_size`.
    pub ssm_state_size: Option<u64>,
    /// `{arch}.ssm.group_count`.
    pub ssm_group_count: Option<u64>,
    /// `{arch}.wkv.head_size` (RWKV).
    pub wkv_head_size: Option<u64>,
    /// `{arch}.token_shift_count` (RWKV; llama.cpp's default is 2).
    pub token_shift_count: Option<u64>,
    /// `{arch}.shortconv.l_cache` (LFM2).
    pub shortconv_l_cache: Option<u64>,
    /// `{arch}.kda.head_dim` (Kimi linear attention).
    pub kda_head_dim: Option<u64>,
}

/// `{arch}.rope.*`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Rope {
    /// `{arch}.rope.freq_base`.
    pub freq_base: Option<f64>,
    /// `{arch}.rope.dimension_count`.
    pub dimension_count: Option<u64>,
    /// `{arch}.rope.scaling.type` (`none`, `linear`, `yarn`, `longrope`).
    pub scaling_type: Option<String>,
    /// `{arch}.rope.scaling.factor`.
    pub scaling_factor: Option<f64>,
    /// `{arch}.rope.scaling.original_context_length`.
    pub original_context_length: Option<u64>,
}

/// A value that is one scalar for every layer or one entry per layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerLayer<T> {
    /// The same value in every layer (stored as a scalar).
    Uniform(T),
    /// One value per layer (stored as an array of `block_count` entries).
    Layers(Vec<T>),
}

impl<T: Copy> PerLayer<T> {
    /// The value of layer `layer` (`None` past the end of a per-layer array; a uniform value
    /// answers for any layer, the block count being the caller's to check).
    pub fn layer(&self, layer: usize) -> Option<T> {
        match self {
            PerLayer::Uniform(v) => Some(*v),
            PerLayer::Layers(v) => v.get(layer).copied(),
        }
    }

    /// The one value, when every layer has the same.
    pub fn uniform(&self) -> Option<T>
    where
        T: PartialEq,
    {
        match self {
            PerLayer::Uniform(v) => Some(*v),
            PerLayer::Layers(v) => {
                let first = *v.first()?;
                v.iter().all(|x| *x == first).then_some(first)
            }
        }
    }

    /// The per-layer values when stored as an array (`None` for a uniform value).
    pub fn layers(&self) -> Option<&[T]> {
        match self {
            PerLayer::Uniform(_) => None,
            PerLayer::Layers(v) => Some(v),
        }
    }
}

impl<T: Copy + Ord + Default> PerLayer<T> {
    /// The largest value over the layers (what sizes a cache).
    pub fn max(&self) -> T {
        match self {
            PerLayer::Uniform(v) => *v,
            PerLayer::Layers(v) => v.iter().copied().max().unwrap_or_default(),
        }
    }
}

/// `8`, or `[1, 1, 2]` for per-layer values.
impl<T: fmt::Display> fmt::Display for PerLayer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerLayer::Uniform(v) => write!(f, "{v}"),
            PerLayer::Layers(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Which layers use sliding-window attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlidingWindowPattern {
    /// Stored as an integer `n`: of every `n` layers the first `n - 1` use the window and the
    /// last full attention (llama.cpp's `set_swa_pattern`; `0`: every layer uses it).
    Period(u64),
    /// Stored per layer: `true` where the layer uses the window.
    Layers(Vec<bool>),
}

impl SlidingWindowPattern {
    /// True when layer `layer` uses the sliding window (`None` past a per-layer array).
    pub fn is_sliding(&self, layer: u64) -> Option<bool> {
        match self {
            SlidingWindowPattern::Period(0) => Some(true),
            SlidingWindowPattern::Period(n) => Some(layer % n < n - 1),
            SlidingWindowPattern::Layers(v) => {
                usize::try_from(layer).ok().and_then(|i| v.get(i)).copied()
            }
        }
    }
}

/// `period 6`, or the per-layer flags as `SSSSSF…` (S: sliding, F: full).
impl fmt::Display for SlidingWindowPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlidingWindowPattern::Period(n) => write!(f, "period {n}"),
            SlidingWindowPattern::Layers(v) => {
                v.iter().try_for_each(|&s| f.write_str(if s { "S" } else { "F" }))
            }
        }
    }
}

/// Why a [`ModelConfig`] could not be read: every variant names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A required key is absent.
    #[error("metadata key {key:?} is missing (required of every {architecture} model)")]
    Missing {
        /// The key.
        key: String,
        /// Why it is required: `general.architecture`'s value, or `GGUF` for that key itself.
        architecture: String,
    },
    /// A key (or an element of its array) has a type the field cannot hold.
    #[error("metadata key {key:?}{}: expected {expected}, found {found}", at(*index))]
    WrongType {
        /// The key.
        key: String,
        /// For an array, the element.
        index: Option<u64>,
        /// What the field accepts (`integer or per-layer integer array`).
        expected: &'static str,
        /// What is stored (`float`, `string array`, …).
        found: &'static str,
    },
    /// An integer is out of the field's range (a negative count).
    #[error("metadata key {key:?}{}: {value} is out of range ({expected})", at(*index))]
    OutOfRange {
        /// The key.
        key: String,
        /// For an array, the element.
        index: Option<u64>,
        /// The stored value.
        value: i128,
        /// The range accepted.
        expected: &'static str,
    },
    /// A per-layer array does not have one entry per block.
    #[error("metadata key {key:?}: {len} per-layer values, but the model has {block_count} blocks")]
    WrongLength {
        /// The key.
        key: String,
        /// The array's length.
        len: u64,
        /// `{arch}.block_count`.
        block_count: u64,
    },
    /// A string is not valid UTF-8.
    #[error("metadata key {key:?} is not valid UTF-8")]
    NotUtf8 {
        /// The key.
        key: String,
    },
}

fn at(index: Option<u64>) -> String {
    index.map(|i| format!("[{i}]")).unwrap_or_default()
}

impl ConfigError {
    /// The stable code (`model::config::missing_key`, …).
    pub fn code(&self) -> &'static str {
        match self {
            ConfigError::Missing { .. } => "model::config::missing_key",
            ConfigError::WrongType { .. } => "model::config::wrong_type",
            ConfigError::OutOfRange { .. } => "model::config::out_of_range",
            ConfigError::WrongLength { .. } => "model::config::per_layer_length",
            ConfigError::NotUtf8 { .. } => "model::config::invalid_utf8",
        }
    }

    /// What to check or change.
    pub fn help(&self) -> &'static str {
        match self {
            ConfigError::Missing { .. } => {
                "llama.cpp refuses to load a model without this key; check the architecture \
                 prefix (`llama.` vs `qwen2.`) and re-convert with a current converter, or set \
                 the key"
            }
            ConfigError::WrongType { .. } => {
                "the converter stored the value with another type than llama.cpp reads it as; \
                 re-convert, or set the key with the expected type"
            }
            ConfigError::OutOfRange { .. } => {
                "the value cannot be a hyperparameter (counts and lengths are non-negative); \
                 the file is probably damaged or was written by a broken converter"
            }
            ConfigError::WrongLength { .. } => {
                "a per-layer value needs exactly one entry per block (`{arch}.block_count`); \
                 store a scalar when every layer has the same value"
            }
            ConfigError::NotUtf8 { .. } => {
                "the writer stored raw bytes where text belongs; read the value with `meta()`"
            }
        }
    }

    /// The key concerned.
    pub fn key(&self) -> &str {
        match self {
            ConfigError::Missing { key, .. }
            | ConfigError::WrongType { key, .. }
            | ConfigError::OutOfRange { key, .. }
            | ConfigError::WrongLength { key, .. }
            | ConfigError::NotUtf8 { key } => key,
        }
    }
}

impl ModelConfig {
    /// Reads the configuration of `source` (metadata only, and the tensor directory when the
    /// quantization label must be guessed: no tensor data is read). The first problem, in
    /// field order, is the error.
    pub fn from_source<S: WeightSource + ?Sized>(source: &S) -> Result<ModelConfig, ConfigError> {
        ModelConfig::from_metadata(
            |key| source.meta(key),
            source.tensors().iter().map(|t| t.ggml_type),
        )
    }

    /// Reads what can be read, for tools that show a model rather than run it (`inspect`):
    /// a field whose key is missing or mistyped is `None` (an absent `general.architecture`
    /// an empty architecture), and every such problem is listed, in field order.
    pub fn from_source_lenient<S: WeightSource + ?Sized>(
        source: &S,
    ) -> (ModelConfig, Vec<ConfigError>) {
        ModelConfig::read(|key| source.meta(key), source.tensors().iter().map(|t| t.ggml_type))
    }

    /// [`from_source`](Self::from_source) from any metadata lookup and the tensors' types (for
    /// a header parsed without a weight source, e.g. one whose tensor data lies outside the
    /// file). The types are only iterated when `general.file_type` is absent.
    pub fn from_metadata<'a>(
        meta: impl Fn(&str) -> Option<Meta<'a>>,
        tensor_types: impl IntoIterator<Item = GgmlType>,
    ) -> Result<ModelConfig, ConfigError> {
        let (config, errors) = ModelConfig::read(meta, tensor_types);
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(config),
        }
    }

    /// [`from_source_lenient`](Self::from_source_lenient) from any metadata lookup.
    pub fn from_metadata_lenient<'a>(
        meta: impl Fn(&str) -> Option<Meta<'a>>,
        tensor_types: impl IntoIterator<Item = GgmlType>,
    ) -> (ModelConfig, Vec<ConfigError>) {
        ModelConfig::read(meta, tensor_types)
    }

    fn read<'a>(
        meta: impl Fn(&str) -> Option<Meta<'a>>,
        tensor_types: impl IntoIterator<Item = GgmlType>,
    ) -> (ModelConfig, Vec<ConfigError>) {
        let errors = Problems::default();
        let architecture = match meta("general.architecture") {
            None => {
                errors.0.borrow_mut().push(ConfigError::Missing {
                    key: "general.architecture".into(),
                    architecture: "GGUF".into(),
                });
                None
            }
            Some(v) => errors.keep(text("general.architecture", v).map(Some)),
        };
        let known = architecture.as_deref().is_some_and(crate::arch::is_known);
        // Without an architecture there are no `{arch}.` keys to read.
        let arch = |suffix: &str| match &architecture {
            Some(a) => format!("{a}.{suffix}"),
            None => String::new(),
        };
        let lookup = |key: &str| if key.is_empty() { None } else { meta(key) };
        let opt_uint = |key: &str| errors.keep(lookup(key).map(|v| uint(key, v)).transpose());
        let opt_float = |key: &str| errors.keep(lookup(key).map(|v| float(key, v)).transpose());
        let opt_text = |key: &str| errors.keep(lookup(key).map(|v| text(key, v)).transpose());
        let required = |key: &str| match (lookup(key), known) {
            (None, true) => errors.keep(Err(ConfigError::Missing {
                key: key.into(),
                architecture: architecture.clone().unwrap_or_default(),
            })),
            (v, _) => errors.keep(v.map(|v| uint(key, v)).transpose()),
        };

        let context_length = required(&arch("context_length"));
        let embedding_length = required(&arch("embedding_length"));
        let block_count = required(&arch("block_count"));
        let layered = |key: &str| {
            errors.keep(
                lookup(key).map(|v| PerLayer::<u64>::from_meta(key, v, block_count)).transpose(),
            )
        };
        let file_type = opt_uint("general.file_type");
        let quantization = match file_type {
            Some(code) => Quantization::declared(code),
            None => Quantization::guess(tensor_types),
        };
        let vocab_size = opt_uint(&arch("vocab_size")).or_else(|| {
            errors.keep(match meta("tokenizer.ggml.tokens") {
                Some(Meta::Strs(list)) => Ok(Some(list.len() as u64)),
                Some(other) => {
                    Err(wrong_type("tokenizer.ggml.tokens", None, "string array", &other))
                }
                None => Ok(None),
            })
        });
        let pattern_key = arch("attention.sliding_window_pattern");
        let config = ModelConfig {
            name: opt_text("general.name"),
            file_type,
            quantization,
            context_length,
            embedding_length,
            block_count,
            feed_forward_length: layered(&arch("feed_forward_length")),
            head_count: layered(&arch("attention.head_count")),
            head_count_kv: layered(&arch("attention.head_count_kv")),
            key_length: opt_uint(&arch("attention.key_length")),
            value_length: opt_uint(&arch("attention.value_length")),
            expert_count: opt_uint(&arch("expert_count")),
            expert_used_count: opt_uint(&arch("expert_used_count")),
            rope: Rope {
                freq_base: opt_float(&arch("rope.freq_base")),
                dimension_count: opt_uint(&arch("rope.dimension_count")),
                scaling_type: opt_text(&arch("rope.scaling.type")),
                scaling_factor: opt_float(&arch("rope.scaling.factor")),
                original_context_length: opt_uint(&arch("rope.scaling.original_context_length")),
            },
            layer_norm_epsilon: opt_float(&arch("attention.layer_norm_epsilon")),
            layer_norm_rms_epsilon: opt_float(&arch("attention.layer_norm_rms_epsilon")),
            sliding_window: opt_uint(&arch("attention.sliding_window")),
            sliding_window_pattern: errors.keep(
                lookup(&pattern_key)
                    .map(|v| SlidingWindowPattern::from_meta(&pattern_key, v, block_count))
                    .transpose(),
            ),
            vocab_size,
            tokenizer: opt_text("tokenizer.ggml.model"),
            memory: MemoryKeys {
                embedding_length_out: opt_uint(&arch("embedding_length_out")),
                key_length_swa: opt_uint(&arch("attention.key_length_swa")),
                value_length_swa: opt_uint(&arch("attention.value_length_swa")),
                key_length_mla: opt_uint(&arch("attention.key_length_mla")),
                value_length_mla: opt_uint(&arch("attention.value_length_mla")),
                kv_lora_rank: opt_uint(&arch("attention.kv_lora_rank")),
                shared_kv_layers: opt_uint(&arch("attention.shared_kv_layers")),
                nextn_predict_layers: opt_uint(&arch("nextn_predict_layers")),
                full_attention_interval: opt_uint(&arch("full_attention_interval")),
                recurrent_layers: layered(&arch("attention.recurrent_layers")),
                ssm_conv_kernel: opt_uint(&arch("ssm.conv_kernel")),
                ssm_inner_size: opt_uint(&arch("ssm.inner_size")),
                ssm_state_size: opt_uint(&arch("ssm.state_size")),
                ssm_group_count: opt_uint(&arch("ssm.group_count")),
                wkv_head_size: opt_uint(&arch("wkv.head_size")),
                token_shift_count: opt_uint(&arch("token_shift_count")),
                shortconv_l_cache: opt_uint(&arch("shortconv.l_cache")),
                kda_head_dim: opt_uint(&arch("kda.head_dim")),
            },
            known_architecture: known,
            architecture: architecture.unwrap_or_default(),
        };
        (config, errors.0.into_inner())
    }
}

/// The problems met while reading, in field order.
#[derive(Default)]
struct Problems(std::cell::RefCell<Vec<ConfigError>>);

impl Problems {
    /// A field's value, its problem noted (the field is then `None`).
    fn keep<T>(&self, r: Result<Option<T>, ConfigError>) -> Option<T> {
        r.unwrap_or_else(|e| {
            self.0.borrow_mut().push(e);
            None
        })
    }
}

const UINT: &str = "non-negative integer";
const UINT_OR_LAYERS: &str = "integer or per-layer integer array";
const PATTERN: &str = "integer period or per-layer bool array";

fn wrong_type(
    key: &str,
    index: Option<u64>,
    expected: &'static str,
    found: &Meta<'_>,
) -> ConfigError {
    ConfigError::WrongType { key: key.into(), index, expected, found: found.kind().name() }
}

fn to_u64(key: &str, index: Option<u64>, v: i128) -> Result<u64, ConfigError> {
    u64::try_from(v).map_err(|_| ConfigError::OutOfRange {
        key: key.into(),
        index,
        value: v,
        expected: "0 to 2^64 - 1",
    })
}

fn uint(key: &str, v: Meta<'_>) -> Result<u64, ConfigError> {
    match v {
        Meta::Int(i) => to_u64(key, None, i),
        other => Err(wrong_type(key, None, UINT, &other)),
    }
}

fn float(key: &str, v: Meta<'_>) -> Result<f64, ConfigError> {
    match v {
        Meta::Float(x) => Ok(x),
        other => Err(wrong_type(key, None, "float", &other)),
    }
}

fn text(key: &str, v: Meta<'_>) -> Result<String, ConfigError> {
    match v {
        Meta::Str(s) => {
            s.as_str().map(str::to_owned).ok_or_else(|| ConfigError::NotUtf8 { key: key.into() })
        }
        other => Err(wrong_type(key, None, "string", &other)),
    }
}

/// Checks an array's length against the block count (unknown block count: any length).
fn check_len(key: &str, len: u64, block_count: Option<u64>) -> Result<(), ConfigError> {
    match block_count {
        Some(n) if n != len => {
            Err(ConfigError::WrongLength { key: key.into(), len, block_count: n })
        }
        _ => Ok(()),
    }
}

impl PerLayer<u64> {
    /// Normalises the value of `key`: an integer is [`PerLayer::Uniform`]; an integer array
    /// must have one entry per block (`block_count`, unchecked when `None`) and is
    /// [`PerLayer::Layers`]. Anything else is an error naming the key (and the element).
    pub fn from_meta(
        key: &str,
        value: Meta<'_>,
        block_count: Option<u64>,
    ) -> Result<PerLayer<u64>, ConfigError> {
        match value {
            Meta::Int(i) => to_u64(key, None, i).map(PerLayer::Uniform),
            Meta::Ints(list) => {
                check_len(key, list.len() as u64, block_count)?;
                // The array is in the header: its length is backed by bytes present.
                let mut out = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    out.push(to_u64(key, Some(i as u64), v)?);
                }
                Ok(PerLayer::Layers(out))
            }
            other => Err(wrong_type(key, None, UINT_OR_LAYERS, &other)),
        }
    }
}

impl SlidingWindowPattern {
    /// Normalises `{arch}.attention.sliding_window_pattern`: an integer period, or one flag
    /// per block (a bool array, or an integer array of 0 and 1 as `.llmw` stores it).
    pub fn from_meta(
        key: &str,
        value: Meta<'_>,
        block_count: Option<u64>,
    ) -> Result<SlidingWindowPattern, ConfigError> {
        match value {
            Meta::Int(i) => to_u64(key, None, i).map(SlidingWindowPattern::Period),
            Meta::Bool(b) => {
                // One flag for every layer: a period of 0 (all sliding) or of 1 (none).
                Ok(SlidingWindowPattern::Period(if b { 0 } else { 1 }))
            }
            Meta::Array(a) if a.elem_type() == sipllm_gguf::ValueType::Bool => {
                check_len(key, a.len(), block_count)?;
                let mut out = Vec::new();
                for (i, v) in a.iter().enumerate() {
                    match v {
                        MetaValue::Bool(b) => out.push(b),
                        _ => {
                            return Err(ConfigError::WrongType {
                                key: key.into(),
                                index: Some(i as u64),
                                expected: "bool",
                                found: "another type",
                            });
                        }
                    }
                }
                Ok(SlidingWindowPattern::Layers(out))
            }
            Meta::Ints(list) => {
                check_len(key, list.len() as u64, block_count)?;
                let mut out = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    match v {
                        0 => out.push(false),
                        1 => out.push(true),
                        _ => {
                            return Err(ConfigError::OutOfRange {
                                key: key.into(),
                                index: Some(i as u64),
                                value: v,
                                expected: "0 or 1",
                            });
                        }
                    }
                }
                Ok(SlidingWindowPattern::Layers(out))
            }
            other => Err(wrong_type(key, None, PATTERN, &other)),
        }
    }
}
