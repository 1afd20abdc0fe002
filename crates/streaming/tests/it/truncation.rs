//! Truncated files fail at open, naming what is cut; complete data sections open; a file that
//! shrinks after open gives an error with the offset and the missing byte count.

use std::fs::OpenOptions as FsOpenOptions;

use crate::common::TempFile;
use sipllm_gguf::{GgmlType, error::PathSeg};
use sipllm_streaming::{
    Backend, GgufFile, MemSource, OpenOptions, SourceTensor, StreamError, StreamErrorKind,
    TensorStore, WeightSource,
};
use sipllm_testkit::{GgufBuilder, Value};
use smallvec::smallvec;

/// Four tensors: a (128 B) at 0, b (64 B) at 128, c (128 B) at 192, d (32 B) at 320.
fn four_tensors() -> Vec<u8> {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("a", GgmlType::F32, &[8, 4])
        .tensor("b", GgmlType::F32, &[16])
        .tensor("c", GgmlType::F16, &[32, 2])
        .tensor("d", GgmlType::F32, &[8])
        .build()
}

/// Opens `bytes` through a file with both backends and through memory; all must agree.
fn open_all_ways(tag: &str, bytes: &[u8]) -> Vec<Result<GgufFile, StreamError>> {
    let tmp = TempFile::with_bytes(tag, bytes);
    vec![
        GgufFile::open(tmp.path(), &OpenOptions::default()),
        GgufFile::open(tmp.path(), &OpenOptions::default().with_backend(Backend::Mmap)),
        GgufFile::from_source(
            MemSource::new(std::sync::Arc::<[u8]>::from(bytes)),
            &OpenOptions::default(),
        ),
    ]
}

fn data_offset(bytes: &[u8]) -> usize {
    sipllm_gguf::parse(bytes).unwrap().data_offset() as usize
}

#[test]
fn truncated_inside_tensor_data_fails_at_open_naming_the_first_tensor_cut() {
    let full = four_tensors();
    let base = data_offset(&full);
    // Cut inside c's data (c spans 192..320), and exactly where c starts.
    for cut in [base + 192 + 50, base + 192 + 1, base + 192] {
        for result in open_all_ways("cut", &full[..cut]) {
            let err = result.unwrap_err();
            assert_eq!(err.code(), "gguf::layout::out_of_bounds", "{err}");
            let parse = err.parse_error().unwrap();
            assert_eq!(
                parse.path().segments().first(),
                Some(&PathSeg::Tensor { index: 2, name: Some("c".into()) }),
                "the first tensor that does not fit is c, not d: {err}"
            );
            assert!(
                err.to_string().contains(&format!(
                    "tensor[2] \"c\" offset: data ends at byte {} but the file has {cut} bytes",
                    base + 320
                )),
                "{err}"
            );
            assert!(err.help().contains("truncated"), "{}", err.help());
        }
    }
}

#[test]
fn the_file_path_is_in_the_error() {
    let full = four_tensors();
    let tmp = TempFile::with_bytes("cut-path", &full[..full.len() - 20]);
    let err = GgufFile::open(tmp.path(), &OpenOptions::default()).unwrap_err();
    // The path is the error's context, not part of its message.
    assert_eq!(err.path(), Some(tmp.path()));
    assert!(err.to_string().starts_with("tensor[3] \"d\""), "{err}");
    let located = err.located().to_string();
    assert!(located.starts_with(&format!("{}: tensor[3] \"d\"", tmp.path().display())));
}

#[test]
fn complete_data_section_opens_even_without_trailing_padding() {
    let full = four_tensors();
    let base = data_offset(&full);
    // `build` pads the end to the alignment; the data ends at base + 352 (d: 320..352).
    assert_eq!(full.len(), base + 352);
    for cut in [full.len(), base + 352] {
        for result in open_all_ways("complete", &full[..cut]) {
            let file = result.unwrap();
            let d = file.find("d").unwrap();
            assert_eq!(d.end(), Some(cut as u64));
            let mut buf = vec![0u8; 32];
            file.read_raw(d, &mut buf).unwrap();
            assert_eq!(&buf[..], &full[base + 320..base + 352]);
        }
    }
}

#[test]
fn tensorless_file_whose_padded_data_offset_lies_past_its_end_opens() {
    let bytes = GgufBuilder::new().kv("general.name", Value::str("x")).build();
    let padded = bytes.len().div_ceil(32) * 32;
    assert!(padded > bytes.len(), "the header must not end on the alignment for this test");
    for result in open_all_ways("tensorless", &bytes) {
        let file = result.unwrap();
        assert!(file.tensors().is_empty());
        assert_eq!(file.gguf().data_offset(), padded as u64);
        assert_eq!(file.file_size(), bytes.len() as u64);
        assert_eq!(file.meta_str("general.name").unwrap(), "x");
    }
}

#[test]
fn truncated_inside_the_header_names_the_item_cut() {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hello", "world"]))
        .build();
    // Cut inside the token array's third string.
    let cut = bytes.windows(5).position(|w| w == b"hello").unwrap() + 2;
    for window in [1, 7, 64 << 10] {
        let opts = OpenOptions::default().with_window(window);
        let err = GgufFile::from_source(
            MemSource::new(std::sync::Arc::<[u8]>::from(&bytes[..cut])),
            &opts,
        )
        .unwrap_err();
        assert_eq!(err.code(), "gguf::input::unexpected_eof", "{err}");
        assert_eq!(err.offset(), Some(cut as u64));
        assert_eq!(
            err.parse_error().unwrap().path().to_string(),
            "metadata[1] \"tokenizer.ggml.tokens\"[2]",
            "window {window}"
        );
    }
}

