//! The vocabulary the GGUF and `.llmw` parsers share, so that both read, report and drive
//! alike:
//!
//! * [`Finding`] and [`Kind`]: an error or warning with a stable code, a help text, an
//!   absolute byte range and a logical [`Path`] of [`PathSeg`]s;
//! * [`Span`]: a byte range by absolute offset (what the zero-copy ASTs store);
//! * [`NameIndex`]: O(1) lookup of names that stay in the header bytes;
//! * [`grammar`]: the nom error type, field tagging and byte-taking primitives the formats'
//!   grammars are written with;
//! * [`HeaderDecoder`]: the chunk-fed decoder contract, with [`decode_slice`], the whole-slice
//!   driver.
//!
//! Each format crate (`sipllm-gguf`, `sipllm-llmw`) re-exports what its users need, so an
//! embedder rarely names this crate: it reads files through those (or `sipllm-streaming`).
//! No I/O, no `unsafe`.
//!
//! What an embedder meets of it is the shape of every finding, whichever format it came from:
//!
//! ```
//! use sipllm_format::{Path, PathSeg, Span};
//!
//! let path = Path::root()
//!     .with(PathSeg::Metadata { index: 12, key: Some("tokenizer.ggml.tokens".into()) })
//!     .with(PathSeg::Element(5031));
//! assert_eq!(path.to_string(), r#"metadata[12] "tokenizer.ggml.tokens"[5031]"#);
//!
//! let span = Span::new(24, 8); // absolute offset and length
//! assert_eq!(span.end(), 32);
//! assert_eq!(span.slice(b"too short"), None); // never an out-of-bounds slice
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod decoder;
mod finding;
pub mod grammar;
mod index;
mod invisible;
mod number;
mod path;
mod span;

pub use decoder::{DecoderEvent, HeaderDecoder, Step, decode_slice};
pub use finding::{Finding, Kind};
pub use index::NameIndex;
pub use invisible::{INVISIBLE_RANGES, first_invisible, is_invisible};
pub use number::group;
pub use path::{MAX_SHOWN_NAME, Path, PathSeg, shown_name};
pub use span::Span;
