//! `GgufFile::open` of the Llama-3-shaped file (4.9 GB apparent, sparse: 128,256 tokens,
//! 280,147 merges, 291 tensor infos, 7,715,040 header bytes) beside the floor of one `read`
//! of the same header bytes into a fresh buffer.
//!
//! Run: `cargo bench -p sipllm-streaming --bench open`. The file is built once under the
//! target directory (`target/tmp/llama3-like.gguf`, ~8 MB on disk).

use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sipllm_streaming::{Backend, GgufFile, OpenOptions, WeightSource};

#[path = "../tests/common/mod.rs"]
mod common;

fn bench_open(c: &mut Criterion) {
    let path = common::llama3_file();
    let header = common::LLAMA3_DATA_OFFSET;
    let mut group = c.benchmark_group("open_llama3");
    group.throughput(Throughput::Bytes(header));
    group.sample_size(50);

    // The floor: one `read` of the header bytes into a fresh buffer (open + allocate + read).
    group.bench_function("floor_one_read", |b| {
        b.iter(|| {
            let f = File::open(path).unwrap();
            let mut buf = vec![0u8; header as usize];
            f.read_exact_at(&mut buf, 0).unwrap();
            black_box(buf)
        })
    });
    for (name, opts) in [
        ("pread", OpenOptions::default()),
        ("mmap", OpenOptions::default().with_backend(Backend::Mmap)),
        ("pread_window_1m", OpenOptions::default().with_window(1 << 20)),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let file = GgufFile::open(path, &opts).unwrap();
                assert_eq!(file.tensors().len(), 291);
                black_box(file)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_open);
criterion_main!(benches);
