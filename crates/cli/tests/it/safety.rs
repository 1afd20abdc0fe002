//! Writer data safety (issue 16): concurrent in-place editors, outputs that are inputs by
//! identity, backups keyed by the file, readers during an edit, modes and owners, symlinked
//! outputs, big split sets under a low open-file limit, and killed re-splits.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sipllm_edit::in_place::{HeaderBackup, overwrite_runs};
use sipllm_gguf::GgmlType;
use sipllm_testkit::{GgufBuilder, Value};

use crate::edit::model;
use crate::support::{sipllm, temp_dir};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

/// A model whose header has room for in-place edits of a few short values.
fn editable() -> Vec<u8> {
    model()
        .kv("general.alpha", Value::str("a-0"))
        .kv("general.beta", Value::str("b-0"))
        .kv("general.padding_room", Value::str(&"x".repeat(600)))
        .build()
}

fn spawn(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn get_str(path: &Path, key: &str) -> Option<String> {
    let bytes = fs::read(path).unwrap();
    let g = sipllm_gguf::parse(&bytes).expect("the model parses");
    g.get_str(key).map(str::to_owned)
}

/// Item 1: two `edit --in-place` of one file at once, many times over. Whoever exits 0 has
/// its value in the file (no lost update with exit 0); the other refuses with a coded error
/// (exit 2); no header is ever left torn, and no backup is left behind.
#[test]
fn concurrent_in_place_editors_never_lose_an_update() {
    let dir = temp_dir("safety-concurrent");
    let path = write(&dir, "m.gguf", &editable());
    let mut refusals = 0;
    for trial in 0..20 {
        let a_val = format!("general.alpha=str:a-{}", trial % 10);
        let b_val = format!("general.beta=str:b-{}", trial % 10);
        let a = spawn(&dir, &["edit", "m.gguf", "--in-place", "--set", &a_val]);
        let b = spawn(&dir, &["edit", "m.gguf", "--in-place", "--set", &b_val]);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        for (out, key, want) in [
            (&a, "general.alpha", format!("a-{}", trial % 10)),
            (&b, "general.beta", format!("b-{}", trial % 10)),
        ] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => assert_eq!(
                    get_str(&path, key).as_deref(),
                    Some(want.as_str()),
                    "trial {trial}: an editor exited 0 but its {key} is not in the file"
                ),
                Some(2) => {
                    refusals += 1;
                    assert!(
                        stderr.contains("in use by another process")
                            || stderr.contains("changed after it was read"),
                        "trial {trial}: an unclear refusal: {stderr}"
                    );
                }
                other => panic!("trial {trial}: exit {other:?}: {stderr}"),
            }
        }
        assert_eq!(names(&dir), ["m.gguf"], "trial {trial}: no backup, no temporary left");
        let run = sipllm(&dir, &["validate", "m.gguf"]);
        assert_eq!(run.code, Some(0), "trial {trial}: {}", run.transcript());
    }
    eprintln!("concurrent editors: {refusals} refusals in 20 trials");
}

