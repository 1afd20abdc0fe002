//! `dequantize`: see `sipllm_fuzzcheck::dequantize` for the property.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sipllm_fuzzcheck::dequantize(data));
