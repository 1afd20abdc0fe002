//! The test files, built with the parser crate's byte builder (no blobs in the repository):
//! a valid model, files with warnings, and one malformed file per class of problem — header,
//! metadata, array, tensor info and layout.

use std::path::Path;

use sipllm_gguf::GgmlType;
use sipllm_gguf::{Endian, ValueType};
use sipllm_testkit::{GgufBuilder, Tensor, Value};

/// A file to write, what it is, the extra `validate` arguments and the exit code expected.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) bytes: Vec<u8>,
    pub(crate) args: &'static [&'static str],
    pub(crate) exit: i32,
}

fn base() -> GgufBuilder {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("tiny"))
        .kv("llama.block_count", Value::Uint32(1))
        .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "</s>", "hello", "world"]))
}

fn tensor(name: &[u8], ty: u32, dims: &[u64], offset: Option<u64>) -> Tensor {
    Tensor {
        name: name.to_vec(),
        dims: dims.to_vec(),
        type_code: ty,
        offset,
        n_dims: None,
        data: None,
    }
}

/// A small valid model with tensors of three types.
pub(crate) fn valid() -> Vec<u8> {
    base()
        .kv("llama.context_length", Value::Uint32(128))
        .kv("llama.embedding_length", Value::Uint32(32))
        .kv("llama.rope.freq_base", Value::Float32(500000.0))
        .tensor("token_embd.weight", GgmlType::F16, &[32, 4])
        .tensor("blk.0.attn_q.weight", GgmlType::Q8_0, &[32, 32])
        .tensor("output_norm.weight", GgmlType::F32, &[32])
        .build()
}

/// A valid file whose values exercise escaping and abbreviation: terminal controls in keys,
/// names and values, a bidi override, a long string, nested arrays, every scalar type, and
/// non-finite floats.
pub(crate) fn odd_values() -> Vec<u8> {
    let long = "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
        .repeat(4);
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("evil\x1b[2J\x1b]0;pwned\x07 name"))
        .kv("general.description", Value::str("abc\u{202e}fed\u{9b}31m"))
        .kv("tokenizer.chat_template", Value::str(&long))
        .kv_bytes(b"odd.key\x1b[31m", Value::Uint8(7))
        .kv("all.u8", Value::Uint8(255))
        .kv("all.i8", Value::Int8(-128))
        .kv("all.u16", Value::Uint16(65535))
        .kv("all.i16", Value::Int16(-32768))
        .kv("all.u32", Value::Uint32(u32::MAX))
        .kv("all.i32", Value::Int32(i32::MIN))
        .kv("all.u64", Value::Uint64(u64::MAX))
        .kv("all.i64", Value::Int64(i64::MIN))
        .kv("all.f32", Value::Float32(1e-5))
        .kv("all.f64", Value::Float64(std::f64::consts::PI))
        .kv("all.bool", Value::Bool(true))
        .kv("all.nan", Value::Float32(f32::NAN))
        .kv("all.inf", Value::Float64(f64::NEG_INFINITY))
        .kv(
            "nested.arrays",
            Value::array(
                ValueType::Array,
                vec![
                    Value::array(ValueType::Uint8, vec![Value::Uint8(1), Value::Uint8(2)]),
                    Value::strings(["x", "y\nz"]),
                ],
            ),
        )
        .kv("empty.array", Value::array(ValueType::Int32, vec![]))
        .kv(
            "tokenizer.ggml.tokens",
            Value::strings((0..1000).map(|i| format!("tok{i}")).collect::<Vec<_>>()),
        )
        .tensor_info(tensor(b"weird\x1b[0m.weight", GgmlType::F32.code(), &[8], None))
        .build()
}

