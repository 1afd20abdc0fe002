//! One line of a batch of renders (`sipllm template render --batch CASES.jsonl`, and the
//! input of `scripts/chat_template_oracle.py`): a JSON object with `template` or
//! `template_file`, `messages`, `tools`, `add_generation_prompt`, `bos_token`, `eos_token`,
//! `now` and `vars`.

use std::path::PathBuf;

use minijinja::value::{Value, ValueKind};

use super::{Moment, RenderInput, TemplateError, TemplateValue};

/// Where a case's template comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaseTemplate {
    /// `template`: the text itself.
    Text(String),
    /// `template_file`: a file to read (the caller reads it: this crate does no file I/O).
    File(PathBuf),
    /// Neither: the caller's default (a model's template).
    Default,
}

/// One parsed case.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCase {
    /// Its template.
    pub template: CaseTemplate,
    /// Its render input; `bos_token`/`eos_token`/`now` the given defaults when absent.
    pub input: RenderInput,
}

impl BatchCase {
    /// Parses one line; fields it lacks come from `defaults` (messages excepted: required).
    pub fn from_json_line(line: &str, defaults: &RenderInput) -> Result<BatchCase, TemplateError> {
        let invalid =
            |what: &str, message: String| TemplateError::Input { what: what.into(), message };
        let case: Value = serde_json::from_str(line).map_err(|e| invalid("case", e.to_string()))?;
        if case.kind() != ValueKind::Map {
            return Err(invalid("case", "a case is a JSON object".into()));
        }
        let field = |name: &str| case.get_attr(name).ok().filter(|v| !v.is_undefined());
        let text = |name: &str| -> Result<Option<String>, TemplateError> {
            match field(name) {
                None => Ok(None),
                Some(v) if v.is_none() => Ok(None),
                Some(v) => v
                    .as_str()
                    .map(|s| Some(s.to_owned()))
                    .ok_or_else(|| invalid(name, "must be a string".into())),
            }
        };
        let template = match (text("template")?, text("template_file")?) {
            (Some(t), None) => CaseTemplate::Text(t),
            (None, Some(f)) => CaseTemplate::File(PathBuf::from(f)),
            (None, None) => CaseTemplate::Default,
            (Some(_), Some(_)) => {
                return Err(invalid("case", "give template or template_file, not both".into()));
            }
        };
        let messages = field("messages").ok_or_else(|| invalid("messages", "missing".into()))?;
        if !matches!(messages.kind(), ValueKind::Seq) {
            return Err(invalid("messages", "must be a JSON list".into()));
        }
        let mut input = defaults.clone();
        input.messages = TemplateValue(messages);
        input.tools = field("tools").filter(|t| !t.is_none()).map(TemplateValue);
        if let Some(g) = field("add_generation_prompt") {
            input.add_generation_prompt = g.is_true();
        }
        if let Some(b) = text("bos_token")? {
            input.bos_token = b;
        }
        if let Some(e) = text("eos_token")? {
            input.eos_token = e;
        }
        if let Some(now) = text("now")? {
            input.now = Moment::parse(&now)
                .ok_or_else(|| invalid("now", format!("{now:?} is not YYYY-MM-DDTHH:MM:SS")))?;
        }
        if let Some(vars) = field("vars").filter(|v| !v.is_none()) {
            if vars.kind() != ValueKind::Map {
                return Err(invalid("vars", "must be a JSON object".into()));
            }
            for key in vars.try_iter().map_err(|e| invalid("vars", e.to_string()))? {
                let name = key.as_str().unwrap_or_default().to_owned();
                let value = vars.get_item(&key).unwrap_or_default();
                input.vars.push((name, TemplateValue(value)));
            }
        }
        Ok(BatchCase { template, input })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_line_fills_the_input() {
        let defaults = RenderInput::new(TemplateValue::string(""));
        let line = r#"{"template": "x", "messages": [{"role": "user", "content": "Hi"}], "tools": null,
            "add_generation_prompt": true, "bos_token": "<B>", "now": "2026-12-04T12:00:00", "vars": {"k": 1}}"#;
        let case = BatchCase::from_json_line(line, &defaults).unwrap();
        assert_eq!(case.template, CaseTemplate::Text("x".into()));
        assert!(case.input.add_generation_prompt && case.input.tools.is_none());
        assert_eq!((case.input.bos_token.as_str(), case.input.eos_token.as_str()), ("<B>", "</s>"));
        assert_eq!(case.input.vars.len(), 1);
        for bad in [
            r#"{"messages": 1}"#,
            r#"[]"#,
            r#"{"template": "x", "template_file": "y", "messages": []}"#,
            "{",
        ] {
            assert_eq!(
                BatchCase::from_json_line(bad, &defaults).unwrap_err().code(),
                "model::template::input",
                "{bad}"
            );
        }
    }
}
