//! Test-gguf.cpp: data.

use super::*;

/// Every tensor's data is where the directory says and holds the builder's pattern.
fn data_is_the_pattern(g: &Gguf<&[u8]>) {
    for (i, t) in g.tensors().enumerate() {
        let n = t.info.nbytes().unwrap();
        let start = t.info.abs_offset() as usize;
        assert_eq!(&g.bytes()[start..start + n as usize], &pattern(i, n)[..], "{}", t.name);
    }
}

pub(super) fn data_cases() -> Vec<Case> {
    let t0 = tensor_at(HEADER, "t0", 1);
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    let mut cases = Vec::new();

    // 32 bytes of data at 64 (the directory ends at 58): the file is 96 bytes; cut one.
    let mut bytes = tensors_file(vec![tensor("t0", F32, &[8])]).build();
    assert_eq!(bytes.len(), 96);
    bytes.pop();
    let oob = ErrorKind::TensorOutOfBounds { end: 96, file_size: 95 };
    cases.push(
        case("DATA_NOT_ENOUGH_DATA", bytes)
            .strict_llama(err(
                oob.clone(),
                "gguf::layout::out_of_bounds",
                t0.offset,
                t0_offset.clone(),
            ))
            .lenient(loads_warning(
                vec![tolerated(oob, "gguf::layout::out_of_bounds", t0.offset)],
                |g| assert_eq!(g.tensor("t0").unwrap().info.abs_offset(), 64),
            )),
    );

    // Two I8 tensors of 0x7FFFFFFFFFFFFFC0 elements with 32 bytes of data: ggml's memory-size
    // sum overflowed here. Infos are 34 bytes: tensor 1's offset field is at 84, data at 96.
    let big = 0x7FFF_FFFF_FFFF_FFC0u64;
    let b = tensors_file(vec![
        Tensor { offset: Some(0), ..tensor("t0", I8, &[big]) },
        Tensor { offset: Some(big), ..tensor("t1", I8, &[big]) },
    ]);
    let mut bytes = header_padded(&b);
    bytes.extend((0..32u8).collect::<Vec<_>>());
    let oob0 = ErrorKind::TensorOutOfBounds { end: 96 + big, file_size: 128 };
    let oob1 = ErrorKind::TensorOutOfBounds { end: 96 + 2 * big, file_size: 128 };
    cases.push(
        case("DATA_MEM_SIZE_OVERFLOW", bytes)
            .strict_llama(err(
                oob0.clone(),
                "gguf::layout::out_of_bounds",
                t0.offset,
                t0_offset.clone(),
            ))
            .lenient(loads_warning(
                vec![
                    tolerated(oob0, "gguf::layout::out_of_bounds", t0.offset),
                    tolerated(oob1, "gguf::layout::out_of_bounds", 84),
                ],
                move |g| {
                    let sizes: Vec<_> = g.tensor_infos().iter().map(|t| t.nbytes()).collect();
                    assert_eq!(sizes, [Some(big), Some(big)]);
                },
            )),
    );

    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("t.f32", GgmlType::F32, &[4, 3])
        .tensor("t.q8_0", GgmlType::Q8_0, &[64])
        .tensor("t.i8", GgmlType::I8, &[5])
        .tensor_info(tensor("t.bf16", BF16, &[3, 2]));
    cases.push(case("DATA_SUCCESS", b.build()).all(loads_clean(|g| {
        let got: Vec<_> = g.tensor_infos().iter().map(|t| (t.offset(), t.nbytes())).collect();
        assert_eq!(got, [(0, Some(48)), (64, Some(68)), (160, Some(5)), (192, Some(12))]);
        data_is_the_pattern(g);
    })));

    let b = GgufBuilder::new()
        .kv("general.alignment", Value::Uint32(1))
        .tensor_info(tensor("t0", F32, &[3]))
        .tensor_info(tensor("t1", I8, &[5]))
        .tensor_info(tensor("t2", F16, &[3]));
    cases.push(case("DATA_CUSTOM_ALIGN", b.build()).all(loads_clean(|g| {
        let offsets: Vec<u64> = g.tensor_infos().iter().map(|t| t.offset()).collect();
        assert_eq!(offsets, [0, 12, 17]);
        data_is_the_pattern(g);
    })));
    cases
}
