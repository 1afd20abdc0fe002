//! `LlmwFile`, the `.llmw` weight source: the streaming contract (header plus at most one
//! window, contiguous reads; one read per tensor; readahead), the `.llmw` parse options, the
//! store's checks, and hostile input (every prefix, single-byte corruptions) — the guarantees
//! `GgufFile` has, through the same code.

use std::sync::Arc;

use crate::common::{Instrumented, TempDir};
use sipllm_edit::toy::{ToyConfig, ToyModel};
use sipllm_streaming::{
    Backend, LlmwFile, MemSource, Meta, OpenOptions, StreamErrorKind, WeightSource, open_model_from,
};

/// A small toy model (one layer, 8 tokens): 1 + 9 + 2 tensors.
fn small() -> ToyModel {
    ToyConfig { n_vocab: 8, n_layer: 1, n_ff: 32, ..ToyConfig::new(11) }.build().unwrap()
}

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
fn opening_reads_the_header_plus_at_most_one_window() {
    // 3,000 tokens: a header of tens of KB, so small windows take many reads.
    let model = ToyConfig { n_vocab: 3000, ..ToyConfig::new(2) }.build().unwrap();
    let bytes = model.llmw_bytes().unwrap();
    for window in [1usize, 64, 1000, 4096, 1 << 20] {
        let (source, log) = Instrumented::new(MemSource::new(bytes.clone()));
        let file =
            LlmwFile::from_source(source, &OpenOptions::default().with_window(window)).unwrap();
        let data_start = file.llmw().data_start();
        assert!(data_start > 20_000, "{data_start}");
        let reads = log.reads();
        let read_end = assert_contiguous_from_zero(&reads);
        let w = window as u64;
        assert!(read_end >= data_start, "window {window}: the whole header was read");
        assert!(read_end <= data_start + w, "window {window}: {read_end} bytes read");
        if window >= 64 {
            // Items are at most one window here, so every read but the last is one window.
            assert!(reads.len() as u64 <= data_start.div_ceil(w) + 1, "window {window}");
        }
        let stats = file.header_stats();
        assert_eq!(stats.bytes_read, read_end);
        assert_eq!(stats.reads, reads.len() as u64);
        assert_eq!(stats.data_offset, data_start);
        assert!(log.prefetches().is_empty(), "opening issues no readahead");

        // Metadata and lookups read nothing.
        log.clear();
        assert_eq!(file.meta_strs("tokenizer.ggml.tokens").unwrap().iter().count(), 3000);
        assert_eq!(file.meta_uint("llama.block_count").unwrap(), 2);
        assert_eq!(file.metadata().count(), model.metadata().len());
        assert!(file.find("output.weight").is_some());
        assert!(log.reads().is_empty());

        // A tensor read is one read of exactly its bytes.
        let t = file.find("blk.1.attn_v.weight").unwrap();
        let mut buf = vec![0u8; t.byte_len().unwrap()];
        file.read_raw(t, &mut buf).unwrap();
        assert_eq!(log.reads(), [(t.abs_offset, t.nbytes.unwrap())]);
        assert_eq!(buf, model.tensor(&t.name).unwrap().data);
    }
}

#[test]
fn readahead_advises_the_next_tensors_in_file_order() {
    let bytes = small().llmw_bytes().unwrap();
    let (source, log) = Instrumented::new(MemSource::new(bytes));
    let file = LlmwFile::from_source(source, &OpenOptions::default().with_readahead(2)).unwrap();
    let ts = file.tensors();
    let mut buf = vec![0u8; ts[0].byte_len().unwrap()];
    file.read_raw(&ts[0], &mut buf).unwrap();
    assert_eq!(log.prefetches(), [(ts[1].abs_offset, ts[2].end().unwrap() - ts[1].abs_offset)]);
    file.prefetch(&ts[5]).unwrap();
    assert_eq!(log.prefetches()[1], (ts[5].abs_offset, ts[5].nbytes.unwrap()));

    // Both file backends take the advice.
    let dir = TempDir::new("llmw-readahead");
    let path = dir.path().join("small.llmw");
    std::fs::write(&path, small().llmw_bytes().unwrap()).unwrap();
    for backend in [Backend::Pread, Backend::Mmap] {
        let opts = OpenOptions::default().with_backend(backend).with_readahead(3);
        let file = LlmwFile::open(&path, &opts).unwrap();
        assert_eq!(file.path(), Some(path.as_path()));
        assert_eq!(file.store().readahead(), 3);
        for t in file.tensors() {
            file.prefetch(t).unwrap();
            let mut buf = vec![0u8; t.byte_len().unwrap()];
            file.read_raw(t, &mut buf).unwrap();
        }
    }
}

