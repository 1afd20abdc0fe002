//! `sipllm_gguf._native`: the Rust half of the `sipllm_gguf` Python package.
//!
//! The parsing is sipllm-gguf's and the file reading sipllm-streaming's; this crate only hands
//! their results to Python. Two halves:
//!
//! * [`header`]: what the gguf-py–compatible `GGUFReader` (Python, `sipllm_gguf/reader.py`)
//!   needs: the parsed header as offsets, types and spans, so that Python can make numpy views
//!   of its own memory map exactly where gguf-py would, but only when they are asked for.
//! * [`model`]: the native API (`sipllm_gguf.open`, `validate`): typed metadata, lazy string
//!   sequences, tensors and reads through the `WeightSource` seam; of a file, or of a URL
//!   (`http(s)://`, `hf://`) through sipllm-remote's `open_url`, as the CLI opens one.
//! * [`safetensors`]: `Model.to_safetensors` (sipllm-edit's export) and where a tensor's bytes
//!   lie on disk, for `Model.array`'s `numpy.memmap` views.
//! * [`fit`]: the memory llama.cpp would allocate for a native model (`Model.fit`).
//! * [`load`]: the llama.cpp load check (`Model.load_check`, `validate(path, model=True)`).
//! * [`templates`]: chat templates (sipllm-model): a model's templates and BOS/EOS strings,
//!   and `render_chat`, rendered as transformers renders them.
//! * [`values`]: tensor values (sipllm-quants): `dequantize`, the drop-in for gguf-py's
//!   `gguf.quants.dequantize`, and `Model.values` through the seam's `read_f32_at`.
//!
//! No `unsafe` here: the one map of the workspace stays in sipllm-streaming, and the reader's
//! zero-copy tensor views come from `numpy.memmap` on the Python side.

mod errors;
mod exact;
mod fit;
mod header;
mod load;
mod model;
mod safetensors;
mod strings;
mod templates;
mod values;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GGUFError", m.py().get_type::<errors::GGUFError>())?;
    m.add("UnsupportedTypeError", errors::unsupported_type_error(m.py())?)?;
    m.add_class::<header::Header>()?;
    m.add_class::<header::KvRecord>()?;
    m.add_class::<header::TensorRecord>()?;
    m.add_class::<model::Model>()?;
    m.add_class::<strings::StrSeq>()?;
    m.add_class::<strings::StrSeqIter>()?;
    m.add_function(wrap_pyfunction!(header::read_header, m)?)?;
    m.add_function(wrap_pyfunction!(strings::decode_strings, m)?)?;
    m.add_function(wrap_pyfunction!(model::open, m)?)?;
    m.add_function(wrap_pyfunction!(model::validate, m)?)?;
    m.add_function(wrap_pyfunction!(model::is_remote, m)?)?;
    m.add_function(wrap_pyfunction!(model::shown_name, m)?)?;
    m.add_function(wrap_pyfunction!(load::load_check, m)?)?;
    m.add_function(wrap_pyfunction!(values::dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(values::row_values, m)?)?;
    m.add_function(wrap_pyfunction!(values::supported_types, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors::to_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors::tensor_location, m)?)?;
    m.add_function(wrap_pyfunction!(fit::fit_model, m)?)?;
    m.add_function(wrap_pyfunction!(templates::chat_templates, m)?)?;
    m.add_function(wrap_pyfunction!(templates::render_chat, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