/// Every malformed (and warning) case `validate` is golden-tested on.
pub(crate) fn cases() -> Vec<Case> {
    let f32c = GgmlType::F32.code();
    let mut truncated = base().build();
    truncated.truncate(20);
    vec![
        Case {
            name: "header-bad-magic",
            bytes: base().magic(*b"GGML").build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "header-fugg-magic",
            bytes: base().magic(*b"FUGG").version(1).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "header-unsupported-version",
            bytes: base().version(4).build(),
            args: &[],
            exit: 1,
        },
        Case { name: "header-truncated", bytes: truncated, args: &[], exit: 1 },
        Case {
            name: "header-big-endian-llama-cpp",
            bytes: base().endian(Endian::Big).build(),
            args: &["--profile", "llama-cpp"],
            exit: 1,
        },
        Case {
            name: "kv-duplicate-key",
            bytes: base().kv("general.name", Value::str("again")).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "kv-unknown-value-type",
            bytes: base()
                .kv("general.obj", Value::Raw { type_code: 13, bytes: vec![0; 8] })
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "kv-string-too-long",
            bytes: base()
                .kv(
                    "general.url",
                    Value::StringWithLen { declared: 1 << 40, bytes: b"http".to_vec() },
                )
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "kv-invalid-bool",
            bytes: base().kv("general.flag", Value::Raw { type_code: 7, bytes: vec![2] }).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "kv-bad-alignment",
            bytes: base().kv("general.alignment", Value::Uint32(48)).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "kv-invalid-utf8-key",
            bytes: base().kv_bytes(b"general.\xff\xfename", Value::Uint8(1)).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "array-too-long",
            bytes: base()
                .kv(
                    "tokenizer.ggml.scores",
                    Value::ArrayWithLen {
                        elem_type: ValueType::Float32.code(),
                        declared: 1 << 40,
                        elems: vec![Value::Float32(0.0)],
                    },
                )
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "array-invalid-utf8-element",
            bytes: GgufBuilder::new()
                .kv(
                    "tokenizer.ggml.tokens",
                    Value::Array(
                        ValueType::String.code(),
                        vec![
                            Value::str("<s>"),
                            Value::str("ok"),
                            Value::String(b"bad\xc3(".to_vec()),
                            Value::str("fine"),
                        ],
                    ),
                )
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "array-truncated-in-vocabulary",
            bytes: {
                let mut b = base()
                    .kv(
                        "tokenizer.ggml.merges",
                        Value::strings((0..200).map(|i| format!("a{i} b{i}")).collect::<Vec<_>>()),
                    )
                    .build();
                b.truncate(b.len() - 300);
                b
            },
            args: &[],
            exit: 1,
        },
        Case {
            name: "tensor-name-too-long",
            bytes: base().tensor_info(tensor(&[b'w'; 80], f32c, &[4], None)).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "tensor-too-many-dims",
            bytes: base().tensor_info(tensor(b"blk.0.w", f32c, &[2, 2, 2, 2, 2], None)).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "tensor-unknown-type",
            bytes: base().tensor_info(tensor(b"blk.0.w", 99, &[32], None)).build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "tensor-not-block-multiple",
            bytes: base()
                .tensor_info(tensor(b"blk.0.w", GgmlType::Q4_K.code(), &[100, 2], None))
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "layout-misaligned-offset",
            bytes: base()
                .tensor("a.weight", GgmlType::F32, &[8])
                .tensor_info(tensor(b"b.weight", f32c, &[8], Some(40)))
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "layout-overlap",
            bytes: base()
                .tensor("a.weight", GgmlType::F32, &[16])
                .tensor_info(tensor(b"b.weight", f32c, &[16], Some(32)))
                .build(),
            args: &[],
            exit: 1,
        },
        Case {
            name: "layout-out-of-bounds",
            bytes: {
                let mut b = base().tensor("token_embd.weight", GgmlType::F32, &[64, 4]).build();
                b.truncate(b.len() - 100);
                b
            },
            args: &[],
            exit: 1,
        },
        Case {
            name: "layout-not-contiguous-llama-cpp",
            bytes: base()
                .tensor("a.weight", GgmlType::F32, &[8])
                .tensor_info(tensor(b"b.weight", f32c, &[8], Some(64)))
                .build(),
            args: &["--profile", "llama-cpp"],
            exit: 1,
        },
        Case {
            name: "warning-gap",
            bytes: base()
                .tensor("a.weight", GgmlType::F32, &[8])
                .tensor_info(tensor(b"b.weight", f32c, &[8], Some(64)))
                .build(),
            args: &[],
            exit: 0,
        },
        Case {
            name: "warning-gap-denied",
            bytes: base()
                .tensor("a.weight", GgmlType::F32, &[8])
                .tensor_info(tensor(b"b.weight", f32c, &[8], Some(64)))
                .build(),
            args: &["--deny-warnings"],
            exit: 1,
        },
        Case {
            name: "warning-lenient-duplicate-and-bad-utf8",
            bytes: base()
                .kv("general.name", Value::str("again"))
                .kv("general.note", Value::String(b"caf\xe9".to_vec()))
                .build(),
            args: &["--profile", "lenient"],
            exit: 0,
        },
    ]
}

/// Writes `bytes` to `dir/name` and returns the file name (relative to `dir`).
pub(crate) fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    std::fs::write(dir.join(name), bytes).expect("write test file");
    name.to_owned()
}