#[test]
fn the_store_checks_every_request() {
    let file = LlmwFile::from_source(
        MemSource::new(small().llmw_bytes().unwrap()),
        &OpenOptions::default(),
    )
    .unwrap();
    let t = file.tensors()[1].clone();
    let mut short = vec![0u8; t.byte_len().unwrap() - 1];
    let err = file.read_raw(&t, &mut short).unwrap_err();
    assert_eq!(err.code(), "streaming::read::size_mismatch");
    let mut moved = t.clone();
    moved.abs_offset += 64;
    let mut buf = vec![0u8; t.byte_len().unwrap()];
    assert_eq!(
        file.read_raw(&moved, &mut buf).unwrap_err().code(),
        "streaming::tensor::not_in_source"
    );
    let mut past = [0u8; 2];
    let err = file.read_raw_at(file.file_size() - 1, &mut past).unwrap_err();
    assert_eq!(err.code(), "streaming::read::out_of_bounds");
    assert_eq!(file.meta_int("absent").unwrap_err().code(), "streaming::meta::missing");
    assert_eq!(
        file.meta_int("tokenizer.ggml.tokens").unwrap_err().to_string(),
        "metadata key \"tokenizer.ggml.tokens\": expected integer, found string array"
    );
}

#[test]
fn llmw_parse_options_apply() {
    let bytes = small().llmw_bytes().unwrap();
    let limits = sipllm_llmw::Limits { max_array_len: 4, ..Default::default() };
    let opts =
        OpenOptions::default().with_llmw(sipllm_llmw::ParseOptions::default().with_limits(limits));
    let err = LlmwFile::from_source(MemSource::new(bytes.clone()), &opts).unwrap_err();
    assert_eq!(err.code(), "llmw::limits::array_too_long");
    assert!(err.to_string().contains("tokenizer.ggml.tokens"), "{err}");
    // GGUF options do not affect a .llmw file (and the reverse).
    let gguf_strict = OpenOptions::default().with_profile(sipllm_gguf::Profile::Strict);
    assert!(LlmwFile::from_source(MemSource::new(bytes), &gguf_strict).is_ok());
}

/// llama.cpp reads only GGUF, so under the llama-cpp profile ("will llama.cpp load this?") a
/// `.llmw` file is refused for its magic through every opener, as ggml's `gguf_init_from_file`
/// refuses it ("invalid magic characters", ggml d99724f2); the other profiles open it.
#[test]
fn the_llama_cpp_profile_refuses_llmw_for_its_magic() {
    use sipllm_edit::toy;
    use sipllm_gguf::{ErrorKind, Profile};
    use sipllm_streaming::Model;
    let dir = TempDir::new("llmw-llama-cpp");
    let files = toy::write_toy(3, dir.path()).unwrap();
    let bytes = std::fs::read(&files.llmw).unwrap();
    let llama = OpenOptions::default().with_profile(Profile::LlamaCpp);
    let results = [
        Model::open(&files.llmw, &llama),
        Model::open_with_file(&files.llmw, false, &llama).map(|(_, m)| m),
        Model::from_source(MemSource::new(bytes.clone()), &llama),
    ];
    for result in results {
        match result.unwrap_err().into_kind() {
            StreamErrorKind::Parse { source, .. } => {
                assert_eq!(source.kind(), &ErrorKind::BadMagic { found: *b"LLMW" });
                assert_eq!((source.offset(), source.code()), (0, "gguf::header::bad_magic"));
                assert!(source.help().contains("llama.cpp"), "{}", source.help());
            }
            other => panic!("expected the GGUF parser's bad magic, got {other}"),
        }
    }
    assert!(Model::open(&files.gguf, &llama).is_ok(), "the toy GGUF loads under llama-cpp");
    for profile in [Profile::Strict, Profile::Lenient] {
        let opts = OpenOptions::default().with_profile(profile);
        assert!(Model::open(&files.llmw, &opts).is_ok(), "{profile:?}");
        assert!(Model::from_source(MemSource::new(bytes.clone()), &opts).is_ok(), "{profile:?}");
    }
}

