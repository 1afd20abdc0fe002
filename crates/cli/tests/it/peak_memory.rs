//! Peak memory of every command (issue 16): no command exceeds 64 MiB + the header's own size
//! on any input under 1 MiB, nor 64 MiB + 2 × the header on a real model.
//!
//! Each run's peak resident set is measured by the operating system: a small Python driver
//! (`python3`, which CI has) starts every `sipllm` run as its own child and reaps it with
//! `os.wait4`, whose `ru_maxrss` is that child's peak RSS alone. Inputs: the hostile files
//! below (overlong names and keys, a 2^27 alignment, a corrupted string length, the densest
//! files the format allows, every malformed case of `files.rs`), every fuzz seed and
//! regression under 1 MiB, every real `../shared/corpus` file, and the Llama-3-shaped file
//! (4.9 GB, sparse). A forked child starts with its parent's resident set as its high-water
//! mark, so every figure includes the driver's (~14 MB of Python) as a floor: the figures are
//! upper bounds. `SIPLLM_PEAK_TABLE=1 cargo test -p sipllm-cli --test it peak_memory --
//! --nocapture` prints every figure; the per-command maxima are always printed.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sipllm_gguf::{GgmlType, ParseOptions, Profile};
use sipllm_testkit::{GgufBuilder, Tensor, Value, llama3};

use crate::files::{cases, odd_values, valid};
use crate::support::{shared, temp_dir};

const MIB: u64 = 1 << 20;

