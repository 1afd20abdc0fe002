//! Chat templates: the Jinja prompt format a GGUF file carries (`tokenizer.chat_template`,
//! and named ones `tokenizer.chat_template.<name>`), rendered as transformers renders it,
//! within bounds, and audited before it is trusted.
//!
//! [`ChatTemplate`] compiles a template into the [profile](self#the-profile) and
//! [`render`](ChatTemplate::render)s a [`RenderInput`]; every failure is a typed
//! [`TemplateError`] with a `model::template::…` code. [`Limits`] bounds the work a template can do
//! (fuel, recursion, output size, time), so a hostile template ends in an error, not a hang
//! or an allocation of gigabytes. [`audit`] lists what a template should never contain.
//! [`templates_of`] reads a model's templates and its BOS/EOS strings.
//!
//! # The profile
//!
//! minijinja configured as transformers' `_compile_jinja_template` configures Jinja2, plus
//! the fixes that close the gap on real templates: Python's `str()` when printing (`None`,
//! `True`, dicts), transformers' `tojson` keyword arguments, `{% generation %}`, and the
//! `is iterable` test. `docs/templates.md` measures the parity with Python on 712 real
//! templates and lists what still differs.
//!
//! ```
//! use sipllm_model::template::{ChatTemplate, Options, RenderInput, TemplateValue};
//!
//! let t = ChatTemplate::new(
//!     "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}",
//!     &Options::default(),
//! )?;
//! let messages = TemplateValue::from_json(r#"[{"role": "user", "content": "Hi"}]"#)?;
//! assert_eq!(t.render(&RenderInput::new(messages))?, "<|user|>Hi\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audit;
mod batch;
mod clock;
mod error;
mod guard;
mod model;
mod profile;
mod python;
mod shapes;
mod source;

use std::time::Duration;

use minijinja::value::Value;

pub use audit::{AuditFinding, Severity, audit, sha256_mismatch};
pub use batch::{BatchCase, CaseTemplate};
pub use clock::Moment;
pub use error::TemplateError;
pub use model::{DEFAULT_KEY, ModelTemplates, NamedTemplate, sha256_hex, templates_of};
pub use shapes::{LintIssue, Shape, lint, shapes};

/// The name the template is compiled under (it appears in no output).
const NAME: &str = "chat_template";

/// The bounds on one template's compilation and render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest template text accepted, in bytes (the largest of 712 real templates is
    /// 45 KB).
    pub max_source: usize,
    /// minijinja instructions one render may execute (a real template on a long
    /// conversation uses well under a hundred thousand).
    pub fuel: u64,
    /// How deep macro calls, loops and conditionals may nest at run time (minijinja's cost
    /// units; a macro call costs several).
    pub recursion: usize,
    /// The largest rendered text, in bytes.
    pub max_output: usize,
    /// The longest a render may take (checked at every print and every call of the
    /// profile's functions; the fuel bounds the rest).
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_source: 1 << 20,
            fuel: 5_000_000,
            recursion: 500,
            max_output: 1 << 20,
            time: Duration::from_secs(1),
        }
    }
}

/// How templates are compiled and rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// The bounds.
    pub limits: Limits,
    /// Error where Python's Jinja2 raises (`tojson` of an undefined value, `length` of
    /// `None`, …) instead of rendering leniently as minijinja does.
    pub strict: bool,
}

/// A value handed to a template, read from JSON with its objects' key order kept (as
/// Python's `json.loads` keeps it; templates print dicts in that order).
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateValue(Value);

impl TemplateValue {
    /// Reads JSON text.
    pub fn from_json(text: &str) -> Result<TemplateValue, TemplateError> {
        serde_json::from_str::<Value>(text)
            .map(TemplateValue)
            .map_err(|e| TemplateError::Input { what: "JSON".into(), message: e.to_string() })
    }

    /// A string value.
    pub fn string(text: &str) -> TemplateValue {
        TemplateValue(Value::from(text))
    }

    /// True for JSON `null`.
    pub fn is_null(&self) -> bool {
        self.0.is_none()
    }

    /// An object's member `key`.
    pub fn get(&self, key: &str) -> Option<TemplateValue> {
        if self.0.kind() != minijinja::value::ValueKind::Map {
            return None;
        }
        self.0.get_attr(key).ok().filter(|v| !v.is_undefined()).map(TemplateValue)
    }

    /// A list's items.
    pub fn items(&self) -> Option<Vec<TemplateValue>> {
        if self.0.kind() != minijinja::value::ValueKind::Seq {
            return None;
        }
        Some(self.0.try_iter().ok()?.map(TemplateValue).collect())
    }

    /// A string's text.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }

    /// Compact JSON text, keys in their order (floats as Python writes them).
    pub fn to_json(&self) -> Result<String, TemplateError> {
        let style =
            python::JsonStyle { item_sep: ",".into(), key_sep: ":".into(), ..Default::default() };
        let mut out = String::new();
        python::json(&self.0, &style, &mut out)
            .map_err(|e| TemplateError::Input { what: "value".into(), message: e.message() })?;
        Ok(out)
    }
}

impl From<bool> for TemplateValue {
    fn from(b: bool) -> TemplateValue {
        TemplateValue(Value::from(b))
    }
}

