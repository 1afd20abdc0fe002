//! The one escaping helper: every key, tensor name and string value read from a file goes
//! through here before it reaches a terminal.
//!
//! A model file is untrusted input. A key holding `ESC [ 2 J` would clear the screen if printed
//! raw; a C1 control (`U+009B`) or a bidirectional override (`U+202E`, "Trojan Source") can
//! hide or reorder what is shown, and an invisible character makes two names print alike
//! (`output.weight` and `output.weight` + the tag U+E0041). So control characters (C0, DEL,
//! C1), invisible characters by Unicode property (default-ignorable code points, format
//! characters, line and paragraph separators, U+2800: [`sipllm_gguf::is_invisible`], a table
//! generated from the Unicode Character Database) and bytes that are not UTF-8 are written as
//! escapes: `\n`, `\r`, `\t`, `\u{1b}`, `\u{202e}`, `\xff`. Everything else, including
//! non-ASCII text (CJK, emoji, `Ġ`), is shown as is.
//!
//! The backslash itself is always escaped (`\\`), so the encoding is unambiguous: a name
//! holding a line feed (`a\nb`) and one holding a backslash and an `n` (`a\\nb`) never print
//! alike, and every escaped text decodes to exactly one byte string. The `verify` manifest
//! relies on that to name tensors one line each.

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for characters that must never reach a terminal raw: controls and invisible
/// characters ([`sipllm_gguf::is_invisible`]).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control() || sipllm_gguf::is_invisible(c)
}

/// The UTF-8 lead bytes of every character [`push`] may escape: controls, `"`, `\`, and the
/// lead bytes of every invisible range (derived from the table, so a new range cannot be
/// missed by the fast path).
static MAY_ESCAPE: [bool; 256] = may_escape_table();

/// Whether `b` may begin a character this module escapes (no character without such a byte
/// in its UTF-8 encoding is ever escaped): the whole-text fast paths' prefilter.
pub fn may_escape(b: u8) -> bool {
    MAY_ESCAPE[usize::from(b)]
}

const fn may_escape_table() -> [bool; 256] {
    /// The first byte of `cp`'s UTF-8 encoding (monotonic in `cp`).
    const fn lead(cp: u32) -> usize {
        (if cp < 0x80 {
            cp
        } else if cp < 0x800 {
            0xc0 | cp >> 6
        } else if cp < 0x1_0000 {
            0xe0 | cp >> 12
        } else {
            0xf0 | cp >> 18
        }) as usize
    }
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[0x7f] = true;
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    // C1 controls, U+0080–U+009F.
    t[0xc2] = true;
    let ranges = sipllm_gguf::INVISIBLE_RANGES;
    let mut i = 0;
    while i < ranges.len() {
        let (lo, hi) = ranges[i];
        let mut l = lead(lo);
        while l <= lead(hi) {
            t[l] = true;
            l += 1;
        }
        i += 1;
    }
    t
}

/// How a string is escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Bare text: unsafe characters and the backslash are escaped.
    Bare,
    /// Inside double quotes: `"` is escaped too, so the quoted text ends at its closing quote.
    Quoted,
    /// A message sipllm's libraries composed (an error's `Display`): what came from the file
    /// in it is already escaped there, Rust-style (`"a\\nb"`), so only unsafe characters are
    /// escaped, as a safety net, and its backslashes are left as they are.
    Message,
}

/// Escapes `bytes` (UTF-8, or not) for a terminal, without surrounding quotes.
///
/// Borrows when nothing needs escaping, which is the common case.
pub fn text(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = simdutf8::basic::from_utf8(bytes)
        && !s.chars().any(|c| c == '\\' || is_unsafe_char(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    push(&mut out, bytes, Style::Bare, usize::MAX);
    Cow::Owned(out)
}

/// Escapes a `&str` for a terminal, without surrounding quotes.
pub fn str(s: &str) -> Cow<'_, str> {
    text(s.as_bytes())
}

/// A key or tensor name for a table: escaped like [`text`], and past
/// [`MAX_SHOWN_NAME`](sipllm_gguf::error::MAX_SHOWN_NAME) characters cut, with the marker
/// `… (N bytes)` giving the whole length, so an 8 MiB name is one bounded cell.
pub fn name(bytes: &[u8]) -> Cow<'_, str> {
    let max = sipllm_gguf::error::MAX_SHOWN_NAME;
    if bytes.len() <= max {
        return text(bytes);
    }
    let mut out = String::with_capacity(max + 24);
    if push(&mut out, bytes, Style::Bare, max) {
        let _ = write!(out, "… ({} bytes)", bytes.len());
    }
    Cow::Owned(out)
}

