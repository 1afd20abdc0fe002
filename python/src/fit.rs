//! `Model.fit(...)`: the memory llama.cpp would allocate (`sipllm_model::fit`), as a dict with
//! the fields of `sipllm fit --json`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sipllm_model::config::ModelConfig;
use sipllm_model::fit as memory;
use sipllm_model::fit::{Fit, FitError, FitParams, FlashAttn};
use sipllm_streaming::WeightSource;

use crate::model::Model;

fn fit_error(e: &FitError) -> PyErr {
    PyValueError::new_err(format!("{}: {e} (help: {})", e.code(), e.help()))
}

fn bad(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

/// The fit of `model` under the `profile`'s defaults changed by the given parameters
/// (llama.cpp's names); with `memory`, the largest context whose total fits in that many
/// bytes (`None` when not even 256 cells fit).
#[pyfunction]
#[pyo3(name = "fit", signature = (model, profile = "server", n_ctx = None, n_batch = None, n_ubatch = None,
    n_seq_max = None, type_k = None, type_v = None, flash_attn = None, kv_unified = None,
    swa_full = None, n_gpu_layers = None, memory = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_model<'py>(
    py: Python<'py>,
    model: &Model,
    profile: &str,
    n_ctx: Option<u32>,
    n_batch: Option<u32>,
    n_ubatch: Option<u32>,
    n_seq_max: Option<u32>,
    type_k: Option<&str>,
    type_v: Option<&str>,
    flash_attn: Option<&str>,
    kv_unified: Option<bool>,
    swa_full: Option<bool>,
    n_gpu_layers: Option<u32>,
    memory: Option<u64>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let mut p = FitParams::profile(profile).ok_or_else(|| {
        bad(format!("unknown profile {profile:?}: expected \"server\" or \"libllama\""))
    })?;
    p.n_ctx = n_ctx.unwrap_or(p.n_ctx);
    p.n_batch = n_batch.unwrap_or(p.n_batch);
    p.n_ubatch = n_ubatch.unwrap_or(p.n_ubatch);
    p.n_seq_max = n_seq_max.unwrap_or(p.n_seq_max);
    if let Some(t) = type_k {
        p.type_k = memory::cache_type(t).map_err(|e| fit_error(&e))?;
    }
    if let Some(t) = type_v {
        p.type_v = memory::cache_type(t).map_err(|e| fit_error(&e))?;
    }
    if let Some(fa) = flash_attn {
        p.flash_attn = FlashAttn::from_name(fa).ok_or_else(|| {
            bad(format!("flash_attn {fa:?}: expected \"on\", \"off\" or \"auto\""))
        })?;
    }
    p.kv_unified = kv_unified.unwrap_or(p.kv_unified);
    p.swa_full = swa_full.unwrap_or(p.swa_full);
    p.n_gpu_layers = n_gpu_layers.unwrap_or(p.n_gpu_layers);

    let source = model.source();
    let config = ModelConfig::from_source(source)
        .map_err(|e| bad(format!("{}: {e} (help: {})", e.code(), e.help())))?;
    let weights = memory::weights_of(source.tensors());
    let result = match memory {
        None => memory::fit(&config, &weights, &p).map(Some),
        Some(budget) => memory::max_context(&config, &weights, &p, budget),
    };
    match result.map_err(|e| fit_error(&e))? {
        Some(f) => Ok(Some(document(py, &f, &p)?)),
        None => Ok(None),
    }
}

fn document<'py>(py: Python<'py>, f: &Fit, p: &FitParams) -> PyResult<Bound<'py, PyDict>> {
    let r = &f.resolved;
    let d = PyDict::new(py);
    d.set_item("architecture", &f.architecture)?;
    d.set_item("n_ctx", r.n_ctx)?;
    d.set_item("n_ctx_seq", r.n_ctx_seq)?;
    d.set_item("n_batch", r.n_batch)?;
    d.set_item("n_ubatch", r.n_ubatch)?;
    d.set_item("n_seq_max", r.n_seq_max)?;
    d.set_item("n_stream", r.n_stream)?;
    d.set_item("n_swa_cells", r.swa_cells)?;
    d.set_item("type_k", p.type_k.name().to_ascii_lowercase())?;
    d.set_item("type_v", p.type_v.name().to_ascii_lowercase())?;
    d.set_item("flash_attn", r.flash_attn)?;
    d.set_item("kv_unified", p.kv_unified)?;
    d.set_item("swa_full", p.swa_full)?;
    d.set_item("n_gpu_layers", p.n_gpu_layers)?;
    d.set_item("kv_bytes", f.kv_bytes)?;
    d.set_item("recurrent_bytes", f.recurrent_bytes)?;
    d.set_item("output_bytes", f.output_bytes)?;
    d.set_item("model_bytes", f.model_bytes)?;
    let compute = PyDict::new(py);
    let devices = pyo3::types::PyList::empty(py);
    for dev in &f.devices {
        compute.set_item(dev.device.name(), dev.compute_bytes)?;
        let x = PyDict::new(py);
        x.set_item("device", dev.device.name())?;
        x.set_item("model_bytes", dev.model_bytes)?;
        x.set_item("kv_bytes", dev.kv_bytes)?;
        x.set_item("recurrent_bytes", dev.recurrent_bytes)?;
        x.set_item("compute_bytes", dev.compute_bytes)?;
        x.set_item("compute_estimated", dev.compute_estimated)?;
        x.set_item("output_bytes", dev.output_bytes)?;
        x.set_item("total_bytes", dev.total())?;
        devices.append(x)?;
    }
    d.set_item("compute_bytes", compute)?;
    d.set_item("devices", devices)?;
    d.set_item("total_bytes", f.total_bytes())?;
    Ok(d)
}
