//! Every error kind, reached from bytes.

use super::*;

/// A reach case: `bytes` under `profile` gives exactly this error.
fn reach(name: &str, bytes: Vec<u8>, e: Expect) -> Case {
    case(&format!("kind: {name}"), bytes).all(e)
}

fn one_tensor(t: Tensor) -> Vec<u8> {
    tensors_file(vec![t]).build()
}

fn with_limits(c: Case, f: impl FnOnce(&mut Limits)) -> Case {
    let mut limits = Limits::default();
    f(&mut limits);
    c.limits(limits)
}

/// Every error kind reached from bytes: (test name, profile, case). Each has its own `#[test]`
/// (`kind_tests!` below); the coverage check asserts that the two lists agree.
pub(super) fn reach_cases() -> Vec<(&'static str, Profile, Case)> {
    vec![
        (
            "kind_bad_magic",
            Profile::Strict,
            reach(
                "bad magic",
                GgufBuilder::new().magic(*b"GGML").build(),
                err(
                    ErrorKind::BadMagic { found: *b"GGML" },
                    "gguf::header::bad_magic",
                    0,
                    "header.magic",
                ),
            ),
        ),
        (
            "kind_unsupported_version",
            Profile::Strict,
            reach(
                "version 7",
                GgufBuilder::new().version(7).build(),
                err(
                    ErrorKind::UnsupportedVersion { version: 7 },
                    "gguf::header::unsupported_version",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_version_one_disabled",
            Profile::Strict,
            reach(
                "v1",
                v1_file(),
                err(
                    ErrorKind::VersionOneDisabled,
                    "gguf::header::v1_disabled",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_endian_mismatch",
            Profile::LlamaCpp,
            reach(
                "big-endian",
                GgufBuilder::new().endian(Endian::Big).build(),
                err(
                    ErrorKind::EndianMismatch { version: 0x0300_0000 },
                    "gguf::header::endian_mismatch",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_unexpected_eof",
            Profile::Strict,
            reach(
                "6 bytes",
                b"GGUF\x03\x00".to_vec(),
                err(
                    ErrorKind::UnexpectedEof { needed: 2 },
                    "gguf::input::unexpected_eof",
                    6,
                    "header.version",
                ),
            ),
        ),
        // The value's length field is at 37; its bytes would end at 45 + 100 > 64.
        (
            "kind_header_too_large",
            Profile::Strict,
            with_limits(
                reach(
                    "string past max_header_bytes",
                    GgufBuilder::new().kv("k", Value::str(&"v".repeat(100))).build(),
                    err(
                        ErrorKind::HeaderTooLarge { max: 64 },
                        "gguf::limits::header_too_large",
                        37,
                        format!("{} value", kv_path(0, "k")),
                    ),
                ),
                |l| l.max_header_bytes = 64,
            ),
        ),
        // The directory ends at 58; the padding would end at 64 > 60.
        (
            "kind_header_too_large_padding",
            Profile::Strict,
            with_limits(
                reach(
                    "padding past max_header_bytes",
                    one_tensor(tensor("t0", F32, &[4])),
                    err(
                        ErrorKind::HeaderTooLarge { max: 60 },
                        "gguf::limits::header_too_large",
                        58,
                        "padding",
                    ),
                ),
                |l| l.max_header_bytes = 60,
            ),
        ),
        (
            "kind_too_many_kvs",
            Profile::Strict,
            reach(
                "2^20 + 1 pairs",
                GgufBuilder::new().kv_count(MAX_COUNT + 1).build(),
                err(
                    ErrorKind::TooManyKvs { count: MAX_COUNT + 1, max: MAX_COUNT },
                    "gguf::limits::too_many_kvs",
                    16,
                    "header.kv_count",
                ),
            ),
        ),
        (
            "kind_too_many_tensors",
            Profile::Strict,
            reach(
                "2^20 + 1 tensors",
                GgufBuilder::new().tensor_count(MAX_COUNT + 1).build(),
                err(
                    ErrorKind::TooManyTensors { count: MAX_COUNT + 1, max: MAX_COUNT },
                    "gguf::limits::too_many_tensors",
                    8,
                    "header.tensor_count",
                ),
            ),
        ),
        (
            "kind_string_too_long",
            Profile::Strict,
            with_limits(
                reach(
                    "5-byte key, limit 4",
                    GgufBuilder::new().kv("hello", Value::Uint8(0)).build(),
                    err(
                        ErrorKind::StringTooLong { len: 5, max: 4 },
                        "gguf::limits::string_too_long",
                        HEADER,
                        "metadata[0] key",
                    ),
                ),
                |l| l.max_string_len = 4,
            ),
        ),
        (
            "kind_array_too_long",
            Profile::Strict,
            with_limits(
                reach(
                    "3 elements, limit 2",
                    GgufBuilder::new().kv("a", Value::Array(0, vec![Value::Uint8(0); 3])).build(),
                    err(
                        ErrorKind::ArrayTooLong { len: 3, max: 2 },
                        "gguf::limits::array_too_long",
                        41,
                        format!("{} value count", kv_path(0, "a")),
                    ),
                ),
                |l| l.max_array_len = 2,
            ),
        ),
        (
            "kind_nesting_too_deep",
            Profile::Strict,
            with_limits(
                reach(
                    "depth 2, limit 1",
                    GgufBuilder::new().kv("a", nested(2)).build(),
                    err(
                        ErrorKind::NestingTooDeep { max: 1 },
                        "gguf::limits::nesting_too_deep",
                        49,
                        format!("{}[0]", kv_path(0, "a")),
                    ),
                ),
                |l| l.max_depth = 1,
            ),
        ),
        (
            "kind_empty_key",
            Profile::Strict,
            reach(
                "empty key",
                GgufBuilder::new().kv("", Value::Uint8(0)).build(),
                err(ErrorKind::EmptyKey, "gguf::metadata::empty_key", 32, r#"metadata[0] "" key"#),
            ),
        ),
        (
            "kind_invalid_utf8_key",
            Profile::Strict,
            reach(
                "key \\xC3(",
                GgufBuilder::new().kv_bytes(b"\xC3(", Value::Uint8(0)).build(),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::Key, valid_up_to: 0 },
                    "gguf::metadata::invalid_utf8_key",
                    32,
                    "metadata[0] \"\u{fffd}(\" key",
                ),
            ),
        ),
        // Element 1 of a string array: payload at 49, element 0 is 8 + 2 bytes, element 1's bytes
        // at 59 + 8.
        (
            "kind_invalid_utf8_value",
            Profile::Strict,
            reach(
                "string element ab\\xFF",
                GgufBuilder::new()
                    .kv(
                        "a",
                        Value::Array(8, vec![Value::str("ok"), Value::String(b"ab\xFF".to_vec())]),
                    )
                    .build(),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: 2 },
                    "gguf::metadata::invalid_utf8_value",
                    67,
                    format!("{}[1]", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_invalid_utf8_tensor_name",
            Profile::Strict,
            reach(
                "tensor name \\xFF",
                one_tensor(Tensor { name: vec![0xFF], ..tensor("", F32, &[4]) }),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::TensorName, valid_up_to: 0 },
                    "gguf::tensor::invalid_utf8_name",
                    32,
                    "tensor[0] \"\u{fffd}\" name",
                ),
            ),
        ),
        (
            "kind_duplicate_key",
            Profile::Strict,
            reach(
                "a, b, a",
                build_kvs(&[
                    ("a", Value::Uint8(0)),
                    ("b", Value::Uint8(0)),
                    ("a", Value::Uint8(0)),
                ])
                .build(),
                err(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    24 + 14 + 14 + 8,
                    format!("{} key", kv_path(2, "a")),
                ),
            ),
        ),
        (
            "kind_unknown_value_type",
            Profile::Strict,
            reach(
                "type 13",
                GgufBuilder::new().kv("a", Value::Raw { type_code: 13, bytes: vec![] }).build(),
                err(
                    ErrorKind::UnknownValueType { code: 13 },
                    "gguf::metadata::unknown_value_type",
                    33,
                    format!("{} type", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_nested_array",
            Profile::LlamaCpp,
            reach(
                "array of arrays",
                GgufBuilder::new().kv("a", nested(2)).build(),
                err(
                    ErrorKind::NestedArray,
                    "gguf::metadata::nested_array",
                    37,
                    format!("{} value elem_type", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_invalid_bool",
            Profile::Strict,
            reach(
                "bool 2",
                GgufBuilder::new().kv("a", Value::Raw { type_code: 7, bytes: vec![2] }).build(),
                err(
                    ErrorKind::InvalidBool { value: 2 },
                    "gguf::metadata::invalid_bool",
                    37,
                    format!("{} value", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_alignment_type",
            Profile::Strict,
            reach(
                "alignment as string",
                GgufBuilder::new().kv("general.alignment", Value::str("32")).build(),
                err(
                    ErrorKind::AlignmentType { found: ValueType::String },
                    "gguf::metadata::alignment_type",
                    49,
                    format!("{} type", kv_path(0, "general.alignment")),
                ),
            ),
        ),
        (
            "kind_bad_alignment",
            Profile::Strict,
            reach(
                "alignment 3",
                GgufBuilder::new().kv("general.alignment", Value::Uint32(3)).build(),
                err(
                    ErrorKind::BadAlignment { alignment: 3 },
                    "gguf::metadata::bad_alignment",
                    53,
                    format!("{} value", kv_path(0, "general.alignment")),
                ),
            ),
        ),
        (
            "kind_name_too_long",
            Profile::Strict,
            reach(
                "100-byte name",
                one_tensor(tensor(&"x".repeat(100), F32, &[4])),
                err(
                    ErrorKind::NameTooLong { len: 100, max: 64 },
                    "gguf::tensor::name_too_long",
                    32,
                    format!("{} name", tensor_path(0, &"x".repeat(100))),
                ),
            ),
        ),
        (
            "kind_nul_in_key",
            Profile::Strict,
            reach(
                "key a\\0b",
                GgufBuilder::new().kv("a\0b", Value::Uint8(0)).build(),
                err(
                    ErrorKind::NulInKey,
                    "gguf::metadata::nul_in_key",
                    32,
                    format!("{} key", kv_path(0, "a\0b")),
                ),
            ),
        ),
        (
            "kind_nul_in_name",
            Profile::Strict,
            reach(
                "name a\\0b",
                one_tensor(tensor("a\0b", F32, &[4])),
                err(
                    ErrorKind::NulInName,
                    "gguf::tensor::nul_in_name",
                    32,
                    format!("{} name", tensor_path(0, "a\0b")),
                ),
            ),
        ),
        (
            "kind_duplicate_tensor",
            Profile::Strict,
            reach(
                "t0, t0",
                tensors_file(vec![tensor("t0", F32, &[4]), tensor("t0", F32, &[4])]).build(),
                err(
                    ErrorKind::DuplicateTensor { first: 0 },
                    "gguf::tensor::duplicate_name",
                    24 + 34 + 8,
                    format!("{} name", tensor_path(1, "t0")),
                ),
            ),
        ),
        (
            "kind_too_many_dims",
            Profile::Strict,
            reach(
                "n_dims 8",
                one_tensor(tensor("t0", F32, &[1; 8])),
                err(
                    ErrorKind::TooManyDims { n_dims: 8, max: 4 },
                    "gguf::tensor::too_many_dims",
                    34,
                    format!("{} n_dims", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_zero_dim",
            Profile::Strict,
            reach(
                "[0]",
                one_tensor(tensor("t0", F32, &[0])),
                err(
                    ErrorKind::ZeroDim,
                    "gguf::tensor::zero_dim",
                    38,
                    format!("{} ne[0]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_dim_too_large",
            Profile::LlamaCpp,
            reach(
                "[1, 2^63]",
                header_padded(&tensors_file(vec![tensor("t0", I8, &[1, 1 << 63])])),
                err(
                    ErrorKind::DimTooLarge { value: 1 << 63 },
                    "gguf::tensor::dim_too_large",
                    46,
                    format!("{} ne[1]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_element_count_overflow",
            Profile::Strict,
            reach(
                "[2^32, 2^32, 2]",
                one_tensor(tensor("t0", I8, &[1 << 32, 1 << 32, 2])),
                err(
                    ErrorKind::ElementCountOverflow,
                    "gguf::tensor::element_count_overflow",
                    38,
                    format!("{} ne", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_byte_size_overflow",
            Profile::Strict,
            reach(
                "F32 [2^63]",
                one_tensor(tensor("t0", F32, &[1 << 63])),
                err(
                    ErrorKind::ByteSizeOverflow,
                    "gguf::tensor::byte_size_overflow",
                    38,
                    format!("{} ne", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_unknown_ggml_type",
            Profile::Strict,
            reach(
                "type 1000",
                one_tensor(tensor("t0", 1000, &[4])),
                err(
                    ErrorKind::UnknownGgmlType { code: 1000 },
                    "gguf::tensor::unknown_type",
                    46,
                    format!("{} ggml_type", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_removed_ggml_type",
            Profile::Strict,
            reach(
                "type 5",
                one_tensor(tensor("t0", 5, &[32])),
                err(
                    ErrorKind::RemovedGgmlType { code: 5, name: "Q4_3" },
                    "gguf::tensor::removed_type",
                    46,
                    format!("{} ggml_type", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_not_block_multiple",
            Profile::Strict,
            reach(
                "Q4_K [255]",
                one_tensor(tensor("t0", Q4_K, &[255])),
                err(
                    ErrorKind::NotBlockMultiple { ne0: 255, block_size: 256, ty: GgmlType::Q4_K },
                    "gguf::tensor::not_block_multiple",
                    38,
                    format!("{} ne[0]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_misaligned_offset",
            Profile::Strict,
            reach(
                "offset 8",
                one_tensor(Tensor { offset: Some(8), ..tensor("t0", F32, &[4]) }),
                err(
                    ErrorKind::MisalignedOffset { offset: 8, alignment: 32 },
                    "gguf::layout::misaligned",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_non_contiguous_offset",
            Profile::LlamaCpp,
            reach(
                "offset 64",
                one_tensor(Tensor { offset: Some(64), ..tensor("t0", F32, &[4]) }),
                err(
                    ErrorKind::NonContiguousOffset { offset: 64, expected: 0 },
                    "gguf::layout::not_contiguous",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_tensor_overlap",
            Profile::Strict,
            reach(
                "t1 inside t0",
                tensors_file(vec![
                    tensor("t0", F32, &[16]),
                    Tensor { offset: Some(32), ..tensor("t1", F32, &[4]) },
                ])
                .build(),
                err(
                    ErrorKind::TensorOverlap { other: 0 },
                    "gguf::layout::overlap",
                    84,
                    format!("{} offset", tensor_path(1, "t1")),
                ),
            ),
        ),
        (
            "kind_tensor_out_of_bounds",
            Profile::Strict,
            reach(
                "no data",
                header_padded(&tensors_file(vec![tensor("t0", F32, &[4])])),
                err(
                    ErrorKind::TensorOutOfBounds { end: 80, file_size: 64 },
                    "gguf::layout::out_of_bounds",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_offset_overflow",
            Profile::Strict,
            reach(
                "offset 2^64 - 32",
                header_padded(&tensors_file(vec![Tensor {
                    offset: Some(0u64.wrapping_sub(32)),
                    ..tensor("t0", F32, &[16])
                }])),
                err(
                    ErrorKind::OffsetOverflow,
                    "gguf::layout::offset_overflow",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
    ]
}

fn check_reach(name: &str) {
    let (_, profile, c) = reach_cases().into_iter().find(|(n, ..)| *n == name).unwrap();
    if let Err(msg) = c.check(profile) {
        panic!("{}: {msg}", c.name);
    }
}

/// One `#[test]` per entry of [`reach_cases`], and their names as `KIND_TESTS`.
macro_rules! kind_tests {
    ($($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_reach(stringify!($test));
            }
        )*

        const KIND_TESTS: &[&str] = &[$(stringify!($test)),*];
    };
}

kind_tests!(
    kind_bad_magic,
    kind_unsupported_version,
    kind_version_one_disabled,
    kind_endian_mismatch,
    kind_unexpected_eof,
    kind_header_too_large,
    kind_header_too_large_padding,
    kind_too_many_kvs,
    kind_too_many_tensors,
    kind_string_too_long,
    kind_array_too_long,
    kind_nesting_too_deep,
    kind_empty_key,
    kind_invalid_utf8_key,
    kind_invalid_utf8_value,
    kind_invalid_utf8_tensor_name,
    kind_duplicate_key,
    kind_unknown_value_type,
    kind_nested_array,
    kind_invalid_bool,
    kind_alignment_type,
    kind_bad_alignment,
    kind_name_too_long,
    kind_nul_in_key,
    kind_nul_in_name,
    kind_duplicate_tensor,
    kind_too_many_dims,
    kind_zero_dim,
    kind_dim_too_large,
    kind_element_count_overflow,
    kind_byte_size_overflow,
    kind_unknown_ggml_type,
    kind_removed_ggml_type,
    kind_not_block_multiple,
    kind_misaligned_offset,
    kind_non_contiguous_offset,
    kind_tensor_overlap,
    kind_tensor_out_of_bounds,
    kind_offset_overflow,
);

#[test]
fn kind_misuse() {
    let misuse = |reason| ErrorKind::Misuse { reason };
    // Decoding again after an error.
    let bytes = GgufBuilder::new().magic(*b"GGML").build();
    let mut d = Decoder::new(ParseOptions::default());
    assert_eq!(d.decode(&bytes).unwrap_err().code(), "gguf::header::bad_magic");
    let e = d.decode(&bytes).unwrap_err();
    assert_eq!(
        (e.kind(), e.code(), e.offset()),
        (&misuse("decode called after an error"), "gguf::decoder::misuse", 0)
    );
    // A buffer that shrank.
    let bytes = GgufBuilder::new().kv("a", Value::Uint8(1)).build();
    let mut d = Decoder::new(ParseOptions::default());
    d.decode(&bytes).unwrap();
    let e = d.decode(&bytes[..10]).unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("the buffer shrank between calls"), HEADER));
    // Finishing before Done.
    let e = Decoder::new(ParseOptions::default()).finish().unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("finish called before Done"), 0));
    // Bytes shorter than the directory.
    let dir = sipllm_gguf::decode(&bytes, &ParseOptions::default()).unwrap();
    let e = Gguf::from_parts(&bytes[..30], dir).unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("bytes shorter than the directory"), 30));
}

/// Every `ErrorKind` variant. The enum is `#[non_exhaustive]`, so the compiler cannot check
/// this list: **a new variant must be added here**, and reached from bytes in [`reach_cases`].
fn every_error_kind() -> Vec<ErrorKind> {
    use ErrorKind::*;
    vec![
        BadMagic { found: *b"FUGG" },
        UnsupportedVersion { version: 0 },
        VersionOneDisabled,
        EndianMismatch { version: 0x0300_0000 },
        UnexpectedEof { needed: 1 },
        HeaderTooLarge { max: 1 },
        TooManyKvs { count: 2, max: 1 },
        TooManyTensors { count: 2, max: 1 },
        StringTooLong { len: 2, max: 1 },
        ArrayTooLong { len: 2, max: 1 },
        NestingTooDeep { max: 1 },
        EmptyKey,
        InvalidUtf8 { field: StrField::Key, valid_up_to: 0 },
        InvalidUtf8 { field: StrField::Value, valid_up_to: 0 },
        InvalidUtf8 { field: StrField::TensorName, valid_up_to: 0 },
        DuplicateKey { first: 0 },
        UnknownValueType { code: 13 },
        NestedArray,
        InvalidBool { value: 2 },
        AlignmentType { found: ValueType::Int32 },
        BadAlignment { alignment: 3 },
        NameTooLong { len: 65, max: 64 },
        NulInKey,
        NulInName,
        DuplicateTensor { first: 0 },
        TooManyDims { n_dims: 5, max: 4 },
        ZeroDim,
        DimTooLarge { value: 1 << 63 },
        ElementCountOverflow,
        ByteSizeOverflow,
        UnknownGgmlType { code: 43 },
        RemovedGgmlType { code: 4, name: "Q4_2" },
        NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 },
        MisalignedOffset { offset: 8, alignment: 32 },
        NonContiguousOffset { offset: 64, expected: 0 },
        TensorOverlap { other: 0 },
        TensorOutOfBounds { end: 2, file_size: 1 },
        OffsetOverflow,
        Misuse { reason: "test" },
    ]
}

/// Every `WarningKind` variant; as for [`every_error_kind`], **a new variant must be added
/// here** and reached in [`warn_cases`].
fn every_warning_kind() -> Vec<WarningKind> {
    use WarningKind::*;
    vec![
        Tolerated(ErrorKind::DuplicateKey { first: 0 }),
        KeyNotAscii,
        KeyNotSnakeCase,
        KeyTooLong { len: 65_536 },
        NameRejectedByLlamaCpp,
        EmptyTensorName,
        InvisibleInName { ch: '\u{e0041}', at: 13 },
        TensorGap { gap: 32 },
        OutOfOrder,
        NonZeroPadding,
        Suppressed { count: 1 },
    ]
}

fn is_code(code: &str) -> bool {
    let parts: Vec<&str> = code.split("::").collect();
    parts.len() == 3
        && parts[0] == "gguf"
        && parts[1..].iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

#[test]
fn codes_are_well_formed_unique_and_every_kind_is_reached() {
    for bad in ["gguf::a", "gguf::a::B", "gguf::a::b::c", "ggml::a::b", "gguf::::b", "gguf::a-b::c"]
    {
        assert!(!is_code(bad), "{bad}");
    }
    let errors = every_error_kind();
    let warnings = every_warning_kind();
    let mut seen = BTreeSet::new();
    for k in &errors {
        assert!(is_code(k.code()), "{k:?}: {}", k.code());
        assert!(seen.insert(k.code()), "{k:?}: code {} used twice", k.code());
        assert!(!k.help().is_empty() && !k.to_string().is_empty(), "{k:?}");
    }
    for w in &warnings {
        match w {
            WarningKind::Tolerated(k) => {
                assert_eq!(w.code(), k.code(), "a tolerated error keeps its code")
            }
            _ => {
                assert!(is_code(w.code()), "{w:?}: {}", w.code());
                assert!(seen.insert(w.code()), "{w:?}: code {} used twice", w.code());
            }
        }
        assert!(!w.help().is_empty() && !w.to_string().is_empty(), "{w:?}");
    }
    // Every error code is reached from bytes by a `kind_*` test (misuse: by API calls).
    let reach = reach_cases();
    let names: BTreeSet<&str> = reach.iter().map(|(n, ..)| *n).collect();
    assert_eq!(names, KIND_TESTS.iter().copied().collect(), "kind_tests! and reach_cases()");
    let mut reached: BTreeSet<&str> = reach
        .iter()
        .filter_map(|(_, p, c)| match &c.expect[PROFILES.iter().position(|x| x == p).unwrap()] {
            Some(Expect::Err { code, .. }) => Some(*code),
            _ => None,
        })
        .collect();
    reached.insert("gguf::decoder::misuse");
    let all: BTreeSet<&str> = errors.iter().map(ErrorKind::code).collect();
    assert_eq!(
        all.difference(&reached).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "error codes not reached"
    );
    let warn = warn_cases();
    let names: BTreeSet<&str> = warn.iter().map(|(n, ..)| *n).collect();
    assert_eq!(names, WARN_TESTS.iter().copied().collect(), "warn_tests! and warn_cases()");
    let mut reached: BTreeSet<&str> = warn.iter().map(|(.., (_, code, _))| *code).collect();
    // Reached by `warning_suppressed` (it needs more than one warning).
    reached.insert("gguf::limits::warnings_suppressed");
    let all: BTreeSet<&str> = warnings.iter().map(WarningKind::code).collect();
    assert_eq!(
        all.difference(&reached).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "warning codes not reached"
    );
}

type Expected = (WarningKind, &'static str, u64);

/// Every warning kind reached from bytes: (test name, profile, file, the one warning expected).
/// Each has its own `#[test]` (`warn_tests!` below).
fn warn_cases() -> Vec<(&'static str, Profile, Vec<u8>, Expected)> {
    vec![
        (
            "warning_tolerated",
            Profile::Lenient,
            GgufBuilder::new().kv("a", Value::Uint8(0)).kv("a", Value::Uint8(0)).build(),
            tolerated(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                24 + 14 + 8,
            ),
        ),
        (
            "warning_key_not_ascii",
            Profile::Strict,
            GgufBuilder::new().kv("caf\u{e9}", Value::Uint8(0)).build(),
            (WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32),
        ),
        (
            "warning_key_not_snake_case",
            Profile::Strict,
            GgufBuilder::new().kv("General.Name", Value::Uint8(0)).build(),
            (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 32),
        ),
        (
            "warning_key_too_long",
            Profile::Strict,
            GgufBuilder::new().kv(&"k".repeat(65_536), Value::Uint8(0)).build(),
            (WarningKind::KeyTooLong { len: 65_536 }, "gguf::metadata::key_too_long", 32),
        ),
        (
            "warning_name_rejected_by_llama_cpp",
            Profile::Strict,
            one_tensor(tensor(&"n".repeat(64), F32, &[4])),
            (WarningKind::NameRejectedByLlamaCpp, "gguf::tensor::name_64_bytes", 32),
        ),
        (
            "warning_empty_tensor_name",
            Profile::Strict,
            one_tensor(tensor("", F32, &[4])),
            (WarningKind::EmptyTensorName, "gguf::tensor::empty_name", 32),
        ),
        (
            // Prints like `output.weight`: a tag character (issue 26, item 9).
            "warning_invisible_in_name",
            Profile::Strict,
            one_tensor(tensor("output.weight\u{e0041}", F32, &[4])),
            (
                WarningKind::InvisibleInName { ch: '\u{e0041}', at: 13 },
                "gguf::tensor::invisible_char",
                32,
            ),
        ),
        (
            "warning_tensor_gap",
            Profile::Strict,
            tensors_file(vec![
                tensor("t0", F32, &[4]),
                Tensor { offset: Some(64), ..tensor("t1", F32, &[4]) },
            ])
            .build(),
            (WarningKind::TensorGap { gap: 32 }, "gguf::layout::gap", 84),
        ),
        (
            "warning_out_of_order",
            Profile::Strict,
            tensors_file(vec![
                Tensor { offset: Some(32), ..tensor("t0", F32, &[4]) },
                Tensor { offset: Some(0), ..tensor("t1", F32, &[4]) },
            ])
            .build(),
            (WarningKind::OutOfOrder, "gguf::layout::out_of_order", 84),
        ),
        (
            "warning_non_zero_padding",
            Profile::Strict,
            tensors_file(vec![tensor("t0", F32, &[4])]).pad_byte(0xFF).build(),
            (WarningKind::NonZeroPadding, "gguf::layout::nonzero_padding", 58),
        ),
    ]
}

/// A lenient parse records at most `MAX_WARNINGS` warnings, then one that counts the rest.
#[test]
fn warning_suppressed() {
    let extra = 10;
    let mut b = GgufBuilder::new();
    for _ in 0..sipllm_gguf::decoder::MAX_WARNINGS + extra {
        // Each empty key is an empty_key warning and (after the first) a duplicate_key one.
        b = b.kv("", Value::Uint8(0));
    }
    let bytes = b.build();
    let opts = ParseOptions::new(Profile::Lenient).with_file_size(Some(bytes.len() as u64));
    let gguf = sipllm_gguf::parse_with(&bytes[..], &opts).unwrap();
    let warnings = gguf.warnings();
    assert_eq!(warnings.len(), sipllm_gguf::decoder::MAX_WARNINGS + 1);
    let last = warnings.last().unwrap();
    let total = 2 * (sipllm_gguf::decoder::MAX_WARNINGS + extra) - 1;
    let count = (total - sipllm_gguf::decoder::MAX_WARNINGS) as u64;
    assert_eq!(*last.kind(), WarningKind::Suppressed { count });
    assert_eq!(last.code(), "gguf::limits::warnings_suppressed");
    assert_eq!(last.offset(), bytes.len() as u64, "at the end of the directory");
}

fn check_warning(name: &str) {
    let (_, profile, bytes, warning) = warn_cases().into_iter().find(|(n, ..)| *n == name).unwrap();
    let c = case(name, bytes).all(loads_warning(vec![warning], |_| {}));
    if let Err(msg) = c.check(profile) {
        panic!("{name}: {msg}");
    }
}

/// One `#[test]` per entry of [`warn_cases`], and their names as `WARN_TESTS`.
macro_rules! warn_tests {
    ($($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_warning(stringify!($test));
            }
        )*

        const WARN_TESTS: &[&str] = &[$(stringify!($test)),*];
    };
}

warn_tests!(
    warning_tolerated,
    warning_key_not_ascii,
    warning_key_not_snake_case,
    warning_key_too_long,
    warning_name_rejected_by_llama_cpp,
    warning_empty_tensor_name,
    warning_invisible_in_name,
    warning_tensor_gap,
    warning_out_of_order,
    warning_non_zero_padding,
);
