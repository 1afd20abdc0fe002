//! Long string arrays: the decoder walks most of their elements with a speculative fast path
//! (src/walk.rs) and the rest one at a time. Whatever mix of the two an array gets, the result
//! must be what a plain element-by-element walk gives: the same strings, and the same error,
//! at the same element and offset, whole or in any chunking.

use crate::arbitrary::decode_chunked;
use proptest::prelude::*;
use sipllm_gguf::{
    Directory, Endian, Error, ErrorKind, ParseOptions, Profile, ValueType, error::PathSeg,
    error::StrField, parse_with,
};
use sipllm_testkit::{GgufBuilder, Value};

const KEY: &str = "tokenizer.ggml.tokens";

/// Elements in the arrays below: long enough for many rounds of the fast path, and for
/// segments of every length between long strings.
const N: usize = 80_000;

/// Offset of the array's first element: header (24), then the key, type, element type, count.
fn first_element_at() -> u64 {
    24 + 8 + KEY.len() as u64 + 4 + 4 + 8
}

/// Offset of element `index`'s length field.
fn element_at(strings: &[Vec<u8>], index: usize) -> u64 {
    first_element_at() + strings[..index].iter().map(|s| 8 + s.len() as u64).sum::<u64>()
}

/// A vocabulary-like array: short strings of mixed widths, one in `long_every` (if any) of
/// 128 to 1151 bytes, which the fast path leaves to the decoder's own loop.
fn vocabulary(n: usize, long_every: Option<usize>) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| match long_every {
            Some(k) if i % k == k - 1 => "ż".repeat(64 + i % 512).into_bytes(),
            _ => format!("Ġtok{i}{}", "é".repeat(i % 7)).into_bytes(),
        })
        .collect()
}

fn file(strings: &[Vec<u8>], endian: Endian) -> Vec<u8> {
    let value =
        Value::array(ValueType::String, strings.iter().cloned().map(Value::String).collect());
    GgufBuilder::new().endian(endian).kv(KEY, value).kv("after", Value::Uint32(7)).build()
}

/// Whole, and in 7-byte, 4 KiB, exactly-what-was-asked and mixed chunks: every result equal (1-byte chunks are too slow at these sizes;
/// the `chunking` module has them on smaller files).
fn decode_every_way(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    let whole = sipllm_gguf::decode(bytes, opts);
    for sizes in [&[7][..], &[4096], &[0], &[1, 3000, 17, 65536]] {
        let chunked = decode_chunked(bytes, opts, sizes);
        assert_eq!(format!("{chunked:?}"), format!("{whole:?}"), "chunk sizes {sizes:?}");
    }
    whole
}

fn strict() -> ParseOptions {
    ParseOptions::default()
}

fn element_path(index: u64) -> Vec<PathSeg> {
    vec![PathSeg::Metadata { index: 0, key: Some(KEY.into()) }, PathSeg::Element(index)]
}

/// `err` says element `index` of `strings` is not UTF-8 after `valid_up_to` bytes.
fn assert_invalid_element(err: &Error, strings: &[Vec<u8>], index: usize, valid_up_to: u64) {
    let kind = ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to };
    assert_eq!(err.kind(), &kind, "element {index}");
    assert_eq!(err.offset(), element_at(strings, index) + 8, "element {index}");
    assert_eq!(err.path().segments(), element_path(index as u64));
}

#[test]
fn long_arrays_with_and_without_long_strings_parse_to_what_was_built() {
    for endian in [Endian::Little, Endian::Big] {
        for long_every in [None, Some(5_000), Some(97), Some(3), Some(1)] {
            let strings = vocabulary(N, long_every);
            let bytes = file(&strings, endian);
            decode_every_way(&bytes, &strict()).unwrap();
            let gguf = parse_with(&bytes[..], &strict()).unwrap();
            let parsed: Vec<&[u8]> =
                gguf.get_array(KEY).unwrap().strings().unwrap().map(|s| s.as_bytes()).collect();
            assert_eq!(parsed.len(), strings.len());
            assert!(parsed.iter().zip(&strings).all(|(a, b)| a == b), "{endian:?} {long_every:?}");
            assert_eq!(gguf.get_u64("after"), Some(7));
        }
    }
}

