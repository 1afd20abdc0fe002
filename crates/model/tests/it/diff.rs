//! `diff`: the typed report of two models (metadata, tensor table, data).

use sipllm_edit::toy;
use sipllm_gguf::{GgmlType, ValueType};
use sipllm_model::diff::{
    Detail, DiffOptions, MetaChange, Shown, TensorChange, diff_headers, diff_models, tensor_hashes,
};
use sipllm_streaming::{MemSource, Model, OpenOptions};
use sipllm_testkit::{GgufBuilder, Value};

fn model(b: GgufBuilder) -> Model {
    Model::from_source(MemSource::new(b.build()), &OpenOptions::default()).unwrap()
}

fn changed(m: &MetaChange) -> (&[u8], Option<&Detail>) {
    match m {
        MetaChange::Changed { key, detail, .. } => (key, detail.as_ref()),
        other => panic!("not a change: {other:?}"),
    }
}

#[test]
fn equal_values_are_equal_whatever_their_bits_say() {
    let b = || {
        GgufBuilder::new()
            .kv("nan", Value::Float32(f32::NAN))
            .kv("neg_zero", Value::Float64(-0.0))
            .kv("tokens", Value::strings(["a", "b"]))
            .kv("nested", Value::array(ValueType::Array, vec![Value::strings(["x"])]))
    };
    let d = diff_models(&model(b()), &model(b()), &DiffOptions::default()).unwrap();
    assert!(d.is_equal(), "{d:?}");
    // -0.0 and 0.0 are different stored values.
    let other = GgufBuilder::new()
        .kv("nan", Value::Float32(f32::NAN))
        .kv("neg_zero", Value::Float64(0.0))
        .kv("tokens", Value::strings(["a", "b"]))
        .kv("nested", Value::array(ValueType::Array, vec![Value::strings(["y"])]));
    let d = diff_headers(&model(b()), &model(other), &DiffOptions::default());
    let keys: Vec<&[u8]> = d.metadata.iter().map(MetaChange::key).collect();
    assert_eq!(keys, [&b"neg_zero"[..], b"nested"]);
    assert_eq!(changed(&d.metadata[1]).1, Some(&Detail::Elements { differing: 1, first: vec![0] }));
}

#[test]
fn arrays_report_counts_and_the_first_indices_only() {
    let a = GgufBuilder::new()
        .kv("ids", Value::array(ValueType::Int32, (0..1000).map(Value::Int32).collect()));
    let b = GgufBuilder::new().kv(
        "ids",
        Value::array(
            ValueType::Int32,
            (0..1000).map(|i| Value::Int32(if i % 10 == 3 { -i } else { i })).collect(),
        ),
    );
    let o = DiffOptions { max_indices: 4, ..DiffOptions::default() };
    let d = diff_headers(&model(a), &model(b), &o);
    let (key, detail) = changed(&d.metadata[0]);
    assert_eq!(key, b"ids");
    assert_eq!(detail, Some(&Detail::Elements { differing: 100, first: vec![3, 13, 23, 33] }));
    let MetaChange::Changed { old, new, .. } = &d.metadata[0] else { unreachable!() };
    assert_eq!((old.ty.as_str(), &old.value), ("[i32]", &Shown::Array { len: 1000 }));
    assert_eq!((new.ty.as_str(), &new.value), ("[i32]", &Shown::Array { len: 1000 }));
}

