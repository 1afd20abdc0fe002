//! llama.cpp's view of a model: what its loader and allocator make of a GGUF file.
//!
//! `sipllm-streaming` reads a model's bytes; this crate answers the questions people bring
//! to a model next — its hyperparameters as llama.cpp reads them, will llama.cpp load it,
//! will it fit, how will it prompt — from the header alone, through the
//! [`WeightSource`](sipllm_streaming::WeightSource) seam. The llama.cpp tables live here, each
//! beside the llama.cpp source it follows.

#![deny(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

pub mod arch;
pub mod config;
pub mod diff;
pub mod fit;
pub mod ftype;
pub mod keys;
pub mod load;
pub mod manifest;
pub mod template;
