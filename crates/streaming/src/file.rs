//! The file backing: [`FileBacking`], a file read by position (`pread`, or the one memory
//! map of [`crate::map`]), with readahead hints. Behind the default `file` feature, so the
//! read side builds where there are no files to map (`wasm32-unknown-unknown`): there,
//! [`MemSource`](crate::MemSource) and any other [`ReadAt`] are the sources.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::backing::{Backend, ReadAt, clamp_range, read_exact_with};
use crate::error::{StreamError, StreamErrorKind};
use crate::map::FileMap;

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
    /// or device is [`StreamErrorKind::NotAFile`] (checked on the opened descriptor). It then takes
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
    /// file is [`StreamErrorKind::NotAFile`]. No lock is taken: the file's locks are the caller's
    /// (a duplicate descriptor shares them).
    pub fn from_file(
        file: File,
        path: impl Into<PathBuf>,
        backend: Backend,
    ) -> Result<FileBacking, StreamError> {
        let path = path.into();
        let open_err = |source| StreamError::at(path.clone(), StreamErrorKind::Open { source });
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
    /// [`StreamErrorKind::UnexpectedEof`] with the offset and the number of missing bytes.
    pub fn pread_exact(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.read_exact_at(offset, dst)
            .map_err(|e| StreamError::read(Some(&self.path), offset, dst.len() as u64, e))
    }

    /// Advises the kernel that `offset..offset + len` will be read soon:
    /// `posix_fadvise(POSIX_FADV_WILLNEED)` for pread, `madvise(MADV_WILLNEED)` for mmap. The
    /// range is clamped to the file; a no-op where the platform has no such call.
    pub fn prefetch(&self, offset: u64, len: u64) -> Result<(), StreamError> {
        ReadAt::prefetch(self, offset, len).map_err(|e| {
            StreamError::new(
                Some(self.path.clone()),
                StreamErrorKind::Io { offset, len, source: e },
            )
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

/// Elsewhere (`wasm32-unknown-unknown`, whose `std::fs` opens nothing) there is no positional
/// read: the backing exists but no file ever opens to read through it.
#[cfg(not(any(unix, windows)))]
fn pread(_file: &File, _buf: &mut [u8], _offset: u64) -> io::Result<usize> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
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
