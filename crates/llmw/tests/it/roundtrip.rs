//! Property: whatever the LlmwWriter accepts, the parser reads back identically (metadata,
//! tensors, bytes), under every chunking.

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

use sipllm_llmw::{GgmlType, LlmwWriter, ParseOptions, parse};

use crate::support::{Owned, Rng, assert_chunkings_agree, metadata};

fn value() -> impl Strategy<Value = Owned> {
    // f64 values as bit patterns: NaN payloads and signed zeros must survive too.
    prop_oneof![
        any::<i64>().prop_map(Owned::I64),
        any::<u64>().prop_map(Owned::F64),
        ".{0,12}".prop_map(Owned::Str),
        vec(any::<i64>(), 0..6).prop_map(Owned::I64s),
        vec(any::<u64>(), 0..6).prop_map(Owned::F64s),
        vec(".{0,6}", 0..6).prop_map(Owned::Strs),
    ]
}

const DTYPES: [GgmlType; 7] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::I8,
    GgmlType::I32,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
];

#[derive(Debug, Clone)]
struct Tensor {
    dtype: GgmlType,
    dims: Vec<u64>,
    data: Vec<u8>,
}

fn tensor() -> impl Strategy<Value = Tensor> {
    (0..DTYPES.len(), vec(1..4u64, 0..4), 1..3u64, any::<u64>()).prop_map(
        |(ty, outer, blocks, seed)| {
            let dtype = DTYPES[ty];
            let mut dims = outer;
            // The innermost (row) dimension is a whole number of blocks.
            dims.push(blocks * dtype.block_size().unwrap());
            let gguf: Vec<u64> = dims.iter().rev().copied().collect();
            // The workspace's one size helper, in GGUF order.
            let n = sipllm_gguf::ggml::tensor_nbytes(dtype, &gguf).unwrap();
            let mut rng = Rng::new(seed);
            let data = (0..n).map(|_| rng.next() as u8).collect();
            Tensor { dtype, dims, data }
        },
    )
}

fn add(w: &mut LlmwWriter<'_>, key: &str, v: &Owned) {
    let r = match v {
        Owned::I64(x) => w.add_meta_i64(key, *x),
        Owned::F64(x) => w.add_meta_f64(key, f64::from_bits(*x)),
        Owned::Str(s) => w.add_meta_str(key, s),
        Owned::I64s(x) => w.add_meta_i64s(key, x.iter().copied()),
        Owned::F64s(x) => w.add_meta_f64s(key, x.iter().map(|b| f64::from_bits(*b))),
        Owned::Strs(x) => w.add_meta_strs(key, x),
    };
    r.unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn write_then_parse_is_the_identity(
        meta in btree_map("[a-z][a-z0-9_.]{0,15}", value(), 0..8),
        tensors in btree_map("[a-z][a-z0-9_.]{0,20}", tensor(), 0..5),
        seed in any::<u64>(),
    ) {
        let meta: Vec<(String, Owned)> = meta.into_iter().collect();
        let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
        let mut w = LlmwWriter::new();
        for (k, v) in &meta {
            add(&mut w, k, v);
        }
        for (name, t) in &tensors {
            w.add_tensor(name, t.dtype, &t.dims, &t.data).unwrap();
        }
        let has_arrays = meta.iter().any(|(_, v)| matches!(v, Owned::I64s(_) | Owned::F64s(_) | Owned::Strs(_)));
        prop_assert_eq!(w.version(), if has_arrays { 2 } else { 1 });
        let layout = w.layout().unwrap();
        let bytes = w.to_vec().unwrap();
        prop_assert_eq!(bytes.len() as u64, layout.file_size);

        let f = parse(&bytes).unwrap();
        prop_assert_eq!(f.version(), layout.version);
        prop_assert_eq!(metadata(&f), meta.clone());
        for (k, v) in &meta {
            prop_assert_eq!(crate::support::owned(f.get(k).unwrap()), v.clone());
        }
        prop_assert_eq!(f.tensors().len(), tensors.len());
        for (t, (name, want)) in f.tensors().zip(&tensors) {
            prop_assert_eq!(t.name, name.as_str());
            prop_assert_eq!(t.info.dtype(), want.dtype);
            prop_assert_eq!(t.info.dims(), want.dims.as_slice());
            prop_assert_eq!(t.info.nbytes(), want.data.len() as u64);
            prop_assert_eq!(t.info.offset() % 64, 0);
            prop_assert_eq!(f.tensor_data(t.info), Some(want.data.as_slice()));
        }

        // Chunked decoding (1-byte, minimal, several random chunkings) agrees with whole.
        let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
        let dir = assert_chunkings_agree(&bytes, &opts).unwrap();
        prop_assert_eq!(&dir, f.directory());
        // And one more random chunking from this case's seed.
        let mut rng = Rng::new(seed);
        let mut sizes = || 1 + rng.below(40) as usize;
        prop_assert_eq!(crate::support::decode_chunked(&bytes, &mut sizes, &opts).unwrap(), dir);
    }
}
