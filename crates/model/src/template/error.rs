//! The template errors: one variant per way a template can fail, each with a stable code.

use std::time::Duration;

/// Why a chat template could not be compiled or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// The template's text is larger than [`Limits::max_source`](super::Limits).
    #[error("the template is {len} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// The text's length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The template does not parse (Jinja syntax), or nests deeper than the parser allows.
    #[error("syntax error{}: {message}", at_line(*line))]
    Syntax {
        /// The 1-based line of the template, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The template called `raise_exception(message)` (as it does for a conversation it
    /// does not support, e.g. roles that do not alternate).
    #[error("the template raised an exception{}: {message}", at_line(*line))]
    Raised {
        /// The 1-based line of the template, when known.
        line: Option<usize>,
        /// The template's own message.
        message: String,
    },
    /// The render executed more instructions than [`Limits::fuel`](super::Limits) allows.
    #[error("out of fuel: the render executed more than {fuel} instructions{}", at_line(*line))]
    OutOfFuel {
        /// The fuel the render had.
        fuel: u64,
        /// The 1-based line where it ran out, when known.
        line: Option<usize>,
    },
    /// Macro calls, loops or ifs nested deeper than [`Limits::recursion`](super::Limits).
    #[error("recursion limit exceeded{}: {message}", at_line(*line))]
    Recursion {
        /// The 1-based line, when known.
        line: Option<usize>,
        /// The engine's message.
        message: String,
    },
    /// The rendered text grew past [`Limits::max_output`](super::Limits).
    #[error("the rendered text is larger than the limit of {limit} bytes")]
    OutputTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The render ran longer than [`Limits::time`](super::Limits).
    #[error("the render took longer than {limit:?}")]
    Timeout {
        /// The limit.
        limit: Duration,
    },
    /// With [`Options::strict`](super::Options): an operation Python's Jinja2 raises on
    /// (iterating `None`, `tojson` of an undefined value, …) that the lenient profile renders.
    #[error("strict: {message}{}", at_line(*line))]
    Strict {
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What Python would raise.
        message: String,
    },
    /// Any other error while rendering (an unknown filter, a type error, …).
    #[error("render error{}: {message}", at_line(*line))]
    Render {
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What went wrong.
        message: String,
    },
    /// The render's inputs are not what a chat template takes (messages not a JSON list,
    /// a variable that is not JSON, …).
    #[error("invalid {what}: {message}")]
    Input {
        /// Which input (`messages`, `tools`, a variable's name).
        what: String,
        /// What is wrong with it.
        message: String,
    },
}

fn at_line(line: Option<usize>) -> String {
    line.map(|l| format!(" at line {l}")).unwrap_or_default()
}

impl TemplateError {
    /// The stable code of this error (`model::template::…`).
    pub fn code(&self) -> &'static str {
        match self {
            TemplateError::TooLarge { .. } => "model::template::too_large",
            TemplateError::Syntax { .. } => "model::template::syntax",
            TemplateError::Raised { .. } => "model::template::raised",
            TemplateError::OutOfFuel { .. } => "model::template::out_of_fuel",
            TemplateError::Recursion { .. } => "model::template::recursion",
            TemplateError::OutputTooLarge { .. } => "model::template::output_too_large",
            TemplateError::Timeout { .. } => "model::template::timeout",
            TemplateError::Strict { .. } => "model::template::strict",
            TemplateError::Render { .. } => "model::template::render",
            TemplateError::Input { .. } => "model::template::input",
        }
    }

    /// How to fix it.
    pub fn help(&self) -> &'static str {
        match self {
            TemplateError::TooLarge { .. } => {
                "real chat templates are under 64 KiB; raise Limits::max_source only for a template you trust"
            }
            TemplateError::Syntax { .. } => "fix the Jinja syntax at the line shown",
            TemplateError::Raised { .. } => {
                "the template refuses this conversation: change the messages (roles, order) as its message says"
            }
            TemplateError::OutOfFuel { .. } | TemplateError::Timeout { .. } => {
                "the template loops far longer than any prompt needs: it is broken or hostile (run `sipllm template audit`)"
            }
            TemplateError::Recursion { .. } => {
                "the template recurses too deeply: it is broken or hostile (run `sipllm template audit`)"
            }
            TemplateError::OutputTooLarge { .. } => {
                "the prompt would be larger than any context window: the template or the conversation is broken"
            }
            TemplateError::Strict { .. } => {
                "Python's Jinja2 (transformers) raises here: fix the template or the input, or render without --strict"
            }
            TemplateError::Render { .. } => {
                "the template fails on this input: check the line shown"
            }
            TemplateError::Input { .. } => {
                "messages are a JSON list of objects, tools a JSON list, variables JSON values"
            }
        }
    }
}
