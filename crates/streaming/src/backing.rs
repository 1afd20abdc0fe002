//! Positional byte sources: the [`ReadAt`] trait, the [`Backend`] a file backing reads with,
//! and [`MemSource`]. (The file backing itself is `crate::file`, behind the `file` feature.)
//!
//! Every read names its offset; there is no seek and no shared cursor, so one source serves
//! any number of threads at once (gimli-rs/object's `ReadRef` takes the same approach).

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::Arc;

use crate::bounds::{ShortRead, copy_at};

/// A positional byte source: a length and reads at explicit offsets.
///
/// Implementations must be usable from many threads at once (`&self` reads, `Send + Sync`).
/// [`GgufFile::from_source`](crate::GgufFile::from_source) and
/// [`TensorStore`](crate::TensorStore) work over any implementation, so tests, fuzz targets
/// and other storage use the same code as files.
pub trait ReadAt: Send + Sync {
    /// Fills `dst` with the bytes at `offset..offset + dst.len()`.
    ///
    /// Reaching the end of the input is an error of kind
    /// [`io::ErrorKind::UnexpectedEof`]; implementations should wrap a [`ShortRead`] (see
    /// [`ShortRead::into_io`]) so callers learn how many bytes were missing.
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()>;

    /// The number of bytes in the source.
    fn len(&self) -> u64;

    /// True for an empty source.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A hint that `offset..offset + len` will be read soon. The default does nothing.
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }

    /// The open file behind the source, when it is one: a writer copies tensor data from it in
    /// the kernel, and checks its identity against its output. The default has none.
    fn as_file(&self) -> Option<&File> {
        None
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, dst)
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        (**self).prefetch(offset, len)
    }
    fn as_file(&self) -> Option<&File> {
        (**self).as_file()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, dst)
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        (**self).prefetch(offset, len)
    }
    fn as_file(&self) -> Option<&File> {
        (**self).as_file()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Arc<T> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, dst)
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        (**self).prefetch(offset, len)
    }
    fn as_file(&self) -> Option<&File> {
        (**self).as_file()
    }
}

/// Fills `dst` from `offset` with repeated calls of `read_at(buf, offset) -> bytes read`,
/// retrying [`io::ErrorKind::Interrupted`] and short reads; a read of 0 bytes is the end of
/// the input and gives a [`ShortRead`].
#[cfg_attr(not(feature = "file"), allow(dead_code))] // the file backing's pread loop
pub(crate) fn read_exact_with(
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
    offset: u64,
    dst: &mut [u8],
) -> io::Result<()> {
    let len = dst.len() as u64;
    let mut done = 0usize;
    while let Some(rest) = dst.get_mut(done..).filter(|r| !r.is_empty()) {
        let pos = offset.checked_add(done as u64).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "read offset overflows 64 bits")
        })?;
        let want = rest.len();
        match read_at(rest, pos) {
            Ok(0) => {
                let missing = len - done as u64;
                return Err(ShortRead { offset, len, missing }.into_io());
            }
            // A reader claiming more than it was given is clamped rather than trusted.
            Ok(n) => done += n.min(want),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Clamps `offset..offset + len` to a source of `size` bytes; `None` when nothing is left.
pub(crate) fn clamp_range(offset: u64, len: u64, size: u64) -> Option<(u64, u64)> {
    let len = len.min(size.checked_sub(offset)?);
    (len > 0).then_some((offset, len))
}

/// How a file backing (`FileBacking`, with the `file` feature) reads the file.
///
/// # Memory maps and other processes
///
/// [`Backend::Mmap`] maps the file read-only and copies out of the map. If another process
/// truncates the file while it is mapped, touching the lost pages raises `SIGBUS` and kills
/// this process; if it modifies the file, reads may see a mix of old and new bytes. Choosing
/// the mmap backend is the caller's statement that the file is not changed while it is open
/// (the same contract ripgrep's `--mmap` and every mmap-based model loader rely on). Write
/// model files to a temporary name and rename them into place, and this never happens. The
/// pread backend has no such risk: a truncated file gives
/// [`StreamErrorKind::UnexpectedEof`](crate::StreamErrorKind::UnexpectedEof).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// `pread(2)` into the caller's buffer (the default). Readahead: `posix_fadvise`.
    #[default]
    Pread,
    /// A read-only memory map; reads `memcpy` out of it into the caller's buffer, so the map
    /// is never handed out. Readahead: `madvise(MADV_WILLNEED)`. See the type docs for the
    /// risk.
    Mmap,
}

impl Backend {
    /// The name as the CLI spells it (`pread`, `mmap`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Pread => "pread",
            Backend::Mmap => "mmap",
        }
    }
}

/// An in-memory [`ReadAt`]: a `Vec<u8>`, `Arc<[u8]>`, `&'static [u8]` or anything else that
/// is bytes.
#[derive(Clone)]
pub struct MemSource<B = Arc<[u8]>> {
    bytes: B,
}

impl<B: AsRef<[u8]>> MemSource<B> {
    /// Serves `bytes`.
    pub fn new(bytes: B) -> MemSource<B> {
        MemSource { bytes }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }
}

impl<B: AsRef<[u8]>> fmt::Debug for MemSource<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemSource").field("len", &self.bytes.as_ref().len()).finish()
    }
}

impl<B: AsRef<[u8]> + Send + Sync> ReadAt for MemSource<B> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        copy_at(self.bytes.as_ref(), offset, dst)
    }

    fn len(&self) -> u64 {
        self.bytes.as_ref().len() as u64
    }
}

