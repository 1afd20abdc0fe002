//! `roundtrip`: see `sipllm_fuzzcheck::roundtrip` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::roundtrip(data));
