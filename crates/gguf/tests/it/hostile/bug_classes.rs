//! Peers.md §4: bug classes.

use super::*;

fn class_cases() -> Vec<Case> {
    let t0 = |n| tensor_at(HEADER, "t0", n);
    let t0_path = tensor_path(0, "t0");
    let a = kv_at(HEADER, "a");
    let k0 = kv_at(HEADER, "my_key_0");
    let mut cases = Vec::new();

    // 1. count x size overflow.
    for (label, ty, dims) in [
        ("C1 [2^32, 2^32] F32 wraps to 0 elements", F32, vec![1u64 << 32, 1 << 32]),
        ("C1 [256, 2^56] Q4_K wraps to 0 elements", Q4_K, vec![256, 1 << 56]),
    ] {
        cases.push(case(label, tensors_file(vec![tensor("t0", ty, &dims)]).build()).all(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        )));
    }
    cases.push(
        case("C1 byte size overflow: F16 [2^62, 2]", {
            tensors_file(vec![tensor("t0", F16, &[1 << 62, 2])]).build()
        })
        .strict_lenient(err(
            ErrorKind::ByteSizeOverflow,
            "gguf::tensor::byte_size_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        ))
        // 2^63 elements: past INT64_MAX, which ggml checks first.
        .llama(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        )),
    );
    // I64 with 2^61 - 1 elements is 2^64 - 8 bytes: GGML_PAD wraps it to 0. ggml (d99724f2)
    // accepts this file with no_alloc: a deliberate difference (D4, docs/parser.md).
    let b = tensors_file(vec![tensor("t0", I64, &[(1 << 61) - 1])]);
    cases.push(case("C1 GGML_PAD wrap: I64 [2^61 - 1]", header_padded(&b)).all(err(
        ErrorKind::OffsetOverflow,
        "gguf::layout::offset_overflow",
        t0(1).offset,
        format!("{t0_path} offset"),
    )));
    // Running sum: 2^63 (tensor 0, padded) + 2^63 (tensor 1, padded) = 2^64, while tensor 1's
    // own offset + size (2^64 - 8) still fits.
    let b = tensors_file(vec![
        Tensor { offset: Some(0), ..tensor("t0", I8, &[(1 << 63) - 1]) },
        Tensor { offset: Some(1 << 63), ..tensor("t1", I8, &[(1 << 63) - 8]) },
    ]);
    // ggml refuses tensor 0 already: its check `INT64_MAX / ne[1] <= ne[0]` holds for
    // 2^63 - 1 elements.
    cases.push(
        case("C1 running-sum offset overflow", header_padded(&b))
            .header_only()
            .strict_lenient(err(
                ErrorKind::OffsetOverflow,
                "gguf::layout::offset_overflow",
                84,
                format!("{} offset", tensor_path(1, "t1")),
            ))
            .llama(err(
                ErrorKind::ElementCountOverflow,
                "gguf::tensor::element_count_overflow",
                t0(1).ne,
                format!("{t0_path} ne"),
            )),
    );

    // 2. unbounded allocation from declared counts and lengths.
    let tiny = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 0, declared: 1 << 62, elems: vec![] })
        .build();
    assert_eq!(tiny.len(), 49);
    cases.push(case("C2 49-byte file declaring 2^62 array elements", tiny.clone()).all(err(
        ErrorKind::ArrayTooLong { len: 1 << 62, max: MAX_ARRAY },
        "gguf::limits::array_too_long",
        a.value + 4,
        format!("{} value count", kv_path(0, "a")),
    )));
    cases.push(
        case("C2 49-byte file declaring 2^62 array elements, no limits", tiny)
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: 1 << 62 },
                "gguf::input::unexpected_eof",
                49,
                format!("{}[0]", kv_path(0, "a")),
            )),
    );
    let many = GgufBuilder::new().tensor_count(1 << 63).build();
    cases.push(case("C2 2^63 tensors", many.clone()).all(err(
        ErrorKind::TooManyTensors { count: 1 << 63, max: MAX_COUNT },
        "gguf::limits::too_many_tensors",
        8,
        "header.tensor_count",
    )));
    // Indexes are u32: that is the limit in force whatever Limits says.
    cases.push(
        case("C2 2^63 tensors, no limits", many).limits(sipllm_testkit::unlimited_limits()).all(
            err(
                ErrorKind::TooManyTensors { count: 1 << 63, max: u32::MAX.into() },
                "gguf::limits::too_many_tensors",
                8,
                "header.tensor_count",
            ),
        ),
    );
    let many = GgufBuilder::new().kv_count(u64::MAX).build();
    cases.push(
        case("C2 2^64-1 pairs, no limits", many).limits(sipllm_testkit::unlimited_limits()).all(
            err(
                ErrorKind::TooManyKvs { count: u64::MAX, max: u32::MAX.into() },
                "gguf::limits::too_many_kvs",
                16,
                "header.kv_count",
            ),
        ),
    );
    let kv = Value::Array(
        8,
        vec![Value::str("ok"), Value::StringWithLen { declared: u64::MAX, bytes: vec![] }],
    );
    cases.push(
        // The payload is at 49: element 0 is 8 + 2 bytes, element 1's length at 59.
        case("C2 string length 2^64-1 in an array", GgufBuilder::new().kv("a", kv).build()).all(
            err(
                ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
                "gguf::limits::string_too_long",
                59,
                format!("{}[1]", kv_path(0, "a")),
            ),
        ),
    );
    let key_len = 0xFFFF_FFFF_FFFFu64;
    let huge_key = raw_kvs(1, &[&key_len.to_le_bytes(), b"abc"]);
    cases.push(case("C2 key length 0xFFFFFFFFFFFF", huge_key.clone()).all(err(
        ErrorKind::StringTooLong { len: key_len, max: MAX_STRING },
        "gguf::limits::string_too_long",
        HEADER,
        "metadata[0] key",
    )));
    cases.push(
        case("C2 key length 0xFFFFFFFFFFFF, no limits", huge_key)
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: key_len - 3 },
                "gguf::input::unexpected_eof",
                HEADER + 8 + 3,
                "metadata[0]",
            )),
    );

    // 3. fixed-size arrays with file-controlled counts: n_dims (TENSORS_BAD_N_DIMS); 4 is fine.
    cases.push(
        case(
            "C3 n_dims 4 is the maximum",
            tensors_file(vec![tensor("t0", F32, &[2, 2, 2, 2])]).build(),
        )
        .all(loads_clean(|g| {
            assert_eq!(g.tensor("t0").unwrap().info.shape().as_slice(), &[2, 2, 2, 2]);
            assert_eq!(g.tensor("t0").unwrap().info.nbytes(), Some(64));
        })),
    );

    // 4. offsets not checked against the file.
    let b = tensors_file(vec![tensor("t0", F32, &[8])]);
    let oob = ErrorKind::TensorOutOfBounds { end: 64 + 32, file_size: 64 };
    cases.push(
        case("C4 tensor data past EOF", header_padded(&b))
            .strict_llama(err(
                oob.clone(),
                "gguf::layout::out_of_bounds",
                t0(1).offset,
                format!("{t0_path} offset"),
            ))
            .lenient(loads_warning(
                vec![tolerated(oob, "gguf::layout::out_of_bounds", t0(1).offset)],
                |_| {},
            )),
    );
    let b = tensors_file(vec![Tensor {
        offset: Some(0u64.wrapping_sub(64)),
        ..tensor("t0", F32, &[4])
    }]);
    cases.push(
        // The relative end (2^64 - 48) fits; the absolute start (64 + 2^64 - 64) does not.
        case("C4 data offset + offset overflows", header_padded(&b))
            .strict_lenient(err(
                ErrorKind::OffsetOverflow,
                "gguf::layout::offset_overflow",
                t0(1).offset,
                format!("{t0_path} offset"),
            ))
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 0u64.wrapping_sub(64), expected: 0 },
                "gguf::layout::not_contiguous",
                t0(1).offset,
                format!("{t0_path} offset"),
            )),
    );

    // 5. type confusion: general.alignment (kv_cases); a value read as another type.
    let kvs = vec![
        (
            "tokenizer.ggml.scores",
            Value::Array(1, vec![Value::Int8(1), Value::Int8(-2), Value::Int8(3)]),
        ),
        ("llama.block_count", Value::Int32(-1)),
    ];
    cases.push(case("C5 declared vs assumed type", build_kvs(&kvs).build()).all(loads_clean(
        |g| {
            let scores = g.get_array("tokenizer.ggml.scores").unwrap();
            assert_eq!(scores.values::<f32>().map(|_| ()), None, "INT8 is not read as f32");
            assert_eq!(scores.to_vec::<u8>(), None);
            assert_eq!(scores.to_vec::<i8>(), Some(vec![1, -2, 3]));
            assert_eq!(g.get("tokenizer.ggml.scores").unwrap().as_f64(), None);
            assert_eq!(g.get_u64("llama.block_count"), None, "-1 is not a count");
            assert_eq!(g.get("llama.block_count").unwrap().as_i64(), Some(-1));
            assert_eq!(g.get_str("llama.block_count"), None);
            assert_eq!(g.get_array("llama.block_count").map(|_| ()), None);
        },
    )));

    // 6. unvalidated enum ids (ggml types: tensor_cases).
    cases.push(
        case("C6 value type -1", {
            GgufBuilder::new()
                .kv("my_key_0", Value::Raw { type_code: u32::MAX, bytes: vec![] })
                .build()
        })
        .all(err(
            ErrorKind::UnknownValueType { code: u32::MAX },
            "gguf::metadata::unknown_value_type",
            k0.ty,
            format!("{} type", kv_path(0, "my_key_0")),
        )),
    );
    cases.push(
        case("C6 array element type 13", {
            let v = Value::ArrayWithLen { elem_type: 13, declared: 1, elems: vec![] };
            GgufBuilder::new().kv("my_key_0", v).build()
        })
        .all(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.value,
            format!("{} value elem_type", kv_path(0, "my_key_0")),
        )),
    );
    cases.push(
        case("C6 nested array element type 13", {
            let inner = Value::ArrayWithLen { elem_type: 13, declared: 0, elems: vec![] };
            GgufBuilder::new().kv("my_key_0", Value::Array(9, vec![inner])).build()
        })
        // The inner array's header follows the outer element type and count.
        .strict_lenient(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.value + 12,
            format!("{}[0]", kv_path(0, "my_key_0")),
        ))
        .llama(err(
            ErrorKind::NestedArray,
            "gguf::metadata::nested_array",
            k0.value,
            format!("{} value elem_type", kv_path(0, "my_key_0")),
        )),
    );
    // v1 has value types 0-9 only; its header is 16 bytes and its string lengths 4 bytes.
    cases.push(
        case(
            "C6 value type 10 in v1",
            GgufBuilder::new().version(1).kv("k", Value::Uint64(1)).build(),
        )
        .opts(|o| o.with_v1(true))
        .strict_lenient(err(
            ErrorKind::UnknownValueType { code: 10 },
            "gguf::metadata::unknown_value_type",
            16 + 4 + 1,
            format!("{} type", kv_path(0, "k")),
        ))
        .llama(err(
            ErrorKind::VersionOneDisabled,
            "gguf::header::v1_disabled",
            4,
            "header.version",
        )),
    );

    // 7. unbounded recursion. The outer array's element type is at 37, its count at 41, then
    // each level's 12-byte header: level 2 at 49, ..., level 9 at 49 + 7 * 12 = 133.
    let nested_error = || {
        err(
            ErrorKind::NestingTooDeep { max: 8 },
            "gguf::limits::nesting_too_deep",
            133,
            format!("{}{}", kv_path(0, "a"), "[0]".repeat(8)),
        )
    };
    let llama_nested = || {
        err(
            ErrorKind::NestedArray,
            "gguf::metadata::nested_array",
            a.value,
            format!("{} value elem_type", kv_path(0, "a")),
        )
    };
    for (label, depth) in
        [("C7 arrays nested 5000 deep", 5000), ("C7 one past Limits::max_depth", 9)]
    {
        cases.push(
            case(label, GgufBuilder::new().kv("a", nested(depth)).build())
                .strict_lenient(nested_error())
                .llama(llama_nested()),
        );
    }
    let depth_is = |depth: usize| {
        loads_clean(move |g| {
            // Walk down iteratively (a recursive walk would itself be the bug under test).
            let mut view = g.get_array("a").unwrap();
            for level in 1..depth {
                assert_eq!((view.elem_type(), view.len()), (ValueType::Array, 1), "level {level}");
                view = view.get(0).unwrap().as_array().unwrap();
            }
            assert_eq!(view.to_vec::<u8>(), Some(vec![7]));
        })
    };
    cases.push(
        case("C7 exactly Limits::max_depth", GgufBuilder::new().kv("a", nested(8)).build())
            .strict_lenient(depth_is(8))
            .llama(llama_nested()),
    );
    // Raising the limit is the caller's choice; the accessors must not recurse per level then
    // either (they overflowed the stack here). Walking all 5000 levels costs O(depth^2) (each
    // level's view is delimited by walking it), so only the top levels are descended.
    let deep = Limits { max_depth: 5000, ..Limits::default() };
    let deep_loads = || {
        loads_clean(|g| {
            let mut view = g.get_array("a").unwrap();
            for level in 0..3 {
                // Below this level: (5000 - level - 1) 12-byte headers and the byte 7.
                let payload = view.payload();
                assert_eq!(payload.len(), (5000 - level - 1) * 12 + 1, "level {level}");
                assert_eq!(payload.last(), Some(&7));
                view = view.iter().next().unwrap().as_array().unwrap();
            }
        })
    };
    cases.push(
        case(
            "C7 arrays nested 5000 deep, max_depth 5000",
            GgufBuilder::new().kv("a", nested(5000)).build(),
        )
        .limits(deep)
        .strict_lenient(deep_loads())
        .llama(llama_nested()),
    );

    // 8. arithmetic edge cases (alignment 0 and 48: kv_cases).
    for (label, dims, j) in [
        ("C8 zero in ne[1] (ggml divided by it)", [4u64, 0, 3, 5], 1),
        ("C8 zero in ne[2]", [4, 1, 0, 2], 2),
        ("C8 zero in ne[3]", [4, 1, 1, 0], 3),
    ] {
        let at = t0(4).ne + 8 * j;
        cases.push(
            case(label, tensors_file(vec![tensor("t0", F32, &dims)]).build())
                .strict(err(
                    ErrorKind::ZeroDim,
                    "gguf::tensor::zero_dim",
                    at,
                    format!("{t0_path} ne[{j}]"),
                ))
                .llama(loads_clean(|g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), Some(0))))
                .lenient(loads_warning(
                    vec![tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", at)],
                    |g| assert_eq!(g.tensor("t0").unwrap().info.element_count(), 0),
                )),
        );
    }

    // 9. work amplification: a declared count with little payload fails at the end of the
    // input, after work proportional to the bytes present (see also the decoder-call counts in
    // `declared_counts_cost_nothing_before_their_bytes_arrive`).
    let sixteen: Vec<Value> = (0..16).map(Value::Uint8).collect();
    let b = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 0, declared: 1 << 40, elems: sixteen });
    cases.push(case("C9 u8 array of 2^40 with 16 bytes", b.build()).all(err(
        ErrorKind::ArrayTooLong { len: 1 << 40, max: MAX_ARRAY },
        "gguf::limits::array_too_long",
        a.value + 4,
        format!("{} value count", kv_path(0, "a")),
    )));
    cases.push(
        case("C9 u8 array of 2^40 with 16 bytes, no limits", b.build())
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: (1 << 40) - 16 },
                "gguf::input::unexpected_eof",
                49 + 16,
                format!("{}[16]", kv_path(0, "a")),
            )),
    );
    let three = vec![Value::str("x"), Value::str("yz"), Value::str("")];
    // 2^25 strings need at least 2^25 length fields (256 MiB): more than the header limit
    // allows, so the count fails at once (the count field is at 41), before any byte of the
    // payload is asked for.
    let v = Value::ArrayWithLen { elem_type: 8, declared: 1 << 25, elems: three.clone() };
    cases.push(
        case(
            "C9 string array of 2^25 (under the limit) with 3 strings",
            GgufBuilder::new().kv("a", v).build(),
        )
        .all(err(
            ErrorKind::HeaderTooLarge { max: Limits::default().max_header_bytes },
            "gguf::limits::header_too_large",
            41,
            format!("{} value count", kv_path(0, "a")),
        )),
    );
    // Without limits, the walk stops where the bytes end.
    let v = Value::ArrayWithLen { elem_type: 8, declared: 1 << 40, elems: three.clone() };
    // The payload is at 49: 9 + 10 + 8 bytes, then element 3's length is missing.
    cases.push(
        case(
            "C9 string array of 2^40 with 3 strings, no limits",
            GgufBuilder::new().kv("a", v).build(),
        )
        .limits(sipllm_testkit::unlimited_limits())
        .all(err(
            ErrorKind::UnexpectedEof { needed: 8 },
            "gguf::input::unexpected_eof",
            49 + 27,
            format!("{}[3]", kv_path(0, "a")),
        )),
    );
    cases
}

