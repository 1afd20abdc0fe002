//! `string_array`: see `sipllm_fuzzcheck::string_array` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::string_array(data));
