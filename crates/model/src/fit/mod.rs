//! Will it fit: the memory llama.cpp allocates for a model and a context, from the header
//! alone.
//!
//! [`fit`] follows llama.cpp's own allocator (the commit the goldens in
//! `goldens/llamacpp/` come from): the context parameters as `llama_context`'s constructor
//! resolves them (`src/llama-context.cpp`), the memory module `llama_model::create_memory`
//! picks (`src/llama-model.cpp`), the KV cache's tensors (`llama_kv_cache::llama_kv_cache`,
//! `src/llama-kv-cache.cpp`; the sliding-window split in `src/llama-kv-cache-iswa.cpp`), the
//! recurrent state (`src/llama-memory-recurrent.cpp`), the output buffer
//! (`llama_context::output_reserve`) and the layer placement of `-ngl`
//! (`llama_model::load_tensors`). The compute buffer is the one figure not read off a table:
//! it is the peak of ggml's graph allocator over the worst-case graph, estimated here by the
//! largest live set of the standard decoder graph (see [`compute`]).
//!
//! ```
//! use sipllm_model::fit::{FitParams, FlashAttn};
//! let mut p = FitParams::libllama();
//! p.n_ctx = 8192;
//! p.flash_attn = FlashAttn::On;
//! assert_eq!((p.n_batch, p.n_ubatch, p.n_seq_max, p.swa_full), (2048, 512, 1, true));
//! ```

use sipllm_gguf::GgmlType;
use sipllm_gguf::ggml::{SizeError, tensor_nbytes};

use crate::config::{ModelConfig, PerLayer, SlidingWindowPattern};

mod arch;
pub mod compute;

use arch::{Family, Recr};

/// `flash_attn_type`: `-fa on|off|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashAttn {
    /// `LLAMA_FLASH_ATTN_TYPE_ENABLED`.
    On,
    /// `LLAMA_FLASH_ATTN_TYPE_DISABLED`.
    Off,
    /// `LLAMA_FLASH_ATTN_TYPE_AUTO`: on where the device supports it (the CPU does), and
    /// always for a quantized V cache.
    Auto,
}

/// The context parameters that size memory, in llama.cpp's words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FitParams {
    /// `n_ctx`: the context; 0 is the model's training context (`context_length`).
    pub n_ctx: u32,
    /// `n_batch`: the logical batch.
    pub n_batch: u32,
    /// `n_ubatch`: the physical batch (what one graph computes).
    pub n_ubatch: u32,
    /// `n_seq_max`: parallel sequences (llama-server's `-np`).
    pub n_seq_max: u32,
    /// `type_k`: the K cache's type.
    pub type_k: GgmlType,
    /// `type_v`: the V cache's type.
    pub type_v: GgmlType,
    /// `flash_attn_type`.
    pub flash_attn: FlashAttn,
    /// `kv_unified`: one cache shared by every sequence (else one stream per sequence).
    pub kv_unified: bool,
    /// `swa_full`: full-size caches for sliding-window layers too.
    pub swa_full: bool,
    /// `n_gpu_layers`: layers (counting the output layer) placed on the GPU.
    pub n_gpu_layers: u32,
}

impl FitParams {
    /// llama-server's defaults (`common/common.h`, `common/arg.cpp`,
    /// `tools/server/server.cpp`): the training context (`n_ctx = 0`), `n_batch` 2048,
    /// `n_ubatch` 512, 4 slots sharing a unified cache (`n_parallel` auto), flash attention
    /// auto, f16 K and V, `swa_full` off. `-ngl` auto is taken as 0 (a CPU answer).
    pub fn server() -> FitParams {
        FitParams {
            n_ctx: 0,
            n_batch: 2048,
            n_ubatch: 512,
            n_seq_max: 4,
            type_k: GgmlType::F16,
            type_v: GgmlType::F16,
            flash_attn: FlashAttn::Auto,
            kv_unified: true,
            swa_full: false,
            n_gpu_layers: 0,
        }
    }

    /// `llama_context_default_params()` (`src/llama-context.cpp`): `n_ctx` 512, `n_batch`
    /// 2048, `n_ubatch` 512, one sequence, flash attention auto, f16 K and V, `swa_full` on,
    /// `kv_unified` off.
    pub fn libllama() -> FitParams {
        FitParams {
            n_ctx: 512,
            n_batch: 2048,
            n_ubatch: 512,
            n_seq_max: 1,
            type_k: GgmlType::F16,
            type_v: GgmlType::F16,
            flash_attn: FlashAttn::Auto,
            kv_unified: false,
            swa_full: true,
            n_gpu_layers: 0,
        }
    }
}

