//! The read side's errors: codes, helps, locations.

use super::*;
use sipllm_gguf::GgmlType;
use std::time::Duration;

#[test]
fn every_variant_has_a_distinct_stable_code_and_help() {
    let io = || io::Error::from(io::ErrorKind::PermissionDenied);
    let path = Some(PathBuf::from("m.gguf"));
    let cases = [
        (StreamError::at("m.gguf", StreamErrorKind::Open { source: io() }), "streaming::io::open"),
        (
            StreamError::new(path.clone(), StreamErrorKind::Io { offset: 1, len: 2, source: io() }),
            "streaming::io::read",
        ),
        (
            StreamError::new(
                path.clone(),
                StreamErrorKind::UnexpectedEof { offset: 1, len: 8, missing: 3 },
            ),
            "streaming::io::unexpected_eof",
        ),
        (
            StreamError::from(TensorError::SizeMismatch {
                tensor: "t".into(),
                expected: 4,
                got: 2,
            }),
            "streaming::read::size_mismatch",
        ),
        (
            StreamError::new(
                None,
                StreamErrorKind::OutOfBounds { offset: 9, len: 2, file_size: 10 },
            ),
            "streaming::read::out_of_bounds",
        ),
        (
            StreamError::new(
                path.clone(),
                StreamErrorKind::TensorOutOfBounds {
                    tensor: "t".into(),
                    offset: 8,
                    nbytes: 4,
                    file_size: 10,
                },
            ),
            "streaming::tensor::out_of_bounds",
        ),
        (
            StreamError::from(TensorError::NotInSource { tensor: "t".into(), offset: 0 }),
            "streaming::tensor::not_in_source",
        ),
        (
            StreamError::from(TensorError::UnknownSize {
                tensor: "t".into(),
                ggml_type: GgmlType::from_code(99),
            }),
            "streaming::tensor::unknown_size",
        ),
        (
            StreamError::from(StreamErrorKind::TooLarge {
                what: "tensor \"t\"".into(),
                bytes: u64::MAX,
            }),
            "streaming::memory::too_large",
        ),
        (StreamError::from(MetaError::Missing { key: "k".into() }), "streaming::meta::missing"),
        (
            StreamError::from(MetaError::Type {
                key: "k".into(),
                expected: "float",
                actual: "integer",
            }),
            "streaming::meta::type_mismatch",
        ),
        (
            StreamError::from(MetaError::Range {
                key: "k".into(),
                index: Some(3),
                value: -1,
                target: "u8",
            }),
            "streaming::meta::out_of_range",
        ),
        (
            StreamError::from(MetaError::Utf8 { key: "k".into(), index: None }),
            "streaming::meta::invalid_utf8",
        ),
        (
            StreamError::new(path.clone(), StreamErrorKind::UnknownMagic { found: *b"PK\x03\x04" }),
            "streaming::open::unknown_magic",
        ),
        (
            StreamError::new(path.clone(), StreamErrorKind::TooShort { len: 3 }),
            "streaming::open::too_short",
        ),
        (
            StreamError::at("/tmp/x", StreamErrorKind::Spool { offset: 0, source: io() }),
            "streaming::io::spool",
        ),
        (
            StreamError::from(SplitSetError::MissingShard {
                set: "m-00001-of-00003.gguf".into(),
                missing: Some("m-00002-of-00003.gguf".into()),
                split_no: 1,
                count: 3,
            }),
            "streaming::split::missing_shard",
        ),
        (
            StreamError::from(SplitSetError::NameMismatch {
                path: "m-00003-of-00003.gguf".into(),
                name_number: 3,
                name_count: 3,
                split_no: 1,
                count: 3,
            }),
            "streaming::split::name_mismatch",
        ),
        (
            StreamError::from(SplitSetError::BadName {
                path: "m.gguf".into(),
                split_no: 0,
                count: 3,
            }),
            "streaming::split::bad_name",
        ),
        (
            StreamError::from(SplitSetError::KeyMismatch {
                path: path.clone(),
                key: "split.count",
                expected: 3,
                found: 4,
                reference: None,
            }),
            "streaming::split::key_mismatch",
        ),
        (
            StreamError::from(SplitSetError::KeyType {
                path: path.clone(),
                key: "split.no",
                expected: "UINT16",
                found: "UINT32",
            }),
            "streaming::split::key_type",
        ),
        (
            StreamError::from(SplitSetError::KeyMissing { path: path.clone(), key: "split.no" }),
            "streaming::split::key_missing",
        ),
        (
            StreamError::from(SplitSetError::BadIndex {
                path: path.clone(),
                split_no: 3,
                count: 3,
            }),
            "streaming::split::bad_index",
        ),
        (
            StreamError::from(SplitSetError::DuplicateShard {
                first: None,
                second: None,
                split_no: 0,
            }),
            "streaming::split::duplicate_shard",
        ),
        (
            StreamError::from(SplitSetError::DuplicateTensor {
                tensor: "t".into(),
                first: path.clone(),
                second: Some("n.gguf".into()),
            }),
            "streaming::split::duplicate_tensor",
        ),
        (
            StreamError::from(SplitSetError::TensorCount {
                path: path.clone(),
                declared: 6,
                found: 5,
                shards: 3,
            }),
            "streaming::split::tensor_count",
        ),
        (
            StreamError::from(SplitSetError::NotASet { path: None, count: None }),
            "streaming::split::not_a_set",
        ),
        (
            StreamError::at("m.gguf", StreamErrorKind::NotAFile { kind: FileKind::Fifo }),
            "streaming::open::not_a_file",
        ),
        (
            StreamError::at(
                "m.gguf",
                StreamErrorKind::Locked { exclusive: true, wait: Duration::ZERO },
            ),
            "streaming::lock::busy",
        ),
        (
            StreamError::from(SplitSetError::EndianMismatch {
                path: Some("m-00002-of-00002.gguf".into()),
                expected: sipllm_gguf::Endian::Little,
                found: sipllm_gguf::Endian::Big,
                reference: Some("m-00001-of-00002.gguf".into()),
            }),
            "streaming::split::endian_mismatch",
        ),
        (
            StreamError::from(SplitSetError::TooManyFiles {
                set: "m-00001-of-04000.gguf".into(),
                count: 4000,
                limit: 1024,
            }),
            "streaming::split::too_many_files",
        ),
        (
            StreamError::from(TensorError::Dequant {
                tensor: "t".into(),
                source: sipllm_quants::DequantError::UnsupportedType { ty: GgmlType::I8 },
            }),
            "quants::dequant::unsupported_type",
        ),
        (
            StreamError::from(TensorError::ElementRange {
                tensor: "t".into(),
                start: 4,
                end: 2,
                count: 8,
                got: 0,
            }),
            "streaming::values::element_range",
        ),
        (
            StreamError::from(TensorError::Missing { name: "t".into() }),
            "streaming::tensor::missing",
        ),
    ];
    let mut codes: Vec<&str> = cases.iter().map(|(e, _)| e.code()).collect();
    for (err, code) in &cases {
        assert_eq!(err.code(), *code);
        assert!(!err.help().is_empty(), "{code}");
        assert!(!err.to_string().is_empty(), "{code}");
    }
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), cases.len(), "codes are distinct");

    assert_eq!(
        cases[2].0.located().to_string(),
        "m.gguf: unexpected end of file: 3 of the 8 bytes requested at offset 1 are missing \
         (the input ends at byte 6)"
    );
    assert_eq!(cases[2].0.offset(), Some(1));
    assert_eq!(cases[2].0.path(), Some(Path::new("m.gguf")));
    assert_eq!(
        cases[8].0.to_string(),
        "tensor \"t\" of 18,446,744,073,709,551,615 bytes does not fit in memory"
    );
    assert_eq!(cases[11].0.to_string(), "metadata key \"k\"[3]: value -1 does not fit u8");
    let split = |code: &str| {
        cases.iter().map(|(e, _)| e).find(|e| e.code() == code).map(|e| e.located().to_string())
    };
    assert_eq!(
        split("streaming::split::missing_shard").unwrap(),
        "m-00001-of-00003.gguf: shard 2 of 3 of the split set (split.no = 1) is missing: \
         m-00002-of-00003.gguf does not exist"
    );
    assert_eq!(
        split("streaming::split::duplicate_shard").unwrap(),
        "the source and the source are both shard 1 of the set (split.no = 0)"
    );
    assert_eq!(
        split("streaming::split::not_a_set").unwrap(),
        "not a split set: split.count is absent"
    );
    assert_eq!(
        split("streaming::split::key_mismatch").unwrap(),
        "m.gguf: split.count is 4 here, but 3 in the source"
    );
    assert_eq!(
        split("streaming::split::endian_mismatch").unwrap(),
        "m-00002-of-00002.gguf: the shard is big-endian, but m-00001-of-00002.gguf is \
         little-endian: one set has one byte order"
    );
    assert_eq!(
        split("streaming::lock::busy").unwrap(),
        "m.gguf: the file is in use by another process (an in-place edit, or a reader such \
         as sipllm verify): it was not changed"
    );
}

