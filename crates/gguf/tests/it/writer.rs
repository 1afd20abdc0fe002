//! The writer: byte-exact re-writes of canonical files (every builder-made file; every corpus
//! file: the workspace's `tests/it/corpus/writer.rs`), round trips through both byte orders,
//! and its refusals.

use std::borrow::Cow;

use crate::arbitrary::arb_file;
use proptest::prelude::*;
use sipllm_gguf::writer::Value;
use sipllm_gguf::{
    Endian, GgmlType, Gguf, MetaValue, ParseOptions, ValueType, ggml::SizeError,
    writer::GgufWriter, writer::HeaderWriteError, writer::TensorDesc,
};
use sipllm_testkit::check::{assert_same_content, rewrite};

fn parse(bytes: &[u8]) -> Gguf<&[u8]> {
    sipllm_gguf::parse(bytes).unwrap_or_else(|e| panic!("{e}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Builder output is canonical: parse then write gives the same bytes, in its byte order;
    /// written in the other byte order, it parses to the same values.
    #[test]
    fn built_files_round_trip_in_both_byte_orders(b in arb_file()) {
        let bytes = b.build();
        let gguf = parse(&bytes);
        let again = rewrite(&gguf, &bytes, gguf.endian());
        prop_assert!(again == bytes, "re-write differs");
        for endian in [Endian::Little, Endian::Big] {
            let w = GgufWriter::from_gguf(&gguf).endian(endian);
            let mut streamed = Vec::new();
            w.write_header(&mut streamed).unwrap();
            prop_assert_eq!(&streamed, &w.header_bytes().unwrap());
            let out = rewrite(&gguf, &bytes, endian);
            let reparsed = parse(&out);
            prop_assert_eq!(reparsed.endian(), endian);
            assert_same_content(&gguf, &reparsed);
            // Tensor data moved with the directory.
            for (x, y) in gguf.tensors().zip(reparsed.tensors()) {
                let (a, n) = (x.info.abs_offset() as usize, x.info.nbytes().unwrap() as usize);
                let c = y.info.abs_offset() as usize;
                prop_assert_eq!(&bytes[a..a + n], &out[c..c + n]);
            }
        }
    }
}

#[test]
fn a_header_built_from_scratch_parses_back() {
    let mut w = GgufWriter::new();
    w.set(&b"general.architecture"[..], Value::str("llama"))
        .set(&b"llama.block_count"[..], Value::Uint32(2))
        .set(&b"general.alignment"[..], Value::Uint32(64))
        .set(&b"tokenizer.ggml.tokens"[..], Value::strings(["a", "b", "c"]))
        .set(
            &b"nested"[..],
            Value::Array {
                elem_type: ValueType::Array,
                elems: vec![
                    Value::Array { elem_type: ValueType::Int8, elems: vec![Value::Int8(-1)] },
                    Value::strings(["x"]),
                ],
            },
        );
    w.add_tensor(TensorDesc {
        name: Cow::Borrowed(b"a"),
        dims: vec![32, 2],
        ggml_type: GgmlType::Q8_0,
    });
    w.add_tensor(TensorDesc { name: Cow::Borrowed(b"b"), dims: vec![3], ggml_type: GgmlType::F32 });
    let layout = w.layout().unwrap();
    let bytes = w.to_bytes(|i| vec![i as u8 + 1; layout.tensors[i].1 as usize]).unwrap();
    assert_eq!(bytes.len() as u64, layout.file_size);
    let g = parse(&bytes);
    assert_eq!(g.alignment(), 64);
    assert_eq!(g.data_offset() % 64, 0);
    assert_eq!(g.data_offset(), layout.header_len);
    assert_eq!(g.get_str("general.architecture"), Some("llama"));
    let tokens: Vec<_> = g.get_array("tokenizer.ggml.tokens").unwrap().strings().unwrap().collect();
    assert_eq!(tokens, ["a", "b", "c"]);
    let nested: Vec<_> = g.get_array("nested").unwrap().iter().collect();
    assert_eq!(nested[0].as_array().unwrap().to_vec::<i8>(), Some(vec![-1]));
    // Q8_0 [32, 2]: 2 blocks of 34 bytes, then `b` at the next multiple of 64.
    let (a, b) = (g.tensor("a").unwrap().info, g.tensor("b").unwrap().info);
    assert_eq!((a.offset(), a.nbytes()), (0, Some(68)));
    assert_eq!((b.offset(), b.nbytes()), (128, Some(12)));
    assert_eq!(&bytes[b.abs_offset() as usize..][..12], &[2; 12]);
    assert_eq!(layout.file_size, g.data_offset() + 192, "the last tensor is padded too");
}

#[test]
fn set_replaces_in_place_and_remove_removes() {
    let src = sipllm_testkit::GgufBuilder::new()
        .kv("a", sipllm_testkit::Value::Uint8(1))
        .kv("b", sipllm_testkit::Value::str("x"))
        .kv("c", sipllm_testkit::Value::Uint8(3))
        .build();
    let g = parse(&src);
    let mut w = GgufWriter::from_gguf(&g);
    w.set(&b"b"[..], Value::string("a longer value"));
    assert!(w.remove(b"a"));
    assert!(!w.remove(b"missing"));
    w.set(&b"d"[..], Value::Bool(true));
    let out = w.header_bytes().unwrap();
    let g2 = parse(&out);
    let keys: Vec<_> = g2.metadata().map(|e| e.key.as_str().unwrap().to_string()).collect();
    assert_eq!(keys, ["b", "c", "d"]);
    assert_eq!(g2.get_str("b"), Some("a longer value"));
    // kvs_mut reorders; a duplicate it lets in is refused by the layout.
    let d = w.kvs_mut().pop().unwrap();
    w.kvs_mut().insert(0, d.clone());
    let keys: Vec<_> = w.kvs().iter().map(|(k, _)| k.to_vec()).collect();
    assert_eq!(keys, [b"d".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    w.kvs_mut().push(d);
    assert_eq!(w.layout().unwrap_err(), HeaderWriteError::DuplicateKey { key: "d".into() });
}

#[test]
fn the_writer_refuses_what_no_reader_should_accept() {
    // A duplicate key can only come from a leniently parsed file: `set` replaces.
    let src = sipllm_testkit::GgufBuilder::new()
        .kv("k", sipllm_testkit::Value::Uint8(1))
        .kv("k", sipllm_testkit::Value::Uint8(2))
        .build();
    let lenient = ParseOptions::new(sipllm_gguf::Profile::Lenient);
    let g = sipllm_gguf::parse_with(&src[..], &lenient).unwrap();
    let dup = GgufWriter::from_gguf(&g);
    assert_eq!(dup.header_bytes().unwrap_err(), HeaderWriteError::DuplicateKey { key: "k".into() });
    let mixed = {
        let mut w = GgufWriter::new();
        w.set(
            &b"arr"[..],
            Value::Array { elem_type: ValueType::Uint8, elems: vec![Value::Int8(1)] },
        );
        w
    };
    assert_eq!(
        mixed.header_bytes().unwrap_err(),
        HeaderWriteError::MixedArray {
            key: "arr".into(),
            expected: ValueType::Uint8,
            found: ValueType::Int8
        }
    );
    let mut bad_align = GgufWriter::new();
    bad_align.set(&b"general.alignment"[..], Value::Uint32(48));
    assert_eq!(bad_align.layout().unwrap_err(), HeaderWriteError::BadAlignment);
    bad_align.set(&b"general.alignment"[..], Value::Int32(32));
    assert_eq!(bad_align.layout().unwrap_err(), HeaderWriteError::BadAlignment);

    let tensor = |name: &'static [u8], dims: Vec<u64>, ggml_type| TensorDesc {
        name: Cow::Borrowed(name),
        dims,
        ggml_type,
    };
    let mut t = GgufWriter::new();
    t.add_tensor(tensor(b"x", vec![4], GgmlType::F32)).add_tensor(tensor(
        b"x",
        vec![4],
        GgmlType::F32,
    ));
    assert_eq!(t.layout().unwrap_err(), HeaderWriteError::DuplicateTensor { name: "x".into() });
    let mut t = GgufWriter::new();
    t.add_tensor(tensor(b"q", vec![33], GgmlType::Q8_0));
    assert_eq!(
        t.layout().unwrap_err(),
        HeaderWriteError::TensorSize {
            name: "q".into(),
            source: SizeError::NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 }
        }
    );
    let mut t = GgufWriter::new();
    t.add_tensor(tensor(b"d", vec![1; 5], GgmlType::F32));
    assert_eq!(
        t.layout().unwrap_err(),
        HeaderWriteError::TooManyDims { name: "d".into(), n_dims: 5 }
    );
    let mut t = GgufWriter::new();
    t.add_tensor(tensor(b"r", vec![32], GgmlType::Removed(4)));
    assert!(matches!(t.layout().unwrap_err(), HeaderWriteError::TensorSize { .. }));
    assert_eq!(GgufWriter::new().version(1).layout().unwrap_err(), HeaderWriteError::Version(1));
}

/// `pad_to` keeps the data offset of an edited header: shrinking adds a padding pair, growing
/// past the data section is refused with the bytes missing.
#[test]
fn pad_to_keeps_the_data_offset_for_in_place_edits() {
    let name = "A fairly long model name, long enough to shrink a lot when edited";
    let src = sipllm_testkit::GgufBuilder::new()
        .kv("general.name", sipllm_testkit::Value::str(name))
        .tensor("t", GgmlType::F32, &[8])
        .build();
    let g = parse(&src);
    let data_offset = g.data_offset();
    // Shrink: "x" is 64 bytes shorter, more than the 32-byte alignment absorbs.
    let mut w = GgufWriter::from_gguf(&g);
    w.set(&b"general.name"[..], Value::str("x"));
    let pad = w.pad_to(data_offset).unwrap();
    assert!(pad >= 41, "a padding pair was added: {pad}");
    let header = w.header_bytes().unwrap();
    assert_eq!(header.len() as u64, data_offset);
    let mut edited = header.clone();
    edited.extend_from_slice(&src[data_offset as usize..]);
    let e = parse(&edited);
    assert_eq!(e.get_str("general.name"), Some("x"));
    assert_eq!(e.data_offset(), data_offset);
    assert_eq!(e.tensor("t").unwrap().info.abs_offset(), g.tensor("t").unwrap().info.abs_offset());
    assert!(e.get_str(sipllm_gguf::writer::PADDING_KEY).unwrap().bytes().all(|b| b == b' '));
    // Editing again replaces the padding pair instead of stacking another.
    let mut w2 = GgufWriter::from_gguf(&e);
    w2.set(&b"general.name"[..], Value::str("xy"));
    w2.pad_to(data_offset).unwrap();
    let again = w2.header_bytes().unwrap();
    assert_eq!(again.len() as u64, data_offset);
    assert_eq!(parse(&[&again[..], &src[data_offset as usize..]].concat()).kv_len(), 2);
    // Grow past the data section: refused, saying how much is missing.
    let mut w = GgufWriter::from_gguf(&g);
    w.set(&b"general.name"[..], Value::string("y".repeat(200)));
    let grown_end = g.directory().directory_end() + 200 - name.len() as u64;
    assert_eq!(
        w.pad_to(data_offset).unwrap_err(),
        HeaderWriteError::HeaderTooLarge { missing: grown_end - data_offset }
    );
    // Shrinking so the header ends 35 bytes early: the data offset would move, and a padding
    // pair needs at least 41 bytes, so it cannot be kept.
    let s0 = data_offset - g.directory().directory_end();
    let shorter = &name[..name.len() - (35 - s0 as usize)];
    let mut w = GgufWriter::from_gguf(&g);
    w.set(&b"general.name"[..], Value::str(shorter));
    assert_eq!(
        w.pad_to(data_offset).unwrap_err(),
        HeaderWriteError::NoRoomForPadding { slack: 35, min: 41 }
    );
    // A change smaller than the alignment needs no padding pair at all.
    let mut w = GgufWriter::from_gguf(&g);
    w.set(&b"general.name"[..], Value::string(format!("{}!", &name[..name.len() - 1])));
    assert_eq!(w.pad_to(data_offset).unwrap(), 0);
}

/// `write_header` streams: a writer that fails mid-header gets its error back; an invalid
/// header is an `InvalidInput` error and nothing is written.
#[test]
fn write_header_reports_write_errors_and_invalid_headers() {
    struct FailAfter(usize, Vec<u8>);
    impl std::io::Write for FailAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.1.len() + buf.len() > self.0 {
                return Err(std::io::Error::other("disk full"));
            }
            self.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let src = sipllm_testkit::GgufBuilder::new()
        .kv("general.name", sipllm_testkit::Value::str("model"))
        .tensor("t", GgmlType::F32, &[8])
        .build();
    let g = parse(&src);
    let w = GgufWriter::from_gguf(&g);
    let mut out = FailAfter(40, Vec::new());
    let e = w.write_header(&mut out).unwrap_err();
    assert_eq!(e.to_string(), "disk full");
    assert!(out.1.len() <= 40);
    // The full header fits: the same bytes as header_bytes.
    let mut out = FailAfter(usize::MAX, Vec::new());
    assert_eq!(w.write_header(&mut out).unwrap(), g.data_offset());
    assert_eq!(out.1, &src[..g.data_offset() as usize]);

    let mut bad = GgufWriter::from_gguf(&g);
    bad.set(&b"general.alignment"[..], Value::Uint32(3));
    let mut out = Vec::new();
    let e = bad.write_header(&mut out).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(e.to_string(), HeaderWriteError::BadAlignment.to_string());
    assert!(out.is_empty());
}

/// `pad_to` decides from the arithmetic alone: a data offset far past the header is a typed
/// error before any padding is allocated (it used to build the whole padding: 1e9 bytes cost
/// 978 MB, 2^40 aborted, `u64::MAX` panicked with "capacity overflow").
#[test]
fn pad_to_refuses_padding_a_reader_would_refuse_without_building_it() {
    let src = sipllm_testkit::GgufBuilder::new()
        .kv("general.name", sipllm_testkit::Value::str("m"))
        .tensor("t", GgmlType::F32, &[8])
        .build();
    let g = parse(&src);
    let max = sipllm_gguf::Limits::default().max_string_len;
    for data_offset in [1_000_000_000, 1 << 40, u64::MAX] {
        let mut w = GgufWriter::from_gguf(&g);
        match w.pad_to(data_offset).unwrap_err() {
            HeaderWriteError::PaddingTooLarge { len, max: m } => {
                assert_eq!(m, max);
                assert!(len > max && len < data_offset, "{len}");
            }
            e => panic!("{data_offset}: {e:?}"),
        }
        assert!(w.get(sipllm_gguf::writer::PADDING_KEY.as_bytes()).is_none(), "nothing was added");
    }
    // The largest padding a reader accepts is still written, and the file re-opens.
    let mut w = GgufWriter::from_gguf(&g);
    let end = g.directory().directory_end();
    let min = 8 + sipllm_gguf::writer::PADDING_KEY.len() as u64 + 4 + 8;
    let target = (end + min + max) / 32 * 32;
    w.pad_to(target).unwrap();
    let header = w.header_bytes().unwrap();
    assert_eq!(header.len() as u64, target);
    let edited = [&header[..], &src[g.data_offset() as usize..]].concat();
    assert_eq!(parse(&edited).data_offset(), target);
}

/// Keys are text or bytes alike, and every numeric array type has a constructor whose
/// elements parse back with their type.
#[test]
fn str_keys_and_numeric_array_constructors_round_trip() {
    let mut w = GgufWriter::new();
    let owned_key = String::from("general.owned");
    w.set("general.name", Value::from("tiny"))
        .set(&owned_key, Value::from(String::from("owned")))
        .set(String::from("llama.block_count"), Value::from(2u32))
        .set(b"llama.rope.freq_base", Value::from(5e5f32))
        .set("u8s", Value::uint8s([1, 255]))
        .set("i8s", Value::int8s([-1, 7]))
        .set("u16s", Value::uint16s([65535]))
        .set("i16s", Value::int16s([-32768]))
        .set("u32s", Value::uint32s([8, 8, 4]))
        .set("i32s", Value::int32s([1, 3, 3]))
        .set("u64s", Value::uint64s([u64::MAX]))
        .set("i64s", Value::int64s([i64::MIN]))
        .set("f32s", Value::float32s([0.5, -1e-5]))
        .set("f64s", Value::float64s([1e300]))
        .set("bools", Value::bools([true, false]))
        .set("empty", Value::float32s(std::iter::empty()));
    assert_eq!(w.get("llama.block_count"), Some(&Value::Uint32(2)));
    assert_eq!(w.get(b"general.name"), Some(&Value::str("tiny")));
    // Setting an existing key by text replaces it in place.
    w.set("general.name", Value::str("renamed"));
    assert_eq!(w.kvs().iter().filter(|(k, _)| k.as_ref() == b"general.name").count(), 1);
    assert!(w.remove("general.owned"));
    assert!(!w.remove("general.owned"));
    let bytes = w.to_bytes(|_| Vec::new()).unwrap();
    let g = parse(&bytes);
    assert_eq!(g.get_str("general.name"), Some("renamed"));
    assert_eq!(g.get("general.owned"), None);
    assert_eq!(g.get("llama.rope.freq_base"), Some(MetaValue::Float32(5e5)));
    let arr = |k: &str| g.get_array(k).unwrap();
    assert_eq!(arr("u8s").to_vec::<u8>().unwrap(), [1, 255]);
    assert_eq!(arr("i8s").to_vec::<i8>().unwrap(), [-1, 7]);
    assert_eq!(arr("u16s").to_vec::<u16>().unwrap(), [65535]);
    assert_eq!(arr("i16s").to_vec::<i16>().unwrap(), [-32768]);
    assert_eq!(arr("u32s").to_vec::<u32>().unwrap(), [8, 8, 4]);
    assert_eq!(arr("i32s").to_vec::<i32>().unwrap(), [1, 3, 3]);
    assert_eq!(arr("u64s").to_vec::<u64>().unwrap(), [u64::MAX]);
    assert_eq!(arr("i64s").to_vec::<i64>().unwrap(), [i64::MIN]);
    assert_eq!(arr("f32s").to_vec::<f32>().unwrap(), [0.5, -1e-5]);
    assert_eq!(arr("f64s").to_vec::<f64>().unwrap(), [1e300]);
    assert_eq!(arr("bools").to_vec::<bool>().unwrap(), [true, false]);
    assert_eq!(arr("empty").elem_type(), ValueType::Float32);
    assert!(arr("empty").is_empty());
}
