//! LlmwWriter: round trips, versions, validation on add, readers, atomic path writes.

use std::io::{self, Read};

use sipllm_llmw::{GgmlType, LlmwWriteError, LlmwWriter, parse};

use crate::support::{Owned, Scratch, metadata, sample_data, sample_file, sample_writer};

#[test]
fn the_sample_round_trips() {
    let data = sample_data();
    let layout = sample_writer(&data).layout().unwrap();
    let bytes = sample_file();
    assert_eq!(layout.file_size, bytes.len() as u64);
    let f = parse(&bytes).unwrap();
    assert_eq!(f.version(), 2);
    assert_eq!(f.data_start(), layout.data_start);
    assert_eq!(f.directory().directory_end(), layout.directory_end);
    assert_eq!(
        metadata(&f),
        vec![
            ("general.architecture".into(), Owned::Str("toy".into())),
            ("toy.context_length".into(), Owned::I64(2048)),
            ("toy.rope.freq_base".into(), Owned::F64(10000.5f64.to_bits())),
            ("toy.layer_sizes".into(), Owned::I64s(vec![1, -2, i64::MAX, i64::MIN])),
            (
                "tokenizer.scores".into(),
                Owned::F64s(
                    [0.0, -1.25, f64::INFINITY].iter().map(|x: &f64| x.to_bits()).collect()
                )
            ),
            (
                "tokenizer.tokens".into(),
                Owned::Strs(["<s>", "</s>", "", "héllo", "▁the"].map(String::from).to_vec())
            ),
            ("general.empty".into(), Owned::Str(String::new())),
        ]
    );
    let expect = [
        ("token_embd.weight", GgmlType::F32, vec![5, 3]),
        ("blk.0.attn_q.weight", GgmlType::Q8_0, vec![2, 64]),
        ("output_norm.weight", GgmlType::F16, vec![7]),
    ];
    assert_eq!(f.tensors().len(), 3);
    for ((t, (name, dtype, dims)), (data, &(offset, nbytes))) in
        f.tensors().zip(expect).zip(data.iter().zip(&layout.tensors))
    {
        assert_eq!(t.name, name);
        assert_eq!(t.info.dtype(), dtype);
        assert_eq!(t.info.dims(), dims.as_slice());
        assert_eq!((t.info.offset(), t.info.nbytes()), (offset, nbytes));
        assert_eq!(t.info.offset() % 64, 0);
        assert_eq!(f.tensor_data(t.info), Some(data.as_slice()));
        assert_eq!(f.tensor(name).unwrap().index, t.index);
    }
    // Row-major dims reversed give ggml's order; sizes agree with the one size helper.
    let q = f.tensor("blk.0.attn_q.weight").unwrap().info;
    assert_eq!(q.gguf_dims().as_slice(), &[64, 2]);
    assert_eq!(sipllm_llmw::GgmlType::Q8_0.type_size(), Some(34));
    assert_eq!(q.nbytes(), 2 * 2 * 34);
    assert_eq!(q.element_count(), 128);
}

#[test]
fn version_1_without_arrays_2_with() {
    let mut w = LlmwWriter::new();
    w.add_meta_i64("a", 1).unwrap().add_meta_f64("b", 2.0).unwrap().add_meta_str("c", "x").unwrap();
    assert_eq!(w.version(), 1);
    let bytes = w.to_vec().unwrap();
    assert_eq!(&bytes[..8], b"LLMW\x01\0\0\0");
    assert_eq!(parse(&bytes).unwrap().version(), 1);

    let mut w = LlmwWriter::new();
    w.add_meta_i64s("a", []).unwrap();
    assert_eq!(w.version(), 2);
    let bytes = w.to_vec().unwrap();
    let f = parse(&bytes).unwrap();
    assert_eq!(f.version(), 2);
    assert!(f.get_i64_array("a").unwrap().is_empty());
}

#[test]
fn an_empty_writer_writes_a_bare_header() {
    let bytes = LlmwWriter::new().to_vec().unwrap();
    assert_eq!(bytes, b"LLMW\x01\0\0\0\0\0\0\0\0\0\0\0");
    let f = parse(&bytes).unwrap();
    assert_eq!((f.meta_len(), f.tensors().len(), f.data_start()), (0, 0, 64));
}

