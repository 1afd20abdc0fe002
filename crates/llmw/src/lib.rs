//! `.llmw`, the engine's simple sibling of GGUF: a strict, zero-copy, chunk-fed parser and a
//! [`LlmwWriter`].
//!
//! The format (specified byte by byte in `docs/llmw.md`) is a 16-byte header (`LLMW`,
//! version, tensor count, metadata count), metadata entries with three scalar types (`i64`,
//! `f64`, string) and, from version 2, three array types, a tensor directory whose entries
//! carry ggml dtypes, row-major dims, **absolute** 64-aligned offsets and byte sizes, and the
//! tensor data. Every number is little-endian; every count and length is 32-bit.
//!
//! * **No `unsafe`; no I/O in the parser**: bytes in, a typed AST or an error out. Only the
//!   [`writer`] module does I/O (a test enforces this).
//! * **One decoder for every input shape**: [`Decoder`] is fed bytes in chunks of any size with
//!   the contract both formats share ([`HeaderDecoder`], as `sipllm_gguf::Decoder`); [`parse`]
//!   runs the same decoder over a whole slice, so chunked and whole results are identical by
//!   construction.
//! * **The same shape as `sipllm-gguf`**: one named nom parser per on-disk record
//!   (`grammar.rs`), the checks beside it (`rules.rs`), and a decoder that is only the state
//!   machine; findings, paths, spans and the name index are `sipllm-format`'s.
//! * **Zero-copy**: the AST ([`Llmw`]) records spans into the header bytes; values decode on
//!   demand and string arrays iterate without allocating. Nothing is allocated in proportion
//!   to a declared count.
//! * **Strict**: every problem — bad UTF-8, duplicate keys or names, unknown or removed dtypes,
//!   a byte size that disagrees with dtype × dims, misaligned, out-of-order, overlapping or
//!   out-of-bounds data — is an [`Error`] with an absolute offset, a logical [`Path`], a stable
//!   code such as `llmw::tensor::size_mismatch` and a help text.
//! * **One size rule**: byte sizes come from `sipllm_gguf::ggml::tensor_nbytes`, the
//!   workspace's one checked size helper (called with the dims reversed into GGUF order).
//!
//! One type per concept: [`Llmw`] is the parsed file, [`TensorInfo`] a tensor of *this* format
//! (row-major dims, absolute offsets), [`MetaValue`] a metadata value. To open a file from disk
//! as a format-neutral weight source, use `sipllm-streaming`'s `LlmwFile` (or `open_model`).
//!
//! The everyday tasks, on a file in memory: hyperparameters, the tokens, one tensor.
//!
//! ```
//! use sipllm_llmw::{GgmlType, LlmwWriter, parse};
//!
//! let data: Vec<u8> = (0..4 * 3 * 4).map(|i| i as u8).collect();
//! let mut w = LlmwWriter::new();
//! w.add_meta_str("general.architecture", "llama")?
//!     .add_meta_i64("llama.block_count", 2)?
//!     .add_meta_f64("llama.rope.freq_base", 10000.0)?
//!     .add_meta_strs("tokenizer.ggml.tokens", ["<s>", "</s>", "hello"])?
//!     .add_tensor("token_embd.weight", GgmlType::F32, &[3, 4], &data)?;
//! let bytes = w.to_vec()?;
//!
//! let file = parse(&bytes)?;
//! // Hyperparameters.
//! assert_eq!(file.get_str("general.architecture"), Some("llama"));
//! assert_eq!(file.get_i64("llama.block_count"), Some(2));
//! assert_eq!(file.get_f64("llama.rope.freq_base"), Some(10000.0));
//! // The tokens: iterated without allocating.
//! let tokens = file.get_str_array("tokenizer.ggml.tokens").unwrap();
//! assert_eq!(tokens.len(), 3);
//! assert_eq!(tokens.iter().nth(2), Some("hello"));
//! // One tensor into a buffer (offsets are absolute, 64-aligned, checked at parse time).
//! let t = file.tensor("token_embd.weight").unwrap();
//! assert_eq!(t.info.dims(), &[3, 4]); // row-major, as stored
//! assert_eq!(t.info.gguf_dims().as_slice(), &[4, 3]); // ne[0] first
//! let mut buf = vec![0u8; t.info.nbytes() as usize];
//! buf.copy_from_slice(file.tensor_data(t.info).unwrap());
//! assert_eq!(buf, data);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Reading only the header of a file on disk is the chunk-fed decoder's job; `sipllm-streaming`
//! drives it for you.
//!
//! Feeding chunks (what a streaming reader does; see [`Decoder`] for the contract):
//!
//! ```
//! # use sipllm_llmw::LlmwWriter;
//! use sipllm_llmw::{Decoder, Event, Llmw, ParseOptions};
//!
//! # let mut w = LlmwWriter::new();
//! # w.add_meta_str("general.name", "x")?;
//! # let file = w.to_vec()?;
//! let mut decoder = Decoder::new(ParseOptions::default());
//! let mut buf = Vec::new();
//! let mut chunks = file.chunks(7);
//! loop {
//!     match decoder.decode(&buf)?.event {
//!         Event::Done => break,
//!         Event::NeedMore { .. } => match chunks.next() {
//!             Some(chunk) => buf.extend_from_slice(chunk),
//!             None => return Err(decoder.end_of_input(&buf).into()),
//!         },
//!         _ => {}
//!     }
//! }
//! let parsed = Llmw::from_parts(buf, decoder.finish()?)?;
//! assert_eq!(parsed.get_str("general.name"), Some("x"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod ast;
mod decoder;
mod error;
mod grammar;
mod options;
mod rules;
mod value;
pub mod writer;

