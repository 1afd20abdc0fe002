//! Writing: atomic replacement (the destination is the old file or the new one, never a torn
//! one), sparse-aware copies, and the GGUF file builder.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;

use sipllm_edit::write::{BuildStats, ReaderData};
use sipllm_edit::{AtomicFile, GgufFileBuilder, TensorData, WriteErrorKind, copy_range};
use sipllm_gguf::{GgmlType, writer::GgufWriter};
use sipllm_testkit::{GgufBuilder, Value};

use crate::support::dir_entries;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sipllm-write-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sample() -> Vec<u8> {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["a", "b"]))
        .tensor("t0", GgmlType::F32, &[8, 2])
        .tensor("t1", GgmlType::Q8_0, &[64])
        .tensor("t2", GgmlType::F16, &[5])
        .build()
}

#[test]
fn an_uncommitted_atomic_file_leaves_the_destination_alone() {
    let dir = temp_dir("atomic");
    let dest = dir.join("model.gguf");
    std::fs::write(&dest, b"old").unwrap();
    {
        let f = AtomicFile::create(&dest).unwrap();
        f.file().write_all_at(b"new but unfinished", 0).unwrap();
        assert!(f.temp_path().exists());
        // Dropped without commit: an error or panic on the way.
    }
    assert_eq!(std::fs::read(&dest).unwrap(), b"old");
    assert_eq!(dir_entries(&dir), ["model.gguf"], "the temporary is gone");
    let f = AtomicFile::create(&dest).unwrap();
    f.file().write_all_at(b"new", 0).unwrap();
    f.commit().unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    assert_eq!(dir_entries(&dir), ["model.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Issue 16, item 14: a replaced file keeps its mode (and owner); a symlinked destination has
/// its target replaced and stays a link; a device or a directory is never replaced; a killed
/// writer's temporaries are swept, a living one's are not.
#[test]
fn atomic_replacement_keeps_mode_follows_links_and_sweeps_stale_temporaries() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("atomic-meta");
    let dest = dir.join("model.gguf");
    std::fs::write(&dest, b"old").unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o604)).unwrap();
    let f = AtomicFile::create(&dest).unwrap();
    f.file().write_all_at(b"new", 0).unwrap();
    f.commit().unwrap();
    assert_eq!(std::fs::metadata(&dest).unwrap().mode() & 0o7777, 0o604);

    let link = dir.join("link.gguf");
    std::os::unix::fs::symlink("model.gguf", &link).unwrap();
    let f = AtomicFile::create(&link).unwrap();
    assert_eq!(f.dest(), dest.as_path());
    f.file().write_all_at(b"newer", 0).unwrap();
    f.commit().unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&dest).unwrap(), b"newer");

    for special in [std::path::Path::new("/dev/null"), dir.as_path()] {
        let e = AtomicFile::create(special).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{}", special.display());
    }

    // A dead writer's temporary (its process gone, nobody holds it locked) is swept; a living
    // one's is not, locked or not (a living process's unlocked temporary: one just created,
    // or a split's shard closed before its rename), nor another destination's.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let living = AtomicFile::create(&dest).unwrap();
    let stale = dir.join(format!(".model.gguf.{dead}-3.tmp"));
    std::fs::write(&stale, b"partial").unwrap();
    let other = dir.join(format!(".other.gguf.{dead}-3.tmp"));
    std::fs::write(&other, b"partial").unwrap();
    let unlocked = dir.join(format!(".model.gguf.{}-999.tmp", std::process::id()));
    std::fs::write(&unlocked, b"complete, closed").unwrap();
    let names = [std::ffi::OsStr::new("model.gguf")];
    assert_eq!(sipllm_edit::write::remove_stale_temps(&dir, &names), 1);
    assert!(!stale.exists());
    assert!(other.exists());
    assert!(living.temp_path().exists(), "a living writer's temporary is kept");
    assert!(unlocked.exists(), "a living writer's unlocked temporary is kept");
    // A new write of the destination sweeps its dead writers' temporaries itself (a killed
    // `edit -o` left one behind for good); the living ones stay.
    std::fs::write(&stale, b"partial").unwrap();
    let next = AtomicFile::create(&dest).unwrap();
    assert!(!stale.exists(), "the next write of model.gguf removed the dead writer's");
    assert!(other.exists() && unlocked.exists() && living.temp_path().exists());
    drop(next);
    std::fs::remove_file(&unlocked).unwrap();
    drop(living);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn copy_range_keeps_holes_and_copies_data() {
    let dir = temp_dir("sparse");
    let src_path = dir.join("src");
    let src =
        File::options().read(true).write(true).create(true).truncate(true).open(&src_path).unwrap();
    let len = 64 << 20;
    src.set_len(len).unwrap();
    // Two islands of data in 64 MiB of hole.
    src.write_all_at(&[7u8; 4096], 1 << 20).unwrap();
    src.write_all_at(&[9u8; 8192], 40 << 20).unwrap();
    src.sync_all().unwrap();
    let dst_path = dir.join("dst");
    let dst =
        File::options().read(true).write(true).create(true).truncate(true).open(&dst_path).unwrap();
    dst.set_len(len + 100).unwrap();
    let stats = copy_range(&src, 0, &dst, 100, len).unwrap();
    assert_eq!(stats.data_bytes + stats.hole_bytes, len);
    assert!(stats.hole_bytes >= len - (2 << 20), "holes skipped: {stats:?}");
    let mut a = vec![0u8; len as usize];
    src.read_exact_at(&mut a, 0).unwrap();
    let mut b = vec![0u8; len as usize];
    dst.read_exact_at(&mut b, 100).unwrap();
    assert!(a == b, "same content");
    // The copy stayed sparse: far less than 64 MiB is allocated.
    assert!(
        dst.metadata().unwrap().blocks() * 512 < 8 << 20,
        "{} bytes allocated",
        dst.metadata().unwrap().blocks() * 512
    );
    // A range past the source's end is an error, not a short copy.
    let err = copy_range(&src, len - 10, &dst, 0, 20).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_builder_rewrites_a_file_byte_for_byte_from_any_data_source() {
    let dir = temp_dir("builder");
    let bytes = sample();
    let src_path = dir.join("src.gguf");
    std::fs::write(&src_path, &bytes).unwrap();
    let src_file = File::open(&src_path).unwrap();
    let gguf = sipllm_gguf::parse(&bytes).unwrap();
    let infos = gguf.tensor_infos();
    let slice = |i: usize| {
        let t = &infos[i];
        &bytes[t.abs_offset() as usize..][..t.nbytes().unwrap() as usize]
    };
    let mut b = GgufFileBuilder::new(GgufWriter::from_gguf(&gguf));
    b.set_data(0, TensorData::File { file: &src_file, offset: infos[0].abs_offset() });
    b.set_data(1, TensorData::Bytes(slice(1)));
    b.set_data(2, TensorData::Reader(ReaderData(Box::new(OneByteReader(slice(2))))));
    let out = dir.join("out.gguf");
    let stats: BuildStats = b.write_to_path(&out).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
    assert_eq!(stats.file_size, bytes.len() as u64);
    assert_eq!(stats.header_len, gguf.data_offset());
    assert_eq!(stats.copy.data_bytes, infos[0].nbytes().unwrap());
    std::fs::remove_dir_all(dir).unwrap();
}

/// Yields one byte per read, then fails if asked to fail.
struct OneByteReader<'a>(&'a [u8]);

