//! Tensor values through the seam: `read_f32` equals gguf-py's values on the corpus model,
//! `read_f32_at` equals the matching slice for ranges that start and end inside blocks and
//! cross chunk boundaries, reads stay within one chunk, and the checks are typed errors.

use crate::common::{Instrumented, sha256_hex, shared_dir};
use sipllm_gguf::GgmlType;
use sipllm_streaming::{
    GgufFile, MemSource, OpenOptions, StreamErrorKind, VALUES_CHUNK_BYTES, WeightSource,
};
use sipllm_testkit::{GgufBuilder, Tensor};

/// gguf-py's value hashes (`scripts/quants_expect.py`, rows `tensor FILE NAME TYPE SHA256`).
const EXPECT: &str = include_str!("../../../quants/tests/expect.tsv");

fn le_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn corpus_values_equal_gguf_py() {
    let Some(shared) = shared_dir("corpus_values_equal_gguf_py") else { return };
    let rows: Vec<Vec<&str>> = EXPECT
        .lines()
        .filter(|l| l.starts_with("tensor\t"))
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(rows.len() >= 8, "expect.tsv lists the corpus tensors");
    for row in rows {
        let (file, name, ty, hash) = (row[1], row[2], row[3], row[4]);
        let f = GgufFile::open(shared.join("corpus/generated").join(file), &OpenOptions::default())
            .unwrap();
        let t = f.find(name).unwrap();
        assert_eq!(t.ggml_type.name(), ty);
        let values = f.read_f32(t).unwrap();
        assert_eq!(values.len() as u64, t.element_count().unwrap());
        assert_eq!(sha256_hex(&le_bytes(&values)), hash, "{file} {name}");
    }
}

