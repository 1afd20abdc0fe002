//! Chunked and whole parses agree; truncation anywhere before the data section is
//! `unexpected_eof` at the end of the input; truncation inside the data is `out_of_bounds`.

use sipllm_llmw::{Llmw, LlmwWriter, ParseOptions, parse, parse_with};

use crate::support::{Rng, assert_chunkings_agree, metadata, sample_file};

#[test]
fn the_sample_parses_identically_under_every_chunking() {
    let bytes = sample_file();
    let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
    let dir = assert_chunkings_agree(&bytes, &opts).unwrap();
    assert_eq!(dir.header().version, 2);
    assert_eq!(dir.meta().len(), 7);
    assert_eq!(dir.tensors().len(), 3);
    // Without a file size, a header prefix (up to the data section) is enough.
    let prefix = &bytes[..dir.data_start() as usize];
    let header_only = assert_chunkings_agree(prefix, &ParseOptions::default()).unwrap();
    assert_eq!(header_only, dir);
}

#[test]
fn truncation_before_the_data_section_is_unexpected_eof_at_the_end() {
    let bytes = sample_file();
    let whole = parse(&bytes).unwrap();
    let data_start = whole.data_start() as usize;
    for cut in 0..data_start {
        let err = parse(&bytes[..cut]).unwrap_err();
        assert_eq!(err.code(), "llmw::input::unexpected_eof", "cut at {cut}: {err}");
        assert_eq!(err.offset(), cut as u64, "cut at {cut}");
        assert_eq!(err.len(), 0);
        // The chunked decoders agree on the error, path included.
        let opts = ParseOptions::default().with_file_size(Some(cut as u64));
        assert_eq!(assert_chunkings_agree(&bytes[..cut], &opts).unwrap_err(), err);
    }
    for cut in data_start..bytes.len() {
        let err = parse(&bytes[..cut]).unwrap_err();
        assert_eq!(err.code(), "llmw::layout::out_of_bounds", "cut at {cut}: {err}");
    }
}

#[test]
fn truncation_errors_name_the_item() {
    let bytes = sample_file();
    let path_at = |cut: usize| parse(&bytes[..cut]).unwrap_err().path().to_string();
    assert_eq!(path_at(2), "header.magic");
    assert_eq!(path_at(6), "header.version");
    assert_eq!(path_at(13), "header.meta_count");
    assert_eq!(path_at(17), "metadata[0]");
    assert_eq!(path_at(16 + 4 + 20), "metadata[0] \"general.architecture\"");
    // Inside the vocabulary: the element being read.
    let f = parse(&bytes).unwrap();
    let vocab = f.get_entry("tokenizer.tokens").unwrap().info.value_span();
    let third = vocab.offset as usize + (4 + 3) + (4 + 4) + 2;
    assert_eq!(path_at(third), "metadata[5] \"tokenizer.tokens\"[2]");
    let t = f.tensor("blk.0.attn_q.weight").unwrap().info.span();
    assert_eq!(path_at(t.offset as usize + 30), "tensor[1] \"blk.0.attn_q.weight\"");
    assert_eq!(path_at(f.directory().directory_end() as usize + 1), "padding");
}

#[test]
fn a_large_vocabulary_streams_in_small_chunks_without_rescanning() {
    let tokens: Vec<String> = (0..20_000).map(|i| format!("tok{i}·")).collect();
    let mut w = LlmwWriter::new();
    w.add_meta_strs("tokenizer.tokens", &tokens).unwrap();
    w.add_meta_f64s("tokenizer.scores", (0..20_000).map(f64::from)).unwrap();
    let bytes = w.to_vec().unwrap();
    let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
    let dir = assert_chunkings_agree(&bytes, &opts).unwrap();
    let f = Llmw::from_parts(&bytes[..], dir).unwrap();
    let got: Vec<&str> = f.get_str_array("tokenizer.tokens").unwrap().iter().collect();
    assert_eq!(got.len(), 20_000);
    assert_eq!(got[12_345], "tok12345·");
    assert_eq!(f.get_f64_array("tokenizer.scores").unwrap().get(19_999), Some(19_999.0));
}

#[test]
fn random_bytes_never_panic_and_chunkings_agree() {
    // Mutations of a valid file: every outcome is an Ok or an Err, identical in every
    // chunking (the fuzz target's property, run briefly with a fixed seed).
    let base = sample_file();
    let mut rng = Rng::new(2026);
    for _ in 0..300 {
        let mut bytes = base.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        let cut =
            if rng.below(4) == 0 { rng.below(bytes.len() as u64) as usize } else { bytes.len() };
        let bytes = &bytes[..cut];
        let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
        let whole = assert_chunkings_agree(bytes, &opts);
        if let Ok(dir) = whole {
            // Everything the AST offers can be walked.
            let f = parse_with(bytes, &opts).unwrap();
            assert_eq!(f.directory(), &dir);
            let _ = metadata(&f);
            for t in f.tensors() {
                assert!(f.tensor_data(t.info).is_some());
            }
        }
    }
}

#[test]
fn a_huge_declared_length_is_refused_before_its_bytes_are_requested() {
    use sipllm_llmw::{Decoder, Limits};
    // A key declaring 60 MiB (under the string limit) in a file whose header may be 1 MiB:
    // the decoder fails with the 20 bytes it has instead of asking for 60 MiB.
    let mut r = crate::support::Raw::header(1, 0, 1);
    r.u32(60 << 20).bytes(b"abcd");
    let limits = Limits { max_header_bytes: 1 << 20, ..Limits::default() };
    let mut decoder = Decoder::new(ParseOptions::default().with_limits(limits));
    assert_eq!(decoder.decode(&r.buf).unwrap().event, sipllm_llmw::Event::Header);
    let err = decoder.decode(&r.buf).unwrap_err();
    assert_eq!((err.code(), err.offset()), ("llmw::limits::header_too_large", 16));
    // Past the string limit, whatever the header limit.
    let mut r = crate::support::Raw::header(1, 0, 1);
    r.u32(u32::MAX);
    let err = parse(&r.buf).unwrap_err();
    assert_eq!((err.code(), err.offset()), ("llmw::limits::string_too_long", 16));
}
