//! The streaming contract on the Llama-3-shaped file (4.9 GB apparent, sparse): opening reads
//! the header, directory and padding plus at most one window, in O(header / window) reads,
//! each byte once, front to back; tensor bytes move only through `read_raw` / `read_raw_at`.

use crate::common::{Instrumented, LLAMA3_DATA_OFFSET, LLAMA3_FILE_SIZE, llama3_file};
use sipllm_streaming::{Backend, DEFAULT_WINDOW, FileBacking, GgufFile, OpenOptions, WeightSource};

/// Reads must tile `0..end` in order, each byte once.
fn assert_contiguous_from_zero(reads: &[(u64, u64)]) -> u64 {
    let mut next = 0;
    for &(offset, len) in reads {
        assert_eq!(offset, next, "reads must be contiguous and in order: {reads:?}");
        next += len;
    }
    next
}

#[test]
fn opening_reads_header_plus_at_most_one_window() {
    for window in [DEFAULT_WINDOW, 4096, 1 << 20] {
        let backing = FileBacking::open(llama3_file(), Backend::Pread).unwrap();
        assert_eq!(backing.len(), LLAMA3_FILE_SIZE, "apparent size as the Python script writes");
        let (source, log) = Instrumented::new(backing);
        let file =
            GgufFile::from_source(source, &OpenOptions::default().with_window(window)).unwrap();

        let data_offset = file.gguf().data_offset();
        assert_eq!(data_offset, LLAMA3_DATA_OFFSET, "header + directory + padding");
        assert_eq!(file.tensors().len(), 291);

        let reads = log.reads();
        let read_end = assert_contiguous_from_zero(&reads);
        let w = window as u64;
        assert!(read_end >= data_offset, "the whole header was read");
        assert!(
            read_end <= data_offset + w,
            "window {window}: read {read_end} bytes, more than header {data_offset} + one window"
        );
        // O(header / window): every read but the ones a single large item forced is one
        // window, so there are at most ceil(data_offset / window) + 1 of them.
        let max_reads = data_offset.div_ceil(w) + 1;
        assert!(
            (reads.len() as u64) <= max_reads,
            "window {window}: {} reads, expected at most {max_reads}",
            reads.len()
        );
        assert!(log.prefetches().is_empty(), "opening issues no readahead");

        let stats = file.header_stats();
        assert_eq!(stats.bytes_read, read_end);
        assert_eq!(stats.reads, reads.len() as u64);
        assert!(
            stats.capacity * 4 <= stats.bytes_read * 5 + 4 * w,
            "buffer capacity {} for {} bytes read: more than 1.25x",
            stats.capacity,
            stats.bytes_read
        );
    }
}

#[test]
fn tensor_bytes_move_only_through_read_raw() {
    let backing = FileBacking::open(llama3_file(), Backend::Pread).unwrap();
    let (source, log) = Instrumented::new(backing);
    let file = GgufFile::from_source(source, &OpenOptions::default()).unwrap();
    let opened = log.reads();
    log.clear();

    // Metadata and tensor lookups read nothing: they come from the header buffer.
    assert_eq!(file.meta_uint("llama.block_count").unwrap(), 32);
    assert_eq!(file.meta_strs("tokenizer.ggml.tokens").unwrap().len(), 128_256);
    assert_eq!(file.meta_strs("tokenizer.ggml.merges").unwrap().iter().count(), 280_147);
    let norm = file.find("blk.0.attn_norm.weight").unwrap().clone();
    let last = file.tensors().last().unwrap().clone();
    assert_eq!(last.name, "output.weight");
    assert!(log.reads().is_empty(), "no read without read_raw: {:?}", log.reads());

    // One tensor: one read of exactly its bytes.
    let mut buf = vec![0xAAu8; norm.byte_len().unwrap()];
    file.read_raw(&norm, &mut buf).unwrap();
    assert_eq!(log.reads(), [(norm.abs_offset, 4096 * 4)]);
    assert!(buf.iter().all(|&b| b == 0), "the sparse hole reads as zeros");

    // A few bytes at the very end of the last tensor, which ends at the end of the file.
    let mut tail = [0xAAu8; 64];
    let at = last.end().unwrap() - 64;
    assert_eq!(last.end(), Some(LLAMA3_FILE_SIZE));
    file.read_raw_at(at, &mut tail).unwrap();
    assert_eq!(log.reads(), [(norm.abs_offset, 16384), (at, 64)]);

    // Every byte read at open lies before the first tensor's data plus one window.
    let first_tensor = file.tensors().iter().map(|t| t.abs_offset).min().unwrap();
    assert_eq!(first_tensor, LLAMA3_DATA_OFFSET);
    let open_end = opened.iter().map(|&(o, l)| o + l).max().unwrap();
    assert!(open_end <= first_tensor + DEFAULT_WINDOW as u64);
}

#[test]
fn llama3_opens_with_both_backends_and_shapes_are_row_major() {
    for backend in [Backend::Pread, Backend::Mmap] {
        let opts = OpenOptions::default().with_backend(backend);
        let file = GgufFile::open(llama3_file(), &opts).unwrap();
        assert_eq!(file.store().source().len(), LLAMA3_FILE_SIZE);
        assert_eq!(file.file_size(), LLAMA3_FILE_SIZE);
        let embd = file.find("token_embd.weight").unwrap();
        // GGUF ne = [n_embd, n_vocab]; row-major shape = [n_vocab, n_embd].
        assert_eq!(embd.shape.as_slice(), &[128_256, 4096]);
        assert_eq!(embd.abs_offset, LLAMA3_DATA_OFFSET);
        let q = file.find("blk.31.attn_q.weight").unwrap();
        assert_eq!(q.shape.as_slice(), &[4096, 4096]);
        let k = file.find("blk.0.attn_k.weight").unwrap();
        // [n_out = n_head_kv * head_dim, n_in = n_embd].
        assert_eq!(k.shape.as_slice(), &[1024, 4096]);
        assert_eq!(file.meta_str("general.architecture").unwrap(), "llama");
    }
}