/// Every leaf of a value, walked iteratively, exercising every array accessor on the way.
fn walk(v: MetaValue<'_>) -> Vec<MetaValue<'_>> {
    let mut leaves = Vec::new();
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        let Some(a) = v.as_array() else {
            leaves.push(v);
            continue;
        };
        let elems: Vec<_> = a.iter().collect();
        assert_eq!(elems.len() as u64, a.len());
        assert_eq!(a.get(a.len()), None);
        for (i, e) in elems.iter().enumerate() {
            assert_eq!(a.get(i as u64).as_ref(), Some(e));
        }
        assert_eq!(
            a.strings().map(|s| s.count() as u64),
            (a.elem_type() == ValueType::String).then_some(a.len())
        );
        let fixed = [
            a.values::<u8>().map(|v| v.count()),
            a.values::<i8>().map(|v| v.count()),
            a.values::<u16>().map(|v| v.count()),
            a.values::<i16>().map(|v| v.count()),
            a.values::<u32>().map(|v| v.count()),
            a.values::<i32>().map(|v| v.count()),
            a.values::<f32>().map(|v| v.count()),
            a.values::<bool>().map(|v| v.count()),
            a.values::<u64>().map(|v| v.count()),
            a.values::<i64>().map(|v| v.count()),
            a.values::<f64>().map(|v| v.count()),
        ];
        let typed: Vec<usize> = fixed.iter().flatten().copied().collect();
        let expected: Vec<usize> =
            if a.elem_type().fixed_size().is_some() { vec![a.len() as usize] } else { vec![] };
        assert_eq!(typed, expected, "typed views of {:?}", a.elem_type());
        todo.extend(elems.into_iter().rev());
    }
    leaves
}