#[test]
fn an_invalid_string_deep_in_the_array_is_reported_at_its_element() {
    for endian in [Endian::Little, Endian::Big] {
        for (index, long_every) in [(N / 2, None), (N - 1, None), (123, None), (N / 2, Some(50))] {
            // Short, and long: 150 bytes, whose length field starts with a continuation byte.
            for (bad, valid_up_to) in
                [(b"ab\xFFcd".to_vec(), 2), ([vec![b'x'; 148], vec![0xFF, b'y']].concat(), 148)]
            {
                let mut strings = vocabulary(N, long_every);
                strings[index] = bad;
                let bytes = file(&strings, endian);
                let err = decode_every_way(&bytes, &strict()).unwrap_err();
                assert_invalid_element(&err, &strings, index, valid_up_to);

                // Lenient: one warning there, and everything after it still parsed.
                let lenient = ParseOptions::default().with_profile(Profile::Lenient);
                let dir = decode_every_way(&bytes, &lenient).unwrap();
                assert_eq!(dir.warnings().len(), 1);
                assert_eq!(dir.warnings()[0].offset(), element_at(&strings, index) + 8);
            }
        }
    }
}

/// The boundary a single UTF-8 pass over the run could miss: a short string ending in a lead
/// byte, then a long string whose little-endian length field starts with a continuation byte
/// (150 = 0x96). Run together they read as one valid character.
#[test]
fn a_truncated_character_before_a_long_string_is_caught() {
    for index in [9_000, 30_000] {
        let mut strings = vocabulary(N, None);
        strings[index] = b"ab\xC3".to_vec();
        strings[index + 1] = vec![b'x'; 150];
        let bytes = file(&strings, Endian::Little);
        assert_eq!(bytes[element_at(&strings, index + 1) as usize], 0x96);
        let err = decode_every_way(&bytes, &strict()).unwrap_err();
        assert_invalid_element(&err, &strings, index, 2);
    }
}

/// Big-endian, a length field ends with its low byte: 195 is 0xC3, a lead byte, right before
/// the string. A string starting with a continuation byte would complete it into "é", so a
/// long string's length field is never validated together with its string, wherever the run
/// starts (the whole parse's starts at element 0; chunked ones anywhere).
#[test]
fn a_length_field_never_completes_a_strings_first_character() {
    for index in [0, 1, 777, N / 2] {
        let mut strings = vocabulary(N, None);
        strings[index] = [&[0xA9][..], &[b'x'; 194]].concat();
        let bytes = file(&strings, Endian::Big);
        assert_eq!(bytes[element_at(&strings, index) as usize + 7], 0xC3);
        let err = decode_every_way(&bytes, &strict()).unwrap_err();
        assert_invalid_element(&err, &strings, index, 0);
    }
}

#[test]
fn limits_stop_the_array_at_the_element_that_breaks_them() {
    let mut strings = vocabulary(N, None);
    strings[25_000] = vec![b'y'; 100];
    let bytes = file(&strings, Endian::Little);

    let mut limits = strict().limits;
    limits.max_string_len = 99;
    let err = decode_every_way(&bytes, &strict().with_limits(limits)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::StringTooLong { len: 100, max: 99 });
    assert_eq!(err.offset(), element_at(&strings, 25_000));
    assert_eq!(err.path().segments(), element_path(25_000));

    // A header-size limit that ends inside element 30,000.
    let mut limits = strict().limits;
    limits.max_header_bytes = element_at(&strings, 30_000) + 10;
    let err = decode_every_way(&bytes, &strict().with_limits(limits)).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::HeaderTooLarge { max: limits.max_header_bytes });
    assert_eq!(err.offset(), element_at(&strings, 30_000));
    assert_eq!(err.path().segments(), element_path(30_000));
}

#[test]
fn truncation_inside_a_long_array_says_what_is_missing() {
    let strings = vocabulary(N, Some(700));
    let bytes = file(&strings, Endian::Little);
    for index in [100, N / 2, N - 1] {
        let cut = element_at(&strings, index) as usize + 3;
        let err = decode_every_way(&bytes[..cut], &strict()).unwrap_err();
        // Three bytes of the length field are there: five are missing.
        assert_eq!(err.kind(), &ErrorKind::UnexpectedEof { needed: 5 }, "{index}");
        assert_eq!(err.offset(), cut as u64, "{index}");
        assert_eq!(err.path().segments(), element_path(index as u64), "{index}");
    }
}

