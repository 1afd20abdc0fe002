//! `Model.load_check()` and `validate(path, model=True)`: sipllm-model's llama.cpp load check
//! (`sipllm_model::load::check`) as finding rows.

use pyo3::prelude::*;
use sipllm_model::load::{self, Severity};

use crate::model::Model;

/// `(severity, code, offset, length, path, message, help)`, as `validate` gives them.
type FindingRow = (&'static str, &'static str, Option<u64>, u64, String, String, String);

/// What keeps llama.cpp 0c1e570 from loading `model` (errors), and what was not checked
/// (warnings): an empty list means it loads. Its `arch` and whether llama.cpp would abort
/// come with it: `(findings, arch, known_arch, loads, crashes)`.
#[pyfunction]
pub(crate) fn load_check(
    py: Python<'_>,
    model: &Model,
) -> (Vec<FindingRow>, Option<String>, bool, bool, bool) {
    let inner = model.inner.clone();
    let report = py.detach(move || load::check(&inner));
    let rows = report
        .findings
        .iter()
        .map(|f| {
            let severity = match f.kind().severity() {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            // A key or tensor absent from the file has no byte range.
            let offset = (!f.is_empty()).then_some(f.offset());
            let path = f.path().to_string();
            (severity, f.code(), offset, f.len(), path, f.message(), f.help().to_owned())
        })
        .collect();
    (rows, report.arch.clone(), report.known_arch, report.loads(), report.crashes())
}