pub use ast::{Directory, Header, Llmw, MetaEntry, MetaInfo, TensorInfo, TensorRef};
pub use decoder::{Decoder, Event, Step};
pub use error::{Error, ErrorKind, Finding, Path, PathSeg, StrField};
pub use options::{Limits, ParseOptions};
pub use sipllm_format::{DecoderEvent, HeaderDecoder, Span};
pub use sipllm_gguf::GgmlType;
pub use value::{MetaType, MetaValue, Number, NumberIter, Numbers, StrArray, StrIter};
pub use writer::{LlmwWriteError, LlmwWriter, WriteLayout};

/// The magic bytes every `.llmw` file starts with (`0x574D4C4C` read as a little-endian u32).
pub const MAGIC: [u8; 4] = *b"LLMW";

/// The newest format version this crate reads and writes.
pub const LATEST_VERSION: u32 = 2;

/// The alignment of tensor data offsets, from the start of the file.
pub const ALIGNMENT: u64 = 64;

/// Parses a whole `.llmw` file held in memory.
///
/// `bytes` is taken to be the entire file: tensor data must lie inside it. To parse only a
/// header prefix, use [`parse_with`] with `file_size` set to the real size (or `None`).
pub fn parse(bytes: &[u8]) -> Result<Llmw<&[u8]>, Error> {
    parse_with(bytes, &ParseOptions::default().with_file_size(Some(bytes.len() as u64)))
}

/// Parses with explicit options; `bytes` must hold at least the header and, when the file has
/// tensors, the padding up to the data section.
///
/// This runs the same [`Decoder`] a streaming reader uses, over the whole slice at once.
pub fn parse_with<B: AsRef<[u8]>>(bytes: B, opts: &ParseOptions) -> Result<Llmw<B>, Error> {
    let dir = decode(bytes.as_ref(), opts)?;
    // The decoder only records spans inside `bytes`, so this cannot fail.
    Llmw::from_parts(bytes, dir)
}

/// Decodes the directory of the `.llmw` file at the start of `bytes` (spans only, no bytes
/// kept).
pub fn decode(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    sipllm_format::decode_slice(Decoder::new(*opts), bytes)
}

#[cfg(test)]
mod tests {
    /// The parser modules do no I/O: only `writer.rs` may name `std::io` or `std::fs`.
    #[test]
    fn parser_modules_do_no_io() {
        let modules = [
            ("lib.rs", include_str!("lib.rs")),
            ("ast.rs", include_str!("ast.rs")),
            ("decoder.rs", include_str!("decoder.rs")),
            ("error.rs", include_str!("error.rs")),
            ("grammar.rs", include_str!("grammar.rs")),
            ("options.rs", include_str!("options.rs")),
            ("rules.rs", include_str!("rules.rs")),
            ("value.rs", include_str!("value.rs")),
        ];
        for (name, src) in modules {
            // This test's own source names the paths it forbids; skip this module.
            let src = src.split("#[cfg(test)]").next().unwrap_or(src);
            for forbidden in ["std::io", "std::fs", "std::net", "std::process"] {
                assert!(!src.contains(forbidden), "{name} uses {forbidden}");
            }
        }
    }
}
