//! Test-gguf.cpp: key/value pairs.

use super::*;

/// One pair of every value type (arrays of several element types, no nested array).
pub(super) fn every_type_kvs() -> Vec<(&'static str, Value)> {
    vec![
        ("general.architecture", Value::str("llama")),
        ("t.u8", Value::Uint8(200)),
        ("t.i8", Value::Int8(-100)),
        ("t.u16", Value::Uint16(65_000)),
        ("t.i16", Value::Int16(-30_000)),
        ("t.u32", Value::Uint32(4_000_000_000)),
        ("t.i32", Value::Int32(-2_000_000_000)),
        ("t.f32", Value::Float32(1.5)),
        ("t.bool", Value::Bool(true)),
        ("t.str", Value::str("h\u{e9}llo \u{65e5}\u{672c}")),
        ("t.empty_str", Value::str("")),
        ("t.u64", Value::Uint64(u64::MAX)),
        ("t.i64", Value::Int64(i64::MIN)),
        ("t.f64", Value::Float64(-0.25)),
        ("t.arr_u32", Value::Array(4, vec![Value::Uint32(1), Value::Uint32(2), Value::Uint32(3)])),
        ("t.arr_i16", Value::Array(3, vec![Value::Int16(-1), Value::Int16(7)])),
        ("t.arr_bool", Value::Array(7, vec![Value::Bool(true), Value::Bool(false)])),
        ("t.arr_str", Value::strings(["a", "", "\u{65e5}\u{672c}"])),
        ("t.arr_empty", Value::Array(12, vec![])),
        ("t.arr_f64", Value::Array(12, vec![Value::Float64(0.5), Value::Float64(-2.0)])),
    ]
}

/// A pair holding a nested array (arrays of `UINT8`, `STRING` and `ARRAY` of `INT32`).
pub(super) fn nested_kv() -> (&'static str, Value) {
    (
        "t.nested",
        Value::Array(
            9,
            vec![
                Value::Array(0, vec![Value::Uint8(1), Value::Uint8(2), Value::Uint8(3)]),
                Value::strings(["x", "yz"]),
                Value::Array(9, vec![Value::Array(5, vec![Value::Int32(-1)])]),
                Value::Array(8, vec![]),
            ],
        ),
    )
}

pub(super) fn build_kvs(kvs: &[(&str, Value)]) -> GgufBuilder {
    kvs.iter().fold(GgufBuilder::new(), |b, (k, v)| b.kv(k, v.clone()))
}

/// Every pair of `kvs` reads back as written (through `get`, i.e. the key index).
pub(super) fn values_round_trip(
    kvs: Vec<(&'static str, Value)>,
) -> impl Fn(&Gguf<&[u8]>) + 'static {
    move |g| {
        assert_eq!(g.kv_len(), kvs.len());
        for (k, v) in &kvs {
            let got = g.get(k).unwrap_or_else(|| panic!("{k} missing"));
            assert_eq!(&Value::from_meta(&got), v, "{k}");
        }
    }
}

