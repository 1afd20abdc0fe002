//! The weight-streaming seam: open a model file by reading only its header, then pull exactly
//! the tensor bytes asked for into buffers the caller owns.
//!
//! * [`WeightSource`] is what the engine and every other consumer program against: tensors
//!   ([`SourceTensor`], shapes row-major), bounds-checked raw reads, collapsed lazy metadata
//!   ([`Meta`]), readahead hints. A GGUF file and a `.llmw` file look the same through it.
//! * [`open_model`] opens a file of either format as a `Box<dyn WeightSource>`, choosing the
//!   format from the first 4 bytes (never the name); [`Model`] is the same with the format's
//!   details reachable, [`open_model_from`] / [`Model::from_source`] the same over any
//!   [`ReadAt`].
//! * [`GgufFile`] implements the seam for GGUF and [`LlmwFile`] for `.llmw`, both one generic
//!   opener ([`HeaderFile`] over each format's [`Container`]): [`read_header`]
//!   and [`read_llmw_header`] drive each parser's chunk-fed decoder through one shared
//!   refilling window (one read per 64 KiB, never one per field, never the whole file), and
//!   every tensor is checked to lie inside the file at open.
//! * [`TensorStore`] is the format-neutral half (source + tensor list + name index + reads +
//!   readahead) that every format's weight source embeds.
//! * [`SplitFile`] ([`split`]) reads a split GGUF set (`model-00001-of-00004.gguf` …) as one
//!   weight source.
//! * [`lock`] is the advisory-lock protocol between readers (shared, taken by every
//!   [`FileBacking::open`]) and the in-place header writer (exclusive).
//! * [`ReadAt`] is a positional byte source (offsets, no seek): [`FileBacking`] (pread by
//!   default, mmap opt-in, `fadvise`/`madvise` readahead) and [`MemSource`].
//! * [`OwnedStrs`] keeps a vocabulary view in one struct with the source it borrows from
//!   (O(1) lookups, no copy), the answer to the self-referential struct an engine reaches for.
//! * [`StreamError`] keeps either parser's error intact and adds I/O context (path, offset,
//!   missing bytes, the magic found); [`TensorError`], [`MetaError`] and [`SplitSetError`]
//!   say what a request or a split set got wrong. Every variant has a stable code and a
//!   `&'static str` help ([`Kind`], the trait the parsers' findings implement).
//!
//! What llama.cpp makes of a model — its hyperparameters (`ModelConfig`), `diff` and the
//! analyses after them — is the model crate's (`sipllm-model`); this crate only reads.
//!
//! Writing — atomic files, the GGUF file builder, split and merge, the in-place header
//! rewrite, toy models, edits and conversion — is the write-side crate's (`sipllm-edit`). This
//! crate builds for `wasm32-unknown-unknown` without its default `file` feature: the file
//! backings (pread, the memory map, locks) are behind it; [`MemSource`] and any [`ReadAt`]
//! work everywhere.
//!
//! The everyday tasks — open a file, read hyperparameters, the tokens, one tensor into a
//! buffer — are the same for every format:
//!
//! ```
//! use sipllm_streaming::{OpenOptions, open_model};
//! # use sipllm_gguf::GgmlType;
//! # use sipllm_testkit::{GgufBuilder, Value};
//! # let path = std::env::temp_dir().join(format!("sipllm-streaming-doc-{}.gguf", std::process::id()));
//! # std::fs::write(&path, GgufBuilder::new()
//! #     .kv("general.architecture", Value::str("llama"))
//! #     .kv("llama.block_count", Value::Uint32(2))
//! #     .kv("llama.rope.freq_base", Value::Float32(10000.0))
//! #     .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hi"]))
//! #     .tensor("output.weight", GgmlType::F32, &[4, 3]) // GGUF ne = [n_in, n_out]
//! #     .build())?;
//!
//! // GGUF or .llmw, chosen by the first 4 bytes; only the header is read.
//! let model = open_model(&path, &OpenOptions::default())?;
//!
//! // Hyperparameters, whatever their stored integer or float type.
//! assert_eq!(model.meta_str("general.architecture")?, "llama");
//! assert_eq!(model.meta_uint("llama.block_count")?, 2);
//! assert_eq!(model.meta_float("llama.rope.freq_base")?, 10000.0);
//!
//! // The tokens, iterated without an allocation per token.
//! let tokens = model.meta_strs("tokenizer.ggml.tokens")?;
//! assert_eq!(tokens.iter().nth(2).unwrap(), "hi");
//!
//! // One tensor into a buffer the caller owns (bounds were checked at open).
//! let t = model.find("output.weight").unwrap();
//! assert_eq!(t.shape.as_slice(), &[3, 4]); // row-major: [n_out, n_in]
//! let mut buf = vec![0u8; t.byte_len()?];
//! model.read_raw(t, &mut buf)?;
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same over bytes already in memory, with the GGUF details at hand:
//!
//! ```
//! use sipllm_gguf::GgmlType;
//! use sipllm_streaming::{GgufFile, MemSource, OpenOptions, WeightSource};
//! use sipllm_testkit::{GgufBuilder, Value};
//!
//! let bytes = GgufBuilder::new()
//!     .kv("llama.block_count", Value::Uint32(2))
//!     .tensor("output.weight", GgmlType::F32, &[4, 3])
//!     .build();
//! let src = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default())?;
//! assert_eq!(src.meta_uint("llama.block_count")?, 2);
//! assert_eq!(src.gguf().version(), 3); // the parser's AST
//! # Ok::<(), sipllm_streaming::StreamError>(())
//! ```