impl FlashAttn {
    /// `on`, `off` or `auto`, as `-fa` spells them.
    pub fn from_name(name: &str) -> Option<FlashAttn> {
        match name {
            "on" => Some(FlashAttn::On),
            "off" => Some(FlashAttn::Off),
            "auto" => Some(FlashAttn::Auto),
            _ => None,
        }
    }
}

/// The cache types llama.cpp accepts for `-ctk`/`-ctv` (`kv_cache_types`, `common/arg.cpp`).
pub const CACHE_TYPES: &[&str] =
    &["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"];

/// The cache type `name` names (one of [`CACHE_TYPES`], any case).
pub fn cache_type(name: &str) -> Result<GgmlType, FitError> {
    let lower = name.to_ascii_lowercase();
    CACHE_TYPES.contains(&lower.as_str()).then(|| GgmlType::from_name(&lower)).flatten().ok_or_else(
        || FitError::Param {
            param: "cache type",
            problem: format!("unsupported cache type {name:?} (one of {})", CACHE_TYPES.join(", ")),
        },
    )
}

impl FitParams {
    /// The defaults by name: `server` ([`FitParams::server`]) or `libllama`.
    pub fn profile(name: &str) -> Option<FitParams> {
        match name {
            "server" => Some(FitParams::server()),
            "libllama" => Some(FitParams::libllama()),
            _ => None,
        }
    }
}

/// llama.cpp's `LLAMA_MAX_SEQ`.
pub const MAX_SEQ: u32 = 256;

/// One tensor of the model, as placement needs it.
#[derive(Debug, Clone, Copy)]
pub struct Weight<'a> {
    /// The tensor's name (`blk.3.attn_q.weight`).
    pub name: &'a str,
    /// Its stored size in bytes.
    pub nbytes: u64,
}

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// The GPU layers go to (one device: `-ngl` without a split).
    Gpu,
}

impl Device {
    /// `cpu` / `gpu`, as the JSON names them.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

/// What one layer's memory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// A KV cache over the whole context.
    Full,
    /// A KV cache over the sliding window (plus a ubatch), unless `swa_full`.
    Sliding,
    /// Recurrent state (no KV cache).
    Recurrent,
    /// No memory of its own (a multi-token-prediction layer, or a model without memory).
    None,
}

/// One layer's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerMemory {
    /// The layer's index.
    pub layer: u32,
    /// What the layer holds.
    pub kind: LayerKind,
    /// The device of its cache (the layer's device: `offload_kqv` is on).
    pub device: Device,
    /// KV cells per stream.
    pub cells: u32,
    /// K cache bytes (all streams).
    pub k_bytes: u64,
    /// V cache bytes (all streams).
    pub v_bytes: u64,
    /// Recurrent state bytes (`r` and `s`).
    pub recurrent_bytes: u64,
}

/// One device's share.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceMemory {
    /// The device.
    pub device: Device,
    /// Weights placed there.
    pub model_bytes: u64,
    /// KV cache there.
    pub kv_bytes: u64,
    /// Recurrent state there.
    pub recurrent_bytes: u64,
    /// The compute buffer there.
    pub compute_bytes: u64,
    /// True when `compute_bytes` is an estimate (today always: see [`compute`]).
    pub compute_estimated: bool,
    /// The output (logits) buffer, on the host.
    pub output_bytes: u64,
}

impl DeviceMemory {
    /// Everything on this device.
    pub fn total(&self) -> u64 {
        self.model_bytes
            .saturating_add(self.kv_bytes)
            .saturating_add(self.recurrent_bytes)
            .saturating_add(self.compute_bytes)
            .saturating_add(self.output_bytes)
    }
}

/// The context llama.cpp would create: the parameters after its own adjustments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resolved {
    /// `n_ctx` after the 256 padding (and, without a unified cache, rounding to whole streams).
    pub n_ctx: u32,
    /// `n_ctx_seq`: cells per stream.
    pub n_ctx_seq: u32,
    /// `n_batch` (at most `n_ctx` with causal attention).
    pub n_batch: u32,
    /// `n_ubatch`.
    pub n_ubatch: u32,
    /// `n_seq_max`.
    pub n_seq_max: u32,
    /// KV streams: 1 when unified, else `n_seq_max`.
    pub n_stream: u32,
    /// Flash attention as resolved (auto is on).
    pub flash_attn: bool,
    /// Cells of a sliding-window layer's cache per stream (`None` without sliding-window
    /// layers).
    pub swa_cells: Option<u32>,
}