/// A file with one of almost every problem the lenient profile tolerates.
fn weird_file() -> Vec<u8> {
    let nested = Value::Array(
        9,
        vec![
            Value::Array(8, vec![Value::str("a"), Value::String(vec![0xFF])]),
            Value::Array(12, vec![]),
        ],
    );
    GgufBuilder::new()
        .kv("dup", Value::Uint32(1))
        .kv("dup", Value::str("second"))
        .kv("bad.utf8", Value::String(vec![0xFF, 0xFE, b'a']))
        .kv_bytes(&[b'k', 0xC3], Value::Uint8(1))
        .kv(
            "bools",
            Value::Array(
                7,
                [2u8, 0, 1].map(|b| Value::Raw { type_code: 7, bytes: vec![b] }).to_vec(),
            ),
        )
        .kv("nested", nested)
        .kv("general.alignment", Value::Int32(8))
        .kv("empty_arr", Value::Array(8, vec![]))
        .tensor_info(tensor("weird\x01", 43, &[4]))
        .tensor_info(tensor("removed", 31, &[32]))
        .tensor_info(tensor("q8", Q8_0, &[33]))
        .tensor_info(tensor("zero", F32, &[0, 3]))
        .tensor_info(Tensor { name: vec![0xFF, b'x'], ..tensor("", F32, &[4]) })
        .tensor_info(tensor("dup_t", F32, &[2]))
        .tensor_info(tensor("dup_t", F32, &[2]))
        .build()
}

