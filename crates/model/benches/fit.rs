//! `fit` per configuration, after the header is parsed: the Llama-3-8B-shaped header
//! (291 tensors, 32 layers) at 4k and 128k, with q8_0 caches, -ngl 20, and `max_context`
//! (the `--memory` search: up to 17 fits).
//!
//! Run: `cargo bench -p sipllm-model --bench fit`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sipllm_gguf::{GgmlType, Profile};
use sipllm_model::fit::{self, FitParams, Weight};
use sipllm_streaming::{MemSource, OpenOptions, read_header};
use sipllm_testkit::llama3;

fn bench_fit(c: &mut Criterion) {
    let mut bytes = llama3::builder(1).build_header();
    bytes.resize(bytes.len().div_ceil(32) * 32, 0);
    let options = OpenOptions::default().with_profile(Profile::Lenient);
    let (gguf, _) = read_header(&MemSource::new(bytes), None, &options).expect("parses");
    let (config, list) = fit::from_gguf_header(&gguf).expect("config");
    let weights: Vec<Weight<'_>> =
        list.iter().map(|(n, b)| Weight { name: n, nbytes: *b }).collect();

    let mut group = c.benchmark_group("fit");
    let mut p = FitParams::server();
    p.n_ctx = 4096;
    group.bench_function("llama3_4k", |b| b.iter(|| fit::fit(&config, &weights, black_box(&p))));
    let mut q = FitParams::server();
    q.n_ctx = 131_072;
    q.type_k = GgmlType::Q8_0;
    q.type_v = GgmlType::Q8_0;
    q.n_gpu_layers = 20;
    group.bench_function("llama3_128k_q8_ngl20", |b| {
        b.iter(|| fit::fit(&config, &weights, black_box(&q)))
    });
    group.bench_function("llama3_max_context_16gib", |b| {
        b.iter(|| fit::max_context(&config, &weights, black_box(&p), 16 << 30))
    });
    group.bench_function("config_from_header", |b| {
        b.iter(|| fit::from_gguf_header(black_box(&gguf)))
    });
    group.finish();
}

criterion_group!(benches, bench_fit);
criterion_main!(benches);
