//! Single-thread dequantization throughput (GB/s of f32 output) of sipllm-quants (dispatched
//! and scalar kernels, and over 2 threads), candle-core and optionally gguf-py, on the same
//! random blocks, in one run.
//!
//!     cargo run --release -- [--mb 250] [--runs 5] [--fresh | --chunk KIB]
//!                            [--gguf-py PYTHON] [--gguf-py-mb 25] [TYPE...]
//!
//! `--roofline` prints the machine's write ceilings instead (src/roofline.rs).
//! `--hash` prints an FNV-1a hash of the values' bits (to compare with other readers).
//! `--cpu-time` times one-thread runs by the thread's CPU time instead of the wall clock.
//! `--fresh` times every run as each library's own call that returns new values (allocation
//! and page faults included: ours `dequantize_to_values` into a `Values`, candle
//! `QTensor::dequantize(&Device::Cpu)`, which is `vec![0f32; n]` + `to_float`) instead of
//! the kernels into one reused, pre-faulted buffer. `--chunk KIB` runs every library's kernel
//! over the input piece by piece, each piece's values into one reused buffer of that size
//! that stays in cache (how an engine dequantizes a tile before using it, and how
//! `read_f32_at` streams): the kernels' arithmetic, without the memory wall of writing
//! gigabytes of output. `--gguf-py` needs
//! `pip install gguf==0.19.0 numpy` in that Python.

mod roofline;

use candle_core::quantized::k_quants::{self as ck, GgmlType as _};
use candle_core::quantized::{GgmlDType, QTensor, ggml_file::qtensor_from_ggml};
use sipllm_quants::GgmlType;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random blocks with every f16 field made finite (the scales of every quantized type sit
/// at one of these offsets; clearing the top exponent bit of a non-scale pair is harmless).
fn input(ty: GgmlType, bytes: usize) -> Vec<u8> {
    let (_, size) = sipllm_quants::block_layout(ty).unwrap();
    let n = bytes / size;
    let mut v: Vec<u8> = (0..(n * size).div_ceil(8) as u64)
        .flat_map(|i| mix(0x1234 + i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes())
        .collect();
    v.truncate(n * size);
    if !matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        for b in v.chunks_exact_mut(size) {
            for off in [0, 2, size - 2, size - 4] {
                if b[off + 1] & 0x7c == 0x7c {
                    b[off + 1] &= 0xbf;
                }
            }
        }
    }
    v
}

/// What a run's time is.
#[derive(Clone, Copy, PartialEq)]
enum Clock {
    /// Wall-clock time.
    Wall,
    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): on a machine shared with
    /// other jobs it leaves out the time the thread waited for a core, though not the memory
    /// bandwidth the others take. Only for one-thread runs.
    Thread,
}

impl Clock {
    fn now(self) -> f64 {
        let id = match self {
            Clock::Wall => libc::CLOCK_MONOTONIC,
            Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        };
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid timespec to write; `id` is a clock Linux has.
        assert_eq!(unsafe { libc::clock_gettime(id, &mut t) }, 0);
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    }
}

/// How each timed run gets its output buffer.
#[derive(Clone, Copy, PartialEq)]
enum Output {
    /// One buffer, allocated and written once before timing, reused by every run: the
    /// kernels' own speed (what a streaming reader with a reused chunk buffer sees).
    Reused,
    /// Each library's call that returns new values, inside the timing (what callers that
    /// want a new array see): allocation, the kernel's page faults and its zeroing of pages
    /// are part of the time; freeing them is not.
    Fresh,
    /// The input in pieces, each piece's values (this many bytes, rounded down to whole
    /// blocks) into one reused buffer small enough to stay in a core's cache; on 2 threads
    /// each thread takes half the pieces, with a buffer of its own.
    Chunked(usize),
}

