//! The built-in conversation shapes (`shapes.json`: plain turns, tool calls, parallel
//! calls, reasoning, content parts, unicode, injected turn markers) and the lint that
//! renders a template over them and reports what fails or renders oddly.

use super::{ChatTemplate, Moment, Options, RenderInput, TemplateError, TemplateValue};

/// The shapes, as JSON (kept beside this file so that people can read them).
const SHAPES: &str = include_str!("shapes.json");

/// One conversation shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Its name (`plain`, `tool_call`, …).
    pub name: String,
    /// The messages.
    pub messages: TemplateValue,
    /// The tool definitions, if any.
    pub tools: Option<TemplateValue>,
    /// The text of the last user message, which every render must contain.
    last_user_text: Option<String>,
    /// Whether it ends with a user turn (then `add_generation_prompt` must add something).
    ends_with_user: bool,
}

/// The built-in shapes.
pub fn shapes() -> Vec<Shape> {
    let parsed: Vec<serde_json::Value> = serde_json::from_str(SHAPES).unwrap_or_default();
    parsed
        .iter()
        .filter_map(|s| {
            let messages = s.get("messages")?;
            let last = messages.as_array()?.last()?;
            let ends_with_user = last.get("role").and_then(|r| r.as_str()) == Some("user");
            let last_user_text = messages
                .as_array()?
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
                .and_then(|m| m.get("content")?.as_str().map(str::to_owned))
                .filter(|t| !t.is_empty());
            Some(Shape {
                name: s.get("name")?.as_str()?.to_owned(),
                messages: TemplateValue::from_json(&messages.to_string()).ok()?,
                tools: s
                    .get("tools")
                    .filter(|t| !t.is_null())
                    .and_then(|t| TemplateValue::from_json(&t.to_string()).ok()),
                last_user_text,
                ends_with_user,
            })
        })
        .collect()
}

/// One thing the lint found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintIssue {
    /// The stable code (`model::lint::…`).
    pub code: &'static str,
    /// The shape it concerns.
    pub shape: String,
    /// `add_generation_prompt` of the render.
    pub add_generation_prompt: bool,
    /// What happened.
    pub message: String,
}

/// Renders `source` over every built-in shape with `add_generation_prompt` off and on, and
/// reports: renders that fail (`model::lint::error`), that the template refuses
/// (`model::lint::refused`, its `raise_exception`), that Python would raise on (`model::lint::strict`:
/// fails under `--strict` only), empty renders, a last user message missing from the
/// prompt, a generation prompt that adds nothing, and Python's `None` printed where no
/// message says it. With `options.strict` the renders themselves are strict.
pub fn lint(source: &str, options: &Options, now: Moment) -> Result<Vec<LintIssue>, TemplateError> {
    let template = ChatTemplate::new(source, options)?;
    let strict = if options.strict {
        None
    } else {
        Some(ChatTemplate::new(source, &Options { strict: true, ..*options })?)
    };
    let mut issues = Vec::new();
    for shape in shapes() {
        let mut rendered: [Option<String>; 2] = [None, None];
        for (slot, add_generation_prompt) in [false, true].into_iter().enumerate() {
            let mut input = RenderInput::new(shape.messages.clone());
            input.tools = shape.tools.clone();
            input.add_generation_prompt = add_generation_prompt;
            input.now = now;
            let mut issue = |code: &'static str, message: String| {
                issues.push(LintIssue {
                    code,
                    shape: shape.name.clone(),
                    add_generation_prompt,
                    message,
                });
            };
            match template.render(&input) {
                Err(e @ TemplateError::Raised { .. }) => {
                    issue("model::lint::refused", e.to_string())
                }
                Err(e) => issue("model::lint::error", format!("{}: {e}", e.code())),
                Ok(text) => {
                    if let Some(Err(e)) = strict.as_ref().map(|s| s.render(&input)) {
                        issue("model::lint::strict", format!("Python's Jinja2 raises here: {e}"));
                    }
                    if text.trim().is_empty() {
                        issue("model::lint::empty", "the prompt is empty".into());
                    } else if let Some(last) =
                        shape.last_user_text.as_deref().filter(|l| !text.contains(*l))
                    {
                        issue(
                            "model::lint::missing_content",
                            format!("the last user message ({last:?}) is not in the prompt"),
                        );
                    }
                    if text.contains("None") {
                        issue("model::lint::prints_none", "Python's `None` is printed into the prompt (a null field rendered as text)".into());
                    }
                    rendered[slot] = Some(text);
                }
            }
        }
        if let [Some(off), Some(on)] = &rendered
            && shape.ends_with_user
            && off == on
        {
            issues.push(LintIssue {
                code: "model::lint::generation_prompt_ignored",
                shape: shape.name.clone(),
                add_generation_prompt: true,
                message: "add_generation_prompt adds nothing: the model is not cued to answer"
                    .into(),
            });
        }
    }
    Ok(issues)
}
