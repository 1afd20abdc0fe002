//! Static findings on a template's text: what no prompt format needs and template-injection
//! attacks use (CVE-2024-34359: a GGUF chat template reaching Python's internals through
//! `__class__`/`__globals__` in llama-cpp-python), and what makes a render loop or recurse
//! without end. The check reads the template; it never renders it.
//!
//! A tokenizer over the template's code (`{{ … }}`, `{% … %}`; not its text, comments or
//! `{% raw %}` blocks, nor the contents of string literals except where a string names an
//! attribute: `x['__class__']`, `x|attr('__class__')`).

use super::Limits;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// Likely broken or wasteful; not an attack by itself.
    Warning,
    /// No benign template does this: treat the template as hostile.
    Error,
}

impl Severity {
    /// `warning` or `error` (SARIF's level names).
    pub fn name(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFinding {
    /// The stable code (`model::audit::…`).
    pub code: &'static str,
    /// How serious.
    pub severity: Severity,
    /// The 1-based line and column (in characters) of the offending code.
    pub line: usize,
    /// The 1-based column.
    pub column: usize,
    /// What was found.
    pub message: String,
    /// Why it matters and what to do.
    pub help: &'static str,
}

/// Attribute names that lead from a value to Python's internals (the SSTI gadget chains).
const INTROSPECTION: &[&str] = &[
    "mro",
    "func_globals",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins",
    "gi_frame",
    "gi_code",
    "cr_frame",
    "tb_frame",
    "co_code",
    "im_func",
    "_TemplateReference__context",
];

/// Names that execute code or reach the host in the Python engines a template may run in
/// (Jinja2's `lipsum`/`cycler`/`joiner` globals expose `__globals__`; Flask's `config`,
/// `request`, `url_for`).
const EXECUTION: &[&str] = &[
    "eval",
    "exec",
    "execfile",
    "compile",
    "popen",
    "system",
    "subprocess",
    "import_module",
    "getattr",
    "setattr",
    "delattr",
    "globals",
    "locals",
    "vars",
    "open",
    "lipsum",
    "cycler",
    "joiner",
    "url_for",
    "get_flashed_messages",
    "os",
    "self",
];

/// A loop over more items than any conversation has, or a repetition as large.
const HUGE: u128 = 100_000;

/// Blocks nested deeper than any real template nests them (the deepest of 712 nests about
/// a dozen).
const MAX_NESTING: usize = 64;

/// Audits `source`: every finding, in the template's order.
pub fn audit(source: &str) -> Vec<AuditFinding> {
    let mut findings = Vec::new();
    let limit = Limits::default().max_source;
    if source.len() > limit {
        findings.push(finding(
            "model::audit::too_large",
            Severity::Error,
            (1, 1),
            format!("the template is {} bytes (real ones are under 64 KiB; the renderer's limit is {limit})", source.len()),
            "a template this large is padding or an attack: do not use it",
        ));
        // Tokenizing megabytes of hostile text would only repeat this.
        return findings;
    }
    let tags = tags(source);
    let mut depth = 0usize;
    let mut deepest_reported = false;
    // The macros being defined (name, its depth of blocks at definition).
    let mut macros: Vec<(String, usize)> = Vec::new();
    for tag in &tags {
        let toks = &tag.tokens;
        if tag.statement {
            let keyword = toks.first().map(|t| t.text.as_str()).unwrap_or("");
            match keyword {
                "include" | "import" | "extends" | "from" => findings.push(finding(
                    "model::audit::include",
                    Severity::Error,
                    tag.pos(source, 0),
                    format!(
                        "`{keyword}` loads another template: a chat template is self-contained"
                    ),
                    "a template loading others can run code the file does not show: do not use it",
                )),
                "if" | "for" | "macro" | "call" | "filter" | "block" | "with" | "generation" => {
                    depth += 1;
                    if keyword == "macro"
                        && let Some(name) = toks.get(1)
                    {
                        macros.push((name.text.clone(), depth));
                    }
                    if depth > MAX_NESTING && !deepest_reported {
                        deepest_reported = true;
                        findings.push(finding(
                            "model::audit::deep_nesting",
                            Severity::Error,
                            tag.pos(source, 0),
                            format!("blocks nest more than {MAX_NESTING} deep"),
                            "no prompt format nests this deep; it exhausts parsers' stacks (llama.cpp's among them)",
                        ));
                    }
                }
                "set" if !toks.iter().any(|t| t.text == "=") => depth += 1,
                k if k.starts_with("end") => {
                    if k == "endmacro" && macros.last().is_some_and(|(_, d)| *d == depth) {
                        macros.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
        }
        for (i, tok) in toks.iter().enumerate() {
            let prev = i.checked_sub(1).and_then(|p| toks.get(p)).map(|t| t.text.as_str());
            let next = toks.get(i + 1).map(|t| t.text.as_str());
            // Computed only for a finding: it scans the text before the tag.
            let pos = || tag.pos(source, tok.offset);
            match tok.kind {
                Kind::Ident => {
                    let name = tok.text.as_str();
                    let dunder = name.starts_with("__") && name.ends_with("__") && name.len() > 4;
                    if dunder && (prev == Some(".") || is_python_dunder(name)) {
                        findings.push(dunder_finding(name, pos()));
                    } else if prev == Some(".") && INTROSPECTION.contains(&name) {
                        findings.push(finding(
                            "model::audit::introspection",
                            Severity::Error,
                            pos(),
                            format!("attribute `{name}` reaches Python's internals"),
                            "template injection uses this chain to run code: do not use this template",
                        ));
                    } else if prev != Some(".")
                        && EXECUTION.contains(&name)
                        && (next == Some("(") || next == Some("."))
                    {
                        findings.push(finding(
                            "model::audit::code_execution",
                            Severity::Error,
                            pos(),
                            format!(
                                "`{name}` names code execution or the host, not a conversation"
                            ),
                            "a chat template only formats messages: do not use this template",
                        ));
                    }
                    if name == "range"
                        && next == Some("(")
                        && let Some(n) = huge_number(&toks[i + 1..])
                    {
                        findings.push(finding(
                            "model::audit::unbounded_loop",
                            Severity::Error,
                            pos(),
                            format!("range over {n} items: no conversation is that long"),
                            "this loop only burns time: the template is broken or hostile",
                        ));
                    }
                    let defining = tag.statement && i == 1 && toks[0].text == "macro";
                    // A macro calling itself outside any `if`/`for` of its body recurses
                    // until the engine stops it.
                    if next == Some("(")
                        && prev != Some(".")
                        && !defining
                        && macros.iter().any(|(m, d)| m == name && *d == depth)
                    {
                        findings.push(finding(
                            "model::audit::unbounded_recursion",
                            Severity::Error,
                            pos(),
                            format!("macro `{name}` calls itself unconditionally"),
                            "this recursion never ends: the template is broken or hostile",
                        ));
                    }
                }
                Kind::Str => {
                    let name = tok.text.as_str();
                    let dunder = name.starts_with("__") && name.ends_with("__") && name.len() > 4;
                    let is_attr = prev == Some("[")
                        || (prev == Some("(") && i >= 2 && toks[i - 2].text == "attr");
                    if dunder && is_attr {
                        findings.push(dunder_finding(name, pos()));
                    }
                }
                Kind::Op if tok.text == "*" || tok.text == "**" => {
                    let big = next_number(&toks[i + 1..]).is_some_and(|n| n >= HUGE)
                        || (tok.text == "*" && next_number_is_power(&toks[i + 1..]))
                        || prev_number(&toks[..i]).is_some_and(|n| n >= HUGE);
                    if big || tok.text == "**" {
                        findings.push(finding(
                            "model::audit::huge_repetition",
                            Severity::Error,
                            pos(),
                            format!("`{}` builds a huge value", tok.text),
                            "a repetition or power this large only exhausts memory: the template is hostile",
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    findings
}

/// The finding of an audit that was told the template's SHA-256 (`template audit
/// --expect-sha256`) when the template hashes to something else: `actual` is the template's
/// [`sha256_hex`](super::sha256_hex), `expected` the value given, as it should be shown.
pub fn sha256_mismatch(actual: &str, expected: &str) -> AuditFinding {
    finding(
        "model::audit::sha256_mismatch",
        Severity::Error,
        (1, 1),
        format!("sha256 {actual} is not the expected {expected}"),
        "the template differs from the one you checked: review it before trusting this file",
    )
}

fn finding(
    code: &'static str,
    severity: Severity,
    (line, column): (usize, usize),
    message: String,
    help: &'static str,
) -> AuditFinding {
    AuditFinding { code, severity, line, column, message, help }
}

fn dunder_finding(name: &str, pos: (usize, usize)) -> AuditFinding {
    finding(
        "model::audit::dunder",
        Severity::Error,
        pos,
        format!("access to `{name}`: Python's internals, never a message field"),
        "dunder attribute chains are how template injection reaches code execution (CVE-2024-34359): do not use this template",
    )
}

/// Dunder names that are Python machinery wherever they appear (not a template's own
/// `__sentinel__` string).
fn is_python_dunder(name: &str) -> bool {
    matches!(
        name,
        "__class__"
            | "__mro__"
            | "__base__"
            | "__bases__"
            | "__subclasses__"
            | "__globals__"
            | "__builtins__"
            | "__import__"
            | "__init__"
            | "__dict__"
            | "__getattribute__"
            | "__getitem__"
            | "__code__"
            | "__closure__"
            | "__func__"
            | "__self__"
            | "__module__"
            | "__loader__"
            | "__spec__"
            | "__reduce__"
            | "__reduce_ex__"
    )
}

/// The first integer literal (or `a ** b` of literals) in a call's arguments, when huge.
fn huge_number(toks: &[Token]) -> Option<u128> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "(" => depth += 1,
            ")" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return None;
                }
            }
            _ if t.kind == Kind::Number => {
                let n = literal_value(&toks[i..]);
                if n >= HUGE {
                    return Some(n);
                }
            }
            _ => {}
        }
    }
    None
}

/// The value of the number at `toks[0]`, with a following `** k` applied (saturating).
fn literal_value(toks: &[Token]) -> u128 {
    let base: u128 = toks.first().and_then(|t| t.text.replace('_', "").parse().ok()).unwrap_or(0);
    match (toks.get(1), toks.get(2)) {
        (Some(op), Some(exp)) if op.text == "**" && exp.kind == Kind::Number => {
            let e: u32 = exp.text.parse().unwrap_or(u32::MAX);
            base.checked_pow(e).unwrap_or(u128::MAX)
        }
        _ => base,
    }
}

fn next_number(toks: &[Token]) -> Option<u128> {
    toks.first().filter(|t| t.kind == Kind::Number).map(|_| literal_value(toks))
}

fn next_number_is_power(toks: &[Token]) -> bool {
    toks.get(1).is_some_and(|t| t.text == "**")
}

fn prev_number(toks: &[Token]) -> Option<u128> {
    let t = toks.last().filter(|t| t.kind == Kind::Number)?;
    t.text.replace('_', "").parse().ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Str,
    Number,
    Op,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    /// The identifier, the string's contents, the number or the operator.
    text: String,
    /// Byte offset in the tag's code.
    offset: usize,
}

/// One `{{ … }}` or `{% … %}`: where its code starts and its tokens.
#[derive(Debug)]
struct Tag {
    statement: bool,
    start: usize,
    tokens: Vec<Token>,
}

impl Tag {
    /// The 1-based line and column of the tag's code offset `at`.
    fn pos(&self, source: &str, at: usize) -> (usize, usize) {
        let abs = (self.start + at).min(source.len());
        let before = source.get(..abs).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}

/// Splits `source` into its tags (comments and raw blocks skipped).
fn tags(source: &str) -> Vec<Tag> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut in_raw = false;
    while let Some(found) = source.get(at..).and_then(|r| r.find('{')) {
        let open = at + found;
        let kind = source.get(open + 1..open + 2);
        let close = match kind {
            Some("{") => "}}",
            Some("%") => "%}",
            Some("#") => "#}",
            _ => {
                at = open + 1;
                continue;
            }
        };
        let code_start = open + 2;
        let Some(end) = find_close(source, code_start, close) else { break };
        let code = source.get(code_start..end).unwrap_or("");
        at = end + 2;
        if kind == Some("#") {
            continue;
        }
        let statement = kind == Some("%");
        let tokens = tokenize(code.trim_start_matches(['-', '+']));
        let lead = code.len() - code.trim_start_matches(['-', '+']).len();
        let tokens: Vec<Token> = tokens
            .into_iter()
            .map(|mut t| {
                t.offset += lead;
                t
            })
            .collect();
        let keyword = tokens.first().filter(|_| statement).map(|t| t.text.as_str());
        if in_raw {
            in_raw = keyword != Some("endraw");
            continue;
        }
        if keyword == Some("raw") {
            in_raw = true;
            continue;
        }
        out.push(Tag { statement, start: code_start, tokens });
    }
    out
}

/// The offset of `close` ending the tag whose code starts at `from`, skipping string
/// literals (`'%}'` inside a string does not end a tag).
fn find_close(source: &str, from: usize, close: &str) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut i = from;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if source.get(i..).is_some_and(|r| r.starts_with(close)) => return Some(i),
            None => {}
        }
        i += 1;
    }
    None
}

fn tokenize(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '\'' || c == '"' {
            let mut text = String::new();
            while let Some((_, d)) = chars.next() {
                if d == '\\' {
                    if let Some((_, e)) = chars.next() {
                        text.push(e);
                    }
                } else if d == c {
                    break;
                } else {
                    text.push(d);
                }
            }
            out.push(Token { kind: Kind::Str, text, offset: at });
        } else if c.is_alphabetic() || c == '_' {
            let mut text = String::from(c);
            while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_alphanumeric() || *d == '_')
            {
                text.push(d);
                chars.next();
            }
            out.push(Token { kind: Kind::Ident, text, offset: at });
        } else if c.is_ascii_digit() {
            let mut text = String::from(c);
            while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit() || *d == '_')
            {
                text.push(d);
                chars.next();
            }
            out.push(Token { kind: Kind::Number, text, offset: at });
        } else if c == '*' && chars.peek().is_some_and(|(_, d)| *d == '*') {
            chars.next();
            out.push(Token { kind: Kind::Op, text: "**".into(), offset: at });
        } else {
            out.push(Token { kind: Kind::Op, text: c.to_string(), offset: at });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(src: &str) -> Vec<&'static str> {
        audit(src).into_iter().map(|f| f.code).collect()
    }

    #[test]
    fn finds_each_probe() {
        assert_eq!(
            codes("{{ ''.__class__.__mro__[1].__subclasses__() }}"),
            ["model::audit::dunder"; 3]
        );
        assert_eq!(
            codes("{{ x['__globals__'] }}{{ x|attr('__class__') }}"),
            ["model::audit::dunder"; 2]
        );
        assert_eq!(codes("{% include 'x' %}{% import 'y' as z %}"), ["model::audit::include"; 2]);
        assert_eq!(
            codes("{{ lipsum.__globals__ }}"),
            ["model::audit::code_execution", "model::audit::dunder"]
        );
        assert_eq!(
            codes("{% for i in range(10**6) %}{% endfor %}"),
            ["model::audit::unbounded_loop", "model::audit::huge_repetition"]
        );
        assert_eq!(codes("{{ 'x' * 1000000000 }}"), ["model::audit::huge_repetition"]);
        assert_eq!(
            codes("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"),
            ["model::audit::unbounded_recursion"]
        );
        let deep = "{% if true %}".repeat(100);
        assert_eq!(codes(&deep), ["model::audit::deep_nesting"]);
    }

    #[test]
    fn benign_code_is_clean() {
        let src = "{% macro render(s) %}{% if s is mapping %}{{ render(s.x) }}{% endif %}{% endmacro %}\
                   {% for m in messages + [{'role': '__sentinel__'}] %}{{ m.role == 'system' }}{{ 2 * 3 }}{% endfor %}\
                   {% raw %}{{ x.__class__ }}{% endraw %}{# {{ os.system('x') }} #}";
        assert_eq!(codes(src), Vec::<&str>::new());
    }
}
