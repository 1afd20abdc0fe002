//! The `string_array` property: a long string array, whatever its strings, parses to exactly
//! those strings, or fails at the first one that is not UTF-8, in any chunking.
//!
//! Why a target of its own: the decoder walks long string arrays with a speculative fast path
//! (`crates/gguf/src/walk.rs`) that only takes part from a few hundred elements and 4 KiB on,
//! sizes the fuzzers' files never reach by mutation. This target grows such an array from a
//! small input, so the fuzzer steers the strings (lengths around 127 and 128, bytes that are
//! UTF-8 only in company, fake length fields inside strings) and the reference is plain: the
//! strings themselves, and `std::str::from_utf8` on each. With a flag the array is grown to
//! [`LONG_ELEMENTS`], past several of the fast path's 64 KiB windows.

use sipllm_gguf::{
    Directory, Endian, Error, ErrorKind, ParseOptions, Profile, ValueType, error::PathSeg,
    error::StrField,
};
use sipllm_testkit::{GgufBuilder, Value};

use crate::Schedule;
use crate::chunked::decode_gguf_chunked;

const KEY: &str = "tokenizer.ggml.tokens";
/// Elements the array is grown to at least: enough for the fast path to take several rounds.
const MIN_ELEMENTS: usize = 1_500;
/// Elements the array is grown to with flag bit 4: an array spanning many of the fast path's
/// 64 KiB windows.
const LONG_ELEMENTS: usize = 65_536;
/// Valid vocabulary-like strings put before the fuzzer's, per unit of the input's first byte,
/// so the fuzzer's strings (and their errors) land deep in the array too.
const FILLER_UNIT: usize = 700;

/// The input: byte 0 holds flags (bit 0: big-endian; bits 1–3: filler units; bit 4: long), then strings, each one length byte (0–255, so both sides of
/// the fast path's 127-byte limit) and up to that many bytes. The strings are cycled to
/// [`MIN_ELEMENTS`], or with bit 4 to [`LONG_ELEMENTS`].
pub(crate) fn string_array(data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else { return };
    let mut pieces: Vec<&[u8]> = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let (s, after) = tail.split_at(usize::from(len).min(tail.len()));
        pieces.push(s);
        rest = after;
    }
    if pieces.is_empty() {
        return;
    }
    let endian = if flags & 1 == 1 { Endian::Big } else { Endian::Little };
    let filler = usize::from((flags >> 1) & 7) * FILLER_UNIT;
    let filler: Vec<Vec<u8>> =
        (0..filler).map(|i| format!("Ġtok{i}{}", "é".repeat(i % 5)).into_bytes()).collect();
    let min = if flags & 0x10 != 0 { LONG_ELEMENTS } else { MIN_ELEMENTS };
    let grown = min.max(pieces.len());
    let strings: Vec<&[u8]> = filler
        .iter()
        .map(Vec::as_slice)
        .chain(pieces.iter().copied().cycle().take(grown))
        .collect();

    let array = Value::array(
        ValueType::String,
        strings.iter().map(|s| Value::String(s.to_vec())).collect(),
    );
    let file =
        GgufBuilder::new().endian(endian).kv(KEY, array).kv("after", Value::Uint32(7)).build();
    let first_invalid = strings.iter().position(|s| std::str::from_utf8(s).is_err());
    let element_at = |index: usize| -> u64 {
        24 + 8
            + KEY.len() as u64
            + 4
            + 4
            + 8
            + strings[..index].iter().map(|s| 8 + s.len() as u64).sum::<u64>()
    };

    let size = Some(file.len() as u64);
    let mut profiles = vec![Profile::Strict, Profile::Lenient];
    if endian == Endian::Little {
        profiles.push(Profile::LlamaCpp); // llama.cpp refuses big-endian files
    }
    for profile in profiles {
        let opts = ParseOptions::new(profile).with_file_size(size);
        let target = format!("string_array[{profile:?}, {endian:?}]");
        let dir = decode_every_way(&target, &file, &opts);
        match (profile, first_invalid, dir) {
            (Profile::Strict, Some(index), Err(e)) => {
                let valid_up_to =
                    std::str::from_utf8(strings[index]).err().map_or(0, |e| e.valid_up_to());
                let kind = ErrorKind::InvalidUtf8 {
                    field: StrField::Value,
                    valid_up_to: valid_up_to as u64,
                };
                assert_eq!(e.kind(), &kind, "{target}: element {index}");
                assert_eq!(e.offset(), element_at(index) + 8, "{target}: element {index}");
                let path = [
                    PathSeg::Metadata { index: 0, key: Some(KEY.into()) },
                    PathSeg::Element(index as u64),
                ];
                assert_eq!(e.path().segments(), path, "{target}");
            }
            (Profile::Strict, Some(index), Ok(_)) => {
                panic!("{target}: accepted, but element {index} is not UTF-8")
            }
            (_, _, Err(e)) => panic!("{target}: rejected ({e}); first invalid {first_invalid:?}"),
            (_, _, Ok(dir)) => {
                let warned = profile == Profile::Lenient && first_invalid.is_some();
                assert_eq!(dir.warnings().len(), usize::from(warned), "{target}: warnings");
                let gguf = sipllm_gguf::Gguf::from_parts(&file[..], dir)
                    .unwrap_or_else(|e| panic!("{target}: from_parts: {e}"));
                let parsed = gguf.get_array(KEY).and_then(|a| a.strings());
                let parsed = parsed.unwrap_or_else(|| panic!("{target}: no string array"));
                assert_eq!(parsed.len(), strings.len(), "{target}: element count");
                for (i, (got, want)) in parsed.zip(&strings).enumerate() {
                    assert_eq!(got.as_bytes(), *want, "{target}: element {i}");
                }
                assert_eq!(gguf.get_u64("after"), Some(7), "{target}: the key after the array");
            }
        }
    }
}

/// Whole, and in chunks around the fast path's window sizes: every result equal.
fn decode_every_way(target: &str, file: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    let whole = sipllm_gguf::decode(file, opts);
    for sizes in [vec![4093], vec![0], vec![70_000, 9, 5_000]] {
        let chunked = decode_gguf_chunked(target, file, opts, &Schedule { sizes: sizes.clone() });
        assert_eq!(
            format!("{chunked:?}"),
            format!("{whole:?}"),
            "{target}: chunked {sizes:?} and whole disagree"
        );
    }
    whole
}