#[test]
fn the_layout_is_packed_at_64() {
    let a = [1u8; 4 * 3];
    let b = [2u8; 4 * 20];
    let mut w = LlmwWriter::new();
    w.add_tensor("a", GgmlType::F32, &[3], &a).unwrap();
    w.add_tensor("b", GgmlType::F32, &[4, 5], &b).unwrap();
    let layout = w.layout().unwrap();
    // 16 + 2 * (4 + 1 + 4 + 4 + 8 + 8 + 8) + 8 = 98 -> data at 128; a ends at 140 -> b at 192.
    assert_eq!(layout.directory_end, 16 + 37 + 45);
    assert_eq!(layout.data_start, 128);
    assert_eq!(layout.tensors, vec![(128, 12), (192, 80)]);
    assert_eq!(layout.file_size, 272);
    let bytes = w.to_vec().unwrap();
    assert_eq!(bytes.len(), 272);
    assert!(bytes[98..128].iter().all(|&x| x == 0), "padding is zero");
    assert!(bytes[140..192].iter().all(|&x| x == 0), "padding is zero");
}

#[test]
fn bad_items_are_refused_when_added() {
    let mut w = LlmwWriter::new();
    w.add_meta_i64("k", 1).unwrap();
    assert!(matches!(w.add_meta_i64("", 1), Err(LlmwWriteError::EmptyKey)));
    assert!(
        matches!(w.add_meta_str("k", "x"), Err(LlmwWriteError::DuplicateKey { key }) if key == "k")
    );
    let d = [0u8; 64];
    w.add_tensor("t", GgmlType::F32, &[16], &d).unwrap();
    let err = |r: Result<&mut LlmwWriter<'_>, LlmwWriteError>| r.map(|_| ()).unwrap_err();
    assert!(matches!(err(w.add_tensor("", GgmlType::F32, &[16], &d)), LlmwWriteError::EmptyName));
    assert!(matches!(
        err(w.add_tensor("t", GgmlType::F32, &[16], &d)),
        LlmwWriteError::DuplicateName { .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::Removed(4), &[32], &d)),
        LlmwWriteError::UnsupportedDtype { .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::from_code(500), &[16], &d)),
        LlmwWriteError::UnsupportedDtype { .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::F32, &[], &d)),
        LlmwWriteError::BadDimCount { n_dims: 0, .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::F32, &[1, 1, 1, 1, 16], &d)),
        LlmwWriteError::BadDimCount { n_dims: 5, .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::F32, &[16, 0], &d)),
        LlmwWriteError::ZeroDim { index: 1, .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::Q8_0, &[2, 33], &d)),
        LlmwWriteError::Size { .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::F32, &[1 << 40, 1 << 40], &d)),
        LlmwWriteError::Size { .. }
    ));
    assert!(matches!(
        err(w.add_tensor("u", GgmlType::F32, &[15], &d)),
        LlmwWriteError::DataLength { expected: 60, got: 64, .. }
    ));
    // Refused items left no trace: the file still parses with the two good items.
    let f_bytes = w.to_vec().unwrap();
    let f = parse(&f_bytes).unwrap();
    assert_eq!((f.meta_len(), f.tensors().len()), (1, 1));
    assert!(LlmwWriteError::EmptyKey.to_string().contains("empty"));
}

/// A reader that yields `ok` bytes of `byte`, then fails.
struct Failing {
    ok: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.ok);
        buf[..n].fill(7);
        self.ok -= n;
        Ok(n)
    }
}

/// A reader that hands out at most 3 bytes per call and is sometimes interrupted.
struct Trickle<R> {
    inner: R,
    calls: usize,
}

impl<R: Read> Read for Trickle<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls.is_multiple_of(5) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(3);
        self.inner.read(&mut buf[..n])
    }
}

#[test]
fn reader_tensors_write_the_same_bytes_as_slices() {
    let big: Vec<u8> = (0..1_000_003u32 * 4).map(|i| (i % 251) as u8).collect();
    let small: Vec<u8> = (0..68).collect();
    let mut a = LlmwWriter::new();
    a.add_meta_str("k", "v").unwrap();
    a.add_tensor("big", GgmlType::F32, &[1_000_003], &big).unwrap();
    a.add_tensor("small", GgmlType::Q8_0, &[2, 32], &small).unwrap();
    let mut b = LlmwWriter::new();
    b.add_meta_str("k", "v").unwrap();
    b.add_tensor_from_reader("big", GgmlType::F32, &[1_000_003], &big[..]).unwrap();
    b.add_tensor_from_reader(
        "small",
        GgmlType::Q8_0,
        &[2, 32],
        Trickle { inner: &small[..], calls: 0 },
    )
    .unwrap();
    let (a, b) = (a.to_vec().unwrap(), b.to_vec().unwrap());
    assert!(a == b);
    let f = parse(&b).unwrap();
    assert_eq!(f.tensor_data(f.tensor("big").unwrap().info), Some(&big[..]));
}

