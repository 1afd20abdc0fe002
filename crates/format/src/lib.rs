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
//! Each format crate (`sipllm-gguf`, `sipllm-llmw`) re-exports what its users need, so nothing
//! outside them has to name this crate. No I/O, no `unsafe`.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod decoder;
mod finding;
pub mod grammar;
mod index;
mod path;
mod span;

pub use decoder::{DecoderEvent, HeaderDecoder, Step, decode_slice};
pub use finding::{Finding, Kind};
pub use index::NameIndex;
pub use path::{MAX_SHOWN_NAME, Path, PathSeg, shown_name};
pub use span::Span;