/// The memory llama.cpp would allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fit {
    /// The architecture.
    pub architecture: String,
    /// The parameters as llama.cpp resolves them.
    pub resolved: Resolved,
    /// KV cache bytes (every device).
    pub kv_bytes: u64,
    /// Recurrent state bytes (every device).
    pub recurrent_bytes: u64,
    /// The output buffer (logits of `n_seq_max` outputs), which llama.cpp's memory
    /// breakdown leaves out.
    pub output_bytes: u64,
    /// Weights (every device).
    pub model_bytes: u64,
    /// Per device, CPU first.
    pub devices: Vec<DeviceMemory>,
    /// Per layer.
    pub layers: Vec<LayerMemory>,
}

impl Fit {
    /// Everything, every device.
    pub fn total_bytes(&self) -> u64 {
        self.devices.iter().fold(0u64, |acc, d| acc.saturating_add(d.total()))
    }

    /// The compute buffer of `device` (0 when nothing runs there).
    pub fn compute_bytes(&self, device: Device) -> u64 {
        self.devices.iter().find(|d| d.device == device).map_or(0, |d| d.compute_bytes)
    }
}

/// Why no answer can be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// llama.cpp refuses a quantized V cache without flash attention.
    #[error("a {type_v} V cache needs flash attention, which is off")]
    NeedsFlashAttn {
        /// The V cache type.
        type_v: GgmlType,
    },
    /// The architecture's memory rules are not implemented.
    #[error("the memory of {architecture:?} models is not modelled: {missing}")]
    UnsupportedArch {
        /// The architecture.
        architecture: String,
        /// What is missing.
        missing: &'static str,
    },
    /// A hyperparameter the rules need is absent or out of range.
    #[error("{key}: {problem}")]
    Hyperparameter {
        /// The key (`llama.block_count`).
        key: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A parameter llama.cpp rejects.
    #[error("{param}: {problem}")]
    Param {
        /// The parameter (`n_seq_max`).
        param: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The cache type cannot hold the layer's rows.
    #[error("{which} cache type {ty} does not divide a row of {row} elements (layer {layer})")]
    CacheType {
        /// `K` or `V`.
        which: &'static str,
        /// The type.
        ty: GgmlType,
        /// The row length.
        row: u64,
        /// The layer.
        layer: u32,
    },
    /// A size overflows 64 bits.
    #[error("a memory size overflows 64 bits")]
    Overflow,
}

impl FitError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            FitError::NeedsFlashAttn { .. } => "model::fit::needs_flash_attn",
            FitError::UnsupportedArch { .. } => "model::fit::unsupported_arch",
            FitError::Hyperparameter { .. } => "model::fit::hyperparameter",
            FitError::Param { .. } => "model::fit::param",
            FitError::CacheType { .. } => "model::fit::cache_type",
            FitError::Overflow => "model::fit::overflow",
        }
    }

    /// What to do about it.
    pub fn help(&self) -> &'static str {
        match self {
            FitError::NeedsFlashAttn { .. } => {
                "llama.cpp refuses to create this context (llama_init_from_model: \"quantized V \
                 cache requires flash_attn to be enabled\"); use -fa on or auto, or an f16 V cache"
            }
            FitError::UnsupportedArch { .. } => {
                "no answer is better than a wrong one; the generic, sliding-window, recurrent \
                 and hybrid families are modelled (docs/model.md, \"Memory fit\")"
            }
            FitError::Hyperparameter { .. } => {
                "llama.cpp reads this key to size the model's memory; check the file with \
                 `sipllm validate`"
            }
            FitError::Param { .. } => "llama.cpp refuses this context parameter",
            FitError::CacheType { .. } => {
                "llama.cpp refuses a quantized cache whose block size does not divide the head \
                 size; choose f16 or another type"
            }
            FitError::Overflow => "the parameters are too large for any machine",
        }
    }
}

/// Bytes of `rows` rows of `n` elements of `ty` (`ggml_row_size` × rows, by the ggml type
/// table's block sizes).
fn rows_bytes(ty: GgmlType, n: u64, rows: &[u64]) -> Option<u64> {
    let mut dims = vec![n];
    dims.extend_from_slice(rows);
    tensor_nbytes(ty, &dims).ok()
}

/// A cache tensor's bytes: a row the type's blocks do not divide is llama.cpp's refusal,
/// anything else a size too large for 64 bits.
fn cache_bytes(
    which: &'static str,
    ty: GgmlType,
    row: u64,
    rows: &[u64],
    layer: u32,
) -> Result<u64, FitError> {
    let mut dims = vec![row];
    dims.extend_from_slice(rows);
    tensor_nbytes(ty, &dims).map_err(|e| match e {
        SizeError::NotBlockMultiple { .. } | SizeError::UnsizedType(_) => {
            FitError::CacheType { which, ty, row, layer }
        }
        _ => FitError::Overflow,
    })
}

fn pad(x: u64, n: u64) -> u64 {
    x.div_ceil(n).saturating_mul(n)
}

