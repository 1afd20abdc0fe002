//! The fuzz properties' integration tests, built as one binary with a module per concern.
//!
//! * `seeds`: the seed corpora in `fuzz/seeds/` are exactly what this code makes
//!   (`SIPLLM_WRITE_SEEDS=1` rewrites them);
//! * `alloc_bounds`: parsing any input of n bytes allocates at most `A·n + B` at peak (a
//!   counting global allocator, this binary's own, active only inside its measurements);
//! * `ggml_differential`: the llama-cpp profile against ggml's reader, through a dumper given
//!   by path (skipped without one).
//!
//! The replay of every committed fuzz input through every target is cross-crate and lives in
//! the workspace's `tests/` crate (`fuzz_replay`).

mod alloc_bounds;
mod ggml_differential;
mod seeds;
mod support;