/// Runs every job (`cwd`, arguments of `sipllm`) as its own child of one Python process and
/// returns each one's exit code and peak RSS in bytes. The jobs of one directory (one input)
/// run in order, four directories at a time. A run that hangs is killed and
/// reported with exit code `None` (a hang is a failure): hung means 120 s of CPU time used (a
/// spin), or none used for 120 s (blocked), as `sipllm_testkit::command::wait_unless_hung`
/// judges — CPU time from `/proc/PID/stat`, so a busy machine, which slows a run but does not
/// stop it, cannot fail the test (it killed runs after 120 s of wall-clock time, and failed
/// under load).
fn measure(jobs: &[(PathBuf, Vec<String>)]) -> Option<Vec<(Option<i32>, u64)>> {
    const DRIVER: &str = r#"
import json, os, signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
exe = sys.argv[1]
HANG_CPU, HANG_IDLE = 120.0, 120.0
def cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100.0
    except (OSError, IndexError, ValueError):
        return None
def run(cwd, args):
    p = subprocess.Popen([exe] + args, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    used, progress = cpu(p.pid), time.monotonic()
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        now = cpu(p.pid)
        if now != used:
            used, progress = now, time.monotonic()
        if (used or 0) > HANG_CPU or time.monotonic() - progress > HANG_IDLE:
            os.kill(p.pid, signal.SIGKILL)
            pid, status, ru = os.wait4(p.pid, 0)
            status = None
            break
        time.sleep(0.002)
    p.returncode = 0  # reaped here; keep Popen from waiting again
    code = None if status is None or not os.WIFEXITED(status) else os.WEXITSTATUS(status)
    return [code, ru.ru_maxrss * 1024]
jobs = [json.loads(line) for line in sys.stdin]
# One input's commands run in order (its in-place edit comes last); inputs run side by side:
# most of the time is the writing commands' fsyncs, which wait on the disk, not the CPU.
groups = {}
for i, (cwd, _) in enumerate(jobs):
    groups.setdefault(cwd, []).append(i)
results = [None] * len(jobs)
def run_group(indices):
    for i in indices:
        results[i] = run(*jobs[i])
with ThreadPoolExecutor(max_workers=4) as pool:
    for f in [pool.submit(run_group, g) for g in groups.values()]:
        f.result()
for r in results:
    print(json.dumps(r))
"#;
    let mut child = match Command::new("python3")
        .args(["-c", DRIVER, env!("CARGO_BIN_EXE_sipllm")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("SKIPPED: peak memory: python3 cannot run ({e}); nothing was measured");
            return None;
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    let input: String =
        jobs.iter().map(|(cwd, args)| serde_json::json!([cwd, args]).to_string() + "\n").collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the measuring driver failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let results: Vec<(Option<i32>, u64)> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(results.len(), jobs.len(), "one result per run");
    Some(results)
}

/// One input: its file (in its own directory, where the writing commands write), what it is,
/// the header size the bound is computed from, and whether it is a real model.
struct Input {
    dir: PathBuf,
    file: String,
    label: String,
    header: u64,
    real: bool,
    /// Commands that would copy gigabytes (`verify`, `convert` of the 4.9 GB file) are left
    /// out for it.
    huge: bool,
    /// A fuzz input: the reading commands and `edit -o` only (the others refuse such files
    /// the same way), to keep the run short.
    light: bool,
}

/// The header's own size: the data offset when the file parses (leniently), else the file's
/// size (what a reader could at most buffer of it).
fn header_size(bytes: &[u8]) -> u64 {
    let opts = ParseOptions::new(Profile::Lenient).with_file_size(Some(bytes.len() as u64));
    match sipllm_gguf::parse_with(bytes, &opts) {
        Ok(g) => g.data_offset().min(bytes.len() as u64).max(g.directory().directory_end()),
        Err(_) => bytes.len() as u64,
    }
}

fn add(inputs: &mut Vec<Input>, root: &Path, label: &str, bytes: &[u8], real: bool) {
    let dir = root.join(format!("{:04}", inputs.len()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("m.gguf"), bytes).unwrap();
    inputs.push(Input {
        dir,
        file: "m.gguf".into(),
        label: label.into(),
        header: header_size(bytes),
        real,
        huge: false,
        light: false,
    });
}

/// Hostile files under 1 MiB, each aimed at one way of exhausting memory.
fn hostile() -> Vec<(&'static str, Vec<u8>)> {
    let base = || GgufBuilder::new().kv("general.architecture", Value::str("llama"));
    let near_mib = 1000 << 10;
    let mut out = vec![
        ("valid", valid()),
        ("odd values", odd_values()),
        ("long tensor name", base().tensor(&"a".repeat(near_mib), GgmlType::F32, &[4]).build()),
        ("long key", base().kv(&"k".repeat(near_mib), Value::Uint32(1)).build()),
        (
            "duplicate long names",
            base()
                .tensor(&"d".repeat(near_mib / 2), GgmlType::F32, &[4])
                .tensor(&"d".repeat(near_mib / 2), GgmlType::F32, &[4])
                .build(),
        ),
        (
            "alignment 2^27, truncated",
            base()
                .kv("general.alignment", Value::Uint32(1 << 27))
                .tensor("t", GgmlType::F32, &[8])
                .build_header(),
        ),
        (
            "1 MiB of one-byte pairs",
            (0..near_mib / 20)
                .fold(GgufBuilder::new(), |b, i| b.kv(&format!("{i:x}"), Value::Uint8(1)))
                .build(),
        ),
        (
            "1 MiB of scalar tensors",
            (0..near_mib / 80)
                .fold(base(), |b, i| b.tensor(&format!("t{i}"), GgmlType::F32, &[1]))
                .build(),
        ),
        (
            "array count 2^40",
            base().kv("big", Value::array(sipllm_gguf::ValueType::Uint8, vec![])).build(),
        ),
        (
            "tensor of 2^60 elements",
            base()
                .tensor_info(Tensor {
                    name: b"huge".to_vec(),
                    dims: vec![1 << 30, 1 << 30],
                    type_code: 0,
                    offset: Some(0),
                    n_dims: None,
                    data: None,
                })
                .build_header(),
        ),
    ];
    // The array's element count patched to 2^40 (the bytes are not there).
    if let Some((_, bytes)) = out.iter_mut().find(|(l, _)| *l == "array count 2^40") {
        let at = bytes.windows(3).position(|w| w == b"big").unwrap() + 3 + 4 + 4;
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    }
    // A string length corrupted to just under llama.cpp's 1 GiB cap.
    let mut corrupt = base().kv("general.name", Value::str("corrupt-me")).build();
    let at = corrupt.windows(10).position(|w| w == b"corrupt-me").unwrap() - 8;
    corrupt[at..at + 8].copy_from_slice(&((1u64 << 30) - 1).to_le_bytes());
    out.push(("string length 2^30 - 1", corrupt));
    for case in cases() {
        out.push((case.name, case.bytes));
    }
    out
}

/// Every command, with the arguments that make it do its work on `input`.
fn commands(input: &Input, first_tensor: Option<&str>) -> Vec<(&'static str, Vec<String>)> {
    let f = input.file.as_str();
    let mut c: Vec<(&'static str, Vec<&str>)> = vec![
        ("inspect", vec!["inspect", f]),
        ("inspect --json", vec!["inspect", "--json", f]),
        ("validate", vec!["validate", f]),
        ("validate llama-cpp", vec!["validate", "--profile", "llama-cpp", f]),
        ("validate lenient json", vec!["validate", "--profile", "lenient", "--format", "json", f]),
        ("tensors", vec!["tensors", "--profile", "lenient", f]),
        ("edit -o", vec!["edit", f, "-o", "e.gguf", "--set", "general.name=str:x"]),
        ("split", vec!["split", f, "--max-tensors", "5000", "--out-dir", "sp"]),
        ("merge", vec!["merge", f, "merged.gguf"]),
    ];
    if !input.huge {
        c.push(("verify", vec!["verify", "--hash", "xxh3", f]));
        c.push(("convert", vec!["convert", f, "c.llmw"]));
    }
    if let Some(t) = first_tensor {
        if input.huge {
            // To standard output (the driver's /dev/null): the same bounded copy, without
            // writing and syncing the Llama-3 file's 295 MB first tensor to disk, which took
            // minutes on a busy disk and measured the disk, not the memory.
            c.push(("read", vec!["read", f, t]));
        } else {
            c.push(("read", vec!["read", f, t, "-o", "t.bin"]));
        }
    }
    // Last: it changes the file (a copy of the input in the input's own directory).
    c.push(("edit --in-place", vec!["edit", f, "--in-place", "--set", "general.name=str:y"]));
    if input.light {
        let keep = ["inspect --json", "validate llama-cpp", "tensors", "verify", "edit -o"];
        c.retain(|(l, _)| keep.contains(l));
    }
    c.into_iter().map(|(l, a)| (l, a.into_iter().map(str::to_owned).collect())).collect()
}

fn first_tensor(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let opts = ParseOptions::new(Profile::Lenient).with_file_size(Some(bytes.len() as u64));
    let g = sipllm_gguf::parse_with(&bytes[..], &opts).ok()?;
    let name = g.tensors().next()?.name.as_bytes().to_vec();
    let name = String::from_utf8(name).ok()?;
    (!name.is_empty() && name.len() < 256).then_some(name)
}

/// The hostile inputs, every real corpus file, the Llama-3-shaped file and a 2^27
/// alignment, under every command.
#[test]
fn no_command_exceeds_64_mib_plus_the_header() {
    let root = temp_dir("peak-memory");
    let mut inputs = Vec::new();
    for (label, bytes) in hostile() {
        assert!((bytes.len() as u64) < MIB, "{label}: {} bytes", bytes.len());
        add(&mut inputs, &root, label, &bytes, false);
    }
    let n_hostile = inputs.len();
    if let Some(shared) = shared("no_command_exceeds_64_mib_plus_the_header (corpus files)") {
        let mut files: Vec<PathBuf> = std::fs::read_dir(shared.join("corpus/real"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
            .collect();
        files.sort();
        for p in files {
            let bytes = std::fs::read(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            add(&mut inputs, &root, &format!("corpus {name}"), &bytes, true);
        }
    }
    // The Llama-3-shaped file: its header written, its 4.9 GB of tensor data a sparse hole.
    let dir = root.join("llama3");
    std::fs::create_dir_all(&dir).unwrap();
    let b = llama3::builder(1);
    let header = b.build_header();
    let data_offset = header.len().next_multiple_of(32) as u64;
    let data: u64 = b
        .tensors()
        .iter()
        .map(|t| {
            let ty = GgmlType::from_code(t.type_code);
            sipllm_gguf::ggml::tensor_nbytes(ty, &t.dims).unwrap().next_multiple_of(32)
        })
        .sum();
    {
        let mut f = std::fs::File::create(dir.join("llama3.gguf")).unwrap();
        f.write_all(&header).unwrap();
        f.set_len(data_offset + data).unwrap();
    }
    inputs.push(Input {
        dir,
        file: "llama3.gguf".into(),
        label: "Llama-3-shaped (4.9 GB)".into(),
        header: data_offset,
        real: true,
        huge: true,
        light: false,
    });

    // `general.alignment = 2^27` with its 128 MiB of padding present (sparse): the bound
    // counts the header without the padding, which no command may hold.
    let dir = root.join("align27");
    std::fs::create_dir_all(&dir).unwrap();
    let header = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.alignment", Value::Uint32(1 << 27))
        .tensor("t", GgmlType::F32, &[8])
        .build_header();
    {
        let mut f = std::fs::File::create(dir.join("align27.gguf")).unwrap();
        f.write_all(&header).unwrap();
        f.set_len((1 << 27) + 32).unwrap();
    }
    inputs.push(Input {
        dir,
        file: "align27.gguf".into(),
        label: "alignment 2^27 (128 MiB, sparse)".into(),
        header: header.len() as u64,
        real: true,
        huge: false,
        light: false,
    });

    check(&inputs, n_hostile);
}

/// Every fuzz seed and regression under 1 MiB, under the commands of a light input: over
/// 1,200 runs, the long replay of the heavy tier.
#[test]
#[ignore = "heavy: run by .ci/run"]
fn no_command_exceeds_64_mib_plus_the_header_on_any_fuzz_input() {
    let root = temp_dir("peak-memory-fuzz");
    let mut inputs = Vec::new();
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for sub in ["seeds", "regressions"] {
        let Ok(targets) = std::fs::read_dir(fuzz.join(sub)) else { continue };
        let mut files: Vec<PathBuf> = targets
            .flatten()
            .filter(|t| t.path().is_dir())
            .flat_map(|t| std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.path()))
            .filter(|p| p.is_file() && std::fs::metadata(p).is_ok_and(|m| m.len() < MIB))
            .collect();
        files.sort();
        for p in files {
            let bytes = std::fs::read(&p).unwrap();
            let name = p.strip_prefix(&fuzz).unwrap_or(&p).display().to_string();
            add(&mut inputs, &root, &format!("fuzz {name}"), &bytes, false);
            if let Some(last) = inputs.last_mut() {
                last.light = true;
            }
        }
    }
    assert!(inputs.len() > 100, "{} fuzz inputs found", inputs.len());
    let n = inputs.len();
    check(&inputs, n);
}

/// Runs every command on every input, measures each run's peak RSS, and fails on any run
/// over its bound, any panic and any hang (the first `n_hostile` inputs are hostile, the rest
/// real).
fn check(inputs: &[Input], n_hostile: usize) {
    let mut jobs = Vec::new();
    let mut what = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let first = first_tensor(&input.dir.join(&input.file));
        for (label, args) in commands(input, first.as_deref()) {
            jobs.push((input.dir.clone(), args));
            what.push((i, label));
        }
    }
    let Some(results) = measure(&jobs) else { return };

    let table = std::env::var_os("SIPLLM_PEAK_TABLE").is_some();
    let mut worst: BTreeMap<(&str, bool), (u64, String)> = BTreeMap::new();
    let mut failures = Vec::new();
    for ((i, label), (code, rss)) in what.iter().zip(&results) {
        let input = &inputs[*i];
        let bound = if input.real { 64 * MIB + 2 * input.header } else { 64 * MIB + input.header };
        if table {
            println!("{:>9} KiB  {label:<22} {}", rss >> 10, input.label);
        }
        let w = worst.entry((label, input.real)).or_insert((0, String::new()));
        if *rss > w.0 {
            *w = (*rss, input.label.clone());
        }
        if code.is_none() {
            failures.push(format!(
                "{label} on {}: killed: it hung (120 s of CPU, or 120 s blocked)",
                input.label
            ));
        } else if *code == Some(101) {
            failures.push(format!("{label} on {}: panicked", input.label));
        }
        if *rss > bound {
            failures.push(format!(
                "{label} on {}: peak RSS {} KiB, bound {} KiB (header {} bytes)",
                input.label,
                rss >> 10,
                bound >> 10,
                input.header
            ));
        }
    }
    println!(
        "peak RSS per command over {} runs ({n_hostile} hostile inputs < 1 MiB, {} real):",
        results.len(),
        inputs.len() - n_hostile
    );
    for ((label, real), (rss, on)) in &worst {
        let kind = if *real { "real" } else { "hostile" };
        println!("  {label:<22} {kind:<8} {:>7} KiB  ({on})", rss >> 10);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