fn key(config: &ModelConfig, suffix: &str) -> String {
    format!("{}.{suffix}", config.architecture)
}

fn layer_value(v: Option<&PerLayer<u64>>, il: usize, default: u64) -> u64 {
    v.and_then(|p| p.layer(il)).unwrap_or(default)
}

/// The hyperparameters that size memory, per layer, as `llama_hparams` holds them.
struct Hparams {
    n_layer_all: u32,
    /// Layers the main context caches (`n_layer()`: without the MTP layers).
    n_layer: u32,
    n_embd: u64,
    n_vocab: u64,
    n_head_max: u64,
    swa_window: Option<u64>,
    layers: Vec<LayerHp>,
    /// `n_embd_r()` and `n_embd_s()` of recurrent layers.
    n_embd_r: u64,
    n_embd_s: u64,
    n_ff_max: u64,
}

#[derive(Clone, Copy)]
struct LayerHp {
    kind: LayerKind,
    n_embd_k_gqa: u64,
    n_embd_v_gqa: u64,
    n_embd_head_k: u64,
    n_embd_head_v: u64,
}

fn hparams(config: &ModelConfig) -> Result<Hparams, FitError> {
    let arch = config.architecture.as_str();
    let rules = arch::rules(arch).ok_or_else(|| FitError::UnsupportedArch {
        architecture: arch.to_owned(),
        missing: arch::unsupported(arch)
            .unwrap_or("no memory rules for this architecture (llama.cpp may not know it)"),
    })?;
    let missing =
        |suffix: &str| FitError::Hyperparameter { key: key(config, suffix), problem: "missing" };
    let block_count = config.block_count.ok_or_else(|| missing("block_count"))?;
    // llama.cpp: GGML_ASSERT(n_layer_all > 0 && n_layer_all <= LLAMA_MAX_LAYERS (512)).
    let n_layer_all = u32::try_from(block_count).ok().filter(|n| (1..=512).contains(n)).ok_or(
        FitError::Hyperparameter {
            key: key(config, "block_count"),
            problem: "must be 1 to 512 (llama.cpp aborts otherwise)",
        },
    )?;
    let nextn = config.memory.nextn_predict_layers.unwrap_or(0);
    let n_layer = u32::try_from(nextn).ok().and_then(|n| n_layer_all.checked_sub(n)).ok_or(
        FitError::Hyperparameter {
            key: key(config, "nextn_predict_layers"),
            problem: "larger than block_count",
        },
    )?;
    let n_embd = config.embedding_length.ok_or_else(|| missing("embedding_length"))?;
    let n_vocab = config.vocab_size.unwrap_or(0);
    let m = &config.memory;

    // Sliding window: on when the architecture has the rule and a window (its own default
    // or the key), as its load_arch_hparams decides.
    let swa_window =
        rules.swa.and_then(|s| config.sliding_window.or(s.default_window)).filter(|&w| w > 0);
    let is_swa = |il: u32| -> bool {
        let (Some(rule), Some(_)) = (rules.swa, swa_window) else { return false };
        if il >= n_layer {
            return false; // set_swa_pattern: the MTP layers are full attention
        }
        match &config.sliding_window_pattern {
            Some(SlidingWindowPattern::Layers(v)) => v.get(il as usize).copied().unwrap_or(false),
            Some(SlidingWindowPattern::Period(p)) => period_swa(*p, rule.dense_first, il),
            None => period_swa(rule.period, rule.dense_first, il),
        }
    };
    // qwen3next.cpp's default interval is 4, minimax-01.cpp's 8.
    let default_interval = if arch == "minimax-01" { 8 } else { 4 };
    let interval = m.full_attention_interval.unwrap_or(default_interval).max(1);
    let is_recr = |il: u32, n_head_kv: u64| -> bool {
        match rules.family {
            Family::Recurrent => il < n_layer,
            Family::Hybrid(Recr::NoKvHeads) => n_head_kv == 0,
            // attention.recurrent_layers when present, else the interval.
            Family::Hybrid(Recr::Interval) => match &m.recurrent_layers {
                Some(r) => r.layer(il as usize).is_some_and(|v| v != 0),
                None => il < n_layer && (u64::from(il) + 1) % interval != 0,
            },
            Family::Attention | Family::NoKv => false,
        }
    };

    let mut layers = Vec::with_capacity(n_layer_all as usize);
    let mut n_head_max = 0u64;
    let mut n_ff_max = 0u64;
    for il in 0..n_layer_all {
        let i = il as usize;
        let n_head = layer_value(config.head_count.as_ref(), i, 0);
        let n_head_kv = layer_value(config.head_count_kv.as_ref(), i, n_head);
        n_head_max = n_head_max.max(n_head);
        n_ff_max = n_ff_max.max(layer_value(config.feed_forward_length.as_ref(), i, 0));
        // load_hparams: the head size defaults to n_embd / n_head(0) (0 without heads).
        let n_head0 = layer_value(config.head_count.as_ref(), 0, 0);
        let default_head = n_embd.checked_div(n_head0).unwrap_or(0);
        let head_k_full = config.key_length.unwrap_or(default_head);
        let head_v_full = config.value_length.unwrap_or(default_head);
        let sliding = is_swa(il);
        let (head_k, head_v) = if sliding {
            (m.key_length_swa.unwrap_or(head_k_full), m.value_length_swa.unwrap_or(head_v_full))
        } else {
            (head_k_full, head_v_full)
        };
        let kind = if rules.family == Family::NoKv {
            LayerKind::None
        } else if is_recr(il, n_head_kv) {
            LayerKind::Recurrent
        } else if rules.family == Family::Recurrent || il >= n_layer {
            // The MTP layers: create_memory's filter keeps il < n_layer(), and
            // llama_memory_recurrent sizes n_layer() layers.
            LayerKind::None
        } else if sliding {
            LayerKind::Sliding
        } else {
            LayerKind::Full
        };
        let over = FitError::Overflow;
        layers.push(LayerHp {
            kind,
            n_embd_k_gqa: head_k.checked_mul(n_head_kv).ok_or(over.clone())?,
            n_embd_v_gqa: head_v.checked_mul(n_head_kv).ok_or(over)?,
            n_embd_head_k: head_k,
            n_embd_head_v: head_v,
        });
    }

    // llama_hparams::n_embd_r / n_embd_s.
    let n_head0 = layer_value(config.head_count.as_ref(), 0, 0);
    let (n_embd_r, n_embd_s) = if let Some(wkv) = m.wkv_head_size.filter(|&w| w != 0) {
        (m.token_shift_count.unwrap_or(2).saturating_mul(n_embd), n_embd.saturating_mul(wkv))
    } else if let Some(l) = m.shortconv_l_cache.filter(|&l| l != 0) {
        (n_embd.saturating_mul(l - 1), 0)
    } else if arch == "minimax-01" {
        // minimax-01.cpp: n_embd_head_la = n_embd_head_k; s is head² × n_head, no conv state.
        let la = config.key_length.unwrap_or_else(|| n_embd.checked_div(n_head0).unwrap_or(0));
        (0, la.saturating_mul(la).saturating_mul(n_head0))
    } else if let Some(kda) = m.kda_head_dim.filter(|&k| k != 0) {
        let d_inner = n_head0.saturating_mul(kda);
        let conv = m.ssm_conv_kernel.filter(|&k| k > 0).map_or(3, |k| k - 1);
        (
            3u64.saturating_mul(conv).saturating_mul(d_inner),
            kda.saturating_mul(kda).saturating_mul(n_head0),
        )
    } else {
        let conv = m.ssm_conv_kernel.map_or(0, |k| k.saturating_sub(1));
        let d_inner = m.ssm_inner_size.unwrap_or(0);
        let d_state = m.ssm_state_size.unwrap_or(0);
        let groups = m.ssm_group_count.unwrap_or(0);
        let width = d_inner.saturating_add(2u64.saturating_mul(groups).saturating_mul(d_state));
        (conv.saturating_mul(width), d_state.saturating_mul(d_inner))
    };

    Ok(Hparams {
        n_layer_all,
        n_layer,
        n_embd,
        n_vocab,
        n_head_max,
        swa_window,
        layers,
        n_embd_r,
        n_embd_s,
        n_ff_max,
    })
}