/// Item 2: every writing command refuses an output that is its input, by identity (the path
/// itself, a symlink to it, a hard link to it), and the input is untouched.
#[test]
fn no_command_writes_over_its_own_input() {
    let dir = temp_dir("safety-self");
    let bytes = editable();
    write(&dir, "m.gguf", &bytes);
    std::os::unix::fs::symlink("m.gguf", dir.join("link.gguf")).unwrap();
    fs::hard_link(dir.join("m.gguf"), dir.join("hard.gguf")).unwrap();
    for out in ["m.gguf", "link.gguf", "hard.gguf", "./m.gguf"] {
        for args in [
            vec!["verify", "m.gguf", "--manifest", out],
            vec!["verify", out, "--manifest", "m.gguf"],
            vec!["read", "m.gguf", "output.weight", "-o", out],
            vec!["convert", "m.gguf", out],
        ] {
            let run = sipllm(&dir, &args);
            assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
            assert!(
                run.stderr.contains("edit::write::output_is_input")
                    || run.stderr.contains("ends in .gguf"),
                "{args:?}: {}",
                run.transcript()
            );
            assert_eq!(fs::read(dir.join("m.gguf")).unwrap(), bytes, "{args:?}");
        }
    }
    // convert with an output named for the other format but hard-linked to the input.
    fs::hard_link(dir.join("m.gguf"), dir.join("m.llmw")).unwrap();
    let run = sipllm(&dir, &["convert", "m.gguf", "m.llmw"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("edit::write::output_is_input"), "{}", run.stderr);
    assert!(run.stderr.contains("the output m.llmw is the input m.gguf"), "{}", run.stderr);
    assert_eq!(fs::read(dir.join("m.gguf")).unwrap(), bytes);
    // A manifest elsewhere is still written.
    let run = sipllm(&dir, &["verify", "m.gguf", "--manifest", "m.sha256"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
}

/// Item 3: an in-place edit interrupted through a symlink leaves its backup beside the real
/// file; an edit through the real path is refused; `--recover` through either path restores
/// the file; a stale backup is refused before anything is written.
#[test]
#[allow(clippy::single_range_in_vec_init)] // one run of bytes, on purpose
fn the_in_place_backup_follows_the_file_through_symlinks() {
    let dir = temp_dir("safety-backup-link");
    let bytes = editable();
    let real = write(&dir, "m.gguf", &bytes);
    fs::create_dir(dir.join("links")).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("links/alias.gguf")).unwrap();
    let link = dir.join("links/alias.gguf");
    let data_offset = sipllm_gguf::parse(&bytes).unwrap().data_offset() as usize;
    let whole = [0..data_offset];
    let file = fs::OpenOptions::new().read(true).write(true).open(&link).unwrap();
    let backup =
        HeaderBackup::write(&link, &file, bytes.len() as u64, &bytes[..data_offset], &whole)
            .unwrap();
    drop(backup); // the crash
    overwrite_runs(&file, &link, &vec![0xAB; data_offset], &[0..data_offset / 2]).unwrap();
    drop(file);
    assert_eq!(names(&dir.join("links")), ["alias.gguf"], "nothing beside the link");
    assert!(dir.join(".m.gguf.header-backup").exists());
    let run = sipllm(&dir, &["edit", "m.gguf", "--in-place", "--set", "general.alpha=str:a-1"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("sipllm edit --recover m.gguf"), "{}", run.stderr);
    let run = sipllm(&dir, &["edit", "--recover", "m.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(fs::read(&real).unwrap(), bytes);

    // A stale backup (the model was edited since, outside the bytes the backup holds):
    // refused before anything is written, on every run.
    let file = fs::File::open(&real).unwrap();
    HeaderBackup::write(&real, &file, bytes.len() as u64, &bytes[..data_offset], &[0..16]).unwrap();
    drop(file);
    let backup = dir.join(".m.gguf.header-backup");
    let kept = fs::read(&backup).unwrap();
    fs::rename(&backup, dir.join("kept")).unwrap();
    let run = sipllm(&dir, &["edit", "m.gguf", "--in-place", "--set", "general.alpha=str:a-2"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let edited = fs::read(&real).unwrap();
    fs::write(&backup, &kept).unwrap();
    for _ in 0..2 {
        let run = sipllm(&dir, &["edit", "--recover", "links/alias.gguf"]);
        assert_eq!(run.code, Some(2), "{}", run.transcript());
        assert!(run.stderr.contains("does not fit"), "{}", run.stderr);
        assert_eq!(fs::read(&real).unwrap(), edited, "the valid model is not written");
    }
    assert_eq!(sipllm(&dir, &["validate", "m.gguf"]).code, Some(0));
}

/// Item 13: `verify` run over and over while in-place edits run never reports the model
/// corrupt: it waits for an edit, or the edit is refused while it reads. Each edit moves the
/// whole 2 MB header by 64 bytes (the first value grows as the last one shrinks, and back), so
/// a reader that read part of the old header and part of the new one would see garbage.
#[test]
fn verify_during_in_place_edits_never_sees_a_torn_header() {
    let dir = temp_dir("safety-readers");
    let tokens: Vec<String> = (0..150_000).map(|i| format!("token-{i}")).collect();
    let short = |c: char| c.to_string().repeat(4);
    let long = |c: char| c.to_string().repeat(68);
    let bytes = model()
        .kv("general.alpha", Value::str(&short('a')))
        .kv("tokenizer.ggml.merges", Value::strings(&tokens))
        .kv("general.omega", Value::str(&long('o')))
        .build();
    write(&dir, "m.gguf", &bytes);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let editor = {
        let (dir, stop) = (dir.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 1u32;
            let mut ok = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (a, o) =
                    if n % 2 == 1 { (long('a'), short('o')) } else { (short('a'), long('o')) };
                let a = format!("general.alpha=str:{a}");
                let o = format!("general.omega=str:{o}");
                let run = sipllm(&dir, &["edit", "m.gguf", "--in-place", "--set", &a, "--set", &o]);
                assert!(matches!(run.code, Some(0 | 2)), "{}", run.transcript());
                if run.code == Some(0) {
                    ok += 1;
                    n += 1;
                } else {
                    assert!(run.stderr.contains("in use by another process"), "{}", run.stderr);
                }
            }
            ok
        })
    };
    for i in 0..40 {
        let run = sipllm(&dir, &["verify", "m.gguf"]);
        assert_eq!(run.code, Some(0), "verify {i} during edits: {}", run.transcript());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let edits = editor.join().unwrap();
    eprintln!("readers during edits: {edits} edits went through beside 40 verifies");
    assert!(edits > 0, "the edits ran");
    assert_eq!(names(&dir), ["m.gguf"]);
}

/// Item 14: `edit -o FILE` onto its own input keeps its mode (and owner, where the process may
/// set it); the backup sidecar has the model's mode; `edit -o LINK` edits the file the link
/// points at and keeps the link.
#[test]
#[allow(clippy::single_range_in_vec_init)] // one run of bytes, on purpose
fn edit_out_keeps_mode_and_owner_and_edits_through_symlinks() {
    let dir = temp_dir("safety-mode");
    let path = write(&dir, "m.gguf", &editable());
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let root = rustix_like_uid() == 0;
    if root {
        // nobody:nogroup, as the reproduction.
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    }
    let before = fs::metadata(&path).unwrap();
    let run = sipllm(&dir, &["edit", "m.gguf", "-o", "m.gguf", "--set", "general.alpha=str:a-9"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let after = fs::metadata(&path).unwrap();
    assert_ne!(after.ino(), before.ino(), "replaced (atomically)");
    assert_eq!(after.mode() & 0o7777, 0o640, "the mode is kept");
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()), "the owner is kept");
    assert_eq!(get_str(&path, "general.alpha").as_deref(), Some("a-9"));

    // Through a symlink: the target is edited, the link stays a link.
    fs::create_dir(dir.join("links")).unwrap();
    std::os::unix::fs::symlink("../m.gguf", dir.join("links/alias.gguf")).unwrap();
    let run = sipllm(
        &dir,
        &["edit", "links/alias.gguf", "-o", "links/alias.gguf", "--set", "general.alpha=str:a-8"],
    );
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let link_meta = fs::symlink_metadata(dir.join("links/alias.gguf")).unwrap();
    assert!(link_meta.file_type().is_symlink(), "the link is kept");
    assert_eq!(get_str(&path, "general.alpha").as_deref(), Some("a-8"), "the target is edited");
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o640);
    assert_eq!(names(&dir.join("links")), ["alias.gguf"], "no temporary beside the link");

    // The in-place backup has the model's mode: seen while an edit is interrupted.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let bytes = fs::read(&path).unwrap();
    let data_offset = sipllm_gguf::parse(&bytes).unwrap().data_offset() as usize;
    let file = fs::File::open(&path).unwrap();
    let backup = HeaderBackup::write(
        &path,
        &file,
        bytes.len() as u64,
        &bytes[..data_offset],
        &[0..data_offset],
    )
    .unwrap();
    assert_eq!(fs::metadata(backup.path()).unwrap().mode() & 0o777, 0o600);
    backup.remove().unwrap();
}

/// The effective user id, from /proc (no libc call in the tests).
fn rustix_like_uid() -> u32 {
    fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX)
}

/// Item 16: `merge` refusing an output that is a shard explains it with merge's help, not
/// split's.
#[test]
fn merge_refusing_a_shard_as_output_says_why() {
    let dir = temp_dir("safety-merge-self");
    write(&dir, "m.gguf", &editable());
    let run = sipllm(&dir, &["split", "m.gguf", "--max-tensors", "1"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let before = fs::read(dir.join("m-00002-of-00003.gguf")).unwrap();
    let run = sipllm(&dir, &["merge", "m-00001-of-00003.gguf", "m-00002-of-00003.gguf"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("edit::write::output_is_input"), "{}", run.stderr);
    assert!(!run.stderr.contains("choose a limit"), "split's help: {}", run.stderr);
    assert_eq!(fs::read(dir.join("m-00002-of-00003.gguf")).unwrap(), before);
}

/// A model of `n` one-element tensors.
fn many_tensors(n: usize) -> Vec<u8> {
    let mut b = GgufBuilder::new().kv("general.architecture", Value::str("llama"));
    for i in 0..n {
        b = b.tensor(&format!("t.{i}"), GgmlType::F32, &[1]);
    }
    b.build()
}

/// Runs `sipllm args…` in `dir` under a soft open-file limit of 1024 (the hard one as it is).
fn sipllm_nofile_1024(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -S -n 1024 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1");
    cmd.output().unwrap()
}

/// Item 9: a 4,000-shard set written by `split` is inspected, verified and merged under
/// `ulimit -n 1024` (the soft limit is raised toward the hard one; every shard stays open).
#[test]
fn a_four_thousand_shard_set_works_under_a_low_open_file_limit() {
    let hard: u64 = fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines().find(|l| l.starts_with("Max open files")).and_then(|l| {
                l.split_whitespace().nth(4).and_then(|h| h.parse().ok()).or(Some(u64::MAX))
            })
        })
        .unwrap_or(u64::MAX);
    if hard < 4100 {
        eprintln!("SKIPPED: the hard open-file limit is {hard}: a 4,000-shard set cannot be held");
        return;
    }
    let dir = temp_dir("safety-4000");
    let original = write(&dir, "m.gguf", &many_tensors(4000));
    let out = sipllm_nofile_1024(&dir, &["split", "m.gguf", "--max-tensors", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = "m-00001-of-04000.gguf";
    for args in [
        vec!["inspect", first],
        vec!["validate", first],
        vec!["verify", first],
        vec!["merge", first, "merged.gguf"],
    ] {
        let out = sipllm_nofile_1024(&dir, &args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(fs::read(dir.join("merged.gguf")).unwrap() == fs::read(&original).unwrap());
}

/// Item 12: a re-split over an existing set, killed at random moments: whenever the set
/// opens, it is wholly the old one or wholly the new one (never new shard 1 with old shards
/// 2-3), and the next run leaves no temporary behind.
#[test]
fn a_killed_re_split_never_leaves_a_mixed_set() {
    let dir = temp_dir("safety-resplit");
    // Three shards of ~8 MiB each, so a kill lands inside the writes.
    let make = |fill: u8, name: &str| {
        let b = GgufBuilder::new()
            .kv("general.architecture", Value::str("llama"))
            .kv("general.name", Value::str(name))
            .with_data(false)
            .tensor("a", GgmlType::I8, &[8 << 20])
            .tensor("b", GgmlType::I8, &[8 << 20])
            .tensor("c", GgmlType::I8, &[8 << 20]);
        let header = b.build_header();
        let off = sipllm_gguf::ggml::align_up(header.len() as u64, 32).unwrap() as usize;
        let mut bytes = header;
        bytes.resize(off, 0);
        bytes.resize(off + 3 * (8 << 20), fill);
        bytes
    };
    let old = make(0x11, "old-");
    let new = make(0x22, "new-");
    write(&dir, "m.gguf", &old);
    let run = sipllm(&dir, &["split", "m.gguf", "--max-tensors", "1"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let shard_names = ["m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"];
    let old_shards: Vec<Vec<u8>> =
        shard_names.iter().map(|n| fs::read(dir.join(n)).unwrap()).collect();
    write(&dir, "m.gguf", &new);
    let mut outcomes = std::collections::BTreeMap::<&str, u32>::new();
    for trial in 0..16u64 {
        // Start from the old set each time.
        for (n, b) in shard_names.iter().zip(&old_shards) {
            fs::write(dir.join(n), b).unwrap();
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_sipllm"))
            .args(["split", "m.gguf", "--max-tensors", "1"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5 + trial * 9));
        let _ = child.kill();
        let _ = child.wait();
        let present: Vec<Option<Vec<u8>>> =
            shard_names.iter().map(|n| fs::read(dir.join(n)).ok()).collect();
        let opens = sipllm(&dir, &["validate", shard_names[1]]).code == Some(0);
        let outcome = if !opens {
            assert!(present[0].is_none(), "trial {trial}: a set with its first shard refused");
            "incomplete"
        } else if present.iter().zip(&old_shards).all(|(p, o)| p.as_ref() == Some(o)) {
            "old"
        } else {
            let name = get_str(&dir.join(shard_names[0]), "general.name");
            assert_eq!(name.as_deref(), Some("new-"), "trial {trial}: a mixed set validates");
            for (k, n) in shard_names.iter().enumerate().skip(1) {
                assert!(
                    present[k].as_ref() != Some(&old_shards[k]),
                    "trial {trial}: old {n} beside the new first shard"
                );
            }
            "new"
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    eprintln!("killed re-splits: {outcomes:?}");
    // The next run completes and sweeps what the killed ones left.
    let run = sipllm(&dir, &["split", "m.gguf", "--max-tensors", "1"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let left = names(&dir);
    assert!(!left.iter().any(|n| n.ends_with(".tmp")), "stray temporaries: {left:?}");
    let run = sipllm(&dir, &["merge", shard_names[0], "merged.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(fs::read(dir.join("merged.gguf")).unwrap() == new, "the new set, whole");
}

/// Two splits into one directory never destroy each other's shards (issue 26): the second
/// exited 0 with 1–2 of 3 shards left, its sweep having taken the first's closed temporaries
/// and its rollback the first's shards. A split holds its output directory's lock
/// throughout, so a second one is refused before it touches a file, and a sweep never takes
/// a living process's temporary.
#[test]
fn two_splits_into_one_directory_never_destroy_each_others_shards() {
    let dir = temp_dir("safety-two-splits");
    let bytes = model().tensor("c", GgmlType::F32, &[64]).build();
    write(&dir, "m.gguf", &bytes);
    // Four tensors: four shards.
    let shard_names = ["m-00001-of-00004.gguf", "m-00002-of-00004.gguf"];
    let split = ["split", "m.gguf", "--max-tensors", "1"];
    let run = sipllm(&dir, &split);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let before = names(&dir);

    // Another split holds the directory (the test plays it, holding the lock): refused, with
    // its code, and every file is as it was.
    let held = fs::File::open(&dir).unwrap();
    sipllm_streaming::lock::try_lock_exclusive(&held, &dir).unwrap();
    let run = sipllm(&dir, &split);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("edit::split::busy"), "{}", run.stderr);
    assert!(run.stderr.contains("another split is writing into"), "{}", run.stderr);
    assert_eq!(names(&dir), before);
    drop(held);

    // A living run's temporary — complete, closed and unlocked, waiting for its rename, as a
    // split leaves each shard before it renames the set — survives another run's sweep.
    let live = dir.join(format!(".{}.{}-0.tmp", shard_names[1], std::process::id()));
    fs::write(&live, b"another run's shard").unwrap();
    let run = sipllm(&dir, &split);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(fs::read(&live).unwrap(), b"another run's shard");
    fs::remove_file(&live).unwrap();

    // Really concurrent: whatever the interleaving, each run either wrote the whole set or
    // was refused, and the set on disk is whole.
    for round in 0..8 {
        let (a, b) = (spawn(&dir, &split), spawn(&dir, &split));
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let codes = [a.status.code(), b.status.code()];
        assert!(codes.contains(&Some(0)), "round {round}: {codes:?}");
        for out in [&a, &b] {
            let err = String::from_utf8_lossy(&out.stderr);
            match out.status.code() {
                Some(0) => {}
                Some(2) => assert!(err.contains("edit::split::busy"), "round {round}: {err}"),
                c => panic!("round {round}: exit {c:?}: {err}"),
            }
        }
        assert_eq!(names(&dir), before, "round {round}");
        let run = sipllm(&dir, &["merge", shard_names[0], "merged.gguf"]);
        assert_eq!(run.code, Some(0), "round {round}: {}", run.transcript());
        assert!(fs::read(dir.join("merged.gguf")).unwrap() == bytes, "round {round}");
        fs::remove_file(dir.join("merged.gguf")).unwrap();
    }
}

/// A killed `edit -o` left a full-size hidden temporary that nothing removed (issue 26): the
/// next write of that output removes it — only a dead writer's, never a living one's.
#[test]
fn the_next_edit_removes_what_a_killed_edit_left() {
    let dir = temp_dir("safety-killed-edit");
    write(&dir, "m.gguf", &editable());
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = write(&dir, &format!(".out.gguf.{dead}-0.tmp"), &vec![7u8; 1 << 20]);
    let living = write(&dir, &format!(".out.gguf.{}-0.tmp", std::process::id()), b"mine");
    let run = sipllm(&dir, &["edit", "m.gguf", "-o", "out.gguf", "--set", "general.alpha=str:z"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(!stale.exists(), "{:?}", names(&dir));
    assert_eq!(fs::read(&living).unwrap(), b"mine");
    assert_eq!(get_str(&dir.join("out.gguf"), "general.alpha").as_deref(), Some("z"));
}

/// `validate` and `inspect` read a file as it is, but a header backup beside it means an
/// in-place edit was interrupted and the header may be half-rewritten: they say so, with the
/// code and the recovery command (issue 26: they ignored it).
#[test]
fn readers_warn_of_a_pending_header_backup() {
    let dir = temp_dir("safety-pending-backup");
    write(&dir, "m.gguf", &editable());
    let quiet = sipllm(&dir, &["validate", "m.gguf"]);
    assert_eq!(quiet.code, Some(0), "{}", quiet.transcript());
    assert!(!quiet.stdout.contains("edit::in_place::pending"), "{}", quiet.stdout);
    let backup = write(&dir, ".m.gguf.header-backup", b"a record");

    let run = sipllm(&dir, &["validate", "m.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("edit::in_place::pending"), "{}", run.stdout);
    assert!(run.stdout.contains("sipllm edit --recover m.gguf"), "{}", run.stdout);
    assert!(run.stdout.contains("valid, 1 warning"), "{}", run.stdout);
    let run = sipllm(&dir, &["validate", "--deny-warnings", "m.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    let run = sipllm(&dir, &["validate", "--format", "json", "m.gguf"]);
    let line: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(line["code"], "edit::in_place::pending");
    assert_eq!(line["severity"], "warning");

    let run = sipllm(&dir, &["inspect", "m.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stderr.contains("edit::in_place::pending"), "{}", run.stderr);
    assert!(run.stderr.contains("sipllm edit --recover m.gguf"), "{}", run.stderr);
    let run = sipllm(&dir, &["inspect", "--json", "m.gguf"]);
    assert!(run.stderr.contains("edit::in_place::pending"), "{}", run.stderr);
    serde_json::from_str::<serde_json::Value>(&run.stdout).expect("standard output stays JSON");

    fs::remove_file(backup).unwrap();
    let run = sipllm(&dir, &["inspect", "m.gguf"]);
    assert!(!run.stderr.contains("edit::in_place::pending"), "{}", run.stderr);
}