/// Bytes at every 64 KiB boundary of the input (where the fast path's windows and any
/// piece-wise validation would cut): a bad byte just before, at or after one, a character cut
/// in two by it, and a valid character across it are all judged exactly.
#[test]
fn bytes_at_the_helpers_piece_cuts_are_judged_exactly() {
    const PIECE: u64 = 64 * 1024;
    let strings = vocabulary(N, Some(300));
    let bytes = file(&strings, Endian::Little);
    let starts: Vec<u64> = (0..N).map(|i| element_at(&strings, i) + 8).collect();
    // The element whose string holds absolute offset `at`, and where in it.
    let holding = |at: u64| {
        let i = starts.partition_point(|&s| s <= at).checked_sub(1)?;
        let within = at - starts[i];
        (within < strings[i].len() as u64).then_some((i, within as usize))
    };
    let mut checked = 0;
    for cut in (1..bytes.len() as u64 / PIECE).map(|m| m * PIECE) {
        for delta in [-1i64, 0, 1, 3] {
            let Some((i, at)) = holding(cut.wrapping_add_signed(delta)) else { continue };
            let len = strings[i].len();
            // A stray continuation byte, 0xFF, a lead byte followed by ASCII: each invalid at
            // `at`. A two-byte character starting at `at` (when it fits): valid.
            let mut cases = vec![(0x80, Some(at)), (0xFF, Some(at)), (0xC3, Some(at))];
            if at + 2 <= len {
                cases.push((0, None));
            }
            for (bad, expected) in cases {
                let mut strings = strings.clone();
                let mut s = vec![b'a'; len];
                match expected {
                    Some(at) => s[at] = bad,
                    None => s[at..at + 2].copy_from_slice("é".as_bytes()),
                }
                strings[i] = s;
                let bytes = file(&strings, Endian::Little);
                // Chunked parses: the tests above compare them.
                let whole = sipllm_gguf::decode(&bytes, &strict());
                match (whole, expected) {
                    (Ok(_), None) => {}
                    (Err(err), Some(valid_up_to)) => {
                        eprintln!("cut {cut} delta {delta} byte {bad:#x}");
                        assert_invalid_element(&err, &strings, i, valid_up_to as u64);
                    }
                    (got, expected) => panic!("cut {cut} delta {delta}: {got:?}, {expected:?}"),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "only {checked} cases fell inside strings");
}

/// Binary data between two long string arrays (here floats, whose bytes are not UTF-8) is
/// never validated as text: an invalid string in the second array, right after the floats,
/// is still found, and the valid file still parses.
#[test]
fn a_second_long_array_after_binary_data_is_validated_too() {
    let tokens = vocabulary(N, None);
    let scores = Value::Array(6, (0..N).map(|i| Value::Float32(-(i as f32) - 0.3)).collect());
    let build = |merges: &[Vec<u8>]| {
        let strings = |v: &[Vec<u8>]| {
            Value::array(ValueType::String, v.iter().cloned().map(Value::String).collect())
        };
        GgufBuilder::new()
            .kv(KEY, strings(&tokens))
            .kv("tokenizer.ggml.scores", scores.clone())
            .kv("tokenizer.ggml.merges", strings(merges))
            .build()
    };
    let merges = vocabulary(N, Some(1_000));
    let bytes = build(&merges);
    let gguf = parse_with(&bytes[..], &strict()).unwrap();
    let parsed: Vec<&[u8]> = gguf
        .get_array("tokenizer.ggml.merges")
        .unwrap()
        .strings()
        .unwrap()
        .map(|s| s.as_bytes())
        .collect();
    assert!(parsed.iter().zip(&merges).all(|(a, b)| a == b) && parsed.len() == N);
    for index in [0, 3, 2_000, N - 1] {
        let mut bad = merges.clone();
        bad[index] = b"x\xE2\x82".to_vec();
        let err = decode_every_way(&build(&bad), &strict()).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: 1 });
        assert_eq!(
            err.path().segments(),
            vec![
                PathSeg::Metadata { index: 2, key: Some("tokenizer.ggml.merges".into()) },
                PathSeg::Element(index as u64)
            ]
        );
    }
}

/// Pieces valid strings are made of: ASCII (NUL too) and multi-byte characters.
const PIECES: &[&str] = &["a", "Gt", "\0", "é", "ż€", "😀"];
/// Bytes that are not UTF-8 on their own: lead bytes, continuation bytes, 0xFF.
const BAD: &[u8] = &[0xC3, 0xE2, 0xF0, 0xA9, 0x80, 0xFF];

fn arb_valid(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(PIECES), len).prop_map(|p| p.concat().into_bytes())
}