/// `llama_hparams::set_swa_pattern`: of every `period` layers one is full attention (the
/// first with `dense_first`, else the last); period 0 means every layer slides.
fn period_swa(period: u64, dense_first: bool, il: u32) -> bool {
    let il = u64::from(il);
    if period == 0 {
        return true;
    }
    if dense_first { il % period != 0 } else { il % period < period - 1 }
}

/// Which layer a weight belongs to: `Some(il)` for `blk.{il}.`, `None` for the input layer
/// (the token embeddings, always on the CPU), else the output layer (`n_layer_all`).
fn weight_layer(name: &str, n_layer_all: u32) -> Option<u32> {
    if let Some(rest) = name.strip_prefix("blk.") {
        let il = rest.split('.').next().and_then(|n| n.parse::<u32>().ok());
        return Some(il.unwrap_or(n_layer_all).min(n_layer_all));
    }
    const INPUT: &[&str] = &[
        "token_embd.",
        "token_types.",
        "position_embd.",
        "token_embd_norm.",
        "per_layer_token_embd.",
    ];
    if INPUT.iter().any(|p| name.starts_with(p)) { None } else { Some(n_layer_all) }
}

/// `llama_model::load_tensors`: `i_gpu_start = max(n_layer + 1 − ngl, 0)`, at most
/// `n_layer + 1` layers (the output layer is layer `n_layer`) on the GPU.
fn layer_device(il: u32, n_layer_all: u32, ngl: u32) -> Device {
    let total = u64::from(n_layer_all) + 1;
    let ngl = u64::from(ngl);
    let i_gpu_start = total.saturating_sub(ngl);
    let act = ngl.min(total);
    let il = u64::from(il);
    if il < i_gpu_start || il - i_gpu_start >= act { Device::Cpu } else { Device::Gpu }
}

