//! `weight_source`: see `sipllm_fuzzcheck::weight_source` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::weight_source(data));