/// Bytes followed by zeros up to a length: a header dump standing in for its whole file.
///
/// llama.cpp's load verdicts and memory breakdowns are kept as the first bytes of each model
/// (the header, the tensor directory, the padding), not its gigabytes of data; whatever reads
/// only the header (the load check, the fit, a conversion's plan) opens one as the file of
/// `len` bytes it was cut from, so the directory's offsets check against the real size. Reads
/// past the bytes given are zeros; past `len`, an `UnexpectedEof` as from a short file.
#[derive(Clone)]
pub struct ZeroPadded<B = Vec<u8>> {
    bytes: B,
    len: u64,
}

impl<B: AsRef<[u8]>> ZeroPadded<B> {
    /// Serves `bytes`, then zeros, as a source of `len` bytes (`len` below the bytes' length
    /// cuts them).
    pub fn new(bytes: B, len: u64) -> ZeroPadded<B> {
        ZeroPadded { bytes, len }
    }
}

impl<B: AsRef<[u8]>> fmt::Debug for ZeroPadded<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZeroPadded")
            .field("bytes", &self.bytes.as_ref().len())
            .field("len", &self.len)
            .finish()
    }
}

impl<B: AsRef<[u8]> + Send + Sync> ReadAt for ZeroPadded<B> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        if offset.checked_add(dst.len() as u64).is_none_or(|end| end > self.len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the zero-padded source",
            ));
        }
        // The part of the read the bytes cover, then zeros.
        let bytes = self.bytes.as_ref();
        let given = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)).unwrap_or(&[]);
        let n = given.len().min(dst.len());
        let (head, tail) = dst.split_at_mut(n);
        head.copy_from_slice(&given[..n]);
        tail.fill(0);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_exact_with_retries_interrupts_and_short_reads() {
        let data: Vec<u8> = (0..100u8).collect();
        let mut calls = Vec::new();
        let mut dst = [0u8; 40];
        read_exact_with(
            |buf, pos| {
                calls.push((pos, buf.len()));
                match calls.len() {
                    1 => Err(io::Error::from(io::ErrorKind::Interrupted)),
                    // Short reads of at most 7 bytes.
                    _ => {
                        let n = buf.len().min(7);
                        buf[..n].copy_from_slice(&data[pos as usize..pos as usize + n]);
                        Ok(n)
                    }
                }
            },
            10,
            &mut dst,
        )
        .unwrap();
        assert_eq!(&dst[..], &data[10..50]);
        // One interrupted call, then ceil(40 / 7) = 6 reads at advancing offsets.
        assert_eq!(calls, [(10, 40), (10, 40), (17, 33), (24, 26), (31, 19), (38, 12), (45, 5)]);
    }

    #[test]
    fn read_exact_with_reports_the_missing_bytes_at_eof() {
        let mut dst = [0u8; 16];
        // A 20-byte source read at 12: 8 bytes exist, 8 are missing.
        let err = read_exact_with(
            |buf, pos| {
                let n = buf.len().min(20usize.saturating_sub(pos as usize));
                Ok(n)
            },
            12,
            &mut dst,
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(ShortRead::from_io(&err), Some(ShortRead { offset: 12, len: 16, missing: 8 }));
    }

    #[test]
    fn read_exact_with_passes_other_errors_through() {
        let mut dst = [0u8; 4];
        let err = read_exact_with(
            |_, _| Err(io::Error::from(io::ErrorKind::PermissionDenied)),
            0,
            &mut dst,
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(ShortRead::from_io(&err), None);
    }

    #[test]
    fn copy_at_bounds() {
        let src = [1u8, 2, 3, 4, 5];
        let mut dst = [0u8; 3];
        copy_at(&src, 2, &mut dst).unwrap();
        assert_eq!(dst, [3, 4, 5]);
        let e = copy_at(&src, 3, &mut dst).unwrap_err();
        assert_eq!(ShortRead::from_io(&e), Some(ShortRead { offset: 3, len: 3, missing: 1 }));
        let e = copy_at(&src, u64::MAX, &mut dst).unwrap_err();
        assert_eq!(ShortRead::from_io(&e).map(|s| s.missing), Some(3));
        copy_at(&src, 5, &mut []).unwrap();
    }

    #[test]
    fn clamp_range_to_the_source() {
        assert_eq!(clamp_range(10, 5, 100), Some((10, 5)));
        assert_eq!(clamp_range(98, 5, 100), Some((98, 2)));
        assert_eq!(clamp_range(100, 5, 100), None);
        assert_eq!(clamp_range(200, 5, 100), None);
        assert_eq!(clamp_range(10, 0, 100), None);
    }

    #[test]
    fn zero_padded_serves_the_bytes_then_zeros_up_to_its_length() {
        let src = ZeroPadded::new(vec![1u8, 2, 3], 6);
        assert_eq!(src.len(), 6);
        let mut dst = [9u8; 4];
        src.read_exact_at(1, &mut dst).unwrap();
        assert_eq!(dst, [2, 3, 0, 0]);
        let mut dst = [9u8; 2];
        src.read_exact_at(4, &mut dst).unwrap();
        assert_eq!(dst, [0, 0]);
        let err = src.read_exact_at(5, &mut [0u8; 2]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(src.read_exact_at(u64::MAX, &mut [0u8; 1]).is_err());
        // A length below the bytes' cuts them.
        let cut = ZeroPadded::new(vec![1u8, 2, 3], 2);
        assert!(cut.read_exact_at(1, &mut [0u8; 2]).is_err());
    }
}
