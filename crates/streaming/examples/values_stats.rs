//! Reads one tensor's values through the seam and prints what it cost: `read_f32` (a new
//! output) and `read_f32_at` into that same, already written, buffer, each with its time and
//! the process's peak resident memory beyond the output (Linux `/proc/self/status`).
//!
//! `cargo run --release -p sipllm-streaming --example values_stats -- FILE TENSOR [pread|mmap]
//! [RUNS]`: `read_f32` RUNS times (default 1), each output dropped before the next.

use std::process::ExitCode;
use std::time::Instant;

use sipllm_streaming::{Backend, GgufFile, OpenOptions, WeightSource};

/// `VmHWM` (peak resident set) in KiB, where the platform has it.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(name)) = (args.next(), args.next()) else {
        eprintln!("usage: values_stats FILE TENSOR [pread|mmap] [RUNS]");
        return ExitCode::from(2);
    };
    let backend = match args.next().as_deref() {
        None | Some("pread") => Backend::Pread,
        Some("mmap") => Backend::Mmap,
        Some(other) => {
            eprintln!("unknown backend {other:?}: use pread or mmap");
            return ExitCode::from(2);
        }
    };
    let Ok(runs) = args.next().map_or(Ok(1), |r| r.parse::<usize>()) else {
        eprintln!("RUNS is a count");
        return ExitCode::from(2);
    };
    let file = match GgufFile::open(&path, &OpenOptions::default().with_backend(backend)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e} [{}]\n  help: {}", e.code(), e.help());
            return ExitCode::from(1);
        }
    };
    let Some(t) = file.find(&name).cloned() else {
        eprintln!("no tensor {name:?} in {path}");
        return ExitCode::from(1);
    };
    let report = |what: &str, secs: f64, out_bytes: u64, before: Option<u64>| {
        let extra = match (before, peak_kib()) {
            (Some(b), Some(a)) => {
                format!(
                    ", peak RSS +{} KiB beyond the output",
                    a.saturating_sub(b + out_bytes / 1024)
                )
            }
            _ => String::new(),
        };
        println!(
            "{what}: {:.3} s, {:.2} GB/s of f32 output{extra}",
            secs,
            out_bytes as f64 / 1e9 / secs
        );
    };
    println!(
        "{path} ({}): {name} {} {:?}, {} bytes stored",
        backend.name(),
        t.ggml_type,
        t.shape,
        t.byte_size().unwrap_or(0)
    );
    let before = peak_kib();
    let mut values = Default::default();
    for _ in 0..runs.max(1) {
        drop(values);
        let start = Instant::now();
        values = match file.read_f32(&t) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e} [{}]\n  help: {}", e.code(), e.help());
                return ExitCode::from(1);
            }
        };
        let out_bytes = values.len() as u64 * 4;
        report("read_f32 (new output)", start.elapsed().as_secs_f64(), out_bytes, before);
    }
    let out_bytes = values.len() as u64 * 4;
    let before = peak_kib().map(|p| p.saturating_sub(out_bytes / 1024));
    let start = Instant::now();
    let n = values.len() as u64;
    if let Err(e) = file.read_f32_at(&t, 0..n, &mut values) {
        eprintln!("error: {e} [{}]\n  help: {}", e.code(), e.help());
        return ExitCode::from(1);
    }
    report("read_f32_at (that buffer again)", start.elapsed().as_secs_f64(), out_bytes, before);
    ExitCode::SUCCESS
}
