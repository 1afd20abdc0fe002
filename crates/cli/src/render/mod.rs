//! Everything that turns parsed data into text: escaping, values, tables and JSON (the hex
//! window under diagnostics is the `sipllm-hexview` crate).

pub mod edit;
pub mod table;
pub mod value;

// Escaping and the `inspect --json` records are shared with the browser page (sipllm-view).
pub use sipllm_view::{escape, json};
