//! Bounded header reads on hostile inputs (issue 16, item 7): a string length corrupted
//! within the llama-cpp profile's 1 GiB limit is judged without buffering the rest of the
//! file, and a file written with `general.alignment = 2^27` gets its 128 MiB of padding as a
//! hole, not as zeros.

use crate::common::{Instrumented, TempFile};
use sipllm_edit::TensorData;
use sipllm_edit::write::GgufFileBuilder;
use sipllm_gguf::{GgmlType, ParseOptions, Profile, writer::GgufWriter};
use sipllm_streaming::{GgufFile, MemSource, OpenOptions, read_header};
use sipllm_testkit::{GgufBuilder, Value};

/// A model whose last string value is 8 MiB of tensor data away from its length field, with
/// that length corrupted to `len`.
fn corrupted_string_length(len: u64) -> Vec<u8> {
    let mut bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("corrupt-me"))
        .tensor("big", GgmlType::F32, &[2 << 20])
        .build();
    let at = bytes.windows(10).position(|w| w == b"corrupt-me").unwrap() - 8;
    bytes[at..at + 8].copy_from_slice(&len.to_le_bytes());
    bytes
}

/// Under the llama-cpp profile (strings up to 1 GiB) a string length running past the end
/// of the file is judged at once: one window is read, not the 8 MiB after it (a real model
/// buffered 251 MB this way), and the error is the one a whole-file parse gives.
#[test]
fn a_corrupted_string_length_is_judged_before_buffering_the_file() {
    let bytes = corrupted_string_length((1 << 30) - 1);
    let opts = OpenOptions::default().with_parse(ParseOptions::new(Profile::LlamaCpp));
    let (source, log) = Instrumented::new(MemSource::new(bytes.clone()));
    let err = read_header(&source, None, &opts).unwrap_err();
    assert!(
        log.bytes_read() <= 2 * opts.window as u64,
        "{} bytes read for a header of {} bytes",
        log.bytes_read(),
        bytes.len()
    );
    let whole =
        sipllm_gguf::parse_with(&bytes[..], &opts.parse.with_file_size(Some(bytes.len() as u64)))
            .unwrap_err();
    assert_eq!(err.parse_error(), Some(&whole), "the same verdict as a whole-file parse");
    assert_eq!(err.code(), "gguf::input::unexpected_eof");
}

/// The same verdict in every window size, down to 1 byte: the early judgement never changes
/// what the parser says, only how much is read first.
#[test]
fn the_early_judgement_is_the_parsers_own_in_every_window() {
    let bytes = corrupted_string_length(3 << 20);
    for profile in [Profile::Strict, Profile::LlamaCpp, Profile::Lenient] {
        let parse = ParseOptions::new(profile).with_file_size(Some(bytes.len() as u64));
        let whole = sipllm_gguf::parse_with(&bytes[..], &parse).unwrap_err();
        for window in [1, 7, 4096, 64 << 10, 16 << 20] {
            let opts =
                OpenOptions::default().with_parse(ParseOptions::new(profile)).with_window(window);
            let err = read_header(&MemSource::new(bytes.clone()), None, &opts).unwrap_err();
            assert_eq!(err.parse_error(), Some(&whole), "{profile:?}, window {window}");
        }
    }
}

/// A file with `general.alignment = 2^27`: opening it does not make the 128 MiB padding
/// resident (the header buffer holds it as untouched zero pages), the parser still sees it
/// (a non-zero byte in it is warned about), and writing it leaves the padding a hole.
#[test]
fn a_huge_alignment_is_a_hole_on_disk() {
    let align = 1u32 << 27;
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.alignment", Value::Uint32(align))
        .tensor("t", GgmlType::F32, &[8]);
    let header = b.build_header();
    let src = TempFile::new("align27-src");
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(src.path()).unwrap();
        f.write_all(&header).unwrap();
        f.seek(SeekFrom::Start(u64::from(align))).unwrap();
        f.write_all(&[7u8; 32]).unwrap();
    }
    let file = GgufFile::open(src.path(), &OpenOptions::default()).unwrap();
    assert_eq!(file.gguf().data_offset(), u64::from(align));
    assert!(file.gguf().warnings().is_empty(), "{:?}", file.gguf().warnings());

    // Written out: the 128 MiB before the data section is a hole.
    let mut builder = GgufFileBuilder::new(GgufWriter::from_gguf(file.gguf()));
    let data = [7u8; 32];
    builder.set_data(0, TensorData::Bytes(&data));
    let out = TempFile::new("align27-out");
    let stats = builder.write_to_path(out.path()).unwrap();
    assert_eq!(stats.header_len, u64::from(align));
    let written = std::fs::read(out.path()).map(|b| b.len()).unwrap();
    assert_eq!(written as u64, stats.file_size);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let allocated = std::fs::metadata(out.path()).unwrap().blocks() * 512;
        assert!(allocated < 1 << 20, "{allocated} bytes allocated for {written}");
    }
    let back = GgufFile::open(out.path(), &OpenOptions::default()).unwrap();
    assert_eq!(back.gguf().data_offset(), u64::from(align));

    // A non-zero byte in the padding is still seen.
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(src.path()).unwrap();
        f.seek(SeekFrom::Start(u64::from(align) - 5)).unwrap();
        f.write_all(&[1]).unwrap();
    }
    let file = GgufFile::open(src.path(), &OpenOptions::default()).unwrap();
    let codes: Vec<&str> = file.gguf().warnings().iter().map(|w| w.code()).collect();
    assert_eq!(codes, ["gguf::layout::nonzero_padding"]);
}
