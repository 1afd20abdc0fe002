//! The in-place header rewrite (`sipllm_edit::in_place`): the changed blocks, the backup's
//! documented layout, a rewrite that writes only the changed blocks, a crash between any two
//! steps undone by `recover` byte for byte, the failures of the rewrite, and every refusal of
//! `recover` (the model left as it is, the backup kept).

#![allow(clippy::single_range_in_vec_init)] // runs of bytes, one on purpose

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sipllm_edit::in_place::{
    self, BLOCK, BackupDefect, HeaderBackup, MAGIC, VERSION, changed_runs, overwrite_runs,
};
use sipllm_edit::{InPlaceErrorKind, rewrite_header_in_place, rewrite_header_locked};
use sipllm_gguf::{GgmlType, Limits};
use sipllm_streaming::lock::ExclusiveLock;
use sipllm_streaming::{GgufFile, OpenOptions, StreamErrorKind};
use sipllm_testkit::{GgufBuilder, Value};
use xxhash_rust::xxh3::xxh3_64;

use crate::support::dir_entries;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sipllm-in-place-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A model whose header spans several blocks: `general.name` in the first block,
/// `general.tail` in the last.
fn model() -> Vec<u8> {
    let tokens: Vec<String> = (0..2000).map(|i| format!("token{i}")).collect();
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("name-aaaa"))
        .kv("tokenizer.ggml.tokens", Value::strings(&tokens))
        .kv("general.tail", Value::str("tail-zzzz"))
        .tensor("t", GgmlType::F32, &[8])
        .build()
}

fn data_offset(bytes: &[u8]) -> usize {
    usize::try_from(sipllm_gguf::parse(bytes).unwrap().data_offset()).unwrap()
}

/// `header` with the one occurrence of `from` replaced by `to` (the same length).
fn replaced(header: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = header.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
    let mut out = header.to_vec();
    out[at..at + to.len()].copy_from_slice(to.as_bytes());
    out
}

/// A model file in a fresh directory: (dir, path, bytes, data offset).
fn setup(name: &str) -> (PathBuf, PathBuf, Vec<u8>, usize) {
    let dir = temp_dir(name);
    let bytes = model();
    let path = dir.join("m.gguf");
    std::fs::write(&path, &bytes).unwrap();
    let offset = data_offset(&bytes);
    assert!(offset > 3 * BLOCK, "the header spans several blocks");
    (dir, path, bytes, offset)
}

fn open_rw(path: &Path) -> File {
    File::options().read(true).write(true).open(path).unwrap()
}

/// A version 1 backup record written by hand from the layout in the module docs.
fn record(model_len: u64, header: &[u8], runs: &[(u64, &[u8])]) -> Vec<u8> {
    record_of(None, model_len, header, runs)
}

/// `(device, inode)` of the file at `path`.
fn dev_ino(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    (m.dev(), m.ino())
}

/// A backup record of the documented layout: version 2 with the model's `(device, inode)`,
/// version 1 without.
fn record_of(
    id: Option<(u64, u64)>,
    model_len: u64,
    header: &[u8],
    runs: &[(u64, &[u8])],
) -> Vec<u8> {
    let mut rec = Vec::new();
    rec.extend_from_slice(b"SIPLLMHB");
    rec.extend_from_slice(&(if id.is_some() { 2u32 } else { 1u32 }).to_le_bytes());
    rec.extend_from_slice(&u32::try_from(runs.len()).unwrap().to_le_bytes());
    rec.extend_from_slice(&model_len.to_le_bytes());
    if let Some((dev, ino)) = id {
        rec.extend_from_slice(&dev.to_le_bytes());
        rec.extend_from_slice(&ino.to_le_bytes());
    }
    rec.extend_from_slice(&(header.len() as u64).to_le_bytes());
    rec.extend_from_slice(&xxh3_64(header).to_le_bytes());
    for (offset, bytes) in runs {
        rec.extend_from_slice(&offset.to_le_bytes());
        rec.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        rec.extend_from_slice(bytes);
    }
    let sum = xxh3_64(&rec);
    rec.extend_from_slice(&sum.to_le_bytes());
    rec
}

