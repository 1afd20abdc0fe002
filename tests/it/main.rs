//! The workspace's cross-crate tests, built as one binary: what no single crate owns.
//!
//! * `corpus`: conformance with the reference reader (gguf-py 0.19.0) over `../shared/corpus`,
//!   loaded once by the `sipllm_tests` library — the parser (`parser`; chunk independence and
//!   truncation in `chunking`; byte-exact re-writes in `writer`), the seam (`seam`),
//!   `sipllm inspect --json` (`inspect`) and the commands that read tensor bytes
//!   (`commands`). Without the corpus these tests are listed as ignored, with the reason;
//! * `remote`: every reading command on a URL (the loopback range server of `sipllm-remote`)
//!   gives what it gives locally — every corpus file too (ignored without the corpus) — and
//!   its errors;
//! * `round_trips`: GGUF ↔ `.llmw` conversion and split/merge through the `sipllm` command,
//!   byte for byte;
//! * `error_codes`: every stable code is well formed, unique, listed in `docs/errors.md`, raised
//!   where it is named and seen by a test;
//! * `fuzz_replay`: every committed fuzz input (`fuzz/regressions/`, `fuzz/seeds/`) through
//!   every fuzz target's property check, on stable Rust.

mod corpus;
mod error_codes;
mod fuzz_replay;
mod remote;
mod round_trips;
mod support;
