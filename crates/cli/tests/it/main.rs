//! Integration tests of the `sipllm` binary: one test binary (one link) with a module per
//! concern.
//!
//! * `golden`: rendered output compared with the files in `tests/golden/` (regenerate with
//!   `SIPLLM_UPDATE_GOLDEN=1 cargo test -p sipllm-cli`);
//! * `exit_codes`: the 0/1/2 contract, and that nothing exits 101 (a panic);
//! * `commands`: `read`, `verify`, `tensors`, `completions`, `.llmw` files;
//! * `edit`: `edit` out of place and in place, every refusal, crashes and recovery;
//! * `convert`: `convert` value mapping, the unsupported-key list and refusals, and `make-toy`;
//! * `diff`: `diff` and `--diffable`, and `--shard-only` on an incomplete split set;
//! * `safety`: concurrent and interrupted writers, outputs that are inputs, modes, symlinks,
//!   big split sets, killed re-splits (issue 16);
//! * `split`: `split` and `merge` refusals, and every reading command on a split set;
//! * `terminal`: colors and binary output on a pseudo-terminal;
//! * `values`: `read --as f32` (raw and npy) against gguf-py's values, and `tensors --stats`;
//! * `bounds`: bounded memory and output on hostile inputs, special files, unambiguous escaping;
//! * `peak_memory`: the peak RSS of every command over hostile inputs and real models.

mod bounds;
mod commands;
mod convert;
mod diff;
mod edit;
mod exit_codes;
mod files;
mod fit;
mod golden;
mod model_check;
mod narrow;
mod peak_memory;
mod pipes;
mod safety;
mod split;
mod summary;
mod support;
mod template;
mod terminal;
mod values;
