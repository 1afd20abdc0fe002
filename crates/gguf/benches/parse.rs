//! Parse a Llama-3-8B-shaped header (128,256 tokens, 280,147 merges, ~6 KB chat template,
//! 291 Q4_K_M tensor infos), beside the floor of merely copying the same bytes.
//!
//! Run: `cargo bench -p sipllm-gguf --bench parse`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sipllm_gguf::{Decoder, Event, MetaValue, ParseOptions, Profile, ValueType};
use sipllm_testkit::llama3;

/// The header bytes and padding up to the data section (what a reader must parse).
fn llama3_header(vocab_div: usize) -> Vec<u8> {
    let mut bytes = llama3::builder(vocab_div).build_header();
    let padded = bytes.len().div_ceil(32) * 32;
    bytes.resize(padded, 0);
    bytes
}

fn bench_parse(c: &mut Criterion) {
    for (label, div) in [("llama3", 1), ("llama3-small", 8)] {
        let bytes = llama3_header(div);
        let opts = ParseOptions::default();
        let mut group = c.benchmark_group(label);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.sample_size(50);

        // The floor: copying the header bytes into a buffer that already exists, and into a
        // fresh one (which also pays for faulting its pages in, as a reader does).
        let mut dst = vec![0u8; bytes.len()];
        group.bench_function("floor_memcpy", |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&bytes));
                black_box(&dst);
            })
        });
        group.bench_function("floor_to_vec", |b| b.iter(|| black_box(black_box(&bytes).to_vec())));
        // The floor a reader of a file pays: reading the header bytes from the page cache
        // (docs/benchmarks.md).
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{label}.header"));
        std::fs::write(&path, &bytes).unwrap();
        group.bench_function("floor_read_file", |b| {
            b.iter(|| black_box(std::fs::read(&path).unwrap()))
        });

        // What the format itself costs, measured bare on the parsed arrays' payloads. The
        // string arrays are length-prefixed, so finding where they end is a walk whose every
        // step depends on the length just read: `floor_string_walk` is that plain walk (the
        // parser's speculative walk, src/walk.rs, now beats it). And the strict profile must
        // validate every string as UTF-8: `floor_utf8_validate` is one SIMD pass over them.
        let gguf = sipllm_gguf::parse_with(&bytes[..], &opts).unwrap();
        let arrays: Vec<(u64, &[u8])> = gguf
            .metadata()
            .filter_map(|entry| entry.value.as_array())
            .filter(|a| a.elem_type() == ValueType::String)
            .map(|a| {
                // The payload's place in `bytes`, so the slice outlives the parsed AST.
                let start = a.payload().as_ptr() as usize - bytes.as_ptr() as usize;
                (a.len(), &bytes[start..start + a.payload().len()])
            })
            .collect();
        drop(gguf);
        group.bench_function("floor_string_walk", |b| {
            b.iter(|| {
                let mut total = 0u64;
                for &(count, payload) in black_box(&arrays) {
                    let mut pos = 0usize;
                    for _ in 0..count {
                        let len = payload
                            .get(pos..pos + 8)
                            .map_or(0, |l| u64::from_le_bytes(l.try_into().unwrap()));
                        pos += 8 + len as usize;
                        total += len;
                    }
                }
                black_box(total)
            })
        });
        group.bench_function("floor_utf8_validate", |b| {
            b.iter(|| {
                // Valid as one run: every length prefix here is below 128, hence ASCII.
                for &(_, payload) in black_box(&arrays) {
                    assert!(simdutf8::basic::from_utf8(payload).is_ok());
                }
            })
        });

        group.bench_function("parse_whole_slice", |b| {
            b.iter(|| sipllm_gguf::parse_with(black_box(&bytes[..]), &opts).unwrap())
        });
        // The llama-cpp profile does not check UTF-8 (llama.cpp does not): the difference to
        // `parse_whole_slice` is what validation costs inside the parser.
        let llama = ParseOptions::new(Profile::LlamaCpp);
        group.bench_function("parse_llama_cpp_profile", |b| {
            b.iter(|| sipllm_gguf::parse_with(black_box(&bytes[..]), &llama).unwrap())
        });

        // The streaming path: the same decoder fed 64 KiB at a time into a growing buffer.
        group.bench_function("parse_chunked_64k", |b| {
            b.iter(|| {
                let mut decoder = Decoder::new(opts);
                let mut buf = Vec::new();
                let mut chunks = bytes.chunks(64 << 10);
                loop {
                    match decoder.decode(&buf).unwrap().event {
                        Event::Done => break,
                        Event::NeedMore { .. } => buf.extend_from_slice(chunks.next().unwrap()),
                        _ => {}
                    }
                }
                black_box(decoder.finish().unwrap())
            })
        });

        // Parsing plus decoding every value and array element (what a dump tool does).
        group.bench_function("parse_and_walk", |b| {
            b.iter(|| {
                let gguf = sipllm_gguf::parse_with(&bytes[..], &opts).unwrap();
                let mut n = 0usize;
                for entry in gguf.metadata() {
                    if let MetaValue::Array(a) = entry.value {
                        for v in a.iter() {
                            if let MetaValue::String(s) = v {
                                n += s.len();
                            } else {
                                n += 1;
                            }
                        }
                    }
                }
                black_box(n)
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
