//! Chunk independence on the corpus: every corpus file decodes to the identical AST or the
//! identical error (kind, offset, length and path) in 1-byte chunks, in exactly the sizes the
//! decoder asks for, in random chunk sizes, and whole, strict and lenient; and headers cut at
//! random points fail identically in any chunking. (On random valid and corrupted files:
//! `crates/gguf/tests/it/chunking.rs`.)

use std::path::PathBuf;

use sipllm_gguf::{Directory, Error, ParseOptions, Profile};
use sipllm_testkit::check::decode_chunked;

fn whole(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    sipllm_gguf::decode(bytes, opts)
}

/// A small deterministic PRNG (the schedules must not change between runs).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
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

/// Every `.gguf` of the corpus, in the loader's order.
fn corpus_files() -> Vec<PathBuf> {
    sipllm_tests::all().iter().map(|f| f.path.clone()).collect()
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn corpus_files_decode_identically_in_any_chunking() {
    let files = corpus_files();
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
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn truncated_corpus_headers_fail_identically_in_any_chunking() {
    let files = corpus_files();
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