#[test]
fn unknown_magic_shows_hex_ascii_and_the_supported_magics() {
    let e = StreamError::new(
        Some("m.llmw".into()),
        StreamErrorKind::UnknownMagic { found: *b"PK\x03\x04" },
    );
    assert_eq!(
        e.located().to_string(),
        "m.llmw: not a model file: it starts with 50 4B 03 04 (\"PK\\x03\\x04\"), but a GGUF \
         file starts with \"GGUF\" (47 47 55 46) and a .llmw file with \"LLMW\" (4C 4C 4D 57)"
    );
    assert_eq!(e.offset(), Some(0));
    assert_eq!(e.path(), Some(Path::new("m.llmw")));
    let help = e.help();
    assert!(help.starts_with("supported formats: GGUF (\"GGUF\"), .llmw (\"LLMW\")."), "{help}");
    assert!(help.contains("zip archive"), "{help}");

    let lfs = StreamError::new(None, StreamErrorKind::UnknownMagic { found: *b"vers" });
    assert!(lfs.help().contains("git lfs pull"), "{}", lfs.help());
    let binary =
        StreamError::new(None, StreamErrorKind::UnknownMagic { found: [0, 0xff, b'"', b'\\'] });
    assert!(
        binary.to_string().starts_with(
            "not a model file: it starts with 00 FF 22 5C (\"\\x00\\xff\\\"\\\\\"), but"
        ),
        "{binary}"
    );
    assert!(binary.help().contains("not from the file name"), "{}", binary.help());
}

