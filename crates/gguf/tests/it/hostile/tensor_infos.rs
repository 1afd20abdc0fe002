//! Test-gguf.cpp: tensor infos.

use super::*;

pub(super) const F32: u32 = 0;
pub(super) const F16: u32 = 1;
pub(super) const Q8_0: u32 = 8;
pub(super) const Q4_K: u32 = 12;
pub(super) const I8: u32 = 24;
pub(super) const I64: u32 = 27;
pub(super) const BF16: u32 = 30;

/// A file with the given tensors (no metadata), with data.
pub(super) fn tensors_file(tensors: Vec<Tensor>) -> GgufBuilder {
    tensors.into_iter().fold(GgufBuilder::new(), GgufBuilder::tensor_info)
}

pub(super) fn tensor_cases() -> Vec<Case> {
    let t0 = |n_dims| tensor_at(HEADER, "t0", n_dims);
    let t0_path = tensor_path(0, "t0");
    let mut cases = Vec::new();

    let long = "n".repeat(65);
    let long_at = tensor_at(HEADER, &long, 1);
    let long_path = format!("{} name", tensor_path(0, &long));
    let name = long.clone();
    cases.push(
        case("TENSORS_BAD_NAME_SIZE", tensors_file(vec![tensor(&long, F32, &[4])]).build())
            .strict(err(
                ErrorKind::NameTooLong { len: 65, max: 64 },
                "gguf::tensor::name_too_long",
                long_at.name,
                long_path.clone(),
            ))
            .llama(err(
                ErrorKind::NameTooLong { len: 65, max: 63 },
                "gguf::tensor::name_too_long",
                long_at.name,
                long_path,
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::NameTooLong { len: 65, max: 64 },
                    "gguf::tensor::name_too_long",
                    long_at.name,
                )],
                move |g| assert_eq!(g.tensor(&name).unwrap().info.nbytes(), Some(16)),
            )),
    );

    for n_dims in [5, u32::MAX] {
        let t = Tensor { n_dims: Some(n_dims), ..tensor("t0", F32, &[1; 5]) };
        cases.push(
            case(&format!("TENSORS_BAD_N_DIMS ({n_dims})"), tensors_file(vec![t]).build()).all(
                err(
                    ErrorKind::TooManyDims { n_dims, max: 4 },
                    "gguf::tensor::too_many_dims",
                    t0(5).n_dims,
                    format!("{t0_path} n_dims"),
                ),
            ),
        );
    }

    cases.push(
        case("TENSORS_BAD_SHAPE (every dim -1)", {
            tensors_file(vec![tensor("t0", F32, &[u64::MAX, u64::MAX])]).build()
        })
        .strict_lenient(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        ))
        // ggml reads dimensions as i64: -1 is rejected on its own.
        .llama(err(
            ErrorKind::DimTooLarge { value: u64::MAX },
            "gguf::tensor::dim_too_large",
            t0(2).ne,
            format!("{t0_path} ne[0]"),
        )),
    );

    // Both tensors [4, 0] at offset 0. Tensor 0 is 8 + 2 + 4 + 16 + 4 + 8 = 42 bytes long.
    let t1 = tensor_at(HEADER + 42, "t1", 2);
    cases.push(
        case("TENSORS_ZERO_DIM", {
            tensors_file(vec![tensor("t0", F32, &[4, 0]), tensor("t1", F32, &[4, 0])]).build()
        })
        .strict(err(
            ErrorKind::ZeroDim,
            "gguf::tensor::zero_dim",
            t0(2).ne + 8,
            format!("{t0_path} ne[1]"),
        ))
        .llama(loads_clean(|g| {
            for t in g.tensor_infos() {
                assert_eq!((t.offset(), t.nbytes(), t.element_count()), (0, Some(0), 0));
            }
        }))
        .lenient(loads_warning(
            vec![
                tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", t0(2).ne + 8),
                tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", t1.ne + 8),
            ],
            |g| assert_eq!(g.tensor("t1").unwrap().info.nbytes(), Some(0)),
        )),
    );

    for n_dims in [2usize, 4] {
        let dims = vec![4 * i32::MAX as u64; n_dims];
        cases.push(
            case(
                &format!("TENSORS_NE_TOO_BIG ({n_dims} dims of 4*INT32_MAX)"),
                tensors_file(vec![tensor("t0", F32, &dims)]).build(),
            )
            .all(err(
                ErrorKind::ElementCountOverflow,
                "gguf::tensor::element_count_overflow",
                t0(n_dims as u64).ne,
                format!("{t0_path} ne"),
            )),
        );
    }

    // I64 with dims ~ (SIZE_MAX / 8)^(1/n) * 1.01: the element count fits, the bytes do not.
    for dims in [vec![2_328_901_439_305_830_891u64], vec![1_533_685_252; 2]] {
        let count = dims.iter().product::<u64>();
        assert!(count < i64::MAX as u64 && count.checked_mul(8).is_none());
        cases.push(
            case(
                &format!("TENSORS_NBYTES_TOO_BIG ({} dims)", dims.len()),
                tensors_file(vec![tensor("t0", I64, &dims)]).build(),
            )
            .all(err(
                ErrorKind::ByteSizeOverflow,
                "gguf::tensor::byte_size_overflow",
                t0(dims.len() as u64).ne,
                format!("{t0_path} ne"),
            )),
        );
    }

    // Unknown, negative and removed ggml types: rejected, except by the lenient profile, which
    // reads the tensor with an unknown size.
    for (label, code, kind, err_code) in [
        (
            "TENSORS_BAD_TYPE (43)",
            43,
            ErrorKind::UnknownGgmlType { code: 43 },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 ggml type 2^31",
            1 << 31,
            ErrorKind::UnknownGgmlType { code: 1 << 31 },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 ggml type -1",
            u32::MAX,
            ErrorKind::UnknownGgmlType { code: u32::MAX },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 removed type 4",
            4,
            ErrorKind::RemovedGgmlType { code: 4, name: "Q4_2" },
            "gguf::tensor::removed_type",
        ),
        (
            "C6 removed type 31",
            31,
            ErrorKind::RemovedGgmlType { code: 31, name: "Q4_0_4_4" },
            "gguf::tensor::removed_type",
        ),
        (
            "C6 removed type 36",
            36,
            ErrorKind::RemovedGgmlType { code: 36, name: "IQ4_NL_4_4" },
            "gguf::tensor::removed_type",
        ),
    ] {
        cases.push(
            case(label, tensors_file(vec![tensor("t0", code, &[32])]).build())
                .strict_llama(err(kind.clone(), err_code, t0(1).ty, format!("{t0_path} ggml_type")))
                .lenient(loads_warning(vec![tolerated(kind, err_code, t0(1).ty)], move |g| {
                    let t = g.tensor("t0").unwrap().info;
                    assert_eq!(t.ggml_type().code(), code);
                    assert_eq!((t.nbytes(), t.dims()), (None, &[32][..]));
                })),
        );
    }

    let t = Tensor { offset: Some(u64::MAX), ..tensor("t0", F32, &[4]) };
    cases.push(case("TENSORS_BAD_OFFSET (2^64-1)", header_padded(&tensors_file(vec![t]))).all(
        err(
            ErrorKind::OffsetOverflow,
            "gguf::layout::offset_overflow",
            t0(1).offset,
            format!("{t0_path} offset"),
        ),
    ));

    // Tensor 0 is 8 + 9 + 4 + 8 + 4 + 8 = 41 bytes: tensor 1's name is at 24 + 41 + 8 = 73.
    let dup = tensors_file(vec![tensor("my_tensor", F32, &[4]), tensor("my_tensor", F32, &[4])]);
    cases.push(
        case("TENSORS_DUPLICATE_NAME", dup.build())
            .strict_llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                73,
                format!("{} name", tensor_path(1, "my_tensor")),
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::DuplicateTensor { first: 0 },
                    "gguf::tensor::duplicate_name",
                    73,
                )],
                |g| {
                    let t = g.tensor("my_tensor").unwrap();
                    assert_eq!((t.index, t.info.offset()), (1, 32), "last wins");
                },
            )),
    );

    // general.alignment = 13 with a tensor: header only (test-gguf's TENSORS_* files have no
    // data), and the same with data.
    let align = kv_at(HEADER, "general.alignment");
    let b = GgufBuilder::new().kv("general.alignment", Value::Uint32(13)).tensor_info(tensor(
        "t0",
        F32,
        &[4],
    ));
    for (label, bytes, header_only) in
        [("TENSORS_BAD_ALIGN", header_padded(&b), true), ("DATA_BAD_ALIGN", b.build(), false)]
    {
        let mut c = case(label, bytes)
            .strict_llama(err(
                ErrorKind::BadAlignment { alignment: 13 },
                "gguf::metadata::bad_alignment",
                align.value,
                format!("{} value", kv_path(0, "general.alignment")),
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::BadAlignment { alignment: 13 },
                    "gguf::metadata::bad_alignment",
                    align.value,
                )],
                |g| {
                    assert_eq!(g.alignment(), 32);
                    assert_eq!(g.tensor("t0").unwrap().info.offset(), 0);
                },
            ));
        if header_only {
            c = c.header_only();
        }
        cases.push(c);
    }

    // Laid out with alignment 1 but no alignment key (so 32 applies): tensor 1's offset 12 is
    // misaligned. Tensor infos are 8 + 2 + 4 + 8 + 4 + 8 = 34 bytes: tensor 1 at 58, its offset
    // field at 84, the directory ends at 92.
    let b = GgufBuilder::new()
        .layout_alignment(1)
        .tensor_info(Tensor { data: Some(vec![0xAA; 12]), ..tensor("t0", F32, &[3]) })
        .tensor_info(Tensor { data: Some(vec![0xAA; 12]), ..tensor("t1", F32, &[3]) });
    let misaligned = err(
        ErrorKind::MisalignedOffset { offset: 12, alignment: 32 },
        "gguf::layout::misaligned",
        84,
        format!("{} offset", tensor_path(1, "t1")),
    );
    cases.push(
        case("TENSORS_INCONSISTENT_ALIGN", b.build_header())
            .header_only()
            .strict_llama(misaligned.clone())
            // Lenient reads on, and needs the padding to offset 96, which a header-only file
            // written with alignment 1 does not have.
            .lenient(err(
                ErrorKind::UnexpectedEof { needed: 4 },
                "gguf::input::unexpected_eof",
                tensor_at(58, "t1", 1).end,
                "padding",
            )),
    );
    cases.push(case("DATA_INCONSISTENT_ALIGN", b.build()).strict_llama(misaligned).lenient(
        loads_warning(
            vec![
                tolerated(
                    ErrorKind::MisalignedOffset { offset: 12, alignment: 32 },
                    "gguf::layout::misaligned",
                    84,
                ),
                // The 4 bytes from the directory's end (92) to 96 hold tensor 0's data.
                (WarningKind::NonZeroPadding, "gguf::layout::nonzero_padding", 92),
                // The file is 92 + 24 bytes; tensor 1 is read at 96 + 12 .. 96 + 24.
                tolerated(
                    ErrorKind::TensorOutOfBounds { end: 120, file_size: 116 },
                    "gguf::layout::out_of_bounds",
                    84,
                ),
            ],
            |g| assert_eq!(g.data_offset(), 96),
        ),
    ));

    // TENSORS_SUCCESS: names, types, shapes and offsets (header only, as test-gguf writes it).
    // Infos: 45 + 45 + 36 + 32 bytes after the header: the directory ends at 182, data at 192.
    let specs: [(&str, u32, &[u64], u64, u64); 4] = [
        ("t.f32", F32, &[4, 3], 0, 48),
        ("t.q4k", Q4_K, &[256, 2], 64, 288),
        ("t.i8", I8, &[7], 352, 7),
        ("t.scalar", F16, &[], 384, 2),
    ];
    let b = tensors_file(specs.iter().map(|(n, ty, dims, ..)| tensor(n, *ty, dims)).collect());
    cases.push(case("TENSORS_SUCCESS", header_padded(&b)).header_only().all(loads_clean(
        move |g| {
            assert_eq!((g.directory().directory_end(), g.data_offset()), (182, 192));
            assert_eq!(g.tensor_infos().len(), 4);
            for (i, t) in g.tensors().enumerate() {
                let (name, ty, dims, offset, nbytes) = specs[i];
                assert_eq!(t.name, name);
                assert_eq!(t.info.ggml_type().code(), ty);
                assert_eq!(t.info.dims(), dims);
                assert_eq!((t.info.offset(), t.info.nbytes()), (offset, Some(nbytes)));
                assert_eq!(t.info.abs_offset(), 192 + offset);
            }
        },
    )));

    // TENSORS_CUSTOM_ALIGN: alignment 1, packed without padding.
    let b = GgufBuilder::new()
        .kv("general.alignment", Value::Uint32(1))
        .tensor_info(tensor("t0", F32, &[3]))
        .tensor_info(tensor("t1", F32, &[3]))
        .tensor_info(tensor("t2", I8, &[5]));
    cases.push(case("TENSORS_CUSTOM_ALIGN", header_padded(&b)).header_only().all(loads_clean(
        |g| {
            assert_eq!(g.alignment(), 1);
            let offsets: Vec<u64> = g.tensor_infos().iter().map(|t| t.offset()).collect();
            assert_eq!(offsets, [0, 12, 24]);
            // The header, the 33-byte pair and three 34-byte infos: no padding at alignment 1.
            assert_eq!(g.data_offset(), HEADER + 33 + 3 * 34);
        },
    )));
    cases
}