/// The memory llama.cpp would allocate for `config` (with its `weights`) under `params`.
pub fn fit(
    config: &ModelConfig,
    weights: &[Weight<'_>],
    params: &FitParams,
) -> Result<Fit, FitError> {
    let hp = hparams(config)?;
    let resolved = resolve(config, &hp, params)?;
    let cells = resolved.n_ctx_seq;
    let n_stream = u64::from(resolved.n_stream);
    let v_trans = !resolved.flash_attn;
    // [TAG_V_CACHE_VARIABLE]: without flash attention every V row is the widest.
    let v_max = hp.layers.iter().map(|l| l.n_embd_v_gqa).max().unwrap_or(0);
    let rs_rows = u64::from(resolved.n_seq_max.max(1));

    let mut layers = Vec::with_capacity(hp.layers.len());
    for (il, l) in (0u32..).zip(&hp.layers) {
        let device = layer_device(il, hp.n_layer_all, params.n_gpu_layers);
        let mut mem = LayerMemory {
            layer: il,
            kind: l.kind,
            device,
            cells: 0,
            k_bytes: 0,
            v_bytes: 0,
            recurrent_bytes: 0,
        };
        match l.kind {
            LayerKind::Full | LayerKind::Sliding => {
                let c = if l.kind == LayerKind::Sliding {
                    resolved.swa_cells.unwrap_or(cells)
                } else {
                    cells
                };
                let v_row = if v_trans { v_max } else { l.n_embd_v_gqa };
                let rows = [u64::from(c), n_stream];
                mem.cells = c;
                mem.k_bytes = cache_bytes("K", params.type_k, l.n_embd_k_gqa, &rows, il)?;
                mem.v_bytes = cache_bytes("V", params.type_v, v_row, &rows, il)?;
            }
            LayerKind::Recurrent => {
                // llama_memory_recurrent: r and s, F32, mem_size = max(1, n_seq_max) rows.
                let r =
                    rows_bytes(GgmlType::F32, hp.n_embd_r, &[rs_rows]).ok_or(FitError::Overflow)?;
                let s =
                    rows_bytes(GgmlType::F32, hp.n_embd_s, &[rs_rows]).ok_or(FitError::Overflow)?;
                mem.recurrent_bytes = r.checked_add(s).ok_or(FitError::Overflow)?;
            }
            LayerKind::None => {}
        }
        layers.push(mem);
    }

    let mut devices = vec![DeviceMemory {
        device: Device::Cpu,
        model_bytes: 0,
        kv_bytes: 0,
        recurrent_bytes: 0,
        compute_bytes: 0,
        compute_estimated: false,
        output_bytes: 0,
    }];
    let offloaded = params.n_gpu_layers > 0;
    if offloaded {
        let mut gpu = devices[0].clone();
        gpu.device = Device::Gpu;
        devices.push(gpu);
    }
    let slot = |devices: &mut Vec<DeviceMemory>, d: Device| -> usize {
        devices.iter().position(|x| x.device == d).unwrap_or(0)
    };
    for w in weights {
        let d = match weight_layer(w.name, hp.n_layer_all) {
            None => Device::Cpu,
            Some(il) => layer_device(il, hp.n_layer_all, params.n_gpu_layers),
        };
        let i = slot(&mut devices, d);
        // Each tensor of a backend buffer starts at the buffer type's alignment (32 on the
        // CPU: ggml's TENSOR_ALIGNMENT), which is what the breakdown's model bytes count.
        let padded = w.nbytes.checked_next_multiple_of(32).ok_or(FitError::Overflow)?;
        devices[i].model_bytes =
            devices[i].model_bytes.checked_add(padded).ok_or(FitError::Overflow)?;
    }
    for l in &layers {
        let i = slot(&mut devices, l.device);
        let kv = l.k_bytes.checked_add(l.v_bytes).ok_or(FitError::Overflow)?;
        devices[i].kv_bytes = devices[i].kv_bytes.checked_add(kv).ok_or(FitError::Overflow)?;
        devices[i].recurrent_bytes =
            devices[i].recurrent_bytes.checked_add(l.recurrent_bytes).ok_or(FitError::Overflow)?;
    }
    // llama_context::output_reserve(n_seq_max): logits for n_seq_max outputs, f32, on the host.
    let output_bytes = hp
        .n_vocab
        .checked_mul(u64::from(resolved.n_seq_max))
        .and_then(|n| n.checked_mul(4))
        .ok_or(FitError::Overflow)?;
    devices[0].output_bytes = output_bytes;

    let graph = compute::Graph {
        n_embd: hp.n_embd,
        n_vocab: hp.n_vocab,
        n_ff: hp.n_ff_max,
        n_head: hp.n_head_max,
        n_embd_head_k: hp.layers.iter().map(|l| l.n_embd_head_k).max().unwrap_or(0),
        n_embd_head_v: hp.layers.iter().map(|l| l.n_embd_head_v).max().unwrap_or(0),
        n_embd_k_gqa: hp.layers.iter().map(|l| l.n_embd_k_gqa).max().unwrap_or(0),
        n_embd_v_gqa: v_max,
        n_kv: layers
            .iter()
            .filter(|l| matches!(l.kind, LayerKind::Full | LayerKind::Sliding))
            .map(|l| u64::from(l.cells))
            .max()
            .unwrap_or(0),
        n_tokens: u64::from(resolved.n_ubatch.min(resolved.n_ctx)),
        n_outputs: u64::from(resolved.n_ubatch.min(resolved.n_ctx).min(resolved.n_batch)),
        flash_attn: resolved.flash_attn,
    };
    let peak = graph.peak_bytes().ok_or(FitError::Overflow)?;
    if offloaded {
        let all_on_gpu = layer_device(0, hp.n_layer_all, params.n_gpu_layers) == Device::Gpu;
        devices[1].compute_bytes = peak;
        devices[1].compute_estimated = true;
        // The host keeps the input embeddings' rows, and the whole graph when layers stay.
        devices[0].compute_bytes = if all_on_gpu { graph.input_bytes().unwrap_or(0) } else { peak };
        devices[0].compute_estimated = true;
    } else {
        devices[0].compute_bytes = peak;
        // Byte-exact on the Llama-3-8B shape, but a model of the allocator's peak, not the
        // allocator: an estimate everywhere (docs/model.md gives its accuracy).
        devices[0].compute_estimated = true;
    }

    let sum =
        |f: fn(&DeviceMemory) -> u64| devices.iter().fold(0u64, |a, d| a.saturating_add(f(d)));
    Ok(Fit {
        architecture: config.architecture.clone(),
        kv_bytes: sum(|d| d.kv_bytes),
        recurrent_bytes: sum(|d| d.recurrent_bytes),
        model_bytes: sum(|d| d.model_bytes),
        output_bytes,
        resolved,
        devices,
        layers,
    })
}

/// The context parameters as `llama_context::llama_context` and `llama_init_from_model`
/// resolve them, and the refusals of `llama_init_from_model`.
fn resolve(config: &ModelConfig, hp: &Hparams, p: &FitParams) -> Result<Resolved, FitError> {
    let param = |param: &'static str, problem: String| FitError::Param { param, problem };
    if p.n_batch == 0 && p.n_ubatch == 0 {
        return Err(param("n_batch", "n_batch and n_ubatch cannot both be zero".into()));
    }
    if p.n_seq_max > MAX_SEQ {
        return Err(param("n_seq_max", format!("must be <= {MAX_SEQ}")));
    }
    let n_seq_max = p.n_seq_max.max(1);
    let n_ctx_train = config.context_length.unwrap_or(0);
    let n_ctx = if p.n_ctx == 0 { u32::try_from(n_ctx_train).unwrap_or(u32::MAX) } else { p.n_ctx };
    if n_ctx == 0 {
        return Err(param(
            "n_ctx",
            "n_ctx and the model's context_length cannot both be zero".into(),
        ));
    }
    // Grok: flash attention is forced off.
    let requested = if config.architecture == "grok" { FlashAttn::Off } else { p.flash_attn };
    let quantized = |t: GgmlType| t.block_size().is_some_and(|b| b > 1);
    if quantized(p.type_v) && requested == FlashAttn::Off {
        return Err(FitError::NeedsFlashAttn { type_v: p.type_v });
    }
    // Auto resolves to on for the CPU (and for a quantized V cache in any case).
    let flash_attn = requested != FlashAttn::Off;
    if flash_attn {
        for (il, l) in (0u32..).zip(&hp.layers).take(hp.n_layer as usize) {
            for (which, ty, head) in
                [("K", p.type_k, l.n_embd_head_k), ("V", p.type_v, l.n_embd_head_v)]
            {
                if quantized(ty) && ty.block_size().is_some_and(|b| head % b != 0) {
                    return Err(FitError::CacheType { which, ty, row: head, layer: il });
                }
            }
        }
    }
    // With causal attention the batch is at most the context (asked for, before padding).
    let n_batch = p.n_batch.min(n_ctx);
    // cparams.n_ctx = GGML_PAD(n_ctx, 256); per-stream cells padded to 256 too.
    let n_ctx = u32::try_from(pad(u64::from(n_ctx), 256)).map_err(|_| FitError::Overflow)?;
    let (n_ctx, n_ctx_seq) = if p.kv_unified {
        (n_ctx, n_ctx)
    } else {
        let seq = u32::try_from(pad(u64::from(n_ctx / n_seq_max), 256))
            .map_err(|_| FitError::Overflow)?;
        if seq == 0 {
            return Err(param("n_ctx", "n_ctx_seq == 0".into()));
        }
        (seq.checked_mul(n_seq_max).ok_or(FitError::Overflow)?, seq)
    };
    let n_ubatch = n_batch.min(if p.n_ubatch == 0 { p.n_batch } else { p.n_ubatch });
    let n_stream = if p.kv_unified { 1 } else { n_seq_max };
    // llama_kv_cache_iswa: GGML_PAD(min(size_base, n_swa * (unified ? n_seq_max : 1) +
    // n_ubatch), 256), or the whole cache with swa_full.
    let any_swa = hp.layers.iter().any(|l| l.kind == LayerKind::Sliding);
    let swa_cells = match (any_swa, hp.swa_window) {
        (true, Some(w)) if !p.swa_full => {
            let streams = if p.kv_unified { u64::from(n_seq_max) } else { 1 };
            let want = w.saturating_mul(streams).saturating_add(u64::from(n_ubatch));
            let c = pad(want.min(u64::from(n_ctx_seq)), 256);
            Some(u32::try_from(c).map_err(|_| FitError::Overflow)?)
        }
        (true, _) => Some(n_ctx_seq),
        (false, _) => None,
    };
    Ok(Resolved { n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max, n_stream, flash_attn, swa_cells })
}

/// The weights of a [`WeightSource`](sipllm_streaming::WeightSource)'s tensors (a tensor of
/// unknown size counts 0).
pub fn weights_of(tensors: &[sipllm_streaming::SourceTensor]) -> Vec<Weight<'_>> {
    tensors.iter().map(|t| Weight { name: &t.name, nbytes: t.nbytes.unwrap_or(0) }).collect()
}

