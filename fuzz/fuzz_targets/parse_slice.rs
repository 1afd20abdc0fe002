//! `parse_slice`: see `sipllm_fuzzcheck::parse_slice` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::parse_slice(data));