/// Opens `bytes` as a model of either format; on success reads every tensor and walks every
/// metadata value. The error code otherwise.
fn exercise(bytes: &[u8], opts: &OpenOptions) -> Result<usize, String> {
    let file = open_model_from(MemSource::new(Arc::<[u8]>::from(bytes)), opts)
        .map_err(|e| e.code().to_string())?;
    for t in file.tensors() {
        let mut buf = vec![0u8; t.byte_len().unwrap()];
        file.read_raw(t, &mut buf).unwrap_or_else(|e| panic!("{}: {e}", t.name));
        let end = t.end().unwrap();
        assert!(end <= bytes.len() as u64);
        assert_eq!(&buf[..], &bytes[t.abs_offset as usize..end as usize]);
    }
    for (_, v) in file.metadata() {
        match v {
            Meta::Ints(l) => assert_eq!(l.iter().count(), l.len()),
            Meta::Floats(l) => assert_eq!(l.iter().count(), l.len()),
            Meta::Strs(l) => assert_eq!(l.iter().count(), l.len()),
            _ => {}
        }
    }
    Ok(file.tensors().len())
}

#[test]
fn every_prefix_opens_only_when_the_data_is_complete() {
    let bytes = small().llmw_bytes().unwrap();
    let opts = OpenOptions::default();
    let full = LlmwFile::from_source(MemSource::new(bytes.clone()), &opts).unwrap();
    let data_start = full.llmw().data_start() as usize;
    for cut in 0..=bytes.len() {
        let result = exercise(&bytes[..cut], &opts);
        match cut {
            0..4 => assert_eq!(result.unwrap_err(), "streaming::open::too_short", "cut {cut}"),
            _ if cut == bytes.len() => assert_eq!(result, Ok(12)),
            _ if cut < data_start => {
                assert_eq!(result.unwrap_err(), "llmw::input::unexpected_eof", "cut {cut}")
            }
            _ => assert_eq!(result.unwrap_err(), "llmw::layout::out_of_bounds", "cut {cut}"),
        }
    }
    // Cut inside the data, the error names the first tensor that does not fit.
    let cut = bytes[..bytes.len() - 1].to_vec();
    let err = LlmwFile::from_source(MemSource::new(cut), &opts).unwrap_err();
    let last = full.tensors().last().unwrap();
    assert!(err.to_string().contains(&format!("{:?}", last.name)), "{err}");
    assert!(matches!(err.kind(), StreamErrorKind::ParseLlmw { .. }));
}

#[test]
fn single_byte_corruptions_never_panic() {
    let bytes = small().llmw_bytes().unwrap();
    let opts = OpenOptions::default().with_readahead(1);
    let data_start =
        LlmwFile::from_source(MemSource::new(bytes.clone()), &opts).unwrap().llmw().data_start();
    let mut opened = 0;
    let mut codes = std::collections::BTreeSet::new();
    // Every byte of the header, directory and padding, and the first bytes of the data.
    for i in 0..(data_start as usize + 64) {
        for flip in [0xff, 0x01, 0x80] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            match exercise(&bad, &opts) {
                Ok(_) => opened += 1,
                Err(code) => {
                    assert!(
                        code.starts_with("llmw::") || code.starts_with("streaming::"),
                        "{code}"
                    );
                    codes.insert(code);
                }
            }
        }
    }
    // Flips inside strings and data still open; the rest are coded errors of many kinds.
    assert!(opened > 0, "{opened}");
    assert!(codes.contains("streaming::open::unknown_magic"), "{codes:?}");
    assert!(codes.len() >= 6, "{codes:?}");
}
