//! A model's chat templates and the BOS/EOS strings a render of them gets, from its
//! metadata alone.

use sha2::{Digest, Sha256};
use sipllm_streaming::WeightSource;

/// The key of the default template.
pub const DEFAULT_KEY: &str = "tokenizer.chat_template";

/// One template a model carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTemplate {
    /// `None` for the default template (`tokenizer.chat_template`), else the name after
    /// `tokenizer.chat_template.` (`tool_use`, `rag`, …).
    pub name: Option<String>,
    /// The text exactly as stored (invalid UTF-8, which no real template has, replaced by
    /// U+FFFD; [`sha256`](Self::sha256) is of the stored bytes all the same).
    pub text: String,
    /// The stored bytes' SHA-256, lowercase hex.
    pub sha256: String,
    /// The stored size in bytes.
    pub len: usize,
}

impl NamedTemplate {
    /// A template from its stored bytes.
    pub fn from_bytes(name: Option<String>, bytes: &[u8]) -> NamedTemplate {
        NamedTemplate {
            name,
            text: String::from_utf8_lossy(bytes).into_owned(),
            sha256: sha256_hex(bytes),
            len: bytes.len(),
        }
    }

    /// The metadata key it is stored under.
    pub fn key(&self) -> String {
        match &self.name {
            None => DEFAULT_KEY.to_owned(),
            Some(n) => format!("{DEFAULT_KEY}.{n}"),
        }
    }
}

/// Lowercase hex SHA-256 of `bytes` (how `show`, `inspect` and `audit --expect-sha256` name a
/// template).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A model's templates (the default first, then the named ones in file order) and its
/// special tokens' strings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelTemplates {
    /// The templates.
    pub templates: Vec<NamedTemplate>,
    /// The BOS token's text (`tokenizer.ggml.bos_token_id` into `tokenizer.ggml.tokens`),
    /// when both are present and the id is in range.
    pub bos_token: Option<String>,
    /// The EOS token's text, likewise.
    pub eos_token: Option<String>,
}

impl ModelTemplates {
    /// The template named `name` (`None`: the default one).
    pub fn get(&self, name: Option<&str>) -> Option<&NamedTemplate> {
        self.templates.iter().find(|t| t.name.as_deref() == name)
    }
}

/// Reads `source`'s chat templates and BOS/EOS strings (metadata only).
pub fn templates_of<S: WeightSource + ?Sized>(source: &S) -> ModelTemplates {
    let mut templates = Vec::new();
    if let Some(text) = source.meta(DEFAULT_KEY).and_then(|m| m.as_text()) {
        templates.push(NamedTemplate::from_bytes(None, text.as_bytes()));
    }
    let prefix = format!("{DEFAULT_KEY}.");
    for (key, value) in source.metadata() {
        let Some(name) = key.as_bytes().strip_prefix(prefix.as_bytes()) else { continue };
        if let Some(text) = value.as_text() {
            let name = String::from_utf8_lossy(name).into_owned();
            templates.push(NamedTemplate::from_bytes(Some(name), text.as_bytes()));
        }
    }
    ModelTemplates {
        templates,
        bos_token: token_text(source, "tokenizer.ggml.bos_token_id"),
        eos_token: token_text(source, "tokenizer.ggml.eos_token_id"),
    }
}

fn token_text<S: WeightSource + ?Sized>(source: &S, id_key: &str) -> Option<String> {
    let id = usize::try_from(source.meta(id_key)?.as_int()?).ok()?;
    let tokens = source.meta("tokenizer.ggml.tokens")?.as_strs()?;
    let text = tokens.get(id)?;
    Some(String::from_utf8_lossy(text.as_bytes()).into_owned())
}
