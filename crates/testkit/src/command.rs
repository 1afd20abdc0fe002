//! Running a command-line binary in a test: its exit code and output, and a transcript for
//! assertion messages and golden files.

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// The output of one run of the binary.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Standard output as bytes.
    pub stdout_bytes: Vec<u8>,
}

impl Run {
    /// Exit code, stdout and stderr in one text, the shape of a golden file.
    pub fn transcript(&self) -> String {
        let mut s = format!("exit: {}\n", self.code.map_or("signal".into(), |c| c.to_string()));
        if !self.stdout.is_empty() {
            s.push_str("--- stdout\n");
            s.push_str(&self.stdout);
        }
        if !self.stderr.is_empty() {
            s.push_str("--- stderr\n");
            s.push_str(&self.stderr);
        }
        s
    }
}

/// Runs `bin args…` in `dir`, without color, at the fixed non-terminal width; a panic (exit
/// 101) or a signal fails the test.
pub fn run(bin: &str, dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("COLUMNS")
        .output()
        .expect("the sipllm binary runs");
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout_bytes: out.stdout,
    };
    assert_ne!(run.code, Some(101), "sipllm {args:?} panicked:\n{}", run.stderr);
    assert!(run.code.is_some(), "sipllm {args:?} was killed by a signal");
    run
}

/// The per-tensor manifest `BIN verify --hash HASH --manifest - FILE` prints, as (hash, size,
/// name) per tensor; a failing run fails the test.
pub fn manifest(bin: &str, dir: &Path, file: &str, hash: &str) -> Vec<(String, String, String)> {
    let run = run(bin, dir, &["verify", "--hash", hash, "--manifest", "-", file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    run.stdout
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, "  ");
            let mut next = || parts.next().unwrap().to_owned();
            (next(), next(), next())
        })
        .collect()
}

/// The metadata `BIN inspect --json --no-tensors FILE` prints: one JSON object (key, type,
/// value) per pair; a failing run fails the test.
pub fn metadata(bin: &str, dir: &Path, file: &str) -> Vec<serde_json::Value> {
    let run = run(bin, dir, &["inspect", "--json", "--no-tensors", file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    doc["metadata"].as_array().unwrap().clone()
}

/// The CPU time a child may use before it counts as hung (spinning): no command of the
/// tests needs a tenth of it, on a quiet machine or a busy one.
pub const HANG_CPU: Duration = Duration::from_secs(120);

/// How long a child may go without using any CPU time before it counts as hung (blocked: a
/// FIFO that is never opened, a read that never returns). A busy machine slows a runnable
/// child down but does not stop it for minutes, so neither limit fails a test under load.
pub const HANG_IDLE: Duration = Duration::from_secs(120);

/// Waits for `child`, or kills it when it hangs — [`HANG_CPU`] of CPU time used (a spin), or
/// no CPU time used for [`HANG_IDLE`] (blocked) — and returns `None` then. A hang guard that
/// measures CPU time, not wall-clock time, so load cannot trip it. (Without `/proc`, the
/// CPU time is unknown and the guard falls back to [`HANG_IDLE`] of wall-clock time.)
pub fn wait_unless_hung(child: &mut Child) -> Option<ExitStatus> {
    let mut cpu = cpu_time(child.id());
    let mut progress = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return Some(status);
        }
        let now = cpu_time(child.id());
        if now != cpu {
            cpu = now;
            progress = Instant::now();
        }
        if cpu.is_some_and(|c| c > HANG_CPU) || progress.elapsed() > HANG_IDLE {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        // Polling, not synchronisation: how soon an exit is seen, nothing else.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The user + system CPU time process `pid` has used, from `/proc/PID/stat` (in the kernel's
/// fixed `USER_HZ` of 100 ticks a second), or `None` where that cannot be read.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow the last `)`.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // After the name: state (3rd field of the file), …, utime (14th), stime (15th).
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work_and_a_quick_child_is_waited_for() {
        let Some(start) = cpu_time(std::process::id()) else { return }; // no /proc here
        // Work until the kernel has counted a tick of it (10 ms of CPU): bounded by CPU,
        // whatever the load.
        let mut x = 0u64;
        while cpu_time(std::process::id()) == Some(start) {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
        assert!(cpu_time(std::process::id()) > Some(start));
        let mut quick = Command::new("true").spawn().unwrap();
        assert!(wait_unless_hung(&mut quick).unwrap().success());
    }
}
