//! Tensor reads through the seam: row-major shapes, the checks every read makes, readahead,
//! and the seam's object safety.

use crate::common::{Instrumented, TempFile};
use sipllm_gguf::{GgmlType, Profile};
use sipllm_streaming::{
    Backend, FileBacking, GgufFile, MemSource, OpenOptions, ReadAt, StreamErrorKind, WeightSource,
};
use sipllm_testkit::{GgufBuilder, Tensor};

/// An f32 matrix with `n_out` rows of `n_in` values, element (r, c) = 10 r + c.
fn matrix_bytes(n_out: u64, n_in: u64) -> Vec<u8> {
    (0..n_out)
        .flat_map(|r| (0..n_in).map(move |c| (10 * r + c) as f32))
        .flat_map(f32::to_le_bytes)
        .collect()
}

#[test]
fn shapes_are_row_major_gguf_dims_reversed() {
    // A [n_out, n_in] = [2, 3] matrix is stored with GGUF ne = [n_in, n_out] = [3, 2]: ne[0]
    // is the row length (fastest-varying), and the seam's shape[0] is n_out.
    let (n_out, n_in) = (2u64, 3u64);
    let bytes = GgufBuilder::new()
        .tensor_info(Tensor {
            name: b"w".to_vec(),
            dims: vec![n_in, n_out],
            type_code: GgmlType::F32.code(),
            offset: None,
            n_dims: None,
            data: Some(matrix_bytes(n_out, n_in)),
        })
        .tensor("bias", GgmlType::F32, &[n_out])
        .tensor("cube", GgmlType::F16, &[4, 3, 2])
        .build();
    let file = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap();
    let w = file.find("w").unwrap();
    assert_eq!(file.gguf().tensor("w").unwrap().info.dims(), &[3, 2], "GGUF ne = [n_in, n_out]");
    assert_eq!(w.shape.as_slice(), &[2, 3], "row-major shape = [n_out, n_in]");
    assert_eq!(w.element_count(), Some(6));
    assert_eq!(file.find("bias").unwrap().shape.as_slice(), &[2]);
    assert_eq!(file.find("cube").unwrap().shape.as_slice(), &[2, 3, 4]);

    // Row r of the matrix is the r-th run of n_in values: reading row 1 gives (1, 0..3).
    let row_bytes = n_in * 4;
    let mut row = vec![0u8; row_bytes as usize];
    file.read_raw_at(w.abs_offset + row_bytes, &mut row).unwrap();
    let row: Vec<f32> =
        row.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(row, [10.0, 11.0, 12.0]);
}

fn small_file() -> GgufFile {
    let bytes = GgufBuilder::new()
        .tensor("a", GgmlType::F32, &[8, 4])
        .tensor("b", GgmlType::F32, &[16])
        .build();
    GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap()
}

#[test]
fn read_raw_checks_the_buffer_size() {
    let file = small_file();
    let a = file.find("a").unwrap();
    for len in [0, 1, 127] {
        let err = file.read_raw(a, &mut vec![0u8; len]).unwrap_err();
        assert_eq!(err.code(), "streaming::read::size_mismatch");
        assert_eq!(
            err.to_string(),
            format!("tensor \"a\" has 128 bytes but the destination buffer has {len}")
        );
    }
}

/// A longer buffer is filled from the start and the count returned; its tail is untouched.
#[test]
fn read_raw_fills_a_prefix_of_a_longer_buffer() {
    let file = small_file();
    let a = file.find("a").unwrap();
    let mut exact = vec![0u8; 128];
    assert_eq!(file.read_raw(a, &mut exact).unwrap(), 128);
    let mut long = vec![0xaau8; 300];
    assert_eq!(file.read_raw(a, &mut long).unwrap(), 128);
    assert_eq!(long[..128], exact[..]);
    assert!(long[128..].iter().all(|&b| b == 0xaa), "the tail is left as it was");
}

#[test]
fn read_tensor_returns_the_bytes_or_names_the_missing_tensor() {
    let file = small_file();
    let a = file.find("a").unwrap();
    let mut exact = vec![0u8; a.byte_len().unwrap()];
    file.read_raw(a, &mut exact).unwrap();
    assert_eq!(file.read_tensor("a").unwrap(), exact);
    let err = file.read_tensor("nope").unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::missing");
    assert_eq!(err.to_string(), "no tensor named \"nope\"");
    // Through the boxed seam too.
    let boxed: Box<dyn WeightSource> = Box::new(small_file());
    assert_eq!(boxed.read_tensor("a").unwrap(), exact);
}

#[test]
fn read_raw_rejects_a_tensor_info_from_elsewhere() {
    let file = small_file();
    let mut foreign = file.find("a").unwrap().clone();
    foreign.abs_offset += 32;
    let err = file.read_raw(&foreign, &mut [0u8; 128]).unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::not_in_source");
    let mut renamed = file.find("b").unwrap().clone();
    renamed.name = "a".into();
    let err = file.read_raw(&renamed, &mut [0u8; 64]).unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::not_in_source");
    assert_eq!(err.offset(), Some(renamed.abs_offset));
}

