//! `llmw_parse`: see `sipllm_fuzzcheck::llmw_parse` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::llmw_parse(data));
