//! Checks on what the parsers say: messages that reach a terminal, and spans into the input.

/// Characters a message must never carry raw: C0/C1 controls (escape sequences that repaint a
/// terminal) and the Unicode bidirectional overrides and isolates ("Trojan Source" reordering).
/// File-controlled text (keys, names) must reach a message escaped (peers.md §4, class 11).
pub(crate) fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// Panics if `text` (what `what` rendered) holds a dangerous character.
///
/// `allow_newline` admits `\n` (help texts may be several lines).
pub(crate) fn assert_safe_text(target: &str, what: &str, text: &str, allow_newline: bool) {
    if let Some((i, c)) =
        text.char_indices().find(|&(_, c)| is_dangerous(c) && !(allow_newline && c == '\n'))
    {
        panic!(
            "{target}: {what} holds the raw character {c:?} at char offset {i} \
             (file-controlled text must be escaped): {text:?}"
        );
    }
}

/// Panics unless `code` looks like a stable code in `area` (`gguf::header::bad_magic`).
pub(crate) fn assert_code(target: &str, what: &str, code: &str, prefix: &str) {
    let well_formed = code.starts_with(prefix)
        && code.split("::").count() >= 3
        && code.split("::").all(|seg| {
            !seg.is_empty()
                && seg.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
        });
    assert!(
        well_formed,
        "{target}: {what} has a malformed code {code:?} (expected {prefix}area::name)"
    );
}

/// Panics unless a finding at `offset` of `len` bytes starts inside an input of `input_len`
/// bytes (at its end at the latest: truncation errors point there) and its end does not wrap.
///
/// The range itself may reach past the end: an error about a declared size (the padding a
/// huge alignment demands, say) spans the bytes the file would need, and renderers clamp.
pub(crate) fn assert_in_input(
    target: &str,
    what: &dyn std::fmt::Display,
    offset: u64,
    len: u64,
    input_len: u64,
) {
    assert!(
        offset <= input_len && offset.checked_add(len).is_some(),
        "{target}: {what} spans {offset}+{len}, outside the {input_len}-byte input"
    );
}

/// Panics unless `inner` is a subslice of `outer` (same allocation, in bounds).
pub(crate) fn assert_subslice(target: &str, what: &str, outer: &[u8], inner: &[u8]) {
    let o = outer.as_ptr() as usize;
    let i = inner.as_ptr() as usize;
    let inside = inner.is_empty() || (i >= o && i + inner.len() <= o + outer.len());
    assert!(inside, "{target}: {what} ({} bytes) does not borrow from the input", inner.len());
}
