//! Replays every committed fuzz input on stable Rust, without a fuzzer: each file under
//! `fuzz/regressions/<target>/` (crashes and notable inputs the fuzzers found) and
//! `fuzz/seeds/<target>/` (the seed corpora) through its target's property check, and then
//! through every other target too (every target must survive any input).
//!
//! `SIPLLM_REPLAY_ONLY=<substring>` replays only the files whose name contains it, for slow
//! interpreters. Under Miri pass it through `MIRIFLAGS` (cargo-miri keeps the environment of
//! the build, so a changed variable is not seen otherwise): `MIRIFLAGS="-Zmiri-disable-isolation
//! -Zmiri-env-set=SIPLLM_REPLAY_ONLY=v2." cargo +nightly miri test -p sipllm-tests --test it
//! fuzz_replay`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use sipllm_fuzzcheck::committed::{files_in, fuzz_dir};

/// Runs every file of `fuzz/<kind>/<target>/` through the targets; returns the count per
/// target and the failures.
fn replay(kind: &str) -> (Vec<(&'static str, usize)>, Vec<String>) {
    let root = fuzz_dir().join(kind);
    assert!(root.is_dir(), "fuzz/{kind}/ is missing from the repository ({})", root.display());
    let mut counts = Vec::new();
    let mut failures = Vec::new();
    let only = std::env::var("SIPLLM_REPLAY_ONLY").ok();
    for (target, _) in sipllm_fuzzcheck::TARGETS {
        let mut files = files_in(&root.join(target));
        if let Some(only) = &only {
            files.retain(|(name, _)| name.contains(only.as_str()));
        }
        for (name, bytes) in &files {
            for (other, check) in sipllm_fuzzcheck::TARGETS {
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(bytes))) {
                    let msg = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)");
                    failures.push(format!("fuzz/{kind}/{target}/{name} through {other}: {msg}"));
                }
            }
        }
        counts.push((target, files.len()));
    }
    (counts, failures)
}

fn report(kind: &str, counts: &[(&str, usize)]) -> usize {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let per: Vec<String> = counts.iter().map(|(t, n)| format!("{t}: {n}")).collect();
    eprintln!("replayed {total} fuzz/{kind} inputs ({})", per.join(", "));
    total
}

#[test]
fn regressions_replay() {
    let (counts, failures) = replay("regressions");
    report("regressions", &counts);
    assert!(failures.is_empty(), "{} regression(s) fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn seeds_replay() {
    let (counts, failures) = replay("seeds");
    let total = report("seeds", &counts);
    if std::env::var_os("SIPLLM_REPLAY_ONLY").is_none() {
        for (target, n) in &counts {
            assert!(*n > 0, "fuzz/seeds/{target}/ is empty");
        }
        assert!(total >= 40, "only {total} seeds");
    }
    assert!(failures.is_empty(), "{} seed(s) fail:\n{}", failures.len(), failures.join("\n"));
}
