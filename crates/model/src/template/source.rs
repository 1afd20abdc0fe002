//! Rewrites of a template's text before minijinja compiles it.
//!
//! transformers registers a `{% generation %}…{% endgeneration %}` block tag (it marks the
//! assistant's tokens for training masks and renders its body); minijinja has no custom
//! tags. The tags are rewritten to `{% if true %}` / `{% endif %}`, which keep the block's
//! whitespace control (`{%-`, `-%}`, trim_blocks and lstrip_blocks act on them alike).

use std::borrow::Cow;

/// `source` with every `{% generation %}` and `{% endgeneration %}` tag replaced.
pub(crate) fn rewrite_generation(source: &str) -> Cow<'_, str> {
    if !source.contains("generation") {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    let mut changed = false;
    while let Some(start) = rest.find("{%") {
        let (before, tag) = rest.split_at(start);
        out.push_str(before);
        let Some(end) = tag.find("%}") else {
            out.push_str(tag);
            rest = "";
            break;
        };
        let whole = &tag[..end + 2];
        let inner = &whole[2..whole.len() - 2];
        let open = inner.strip_prefix(['-', '+']).unwrap_or(inner);
        let trimmed_end = open.strip_suffix(['-', '+']).unwrap_or(open);
        let word = trimmed_end.trim();
        let replacement = match word {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match replacement {
            Some(r) => {
                // Keep the modifiers exactly: `{%- generation -%}` → `{%- if true -%}`.
                let left = &inner[..inner.len() - open.len()];
                let right = &open[trimmed_end.len()..];
                out.push_str("{%");
                out.push_str(left);
                out.push(' ');
                out.push_str(r);
                out.push(' ');
                out.push_str(right);
                out.push_str("%}");
                changed = true;
            }
            None => out.push_str(whole),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    if changed { Cow::Owned(out) } else { Cow::Borrowed(source) }
}

/// The filter [`guard_for_loops`] wraps every loop's iterable in.
pub(crate) const STRICT_ITER: &str = "__sipllm_strict_iter";

/// `--strict`: `{% for x in EXPR … %}` becomes `{% for x in (EXPR)|__sipllm_strict_iter … %}`,
/// so that iterating `None` raises as in Python (minijinja iterates it as empty, and its
/// loop has no hook). `EXPR` ends at the tag's end or at a top-level `if` or `recursive`.
pub(crate) fn guard_for_loops(source: &str) -> Cow<'_, str> {
    let mut out = String::with_capacity(source.len() + 64);
    let mut rest = source;
    let mut changed = false;
    while let Some(start) = rest.find("{%") {
        let (before, tag) = rest.split_at(start);
        out.push_str(before);
        let body = &tag[2..];
        let head = body.strip_prefix(['-', '+']).unwrap_or(body);
        let lead = body.len() - head.len();
        let trimmed = head.trim_start();
        let Some(after_for) =
            trimmed.strip_prefix("for").filter(|r| r.starts_with(char::is_whitespace))
        else {
            out.push_str("{%");
            rest = body;
            continue;
        };
        // The loop target runs to the first top-level ` in `.
        let Some(in_at) = find_word(after_for, "in") else {
            out.push_str("{%");
            rest = body;
            continue;
        };
        let expr_start = in_at + 2;
        let expr_and_rest = &after_for[expr_start..];
        let Some(expr_len) = expression_end(expr_and_rest) else {
            out.push_str("{%");
            rest = body;
            continue;
        };
        let expr = &expr_and_rest[..expr_len];
        out.push_str("{%");
        out.push_str(&body[..lead + (head.len() - trimmed.len())]);
        out.push_str("for");
        out.push_str(&after_for[..expr_start]);
        out.push_str(" (");
        out.push_str(expr.trim());
        out.push_str(")|");
        out.push_str(STRICT_ITER);
        out.push(' ');
        changed = true;
        rest = &expr_and_rest[expr_len..];
    }
    out.push_str(rest);
    if changed { Cow::Owned(out) } else { Cow::Borrowed(source) }
}

/// The offset of `word` standing alone (between spaces) in `text`, outside strings and
/// brackets.
fn find_word(text: &str, word: &str) -> Option<usize> {
    scan(text, |at, rest| rest.starts_with(word) && boundary(text, at, word.len()))
}

/// Where a loop's iterable expression ends: the tag's end (`%}`, `-%}`, `+%}`) or a
/// top-level `if` / `recursive`.
fn expression_end(text: &str) -> Option<usize> {
    scan(text, |at, rest| {
        rest.starts_with("%}")
            || ((rest.starts_with("-%}") || rest.starts_with("+%}")) && at > 0)
            || (rest.starts_with("if") && boundary(text, at, 2))
            || (rest.starts_with("recursive") && boundary(text, at, 9))
    })
}

fn boundary(text: &str, at: usize, len: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + len..].chars().next();
    before.is_some_and(char::is_whitespace)
        && after.is_none_or(|c| c.is_whitespace() || c == '%' || c == '-')
}

/// The first offset outside quotes and brackets where `stop` holds; `None` past the tag.
fn scan(text: &str, stop: impl Fn(usize, &str) -> bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        if depth == 0 && stop(at, &text[at..]) {
            return Some(at);
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_tags_become_an_always_true_block() {
        assert_eq!(
            rewrite_generation("a{%- generation -%}b{% endgeneration %}c{% if x %}{% endif %}"),
            "a{%- if true -%}b{% endif %}c{% if x %}{% endif %}"
        );
        assert!(matches!(rewrite_generation("{{ 'generation' }}"), Cow::Borrowed(_)));
    }

    #[test]
    fn strict_wraps_each_loops_iterable() {
        assert_eq!(
            guard_for_loops("{%- for m in messages if m.role != 'x %}' -%}{{ m }}{% endfor %}"),
            "{%- for m in (messages)|__sipllm_strict_iter if m.role != 'x %}' -%}{{ m }}{% endfor %}"
        );
        assert_eq!(
            guard_for_loops("{% for k, v in d.items() recursive %}{% for x in [1, 2]%}"),
            "{% for k, v in (d.items())|__sipllm_strict_iter recursive %}{% for x in ([1, 2])|__sipllm_strict_iter %}"
        );
        assert!(matches!(guard_for_loops("{% if x in y %}{{ 'for x in y' }}"), Cow::Borrowed(_)));
    }
}
