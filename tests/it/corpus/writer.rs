//! The writer on the corpus: every canonical corpus file (`real/` and `generated/`) is
//! re-written byte for byte from its parse, holds the same values re-written in the other
//! byte order, and streams the same header bytes as it builds. (On builder-made files:
//! `crates/gguf/tests/it/writer.rs`.)

use sipllm_gguf::{Endian, Gguf, MetaValue, writer::GgufWriter};

/// Re-writes a parsed file with its own data: header from the writer, data copied over.
fn rewrite<B: AsRef<[u8]>>(gguf: &Gguf<B>, original: &[u8], endian: Endian) -> Vec<u8> {
    let w = GgufWriter::from_gguf(gguf).endian(endian);
    w.to_bytes(|i| {
        let t = &gguf.tensor_infos()[i];
        let start = t.abs_offset() as usize;
        original[start..start + t.nbytes().unwrap() as usize].to_vec()
    })
    .unwrap()
}

fn parse(bytes: &[u8]) -> Gguf<&[u8]> {
    sipllm_gguf::parse(bytes).unwrap_or_else(|e| panic!("{e}"))
}

/// The same values, whatever the byte order they were stored in.
fn assert_same_content(a: &Gguf<&[u8]>, b: &Gguf<&[u8]>) {
    assert_eq!(a.kv_len(), b.kv_len());
    for (x, y) in a.metadata().zip(b.metadata()) {
        assert_eq!(x.key, y.key);
        assert_same_value(&x.value, &y.value);
    }
    assert_eq!(a.tensor_infos().len(), b.tensor_infos().len());
    for (x, y) in a.tensors().zip(b.tensors()) {
        assert_eq!(
            (x.name, x.info.dims(), x.info.ggml_type()),
            (y.name, y.info.dims(), y.info.ggml_type())
        );
        assert_eq!((x.info.offset(), x.info.nbytes()), (y.info.offset(), y.info.nbytes()));
    }
}

fn assert_same_value(x: &MetaValue<'_>, y: &MetaValue<'_>) {
    match (x, y) {
        (MetaValue::Array(p), MetaValue::Array(q)) => {
            assert_eq!((p.elem_type(), p.len()), (q.elem_type(), q.len()));
            for (u, v) in p.iter().zip(q.iter()) {
                assert_same_value(&u, &v);
            }
        }
        (MetaValue::Float32(p), MetaValue::Float32(q)) => assert_eq!(p.to_bits(), q.to_bits()),
        (MetaValue::Float64(p), MetaValue::Float64(q)) => assert_eq!(p.to_bits(), q.to_bits()),
        _ => assert_eq!(x, y),
    }
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