/// The input in pieces of whole blocks whose values fill at most `bytes` of output.
fn pieces(ty: GgmlType, src: &[u8], bytes: usize) -> std::slice::Chunks<'_, u8> {
    let (n, size) = sipllm_quants::block_layout(ty).unwrap();
    let blocks = (bytes / 4 / n).max(1);
    src.chunks(blocks * size)
}

/// The median of `runs` timings of `kernel` over `src` piece by piece (`--chunk`), on
/// `threads` threads (wall time when more than one).
fn median_chunked(
    ty: GgmlType,
    src: &[u8],
    bytes: usize,
    runs: usize,
    threads: usize,
    clock: Clock,
    kernel: impl Fn(&[u8], &mut [f32]) + Sync,
) -> f64 {
    let (n, size) = sipllm_quants::block_layout(ty).unwrap();
    let one = |src: &[u8], buf: &mut [f32]| {
        for piece in pieces(ty, src, bytes) {
            let values = piece.len() / size * n;
            kernel(piece, &mut buf[..values]);
        }
    };
    let buf_len = (bytes / 4 / n).max(1) * n;
    if threads == 1 {
        let mut buf = vec![0f32; buf_len];
        one(src, &mut buf);
        return median_of(runs, clock, || one(src, &mut buf));
    }
    let per = src.len() / size / threads * size;
    let halves: Vec<&[u8]> = (0..threads)
        .map(|t| if t + 1 == threads { &src[t * per..] } else { &src[t * per..(t + 1) * per] })
        .collect();
    let mut bufs: Vec<Vec<f32>> = (0..threads).map(|_| vec![0f32; buf_len]).collect();
    let mut all = || {
        std::thread::scope(|s| {
            for (part, buf) in halves.iter().zip(bufs.iter_mut()) {
                s.spawn(|| one(part, buf));
            }
        })
    };
    all();
    median_of(runs, Clock::Wall, all)
}

/// The median of `runs` timings (after one untimed warm-up run) of `f` on `reused`, a buffer
/// already written once.
fn median(runs: usize, reused: &mut [f32], clock: Clock, mut f: impl FnMut(&mut [f32])) -> f64 {
    f(reused);
    median_of(runs, clock, || f(reused))
}

