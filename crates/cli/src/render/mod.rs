//! Everything that turns parsed data into text: escaping, values, tables and JSON (the hex
//! window under diagnostics is the `sipllm-hexview` crate).

pub mod edit;
pub mod escape;
pub mod json;
pub mod table;
pub mod value;
