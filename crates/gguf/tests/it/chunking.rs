//! Chunk independence: decoding in 1-byte chunks, in random chunk sizes, in exactly the sizes
//! the decoder asks for, and whole gives identical ASTs and identical errors (kind, offset,
//! length and path) — for random valid files and random corruptions of them (for every
//! corpus file: the workspace's `tests/it/corpus/chunking.rs`).

use crate::arbitrary::{arb_file, decode_chunked};
use proptest::prelude::*;
use sipllm_gguf::{Directory, Error, ParseOptions, Profile};

fn whole(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    sipllm_gguf::decode(bytes, opts)
}

/// Overwrites a few bytes of a valid file with random values (or truncates it).
fn corrupt(bytes: &[u8], edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for &(at, b) in edits {
        if !out.is_empty() {
            let i = at % out.len();
            out[i] = b;
        }
    }
    if let Some(c) = cut {
        out.truncate(c % (out.len() + 1));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn built_files_decode_identically_in_any_chunking(
        b in arb_file(),
        sizes in proptest::collection::vec(0usize..40, 1..16),
    ) {
        let bytes = b.build();
        let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
        let expected = whole(&bytes, &opts);
        prop_assert!(expected.is_ok(), "{:?}", expected);
        prop_assert_eq!(decode_chunked(&bytes, &opts, &sizes), expected.clone());
        prop_assert_eq!(decode_chunked(&bytes, &opts, &[1]), expected);
    }

    #[test]
    fn corrupted_files_fail_identically_in_any_chunking(
        b in arb_file(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<usize>()),
        sizes in proptest::collection::vec(0usize..40, 1..16),
        profile in prop_oneof![Just(Profile::Strict), Just(Profile::LlamaCpp), Just(Profile::Lenient)],
    ) {
        let bytes = corrupt(&b.build(), &edits, cut);
        let opts = ParseOptions::new(profile).with_file_size(Some(bytes.len() as u64));
        let expected = whole(&bytes, &opts);
        prop_assert_eq!(decode_chunked(&bytes, &opts, &sizes), expected.clone());
        prop_assert_eq!(decode_chunked(&bytes, &opts, &[1]), expected);
    }
}