#![deny(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod backing;
mod bounds;
mod error;
#[cfg(feature = "file")]
mod file;
mod format;
mod gguf_file;
mod header_bytes;
mod header_file;
#[cfg(feature = "file")]
mod input;
mod llmw_file;
#[cfg(feature = "file")]
pub mod lock;
#[cfg(feature = "file")]
#[allow(unsafe_code)]
mod map;
mod meta;
mod model;
mod options;
mod owned;
mod source;
pub mod split;
mod store;
mod window;

pub use backing::{Backend, MemSource, ReadAt, ZeroPadded};
pub use bounds::ShortRead;
pub use error::{
    FileKind, Located, MetaError, SplitSetError, StreamError, StreamErrorKind, TensorError,
};
#[cfg(feature = "file")]
pub use file::FileBacking;
pub use format::Format;
pub use gguf_file::{GgufFile, read_header};
pub use header_bytes::HeaderBytes;
pub use header_file::{Container, HeaderFile};
#[cfg(feature = "file")]
pub use input::{open_nonblocking, open_regular};
pub use llmw_file::{LlmwFile, read_llmw_header};
pub use meta::{
    FloatIter, FloatIterF32, FloatList, IntIter, IntList, Meta, MetaKind, StrIter, StrList,
};
#[cfg(feature = "file")]
pub use model::open_model;
pub use model::{HeaderOnly, Model, ModelOrHeader, open_model_from};
pub use options::OpenOptions;
pub use owned::OwnedStrs;
/// The string type of the metadata view (the parser's own: stored bytes, UTF-8 unless parsed
/// leniently).
pub use sipllm_gguf::value::MetaStr;
/// What [`WeightSource::read_f32`] returns: an owned `[f32]` (sipllm-quants').
pub use sipllm_quants::Values;
pub use source::values::{VALUES_CHUNK_BYTES, to_little_endian};
pub use source::{SourceTensor, WeightSource};
pub use split::SplitFile;
pub use store::TensorStore;
pub use window::{DEFAULT_WINDOW, HeaderStats};

/// The code/help trait of every error and finding (the parsers' too): `code()` is stable,
/// `help()` says what to check or change.
pub use sipllm_format::Kind;
