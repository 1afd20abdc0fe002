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
//!   between them. The vocabulary shared with `.llmw` ([`error::Finding`], [`Path`],
//!   [`ast::Span`], the [`decoder::HeaderDecoder`] contract) lives in `sipllm-format`.
//! * **Profiles**: [`Profile::Strict`] (the spec plus safety), [`Profile::LlamaCpp`] (exactly
//!   what llama.cpp loads) and [`Profile::Lenient`] (read broken files, with warnings).
//! * **Errors that say where, what and how to fix it**: an absolute offset, a logical path
//!   such as `metadata[12] "tokenizer.ggml.tokens"[5031]`, a stable code such as
//!   `gguf::metadata::duplicate_key`, and a help text.
//!
//! The root holds the everyday names; the modules hold the rest: [`ast`] (the records behind
//! [`Gguf`]), [`value`] (string and array views, typed iterators), [`ggml`] (the type table and
//! the checked size helpers), [`decoder`] (the chunk-fed contract and its constants),
//! [`error`] (paths, codes) and [`writer`] (bytes out). To read a GGUF file *from disk* without
//! writing the I/O yourself, use `sipllm-streaming`, which drives this parser.
//!
//! # Reading a file
//!
//! Open a file and read only its header, whatever its size: feed the [`Decoder`] what it asks
//! for (see [`Decoder`] for the contract).
//!
//! ```
//! use std::fs::File;
//! use std::io::Read;
//!
//! use sipllm_gguf::{Decoder, Event, Gguf, ParseOptions};
//! # use sipllm_gguf::GgmlType;
//! # use sipllm_testkit::{GgufBuilder, Value};
//! # let path = std::env::temp_dir().join(format!("sipllm-gguf-doc-{}.gguf", std::process::id()));
//! # std::fs::write(&path, GgufBuilder::new()
//! #     .kv("general.architecture", Value::str("llama"))
//! #     .kv("llama.block_count", Value::Uint32(32))
//! #     .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hello"]))
//! #     .tensor("token_embd.weight", GgmlType::F32, &[4, 3])
//! #     .build())?;
//!
//! let mut file = File::open(&path)?;
//! let file_size = file.metadata()?.len();
//! let opts = ParseOptions::default().with_file_size(Some(file_size)); // bounds-checks offsets
//! let mut decoder = Decoder::new(opts);
//! let mut header = Vec::new();
//! loop {
//!     match decoder.decode(&header)?.event {
//!         Event::Done => break,
//!         Event::NeedMore { needed } => {
//!             let want = needed.max(64 << 10); // whole blocks, not one read per field
//!             if (&mut file).take(want).read_to_end(&mut header)? == 0 {
//!                 return Err(decoder.end_of_input(&header).into());
//!             }
//!         }
//!         _ => {}
//!     }
//! }
//! let gguf = Gguf::from_parts(header, decoder.finish()?)?;
//!
//! // Hyperparameters.
//! assert_eq!(gguf.get_str("general.architecture"), Some("llama"));
//! assert_eq!(gguf.get_u64("llama.block_count"), Some(32));
//!
//! // The vocabulary: one span, decoded as you iterate (no allocation per token).
//! let tokens = gguf.get_array("tokenizer.ggml.tokens").unwrap().strings().unwrap();
//! assert_eq!(tokens.len(), 3);
//! assert_eq!(tokens.last().unwrap(), "hello");
//!
//! // One tensor into a buffer: its absolute offset and byte size are checked at parse time.
//! let t = gguf.tensor("token_embd.weight").unwrap();
//! assert_eq!(t.info.shape().as_slice(), &[3, 4]); // row-major: GGUF dims reversed
//! let mut buf = vec![0u8; t.info.nbytes().unwrap() as usize];
//! # use std::io::{Seek, SeekFrom};
//! file.seek(SeekFrom::Start(t.info.abs_offset()))?;
//! file.read_exact(&mut buf)?;
//! assert_eq!(buf.len(), 48);
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A file already in memory is one call:
//!
//! ```
//! # use sipllm_testkit::{GgufBuilder, Value};
//! # let bytes = GgufBuilder::new().kv("general.name", Value::str("x")).build();
//! let gguf = sipllm_gguf::parse(&bytes)?;
//! assert_eq!(gguf.get_str("general.name"), Some("x"));
//! for entry in gguf.metadata() {
//!     println!("{} = {:?}", entry.key, entry.value);
//! }
//! # Ok::<(), sipllm_gguf::Error>(())
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

mod array;
pub mod ast;
pub mod decoder;
pub mod error;
pub mod ggml;
mod grammar;
mod header;
mod layout;
mod options;
mod rules;
mod strings;
pub mod value;
mod value_type;
mod walk;
pub mod writer;

// The root holds what an embedder reaches for every day (≤ 30 names); the record types behind
// them, iterators, size helpers, limits and the decoder's plumbing live in their modules.
pub use ast::{Directory, Gguf, MetaEntry, TensorInfo, TensorRef};
pub use decoder::{Decoder, Event};
pub use error::{Error, ErrorKind, Path, Warning, WarningKind};
pub use ggml::GgmlType;
pub use header::{Endian, Header};
pub use options::{Limits, ParseOptions, Profile};
/// Invisible characters by Unicode property, for whoever shows names (the rules warn on
/// tensor names that hold them).
pub use sipllm_format::{INVISIBLE_RANGES, first_invisible, is_invisible};
pub use value::{MetaValue, ValueType};

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