#[test]
fn too_short_says_how_long_the_file_is() {
    let e = StreamError::new(Some("empty.gguf".into()), StreamErrorKind::TooShort { len: 0 });
    assert_eq!(e.to_string().strip_prefix("empty.gguf"), None, "the path is context");
    assert_eq!(
        e.located().to_string(),
        "empty.gguf: the file has 0 bytes: too short for a model file, which starts with a \
         4-byte magic (\"GGUF\" or \"LLMW\")"
    );
    assert_eq!(e.offset(), Some(0));
    let one = StreamError::new(None, StreamErrorKind::TooShort { len: 1 });
    assert!(one.to_string().starts_with("the file has 1 byte: "), "{one}");
    assert!(one.help().contains("cut off"));
}

#[test]
fn llmw_parse_errors_are_kept_intact() {
    let source = sipllm_llmw::parse(b"LLMW\x09\0\0\0\0\0\0\0\0\0\0\0").unwrap_err();
    let e = StreamError::parse_llmw(Some(Path::new("m.llmw")), source.clone());
    assert_eq!(e.code(), "llmw::header::unsupported_version");
    assert_eq!(e.code(), source.code());
    assert_eq!(e.help(), source.help());
    assert_eq!(e.offset(), Some(4));
    assert_eq!(e.path(), Some(Path::new("m.llmw")));
    assert_eq!(e.llmw_error(), Some(&source));
    assert_eq!(e.parse_error(), None);
    assert!(e.is_parse());
    assert_eq!(e.to_string(), source.to_string());
    assert_eq!(e.located().to_string(), format!("m.llmw: {source}"));
    let chained = std::error::Error::source(&e).map(|s| s.to_string());
    assert_eq!(chained, Some(source.to_string()));
}

#[test]
fn read_errors_recover_the_short_read() {
    let short = ShortRead { offset: 100, len: 10, missing: 4 }.into_io();
    let e = StreamError::read(Some(Path::new("f")), 100, 10, short);
    assert!(matches!(
        e.kind(),
        StreamErrorKind::UnexpectedEof { offset: 100, len: 10, missing: 4, .. }
    ));
    let other = io::Error::from(io::ErrorKind::UnexpectedEof);
    let e = StreamError::read(None, 5, 6, other);
    assert_eq!(e.code(), "streaming::io::read", "an EOF without a ShortRead stays an I/O error");
}
