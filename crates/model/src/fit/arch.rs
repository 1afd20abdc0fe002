//! Which memory each architecture's layers get: llama.cpp's `llama_model::create_memory`
//! (`src/llama-model.cpp`) picks the memory module from the architecture, and each
//! architecture's `load_arch_hparams` (`src/models/*.cpp`) decides which layers use the
//! sliding window and which are recurrent. The table below names, per architecture, the rule
//! this crate implements; an architecture that is not in it is refused
//! ([`FitError::UnsupportedArch`](super::FitError::UnsupportedArch)), never guessed.

/// How an architecture's memory is organised (`create_memory`'s branches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// No memory module at all (embedding and diffusion models: `res = nullptr`).
    NoKv,
    /// A KV cache on every layer (`llama_kv_cache`, or `llama_kv_cache_iswa` with a
    /// sliding window).
    Attention,
    /// Recurrent state on every layer (`llm_arch_is_recurrent`: `llama_memory_recurrent`).
    Recurrent,
    /// Some layers attend, the others are recurrent (`llm_arch_is_hybrid`:
    /// `llama_memory_hybrid`).
    Hybrid(Recr),
}

/// Which layers of a hybrid model are recurrent (`is_recr_impl` in `load_arch_hparams`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recr {
    /// A layer without KV heads (`head_count_kv[il] == 0`): Jamba, Granite hybrid, LFM2,
    /// PLaMo 2, Kimi linear.
    NoKvHeads,
    /// Every `full_attention_interval`-th layer attends (`(il + 1) % interval != 0` is
    /// recurrent): Qwen3-Next, Qwen3.5, MiniMax-01.
    Interval,
}

/// Which layers use the sliding window (`load_swa_pattern(ml, period, dense_first)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Swa {
    /// The default period when `attention.sliding_window_pattern` is absent.
    pub period: u64,
    /// `dense_first`: layer 0 of each period is the full-attention one (else the last).
    pub dense_first: bool,
    /// The window when `attention.sliding_window` is absent (`None`: the window is required
    /// for the sliding window to be on).
    pub default_window: Option<u64>,
}

/// The memory rules of an architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    pub family: Family,
    /// The sliding-window rule, for architectures that have one.
    pub swa: Option<Swa>,
}

const fn attn() -> Rules {
    Rules { family: Family::Attention, swa: None }
}

const fn swa(period: u64, dense_first: bool, default_window: Option<u64>) -> Rules {
    Rules { family: Family::Attention, swa: Some(Swa { period, dense_first, default_window }) }
}

/// Architectures whose memory llama.cpp sizes by rules this crate does not implement, with
/// what is missing (shown by `model::fit::unsupported_arch`).
pub(crate) fn unsupported(arch: &str) -> Option<&'static str> {
    Some(match arch {
        "deepseek2" | "deepseek32" | "kimi-linear" | "glm-dsa" | "kimi-k3" | "mistral4"
        | "minicpm3" | "plm" | "hy_v4" | "minimax-m3" => {
            "the MLA latent cache and sparse-attention indexer caches (llama_kv_cache_dsa, MLA \
             layers without a V cache)"
        }
        "deepseek4" | "dots3note" | "glm5-next" | "qwen4exp" => {
            "the compressed / indexed KV caches of llama_kv_cache_dsv4, _dsa_iswa and \
             llama_memory_hybrid_idx"
        }
        "gemma3n" | "gemma4" | "gemma4-assistant" => {
            "KV sharing across layers (attention.shared_kv_layers, layer reuse)"
        }
        "t5" | "t5encoder" => "the encoder-decoder cross-attention cache",
        "llama4" => "chunked attention (LLAMA_SWA_TYPE_CHUNKED) and its no-RoPE layers",
        "exaone4" | "granite_swa" | "maple" | "mimo2" | "spark2_5" | "step35" | "lfm2"
        | "lfm2moe" | "falcon-h1" | "nemotron_h" | "nemotron_h_moe" | "bailingmoe3"
        | "nanbeige" | "talkie" | "hrm_text" | "pockettts" | "qwen3tts" => {
            "this architecture's own layer layout (sliding-window, recurrent or shared layers)"
        }
        _ => return None,
    })
}