pub(super) fn kv_cases() -> Vec<Case> {
    let k0 = kv_at(HEADER, "my_key_0");
    let align = kv_at(HEADER, "general.alignment");
    // Two empty-key UINT32 pairs of 8 + 4 + 4 bytes; two "my_key_0" pairs of 8 + 8 + 4 + 4.
    let (empty0, empty1) = (kv_at(HEADER, "").key, kv_at(HEADER + 16, "").key);
    let dup1 = kv_at(HEADER + 24, "my_key_0").key;
    let mut cases = vec![
        case(
            "KV_BAD_KEY_SIZE",
            raw_kvs(1, &[&u64::MAX.to_le_bytes(), b"my_key_0", &4u32.to_le_bytes(), &[0; 4]]),
        )
        .all(err(
            ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
            "gguf::limits::string_too_long",
            HEADER,
            "metadata[0] key",
        )),
        case("KV_EMPTY_KEY", {
            GgufBuilder::new().kv("", Value::Uint32(1)).kv("", Value::Uint32(2)).build()
        })
        .strict_llama(err(
            ErrorKind::EmptyKey,
            "gguf::metadata::empty_key",
            empty0,
            r#"metadata[0] "" key"#,
        ))
        .lenient(loads_warning(
            vec![
                tolerated(ErrorKind::EmptyKey, "gguf::metadata::empty_key", empty0),
                tolerated(ErrorKind::EmptyKey, "gguf::metadata::empty_key", empty1),
                tolerated(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    empty1,
                ),
            ],
            |g| {
                assert_eq!(g.kv_len(), 2);
                assert_eq!(g.get_u64(""), Some(2), "last wins");
            },
        )),
        case(
            "KV_BAD_TYPE",
            GgufBuilder::new()
                .kv("my_key_0", Value::Raw { type_code: 13, bytes: vec![0; 4] })
                .build(),
        )
        .all(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.ty,
            format!("{} type", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (string length 2^64-1)",
            GgufBuilder::new()
                .kv("my_key_0", Value::StringWithLen { declared: u64::MAX, bytes: b"abc".to_vec() })
                .build(),
        )
        .all(err(
            ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
            "gguf::limits::string_too_long",
            k0.value,
            format!("{} value", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (array count 2^40)",
            GgufBuilder::new()
                .kv(
                    "my_key_0",
                    Value::ArrayWithLen {
                        elem_type: 4,
                        declared: 1 << 40,
                        elems: vec![Value::Uint32(1)],
                    },
                )
                .build(),
        )
        .all(err(
            ErrorKind::ArrayTooLong { len: 1 << 40, max: MAX_ARRAY },
            "gguf::limits::array_too_long",
            k0.value + 4,
            format!("{} value count", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (60 MiB string, 3 bytes present)",
            GgufBuilder::new()
                .kv("my_key_0", Value::StringWithLen { declared: 60 * MIB, bytes: b"abc".to_vec() })
                .build(),
        )
        .all(err(
            ErrorKind::UnexpectedEof { needed: 60 * MIB - 3 },
            "gguf::input::unexpected_eof",
            k0.value + 8 + 3,
            kv_path(0, "my_key_0"),
        )),
        case("KV_DUPLICATE_KEY", {
            GgufBuilder::new()
                .kv("my_key_0", Value::Uint32(1))
                .kv("my_key_0", Value::Uint32(2))
                .build()
        })
        .strict_llama(err(
            ErrorKind::DuplicateKey { first: 0 },
            "gguf::metadata::duplicate_key",
            dup1,
            format!("{} key", kv_path(1, "my_key_0")),
        ))
        .lenient(loads_warning(
            vec![tolerated(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                dup1,
            )],
            |g| {
                assert_eq!(g.kv_len(), 2);
                assert_eq!(g.get_u64("my_key_0"), Some(2), "last wins");
                assert_eq!(g.get_entry("my_key_0").unwrap().index, 1);
            },
        )),
    ];
    for (name, value, kind) in [
        ("KV_BAD_ALIGN", Value::Uint32(13), ErrorKind::BadAlignment { alignment: 13 }),
        ("C8 alignment 0", Value::Uint32(0), ErrorKind::BadAlignment { alignment: 0 }),
        (
            "C8 alignment 48 (not a power of two)",
            Value::Uint32(48),
            ErrorKind::BadAlignment { alignment: 48 },
        ),
    ] {
        cases.push(
            case(name, GgufBuilder::new().kv("general.alignment", value).build())
                .strict_llama(err(
                    kind.clone(),
                    "gguf::metadata::bad_alignment",
                    align.value,
                    format!("{} value", kv_path(0, "general.alignment")),
                ))
                .lenient(loads_warning(
                    vec![tolerated(kind, "gguf::metadata::bad_alignment", align.value)],
                    |g| assert_eq!(g.alignment(), 32),
                )),
        );
    }
    for (name, value, found) in [
        ("KV_WRONG_TYPE_ALIGN (INT32)", Value::Int32(32), ValueType::Int32),
        ("C5 general.alignment as UINT64", Value::Uint64(32), ValueType::Uint64),
        (
            "C5 general.alignment as ARRAY",
            Value::Array(4, vec![Value::Uint32(32)]),
            ValueType::Array,
        ),
    ] {
        let kind = ErrorKind::AlignmentType { found };
        cases.push(
            case(name, GgufBuilder::new().kv("general.alignment", value.clone()).build())
                .strict_llama(err(
                    kind.clone(),
                    "gguf::metadata::alignment_type",
                    align.ty,
                    format!("{} type", kv_path(0, "general.alignment")),
                ))
                .lenient(loads_warning(
                    vec![tolerated(kind, "gguf::metadata::alignment_type", align.ty)],
                    move |g| {
                        assert_eq!(g.alignment(), 32, "the default is used");
                        let got = g.get("general.alignment").unwrap();
                        assert_eq!(Value::from_meta(&got), value);
                    },
                )),
        );
    }

    // KV_SUCCESS: every type loads and reads back, under every profile.
    let kvs = every_type_kvs();
    cases
        .push(case("KV_SUCCESS", build_kvs(&kvs).build()).all(loads_clean(values_round_trip(kvs))));

    // KV_SUCCESS writes random bytes into bools: llama.cpp loads them as "non-zero is true".
    let kvs = vec![
        ("my_key_0", Value::Uint32(5)),
        ("my_key_1", Value::Raw { type_code: 7, bytes: vec![0xA7] }),
        (
            "my_key_2",
            Value::Array(
                7,
                [1u8, 0, 0x80, 2].map(|b| Value::Raw { type_code: 7, bytes: vec![b] }).to_vec(),
            ),
        ),
    ];
    let at = kv_starts(&kvs);
    let (bool_at, arr) = (kv_at(at[1], "my_key_1").value, kv_at(at[2], "my_key_2"));
    // The array's payload follows its element type and count; 0x80 is element 2.
    let bad_elem = arr.value + 12 + 2;
    let bools_true = |g: &Gguf<&[u8]>| {
        assert_eq!(g.get("my_key_1").unwrap().as_bool(), Some(true));
        let a = g.get_array("my_key_2").unwrap();
        assert_eq!(a.to_vec::<bool>(), Some(vec![true, false, true, true]));
    };
    cases.push(
        case("KV_SUCCESS (random bool bytes)", build_kvs(&kvs).build())
            .strict(err(
                ErrorKind::InvalidBool { value: 0xA7 },
                "gguf::metadata::invalid_bool",
                bool_at,
                format!("{} value", kv_path(1, "my_key_1")),
            ))
            .llama(loads_clean(bools_true))
            .lenient(loads_warning(
                vec![
                    tolerated(
                        ErrorKind::InvalidBool { value: 0xA7 },
                        "gguf::metadata::invalid_bool",
                        bool_at,
                    ),
                    // One warning per array: the 0x02 after it is not reported.
                    tolerated(
                        ErrorKind::InvalidBool { value: 0x80 },
                        "gguf::metadata::invalid_bool",
                        bad_elem,
                    ),
                ],
                bools_true,
            )),
    );
    cases.push(
        case("KV_SUCCESS (random bool bytes in an array)", build_kvs(&kvs[2..]).build())
            // Alone, the array pair starts at 24: payload at 24 + 8 + 8 + 4 + 4 + 8 = 56.
            .strict(err(
                ErrorKind::InvalidBool { value: 0x80 },
                "gguf::metadata::invalid_bool",
                58,
                format!("{}[2]", kv_path(0, "my_key_2")),
            ))
            .llama(loads_clean(|_| {}))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::InvalidBool { value: 0x80 },
                    "gguf::metadata::invalid_bool",
                    58,
                )],
                |_| {},
            )),
    );
    cases
}
