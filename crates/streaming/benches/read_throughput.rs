//! Sequential whole-model `read_raw` throughput from the page cache, beside a plain pread
//! loop over the same byte ranges into the same buffer, in the same run.
//!
//! The model is a real-data GGUF of ~2 GiB (the first tensors of the Llama-3-8B Q4_K_M
//! layout: the 295 MB embedding, then whole layers), written once under the target directory
//! (`target/tmp/throughput.gguf`) and reused. Run:
//! `cargo bench -p sipllm-streaming --bench read_throughput`.

use std::fs::{self, File};
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use sipllm_gguf::{ggml::align_up, ggml::tensor_nbytes};
use sipllm_streaming::{Backend, GgufFile, OpenOptions, WeightSource};
use sipllm_testkit::{GgufBuilder, Tensor, Value, llama3};

const TARGET_BYTES: u64 = 2 << 30;

/// Builds (or reuses) the throughput file; returns its path.
fn data_file() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("throughput.gguf");
    let mut b = GgufBuilder::new().kv("general.architecture", Value::str("llama"));
    let mut total = 0u64;
    for (name, dims, ty) in llama3::tensors(128_256) {
        let n = align_up(tensor_nbytes(ty, &dims).unwrap(), 32).unwrap();
        if total + n > TARGET_BYTES {
            break;
        }
        total += n;
        b = b.tensor_info(Tensor {
            name: name.into_bytes(),
            dims,
            type_code: ty.code(),
            offset: None,
            n_dims: None,
            data: None,
        });
    }
    let mut header = b.build_header();
    header.resize(align_up(header.len() as u64, 32).unwrap() as usize, 0);
    let size = header.len() as u64 + total;
    let fresh = fs::metadata(&path).is_ok_and(|m| m.len() == size) && {
        let f = File::open(&path).unwrap();
        let mut prefix = vec![0u8; header.len()];
        f.read_exact_at(&mut prefix, 0).is_ok() && prefix == header
    };
    if !fresh {
        eprintln!("writing {} ({size} bytes of real data)", path.display());
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp).unwrap());
        w.write_all(&header).unwrap();
        // Non-zero, non-repeating-per-page data, so every page is real in the page cache.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut chunk = vec![0u8; 1 << 20];
        let mut left = total;
        while left > 0 {
            for word in chunk.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                word.copy_from_slice(&x.to_le_bytes());
            }
            let n = left.min(chunk.len() as u64) as usize;
            w.write_all(&chunk[..n]).unwrap();
            left -= n as u64;
        }
        w.into_inner().unwrap().sync_all().unwrap();
        fs::rename(&tmp, &path).unwrap();
    }
    path
}

fn bench_read(c: &mut Criterion) {
    let path = data_file();
    let probe = GgufFile::open(&path, &OpenOptions::default()).unwrap();
    let ranges: Vec<(u64, usize)> =
        probe.tensors().iter().map(|t| (t.abs_offset, t.byte_len().unwrap())).collect();
    let total: u64 = ranges.iter().map(|r| r.1 as u64).sum();
    let max = ranges.iter().map(|r| r.1).max().unwrap();
    eprintln!("{}: {} tensors, {total} tensor bytes, largest {max}", path.display(), ranges.len());
    drop(probe);
    let mut buf = vec![0u8; max];

    paired_summary(&path, &ranges, &mut buf, total);

    let mut group = c.benchmark_group("read_throughput");
    group.throughput(Throughput::Bytes(total));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(8));

    let f = File::open(&path).unwrap();
    group.bench_function("plain_pread_loop", |b| {
        b.iter(|| {
            for &(offset, len) in &ranges {
                f.read_exact_at(&mut buf[..len], offset).unwrap();
            }
            black_box(&buf);
        })
    });
    for (name, backend, readahead) in VARIANTS {
        let opts = OpenOptions::default().with_backend(backend).with_readahead(readahead);
        let file = GgufFile::open(&path, &opts).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                for t in file.tensors() {
                    let len = t.byte_len().unwrap();
                    file.read_raw(t, &mut buf[..len]).unwrap();
                }
                black_box(&buf);
            })
        });
    }
    group.finish();
}

const VARIANTS: [(&str, Backend, usize); 4] = [
    ("read_raw_pread", Backend::Pread, 0),
    ("read_raw_pread_readahead2", Backend::Pread, 2),
    ("read_raw_mmap", Backend::Mmap, 0),
    ("read_raw_mmap_readahead2", Backend::Mmap, 2),
];

/// Interleaved passes (plain loop, then each variant, repeated): the ratio to the plain loop
/// from passes taken side by side, which drifts far less on a shared machine than separate
/// criterion groups run a minute apart.
fn paired_summary(path: &Path, ranges: &[(u64, usize)], buf: &mut [u8], total: u64) {
    const ROUNDS: usize = 9;
    let f = File::open(path).unwrap();
    let files: Vec<GgufFile> = VARIANTS
        .iter()
        .map(|&(_, backend, readahead)| {
            let opts = OpenOptions::default().with_backend(backend).with_readahead(readahead);
            GgufFile::open(path, &opts).unwrap()
        })
        .collect();
    let mut times = vec![Vec::new(); 1 + files.len()];
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for &(offset, len) in ranges {
            f.read_exact_at(&mut buf[..len], offset).unwrap();
        }
        times[0].push(start.elapsed().as_secs_f64());
        for (file, t) in files.iter().zip(&mut times[1..]) {
            let start = Instant::now();
            for tensor in file.tensors() {
                let len = tensor.byte_len().unwrap();
                file.read_raw(tensor, &mut buf[..len]).unwrap();
            }
            t.push(start.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let plain = median(&mut times[0]);
    let gib = total as f64 / f64::from(1u32 << 30);
    eprintln!("paired summary ({ROUNDS} interleaved rounds, median per pass):");
    eprintln!("  plain_pread_loop: {:.1} ms, {:.2} GiB/s", plain * 1e3, gib / plain);
    for ((name, ..), t) in VARIANTS.iter().zip(&mut times[1..]) {
        let m = median(t);
        eprintln!(
            "  {name}: {:.1} ms, {:.2} GiB/s, {:.1} % of the plain loop's throughput",
            m * 1e3,
            gib / m,
            100.0 * plain / m
        );
    }
}

criterion_group!(benches, bench_read);
criterion_main!(benches);
