//! The rules where the profiles meet ggml's own reader (`gguf.cpp`, `gguf_init_from_file`):
//! the llama-cpp profile judges these bytes exactly as ggml does, and the strict profile
//! refuses what ggml would read differently from other readers.
//!
//! Each function is one rule, called from one place in the decoder. The differential against
//! ggml-org/ggml d99724f2 (2026-08-21) that found them, and the deliberate differences that
//! remain, are in `docs/parser.md` ("The llama-cpp profile against ggml").

use crate::ast::Span;
use crate::error::{Error, ErrorKind, Path, Warning, WarningKind};
use crate::options::Profile;

/// The key ggml reads the alignment from (`GGUF_KEY_GENERAL_ALIGNMENT`).
const ALIGNMENT_KEY: &[u8] = b"general.alignment";

/// A name as C sees it: the bytes before its first NUL.
pub(crate) fn c_str(name: &[u8]) -> &[u8] {
    name.split(|&b| b == 0).next().unwrap_or_default()
}

/// A NUL byte inside a key (`kind` [`ErrorKind::NulInKey`]) or tensor name
/// ([`ErrorKind::NulInName`]): ggml cuts C strings there, so the name means something else to
/// llama.cpp than to every other reader. The strict profile refuses it; the others read it
/// (the llama-cpp profile as ggml does, see [`is_alignment_key`] and the decoder's C-string
/// tensor names) and warn.
pub(crate) fn check_nul(
    profile: Profile,
    name: &[u8],
    kind: ErrorKind,
    span: Span,
    path: impl FnOnce() -> Path,
) -> Result<Option<Warning>, Error> {
    if !name.contains(&0) {
        return Ok(None);
    }
    match profile {
        Profile::Strict => Err(Error::new(kind, span.offset, span.len, path())),
        Profile::LlamaCpp | Profile::Lenient => {
            Ok(Some(Warning::new(WarningKind::Tolerated(kind), span.offset, span.len, path())))
        }
    }
}

/// Whether `key` is the one ggml takes the alignment from. ggml finds it with
/// `gguf_find_key`, the first key equal *as a C string* (`strcmp`), so under the llama-cpp
/// profile `general.alignment\0x` is the alignment key unless an earlier key already was;
/// later candidates are not even type-checked there. `found`: an earlier key set the
/// alignment. Under llama-cpp an earlier candidate either did or failed the parse, so this
/// needs no scan of the earlier keys (which a file of many candidates would make quadratic).
/// The other profiles match the whole key (and the strict one refuses NUL bytes in keys).
pub(crate) fn is_alignment_key(profile: Profile, key: &[u8], found: bool) -> bool {
    if profile != Profile::LlamaCpp {
        return key == ALIGNMENT_KEY;
    }
    !found && c_str(key) == ALIGNMENT_KEY
}

/// ggml's element-count check, under the llama-cpp profile (`dims` already below 2^63).
///
/// ggml checks `INT64_MAX/ne[1] <= ne[0] || INT64_MAX/ne[2] <= ne[0]*ne[1] || …` only when
/// the element count, multiplied in wrapping `int64_t`, is positive. So it refuses counts a
/// little below `INT64_MAX` too (this function refuses exactly those), it accepts any shape
/// with a zero dimension (0 elements, whatever the others multiply to), and it lets through a
/// count whose wrapped product is 0 or negative. That last case is a deliberate difference:
/// a count above `INT64_MAX` is refused here too, and one above `u64::MAX` by the decoder's
/// own overflow check after this one.
pub(crate) fn element_count_check(profile: Profile, dims: &[u64]) -> Result<(), ErrorKind> {
    if profile != Profile::LlamaCpp {
        return Ok(());
    }
    let mut ne = [1i64; 4];
    for (n, &d) in ne.iter_mut().zip(dims) {
        *n = i64::try_from(d).map_err(|_| ErrorKind::DimTooLarge { value: d })?;
    }
    let wrapped = ne.iter().fold(1i64, |acc, &n| acc.wrapping_mul(n));
    if wrapped <= 0 {
        // ggml skips its check here. Deliberately not: a count that does not fit ggml's
        // `int64_t` is refused (a zero dimension makes the count 0, which fits).
        let fits = crate::ggml::tensor_element_count(dims).is_ok_and(|n| n <= i64::MAX as u64);
        return if fits { Ok(()) } else { Err(ErrorKind::ElementCountOverflow) };
    }
    let [ne0, ne1, ne2, ne3] = ne;
    let refused = i64::MAX / ne1 <= ne0
        || i64::MAX / ne2 <= ne0.wrapping_mul(ne1)
        || i64::MAX / ne3 <= ne0.wrapping_mul(ne1).wrapping_mul(ne2);
    if refused { Err(ErrorKind::ElementCountOverflow) } else { Ok(()) }
}

