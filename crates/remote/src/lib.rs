//! Models where they live: GGUF and `.llmw` files read over HTTP(S) range requests — from any
//! web server, the Hugging Face Hub (`hf://OWNER/REPO/PATH[@REVISION]`) or, with the
//! `object-store` feature, S3, GCS and Azure — through the same
//! [`WeightSource`](sipllm_streaming::WeightSource) as local files.
//!
//! * [`HttpSource`] is a [`ReadAt`](sipllm_streaming::ReadAt) whose every read is a checked
//!   `206` range response (see [`http`] for the read paths and the fault model).
//! * [`RemoteUrl`] parses the URL forms; `hf://` resolves as `huggingface_hub` does, against
//!   `HF_ENDPOINT` with `HF_TOKEN`.
//! * [`open_model`] opens a remote model whatever its format, and a shard of a split set as
//!   the whole set (the other shards' URLs derived from its name); [`open_url`] does it from
//!   the URL as a person types it (what the CLI and the Python package call).
//! * [`RemoteError`] carries a stable code (`remote::http::range_ignored`, …), the URL (credentials
//!   redacted), the HTTP status and the hop; it travels inside the `io::Error` of a read.
//!
//! The default build has no async runtime: the client is `ureq` (synchronous, rustls). The
//! `object-store` feature adds `ObjectSource` (module `object`) for `s3://`, `gs://` and
//! `az://`, with a tokio runtime of its own.
//!
//! Opening a model on the Hub reads its header in a few range requests; its hyperparameters,
//! tokens and any one tensor then come through the seam as from a local file (`no_run`: it
//! needs the network):
//!
//! ```no_run
//! use sipllm_remote::{HttpOptions, RemoteUrl, open_model};
//! use sipllm_streaming::{OpenOptions, WeightSource};
//!
//! let url = RemoteUrl::parse_env("hf://ggml-org/models/tinyllamas/stories15M-q4_0.gguf")?;
//! let remote = open_model(&url, &HttpOptions::default(), &OpenOptions::default())?;
//! let model = &remote.model;
//! println!("{} layers", model.meta_uint("llama.block_count")?);
//! println!("{} tokens", model.meta_strs("tokenizer.ggml.tokens")?.len());
//! let t = model.find("output.weight").ok_or("no output.weight")?;
//! let mut buf = vec![0u8; t.byte_len()?];
//! model.read_raw(t, &mut buf)?; // one ranged GET for the tensor's bytes
//! println!("{} requests so far", remote.stats().requests);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod error;
pub mod http;
#[cfg(feature = "object-store")]
pub mod object;
mod open;
mod redact;
#[cfg(feature = "test-server")]
pub mod test_server;
pub mod url;

pub use error::{RemoteError, RemoteErrorKind};
pub use http::{HttpOptions, HttpSource, HttpStats};
#[cfg(feature = "object-store")]
pub use object::ObjectSource;
pub use open::{
    RemoteModel, fetch_to_file, open_any, open_model, open_model_or_header, open_source, open_url,
};
/// The shared error contract ([`RemoteError`] implements it: `code()`, `help()`).
pub use sipllm_streaming::Kind;
pub use url::{HttpUrl, RemoteUrl, is_remote};