/// What one render gets: transformers passes `messages`, `tools` (when given),
/// `add_generation_prompt`, `bos_token`, `eos_token` and any extra keyword arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderInput {
    /// The conversation: a list of `{role, content, …}` objects.
    pub messages: TemplateValue,
    /// The tool definitions, when given (JSON `null` is the same as none).
    pub tools: Option<TemplateValue>,
    /// Append the header of the assistant's next turn.
    pub add_generation_prompt: bool,
    /// The `bos_token` string (from a model: its vocabulary's BOS token).
    pub bos_token: String,
    /// The `eos_token` string.
    pub eos_token: String,
    /// The clock `strftime_now` reads.
    pub now: Moment,
    /// Further variables (`enable_thinking`, `date_string`, …), in order; a later one of
    /// the same name wins. They cannot replace the five above.
    pub vars: Vec<(String, TemplateValue)>,
}

impl RenderInput {
    /// `messages` with no tools, no generation prompt, `<s>`/`</s>` and the system clock.
    pub fn new(messages: TemplateValue) -> RenderInput {
        RenderInput {
            messages,
            tools: None,
            add_generation_prompt: false,
            bos_token: "<s>".into(),
            eos_token: "</s>".into(),
            now: Moment::now(),
            vars: Vec::new(),
        }
    }

    fn context(&self) -> Value {
        let mut ctx: Vec<(&str, Value)> =
            self.vars.iter().map(|(k, v)| (k.as_str(), v.0.clone())).collect();
        ctx.push(("messages", self.messages.0.clone()));
        if let Some(tools) = self.tools.as_ref().filter(|t| !t.is_null()) {
            ctx.push(("tools", tools.0.clone()));
        }
        ctx.push(("add_generation_prompt", Value::from(self.add_generation_prompt)));
        ctx.push(("bos_token", Value::from(self.bos_token.as_str())));
        ctx.push(("eos_token", Value::from(self.eos_token.as_str())));
        ctx.into_iter().collect()
    }
}

/// A compiled chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    options: Options,
}

impl ChatTemplate {
    /// Compiles `source` into the profile.
    pub fn new(source: &str, options: &Options) -> Result<ChatTemplate, TemplateError> {
        let limits = options.limits;
        if source.len() > limits.max_source {
            return Err(TemplateError::TooLarge { len: source.len(), limit: limits.max_source });
        }
        let mut env = profile::environment(limits.fuel, limits.recursion, options.strict);
        let mut text = source::rewrite_generation(source).into_owned();
        if options.strict {
            text = source::guard_for_loops(&text).into_owned();
        }
        env.add_template_owned(NAME, text).map_err(|e| compile_error(&e))?;
        Ok(ChatTemplate { env, options: *options })
    }

    /// The options it was compiled with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Renders `input`: exactly the prompt string, or why not.
    pub fn render(&self, input: &RenderInput) -> Result<String, TemplateError> {
        let limits = self.options.limits;
        let template = self.env.get_template(NAME).map_err(|e| compile_error(&e))?;
        let ctx = input.context();
        let mut out = guard::CappedOutput::new(limits.max_output);
        let (result, cause) =
            guard::with_guard(input.now, limits.time, self.options.strict, || {
                template.render_captured_to(ctx, &mut out).map(|_| ())
            });
        match (result, cause) {
            (Ok(()), _) => String::from_utf8(out.bytes).map_err(|e| TemplateError::Render {
                line: None,
                message: format!("the rendered text is not UTF-8: {e}"),
            }),
            (Err(e), Some(cause)) => Err(with_line(cause, e.line())),
            (Err(e), None) => Err(runtime_error(&e, &limits)),
        }
    }
}

fn compile_error(e: &minijinja::Error) -> TemplateError {
    let message = e.detail().unwrap_or("").to_owned();
    // The parser's own depth limit (150 nested blocks or expressions): a bound, not a typo.
    if message.contains("maximum recursion") {
        return TemplateError::Recursion { line: e.line(), message };
    }
    TemplateError::Syntax { line: e.line(), message }
}

/// The line minijinja knows for an error a callback caused.
fn with_line(cause: TemplateError, at: Option<usize>) -> TemplateError {
    match cause {
        TemplateError::Raised { line: None, message } => {
            TemplateError::Raised { line: at, message }
        }
        TemplateError::Strict { line: None, message } => {
            TemplateError::Strict { line: at, message }
        }
        TemplateError::Render { line: None, message } => {
            TemplateError::Render { line: at, message }
        }
        other => other,
    }
}

fn runtime_error(e: &minijinja::Error, limits: &Limits) -> TemplateError {
    let line = e.line();
    let detail = e.detail().unwrap_or("");
    match e.kind() {
        minijinja::ErrorKind::OutOfFuel => TemplateError::OutOfFuel { fuel: limits.fuel, line },
        minijinja::ErrorKind::InvalidOperation if detail.contains("recursion limit") => {
            TemplateError::Recursion { line, message: detail.to_owned() }
        }
        minijinja::ErrorKind::SyntaxError => compile_error(e),
        kind => {
            let message =
                if detail.is_empty() { kind.to_string() } else { format!("{kind}: {detail}") };
            TemplateError::Render { line, message }
        }
    }
}