/// A big-endian GGUF's values are its little-endian twin's, bit for bit, for every tensor:
/// F32 and F16 stored byte-swapped, Q8_0 blocks stored as written.
#[test]
fn big_endian_values_equal_the_little_endian_twin() {
    let Some(shared) = shared_dir("big_endian_values_equal_the_little_endian_twin") else {
        return;
    };
    let open = |name: &str| {
        GgufFile::open(shared.join("corpus/generated").join(name), &OpenOptions::default()).unwrap()
    };
    let (be, le) = (open("tiny-llama.be.gguf"), open("tiny-llama.le.gguf"));
    assert_eq!(be.endian(), sipllm_gguf::Endian::Big);
    assert_eq!(le.endian(), sipllm_gguf::Endian::Little);
    assert_eq!(be.tensors().len(), le.tensors().len());
    let mut types = std::collections::BTreeSet::new();
    for (b, l) in be.tensors().iter().zip(le.tensors()) {
        assert_eq!((&b.name, b.ggml_type, &b.shape), (&l.name, l.ggml_type, &l.shape));
        types.insert(b.ggml_type.name());
        let (vb, vl) = (be.read_f32(b).unwrap(), le.read_f32(l).unwrap());
        assert_eq!(bits(&vb), bits(&vl), "{}", b.name);
        // A range inside the tensor too (the chunked path, a partial first element block).
        let n = b.element_count().unwrap();
        let mut part = vec![0f32; (n - 1) as usize];
        be.read_f32_at(b, 1..n, &mut part).unwrap();
        assert_eq!(bits(&part), bits(&vl[1..]), "{} 1..", b.name);
    }
    assert_eq!(types.into_iter().collect::<Vec<_>>(), ["F16", "F32", "Q8_0"]);
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn random(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| mix(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as u8).collect()
}

/// A file with one tensor of `ty`, `rows` rows of `ne0` values, random bytes: (the tensor's
/// bytes, the file's bytes).
fn one_tensor_bytes(ty: GgmlType, ne0: u64, rows: u64) -> (Vec<u8>, Vec<u8>) {
    let len = sipllm_gguf::ggml::tensor_nbytes(ty, &[ne0, rows]).unwrap() as usize;
    let data = random(len, u64::from(ty.code()));
    let bytes = GgufBuilder::new()
        .tensor_info(Tensor {
            name: b"w".to_vec(),
            dims: vec![ne0, rows],
            type_code: ty.code(),
            offset: None,
            n_dims: None,
            data: Some(data.clone()),
        })
        .build();
    (data, bytes)
}

fn one_tensor(ty: GgmlType, ne0: u64, rows: u64) -> (Vec<u8>, GgufFile) {
    let (data, bytes) = one_tensor_bytes(ty, ne0, rows);
    (data, GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn ranges_equal_slices_of_the_whole() {
    for ty in [GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::F16, GgmlType::IQ2_XS, GgmlType::NVFP4] {
        let (data, f) = one_tensor(ty, 512, 6);
        let t = f.find("w").unwrap();
        let mut expect = vec![0f32; 512 * 6];
        sipllm_quants::dequantize(ty, &data, &mut expect).unwrap();
        let whole = f.read_f32(t).unwrap();
        assert_eq!(bits(&whole), bits(&expect), "{ty}");
        for (a, b) in [(0, 1), (3, 40), (31, 33), (255, 257), (100, 100), (0, 3072), (2999, 3072)] {
            let mut part = vec![0f32; b - a];
            f.read_f32_at(t, a as u64..b as u64, &mut part).unwrap();
            assert_eq!(bits(&part), bits(&expect[a..b]), "{ty} {a}..{b}");
        }
    }
}

#[test]
fn big_tensors_stream_in_bounded_chunks() {
    // Q4_K, 4096 values per row (2304 bytes), 8000 rows: 18.4 MB, more than one chunk.
    let (data, bytes) = one_tensor_bytes(GgmlType::Q4_K, 4096, 8000);
    assert!(data.len() > VALUES_CHUNK_BYTES);
    let (src, log) = Instrumented::new(MemSource::new(bytes));
    let f = GgufFile::from_source(src, &OpenOptions::default()).unwrap();
    let t = f.find("w").unwrap().clone();
    let mut expect = vec![0f32; 4096 * 8000];
    sipllm_quants::dequantize(GgmlType::Q4_K, &data, &mut expect).unwrap();

    log.clear();
    let whole = f.read_f32(&t).unwrap();
    assert_eq!(bits(&whole), bits(&expect));
    let reads = log.reads();
    assert!(reads.len() >= 2, "{reads:?}");
    assert!(reads.iter().all(|&(_, n)| n as usize <= VALUES_CHUNK_BYTES), "{reads:?}");
    assert_eq!(log.bytes_read(), data.len() as u64, "each byte read once");

    // A range across the chunk boundary, starting and ending inside blocks.
    let boundary = (VALUES_CHUNK_BYTES / 144 * 256) as u64;
    let (a, b) = (boundary - 1000, boundary + 77);
    let mut part = vec![0f32; (b - a) as usize];
    log.clear();
    f.read_f32_at(&t, a..b, &mut part).unwrap();
    assert_eq!(bits(&part), bits(&expect[a as usize..b as usize]));
    // Only the touched blocks: 1077 values span 6 blocks of 256.
    assert!(log.bytes_read() <= 6 * 144, "{:?}", log.reads());
}

#[test]
fn bad_requests_are_typed_errors() {
    let (_, f) = one_tensor(GgmlType::Q8_0, 64, 2);
    let t = f.find("w").unwrap();
    let mut out = vec![0f32; 10];
    let e = f.read_f32_at(t, 0..11, &mut out).unwrap_err();
    assert_eq!(e.code(), "streaming::values::element_range");
    let e = f.read_f32_at(t, 120..130, &mut out).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            StreamErrorKind::Tensor(sipllm_streaming::TensorError::ElementRange { count: 128, .. })
        ),
        "{e}"
    );
    #[allow(clippy::reversed_empty_ranges)]
    let e = f.read_f32_at(t, 5..4, &mut []).unwrap_err();
    assert_eq!(e.code(), "streaming::values::element_range");

    let (_, f) = one_tensor(GgmlType::I32, 4, 1);
    let e = f.read_f32(f.find("w").unwrap()).unwrap_err();
    assert_eq!(e.code(), "quants::dequant::unsupported_type");
    assert!(e.to_string().contains("\"w\""), "{e}");
}