/// Where the data section starts. With tensors, at the directory's end rounded up to the
/// alignment, in every profile. Without tensors, current ggml (since 2026-05) does not pad:
/// the llama-cpp profile says `directory_end`, as `gguf_get_data_offset` does. The strict and
/// lenient profiles keep the padded offset (`aligned`), as gguf-py and older ggml report it.
pub(crate) fn data_offset(
    profile: Profile,
    has_tensors: bool,
    directory_end: u64,
    aligned: u64,
) -> u64 {
    if profile == Profile::LlamaCpp && !has_tensors { directory_end } else { aligned }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLAMA: Profile = Profile::LlamaCpp;

    #[test]
    fn c_strings_end_at_the_first_nul() {
        assert_eq!(c_str(b"ab\0cd\0"), b"ab");
        assert_eq!(c_str(b"\0x"), b"");
        assert_eq!(c_str(b"abc"), b"abc");
    }

    #[test]
    fn the_first_c_string_alignment_key_wins_under_llama_cpp_only() {
        assert!(is_alignment_key(LLAMA, b"general.alignment\0x", false));
        assert!(!is_alignment_key(Profile::Strict, b"general.alignment\0x", false));
        assert!(!is_alignment_key(Profile::Lenient, b"general.alignment\0x", false));
        assert!(is_alignment_key(Profile::Strict, b"general.alignment", false));
        // Found already: a later exact key is not the alignment key to ggml.
        assert!(!is_alignment_key(LLAMA, b"general.alignment", true));
        assert!(is_alignment_key(Profile::Lenient, b"general.alignment", true));
        assert!(!is_alignment_key(LLAMA, b"general.alignmentx", false));
    }

    #[test]
    fn ggml_element_check_boundaries() {
        let max = i64::MAX as u64;
        // ggml's integer divisions refuse products well below INT64_MAX: `MAX / ne[1] <= ne[0]`
        // holds for [2, MAX/3 + 1] (2 × that is 2/3 of MAX) but not for [2, MAX/3].
        let overflow = Err(ErrorKind::ElementCountOverflow);
        assert_eq!(element_count_check(LLAMA, &[2, max / 3 + 1]), overflow);
        assert_eq!(element_count_check(LLAMA, &[2, max / 3]), Ok(()));
        assert_eq!(element_count_check(LLAMA, &[3, max / 3]), overflow);
        // A zero dimension: 0 elements, whatever the rest multiply to.
        assert_eq!(element_count_check(LLAMA, &[1 << 40, 1 << 40, 0]), Ok(()));
        // A product that wraps to 0 or below passes ggml's check; not this one (deliberately).
        assert_eq!(element_count_check(LLAMA, &[1 << 32, 1 << 32]), overflow);
        assert_eq!(element_count_check(LLAMA, &[1 << 32, 1 << 31]), overflow);
        assert_eq!(element_count_check(LLAMA, &[3, (1 << 62) + 1]), overflow);
        // A product that wraps to a positive value is caught by the divisions.
        assert_eq!(
            element_count_check(LLAMA, &[(1 << 32) + 1, 1 << 32]),
            Err(ErrorKind::ElementCountOverflow)
        );
        // Other profiles leave it to the checked product.
        assert_eq!(element_count_check(Profile::Strict, &[3, max / 3]), Ok(()));
    }

    #[test]
    fn unpadded_data_offset_without_tensors_under_llama_cpp_only() {
        assert_eq!(data_offset(LLAMA, false, 45, 64), 45);
        assert_eq!(data_offset(LLAMA, true, 45, 64), 64);
        assert_eq!(data_offset(Profile::Strict, false, 45, 64), 64);
        assert_eq!(data_offset(Profile::Lenient, false, 45, 64), 64);
    }
}
