//! Positional byte sources: the [`ReadAt`] trait, [`FileBacking`] (pread or mmap) and
//! [`MemSource`].
//!
//! Every read names its offset; there is no seek and no shared cursor, so one source serves
//! any number of threads at once (gimli-rs/object's `ReadRef` takes the same approach).

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::StreamError;
use crate::map::FileMap;

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

/// The input ended `missing` bytes short of a read of `len` bytes at `offset`.
///
/// Carried inside an [`io::Error`] of kind [`io::ErrorKind::UnexpectedEof`], so [`ReadAt`]
/// keeps the standard signature and the count survives to
/// [`StreamError::UnexpectedEof`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortRead {
    /// Absolute offset of the read.
    pub offset: u64,
    /// Bytes requested.
    pub len: u64,
    /// Bytes that could not be read.
    pub missing: u64,
}

impl ShortRead {
    /// Checks that `len` bytes at `offset` lie inside a source of `size` bytes: `Ok` when they
    /// do, else the `ShortRead` saying how many are missing (a [`ReadAt`] whose size is known
    /// up front refuses such a read before it asks for anything).
    pub fn check(offset: u64, len: u64, size: u64) -> Result<(), ShortRead> {
        match offset.checked_add(len) {
            Some(end) if end <= size => Ok(()),
            _ => {
                let missing = len.min(offset.saturating_add(len).saturating_sub(size));
                Err(ShortRead { offset, len, missing })
            }
        }
    }

    /// Wraps this in an [`io::Error`] of kind [`io::ErrorKind::UnexpectedEof`].
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::UnexpectedEof, self)
    }

    /// The `ShortRead` inside an I/O error made by [`into_io`](Self::into_io), if any.
    pub fn from_io(err: &io::Error) -> Option<ShortRead> {
        if err.kind() != io::ErrorKind::UnexpectedEof {
            return None;
        }
        err.get_ref().and_then(|e| e.downcast_ref::<ShortRead>()).copied()
    }
}

impl fmt::Display for ShortRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "end of input: {} of the {} bytes at offset {} are missing",
            self.missing, self.len, self.offset
        )
    }
}

impl std::error::Error for ShortRead {}

/// Fills `dst` from `offset` with repeated calls of `read_at(buf, offset) -> bytes read`,
/// retrying [`io::ErrorKind::Interrupted`] and short reads; a read of 0 bytes is the end of
/// the input and gives a [`ShortRead`].
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

/// How a [`FileBacking`] reads the file.
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
/// [`StreamError::UnexpectedEof`].
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

/// A file read by position only: thread-safe, no seek, no shared cursor.
///
/// The length is taken once, when the file is opened (for the mmap backend it is the length of
/// the map); every read is bounds-checked by its callers against it.
pub struct FileBacking {
    file: File,
    path: PathBuf,
    len: u64,
    map: Option<FileMap>,
}

impl fmt::Debug for FileBacking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileBacking")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("backend", &self.backend())
            .finish()
    }
}

impl FileBacking {
    /// Opens `path` read-only with the given backend. The open never blocks: a FIFO, socket
    /// or device is [`StreamError::NotAFile`] (checked on the opened descriptor). It then takes
    /// a shared advisory lock held while the backing is open ([`crate::lock`]): if an in-place
    /// header rewrite holds the file, this waits for it (at most
    /// [`READ_WAIT`](crate::lock::READ_WAIT)) before reading anything, so a reader never sees a
    /// half-rewritten header.
    pub fn open(path: impl AsRef<Path>, backend: Backend) -> Result<FileBacking, StreamError> {
        let path = path.as_ref();
        // Not `File::open`: that blocks forever on a FIFO without a writer.
        let file = crate::input::open_regular(path, false)?;
        crate::lock::lock_shared(&file, path, crate::lock::READ_WAIT)?;
        FileBacking::from_file(file, path, backend)
    }

