//! The weight-streaming seam: open a model file by reading only its header, then pull exactly
//! the tensor bytes asked for into buffers the caller owns.
//!
//! * [`WeightSource`] is what the engine and every other consumer program against: tensors
//!   ([`TensorInfo`], shapes row-major), bounds-checked raw reads, collapsed lazy metadata
//!   ([`Meta`]), readahead hints. A GGUF file and a `.llmw` file look the same through it.
//! * [`open_model`] opens a file of either format as a `Box<dyn WeightSource>`, choosing the
//!   format from the first 4 bytes (never the name); [`Model`] is the same with the format's
//!   details reachable, [`open_model_from`] / [`Model::from_source`] the same over any
//!   [`ReadAt`].
//! * [`GgufFile`] implements the seam for GGUF and [`ModelFile`] for `.llmw`: [`read_header`]
//!   and [`read_llmw_header`] drive each parser's chunk-fed decoder through one shared
//!   refilling window (one read per 64 KiB, never one per field, never the whole file), and
//!   every tensor is checked to lie inside the file at open.
//! * [`TensorStore`] is the format-neutral half (source + tensor list + name index + reads +
//!   readahead) that every format's weight source embeds.
//! * [`SplitFile`] ([`split`]) reads a split GGUF set (`model-00001-of-00004.gguf` …) as one
//!   weight source; [`split::split_file`] and [`split::merge`] write and join sets.
//! * [`in_place`] rewrites a GGUF header in place, crash-safely: the changed 4 KiB blocks are
//!   backed up beside the model ([`HeaderBackup`]) before [`rewrite_header_in_place`] writes
//!   them, and [`in_place::recover`] undoes an interrupted rewrite.
//! * [`identity`] tells whether two paths are one file (symlinks and hard links included):
//!   every writer refuses an output that is its input; [`lock`] is the advisory-lock protocol
//!   between readers (shared) and the in-place writer (exclusive).
//! * [`toy`] makes a tiny llama-shaped model from a seed and writes it identically as GGUF and
//!   `.llmw` (the seam equivalence tests and `sipllm make-toy` use it).
//! * [`ReadAt`] is a positional byte source (offsets, no seek): [`FileBacking`] (pread by
//!   default, mmap opt-in, `fadvise`/`madvise` readahead) and [`MemSource`].
//! * [`diff`] compares two models (metadata typed, tensor table, tensor data by hash) into
//!   a typed report, as `sipllm diff` prints it.
//! * [`OwnedStrs`] keeps a vocabulary view in one struct with the source it borrows from
//!   (O(1) lookups, no copy), the answer to the self-referential struct an engine reaches for.
//! * [`StreamError`] keeps either parser's error intact and adds I/O context (path, offset,
//!   missing bytes, the magic found); every variant has a stable code.
//!
//! ```
//! use sipllm_gguf::GgmlType;
//! use sipllm_gguf::builder::{GgufBuilder, Value};
//! use sipllm_streaming::{GgufFile, MemSource, OpenOptions, WeightSource};
//!
//! let bytes = GgufBuilder::new()
//!     .kv("llama.block_count", Value::Uint32(2))
//!     .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hi"]))
//!     .tensor("output.weight", GgmlType::F32, &[4, 3]) // GGUF ne = [n_in, n_out]
//!     .build();
//! let src = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default())?;
//!
//! assert_eq!(src.meta_uint("llama.block_count")?, 2);
//! let tokens = src.meta_strs("tokenizer.ggml.tokens")?;
//! assert_eq!(tokens.iter().nth(2).unwrap(), "hi"); // no allocation
//!
//! let t = src.find("output.weight").unwrap();
//! assert_eq!(t.shape.as_slice(), &[3, 4]); // row-major: [n_out, n_in]
//! let mut buf = vec![0u8; t.byte_len()?];
//! src.read_raw(t, &mut buf)?;
//! # Ok::<(), sipllm_streaming::StreamError>(())
//! ```

#![deny(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod backing;
pub mod diff;
mod error;
mod gguf_file;
pub mod identity;
pub mod in_place;
mod input;
mod llmw_file;
pub mod lock;
#[allow(unsafe_code)]
mod map;
mod meta;
mod model;
mod options;
mod owned;
mod source;
pub mod split;
mod store;
pub mod toy;
mod values;
mod window;
pub mod write;

pub use backing::{Backend, FileBacking, MemSource, ReadAt, ShortRead};
pub use error::{FileKind, StreamError};
pub use gguf_file::{GgufFile, read_header};
pub use in_place::{
    HeaderBackup, InPlaceStats, RecoverStats, rewrite_header_in_place, rewrite_header_locked,
};
pub use input::read_capped;
pub use llmw_file::{ModelFile, read_llmw_header};
pub use meta::{
    FloatIter, FloatIterF32, FloatList, IntIter, IntList, Meta, MetaKind, StrIter, StrList,
};
pub use model::{Format, Model, open_model, open_model_from};
pub use options::OpenOptions;
pub use owned::OwnedStrs;
/// The string type of the metadata view (the parser's own: stored bytes, UTF-8 unless parsed
/// leniently).
pub use sipllm_gguf::MetaStr;
pub use source::{TensorInfo, WeightSource};
pub use split::SplitFile;
pub use store::TensorStore;
pub use values::VALUES_CHUNK_BYTES;
pub use window::{DEFAULT_WINDOW, HeaderStats};
pub use write::{AtomicFile, GgufFileBuilder, TensorData, copy_range, write_llmw_into};