#[test]
fn read_raw_at_is_bounds_checked() {
    let file = small_file();
    let size = file.file_size();
    file.read_raw_at(size - 4, &mut [0u8; 4]).unwrap();
    file.read_raw_at(size, &mut []).unwrap();
    for (offset, len) in [(size - 3, 4usize), (size + 1, 0), (u64::MAX, 2)] {
        let err = file.read_raw_at(offset, &mut vec![0u8; len]).unwrap_err();
        assert_eq!(err.code(), "streaming::read::out_of_bounds", "{offset} {len}");
        assert_eq!(
            err.to_string(),
            format!(
                "a read of {len} bytes at offset {} reaches outside the file ({} bytes)",
                sipllm_format::group(offset),
                sipllm_format::group(size)
            )
        );
    }
}

#[test]
fn unknown_types_are_listed_leniently_but_not_readable() {
    let bytes = GgufBuilder::new()
        .tensor("known", GgmlType::F32, &[8])
        .tensor_info(Tensor {
            name: b"future".to_vec(),
            dims: vec![8],
            type_code: 99,
            offset: Some(64),
            n_dims: None,
            data: Some(vec![7u8; 32]),
        })
        .build();
    let strict = GgufFile::from_source(MemSource::new(bytes.clone()), &OpenOptions::default());
    assert_eq!(strict.unwrap_err().code(), "gguf::tensor::unknown_type");

    let opts = OpenOptions::default().with_profile(Profile::Lenient);
    let file = GgufFile::from_source(MemSource::new(bytes), &opts).unwrap();
    let future = file.find("future").unwrap();
    assert_eq!(future.nbytes, None);
    assert_eq!(future.ggml_type, GgmlType::from_code(99));
    let err = file.read_raw(future, &mut [0u8; 32]).unwrap_err();
    assert_eq!(err.code(), "streaming::tensor::unknown_size");
    assert_eq!(
        err.to_string(),
        "tensor \"future\": the byte size of its type (unknown type 99) is not known"
    );
    assert_eq!(file.prefetch(future).unwrap_err().code(), "streaming::tensor::unknown_size");
    assert_eq!(future.byte_len().unwrap_err().code(), "streaming::tensor::unknown_size");
    // Its bytes are still reachable by offset.
    let mut buf = [0u8; 32];
    file.read_raw_at(future.abs_offset, &mut buf).unwrap();
    assert_eq!(buf, [7u8; 32]);
}

/// Five tensors of 64, 32, 256, 32 and 96 bytes, packed at 32-byte alignment.
fn five_tensors() -> Vec<u8> {
    GgufBuilder::new()
        .tensor("t0", GgmlType::F32, &[16])
        .tensor("t1", GgmlType::F32, &[8])
        .tensor("t2", GgmlType::F32, &[64])
        .tensor("t3", GgmlType::F32, &[8])
        .tensor("t4", GgmlType::F32, &[24])
        .build()
}

#[test]
fn readahead_prefetches_the_next_tensors_in_file_order_once() {
    let bytes = five_tensors();
    let (source, log) = Instrumented::new(MemSource::new(bytes));
    let opts = OpenOptions::default().with_readahead(2);
    let file = GgufFile::from_source(source, &opts).unwrap();
    assert!(log.prefetches().is_empty());
    let t: Vec<_> = file.tensors().to_vec();
    let (off, end) = (|i: usize| t[i].abs_offset, |i: usize| t[i].end().unwrap());
    let read = |i: usize| {
        let mut buf = vec![0u8; t[i].byte_len().unwrap()];
        file.read_raw(&t[i], &mut buf).unwrap();
    };

    // t0: advise t1..t2 as one range.
    read(0);
    assert_eq!(log.prefetches(), [(off(1), end(2) - off(1))]);
    // t1: t2 is covered, so only what follows it, up to the end of t3.
    read(1);
    assert_eq!(log.prefetches()[1..], [(end(2), end(3) - end(2))]);
    // t2: t3 is covered; t4 is new.
    read(2);
    assert_eq!(log.prefetches()[2..], [(end(3), end(4) - end(3))]);
    // t3, t4: everything after them is covered or absent.
    read(3);
    read(4);
    assert_eq!(log.prefetches().len(), 3);
    // Jumping back re-reads without re-advising what the window still covers.
    read(0);
    assert_eq!(log.prefetches().len(), 3);

    // Readahead runs before the copy: each prefetch precedes its read in the log order.
    let reads = log.reads();
    assert_eq!(reads.last(), Some(&(off(0), 64)));
}

#[test]
fn readahead_is_off_by_default_and_prefetch_is_explicit() {
    let bytes = five_tensors();
    let (source, log) = Instrumented::new(MemSource::new(bytes));
    let file = GgufFile::from_source(source, &OpenOptions::default()).unwrap();
    for t in file.tensors() {
        let mut buf = vec![0u8; t.byte_len().unwrap()];
        file.read_raw(t, &mut buf).unwrap();
    }
    assert!(log.prefetches().is_empty());
    let t2 = file.find("t2").unwrap();
    file.prefetch(t2).unwrap();
    assert_eq!(log.prefetches(), [(t2.abs_offset, 256)]);
}