/// Makes a message sipllm composed safe for a terminal ([`Style::Message`]): unsafe
/// characters are escaped, backslashes (the message's own escapes) are not.
pub fn message(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push(&mut out, s.as_bytes(), Style::Message, usize::MAX);
    Cow::Owned(out)
}

/// `bytes` escaped and in double quotes: `"tok\"en\n"`.
pub fn quoted(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    push(&mut out, bytes, Style::Quoted, usize::MAX);
    out.push('"');
    out
}

/// Appends `bytes` escaped in `style` to `out`, stopping before the output would exceed
/// `max_chars` characters. Returns true when it stopped early (the text was cut).
pub fn push(out: &mut String, bytes: &[u8], style: Style, max_chars: usize) -> bool {
    let mut written = 0usize;
    // Appends `piece` unless it would pass `max_chars`; `n`: its characters.
    let mut emit = |out: &mut String, piece: &str, n: usize| -> bool {
        if written.saturating_add(n) > max_chars {
            return false;
        }
        written += n;
        out.push_str(piece);
        true
    };
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        // Most text needs no escape: copy it whole (linear, one pass to check, one to count).
        // Every escaped character has one of the `MAY_ESCAPE` bytes in its UTF-8 encoding.
        let plain = !valid.bytes().any(may_escape);
        let whole = plain && emit(out, valid, valid.bytes().filter(|&b| b & 0xc0 != 0x80).count());
        if !whole {
            for c in valid.chars() {
                let mut buf = [0u8; 4];
                let esc: Cow<'_, str> = match c {
                    '\n' => "\\n".into(),
                    '\r' => "\\r".into(),
                    '\t' => "\\t".into(),
                    '"' if style == Style::Quoted => "\\\"".into(),
                    '\\' if style != Style::Message => "\\\\".into(),
                    c if is_unsafe_char(c) => format!("\\u{{{:x}}}", c as u32).into(),
                    c => Cow::Borrowed(&*c.encode_utf8(&mut buf)),
                };
                if !emit(out, &esc, esc.chars().count()) {
                    return true;
                }
            }
        }
        for b in chunk.invalid() {
            let mut esc = String::with_capacity(4);
            let _ = write!(esc, "\\x{b:02x}");
            if !emit(out, &esc, 4) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole-chunk fast path of `push` misses no character the slow path escapes.
    #[test]
    fn the_fast_path_escapes_what_the_slow_path_does() {
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let s = format!("ab{c}cd");
            for style in [Style::Bare, Style::Quoted, Style::Message] {
                let mut fast = String::new();
                push(&mut fast, s.as_bytes(), style, usize::MAX);
                let escaped = fast != s;
                let needs = is_unsafe_char(c)
                    || matches!(c, '\n' | '\r' | '\t')
                    || (c == '"' && style == Style::Quoted)
                    || (c == '\\' && style != Style::Message);
                assert_eq!(escaped, needs, "U+{:04X} {style:?}: {fast}", c as u32);
            }
        }
        // Cut after a number of characters, multi-byte ones counted once.
        let mut out = String::new();
        assert!(push(&mut out, "ĠĠĠĠ".as_bytes(), Style::Bare, 3));
        assert_eq!(out, "ĠĠĠ");
        let mut out = String::new();
        assert!(!push(&mut out, b"ok\xffz", Style::Bare, 10));
        assert_eq!(out, "ok\\xffz");
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(text(b"tokenizer.ggml.tokens"), Cow::Borrowed(_)));
        assert!(matches!(text("Ġhello 你好 🦙".as_bytes()), Cow::Borrowed(_)));
    }

    #[test]
    fn control_and_layout_characters_are_escaped() {
        assert_eq!(text(b"a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(text("x\u{9b}31m".as_bytes()), "x\\u{9b}31m");
        assert_eq!(text("abc\u{202e}def".as_bytes()), "abc\\u{202e}def");
        assert_eq!(text(b"a\nb\tc\rd\x7f"), "a\\nb\\tc\\rd\\u{7f}");
        assert_eq!(text("\u{feff}x\u{200b}".as_bytes()), "\\u{feff}x\\u{200b}");
    }

    /// Issue 26, item 9: invisible characters by property, not by a list.
    #[test]
    fn invisible_characters_are_escaped() {
        assert_eq!(text("output.weight\u{e0041}".as_bytes()), "output.weight\\u{e0041}");
        for (c, shown) in [
            ('\u{ad}', "\\u{ad}"),
            ('\u{34f}', "\\u{34f}"),
            ('\u{180e}', "\\u{180e}"),
            ('\u{3164}', "\\u{3164}"),
            ('\u{2800}', "\\u{2800}"),
            ('\u{115f}', "\\u{115f}"),
            ('\u{e0000}', "\\u{e0000}"),
            ('\u{e007f}', "\\u{e007f}"),
            ('\u{fe00}', "\\u{fe00}"),
            ('\u{fe0f}', "\\u{fe0f}"),
            ('\u{e0100}', "\\u{e0100}"),
            ('\u{e01ef}', "\\u{e01ef}"),
        ] {
            assert_eq!(text(format!("a{c}b").as_bytes()), format!("a{shown}b"));
        }
        // Visible text stays as it is.
        assert!(matches!(text("Ġ中🦙⠁".as_bytes()), Cow::Borrowed(_)));
    }

    #[test]
    fn invalid_utf8_becomes_hex_escapes() {
        assert_eq!(text(b"ok\xff\xfe!"), "ok\\xff\\xfe!");
        // A valid character after an invalid byte is kept.
        assert_eq!(text(b"\xc3(\xc3\xa9"), "\\xc3(é");
    }

    #[test]
    fn quoted_escapes_quotes_and_backslashes() {
        assert_eq!(quoted(br#"say "hi" \o/"#), r#""say \"hi\" \\o/""#);
        assert_eq!(text(br#"a"b\c"#), r#"a"b\\c"#);
    }

    /// A line feed and a backslash followed by `n` escape differently, in both styles.
    #[test]
    fn the_backslash_is_escaped_so_escapes_are_unambiguous() {
        assert_eq!(text(b"a\nb"), "a\\nb");
        assert_eq!(text(b"a\\nb"), "a\\\\nb");
        assert_ne!(text(b"a\nb"), text(b"a\\nb"));
        assert_ne!(quoted(b"a\nb"), quoted(b"a\\nb"));
        assert_eq!(text(b"\\xff"), "\\\\xff");
        assert_ne!(text(b"\\xff"), text(b"\xff"));
    }

    #[test]
    fn long_names_are_cut_with_their_length() {
        let long = vec![b'a'; 1 << 20];
        let shown = name(&long);
        assert_eq!(
            shown,
            format!("{}… (1048576 bytes)", "a".repeat(sipllm_gguf::error::MAX_SHOWN_NAME))
        );
        assert_eq!(name(b"blk.0.attn_q.weight"), "blk.0.attn_q.weight");
        let edge = vec![b'\n'; sipllm_gguf::error::MAX_SHOWN_NAME];
        // A name within the limit is shown whole, however it escapes (at most 10 × longer).
        assert_eq!(name(&edge), "\\n".repeat(sipllm_gguf::error::MAX_SHOWN_NAME));
    }

    #[test]
    fn messages_keep_their_own_escapes() {
        assert_eq!(message(r#"metadata[0] "a\u{1b}b""#), r#"metadata[0] "a\u{1b}b""#);
        assert_eq!(message("raw\x1b here"), "raw\\u{1b} here");
    }

    #[test]
    fn push_stops_at_the_character_budget() {
        let mut s = String::new();
        assert!(push(&mut s, "héllo wörld".as_bytes(), Style::Bare, 5));
        assert_eq!(s, "héllo");
        let mut s = String::new();
        // An escape is never cut in half.
        assert!(push(&mut s, b"ab\x1bcd", Style::Bare, 4));
        assert_eq!(s, "ab");
        let mut s = String::new();
        assert!(!push(&mut s, b"abc", Style::Bare, 3));
        assert_eq!(s, "abc");
    }
}
