//! Helpers shared by the integration tests: the shared corpus, temporary files, the
//! Llama-3-shaped sparse file, and an instrumented source.

#![allow(dead_code, unreachable_pub)]

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use sipllm_gguf::{ggml::align_up, ggml::tensor_nbytes};
use sipllm_streaming::ReadAt;
use sipllm_testkit::{GgufBuilder, llama3};

/// `../shared` beside the checkout, or `None` after saying loudly that it is absent.
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    sipllm_testkit::corpus::shared_dir(test)
}

pub use sipllm_testkit::temp::unique_temp_path;
// Only the `it` binary makes directories; `open_memory` includes this file too.
#[allow(unused_imports)]
pub use sipllm_testkit::temp::TempDir;

/// A file in the temporary directory, deleted on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// A new unique path (the file is not created).
    pub fn new(tag: &str) -> TempFile {
        TempFile(unique_temp_path(tag))
    }

    /// A new file holding `bytes`.
    pub fn with_bytes(tag: &str, bytes: &[u8]) -> TempFile {
        let t = TempFile::new(tag);
        fs::write(&t.0, bytes).unwrap();
        t
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// The Llama-3-shaped file's facts, as `shared/bench/make_llama3_like.py` writes it.
pub const LLAMA3_DATA_OFFSET: u64 = 7_715_040;
pub const LLAMA3_FILE_SIZE: u64 = 4_920_613_088;

/// The apparent size of a file built by `b`: data offset plus every tensor's padded size.
pub fn full_size(b: &GgufBuilder, header_len: u64) -> u64 {
    let align = u64::from(b.alignment());
    let data_offset = align_up(header_len, align).unwrap();
    let data: u64 = b
        .tensors()
        .iter()
        .map(|t| {
            let ty = sipllm_gguf::GgmlType::from_code(t.type_code);
            align_up(tensor_nbytes(ty, &t.dims).unwrap(), align).unwrap()
        })
        .sum();
    data_offset + data
}

/// The Llama-3-shaped GGUF (full vocabulary): header and padding written, tensor data a
/// sparse hole (4.9 GB apparent, ~8 MB on disk). Built once per test binary and kept under
/// the target directory (`CARGO_TARGET_TMPDIR`), written to a unique name and renamed into
/// place so concurrent test binaries never see a partial file; rebuilt when its header
/// differs from the builder's.
pub fn llama3_file() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("llama3-like.gguf");
        let b = llama3::builder(1);
        let mut header = b.build_header();
        let total = full_size(&b, header.len() as u64);
        let padded = align_up(header.len() as u64, 32).unwrap();
        header.resize(padded as usize, 0);
        let fresh = fs::metadata(&path).is_ok_and(|m| m.len() == total)
            && read_prefix(&path, header.len()).is_some_and(|p| p == header);
        if !fresh {
            let tmp = dir.join(format!("llama3-like.{}.tmp", std::process::id()));
            let mut f = File::create(&tmp).unwrap();
            f.write_all(&header).unwrap();
            f.set_len(total).unwrap();
            drop(f);
            fs::rename(&tmp, &path).unwrap();
        }
        path
    })
}

fn read_prefix(path: &Path, n: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut f = File::open(path).ok()?;
    let mut buf = vec![0u8; n];
    f.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// What an [`Instrumented`] source saw.
#[derive(Debug, Default)]
pub struct Log {
    pub reads: Mutex<Vec<(u64, u64)>>,
    pub prefetches: Mutex<Vec<(u64, u64)>>,
}

impl Log {
    pub fn reads(&self) -> Vec<(u64, u64)> {
        self.reads.lock().unwrap().clone()
    }
    pub fn prefetches(&self) -> Vec<(u64, u64)> {
        self.prefetches.lock().unwrap().clone()
    }
    pub fn bytes_read(&self) -> u64 {
        self.reads().iter().map(|r| r.1).sum()
    }
    pub fn clear(&self) {
        self.reads.lock().unwrap().clear();
        self.prefetches.lock().unwrap().clear();
    }
}

/// A source that records every read and prefetch (offset, length) before passing it on.
pub struct Instrumented<S> {
    pub inner: S,
    pub log: Arc<Log>,
}

impl<S: ReadAt> Instrumented<S> {
    pub fn new(inner: S) -> (Instrumented<S>, Arc<Log>) {
        let log = Arc::new(Log::default());
        (Instrumented { inner, log: log.clone() }, log)
    }
}

impl<S: ReadAt> ReadAt for Instrumented<S> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        self.log.reads.lock().unwrap().push((offset, dst.len() as u64));
        self.inner.read_exact_at(offset, dst)
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        self.log.prefetches.lock().unwrap().push((offset, len));
        self.inner.prefetch(offset, len)
    }
}

/// Hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
