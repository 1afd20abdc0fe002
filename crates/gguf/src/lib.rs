//! A zero-copy, chunk-fed parser for GGUF headers: the metadata key/value pairs and the tensor
//! directory of llama.cpp model files.
//!
//! * **No I/O, no `unsafe`**: bytes in, a typed AST or an error out.
//! * **One decoder for every input shape**: [`Decoder`] is fed bytes in chunks of any size and
//!   says how many more it needs; [`parse`] runs the same decoder over a whole slice, so
//!   chunked and whole results are identical by construction.
//! * **Zero-copy**: the AST ([`Gguf`]) records spans into the header bytes. A 128k-token
//!   vocabulary is one span and a count; strings, arrays and numbers decode on demand.
//!   Parsing allocates O(key/value pairs + tensors), never per array element, and never in
//!   proportion to a declared count.
//! * **A grammar you can read**: one named nom parser per on-disk record (`grammar.rs`), the
//!   profiles' rules beside it (`rules.rs`), and a decoder that is only the state machine
//!   between them. The vocabulary shared with `.llmw` ([`Finding`], [`Path`], [`Span`],
//!   [`NameIndex`], the [`HeaderDecoder`] contract) lives in `sipllm-format`, re-exported here.
//! * **Profiles**: [`Profile::Strict`] (the spec plus safety), [`Profile::LlamaCpp`] (exactly
//!   what llama.cpp loads) and [`Profile::Lenient`] (read broken files, with warnings).
//! * **Errors that say where, what and how to fix it**: an absolute offset, a logical path
//!   such as `metadata[12] "tokenizer.ggml.tokens"[5031]`, a stable code such as
//!   `gguf::metadata::duplicate_key`, and a help text.
//! * **Names users know**: [`ftype`] maps `general.file_type` to llama.cpp's quantization
//!   labels (`15` is `Q4_K_M`), or guesses one from the tensor types.
//!
//! ```
//! use sipllm_gguf::builder::{GgufBuilder, Value};
//! use sipllm_gguf::{GgmlType, parse};
//!
//! let bytes = GgufBuilder::new()
//!     .kv("general.architecture", Value::str("llama"))
//!     .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hello"]))
//!     .tensor("token_embd.weight", GgmlType::F32, &[4, 3])
//!     .build();
//!
//! let gguf = parse(&bytes)?;
//! assert_eq!(gguf.get_str("general.architecture"), Some("llama"));
//! let tokens = gguf.get_array("tokenizer.ggml.tokens").unwrap();
//! assert_eq!(tokens.strings().unwrap().nth(2).unwrap(), "hello");
//! let t = gguf.tensor("token_embd.weight").unwrap();
//! assert_eq!(t.info.shape().as_slice(), &[3, 4]); // row-major: GGUF dims reversed
//! assert_eq!(t.info.nbytes(), Some(48));
//! # Ok::<(), sipllm_gguf::Error>(())
//! ```
//!
//! Feeding chunks (what a streaming reader does; see [`Decoder`] for the contract):
//!
//! ```
//! # use sipllm_gguf::builder::{GgufBuilder, Value};
//! use sipllm_gguf::{Decoder, Event, Gguf, ParseOptions};
//!
//! # let file = GgufBuilder::new().kv("general.name", Value::str("x")).build();
//! let mut decoder = Decoder::new(ParseOptions::default());
//! let mut buf = Vec::new();
//! let mut chunks = file.chunks(7);
//! loop {
//!     match decoder.decode(&buf)?.event {
//!         Event::Done => break,
//!         Event::NeedMore { .. } => match chunks.next() {
//!             Some(chunk) => buf.extend_from_slice(chunk),
//!             None => return Err(decoder.end_of_input(&buf)),
//!         },
//!         _ => {}
//!     }
//! }
//! let gguf = Gguf::from_parts(buf, decoder.finish()?)?;
//! assert_eq!(gguf.get_str("general.name"), Some("x"));
//! # Ok::<(), sipllm_gguf::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod array;
mod ast;
pub mod builder;
mod decoder;
mod error;
pub mod ftype;
mod ggml;
mod grammar;
mod header;
mod layout;
mod options;
mod rules;
mod strings;
mod value;
mod value_type;
mod walk;
pub mod writer;

pub use ast::{ArrayHead, Directory, Gguf, MetaEntry, MetaKv, Span, TensorInfo, TensorRef};
pub use decoder::{DEFAULT_ALIGNMENT, Decoder, Event, MAX_WARNINGS, Step};
pub use error::{
    Error, ErrorKind, Finding, Kind, MAX_SHOWN_NAME, Path, PathSeg, StrField, Warning, WarningKind,
    shown_name,
};
pub use ggml::{GgmlType, SizeError, align_up, tensor_element_count, tensor_nbytes};
pub use header::{Endian, Header};
pub use options::{Limits, ParseOptions, Profile};
pub use sipllm_format::NameIndex;
pub use sipllm_format::{DecoderEvent, HeaderDecoder};
pub use value::{ArrayIter, ArrayView, Element, MetaStr, MetaValue, Strings, ValueType, Values};
pub use writer::{GgufWriter, Layout, PADDING_KEY, TensorDesc, WriteError};

/// The magic bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";

/// Parses a whole GGUF file held in memory, with the default (strict) options.
///
/// `bytes` is taken to be the entire file: tensor data must lie inside it. To parse only a
/// header prefix, use [`parse_with`] with `file_size` set to the real size (or `None`).
pub fn parse(bytes: &[u8]) -> Result<Gguf<&[u8]>, Error> {
    parse_with(bytes, &ParseOptions::default().with_file_size(Some(bytes.len() as u64)))
}

/// Parses with explicit options; `bytes` must hold at least the whole header.
///
/// This runs the same [`Decoder`] a streaming reader uses, over the whole slice at once.
pub fn parse_with<B: AsRef<[u8]>>(bytes: B, opts: &ParseOptions) -> Result<Gguf<B>, Error> {
    let dir = decode(bytes.as_ref(), opts)?;
    // The decoder only records spans inside `bytes`, so this cannot fail.
    Gguf::from_parts(bytes, dir)
}

/// Decodes the directory of the GGUF at the start of `bytes` (spans only, no bytes kept).
pub fn decode(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    sipllm_format::decode_slice(Decoder::new(*opts), bytes)
}