#[test]
fn types_strings_and_the_tensor_table() {
    let long_a = "x".repeat(100) + "a";
    let long_b = "x".repeat(100) + "b";
    let a = GgufBuilder::new()
        .kv("n", Value::Uint32(2))
        .kv("t", Value::str(&long_a))
        .kv("only_a", Value::Bool(true))
        .tensor("w", GgmlType::F32, &[4, 2])
        .tensor("gone", GgmlType::F32, &[4])
        .tensor("gone2", GgmlType::F32, &[8]);
    let b = GgufBuilder::new()
        .kv("n", Value::Int64(2))
        .kv("t", Value::str(&long_b))
        .kv("only_b", Value::str("é".repeat(40).as_str()))
        .tensor("w", GgmlType::F32, &[2, 4])
        // The builder's data is a pattern of the tensor's index: `new` holds `gone`'s bytes
        // (a rename); `other` is `gone2`'s type and shape with other bytes (not one).
        .tensor("new", GgmlType::F32, &[4])
        .tensor("pad", GgmlType::F32, &[1])
        .tensor("other", GgmlType::F32, &[8]);
    let (a, b) = (model(a), model(b));
    let d = diff_models(&a, &b, &DiffOptions::default()).unwrap();
    assert_eq!(changed(&d.metadata[0]), (&b"n"[..], None), "u32 2 and i64 2 differ in type");
    assert_eq!(changed(&d.metadata[1]).1, Some(&Detail::Text { first_byte: 100 }));
    assert!(matches!(&d.metadata[2], MetaChange::Removed { key, .. } if key == b"only_a"));
    let MetaChange::Added { key, new } = &d.metadata[3] else { panic!("{:?}", d.metadata) };
    assert_eq!(key, b"only_b");
    // The prefix is cut at a character boundary: 64 bytes would split an `é`.
    assert_eq!(new.value, Shown::Str { prefix: "é".repeat(32).into_bytes(), len: 80 });
    let names: Vec<String> = d
        .tensors
        .iter()
        .map(|c| match c {
            TensorChange::Changed { old, new } => {
                format!("~{} {:?}->{:?}", old.name, old.shape, new.shape)
            }
            TensorChange::Removed(t) => format!("-{}", t.name),
            TensorChange::Added(t) => format!("+{}", t.name),
            TensorChange::Renamed { old, new } => format!("~{}->{}", old.name, new.name),
        })
        .collect();
    assert_eq!(names, ["~w [2, 4]->[4, 2]", "~gone->new", "-gone2", "+pad", "+other"]);
    // A tensor whose shape changed is not compared by data; renames are not counted either.
    assert_eq!(d.data.unwrap().compared, 0);
    // Without the data a rename cannot be told from a removal and an addition.
    let d = diff_models(&a, &b, &DiffOptions::metadata_only()).unwrap();
    assert!(
        d.tensors.iter().all(|c| !matches!(c, TensorChange::Renamed { .. })),
        "{:?}",
        d.tensors
    );
}

#[test]
fn gguf_and_llmw_of_one_model_differ_in_framing_and_types_only() {
    let dir = std::env::temp_dir().join(format!("sipllm-diff-toy-{}", std::process::id()));
    let files = toy::write_toy(3, &dir).unwrap();
    let g = Model::open(&files.gguf, &OpenOptions::default()).unwrap();
    let l = Model::open(&files.llmw, &OpenOptions::default()).unwrap();
    let d = diff_models(&g, &l, &DiffOptions::default()).unwrap();
    assert_eq!(d.file[0].what, "format");
    assert!(d.tensors.is_empty(), "{:?}", d.tensors);
    let data = d.data.as_ref().unwrap();
    assert_eq!(data.compared, g.tensors().len());
    assert!(data.changed.is_empty(), "the same tensor bytes in both formats");
    // Every metadata change is a stored-type change (u32 in GGUF, i64 in .llmw), never a value.
    for c in &d.metadata {
        if let MetaChange::Changed { old, new, .. } = c {
            assert_ne!(old.ty, new.ty, "{c:?}");
        }
    }
    let hashes = tensor_hashes(g.as_weight_source()).unwrap();
    assert_eq!(hashes, tensor_hashes(l.as_weight_source()).unwrap());
    assert!(hashes.iter().all(Option::is_some));
    std::fs::remove_dir_all(&dir).unwrap();
}

use sipllm_streaming::WeightSource as _;
