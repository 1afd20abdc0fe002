//! The write side of sipllm: everything that creates or changes a model file, over the read
//! side's (`sipllm-streaming`) sources.
//!
//! * [`write`](mod@write): [`AtomicFile`] (a temporary beside the destination, renamed over it only when
//!   complete and synced), [`copy_range`] (kernel copies that keep holes), the
//!   [`GgufFileBuilder`] (a [`GgufWriter`](sipllm_gguf::writer::GgufWriter)'s header, then every
//!   tensor's data) and [`write_llmw_into`].
//! * [`split`]: [`split_file`](split::split_file) writes a split set as llama.cpp's
//!   `gguf-split` does; [`merge`](split::merge) joins one back, byte for byte.
//! * [`in_place`]: the crash-safe header rewrite (the changed 4 KiB blocks backed up beside
//!   the model first) and [`in_place::recover`], which undoes an interrupted one.
//! * [`header`]: metadata edits and tensor renames planned on a parsed header, written out of
//!   place or fitted in place, and checked after the write, each as one call that owns the
//!   whole protocol ([`header::edit_in_place`], [`header::edit_out_of_place`]). Every bad argument
//!   is reported at once.
//! * [`convert`]: GGUF ↔ `.llmw`, checked after the write, with the types llama.cpp
//!   reads well-known keys as (`sipllm_model::keys`) for `.llmw` values.
//! * [`identity`]: whether two paths are one file (every writer refuses an output that is its
//!   input); [`input`]: bounded reads of auxiliary inputs (`--set-file`).
//! * [`toy`]: a tiny llama-shaped model from a seed, written identically as GGUF and `.llmw`.
//!
//! Errors: one type per area ([`WriteError`], [`SplitError`], [`InPlaceError`],
//! [`EditError`](header::EditError), [`ConvertError`](convert::ConvertError), [`InputError`]),
//! each variant with a stable code and help through [`Kind`](sipllm_format::Kind); a read
//! that fails keeps the read side's [`StreamError`](sipllm_streaming::StreamError) whole.
//!
//! ```
//! use std::borrow::Cow;
//!
//! use sipllm_edit::{GgufFileBuilder, TensorData};
//! use sipllm_gguf::writer::{TensorDesc, Value};
//! use sipllm_gguf::{GgmlType, writer::GgufWriter};
//! use sipllm_streaming::{Model, OpenOptions, WeightSource};
//!
//! let dir = std::env::temp_dir().join(format!("sipllm-edit-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("m.gguf");
//! let mut writer = GgufWriter::new();
//! writer.set(&b"general.name"[..], Value::str("tiny"));
//! writer.add_tensor(TensorDesc {
//!     name: Cow::Borrowed(b"t"),
//!     dims: vec![4],
//!     ggml_type: GgmlType::F32,
//! });
//! let mut builder = GgufFileBuilder::new(writer);
//! builder.set_data(0, TensorData::Bytes(&[0u8; 16]));
//! builder.write_to_path(&path)?; // a temporary beside it, synced, then renamed
//!
//! let model = Model::open(&path, &OpenOptions::default())?;
//! assert_eq!(model.tensors().len(), 1);
//! assert_eq!(model.meta_str("general.name")?, "tiny");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

pub mod convert;
mod error;
mod half;
pub mod header;
pub mod identity;
pub mod in_place;
pub mod input;
pub mod safetensors;
pub mod split;
pub mod toy;
pub mod write;

pub use error::{
    InPlaceError, InPlaceErrorKind, SplitError, SplitErrorKind, SplitRefusal, WriteError,
    WriteErrorKind,
};
pub use in_place::{
    HeaderBackup, InPlaceStats, RecoverStats, rewrite_header_in_place, rewrite_header_locked,
};
pub use input::{InputError, read_capped, read_file_capped};
pub use write::{AtomicFile, GgufFileBuilder, TensorData, check_room, copy_range, write_llmw_into};
