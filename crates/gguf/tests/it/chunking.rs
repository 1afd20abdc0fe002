//! Chunk independence: decoding in 1-byte chunks, in random chunk sizes, in exactly the sizes
//! the decoder asks for, and whole gives identical ASTs and identical errors (kind, offset,
//! length and path) — for every corpus file, for random valid files, and for random
//! corruptions of them.

use std::path::{Path, PathBuf};

use crate::arbitrary::{XorShift, arb_file, decode_chunked};
use proptest::prelude::*;
use sipllm_gguf::{Directory, Error, ParseOptions, Profile};

fn whole(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    sipllm_gguf::decode(bytes, opts)
}

/// Schedules: 1-byte, exactly-what-is-needed, and a few random ones.
fn schedules(seed: u64) -> Vec<Vec<usize>> {
    let mut rng = XorShift(seed | 1);
    let mut out = vec![vec![1], vec![0]];
    for max in [16, 4096, 100_000] {
        out.push((0..64).map(|_| 1 + rng.below(max) as usize).collect());
    }
    out
}

fn assert_chunk_independent(name: &str, bytes: &[u8], opts: &ParseOptions, seed: u64) {
    let expected = whole(bytes, opts);
    for sizes in schedules(seed) {
        let got = decode_chunked(bytes, opts, &sizes);
        assert_eq!(got, expected, "{name}: schedule {:?}", &sizes[..sizes.len().min(4)]);
    }
}

fn shared_corpus_files() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    if !dir.is_dir() {
        eprintln!("SKIPPED: {} not found; corpus chunking tests did not run", dir.display());
        return None;
    }
    let mut files = Vec::new();
    for sub in ["real", "real-historic", "generated"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "gguf") {
                files.push(p);
            }
        }
    }
    files.sort();
    Some(files)
}

#[test]
fn corpus_files_decode_identically_in_any_chunking() {
    let Some(files) = shared_corpus_files() else { return };
    for (i, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        for profile in [Profile::Strict, Profile::Lenient] {
            let opts =
                ParseOptions::new(profile).with_v1(true).with_file_size(Some(bytes.len() as u64));
            assert_chunk_independent(&name, &bytes, &opts, i as u64 + 1);
        }
    }
}

#[test]
fn truncated_corpus_headers_fail_identically_in_any_chunking() {
    let Some(files) = shared_corpus_files() else { return };
    let mut rng = XorShift(0x5eed);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        // Cut inside the header: before the data section (or the end of a tensor-less file).
        let opts = ParseOptions::default().with_v1(true);
        let header_end = match whole(&bytes, &opts) {
            Ok(dir) if dir.tensors().is_empty() => dir.directory_end(),
            Ok(dir) => dir.data_offset(),
            Err(e) => e.offset(),
        };
        for _ in 0..4 {
            if header_end == 0 {
                break;
            }
            let cut = rng.below(header_end) as usize;
            let opts = ParseOptions::default().with_v1(true).with_file_size(Some(cut as u64));
            let expected = whole(&bytes[..cut], &opts);
            let err = expected.clone().expect_err("a cut header cannot parse");
            assert_eq!(err.offset(), cut as u64, "{}: truncated at {cut}", path.display());
            assert_eq!(err.code(), "gguf::input::unexpected_eof");
            assert_eq!(decode_chunked(&bytes[..cut], &opts, &[1]), expected);
            assert_eq!(decode_chunked(&bytes[..cut], &opts, &[0]), expected);
        }
    }
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