/// The median of `runs` timings (after one untimed warm-up run) of `f`, which returns new
/// values; dropping them is not timed.
fn median_fresh<T>(runs: usize, clock: Clock, mut f: impl FnMut() -> T) -> f64 {
    drop(f());
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = clock.now();
            let out = std::hint::black_box(f());
            let e = clock.now() - t;
            drop(out);
            e
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn median_of(runs: usize, clock: Clock, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = clock.now();
            f();
            clock.now() - t
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Reinterprets bytes as candle blocks (the bench's one `unsafe`).
fn as_blocks<T>(bytes: &[u8]) -> &[T] {
    assert_eq!(bytes.as_ptr() as usize % std::mem::align_of::<T>(), 0);
    assert_eq!(bytes.len() % std::mem::size_of::<T>(), 0);
    // SAFETY: candle's blocks are `repr(C)` plain data (u8/i8/f16 fields, any bit pattern
    // valid); the pointer is aligned and the length a whole number of blocks (checked above).
    unsafe {
        std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len() / std::mem::size_of::<T>())
    }
}

fn candle(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Option<()> {
    match ty {
        GgmlType::Q4_0 => ck::BlockQ4_0::to_float(as_blocks(src), dst),
        GgmlType::Q4_1 => ck::BlockQ4_1::to_float(as_blocks(src), dst),
        GgmlType::Q5_0 => ck::BlockQ5_0::to_float(as_blocks(src), dst),
        GgmlType::Q5_1 => ck::BlockQ5_1::to_float(as_blocks(src), dst),
        GgmlType::Q8_0 => ck::BlockQ8_0::to_float(as_blocks(src), dst),
        GgmlType::Q2_K => ck::BlockQ2K::to_float(as_blocks(src), dst),
        GgmlType::Q3_K => ck::BlockQ3K::to_float(as_blocks(src), dst),
        GgmlType::Q4_K => ck::BlockQ4K::to_float(as_blocks(src), dst),
        GgmlType::Q5_K => ck::BlockQ5K::to_float(as_blocks(src), dst),
        GgmlType::Q6_K => ck::BlockQ6K::to_float(as_blocks(src), dst),
        GgmlType::F16 => half::f16::to_float(as_blocks(src), dst),
        GgmlType::BF16 => half::bf16::to_float(as_blocks(src), dst),
        _ => return None,
    }
    Some(())
}

/// The same bytes as a candle `QTensor` (a copy, made outside the timing), for the types
/// [`candle`] has.
fn candle_qtensor(ty: GgmlType, src: &[u8]) -> Option<QTensor> {
    let dtype = match ty {
        GgmlType::Q4_0 => GgmlDType::Q4_0,
        GgmlType::Q4_1 => GgmlDType::Q4_1,
        GgmlType::Q5_0 => GgmlDType::Q5_0,
        GgmlType::Q5_1 => GgmlDType::Q5_1,
        GgmlType::Q8_0 => GgmlDType::Q8_0,
        GgmlType::Q2_K => GgmlDType::Q2K,
        GgmlType::Q3_K => GgmlDType::Q3K,
        GgmlType::Q4_K => GgmlDType::Q4K,
        GgmlType::Q5_K => GgmlDType::Q5K,
        GgmlType::Q6_K => GgmlDType::Q6K,
        GgmlType::F16 => GgmlDType::F16,
        GgmlType::BF16 => GgmlDType::BF16,
        _ => return None,
    };
    let n = sipllm_quants::element_count(ty, src.len()).unwrap();
    assert_eq!(src.as_ptr() as usize % 8, 0, "candle reads the blocks in place");
    Some(qtensor_from_ggml(dtype, src, vec![n], &candle_core::Device::Cpu).unwrap())
}

/// gguf-py's `gguf.quants.dequantize` on the same bytes (written to a temporary file), in a
/// child `python` process: the median GB/s of `runs` timed calls, or why it could not run.
fn gguf_py(
    python: &str,
    ty: GgmlType,
    src: &[u8],
    runs: usize,
    clock: Clock,
) -> Result<f64, String> {
    const SCRIPT: &str = r#"
import sys, time
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize
path, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
clock = time.thread_time if sys.argv[4] == "thread" else time.perf_counter
raw = np.fromfile(path, dtype=np.uint8)
dequantize(raw, T[name])
times = []
for _ in range(runs):
    t = clock()
    out = dequantize(raw, T[name])
    times.append(clock() - t)
    del out
times.sort()
print(times[len(times) // 2])
"#;
    let path = std::env::temp_dir().join(format!("quants-peers-{}.bin", std::process::id()));
    std::fs::write(&path, src).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(python)
        .args(["-c", SCRIPT])
        .arg(&path)
        .args([
            ty.name(),
            &runs.to_string(),
            if clock == Clock::Thread { "thread" } else { "wall" },
        ])
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let secs: f64 =
        String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|e| format!("{e}"))?;
    let n = sipllm_quants::element_count(ty, src.len()).unwrap();
    Ok((n * 4) as f64 / 1e9 / secs)
}

const USAGE: &str = "\
usage: quants-peers [--mb 250] [--runs 5] [--fresh | --chunk KIB] [--cpu-time] [--hash]
                    [--gguf-py PYTHON] [--gguf-py-mb 25] [TYPE...]
       quants-peers --roofline
  --mb MB          input per type (random blocks, finite f16 scales)
  --runs N         timed runs per column (the median is shown), after one untimed warm-up
  --fresh          each library's call that returns new values (ours dequantize_to_values,
                   candle QTensor::dequantize), instead of its kernel into one reused buffer
  --chunk KIB      every library's kernel over the input piece by piece, each piece's values
                   into one reused KIB buffer that stays in cache (gguf-py keeps its one
                   call on the whole input); 2 threads take half the pieces each
  --cpu-time       time one-thread runs by the thread's CPU time
  --hash           an FNV-1a hash of the values' bits
  --gguf-py PY     also gguf-py's dequantize in that Python (pip install gguf==0.19.0 numpy)
  --gguf-py-mb MB  gguf-py's input for the block types (F16 and BF16: all of --mb)
  TYPE...          ggml type names (default: every supported type)
  --roofline       only the machine's write ceilings: 1 GB written with no input and no
                   arithmetic (plain and non-temporal stores, reused and fresh pages)";

struct Args {
    mb: usize,
    runs: usize,
    mode: Output,
    clock: Clock,
    python: Option<String>,
    python_mb: usize,
    hash: bool,
    types: Vec<GgmlType>,
}

fn args() -> Args {
    let mut a = Args {
        mb: 250,
        runs: 5,
        mode: Output::Reused,
        clock: Clock::Wall,
        python: None,
        python_mb: 25,
        hash: false,
        types: vec![],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--mb" => a.mb = value().parse().expect("--mb MB"),
            "--runs" => a.runs = value().parse().expect("--runs N"),
            "--fresh" => a.mode = Output::Fresh,
            "--chunk" => {
                a.mode = Output::Chunked(value().parse::<usize>().expect("--chunk KIB") * 1024)
            }
            "--cpu-time" => a.clock = Clock::Thread,
            "--hash" => a.hash = true,
            "--roofline" => {
                roofline::report();
                std::process::exit(0);
            }
            "--gguf-py" => a.python = Some(value()),
            "--gguf-py-mb" => a.python_mb = value().parse().expect("--gguf-py-mb MB"),
            name => a.types.push(GgmlType::from_name(name).expect("a type name")),
        }
    }
    if a.types.is_empty() {
        a.types = sipllm_quants::SUPPORTED.to_vec();
    }
    a
}

fn main() {
    let a = args();
    let mode = match a.mode {
        Output::Fresh => {
            "each library's call returning new values (ours a Values, candle QTensor::dequantize)"
                .to_string()
        }
        Output::Reused => "one reused, pre-faulted output".to_string(),
        Output::Chunked(b) => {
            format!(
                "the input in pieces, each piece's values into one reused {} KiB buffer",
                b / 1024
            )
        }
    };
    let clock = if a.clock == Clock::Thread { "thread CPU time (x2: wall)" } else { "wall time" };
    println!(
        "input {} MB per type; GB/s of f32 output, median of {} runs, {mode}, {clock}; one thread unless noted",
        a.mb, a.runs
    );
    if a.python.is_some() {
        println!(
            "gguf-py: the same bytes, its own fresh output; F16/BF16 all of them, other types the first {} MB",
            a.python_mb
        );
    }
    println!(
        "{:<8} {:>7} {:>7} {:>8} {:>7} {:>8} {:>6} {:>8} {:>8}",
        "type", "ours", "scalar", "ours x2", "candle", "/candle", "x2/x1", "gguf-py", "/gguf-py"
    );
    for &ty in &a.types {
        let src = input(ty, a.mb * 1_000_000);
        let n = sipllm_quants::element_count(ty, src.len()).unwrap();
        let gb = (n * 4) as f64 / 1e9;
        let mut reference = vec![0f32; n];
        let mut out = vec![0f32; n];
        sipllm_quants::dequantize_scalar(ty, &src, &mut reference).unwrap();
        let fresh = a.mode == Output::Fresh;
        let (ours, scalar, par) = if fresh {
            let ours = median_fresh(a.runs, a.clock, || {
                sipllm_quants::dequantize_to_values(ty, &src).unwrap()
            });
            let scalar = median_fresh(a.runs, a.clock, || {
                let mut v = sipllm_quants::Values::zeroed(n).unwrap();
                sipllm_quants::dequantize_scalar(ty, &src, &mut v).unwrap();
                v
            });
            let par = median_fresh(a.runs, Clock::Wall, || {
                sipllm_quants::dequantize_parallel_to_values(ty, &src, 2).unwrap()
            });
            (ours, scalar, par)
        } else if let Output::Chunked(bytes) = a.mode {
            let time = |threads, clock, kernel: fn(GgmlType, &[u8], &mut [f32])| {
                median_chunked(ty, &src, bytes, a.runs, threads, clock, |s, d| kernel(ty, s, d))
            };
            let ours = |ty, s: &[u8], d: &mut [f32]| sipllm_quants::dequantize(ty, s, d).unwrap();
            let scalar =
                |ty, s: &[u8], d: &mut [f32]| sipllm_quants::dequantize_scalar(ty, s, d).unwrap();
            (time(1, a.clock, ours), time(1, a.clock, scalar), time(2, Clock::Wall, ours))
        } else {
            let ours = median(a.runs, &mut out, a.clock, |d| {
                sipllm_quants::dequantize(ty, &src, d).unwrap()
            });
            let scalar = median(a.runs, &mut out, a.clock, |d| {
                sipllm_quants::dequantize_scalar(ty, &src, d).unwrap()
            });
            let par = median(a.runs, &mut out, Clock::Wall, |d| {
                sipllm_quants::dequantize_parallel(ty, &src, d, 2).unwrap()
            });
            (ours, scalar, par)
        };
        let (ours, scalar, par) = (gb / ours, gb / scalar, gb / par);
        if fresh {
            let values = sipllm_quants::dequantize_to_values(ty, &src).unwrap();
            assert!(
                values.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{ty}: Values not the scalar bits"
            );
        }
        let check = &mut out;
        sipllm_quants::dequantize(ty, &src, check).unwrap();
        assert!(
            check.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{ty}: not the scalar bits"
        );
        sipllm_quants::dequantize_parallel(ty, &src, check, 2).unwrap();
        assert!(
            check.iter().zip(&reference).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{ty}: x2 not the scalar bits"
        );
        let hash = if a.hash {
            // FNV-1a over the values' bits, to compare with other implementations' output.
            let h = reference.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
                (h ^ u64::from(x.to_bits())).wrapping_mul(0x100_0000_01b3)
            });
            format!("  fnv {h:016x}")
        } else {
            String::new()
        };
        let theirs = if fresh {
            candle_qtensor(ty, &src).map(|q| {
                gb / median_fresh(a.runs, a.clock, || {
                    q.dequantize(&candle_core::Device::Cpu).unwrap()
                })
            })
        } else if let Output::Chunked(bytes) = a.mode {
            candle(ty, &src, &mut out).map(|()| {
                gb / median_chunked(ty, &src, bytes, a.runs, 1, a.clock, |s, d| {
                    candle(ty, s, d).unwrap()
                })
            })
        } else {
            candle(ty, &src, &mut out)
                .map(|()| gb / median(a.runs, &mut out, a.clock, |d| candle(ty, &src, d).unwrap()))
        };
        let (c, ratio) = match theirs {
            Some(c) => (format!("{c:.2}"), format!("{:.1}x", ours / c)),
            None => ("-".into(), "-".into()),
        };
        let (py, py_ratio) = match &a.python {
            Some(python) if ty != GgmlType::F32 => {
                let (_, size) = sipllm_quants::block_layout(ty).unwrap();
                let len = if matches!(ty, GgmlType::F16 | GgmlType::BF16) {
                    src.len()
                } else {
                    (a.python_mb * 1_000_000).min(src.len()) / size * size
                };
                match gguf_py(python, ty, &src[..len], a.runs, a.clock) {
                    Ok(g) => (format!("{g:.3}"), format!("{:.0}x", ours / g)),
                    Err(e) => panic!("gguf-py: {e}"),
                }
            }
            _ => ("-".into(), "-".into()),
        };
        println!(
            "{:<8} {ours:>7.2} {scalar:>7.2} {par:>8.2} {c:>7} {ratio:>8} {:>5.2}x {py:>8} {py_ratio:>8}{hash}",
            ty.name(),
            par / ours
        );
    }
}
