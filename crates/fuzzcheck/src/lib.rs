//! The property checks behind the fuzz targets, shared by libFuzzer and `cargo test`.
//!
//! Each public function takes one fuzz input and **panics with a message naming the property
//! and the place when a property is violated** (that is what makes libFuzzer report a crash);
//! on any input it must otherwise return, quickly and within bounded memory. The fuzz targets
//! in `fuzz/fuzz_targets/` are one-line calls to these, and the workspace's `tests/it/fuzz_replay.rs` replays
//! every committed seed and regression input through them on stable Rust, without a fuzzer.
//!
//! | target | input | property |
//! |---|---|---|
//! | [`parse_slice`] | a GGUF file | parses in every profile (and with tight limits) without panicking; everything reachable from the AST decodes and satisfies the documented invariants; the profiles agree where `docs/parser.md` says they must |
//! | [`chunk_independent`] | a chunk schedule, then a file | the chunked GGUF and `.llmw` decoders give exactly the whole-slice result, keeping the decoder contract at every call |
//! | [`weight_source`] | a GGUF or `.llmw` file | opened from memory through `sipllm-streaming`, every tensor reads back exactly the input's bytes; every metadata value reads through the seam |
//! | [`llmw_parse`] | a `.llmw` file | parses without panicking; everything decodes and satisfies `docs/llmw.md`; parse → `LlmwWriter` → parse keeps the content |
//! | [`roundtrip`] | generator entropy, and a GGUF file | a header generated from the input → `GgufWriter` → the strict parser reads back exactly what was written; a file the strict parser accepts → `GgufWriter::from_gguf` → the same content; re-writing the writer's output is the identity |
//! | [`dequantize`] | a type, a mode, a shape, then bytes | `sipllm-quants` gives exactly the element count of values or the typed error the sizes call for; dispatched, scalar and threaded kernels agree bit for bit; blocks are independent; through the seam, `read_f32` and a block-cutting `read_f32_at` equal the slice results |
//! | [`string_array`] | flags, then length-prefixed strings | grown into a string array long enough for the decoder's speculative fast path: every profile gives back exactly those strings, or (strict) fails at the first that is not UTF-8, with its offset and path; chunked equals whole |
//!
//! See `fuzz/README.md` for running them.
//!
//! [`mutants`] makes the inputs of the differential run against ggml's own reader
//! (`tests/it/ggml_differential.rs`, `docs/parser.md`): hand-made edge files and byte- and
//! field-level mutants.

mod chunked;
pub mod committed;
mod gguf;
mod llmw;
pub mod mutants;
mod quants;
mod roundtrip;
mod stream;
mod strings;
mod text;

pub use chunked::Schedule;
pub use gguf::{TIGHT_GGUF_LIMITS, option_sets as gguf_option_sets};
pub use llmw::{TIGHT_LLMW_LIMITS, option_sets as llmw_option_sets};

/// Parses `data` as a GGUF file under every option set ([`gguf_option_sets`]), walks every
/// value (nested arrays included), tensor info and finding, and checks the invariants.
///
/// # Panics
///
/// On a property violation, with a message naming the option set and the item.
pub fn parse_slice(data: &[u8]) {
    gguf::parse_slice(data);
}

/// Splits `data` into a chunk [`Schedule`] and a file, then checks that the GGUF and `.llmw`
/// decoders fed in those chunks give exactly the whole-slice result (the same directory, or
/// the same error with the same offset and path) under every option set.
///
/// # Panics
///
/// On a divergence or a broken decoder contract.
pub fn chunk_independent(data: &[u8]) {
    chunked::chunk_independent(data);
}

/// Opens `data` (a GGUF, or a `.llmw` when it starts with `LLMW`) from memory through the
/// streaming crate and reads every tensor and metadata value back through it.
///
/// # Panics
///
/// When a read returns other bytes than the input's, when opening disagrees with the
/// whole-slice parse, or on any other property violation.
pub fn weight_source(data: &[u8]) {
    stream::weight_source(data);
}

/// Parses `data` as a `.llmw` file under every option set ([`llmw_option_sets`]), walks
/// everything, and re-writes a file that parsed through `LlmwWriter`.
///
/// # Panics
///
/// On a property violation.
pub fn llmw_parse(data: &[u8]) {
    llmw::llmw_parse(data);
}

/// Drives the GGUF writer: a valid header generated from `data` is written and must parse
/// back to exactly what was written; `data` itself, if it parses strictly, is re-written and
/// must keep its content; and the writer's output re-writes to itself byte for byte.
///
/// # Panics
///
/// On a property violation.
pub fn roundtrip(data: &[u8]) {
    roundtrip::roundtrip(data);
}

/// Grows `data`'s strings into a long string array (see the table above) and checks that every
/// profile reads it back exactly, or fails at the first invalid string, whole and chunked.
///
/// # Panics
///
/// On a property violation.
pub fn string_array(data: &[u8]) {
    strings::string_array(data);
}

/// Dequantizes `data` (see the table above for its layout) and checks sizes, errors and
/// that every kernel and the seam agree.
///
/// # Panics
///
/// On a wrong result or error, or a disagreement between paths.
pub fn dequantize(data: &[u8]) {
    quants::dequantize_check(data);
}

/// A property check: one fuzz input in, a panic on a violation.
pub type Check = fn(&[u8]);

/// Every target, by the name of its fuzz target and its directories under `fuzz/`.
pub const TARGETS: [(&str, Check); 7] = [
    ("parse_slice", parse_slice),
    ("chunk_independent", chunk_independent),
    ("weight_source", weight_source),
    ("llmw_parse", llmw_parse),
    ("roundtrip", roundtrip),
    ("string_array", string_array),
    ("dequantize", dequantize),
];
