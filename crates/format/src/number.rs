//! How findings and every other message write counts: `1234567` as `1,234,567`.

/// `1234567` as `1,234,567`: how messages write byte counts and other counts, so that one
/// number reads the same in an error, a hex view's label and a report.
///
/// ```
/// assert_eq!(sipllm_format::group(1234567), "1,234,567");
/// assert_eq!(sipllm_format::group(999), "999");
/// assert_eq!(sipllm_format::group(u64::MAX), "18,446,744,073,709,551,615");
/// ```
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