/// Mostly short valid strings, as in a vocabulary; now and then a long one (the fast path
/// leaves those to the decoder's loop); rarely one, short or long, with a bad byte at its
/// start, end or middle, so the first invalid string falls anywhere in the array; and rarely
/// the pair a
/// run-wide UTF-8 pass could be fooled by: a string ending in a lead byte, then a long one
/// whose little-endian length field starts with a continuation byte (128 to 191).
fn arb_strings() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        2000 => arb_valid(0..8).prop_map(|s| vec![s]),
        40 => arb_valid(40..400).prop_map(|s| vec![s]),
        1 => (
            prop_oneof![arb_valid(0..8), arb_valid(40..400)],
            prop::sample::select(BAD),
            0..3usize,
        ).prop_map(|(mut s, bad, at)| {
            match at {
                0 => s.insert(0, bad),
                1 => s.push(bad),
                _ => s.insert(s.len() / 2, bad),
            }
            vec![s]
        }),
        1 => (arb_valid(0..8), 128..192usize).prop_map(|(mut s, long)| {
            s.push(0xC3);
            vec![s, vec![b'x'; long]]
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the strings, the strict parse gives them back exactly when all are UTF-8, and
    /// otherwise fails at the first that is not; the lenient and llama-cpp profiles give them
    /// back regardless (lenient with one warning). Arrays are long enough for the fast path to take part.
    #[test]
    fn any_strings_parse_back_or_fail_at_the_first_invalid_one(
        units in prop::collection::vec(arb_strings(), 600..3_000),
        big_endian in any::<bool>(),
    ) {
        let endian = if big_endian { Endian::Big } else { Endian::Little };
        let strings = units.concat();
        let bytes = file(&strings, endian);
        let first_invalid = strings.iter().position(|s| std::str::from_utf8(s).is_err());
        match (decode_every_way(&bytes, &strict()), first_invalid) {
            (Ok(_), None) => {}
            (Err(err), Some(index)) => {
                let valid_up_to = std::str::from_utf8(&strings[index]).unwrap_err().valid_up_to() as u64;
                prop_assert_eq!(
                    err.kind(),
                    &ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to }
                );
                prop_assert_eq!(err.offset(), element_at(&strings, index) + 8);
                prop_assert_eq!(err.path().segments(), element_path(index as u64));
            }
            (got, expected) => prop_assert!(false, "got {got:?}, first invalid {expected:?}"),
        }
        // The profiles that keep invalid strings (llama.cpp's refuses big-endian files).
        let mut keeping = vec![Profile::Lenient];
        if endian == Endian::Little {
            keeping.push(Profile::LlamaCpp);
        }
        for profile in keeping {
            let opts = ParseOptions::new(profile);
            let dir = decode_every_way(&bytes, &opts).unwrap();
            prop_assert_eq!(dir.warnings().len(), usize::from(profile == Profile::Lenient && first_invalid.is_some()));
            let gguf = parse_with(&bytes[..], &opts).unwrap();
            let parsed = gguf.get_array(KEY).unwrap();
            let parsed: Vec<&[u8]> = parsed.strings().unwrap().map(|s| s.as_bytes()).collect();
            prop_assert_eq!(parsed, strings.iter().map(|s| &s[..]).collect::<Vec<_>>());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The same, for long arrays, with the arbitrary strings anywhere among valid ones: the
    /// whole-slice parse, like a chunked one, gives the strings back or fails at the first
    /// invalid one.
    #[test]
    fn any_strings_in_a_long_array_parse_back_or_fail_at_the_first_invalid_one(
        units in prop::collection::vec(arb_strings(), 300..1_500),
        before in 0..N,
        big_endian in any::<bool>(),
        profile in prop::sample::select(vec![Profile::Strict, Profile::Lenient]),
    ) {
        let endian = if big_endian { Endian::Big } else { Endian::Little };
        let filler = vocabulary(N, Some(400));
        let strings = [&filler[..before], &units.concat(), &filler[before..]].concat();
        let bytes = file(&strings, endian);
        let opts = ParseOptions::new(profile);
        let whole = sipllm_gguf::decode(&bytes, &opts);
        let chunked = decode_chunked(&bytes, &opts, &[4096]);
        prop_assert_eq!(format!("{whole:?}"), format!("{chunked:?}"));
        let first_invalid = strings.iter().position(|s| std::str::from_utf8(s).is_err());
        match (whole, first_invalid, profile) {
            (Ok(dir), None, _) => prop_assert!(dir.warnings().is_empty()),
            (Ok(dir), Some(index), Profile::Lenient) => {
                prop_assert_eq!(dir.warnings().len(), 1);
                prop_assert_eq!(dir.warnings()[0].offset(), element_at(&strings, index) + 8);
            }
            (Err(err), Some(index), Profile::Strict) => {
                let valid_up_to = std::str::from_utf8(&strings[index]).unwrap_err().valid_up_to();
                let valid_up_to = valid_up_to as u64;
                prop_assert_eq!(
                    err.kind(),
                    &ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to }
                );
                prop_assert_eq!(err.offset(), element_at(&strings, index) + 8);
                prop_assert_eq!(err.path().segments(), element_path(index as u64));
            }
            (got, expected, _) => prop_assert!(false, "got {got:?}, first invalid {expected:?}"),
        }
    }
}
