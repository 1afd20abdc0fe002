//! `--filter GLOB`: a small shell-style matcher for keys and tensor names.
//!
//! Supported: `*` (any run of characters, including `.`), `?` (one character), `[abc]`,
//! `[a-z]`, `[!abc]` / `[^abc]` (a class or its complement) and `\x` (a literal `x`). Matching
//! is over the whole name, case-sensitive.
//!
//! Why not the `glob` crate: its `Pattern` is built for file paths (separator rules, `**`),
//! while keys and tensor names are dotted identifiers where `*` should simply cross dots
//! (`blk.*.attn_q.weight`, `tokenizer.*`). Fifty lines with tests cover that without a
//! dependency.

use std::fmt;

/// A compiled pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    Any,
    Star,
    Class { negated: bool, items: Vec<(char, char)> },
}

/// Why a pattern is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobError {
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason)
    }
}

impl std::error::Error for GlobError {}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.source)
    }
}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            let token = match c {
                '*' => {
                    // Consecutive stars match what one star matches.
                    if tokens.last() == Some(&Token::Star) {
                        continue;
                    }
                    Token::Star
                }
                '?' => Token::Any,
                '\\' => Token::Literal(
                    chars.next().ok_or(GlobError { reason: "the pattern ends with `\\`" })?,
                ),
                '[' => {
                    let negated = matches!(chars.peek(), Some('!' | '^'));
                    if negated {
                        chars.next();
                    }
                    let mut items = Vec::new();
                    let mut first = true;
                    loop {
                        let c = chars.next().ok_or(GlobError { reason: "unclosed `[`" })?;
                        // A `]` right after `[` (or `[!`) is a literal member.
                        if c == ']' && !first {
                            break;
                        }
                        first = false;
                        let lo = if c == '\\' {
                            chars.next().ok_or(GlobError { reason: "unclosed `[`" })?
                        } else {
                            c
                        };
                        let mut ahead = chars.clone();
                        if ahead.next() == Some('-') && ahead.peek().is_some_and(|&n| n != ']') {
                            chars.next();
                            let hi = chars.next().ok_or(GlobError { reason: "unclosed `[`" })?;
                            if hi < lo {
                                return Err(GlobError { reason: "a range in `[...]` is reversed" });
                            }
                            items.push((lo, hi));
                        } else {
                            items.push((lo, lo));
                        }
                    }
                    Token::Class { negated, items }
                }
                c => Token::Literal(c),
            };
            tokens.push(token);
        }
        Ok(Glob { source: pattern.to_owned(), tokens })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when `text` matches the whole pattern.
    ///
    /// Linear backtracking over the last `*` seen: O(pattern × text) at worst, no recursion.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let (mut p, mut t) = (0usize, 0usize);
        // Where to resume after the last star: (pattern index after it, text index it took).
        let mut resume: Option<(usize, usize)> = None;
        loop {
            match self.tokens.get(p) {
                Some(Token::Star) => {
                    resume = Some((p + 1, t));
                    p += 1;
                    continue;
                }
                Some(tok) if text.get(t).is_some_and(|&c| single(tok, c)) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                Some(_) => {}
                None if t == text.len() => return true,
                None => {}
            }
            // Mismatch: let the last star take one more character, or fail.
            match resume {
                Some((rp, rt)) if rt < text.len() => {
                    resume = Some((rp, rt + 1));
                    p = rp;
                    t = rt + 1;
                }
                _ => return false,
            }
        }
    }
}

fn single(tok: &Token, c: char) -> bool {
    match tok {
        Token::Literal(l) => *l == c,
        Token::Any => true,
        Token::Class { negated, items } => {
            items.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated
        }
        Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Glob::new(p).unwrap().matches(t)
    }

    #[test]
    fn stars_cross_dots() {
        assert!(m("tokenizer.*", "tokenizer.ggml.tokens"));
        assert!(m("blk.*.attn_q.weight", "blk.31.attn_q.weight"));
        assert!(!m("blk.*.attn_q.weight", "blk.31.attn_k.weight"));
        assert!(m("*", ""));
        assert!(m("**a**", "bab"));
        assert!(m("*.weight", ".weight"));
        assert!(!m("*.weight", "output.bias"));
    }

    #[test]
    fn whole_name_only() {
        assert!(!m("general", "general.name"));
        assert!(m("general.name", "general.name"));
        assert!(!m("general.name", "general.names"));
    }

    #[test]
    fn question_marks_and_classes() {
        assert!(m("blk.?.ffn_*", "blk.7.ffn_up.weight"));
        assert!(!m("blk.?.ffn_*", "blk.17.ffn_up.weight"));
        assert!(m("blk.[0-2].*", "blk.1.x"));
        assert!(!m("blk.[0-2].*", "blk.3.x"));
        assert!(m("blk.[!0-2].*", "blk.3.x"));
        assert!(m("blk.[^0-2].*", "blk.3.x"));
        assert!(m("[]x]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("🦙?", "🦙é"));
    }

    #[test]
    fn backtracking_is_correct() {
        assert!(m("*a*b*c", "xxaxxbxxbxxc"));
        assert!(!m("*a*b*c", "xxaxxbxxbxx"));
        assert!(m("a*a*a*a*b", "aaaaaaaaab"));
        assert!(!m("a*a*a*a*b", "aaaaaaaaaa"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
        assert!(Glob::new("[z-a]").is_err());
    }
}
