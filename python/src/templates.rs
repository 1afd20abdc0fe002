//! Chat templates for Python: a model's templates (`Model.chat_template`,
//! `Model.chat_templates`) and `render_chat`, through `sipllm_model::template`.

use pyo3::prelude::*;
use sipllm_model::template::{
    self, ChatTemplate, Moment, Options, RenderInput, TemplateError, TemplateValue,
};

use crate::errors::{Diag, gguf_error};
use crate::model::Model;

/// One template: (name or None for the default, text, sha256 hex, stored size).
type TemplateRow = (Option<String>, String, String, usize);

/// A model's chat templates (the default first) and its BOS/EOS token strings.
#[pyfunction]
pub(crate) fn chat_templates(model: &Model) -> (Vec<TemplateRow>, Option<String>, Option<String>) {
    let t = template::templates_of(model.source());
    let rows = t.templates.into_iter().map(|t| (t.name, t.text, t.sha256, t.len)).collect();
    (rows, t.bos_token, t.eos_token)
}

/// Renders `messages` (JSON text) through `template` as transformers renders it; raises
/// `GGUFError` with the `model::template::…` code on failure.
#[pyfunction]
#[pyo3(signature = (template, messages, tools, add_generation_prompt, bos_token, eos_token, vars, now = None, strict = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn render_chat(
    py: Python<'_>,
    template: &str,
    messages: &str,
    tools: Option<&str>,
    add_generation_prompt: bool,
    bos_token: String,
    eos_token: String,
    vars: Vec<(String, String)>,
    now: Option<&str>,
    strict: bool,
) -> PyResult<String> {
    let rendered = py.detach(|| -> Result<String, TemplateError> {
        let mut input = RenderInput::new(TemplateValue::from_json(messages)?);
        input.tools = tools.map(TemplateValue::from_json).transpose()?;
        input.add_generation_prompt = add_generation_prompt;
        input.bos_token = bos_token;
        input.eos_token = eos_token;
        if let Some(now) = now {
            input.now = Moment::parse(now).ok_or_else(|| TemplateError::Input {
                what: "now".into(),
                message: format!("{now:?} is not YYYY-MM-DDTHH:MM:SS"),
            })?;
        }
        for (key, json) in vars {
            input.vars.push((key, TemplateValue::from_json(&json)?));
        }
        ChatTemplate::new(template, &Options { strict, ..Options::default() })?.render(&input)
    });
    rendered.map_err(|e| {
        let diag = Diag {
            severity: "error",
            code: e.code(),
            offset: None,
            length: 0,
            path: String::new(),
            message: e.to_string(),
            help: e.help().to_owned(),
        };
        gguf_error(py, &diag, None)
    })
}