#[test]
fn changed_runs_are_whole_blocks_merged() {
    let old = vec![0u8; 3 * BLOCK + 10];
    assert!(changed_runs(&old, &old).is_empty());
    let mut new = old.clone();
    new[5] = 1;
    new[BLOCK + 1] = 1;
    assert_eq!(changed_runs(&old, &new), [0..2 * BLOCK]);
    new[3 * BLOCK + 9] = 1;
    assert_eq!(changed_runs(&old, &new), [0..2 * BLOCK, 3 * BLOCK..old.len()]);
    // A change in the middle block only: that block, not its neighbours.
    let mut mid = old.clone();
    mid[2 * BLOCK - 1] = 7;
    assert_eq!(changed_runs(&old, &mid), [BLOCK..2 * BLOCK]);
    assert!(changed_runs(&[], &[]).is_empty());
}

#[test]
fn the_backup_path_is_a_hidden_sibling() {
    assert_eq!(
        HeaderBackup::path_for(Path::new("dir/m.gguf")),
        Path::new("dir/.m.gguf.header-backup")
    );
    assert_eq!(HeaderBackup::path_for(Path::new("m.gguf")), Path::new(".m.gguf.header-backup"));
}

#[test]
fn the_backup_record_has_the_documented_layout() {
    let (dir, path, bytes, offset) = setup("layout");
    let header = &bytes[..offset];
    let runs: [Range<usize>; 2] = [0..BLOCK, 2 * BLOCK..3 * BLOCK];
    assert_eq!(HeaderBackup::pending(&path), None);
    let file = open_rw(&path);
    let backup = HeaderBackup::write(&path, &file, bytes.len() as u64, header, &runs).unwrap();
    assert_eq!(backup.path(), dir.join(".m.gguf.header-backup"));
    assert_eq!(backup.model(), path);
    assert_eq!(HeaderBackup::pending(&path).as_deref(), Some(backup.path()));
    let rec = std::fs::read(backup.path()).unwrap();
    let runs_as_written: Vec<(u64, &[u8])> =
        runs.iter().map(|r| (r.start as u64, &header[r.clone()])).collect();
    let id = Some(dev_ino(&path));
    assert_eq!(rec, record_of(id, bytes.len() as u64, header, &runs_as_written));
    assert_eq!(&rec[..8], MAGIC);
    assert_eq!(rec[8..12], VERSION.to_le_bytes());
    assert_eq!(VERSION, 2);
    assert_eq!(rec.len(), 8 + 4 + 4 + 8 + 16 + 8 + 8 + 2 * (16 + BLOCK) + 8);
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "step 1 does not touch the model");
    assert_eq!(dir_entries(&dir), [".m.gguf.header-backup", "m.gguf"], "no temporary left");
    backup.remove().unwrap();
    assert_eq!(HeaderBackup::pending(&path), None);
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    // A run outside the header is refused before anything is created.
    let e = HeaderBackup::write(&path, &file, 1, &header[..10], &[0..11]).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::backup_write");
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_rewrite_writes_only_the_changed_blocks() {
    let (dir, path, bytes, offset) = setup("rewrite");
    let old = &bytes[..offset];
    let file = open_rw(&path);

    let new = replaced(old, "name-aaaa", "name-bbbb");
    let stats = rewrite_header_in_place(&file, &path, old, &new).unwrap();
    assert_eq!(stats.runs, [0..BLOCK], "the name lies in the first block");
    assert_eq!(stats.rewritten, BLOCK as u64);
    assert_eq!(stats.header_len, offset as u64);
    let mut expected = new.clone();
    expected.extend_from_slice(&bytes[offset..]);
    assert_eq!(std::fs::read(&path).unwrap(), expected);
    assert_eq!(dir_entries(&dir), ["m.gguf"], "the backup is removed");
    let reopened = GgufFile::open(&path, &OpenOptions::default()).unwrap();
    assert_eq!(reopened.gguf().get_str("general.name"), Some("name-bbbb"));
    drop(reopened);

    // Two edits far apart: two runs, the blocks between them untouched.
    let newer = replaced(&new, "tail-zzzz", "tail-yyyy");
    let newer = replaced(&newer, "name-bbbb", "name-cccc");
    let stats = rewrite_header_in_place(&file, &path, &new, &newer).unwrap();
    assert_eq!(stats.runs.len(), 2, "{:?}", stats.runs);
    assert_eq!(stats.runs[0], 0..BLOCK);
    assert_eq!(stats.runs[1].end, offset, "the tail lies in the last block");
    assert_eq!(stats.rewritten, stats.runs.iter().map(|r| r.len() as u64).sum::<u64>());
    assert_eq!(&std::fs::read(&path).unwrap()[..offset], &newer[..]);

    // The same header again: nothing written, no backup.
    let stats = rewrite_header_in_place(&file, &path, &newer, &newer).unwrap();
    assert!(stats.runs.is_empty());
    assert_eq!(stats.rewritten, 0);
    assert_eq!(dir_entries(&dir), ["m.gguf"]);

    // Another length: refused before anything is written.
    let e = rewrite_header_in_place(&file, &path, &newer, &newer[..offset - 1]).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::length_mismatch");
    assert!(
        matches!(*e.kind(), InPlaceErrorKind::Length { old, new } if old == offset as u64 && new == old - 1)
    );
    assert_eq!(&std::fs::read(&path).unwrap()[..offset], &newer[..]);
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A crash after step 1, in the middle of step 2, or after step 2 (before step 3): the backup
/// is left, and `recover` brings the old header back byte for byte and removes it.
#[test]
fn a_crash_between_any_two_steps_is_undone_by_recover() {
    let (dir, path, bytes, offset) = setup("crash");
    let old = &bytes[..offset];
    let new = replaced(&replaced(old, "name-aaaa", "name-bbbb"), "tail-zzzz", "tail-yyyy");
    let runs = changed_runs(old, &new);
    assert_eq!(runs.len(), 2);
    let backed_up: u64 = runs.iter().map(|r| r.len() as u64).sum();
    let len = bytes.len() as u64;
    // (when the crash happens, the header whose runs were written, the runs written)
    type Crash<'a> = (&'a str, Vec<u8>, Vec<Range<usize>>);
    let torn_writes: [Crash<'_>; 4] = [
        ("after step 1", new.clone(), Vec::new()),
        ("step 2, one run of two", new.clone(), runs[..1].to_vec()),
        ("step 2, garbage in a half block", vec![0xAB; offset], vec![0..BLOCK / 2]),
        ("after step 2", new.clone(), runs.clone()),
    ];
    for (when, header, written) in torn_writes {
        let file = open_rw(&path);
        let backup = HeaderBackup::write(&path, &file, len, old, &runs).unwrap();
        drop(backup); // the crash
        overwrite_runs(&file, &path, &header, &written).unwrap();
        drop(file);
        assert!(HeaderBackup::pending(&path).is_some(), "{when}");
        let stats = in_place::recover(&path).unwrap();
        assert_eq!(stats.backup, dir.join(".m.gguf.header-backup"), "{when}");
        assert_eq!(stats.runs, 2, "{when}");
        assert_eq!(stats.restored, backed_up, "{when}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{when}: restored byte for byte");
        assert_eq!(HeaderBackup::pending(&path), None, "{when}");
        assert_eq!(dir_entries(&dir), ["m.gguf"], "{when}");
    }
    // Nothing left to recover.
    let e = in_place::recover(&path).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::no_backup");
    assert_eq!(
        e.to_string(),
        format!(
            "no header backup for {} ({} does not exist): nothing to recover",
            path.display(),
            dir.join(".m.gguf.header-backup").display()
        )
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `recover` writes nothing from a backup it cannot trust, and keeps every backup it could not
/// finish with.
#[test]
fn recover_refuses_what_it_cannot_trust_and_leaves_the_model_alone() {
    let (dir, path, bytes, offset) = setup("refusals");
    let old = &bytes[..offset];
    let len = bytes.len() as u64;
    let backup = HeaderBackup::path_for(&path);
    let block0: &[u8] = &old[..BLOCK];
    let check = |content: &[u8], code: &str, defect: Option<BackupDefect>| {
        std::fs::write(&backup, content).unwrap();
        let e = in_place::recover(&path).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        if let Some(d) = defect {
            assert!(
                matches!(*e.kind(), InPlaceErrorKind::BadBackup { defect } if defect == d),
                "{e:?}"
            );
        }
        assert_eq!(e.path(), Some(path.as_path()));
        assert!(!e.help().is_empty());
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{code}: the model is not written");
        assert!(backup.exists(), "{code}: the backup is kept");
    };
    // Not a record: garbage, and a valid record with one byte flipped.
    check(&old[..offset / 3], "edit::in_place::bad_backup", Some(BackupDefect::NotARecord));
    let mut flipped = record(len, old, &[(0, block0)]);
    flipped[40] ^= 1;
    check(&flipped, "edit::in_place::bad_backup", Some(BackupDefect::NotARecord));
    // A record for a file of another length.
    check(&record(len + 1, old, &[(0, block0)]), "edit::in_place::wrong_model", None);
    // A header region past the end of the model.
    let long = vec![0u8; bytes.len() + 1];
    let too_long = record(len, &long, &[(0, &long[..BLOCK])]);
    check(&too_long, "edit::in_place::bad_backup", Some(BackupDefect::HeaderPastEnd));
    // A run past the header region: refused before any run is written (the first one is
    // fine and would change the model).
    let other = vec![0x55; BLOCK];
    let past = record(len, old, &[(0, &other), (offset as u64 - 8, &old[..16])]);
    check(&past, "edit::in_place::bad_backup", Some(BackupDefect::RunPastHeader));
    // Larger than any backup of a header within the parser's limit.
    {
        let f = File::create(&backup).unwrap();
        f.set_len(Limits::default().max_header_bytes * 2 + 1).unwrap(); // sparse
        let e = in_place::recover(&path).unwrap_err();
        assert!(
            matches!(e.kind(), InPlaceErrorKind::BadBackup { defect: BackupDefect::TooLarge }),
            "{e:?}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
    // Not a regular file: a FIFO with no writer (an open that blocked forever) and
    // `/dev/zero` behind a symlink (a read that grew without bound) are refused at once.
    for special in ["fifo", "zero"] {
        std::fs::remove_file(&backup).unwrap();
        match special {
            "fifo" => {
                let made = std::process::Command::new("mkfifo").arg(&backup).status().unwrap();
                assert!(made.success());
            }
            _ => std::os::unix::fs::symlink("/dev/zero", &backup).unwrap(),
        }
        let e = in_place::recover(&path).unwrap_err();
        assert!(
            matches!(e.kind(), InPlaceErrorKind::BadBackup { defect: BackupDefect::NotAFile }),
            "{special}: {e:?}"
        );
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
    std::fs::remove_file(&backup).unwrap();
    // A hand-made record of the documented layout is accepted.
    std::fs::write(&backup, record(len, old, &[(0, block0)])).unwrap();
    let stats = in_place::recover(&path).unwrap();
    assert_eq!((stats.runs, stats.restored), (1, BLOCK as u64));
    assert!(!backup.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn recover_checks_the_restored_header_and_keeps_the_backup_when_it_fails() {
    let (dir, path, bytes, offset) = setup("checks");
    let old = &bytes[..offset];
    let len = bytes.len() as u64;
    let backup = HeaderBackup::path_for(&path);

    // The model changed outside the blocks the backup holds (a stale backup: the model was
    // edited again since): its blocks over the current header would not give the recorded
    // header, which is found before anything is written.
    let changed = replaced(old, "tail-zzzz", "tail-yyyy");
    let changed = replaced(&changed, "name-aaaa", "name-bbbb");
    open_rw(&path).write_all_at(&changed, 0).unwrap();
    std::fs::write(&backup, record(len, old, &[(0, &old[..BLOCK])])).unwrap();
    let e = in_place::recover(&path).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::backup_mismatch", "{e}");
    assert!(!e.help().is_empty());
    assert!(backup.exists());
    assert_eq!(&std::fs::read(&path).unwrap()[..offset], &changed[..], "nothing was written");

    // The recorded header is what the file holds, but it is not a GGUF header: restored, it
    // matches its hash and still does not open.
    let garbage = vec![0x47; offset];
    open_rw(&path).write_all_at(&garbage, 0).unwrap();
    std::fs::write(&backup, record(len, &garbage, &[(0, &garbage[..BLOCK])])).unwrap();
    let e = in_place::recover(&path).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::restored_invalid", "{e}");
    let InPlaceErrorKind::RestoredInvalid { source } = e.kind() else { unreachable!() };
    assert_eq!(source.code(), "gguf::header::bad_magic");
    assert!(backup.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// Step 2 failing: with a descriptor that cannot write, neither the new blocks nor the old
/// ones go in, so the backup is kept (`torn`); `recover` then finds the model intact.
#[test]
fn a_failed_header_write_keeps_the_backup_for_recovery() {
    let (dir, path, bytes, offset) = setup("torn");
    let old = &bytes[..offset];
    let new = replaced(old, "name-aaaa", "name-bbbb");
    let read_only = File::open(&path).unwrap();
    let e = rewrite_header_in_place(&read_only, &path, old, &new).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::torn", "{e}");
    let InPlaceErrorKind::Torn { offset: at, .. } = e.kind() else { unreachable!() };
    assert_eq!(*at, 0);
    assert_eq!(HeaderBackup::pending(&path).as_deref(), e.backup());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let stats = in_place::recover(&path).unwrap();
    assert_eq!(stats.restored, BLOCK as u64);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Step 1 failing (the backup's directory does not exist): nothing is written.
#[test]
fn a_backup_that_cannot_be_written_leaves_the_model_alone() {
    let (dir, path, bytes, offset) = setup("no-backup");
    let old = &bytes[..offset];
    let new = replaced(old, "name-aaaa", "name-bbbb");
    let file = open_rw(&path);
    let elsewhere = dir.join("missing-dir").join("m.gguf");
    let e = rewrite_header_in_place(&file, &elsewhere, old, &new).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::backup_write", "{e}");
    assert_eq!(e.path(), Some(elsewhere.as_path()));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Two editors of one file (issue 16, item 1): the second is refused while the first holds
/// the file, and an editor that planned from the header the first one replaced is refused
/// too (`changed`): never a lost update, never a second backup.
#[test]
fn concurrent_editors_one_wins_and_the_other_is_refused() {
    let (dir, path, bytes, offset) = setup("concurrent");
    let old = &bytes[..offset];
    let a_new = replaced(old, "name-aaaa", "name-AAAA");
    let b_new = replaced(old, "tail-zzzz", "tail-BBBB");
    let (a, b) = (open_rw(&path), open_rw(&path));

    // A holds the file (between its backup and its rewrite, say): B is refused, nothing written.
    let lock = ExclusiveLock::try_new(&a, &path).unwrap();
    let e = rewrite_header_in_place(&b, &path, old, &b_new).unwrap_err();
    assert_eq!(e.code(), "streaming::lock::busy", "{e}");
    assert!(
        matches!(e.read_error(), Some(r) if matches!(r.kind(), StreamErrorKind::Locked { exclusive: true, .. }))
    );
    assert!(e.to_string().contains("in use by another process"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(dir_entries(&dir), ["m.gguf"], "no backup of B's");
    rewrite_header_locked(&lock, old, &a_new).unwrap();
    drop(lock);

    // B, planned from the header A replaced, gets the lock now but finds another header.
    let e = rewrite_header_in_place(&b, &path, old, &b_new).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::changed", "{e}");
    assert!(!e.help().is_empty());
    assert_eq!(&std::fs::read(&path).unwrap()[..offset], &a_new[..], "A's edit is kept");
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Readers and the in-place writer (item 13): a reader waits while the writer holds the file
/// (and then sees the whole new header); the writer is refused while a reader has it open.
#[test]
fn readers_wait_for_the_writer_and_the_writer_refuses_readers() {
    let (dir, path, bytes, offset) = setup("readers");
    let old = &bytes[..offset];
    let new = replaced(old, "name-aaaa", "name-bbbb");
    let file = open_rw(&path);

    let reader = GgufFile::open(&path, &OpenOptions::default()).unwrap();
    let e = rewrite_header_in_place(&file, &path, old, &new).unwrap_err();
    assert_eq!(e.code(), "streaming::lock::busy", "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    drop(reader);

    let lock = ExclusiveLock::try_new(&file, &path).unwrap();
    // While the writer holds the file, no reader gets its shared lock: one that may not wait
    // is refused, so one that may waits (shown without timing anything: the test measured
    // the wait, and a busy machine could fail it).
    let probe = File::open(&path).unwrap();
    let e =
        sipllm_streaming::lock::lock_shared(&probe, &path, std::time::Duration::ZERO).unwrap_err();
    assert!(matches!(e.kind(), StreamErrorKind::Locked { exclusive: false, .. }), "{e:?}");
    drop(probe);
    // A reader that opens meanwhile waits for the writer, and sees the whole new header.
    let opener = {
        let path = path.clone();
        std::thread::spawn(move || {
            let g = GgufFile::open(&path, &OpenOptions::default()).unwrap();
            g.gguf().get_str("general.name").map(str::to_owned)
        })
    };
    rewrite_header_locked(&lock, old, &new).unwrap();
    drop(lock);
    let name = opener.join().unwrap();
    assert_eq!(name.as_deref(), Some("name-bbbb"), "the reader read the new header");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The backup is created exclusively (item 1): an existing backup is neither replaced nor
/// removed, and the model is not written.
#[test]
fn an_existing_backup_is_never_replaced() {
    let (dir, path, bytes, offset) = setup("exclusive");
    let old = &bytes[..offset];
    let new = replaced(old, "name-aaaa", "name-bbbb");
    let file = open_rw(&path);
    let backup = HeaderBackup::write(&path, &file, bytes.len() as u64, old, &[0..BLOCK]).unwrap();
    let before = std::fs::read(backup.path()).unwrap();
    let e = rewrite_header_in_place(&file, &path, old, &new).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::pending", "{e}");
    let e = HeaderBackup::write(&path, &file, 1, old, &[0..BLOCK]).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::pending", "{e}");
    assert_eq!(std::fs::read(backup.path()).unwrap(), before, "the backup is untouched");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(dir_entries(&dir), [".m.gguf.header-backup", "m.gguf"], "no temporary left");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The backup follows the file, not the name (item 3): an edit interrupted through a symlink
/// leaves its backup beside the real file, found from either path and recovered from the real
/// one; a backup made for another file (same length, another inode) is refused unwritten.
/// The backup has the model's mode (item 14).
#[test]
fn the_backup_is_keyed_by_the_file_not_the_path() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, path, bytes, offset) = setup("identity");
    let old = &bytes[..offset];
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let links = dir.join("links");
    std::fs::create_dir(&links).unwrap();
    let link = links.join("alias.gguf");
    std::os::unix::fs::symlink(&path, &link).unwrap();

    let file = open_rw(&link);
    let runs = [0..BLOCK];
    let backup = HeaderBackup::write(&link, &file, bytes.len() as u64, old, &runs).unwrap();
    assert_eq!(backup.path(), dir.join(".m.gguf.header-backup"), "beside the real file");
    let mode = std::fs::metadata(backup.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "as private as the model");
    drop(backup); // the crash
    overwrite_runs(&file, &link, &vec![0xEE; BLOCK], &runs).unwrap();
    drop(file);
    assert!(HeaderBackup::pending(&path).is_some(), "found from the real path");
    assert!(HeaderBackup::pending(&link).is_some(), "and through the link");
    // An edit through the real path is refused while the backup is there.
    let e = rewrite_header_in_place(&open_rw(&path), &path, &vec![0xEE; offset], old);
    assert!(e.is_err());
    in_place::recover(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(dir_entries(&links), ["alias.gguf"], "nothing beside the link");

    // The model replaced by a copy (another inode, same bytes) since the backup was made.
    let file = open_rw(&path);
    let backup = HeaderBackup::write(&path, &file, bytes.len() as u64, old, &runs).unwrap();
    drop(file);
    let copy = dir.join("copy.gguf");
    std::fs::write(&copy, &bytes).unwrap();
    std::fs::rename(&copy, &path).unwrap();
    let e = in_place::recover(&path).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::other_file", "{e}");
    assert!(backup.path().exists(), "kept");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A file shorter than the header it is given is refused, not extended (item 16).
#[test]
fn a_file_shorter_than_the_header_is_refused_not_extended() {
    let (dir, path, bytes, offset) = setup("short");
    let old = &bytes[..offset];
    let new = replaced(old, "name-aaaa", "name-bbbb");
    let file = open_rw(&path);
    file.set_len(offset as u64 - 100).unwrap();
    let e = rewrite_header_in_place(&file, &path, old, &new).unwrap_err();
    assert_eq!(e.code(), "edit::in_place::file_too_short", "{e}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), offset as u64 - 100, "not extended");
    assert_eq!(dir_entries(&dir), ["m.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}
