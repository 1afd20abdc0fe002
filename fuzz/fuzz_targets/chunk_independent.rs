//! `chunk_independent`: see `sipllm_fuzzcheck::chunk_independent` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::chunk_independent(data));