#[test]
fn empty_and_tiny_files_fail_at_the_header() {
    for (bytes, path) in [(&b""[..], "header.magic"), (&b"GGUF\x03\0"[..], "header.version")] {
        for result in open_all_ways("tiny", bytes) {
            let err = result.unwrap_err();
            assert_eq!(err.code(), "gguf::input::unexpected_eof", "{err}");
            assert_eq!(err.offset(), Some(bytes.len() as u64));
            assert_eq!(err.parse_error().unwrap().path().to_string(), path);
        }
    }
}

#[test]
fn a_file_that_shrinks_after_open_reports_offset_and_missing_bytes() {
    let full = four_tensors();
    let base = data_offset(&full) as u64;
    let tmp = TempFile::with_bytes("shrink", &full);
    // Only the pread backend: truncating a mapped file would raise SIGBUS (see Backend).
    let file = GgufFile::open(tmp.path(), &OpenOptions::default()).unwrap();
    FsOpenOptions::new().write(true).open(tmp.path()).unwrap().set_len(base + 200).unwrap();

    let c = file.find("c").unwrap();
    let mut buf = vec![0u8; 128];
    let err = file.read_raw(c, &mut buf).unwrap_err();
    assert_eq!(err.code(), "streaming::io::unexpected_eof");
    match err.kind() {
        StreamErrorKind::UnexpectedEof { offset, len, missing } => {
            assert_eq!(err.path(), Some(tmp.path()));
            assert_eq!((*offset, *len, *missing), (base + 192, 128, 120));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.located().to_string(),
        format!(
            "{}: unexpected end of file: 120 of the 128 bytes requested at offset {} are \
             missing (the input ends at byte {})",
            tmp.path().display(),
            sipllm_format::group(base + 192),
            sipllm_format::group(base + 200)
        )
    );
    // FileBacking::pread_exact reports the same.
    let backing = sipllm_streaming::FileBacking::open(tmp.path(), Backend::Pread).unwrap();
    let err = backing.pread_exact(base + 190, &mut [0u8; 30]).unwrap_err();
    assert!(matches!(err.kind(), StreamErrorKind::UnexpectedEof { missing: 20, .. }), "{err:?}");
}

#[test]
fn tensor_store_rejects_tensors_outside_the_source() {
    let info = |name: &str, abs_offset: u64, nbytes: u64| SourceTensor {
        name: name.into(),
        ggml_type: GgmlType::F32,
        shape: smallvec![nbytes / 4],
        abs_offset,
        nbytes: Some(nbytes),
    };
    let source = || Box::new(MemSource::new(vec![0u8; 1000]));
    let tensors = vec![info("x", 0, 500), info("y", 500, 600), info("z", 1100, 4)];
    let err = TensorStore::new(source(), None, tensors, 0).unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::out_of_bounds");
    assert_eq!(
        err.to_string(),
        "tensor \"y\": its 600 bytes at offset 500 end past the end of the file (1,000 bytes)"
    );
    // Overflowing offsets are out of bounds too, not a panic.
    let err = TensorStore::new(source(), None, vec![info("o", u64::MAX - 1, 8)], 0).unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::out_of_bounds");
    // Exactly filling the source is fine.
    let store = TensorStore::new(source(), None, vec![info("x", 0, 1000)], 0).unwrap();
    assert_eq!(store.find("x").map(|t| t.abs_offset), Some(0));
}

#[test]
fn lenient_inspection_keeps_the_header_of_a_file_cut_inside_its_data_from_one_read() {
    use sipllm_gguf::{ParseOptions, Profile};
    use sipllm_streaming::ModelOrHeader;

    let full = four_tensors();
    let cut = data_offset(&full) + 192 + 50;
    let lenient = OpenOptions::default().with_parse(ParseOptions::new(Profile::Lenient));
    let (source, log) = crate::common::Instrumented::new(MemSource::new(
        std::sync::Arc::<[u8]>::from(&full[..cut]),
    ));
    let ModelOrHeader::Header(header) =
        ModelOrHeader::from_named_source(source, "cut.gguf", &lenient).unwrap()
    else {
        panic!("a file cut inside its data is a header, not a weight source");
    };
    assert_eq!(header.gguf().tensors().count(), 4);
    assert_eq!(header.file_size(), cut as u64);
    assert_eq!(header.error().code(), "streaming::tensor::out_of_bounds");
    assert!(header.error().to_string().contains("\"c\""), "{}", header.error());
    // The header was read once: after the 4-byte sniff of the magic, no byte is read twice.
    let mut reads = log.reads();
    assert_eq!(reads.first(), Some(&(0, 4)));
    reads.remove(0);
    reads.sort_unstable();
    assert!(reads.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "{reads:?}");

    // From a file, whole set or single file, the same; other profiles refuse as ever.
    let tmp = TempFile::with_bytes("lenient-cut", &full[..cut]);
    for opened in [
        ModelOrHeader::open(tmp.path(), &lenient),
        ModelOrHeader::open_single(tmp.path(), &lenient),
    ] {
        let ModelOrHeader::Header(h) = opened.unwrap() else { panic!("not a header") };
        assert_eq!(h.gguf().tensors().count(), 4);
    }
    for profile in [Profile::Strict, Profile::LlamaCpp] {
        let options = OpenOptions::default().with_parse(ParseOptions::new(profile));
        let err = ModelOrHeader::open(tmp.path(), &options).unwrap_err();
        assert_eq!(err.code(), "gguf::layout::out_of_bounds", "{err}");
    }
    // A complete file is a model under every profile.
    let whole = TempFile::with_bytes("lenient-whole", &full);
    let model = ModelOrHeader::open(whole.path(), &lenient).unwrap().into_model().unwrap();
    assert_eq!(model.tensors().len(), 4);
}
