//! Integration tests of the `sipllm` binary: one test binary (one link) with a module per
//! concern.
//!
//! * `golden`: rendered output compared with the files in `tests/golden/` (regenerate with
//!   `SIPLLM_UPDATE_GOLDEN=1 cargo test -p sipllm-cli`);
//! * `exit_codes`: the 0/1/2 contract, and that nothing exits 101 (a panic);
//! * `corpus`: `inspect --json` against the reference reader's view of every corpus file;
//! * `commands`: `read`, `verify`, `tensors`, `completions`, `.llmw` files;
//! * `edit`: `edit` out of place and in place, every refusal, crashes and recovery;
//! * `convert`: `convert` round trips and refusals, and `make-toy`;
//! * `split`: `split` and `merge`, and every reading command on a split set;
//! * `terminal`: colors and binary output on a pseudo-terminal;
//! * `values`: `read --as f32` (raw and npy) against gguf-py's values, and `tensors --stats`.

mod commands;
mod convert;
mod corpus;
mod edit;
mod exit_codes;
mod files;
mod golden;
mod split;
mod support;
mod terminal;
mod values;