#[test]
fn file_backings_issue_the_advice() {
    let bytes = five_tensors();
    let tmp = TempFile::with_bytes("advice", &bytes);
    for backend in [Backend::Pread, Backend::Mmap] {
        let backing = FileBacking::open(tmp.path(), backend).unwrap();
        assert_eq!(backing.backend(), backend);
        let len = backing.len();
        // fadvise / madvise succeed on in-range, partly-out-of-range and empty ranges.
        backing.prefetch(0, len).unwrap();
        backing.prefetch(len - 10, 1000).unwrap();
        backing.prefetch(len + 10, 1000).unwrap();
        backing.prefetch(5, 0).unwrap();
        // Through the seam, and with readahead on.
        let opts = OpenOptions::default().with_backend(backend).with_readahead(3);
        let file = GgufFile::open(tmp.path(), &opts).unwrap();
        for t in file.tensors() {
            file.prefetch(t).unwrap();
            let mut buf = vec![0u8; t.byte_len().unwrap()];
            file.read_raw(t, &mut buf).unwrap();
            let at = t.abs_offset as usize;
            assert_eq!(&buf[..], &bytes[at..at + buf.len()]);
        }
    }
}

#[test]
fn the_seam_is_object_safe_and_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GgufFile>();
    assert_send_sync::<FileBacking>();
    assert_send_sync::<Box<dyn WeightSource>>();
    let sources: Vec<Box<dyn WeightSource>> = vec![Box::new(small_file())];
    assert_eq!(sources[0].tensors().len(), 2);
    let reader: &dyn ReadAt = &MemSource::new(vec![1u8, 2, 3]);
    assert_eq!(reader.len(), 3);
}

#[test]
fn io_errors_carry_path_offset_and_length() {
    struct Failing;
    impl ReadAt for Failing {
        fn read_exact_at(&self, _: u64, _: &mut [u8]) -> std::io::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        }
        fn len(&self) -> u64 {
            1000
        }
    }
    let err = GgufFile::from_source(Failing, &OpenOptions::default()).unwrap_err();
    assert_eq!(err.code(), "streaming::io::read");
    assert_eq!(err.offset(), Some(0));
    assert!(
        matches!(err.kind(), StreamErrorKind::Io { offset: 0, len: 1000, .. })
            && err.path().is_none(),
        "the first header read asks for min(window, file size): {err:?}"
    );
    assert!(err.to_string().starts_with("I/O error reading 1000 bytes at offset 0: "), "{err}");
}

#[test]
fn open_errors_name_the_path() {
    let missing = std::env::temp_dir().join("sipllm-streaming-does-not-exist.gguf");
    let err = GgufFile::open(&missing, &OpenOptions::default()).unwrap_err();
    assert_eq!(err.code(), "streaming::io::open");
    assert_eq!(err.path(), Some(missing.as_path()));
    assert!(err.to_string().starts_with("cannot open: "), "the path is context: {err}");
    assert!(
        err.located().to_string().starts_with(&format!("{}: cannot open: ", missing.display()))
    );
    let dir = std::env::temp_dir();
    let err = FileBacking::open(&dir, Backend::Mmap).unwrap_err();
    assert_eq!(err.code(), "streaming::io::open");
}

#[test]
fn bad_magic_keeps_the_parser_error_intact() {
    let mut bytes = five_tensors();
    bytes[..4].copy_from_slice(b"GGML");
    let err = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap_err();
    assert_eq!(err.code(), "gguf::header::bad_magic");
    let parse = err.parse_error().unwrap();
    assert_eq!((parse.offset(), parse.len()), (0, 4));
    assert_eq!(err.help(), parse.help());
    assert_eq!(err.to_string(), parse.to_string());
    assert_eq!(
        std::error::Error::source(&err).map(|s| s.to_string()),
        Some(parse.to_string()),
        "the parser error is the source"
    );
}

/// `read_chunked` hands over the tensor's bytes in order, whole when they fit the buffer and in
/// buffer-sized pieces otherwise; an empty buffer is a size error, not an endless loop.
#[test]
fn read_chunked_streams_a_tensor_through_any_buffer() {
    let file = small_file();
    let a = file.find("a").unwrap();
    let whole = file.read_tensor("a").unwrap();
    for size in [1usize, 3, 64, 127, 128, 1000] {
        let mut buf = vec![0u8; size];
        let mut got = Vec::new();
        let mut pieces = 0;
        let n = file
            .read_chunked(a, &mut buf, &mut |p| {
                pieces += 1;
                got.extend_from_slice(p)
            })
            .unwrap();
        assert_eq!(n, 128);
        assert_eq!(got, whole, "buffer of {size}");
        assert_eq!(pieces, 128usize.div_ceil(size), "buffer of {size}");
    }
    let e = file.read_chunked(a, &mut [], &mut |_| {}).unwrap_err();
    assert_eq!(e.code(), "streaming::read::size_mismatch");
}
