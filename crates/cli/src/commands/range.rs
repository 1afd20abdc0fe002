//! `--range START..END`, shared by `read` (byte offsets) and `read --as` (element indexes).

use std::ops::Range;

use crate::render::escape;

/// Parses `START..END` (either side optional; decimal or `0x` hex; END exclusive) against a
/// tensor of `nbytes` bytes.
pub fn parse_range(text: &str, nbytes: u64) -> Result<Range<u64>, String> {
    let bad = || {
        format!(
            "invalid --range {}: expected START..END (byte offsets within the tensor, END \
             exclusive, e.g. 0..1024, 4096.., ..0x100)",
            escape::quoted(text.as_bytes())
        )
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let num = |s: &str, default: u64| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(default);
        }
        let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        };
        parsed.map_err(|_| bad())
    };
    let start = num(a, 0)?;
    let end = num(b, nbytes)?;
    if start > end || end > nbytes {
        return Err(format!(
            "--range {start}..{end} is not inside the tensor's {nbytes} bytes (0..{nbytes})"
        ));
    }
    Ok(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0..10", 100), Ok(0..10));
        assert_eq!(parse_range("..", 100), Ok(0..100));
        assert_eq!(parse_range("90..", 100), Ok(90..100));
        assert_eq!(parse_range("..0x10", 100), Ok(0..16));
        assert_eq!(parse_range("5..5", 100), Ok(5..5));
        assert!(parse_range("5..4", 100).is_err());
        assert!(parse_range("0..101", 100).is_err());
        assert!(parse_range("10", 100).is_err());
        assert!(parse_range("a..b", 100).is_err());
        assert!(parse_range("-1..3", 100).is_err());
    }
}