#[test]
fn readers_must_yield_exactly_the_size() {
    let short = [0u8; 63];
    let mut w = LlmwWriter::new();
    w.add_tensor_from_reader("t", GgmlType::F32, &[16], &short[..]).unwrap();
    assert!(matches!(
        w.to_vec(),
        Err(LlmwWriteError::ReaderTooShort { expected: 64, got: 63, .. })
    ));
    let long = [0u8; 65];
    let mut w = LlmwWriter::new();
    w.add_tensor_from_reader("t", GgmlType::F32, &[16], &long[..]).unwrap();
    assert!(matches!(w.to_vec(), Err(LlmwWriteError::ReaderTooLong { expected: 64, .. })));
    let mut w = LlmwWriter::new();
    w.add_tensor_from_reader("t", GgmlType::F32, &[16], Failing { ok: 10 }).unwrap();
    assert!(matches!(w.to_vec(), Err(LlmwWriteError::Io(e)) if e.to_string() == "disk on fire"));
}

#[test]
fn write_to_path_writes_the_same_bytes_and_replaces_atomically() {
    let dir = Scratch::new("path-ok");
    let dest = dir.0.join("model.llmw");
    std::fs::write(&dest, b"old contents").unwrap();
    let data = sample_data();
    let n = sample_writer(&data).write_to_path(&dest).unwrap();
    let written = std::fs::read(&dest).unwrap();
    assert_eq!(n, written.len() as u64);
    assert!(written == sample_file());
    assert_eq!(dir.entries(), vec!["model.llmw".to_string()], "no temporary file left");
}

#[test]
fn a_failed_write_leaves_no_file_at_the_destination() {
    let dir = Scratch::new("path-fail");
    let dest = dir.0.join("model.llmw");
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.name", "x").unwrap();
    // Fails after 1 MiB of tensor data has gone to the temporary file.
    w.add_tensor_from_reader("t", GgmlType::F32, &[1 << 20], Failing { ok: 1 << 20 }).unwrap();
    let err = w.write_to_path(&dest).unwrap_err();
    assert!(matches!(err, LlmwWriteError::Io(_)), "{err}");
    assert!(!dest.exists(), "no file at the destination");
    assert!(dir.entries().is_empty(), "temporary file removed: {:?}", dir.entries());

    // An existing file is left untouched by a failed write.
    std::fs::write(&dest, b"old contents").unwrap();
    let short = [0u8; 10];
    let mut w = LlmwWriter::new();
    w.add_tensor_from_reader("t", GgmlType::F32, &[16], &short[..]).unwrap();
    assert!(matches!(w.write_to_path(&dest), Err(LlmwWriteError::ReaderTooShort { .. })));
    assert_eq!(std::fs::read(&dest).unwrap(), b"old contents");
    assert_eq!(dir.entries(), vec!["model.llmw".to_string()]);
}

#[test]
fn a_destination_without_a_file_name_is_refused() {
    let err = LlmwWriter::new().write_to_path("/").unwrap_err();
    assert!(
        matches!(err, LlmwWriteError::Io(ref e) if e.kind() == io::ErrorKind::InvalidInput),
        "{err}"
    );
}

/// The example in docs/llmw.md, byte for byte.
#[test]
fn the_docs_example_is_byte_exact() {
    let data: Vec<u8> = (0..24).collect();
    let mut w = LlmwWriter::new();
    w.add_meta_strs("tokens", ["a", "bc"]).unwrap();
    w.add_tensor("w", GgmlType::F32, &[2, 3], &data).unwrap();
    let bytes = w.to_vec().unwrap();
    let mut expect = Vec::new();
    expect.extend(b"LLMW");
    expect.extend([2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
    expect.extend([6, 0, 0, 0]);
    expect.extend(b"tokens");
    expect.push(5);
    expect.extend([2, 0, 0, 0, 1, 0, 0, 0, b'a', 2, 0, 0, 0, b'b', b'c']);
    expect.extend([1, 0, 0, 0, b'w']);
    expect.extend([0, 0, 0, 0, 2, 0, 0, 0]);
    expect.extend(2u64.to_le_bytes());
    expect.extend(3u64.to_le_bytes());
    assert_eq!(expect.len(), 71);
    expect.extend(128u64.to_le_bytes());
    expect.extend(24u64.to_le_bytes());
    assert_eq!(expect.len(), 87);
    expect.resize(128, 0);
    expect.extend(&data);
    assert_eq!(bytes, expect);
    assert_eq!(bytes.len(), 152);
    assert_eq!(u32::from_le_bytes(*b"LLMW"), 0x574D_4C4C);
}
