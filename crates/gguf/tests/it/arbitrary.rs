//! Shared by the integration tests: proptest strategies for valid GGUF files built with
//! `sipllm_testkit`, a chunked decoding driver, and value comparison.

#![allow(dead_code)]

use proptest::prelude::*;
use sipllm_gguf::{Endian, GgmlType, ValueType};
use sipllm_testkit::{GgufBuilder, Tensor, Value};

pub(crate) use sipllm_testkit::check::decode_chunked;

fn arb_scalar(ty: ValueType) -> BoxedStrategy<Value> {
    match ty {
        ValueType::Uint8 => any::<u8>().prop_map(Value::Uint8).boxed(),
        ValueType::Int8 => any::<i8>().prop_map(Value::Int8).boxed(),
        ValueType::Uint16 => any::<u16>().prop_map(Value::Uint16).boxed(),
        ValueType::Int16 => any::<i16>().prop_map(Value::Int16).boxed(),
        ValueType::Uint32 => any::<u32>().prop_map(Value::Uint32).boxed(),
        ValueType::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        ValueType::Float32 => any::<f32>().prop_map(Value::Float32).boxed(),
        ValueType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ValueType::String => "\\PC{0,12}".prop_map(|s| Value::str(&s)).boxed(),
        ValueType::Uint64 => any::<u64>().prop_map(Value::Uint64).boxed(),
        ValueType::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        ValueType::Float64 => any::<f64>().prop_map(Value::Float64).boxed(),
        ValueType::Array => unreachable!("arrays are built by arb_value"),
    }
}

fn scalar_types() -> impl Strategy<Value = ValueType> {
    proptest::sample::select(
        ValueType::ALL.iter().copied().filter(|t| *t != ValueType::Array).collect::<Vec<_>>(),
    )
}

/// Any value; arrays nest up to `depth` levels below the top one.
pub(crate) fn arb_value(depth: u32) -> BoxedStrategy<Value> {
    let scalar = scalar_types().prop_flat_map(arb_scalar).boxed();
    prop_oneof![3 => scalar, 1 => arb_array(depth)].boxed()
}

/// An array: homogeneous scalars, or (while `depth` allows) arrays, each with its own type.
fn arb_array(depth: u32) -> BoxedStrategy<Value> {
    let flat = scalar_types()
        .prop_flat_map(|ty| {
            proptest::collection::vec(arb_scalar(ty), 0..8).prop_map(move |v| Value::array(ty, v))
        })
        .boxed();
    if depth == 0 {
        return flat;
    }
    let nested = proptest::collection::vec(arb_array(depth - 1), 0..4)
        .prop_map(|v| Value::array(ValueType::Array, v));
    prop_oneof![3 => flat, 1 => nested].boxed()
}

fn arb_tensor() -> impl Strategy<Value = (GgmlType, Vec<u64>)> {
    let types: Vec<GgmlType> = GgmlType::all_known().collect();
    (proptest::sample::select(types), 1usize..=4, proptest::collection::vec(1u64..4, 4)).prop_map(
        |(ty, n_dims, extents)| {
            let block = ty.block_size().unwrap();
            let mut dims = vec![block * extents[0]];
            dims.extend(extents[1..n_dims].iter().copied());
            (ty, dims)
        },
    )
}

/// A valid file: any byte order, v2 or v3, random metadata (with nested arrays), an optional
/// `general.alignment`, and up to five tensors with data.
pub(crate) fn arb_file() -> impl Strategy<Value = GgufBuilder> {
    (
        any::<bool>(),
        prop_oneof![Just(3u32), Just(2u32)],
        proptest::collection::vec(arb_value(2), 0..8),
        proptest::option::of(0u32..7),
        proptest::collection::vec(arb_tensor(), 0..5),
    )
        .prop_map(|(big, version, values, align_pow, tensors)| {
            let endian = if big { Endian::Big } else { Endian::Little };
            let mut b = GgufBuilder::new().endian(endian).version(version);
            for (i, v) in values.into_iter().enumerate() {
                b = b.kv(&format!("test.key_{i}"), v);
            }
            if let Some(p) = align_pow {
                b = b.kv("general.alignment", Value::Uint32(1 << p));
            }
            for (i, (ty, dims)) in tensors.into_iter().enumerate() {
                b = b.tensor_info(Tensor {
                    name: format!("blk.{i}.weight").into_bytes(),
                    dims,
                    type_code: ty.code(),
                    offset: None,
                    n_dims: None,
                    data: None,
                });
            }
            b
        })
}

/// Equality of built values with floats compared bit for bit (NaN round-trips too).
pub(crate) fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float32(x), Value::Float32(y)) => x.to_bits() == y.to_bits(),
        (Value::Float64(x), Value::Float64(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(t, xs), Value::Array(u, ys)) => {
            t == u && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value(x, y))
        }
        _ => a == b,
    }
}
