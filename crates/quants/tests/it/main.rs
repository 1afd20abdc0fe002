//! The dequantization tests, built as one binary.
//!
//! * `exact`: bit-exactness against gguf-py's values (`../expect.tsv`) for every type;
//! * `simd`: the dispatched, scalar and threaded kernels agree bit for bit on any bytes;
//! * `values`: new outputs (`Values`, mapped when big) hold `dequantize`'s bits.

mod exact;
mod simd;
mod values;
