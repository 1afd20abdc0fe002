//! Metadata values as one line of text: exact scalars, escaped strings, and arrays abbreviated
//! to their first elements (`[128256 × STRING] "!", "\"", "#", …`) unless `--full` is given.

use std::fmt::Write as _;

use crate::render::escape::{self, Style};
use crate::view::{Arr, Val};

/// How much of a value to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Characters of one string value before it is cut (`usize::MAX`: never).
    pub string_chars: usize,
    /// Characters of array elements shown before `…` (`usize::MAX`: all of them).
    pub array_chars: usize,
    /// Characters of the whole line (an array's `[N × TYPE]` and a string's quotes and byte
    /// count included) when it must fit a column (`usize::MAX`: no limit).
    pub line_chars: usize,
}

impl Budget {
    /// The default: a value fits on one line of a wide terminal.
    pub const SHORT: Budget = Budget { string_chars: 64, array_chars: 72, line_chars: usize::MAX };
    /// `--full`: everything.
    pub const FULL: Budget =
        Budget { string_chars: usize::MAX, array_chars: usize::MAX, line_chars: usize::MAX };

    /// [`Budget::SHORT`] within a column of `width` characters (at least 16).
    pub fn within(self, width: usize) -> Budget {
        Budget { line_chars: width.max(16), ..self }
    }
}

/// The value as one line of text.
pub fn one_line(v: &Val<'_>, budget: Budget) -> String {
    let mut out = String::new();
    match v {
        Val::Array(a) => {
            let _ = write!(out, "[{} × {}]", a.len, a.elem_type);
            if a.len > 0 {
                out.push(' ');
                // What is left of the line after the prefix and a closing `, …`.
                let left = budget.line_chars.saturating_sub(out.chars().count() + 3);
                let budget = Budget { array_chars: budget.array_chars.min(left), ..budget };
                elements(&mut out, a, budget);
            }
        }
        Val::Str(s) => {
            // Room for the quotes, `…` and ` (N bytes)` when cut.
            let note = 4 + 7 + group(s.len() as u64).len();
            let max = budget.string_chars.min(budget.line_chars.saturating_sub(note).max(8));
            string(&mut out, s, max);
        }
        scalar => scalar_text(&mut out, scalar),
    }
    out
}

fn scalar_text(out: &mut String, v: &Val<'_>) {
    let _ = match v {
        Val::Int(_, x) => write!(out, "{x}"),
        // Debug gives the shortest text that reads back exactly, with an exponent for very
        // large or small magnitudes (1e-5, not 0.00001); `NaN` and `inf` as Rust spells them.
        Val::F32(x) => write!(out, "{x:?}"),
        Val::F64(x) => write!(out, "{x:?}"),
        Val::Bool(b) => write!(out, "{b}"),
        Val::Str(s) => {
            out.push_str(&escape::quoted(s));
            Ok(())
        }
        Val::Array(a) => write!(out, "[{} × {}]", a.len, a.elem_type),
    };
}

/// A quoted string, cut after `max_chars` characters with its byte length noted.
fn string(out: &mut String, s: &[u8], max_chars: usize) {
    out.push('"');
    let cut = escape::push(out, s, Style::Quoted, max_chars);
    if cut {
        let _ = write!(out, "…\" ({} bytes)", group(s.len() as u64));
    } else {
        out.push('"');
    }
}

/// Comma-separated elements until the budget is spent, then `…`.
///
/// Linear in the number of elements: the characters used are counted once per piece (never
/// by re-counting `out`), and not at all without a limit (`--full`).
fn elements(out: &mut String, a: &Arr<'_>, budget: Budget) {
    let limit = budget.array_chars;
    let unlimited = limit == usize::MAX;
    // Strings inside an abbreviated array are cut shorter than scalar strings.
    let elem_budget = if unlimited {
        Budget::FULL
    } else {
        Budget { string_chars: 24, array_chars: 24, line_chars: usize::MAX }
    };
    let mut used = 0usize;
    let mut shown = 0u64;
    let mut piece = String::new();
    for item in a.iter() {
        // Without a limit every element is shown: write it straight into `out`.
        let target = if unlimited { &mut *out } else { &mut piece };
        if shown > 0 {
            target.push_str(", ");
        }
        match &item {
            Val::Array(inner) => {
                target.push('[');
                elements(target, inner, elem_budget);
                target.push(']');
            }
            Val::Str(s) => string(target, s, elem_budget.string_chars),
            scalar => scalar_text(target, scalar),
        }
        shown += 1;
        if unlimited {
            continue;
        }
        let chars = piece.chars().count();
        // Always show the first element, even when it alone is over the budget.
        if shown > 1 && used.saturating_add(chars) > limit {
            out.push_str(", …");
            return;
        }
        used += chars;
        out.push_str(&piece);
        piece.clear();
    }
    if shown < a.len {
        // The payload ended early (cannot happen for a parsed file, but never claim more).
        out.push_str(", …");
    }
}

/// A ggml type's name as gguf-py prints it (`F32`, `Q4_K`, `unknown(N)`).
pub use sipllm_view::type_name;

/// `1234567` as `1,234,567` (the hex view's grouping, so both write counts alike).
pub use sipllm_hexview::group;

/// A byte count for people: `512 B`, `2.0 KiB`, `4.58 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let digits = if value < 10.0 { 2 } else { 1 };
    format!("{value:.digits$} {}", UNITS[unit])
}

/// A count for people: `8.03 B` (billions), `134.5 M`, `7,040`.
pub fn human_count(n: u64) -> String {
    let (value, unit) = match n {
        0..=99_999 => return group(n),
        100_000..=999_999_999 => (n as f64 / 1e6, "M"),
        1_000_000_000..=999_999_999_999 => (n as f64 / 1e9, "B"),
        _ => (n as f64 / 1e12, "T"),
    };
    let digits = if value < 10.0 { 2 } else { 1 };
    format!("{value:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_for_people() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(2048), "2.00 KiB");
        assert_eq!(human_bytes(4_920_000_000), "4.58 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
        assert_eq!(human_count(7040), "7,040");
        assert_eq!(human_count(8_030_261_248), "8.03 B");
        assert_eq!(human_count(134_500_000), "134.5 M");
    }

    #[test]
    fn scalars_are_exact() {
        assert_eq!(
            one_line(&Val::Int("UINT64", u64::MAX.into()), Budget::SHORT),
            u64::MAX.to_string()
        );
        assert_eq!(one_line(&Val::F32(1e-5), Budget::SHORT), "1e-5");
        assert_eq!(one_line(&Val::F32(10000.0), Budget::SHORT), "10000.0");
        assert_eq!(one_line(&Val::F64(f64::NAN), Budget::SHORT), "NaN");
        assert_eq!(one_line(&Val::Bool(true), Budget::SHORT), "true");
    }

    #[test]
    fn strings_are_escaped_and_cut() {
        assert_eq!(one_line(&Val::Str(b"a\x1b[2Jb\"c"), Budget::SHORT), r#""a\u{1b}[2Jb\"c""#);
        let long = "x".repeat(100);
        let s = one_line(&Val::Str(long.as_bytes()), Budget::SHORT);
        assert_eq!(s, format!("\"{}…\" (100 bytes)", "x".repeat(64)));
        assert_eq!(one_line(&Val::Str(long.as_bytes()), Budget::FULL), format!("\"{long}\""));
    }
}