/// The rules of `arch`, when implemented.
pub(crate) fn rules(arch: &str) -> Option<Rules> {
    if unsupported(arch).is_some() {
        return None;
    }
    Some(match arch {
        // create_memory: `res = nullptr`.
        "bert" | "jina-bert-v2" | "jina-bert-v3" | "nomic-bert" | "nomic-bert-moe" | "neo-bert"
        | "eurobert" | "wavtokenizer-dec" | "modern-bert" | "gemma-embedding" | "dream"
        | "llada" | "llada-moe" | "rnd1" => Rules { family: Family::NoKv, swa: None },
        // llm_arch_is_recurrent.
        "mamba" | "mamba2" | "rwkv6" | "rwkv6qwen2" | "rwkv7" | "arwkv7" => {
            Rules { family: Family::Recurrent, swa: None }
        }
        // llm_arch_is_hybrid, by their load_arch_hparams.
        "jamba" | "granitehybrid" | "plamo2" => {
            Rules { family: Family::Hybrid(Recr::NoKvHeads), swa: None }
        }
        "qwen3next" | "qwen35" | "qwen35moe" | "minimax-01" => {
            Rules { family: Family::Hybrid(Recr::Interval), swa: None }
        }
        // Sliding window: src/models/<arch>.cpp's load_swa_pattern(ml, period, dense_first).
        "gemma2" => swa(2, false, Some(4096)),
        "gemma3" | "afmoe" | "mellum" | "olmo2" => {
            swa(if arch == "gemma3" { 6 } else { 4 }, false, None)
        }
        "cohere2" | "muse-glimmer" => swa(4, false, None),
        "cohere2moe" | "laguna" => swa(4, true, None),
        "exaone-moe" => swa(4, false, Some(128)),
        "gpt-oss" => swa(2, false, None),
        "plamo3" => swa(8, false, None),
        // A KV cache on every layer, K and V rows `head_size × n_head_kv[il]`.
        a if GENERIC.contains(&a) => attn(),
        _ => return None,
    })
}

/// The architectures whose every layer caches K and V over the whole context (checked
/// against llama.cpp's breakdown in the goldens, but for `apertus`, `bitnet`, `chameleon` and
/// `gptj`, which no golden covers and llama.cpp builds the same way).
pub(crate) const GENERIC: &[&str] = &[
    "apertus",
    "arcee",
    "arctic",
    "baichuan",
    "bailingmoe",
    "bailingmoe2",
    "bitnet",
    "bloom",
    "chameleon",
    "chatglm",
    "codeshell",
    "cogvlm",
    "command-r",
    "dbrx",
    "deci",
    "deepseek",
    "dots1",
    "ernie4_5",
    "ernie4_5-moe",
    "exaone",
    "falcon",
    "gemma",
    "glm4",
    "glm4moe",
    "gpt2",
    "gptj",
    "gptneox",
    "granite",
    "granitemoe",
    "grok",
    "grovemoe",
    "hunyuan-dense",
    "hunyuan-moe",
    "hunyuan_vl",
    "hy_v3",
    "internlm2",
    "jais",
    "jais2",
    "llama",
    "maincoder",
    "minicpm",
    "minimax-m2",
    "mistral3",
    "mpt",
    "nemotron",
    "olmo",
    "olmoe",
    "openelm",
    "orion",
    "paddleocr",
    "pangu-embedded",
    "phi2",
    "phi3",
    "phimoe",
    "plamo",
    "qwen",
    "qwen2",
    "qwen2moe",
    "qwen2vl",
    "qwen3",
    "qwen3moe",
    "qwen3vl",
    "qwen3vlmoe",
    "refact",
    "seed_oss",
    "smallthinker",
    "smollm3",
    "stablelm",
    "starcoder",
    "starcoder2",
    "xverse",
];