/// A parsed GGUF header's configuration and tensor sizes, for a header without its tensor
/// data (a header-only copy, or a file whose data lies elsewhere): what [`fit`] needs.
pub fn from_gguf_header<B: AsRef<[u8]>>(
    gguf: &sipllm_gguf::Gguf<B>,
) -> Result<(ModelConfig, Vec<(String, u64)>), crate::config::ConfigError> {
    let config = ModelConfig::from_metadata(
        |key| gguf.get_entry(key).map(|e| sipllm_streaming::Meta::from_gguf(e.key, e.value)),
        gguf.tensor_infos().iter().map(|t| t.ggml_type()),
    )?;
    let weights = gguf
        .tensors()
        .map(|t| (t.name.to_string_lossy().into_owned(), t.info.nbytes().unwrap_or(0)))
        .collect();
    Ok((config, weights))
}

/// The largest context (a multiple of 256: llama.cpp pads every context to 256 cells) whose
/// [`Fit::total_bytes`] is at most `budget`, with the other parameters of `params`; `None`
/// when not even 256 cells fit. Every size grows with the context, so a binary search over
/// the 256-cell steps finds it (at most 24 fits); the search stops at 2^24 cells.
pub fn max_context(
    config: &ModelConfig,
    weights: &[Weight<'_>],
    params: &FitParams,
    budget: u64,
) -> Result<Option<Fit>, FitError> {
    let at = |steps: u32| -> Result<Fit, FitError> {
        let mut p = params.clone();
        p.n_ctx = steps.saturating_mul(256);
        fit(config, weights, &p)
    };
    let first = at(1)?;
    if first.total_bytes() > budget {
        return Ok(None);
    }
    let (mut lo, mut hi) = (1u32, 1u32 << 16); // lo fits; hi is the first step not tried
    let mut best = first;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        match at(mid) {
            Ok(f) if f.total_bytes() <= budget => {
                lo = mid;
                best = f;
            }
            Ok(_) | Err(FitError::Overflow) => hi = mid,
            Err(e) => return Err(e),
        }
    }
    Ok(Some(best))
}