fn walk_weird_file(g: &Gguf<&[u8]>) {
    let codes: Vec<&str> = g.warnings().iter().map(Warning::code).collect();
    assert_eq!(
        codes,
        [
            "gguf::metadata::duplicate_key",
            "gguf::metadata::invalid_utf8_value",
            "gguf::metadata::invalid_utf8_key",
            "gguf::metadata::key_not_ascii",
            "gguf::metadata::invalid_bool",
            "gguf::metadata::invalid_utf8_value",
            "gguf::metadata::alignment_type",
            "gguf::tensor::unknown_type",
            "gguf::tensor::removed_type",
            "gguf::tensor::not_block_multiple",
            "gguf::tensor::zero_dim",
            "gguf::tensor::invalid_utf8_name",
            "gguf::tensor::duplicate_name",
        ]
    );
    for w in g.warnings() {
        assert!(!w.help().is_empty() && !w.message().is_empty());
    }
    // Every value, through every accessor.
    let leaves: usize = g.metadata().map(|e| walk(e.value).len()).sum();
    assert_eq!(leaves, 10);
    assert_eq!(g.metadata().len(), 8);
    assert_eq!(g.get_str("dup"), Some("second"), "last wins");
    let bad = g.get("bad.utf8").unwrap();
    assert_eq!(bad.as_str(), None);
    assert_eq!(bad.as_meta_str().unwrap().as_bytes(), [0xFF, 0xFE, b'a']);
    assert_eq!(bad.as_meta_str().unwrap().to_string_lossy(), "\u{fffd}\u{fffd}a");
    let e3 = g.metadata().nth(3).unwrap();
    assert_eq!((e3.key.as_bytes(), e3.key.as_str()), (&[b'k', 0xC3][..], None));
    assert_eq!(e3.value, MetaValue::Uint8(1));
    assert_eq!(g.get_array("bools").unwrap().to_vec::<bool>(), Some(vec![true, false, true]));
    let inner: Vec<_> =
        g.get_array("nested").unwrap().iter().map(|v| v.as_array().unwrap()).collect();
    let strings: Vec<&[u8]> = inner[0].strings().unwrap().map(|s| s.as_bytes()).collect();
    assert_eq!(strings, [&b"a"[..], &[0xFF][..]]);
    assert_eq!((inner[1].elem_type(), inner[1].len()), (ValueType::Float64, 0));
    assert_eq!(g.alignment(), 32);
    assert_eq!(g.get("general.alignment"), Some(MetaValue::Int32(8)));
    assert_eq!(g.get_array("empty_arr").unwrap().strings().unwrap().count(), 0);
    // Every tensor, through every accessor.
    let got: Vec<_> = g
        .tensors()
        .map(|t| {
            (
                t.info.ggml_type().name(),
                t.info.nbytes(),
                t.info.element_count(),
                t.info.shape().len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("unknown", None, 4, 1),
            ("Q4_0_4_4", None, 32, 1),
            ("Q8_0", None, 33, 1),
            ("F32", Some(0), 0, 2),
            ("F32", Some(16), 4, 1),
            ("F32", Some(8), 2, 1),
            ("F32", Some(8), 2, 1),
        ]
    );
    for t in g.tensors() {
        assert!(!t.info.ggml_type().to_string().is_empty());
        assert!(t.info.abs_offset() >= g.data_offset());
    }
    assert_eq!(g.tensor("weird\u{1}").unwrap().index, 0);
    assert_eq!(g.tensor("dup_t").unwrap().index, 6, "last wins");
    assert_eq!(g.tensors().nth(4).unwrap().name.as_bytes(), [0xFF, b'x']);
    assert_eq!(g.tensor("nope").map(|t| t.index), None);
    assert_eq!(g.get("nope"), None);
}

fn escape_and_differential_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // 10. asserts used as validation: the lenient profile reads everything, and every accessor
    // answers (without panicking) on what it read. "dup" pair 0 is 8 + 3 + 4 + 4 = 19 bytes:
    // pair 1's key is at 24 + 19 + 8 = 51.
    cases.push(
        case("C10 lenient file with every tolerated problem, every accessor", weird_file())
            .strict_llama(err(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                51,
                r#"metadata[1] "dup" key"#,
            ))
            .lenient(loads(walk_weird_file)),
    );

    // 11. terminal escapes and bidi controls in keys and names reach messages escaped.
    let esc = "a\x1b[2Jb\x07";
    cases.push(
        case("C11 escape sequences in a duplicate key", {
            GgufBuilder::new().kv(esc, Value::Uint8(1)).kv(esc, Value::Uint8(2)).build()
        })
        // Pair 0 is 8 + 7 + 4 + 1 = 20 bytes: pair 1's key is at 52.
        .strict_llama(err(
            ErrorKind::DuplicateKey { first: 0 },
            "gguf::metadata::duplicate_key",
            52,
            r#"metadata[1] "a\u{1b}[2Jb\u{7}" key"#,
        ))
        .lenient(loads_warning(
            vec![
                (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 32),
                tolerated(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    52,
                ),
                (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 52),
            ],
            |g| assert_eq!(g.get_u64(esc), Some(2)),
        )),
    );
    let name = "\x1b]0;pwned\x07\n";
    cases.push(
        case("C11 escape sequences in a duplicate tensor name", {
            tensors_file(vec![tensor(name, F32, &[4]), tensor(name, F32, &[4])]).build()
        })
        // Tensor 0 is 8 + 11 + 4 + 8 + 4 + 8 = 43 bytes: tensor 1's name is at 24 + 43 + 8.
        .strict_llama(err(
            ErrorKind::DuplicateTensor { first: 0 },
            "gguf::tensor::duplicate_name",
            75,
            r#"tensor[1] "\u{1b}]0;pwned\u{7}\n" name"#,
        ))
        .lenient(loads_warning(
            vec![tolerated(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                75,
            )],
            |_| {},
        )),
    );
    // "x", U+202E RIGHT-TO-LEFT OVERRIDE, "y", then an invalid byte.
    let key = b"x\xE2\x80\xAEy\xFF";
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::Key, valid_up_to: 5 };
    cases.push(
        case("C11 bidi override and invalid UTF-8 in a key", {
            GgufBuilder::new().kv_bytes(key, Value::Uint8(1)).build()
        })
        .strict(err(
            invalid.clone(),
            "gguf::metadata::invalid_utf8_key",
            32,
            "metadata[0] \"x\\u{202e}y\u{fffd}\" key",
        ))
        .llama(loads_warning(
            vec![(WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32)],
            |_| {},
        ))
        .lenient(loads_warning(
            vec![
                tolerated(invalid, "gguf::metadata::invalid_utf8_key", 32),
                (WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32),
            ],
            move |g| assert_eq!(g.metadata().next().unwrap().key.as_bytes(), key),
        )),
    );
    cases.push(
        case("C11 escape sequence as the magic", GgufBuilder::new().magic(*b"\x1b[2J").build())
            .all(err(
                ErrorKind::BadMagic { found: *b"\x1b[2J" },
                "gguf::header::bad_magic",
                0,
                "header.magic",
            )),
    );

    // 12. parser differentials: one file, three documented answers.
    let b = GgufBuilder::new()
        .endian(Endian::Big)
        .kv("general.name", Value::str("be"))
        .kv("n", Value::Uint32(7))
        .kv("xs", Value::Array(11, vec![Value::Int64(-2), Value::Int64(3)]))
        .tensor("t0", GgmlType::F32, &[4]);
    let big_endian_loads = || {
        loads_clean(|g| {
            assert_eq!((g.endian(), g.version()), (Endian::Big, 3));
            assert_eq!(g.get_str("general.name"), Some("be"));
            assert_eq!(g.get_u64("n"), Some(7));
            assert_eq!(g.get_array("xs").unwrap().to_vec::<i64>(), Some(vec![-2, 3]));
            assert_eq!(g.tensor("t0").unwrap().info.dims(), [4]);
        })
    };
    cases.push(
        case("C12 big-endian v3", b.build())
            .strict(big_endian_loads())
            .llama(err(
                ErrorKind::EndianMismatch { version: 0x0300_0000 },
                "gguf::header::endian_mismatch",
                4,
                "header.version",
            ))
            .lenient(big_endian_loads()),
    );
    let (k, v) = nested_kv();
    let nested_loads = || loads_clean(values_round_trip(vec![nested_kv()]));
    cases.push(
        case("C12 nested arrays", GgufBuilder::new().kv(k, v).build())
            .strict_lenient(nested_loads())
            .llama(err(
                ErrorKind::NestedArray,
                "gguf::metadata::nested_array",
                kv_at(HEADER, k).value,
                format!("{} value elem_type", kv_path(0, k)),
            )),
    );
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: 1 };
    let at = kv_at(HEADER, "k").value + 8;
    cases.push(
        case(
            "C12 invalid UTF-8 value",
            GgufBuilder::new().kv("k", Value::String(vec![b'a', 0xFF])).build(),
        )
        .strict(err(
            invalid.clone(),
            "gguf::metadata::invalid_utf8_value",
            at,
            format!("{} value", kv_path(0, "k")),
        ))
        .llama(loads_clean(|g| {
            assert_eq!(g.get("k").unwrap().as_meta_str().unwrap().as_bytes(), b"a\xFF")
        }))
        .lenient(loads_warning(
            vec![tolerated(invalid, "gguf::metadata::invalid_utf8_value", at)],
            |_| {},
        )),
    );
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::TensorName, valid_up_to: 1 };
    let t = Tensor { name: vec![b'a', 0xFF], ..tensor("", F32, &[4]) };
    cases.push(
        case("C12 invalid UTF-8 tensor name", tensors_file(vec![t]).build())
            .strict(err(
                invalid.clone(),
                "gguf::tensor::invalid_utf8_name",
                32,
                "tensor[0] \"a\u{fffd}\" name",
            ))
            .llama(loads_clean(|g| {
                assert_eq!(g.tensors().next().unwrap().name.as_bytes(), b"a\xFF")
            }))
            .lenient(loads_warning(
                vec![tolerated(invalid, "gguf::tensor::invalid_utf8_name", 32)],
                |_| {},
            )),
    );
    let name64 = "m".repeat(64);
    let at = tensor_at(HEADER, &name64, 1).name;
    let warned = || {
        loads_warning(
            vec![(WarningKind::NameRejectedByLlamaCpp, "gguf::tensor::name_64_bytes", at)],
            |_| {},
        )
    };
    cases.push(
        case("C12 tensor name of 64 bytes", tensors_file(vec![tensor(&name64, F32, &[4])]).build())
            .strict_lenient(warned())
            .llama(err(
                ErrorKind::NameTooLong { len: 64, max: 63 },
                "gguf::tensor::name_too_long",
                at,
                format!("{} name", tensor_path(0, &name64)),
            )),
    );

    // Layout: two 34-byte infos; tensor 0's offset field at 50, tensor 1's at 84.
    let t1_offset = format!("{} offset", tensor_path(1, "t1"));
    let two = |o0: u64, o1: u64, n0: u64| {
        tensors_file(vec![
            Tensor { offset: Some(o0), ..tensor("t0", F32, &[n0]) },
            Tensor { offset: Some(o1), ..tensor("t1", F32, &[4]) },
        ])
        .build()
    };
    let gap = || {
        loads_warning(vec![(WarningKind::TensorGap { gap: 32 }, "gguf::layout::gap", 84)], |_| {})
    };
    cases.push(case("C12 gap between tensors", two(0, 64, 4)).strict_lenient(gap()).llama(err(
        ErrorKind::NonContiguousOffset { offset: 64, expected: 32 },
        "gguf::layout::not_contiguous",
        84,
        t1_offset.clone(),
    )));
    let out_of_order =
        || loads_warning(vec![(WarningKind::OutOfOrder, "gguf::layout::out_of_order", 84)], |_| {});
    cases.push(
        case("C12 data out of directory order", two(32, 0, 4))
            .strict_lenient(out_of_order())
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 32, expected: 0 },
                "gguf::layout::not_contiguous",
                50,
                format!("{} offset", tensor_path(0, "t0")),
            )),
    );
    cases.push(
        case("C12 overlapping tensors", two(0, 0, 8))
            .strict(err(
                ErrorKind::TensorOverlap { other: 0 },
                "gguf::layout::overlap",
                84,
                t1_offset.clone(),
            ))
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 0, expected: 32 },
                "gguf::layout::not_contiguous",
                84,
                t1_offset,
            ))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::TensorOverlap { other: 0 }, "gguf::layout::overlap", 84)],
                |_| {},
            )),
    );
    let t0_ne0 = format!("{} ne[0]", tensor_path(0, "t0"));
    let kind = ErrorKind::NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 };
    let ne0 = tensor_at(HEADER, "t0", 1).ne;
    cases.push(
        case(
            "C12 row not a multiple of the block size",
            tensors_file(vec![tensor("t0", Q8_0, &[33])]).build(),
        )
        .strict_llama(err(kind.clone(), "gguf::tensor::not_block_multiple", ne0, t0_ne0))
        .lenient(loads_warning(
            vec![tolerated(kind, "gguf::tensor::not_block_multiple", ne0)],
            |g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), None),
        )),
    );
    // ggml cuts tensor names at their first NUL (ggml_set_name) and compares them with strcmp:
    // "a\0x" and "a\0y" are one name to llama.cpp. Tensor 0 is 8 + 3 + 4 + 8 + 4 + 8 = 35
    // bytes: tensor 1's name is at 24 + 35 + 8 = 67.
    let nul_names = tensors_file(vec![tensor("a\0x", F32, &[4]), tensor("a\0y", F32, &[4])]);
    // Strict refuses the NUL; lenient loads both, and says llama.cpp would cut the names there.
    let nul = |at| tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", at);
    cases.push(
        case("C12 tensor names equal up to a NUL", nul_names.build())
            .strict(err(
                ErrorKind::NulInName,
                "gguf::tensor::nul_in_name",
                32,
                r#"tensor[0] "a\0x" name"#,
            ))
            .lenient(loads_warning(vec![nul(32), nul(67)], |g| {
                assert_eq!(g.tensor("a\0x").unwrap().index, 0);
                assert_eq!(g.tensor("a\0y").unwrap().index, 1);
                assert_eq!(g.tensor("a").map(|t| t.index), None);
            }))
            .llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                67,
                r#"tensor[1] "a\0y" name"#,
            )),
    );
    // Keys, by contrast, are std::strings compared whole when ggml looks for duplicates: these
    // are two keys to llama.cpp (it finds both under "a", the first first). Strict refuses the
    // NUL. Pair 0 is 8 + 3 + 4 + 1 = 16 bytes: pair 1's key is at 24 + 16 + 8 = 48.
    let nul_keys = GgufBuilder::new().kv("a\0x", Value::Uint8(1)).kv("a\0y", Value::Uint8(2));
    let nul_key = |at| tolerated(ErrorKind::NulInKey, "gguf::metadata::nul_in_key", at);
    let snake = |at| (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", at);
    cases.push(
        case("C12 keys equal up to a NUL", nul_keys.build())
            .strict(err(
                ErrorKind::NulInKey,
                "gguf::metadata::nul_in_key",
                32,
                r#"metadata[0] "a\0x" key"#,
            ))
            .llama(loads_warning(vec![nul_key(32), snake(32), nul_key(48), snake(48)], |g| {
                assert_eq!((g.get_u64("a\0x"), g.get_u64("a\0y")), (Some(1), Some(2)))
            }))
            .lenient(loads_warning(vec![nul_key(32), snake(32), nul_key(48), snake(48)], |_| {})),
    );
    // n_dims 0 is a scalar (ne = [1, 1, 1, 1]): one element is not a whole Q4_K block. There is
    // no ne[0] in the file, so the finding points at the empty dims (where the type field is).
    let kind = ErrorKind::NotBlockMultiple { ne0: 1, block_size: 256, ty: GgmlType::Q4_K };
    let ne = tensor_at(HEADER, "t0", 0).ne;
    cases.push(
        case("C12 scalar of a block type", tensors_file(vec![tensor("t0", Q4_K, &[])]).build())
            .strict_llama(err(
                kind.clone(),
                "gguf::tensor::not_block_multiple",
                ne,
                format!("{} ne", tensor_path(0, "t0")),
            ))
            .lenient(loads_warning(
                vec![tolerated(kind, "gguf::tensor::not_block_multiple", ne)],
                |g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), None),
            )),
    );
    cases.push(
        case("C12 empty tensor name", tensors_file(vec![tensor("", F32, &[4])]).build()).all(
            loads_warning(
                vec![(WarningKind::EmptyTensorName, "gguf::tensor::empty_name", 32)],
                |g| assert_eq!(g.tensor("").unwrap().info.nbytes(), Some(16)),
            ),
        ),
    );
    cases
}

