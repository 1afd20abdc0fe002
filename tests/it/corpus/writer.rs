//! The writer on the corpus: every canonical corpus file (`real/` and `generated/`) is
//! re-written byte for byte from its parse, holds the same values re-written in the other
//! byte order, and streams the same header bytes as it builds. (On builder-made files:
//! `crates/gguf/tests/it/writer.rs`.)

use sipllm_gguf::{Endian, Gguf, writer::GgufWriter};
use sipllm_testkit::check::{assert_same_content, rewrite};

fn parse(bytes: &[u8]) -> Gguf<&[u8]> {
    sipllm_gguf::parse(bytes).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn every_canonical_corpus_file_is_rewritten_byte_for_byte() {
    let mut n = 0;
    for file in sipllm_tests::files_in(&["real", "generated"]) {
        let path = &file.path;
        let bytes = file.bytes();
        let gguf = parse(&bytes);
        let again = rewrite(&gguf, &bytes, gguf.endian());
        let first_diff = again.iter().zip(&bytes).position(|(a, b)| a != b);
        assert!(
            again == bytes,
            "{}: re-write differs: lengths {} vs {}, first difference at {first_diff:?}",
            path.display(),
            again.len(),
            bytes.len()
        );
        // And in the other byte order, it holds the same values.
        let other = match gguf.endian() {
            Endian::Little => Endian::Big,
            Endian::Big => Endian::Little,
        };
        let swapped = rewrite(&gguf, &bytes, other);
        assert_eq!(swapped.len(), bytes.len());
        // Streaming the header gives the same bytes as building it, in both byte orders.
        for endian in [gguf.endian(), other] {
            let w = GgufWriter::from_gguf(&gguf).endian(endian);
            let mut streamed = Vec::new();
            let n = w.write_header(&mut streamed).unwrap();
            assert_eq!(n, streamed.len() as u64);
            assert_eq!(streamed, w.header_bytes().unwrap(), "{}", path.display());
        }
        let reparsed = parse(&swapped);
        assert_eq!(reparsed.endian(), other);
        assert_same_content(&gguf, &reparsed);
        n += 1;
    }
    assert_eq!(n, 15);
}
