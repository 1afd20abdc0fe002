//! Invisible characters: what shows nothing, or changes how the text around it is shown, by
//! Unicode property (the table is generated from the Unicode Character Database by
//! `scripts/invisible_table.py`). `output.weight` and `output.weight` + U+E0041 (a tag) print
//! alike; a bidi override reorders what follows. The CLI escapes these before a terminal sees
//! them, and the rules warn on tensor names that hold them.

#[path = "invisible_table.rs"]
mod table;

/// The invisible characters ([`is_invisible`]) as inclusive code point ranges, sorted and
/// disjoint: for callers that derive their own fast paths from them (the CLI's escaper).
pub const INVISIBLE_RANGES: &[(u32, u32)] = table::INVISIBLE;

/// True for a default-ignorable code point, a format character (Cf), a line or paragraph
/// separator, or U+2800 (drawn blank). Controls are not included: `char::is_control`.
pub fn is_invisible(c: char) -> bool {
    let c = u32::from(c);
    // Below the table's first code point (U+00AD): all of ASCII, at one comparison.
    if table::INVISIBLE.first().is_none_or(|&(lo, _)| c < lo) {
        return false;
    }
    table::INVISIBLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The first invisible character ([`is_invisible`]) in `bytes` (UTF-8, or not: invalid
/// sequences are skipped), with its byte offset.
pub fn first_invisible(bytes: &[u8]) -> Option<(usize, char)> {
    // No invisible character is ASCII (the table starts above it: a test checks), and an
    // ASCII byte is a whole character, so the scan starts at the first byte that is not one:
    // a name like `blk.0.attn_q.weight` costs one word-at-a-time pass, no decoding.
    if bytes.is_ascii() {
        // Word at a time: the usual name ends here.
        return None;
    }
    let mut at = bytes.iter().position(|b| !b.is_ascii())?;
    for chunk in bytes.get(at..).unwrap_or_default().utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            if is_invisible(c) {
                return Some((at + i, c));
            }
        }
        at += chunk.valid().len() + chunk.invalid().len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_s_characters_are_invisible_and_text_is_not() {
        for c in [
            '\u{ad}',
            '\u{34f}',
            '\u{115f}',
            '\u{180e}',
            '\u{200b}',
            '\u{202e}',
            '\u{2028}',
            '\u{2800}',
            '\u{3164}',
            '\u{fe00}',
            '\u{fe0f}',
            '\u{feff}',
            '\u{e0000}',
            '\u{e0041}',
            '\u{e007f}',
            '\u{e0100}',
            '\u{e01ef}',
        ] {
            assert!(is_invisible(c), "U+{:04X}", u32::from(c));
        }
        for c in ['a', ' ', '.', 'é', 'Ġ', '中', '🦙', '\u{2801}', '\u{3000}', '\n', '\u{10ffff}']
        {
            assert!(!is_invisible(c), "U+{:04X}", u32::from(c));
        }
        // No ASCII code point is invisible, as `first_invisible`'s fast path assumes.
        assert!(table::INVISIBLE.first().is_some_and(|&(lo, _)| lo > 0x7f));
        assert!((0u8..=0x7f).all(|b| !is_invisible(char::from(b))));
        // The table is sorted and disjoint, as the binary search needs.
        assert!(table::INVISIBLE.windows(2).all(|w| w[0].0 <= w[0].1 && w[0].1 < w[1].0));
    }

    #[test]
    fn first_invisible_gives_the_byte_offset() {
        assert_eq!(first_invisible(b"output.weight"), None);
        assert_eq!(first_invisible("a\u{e0041}b".as_bytes()), Some((1, '\u{e0041}')));
        assert_eq!(first_invisible(b"\xff\xfe x\xe2\x80\x8b"), Some((4, '\u{200b}')));
        // After an ASCII prefix (skipped undecoded) the offsets are still the whole name's.
        assert_eq!(first_invisible("blk.0.\u{e9}\u{200b}".as_bytes()), Some((8, '\u{200b}')));
        assert_eq!(first_invisible(b"ab\xff\xe2\x80\x8b"), Some((3, '\u{200b}')));
        assert_eq!(first_invisible("blk.0.\u{e9}".as_bytes()), None);
        assert_eq!(first_invisible(b""), None);
    }
}
