//! The compute buffer: the peak of ggml's graph allocator (`ggml-alloc.c`, reached through
//! `llama_context::sched_reserve` → `graph_reserve`) over the worst-case graph, a ubatch of
//! `n_ubatch` tokens against the whole cache.
//!
//! The allocator frees each intermediate tensor after its last use and reuses memory in
//! place, so the buffer is the largest set of tensors alive at once. In the standard decoder
//! graph (`llm_build_llama`, `src/models/llama.cpp`, and the many architectures built the same
//! way) that is the larger of two moments:
//!
//! - the output: the logits (`n_vocab × n_outputs` f32) with the final norm's input and
//!   output (`2 × n_embd × n_tokens` f32) and the output row ids (`n_outputs` i32);
//! - the attention of one layer (`build_attn_mha`, `src/llama-graph.cpp`): without flash
//!   attention the scores `kq` (`n_kv × n_tokens × n_head` f32, soft-maxed in place) and the
//!   f32 mask (`n_kv × n_tokens`); with it only the f16 mask; plus the layer's live
//!   activations — the residual, the norm, Q, K, V, the attention output and its projection
//!   (`(3 × n_embd + n_head × (head_k + head_v) + n_embd_k_gqa + n_embd_v_gqa) × n_tokens`
//!   f32) — and the graph inputs (token ids, positions, KV row indices: `20 × n_tokens`).
//!
//! Checked byte for byte on the Llama-3-8B-shaped goldens (every context, cache type and
//! flash-attention setting; see `crates/model/tests/it/fit.rs`); for other graphs (MoE
//! routing, sliding-window masks, recurrent scans) it is an estimate and labelled so.

/// The shape of the worst-case graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Graph {
    /// `n_embd`.
    pub n_embd: u64,
    /// The vocabulary (logits per output).
    pub n_vocab: u64,
    /// The largest `n_ff`.
    pub n_ff: u64,
    /// The largest `n_head`.
    pub n_head: u64,
    /// K head size.
    pub n_embd_head_k: u64,
    /// V head size.
    pub n_embd_head_v: u64,
    /// K row (`head_k × n_head_kv`).
    pub n_embd_k_gqa: u64,
    /// V row.
    pub n_embd_v_gqa: u64,
    /// KV cells the attention reads (one stream's whole cache).
    pub n_kv: u64,
    /// Tokens of the ubatch (`min(n_ctx, n_ubatch)`).
    pub n_tokens: u64,
    /// Outputs (`min(n_tokens, n_outputs_max)`).
    pub n_outputs: u64,
    /// Flash attention on.
    pub flash_attn: bool,
}

impl Graph {
    /// The output moment's bytes.
    pub fn output_bytes(&self) -> Option<u64> {
        let logits = self.n_vocab.checked_mul(self.n_outputs)?.checked_mul(4)?;
        let norm = self.n_embd.checked_mul(self.n_tokens)?.checked_mul(8)?;
        logits.checked_add(norm)?.checked_add(self.n_outputs.checked_mul(4)?)
    }

    /// The attention moment's bytes.
    pub fn attention_bytes(&self) -> Option<u64> {
        let per_token_kv = self.n_kv.checked_mul(self.n_tokens)?;
        let scores = if self.flash_attn {
            per_token_kv.checked_mul(2)? // the f16 mask only
        } else {
            per_token_kv.checked_mul(self.n_head.checked_add(1)?)?.checked_mul(4)?
        };
        let heads = self.n_head.checked_mul(self.n_embd_head_k.checked_add(self.n_embd_head_v)?)?;
        let width = self
            .n_embd
            .checked_mul(3)?
            .checked_add(heads)?
            .checked_add(self.n_embd_k_gqa)?
            .checked_add(self.n_embd_v_gqa)?;
        let live = width.checked_mul(self.n_tokens)?.checked_mul(4)?;
        scores.checked_add(live)?.checked_add(self.n_tokens.checked_mul(20)?)
    }

    /// The feed-forward moment's bytes (gate and up, the residual and the norm).
    pub fn ffn_bytes(&self) -> Option<u64> {
        let width = self.n_ff.checked_mul(2)?.checked_add(self.n_embd.checked_mul(2)?)?;
        width.checked_mul(self.n_tokens)?.checked_mul(4)
    }

    /// The input embeddings' rows (what a host keeps when every layer is offloaded).
    pub fn input_bytes(&self) -> Option<u64> {
        self.n_embd.checked_mul(self.n_tokens)?.checked_mul(4)
    }

    /// The peak: the largest moment.
    pub fn peak_bytes(&self) -> Option<u64> {
        Some(self.output_bytes()?.max(self.attention_bytes()?).max(self.ffn_bytes()?))
    }
}