    /// Uses an open file; `path` is only used in error messages. A file that is not a regular
    /// file is [`StreamError::NotAFile`]. No lock is taken: the file's locks are the caller's
    /// (a duplicate descriptor shares them).
    pub fn from_file(
        file: File,
        path: impl Into<PathBuf>,
        backend: Backend,
    ) -> Result<FileBacking, StreamError> {
        let path = path.into();
        let open_err = |source| StreamError::Open { path: path.clone(), source };
        let meta = file.metadata().map_err(open_err)?;
        crate::input::check_regular(&meta, &path)?;
        let (len, map) = match backend {
            Backend::Pread => (meta.len(), None),
            Backend::Mmap => {
                let map = FileMap::new(&file).map_err(open_err)?;
                (map.len(), Some(map))
            }
        };
        Ok(FileBacking { file, path, len, map })
    }

    /// The path given at open.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        if self.map.is_some() { Backend::Mmap } else { Backend::Pread }
    }

    /// The file's length when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The open file: writers copy tensor data from it in the kernel, so the bytes copied are
    /// those of the file whose header was parsed, whatever its path names now.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Fills `dst` with the bytes at `offset`: `pread(2)` retried on `EINTR` and short reads
    /// (or a copy out of the map). Reaching the end of the file is
    /// [`StreamError::UnexpectedEof`] with the offset and the number of missing bytes.
    pub fn pread_exact(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.read_exact_at(offset, dst)
            .map_err(|e| StreamError::read(Some(&self.path), offset, dst.len() as u64, e))
    }

    /// Advises the kernel that `offset..offset + len` will be read soon:
    /// `posix_fadvise(POSIX_FADV_WILLNEED)` for pread, `madvise(MADV_WILLNEED)` for mmap. The
    /// range is clamped to the file; a no-op where the platform has no such call.
    pub fn prefetch(&self, offset: u64, len: u64) -> Result<(), StreamError> {
        ReadAt::prefetch(self, offset, len).map_err(|e| StreamError::Io {
            path: Some(self.path.clone()),
            offset,
            len,
            source: e,
        })
    }
}

/// A [`FileBacking`] read with `pread` whatever its backend: headers are read this way, so the
/// mmap backend does not map (and count as resident) header pages it copies out once.
pub(crate) struct PreadView<'a>(&'a FileBacking);

impl FileBacking {
    pub(crate) fn pread_view(&self) -> PreadView<'_> {
        PreadView(self)
    }
}

impl ReadAt for PreadView<'_> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        read_exact_with(|buf, pos| pread(&self.0.file, buf, pos), offset, dst)
    }

    fn len(&self) -> u64 {
        self.0.len
    }
}

impl ReadAt for FileBacking {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        match &self.map {
            Some(map) => map.read_exact_at(offset, dst),
            None => self.pread_view().read_exact_at(offset, dst),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        let Some((offset, len)) = clamp_range(offset, len, self.len) else { return Ok(()) };
        match &self.map {
            Some(map) => map.advise_willneed(offset, len),
            None => fadvise_willneed(&self.file, offset, len),
        }
    }
    fn as_file(&self) -> Option<&File> {
        Some(&self.file)
    }
}

#[cfg(unix)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // `seek_read` moves the handle's cursor, but nothing here uses the cursor.
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn fadvise_willneed(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let len = std::num::NonZeroU64::new(len);
    rustix::fs::fadvise(file, offset, len, rustix::fs::Advice::WillNeed).map_err(io::Error::from)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn fadvise_willneed(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
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

/// Copies `src[offset..offset + dst.len()]` into `dst`, or reports how much is missing.
pub(crate) fn copy_at(src: &[u8], offset: u64, dst: &mut [u8]) -> io::Result<()> {
    let len = dst.len() as u64;
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(src.len());
    let avail = src.get(start..).unwrap_or_default();
    match avail.get(..dst.len()) {
        Some(bytes) => {
            dst.copy_from_slice(bytes);
            Ok(())
        }
        None => {
            let have = if offset > src.len() as u64 { 0 } else { avail.len() as u64 };
            Err(ShortRead { offset, len, missing: len - have }.into_io())
        }
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
}