impl Read for OneByteReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

struct FailingReader(usize);

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0 == 0 {
            return Err(io::Error::other("the source disappeared"));
        }
        let n = self.0.min(buf.len());
        buf[..n].fill(1);
        self.0 -= n;
        Ok(n)
    }
}

#[test]
fn a_write_that_fails_midway_leaves_the_old_file_or_nothing() {
    let dir = temp_dir("fail");
    let bytes = sample();
    let gguf = sipllm_gguf::parse(&bytes).unwrap();
    let dest = dir.join("model.gguf");
    let build = |fail_after: usize| {
        let mut b = GgufFileBuilder::new(GgufWriter::from_gguf(&gguf));
        b.set_data(0, TensorData::Bytes(&[0; 64]));
        b.set_data(1, TensorData::Reader(ReaderData(Box::new(FailingReader(fail_after)))));
        b.set_data(2, TensorData::Bytes(&[0; 10]));
        b.write_to_path(&dest)
    };
    // No destination yet: it stays absent.
    let err = build(10).unwrap_err();
    assert_eq!(err.code(), "edit::write::io");
    assert!(!dest.exists());
    assert!(dir_entries(&dir).is_empty(), "{:?}", dir_entries(&dir));
    // An existing destination stays exactly the old file.
    std::fs::write(&dest, b"the old model").unwrap();
    build(10).unwrap_err();
    assert_eq!(std::fs::read(&dest).unwrap(), b"the old model");
    assert_eq!(dir_entries(&dir), ["model.gguf"]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn wrong_or_missing_data_is_refused_before_the_destination_changes() {
    let dir = temp_dir("refuse");
    let bytes = sample();
    let gguf = sipllm_gguf::parse(&bytes).unwrap();
    let dest = dir.join("model.gguf");
    let mut b = GgufFileBuilder::new(GgufWriter::from_gguf(&gguf));
    b.set_data(0, TensorData::Bytes(&[0; 63]));
    let err = b.write_to_path(&dest).unwrap_err();
    assert!(
        matches!(err.kind(), WriteErrorKind::DataLength { tensor, expected: 64, got: 63 } if tensor == "t0"),
        "{err}"
    );
    let mut b = GgufFileBuilder::new(GgufWriter::from_gguf(&gguf));
    b.set_data(0, TensorData::Bytes(&[0; 64]));
    let err = b.write_to_path(&dest).unwrap_err();
    assert!(
        matches!(err.kind(), WriteErrorKind::MissingData { tensor } if tensor == "t1"),
        "{err}"
    );
    assert_eq!(err.code(), "edit::write::missing_data");
    let mut b = GgufFileBuilder::new(GgufWriter::from_gguf(&gguf));
    b.set_data(0, TensorData::Bytes(&[0; 64]));
    b.set_data(1, TensorData::Reader(ReaderData(Box::new(&[0u8; 69][..]))));
    b.set_data(2, TensorData::Bytes(&[0; 10]));
    let err = b.write_to_path(&dest).unwrap_err();
    assert!(
        matches!(err.kind(), WriteErrorKind::DataLength { expected: 68, got: 69, .. }),
        "{err}"
    );
    assert!(!dest.exists());
    assert!(dir_entries(&dir).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}
