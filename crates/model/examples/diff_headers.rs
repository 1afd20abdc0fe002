//! Times the header diff of two models in-process (the issue 17 figure: two Llama-3-8B
//! headers in ≤ 20 ms): `cargo run --release -p sipllm-streaming --example diff_headers -- A B`.
//!
//! Prints the best of 20 runs of opening both files (header and directory only) and of
//! `diff_headers` on the opened models, and the differences found.

use std::time::{Duration, Instant};

use sipllm_model::diff::{DiffOptions, diff_headers};
use sipllm_streaming::{Model, OpenOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [a, b] = args.as_slice() else {
        return Err("usage: diff_headers A B".into());
    };
    let options = OpenOptions::default();
    let (mut open_best, mut diff_best) = (Duration::MAX, Duration::MAX);
    let mut changes = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let (ma, mb) = (Model::open(a, &options)?, Model::open(b, &options)?);
        let opened = t.elapsed();
        let t = Instant::now();
        let d = diff_headers(&ma, &mb, &DiffOptions::metadata_only());
        let diffed = t.elapsed();
        changes = d.metadata.len() + d.tensors.len() + d.file.len();
        open_best = open_best.min(opened);
        diff_best = diff_best.min(diffed);
    }
    println!(
        "open both: {:.2} ms; diff_headers: {:.3} ms; open + diff: {:.2} ms; {changes} difference(s)",
        open_best.as_secs_f64() * 1e3,
        diff_best.as_secs_f64() * 1e3,
        (open_best + diff_best).as_secs_f64() * 1e3,
    );
    Ok(())
}