/// The disagreements the differential against ggml's own reader found (ggml-org/ggml
/// d99724f2, `gguf_init_from_file` with `no_alloc`; `docs/parser.md`, "The llama-cpp profile
/// against ggml"), each with what ggml does: the llama-cpp profile now judges these bytes as
/// ggml does, and the strict profile refuses what ggml reads differently from other readers.
/// The last cases are the deliberate differences: ggml accepts, the file cannot be used, and
/// every profile refuses (D1–D3), and D5, a name ggml reads cut at a NUL byte.
fn ggml_oracle_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let nul_key = |at| tolerated(ErrorKind::NulInKey, "gguf::metadata::nul_in_key", at);
    let snake = |at| (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", at);
    let strict_nul_key = |key: &str| {
        err(
            ErrorKind::NulInKey,
            "gguf::metadata::nul_in_key",
            32,
            format!("{} key", kv_path(0, key)),
        )
    };

    // ggml finds `general.alignment` with strcmp: `general.alignment\0x` is the alignment key
    // there (gguf_get_alignment 64, data at 128). Header 24 + pair 8 + 19 + 4 + 4 = 59, then
    // tensor info 8 + 2 + 4 + 8 + 4 + 8 = 34: the directory ends at 93 (32-aligned: 96).
    let key = "general.alignment\0x";
    let b = GgufBuilder::new()
        .kv(key, Value::Uint32(64))
        .tensor_info(tensor("t0", F32, &[4]))
        .layout_alignment(64);
    cases.push(
        case("ggml: general.alignment\\0x is the alignment key", b.build())
            .strict(strict_nul_key(key))
            .llama(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!((g.alignment(), g.data_offset()), (64, 128));
                assert_eq!(g.tensor("t0").unwrap().info.abs_offset(), 128);
            }))
            .lenient(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!((g.alignment(), g.data_offset()), (32, 96));
            })),
    );
    // ... and so it must be a UINT32 there (ggml: "key 'general.alignment' must be of type
    // u32"). Its type field is at 24 + 8 + 19 = 51.
    let b = GgufBuilder::new().kv(key, Value::Bool(true));
    cases.push(
        case("ggml: general.alignment\\0x of type BOOL", b.build())
            .strict(strict_nul_key(key))
            .llama(err(
                ErrorKind::AlignmentType { found: ValueType::Bool },
                "gguf::metadata::alignment_type",
                51,
                format!("{} type", kv_path(0, key)),
            ))
            .lenient(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!(g.alignment(), 32)
            })),
    );
    // Only the first key equal to `general.alignment` as a C string counts in ggml: a later
    // exact `general.alignment` of type BOOL is not even checked. Pair 0 is 8 + 18 + 4 + 4 = 34
    // bytes: pair 1's key is at 66, its type at 66 + 17 = 83.
    let first = "general.alignment\0";
    let b = GgufBuilder::new()
        .kv(first, Value::Uint32(64))
        .kv("general.alignment", Value::Bool(true))
        .tensor_info(tensor("t0", F32, &[4]))
        .layout_alignment(64);
    cases.push(
        case("ggml: the first C-string general.alignment wins", b.build())
            .strict(strict_nul_key(first))
            .llama(loads_warning(vec![nul_key(32), snake(32)], |g| assert_eq!(g.alignment(), 64)))
            .lenient(loads_warning(
                vec![
                    nul_key(32),
                    snake(32),
                    tolerated(
                        ErrorKind::AlignmentType { found: ValueType::Bool },
                        "gguf::metadata::alignment_type",
                        83,
                    ),
                ],
                |g| assert_eq!(g.alignment(), 32),
            )),
    );
    // ggml_set_name keeps "ab" of "ab\0cd", and strcmp finds it equal to the next "ab".
    // Tensor 0 is 8 + 5 + 4 + 8 + 4 + 8 = 37 bytes: tensor 1's name is at 24 + 37 + 8 = 69.
    let b = tensors_file(vec![tensor("ab\0cd", F32, &[4]), tensor("ab", F32, &[4])]);
    cases.push(
        case("ggml: tensor ab\\0cd duplicates ab", b.build())
            .strict(err(
                ErrorKind::NulInName,
                "gguf::tensor::nul_in_name",
                32,
                format!("{} name", tensor_path(0, "ab\0cd")),
            ))
            .llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                69,
                format!("{} name", tensor_path(1, "ab")),
            ))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", 32)],
                |g| assert_eq!(g.tensor("ab").unwrap().index, 1),
            )),
    );
    // A zero dimension holds nothing, however large the others: ggml accepts [2^40, 2^40, 0]
    // (0 elements, 0 bytes). Its ne[2] is at 24 + 8 + 2 + 4 + 16 = 54.
    let b = tensors_file(vec![tensor("t0", F32, &[1 << 40, 1 << 40, 0])]);
    let empty = |g: &Gguf<&[u8]>| {
        let t = g.tensor("t0").unwrap().info;
        assert_eq!((t.element_count(), t.nbytes()), (0, Some(0)));
    };
    cases.push(
        case("ggml: a zero dimension beside an overflowing product", b.build())
            .strict(err(
                ErrorKind::ZeroDim,
                "gguf::tensor::zero_dim",
                54,
                format!("{} ne[2]", tensor_path(0, "t0")),
            ))
            .llama(loads_clean(empty))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", 54)],
                empty,
            )),
    );
    // No tensors: current ggml (since 2026-05) puts the data section right after the
    // directory, unpadded; gguf-py and older ggml pad it to the alignment. The directory ends
    // at 24 + 8 + 1 + 4 + 1 = 38.
    let b = GgufBuilder::new().kv("a", Value::Uint8(1));
    cases.push(
        case("ggml: no tensors, no padding", b.build_header())
            .llama(loads_clean(|g| assert_eq!(g.data_offset(), 38)))
            .strict_lenient(loads_clean(|g| assert_eq!(g.data_offset(), 64))),
    );

    // Deliberate differences: ggml accepts these with no_alloc, but their tensors cannot be
    // read; every profile refuses them.
    // D1: data past the end of the file. The directory ends at 58, the data starts at 64 and
    // t0's 16 bytes would end at 80; the file ends at 64. Its offset field is at 50.
    let b = tensors_file(vec![tensor("t0", F32, &[4])]);
    let kind = ErrorKind::TensorOutOfBounds { end: 80, file_size: 64 };
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    cases.push(
        case("ggml accepts (deliberate D1): data past the end of the file", header_padded(&b))
            .strict_llama(err(kind.clone(), "gguf::layout::out_of_bounds", 50, t0_offset))
            .lenient(loads_warning(
                vec![tolerated(kind, "gguf::layout::out_of_bounds", 50)],
                |_| {},
            )),
    );
    // D2: an int64 element count that wraps past ggml's check. I8 [3, 2^62 + 1] wraps to
    // -2^62 + 3: ggml checks the count only when that product is positive, and its byte-size
    // check passes for 1-byte elements. The count fits u64 and so does its byte size: strict
    // and lenient find the data past the end of the file; the llama-cpp profile refuses the
    // count, which ggml's int64_t cannot hold. Two dims: the directory ends at 66, the data
    // starts at 96; the dims are at 24 + 8 + 2 + 4 = 38, the offset at 58.
    let wrapped = |ty: u32, dims: &[u64]| {
        header_padded(&tensors_file(vec![Tensor { offset: Some(0), ..tensor("t0", ty, dims) }]))
    };
    let ne = |kind, code| err(kind, code, 38, format!("{} ne", tensor_path(0, "t0")));
    let count = || ne(ErrorKind::ElementCountOverflow, "gguf::tensor::element_count_overflow");
    let kind = ErrorKind::TensorOutOfBounds { end: 96 + 3 * ((1 << 62) + 1), file_size: 96 };
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    cases.push(
        case(
            "ggml accepts (deliberate D2): an element count wrapping to a negative int64",
            wrapped(I8, &[3, (1 << 62) + 1]),
        )
        .strict(err(kind.clone(), "gguf::layout::out_of_bounds", 58, t0_offset))
        .llama(count())
        .lenient(loads_warning(vec![tolerated(kind, "gguf::layout::out_of_bounds", 58)], |_| {})),
    );
    // D3: [2^32, 2^32] wraps to 0 elements, and ggml_nbytes to 0 bytes.
    cases.push(
        case(
            "ggml accepts (deliberate D3): a byte size wrapping to 0",
            wrapped(F32, &[1 << 32, 1 << 32]),
        )
        .all(count()),
    );
    // D5: ggml cuts a tensor name at its first NUL (the tensor `w`); the llama-cpp and
    // lenient profiles keep the name whole and say so, strict refuses it. Both accept here:
    // the difference is in the reading, which the differential compares whole.
    let keeps_whole = || {
        loads_warning(vec![tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", 32)], |g| {
            let t = g.tensor("w\0x").expect("the whole name");
            assert_eq!(t.name.as_bytes(), b"w\0x");
            assert!(g.tensor("w").is_none(), "the cut name is not a name here");
        })
    };
    cases.push(
        case(
            "ggml reads differently (deliberate D5): a tensor name kept past a NUL",
            tensors_file(vec![tensor("w\0x", F32, &[4])]).build(),
        )
        .strict(err(
            ErrorKind::NulInName,
            "gguf::tensor::nul_in_name",
            32,
            r#"tensor[0] "w\0x" name"#,
        ))
        .llama(keeps_whole())
        .lenient(keeps_whole()),
    );
    cases
}

pub(super) fn all_cases() -> Vec<Case> {
    let mut cases = header_cases();
    cases.extend(kv_cases());
    cases.extend(tensor_cases());
    cases.extend(data_cases());
    cases.extend(class_cases());
    cases.extend(escape_and_differential_cases());
    cases.extend(ggml_oracle_cases());
    cases
}

#[test]
fn corruption_table() {
    let cases = all_cases();
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "duplicate case name {}", c.name);
        for profile in PROFILES {
            if let Err(msg) = c.check(profile) {
                failures.push(format!("{} [{}]: {msg}", c.name, profile.name()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n{}",
        failures.len(),
        3 * cases.len(),
        failures.join("\n")
    );
}
