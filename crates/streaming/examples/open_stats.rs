//! Opens a GGUF through the seam and prints what it cost: reads, bytes, time, and the
//! process's peak resident memory before and after (Linux `/proc/self/status`).
//!
//! `cargo run --release -p sipllm-streaming --example open_stats -- FILE [pread|mmap]`
//!
//! The Llama-3-shaped file the tests and benches use is `target/tmp/llama3-like.gguf` (made
//! by `cargo test -p sipllm-streaming --test contract`).

use std::process::ExitCode;
use std::time::Instant;

use sipllm_streaming::{Backend, GgufFile, OpenOptions, WeightSource};

/// `VmHWM` (peak resident set) and `VmRSS` in KiB, where the platform has them.
fn memory_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse::<u64>().ok()
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: open_stats FILE [pread|mmap]");
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
    let before = memory_kib();
    let start = Instant::now();
    let file = match GgufFile::open(&path, &OpenOptions::default().with_backend(backend)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e} [{}]\n  help: {}", e.code(), e.help());
            return ExitCode::from(1);
        }
    };
    let elapsed = start.elapsed();
    let after = memory_kib();
    let stats = file.header_stats();
    println!(
        "{path} ({}): {} tensors, {} keys, data offset {} B",
        backend.name(),
        file.tensors().len(),
        file.meta_keys().count(),
        stats.data_offset
    );
    println!(
        "open: {:.2} ms, {} reads, {} B read, header buffer capacity {} B",
        elapsed.as_secs_f64() * 1e3,
        stats.reads,
        stats.bytes_read,
        stats.capacity
    );
    if let (Some((hwm0, rss0)), Some((hwm1, _))) = (before, after) {
        let extra = hwm1.saturating_sub(hwm0.max(rss0));
        println!(
            "peak RSS: {hwm0} KiB before, {hwm1} KiB after: +{extra} KiB ({:.3} x data offset)",
            (extra * 1024) as f64 / stats.data_offset as f64
        );
    }
    ExitCode::SUCCESS
}
