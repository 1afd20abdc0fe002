//! Writing model files: atomic replacement, sparse-aware range copies, and the GGUF file
//! builder.
//!
//! * [`AtomicFile`]: a temporary file in the destination's directory that becomes the
//!   destination only on [`AtomicFile::commit`] (written, `fsync`ed, given the replaced
//!   file's mode and owner, renamed, directory synced). A destination that is a symlink is
//!   followed: the file it points at is replaced and the link kept. Dropped uncommitted — an
//!   error, a panic — it is removed; a kill leaves at most a stray temporary, never a
//!   half-written file at the destination, and [`remove_stale_temps`] removes such strays
//!   (each temporary is locked by its writer while it lives, so only a dead writer's are
//!   taken).
//! * [`copy_range`]: copies a byte range between files in the kernel (`copy_file_range`),
//!   skipping holes (`SEEK_DATA`/`SEEK_HOLE`) so a sparse source stays sparse, and falling back
//!   to a 1 MiB buffer where the kernel cannot. Memory stays bounded whatever the size.
//! * [`GgufFileBuilder`]: a [`GgufWriter`]'s header, then every tensor's data — from a slice,
//!   a reader, or a range of another file — at the offsets the writer's layout gives, into an
//!   [`AtomicFile`].
//! * [`write_llmw_into`]: a `.llmw` [`LlmwWriter`]'s file into an [`AtomicFile`], through a
//!   1 MiB buffer of positional writes, for a caller that checks the temporary before it
//!   commits it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sipllm_gguf::writer::GgufWriter;
use sipllm_llmw::LlmwWriter;

use crate::error::{WriteError, WriteErrorKind};
use crate::identity;

/// Bytes moved per step when the kernel cannot copy for us.
const COPY_BUF: usize = 1 << 20;

/// A file that replaces its destination atomically. See the [module docs](self).
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates a fresh temporary file (`.NAME.PID-N.tmp`) next to `dest` — next to the file
    /// it points at, when `dest` is a symlink ([`identity::resolve`]) — and locks it
    /// (exclusively, for as long as it lives: see [`remove_stale_temps`]). A `dest` that
    /// exists and is not a regular file (a device, a FIFO, a directory) is refused
    /// ([`io::ErrorKind::InvalidInput`]): it is never replaced.
    ///
    /// Temporaries of the same destination that killed writers left (their process gone, no
    /// lock held) are removed first ([`remove_stale_temps`]), so a killed `edit -o` does not
    /// leave a full-size hidden file behind for good: the next write of that output takes it.
    pub fn create(dest: impl AsRef<Path>) -> io::Result<AtomicFile> {
        AtomicFile::create_with(dest.as_ref(), true)
    }

    /// [`create`](Self::create) without the sweep: for a writer that swept every one of its
    /// destinations once already (a split set's shards).
    pub(crate) fn create_unswept(dest: &Path) -> io::Result<AtomicFile> {
        AtomicFile::create_with(dest, false)
    }

    fn create_with(dest: &Path, sweep: bool) -> io::Result<AtomicFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dest = identity::resolve(dest);
        refuse_special(&dest)?;
        let name = dest
            .file_name()
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name")
            })?
            .to_owned();
        let dir = dir_of(&dest);
        if sweep {
            remove_stale_temps(dir, &[name.as_os_str()]);
        }
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mut tmp_name = std::ffi::OsString::from(".");
            tmp_name.push(&name);
            tmp_name.push(format!(".{}-{n}.tmp", std::process::id()));
            let tmp = dir.join(tmp_name);
            match File::options().read(true).write(true).create_new(true).open(&tmp) {
                Ok(file) => {
                    // Best effort: without flock, stale temporaries are just never removed.
                    let _ = sipllm_streaming::lock::try_lock_exclusive(&file, &tmp);
                    return Ok(AtomicFile { dest, tmp, file: Some(file) });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The temporary file, for writing.
    pub fn file(&self) -> &File {
        // `file` is only taken by `commit`, which consumes `self`.
        self.file.as_ref().expect("an AtomicFile holds its file until commit")
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// The destination (a symlink given to [`create`](Self::create) followed).
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the data, gives the temporary the mode and owner of the file it replaces (when
    /// there is one; the owner only where the process may set it), renames it over the
    /// destination, and syncs the directory so the rename itself survives a crash.
    pub fn commit(mut self) -> io::Result<()> {
        refuse_special(&self.dest)?;
        let file = self.file.take().expect("an AtomicFile holds its file until commit");
        if let Ok(old) = std::fs::metadata(&self.dest)
            && old.is_file()
        {
            keep_mode_and_owner(&file, &old)?;
        }
        file.sync_all()?;
        // Renamed while still open (and locked), so no stale-temporary sweep can take it.
        std::fs::rename(&self.tmp, &self.dest)?;
        drop(file);
        // The temporary is the destination now: nothing left to clean up.
        self.tmp = PathBuf::new();
        sync_dir(&self.dest);
        Ok(())
    }

    /// Like [`commit`](Self::commit), but only if the destination does not exist: the
    /// temporary is linked to it (which fails with [`io::ErrorKind::AlreadyExists`] if
    /// something is there, leaving it alone) and then unlinked. Where the file system has no
    /// hard links, it is renamed after checking that the destination is absent (atomic only
    /// against writers that also use this).
    pub fn commit_new(mut self) -> io::Result<()> {
        let file = self.file.take().expect("an AtomicFile holds its file until commit");
        file.sync_all()?;
        match std::fs::hard_link(&self.tmp, &self.dest) {
            Ok(()) => {
                let _ = std::fs::remove_file(&self.tmp);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                self.file = Some(file);
                return Err(e);
            }
            Err(_) => {
                if std::fs::symlink_metadata(&self.dest).is_ok() {
                    self.file = Some(file);
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "the destination exists",
                    ));
                }
                std::fs::rename(&self.tmp, &self.dest)?;
            }
        }
        drop(file);
        self.tmp = PathBuf::new();
        sync_dir(&self.dest);
        Ok(())
    }
}

impl AtomicFile {
    /// Syncs the temporary, gives it the replaced file's mode and owner (as
    /// [`commit`](Self::commit)) and closes it, without renaming: for a writer that must have
    /// several files complete before any is renamed into place (a split set), without holding
    /// a descriptor for each.
    pub(crate) fn close(mut self) -> io::Result<ClosedTemp> {
        let file = self.file.take().expect("an AtomicFile holds its file until commit");
        if let Ok(old) = std::fs::metadata(&self.dest)
            && old.is_file()
        {
            keep_mode_and_owner(&file, &old)?;
        }
        file.sync_all()?;
        drop(file);
        let tmp = std::mem::take(&mut self.tmp);
        Ok(ClosedTemp { tmp, dest: self.dest.clone() })
    }
}

/// A complete, synced, closed temporary ([`AtomicFile::close`]) waiting to be renamed over
/// its destination; dropped before that, it is removed.
#[derive(Debug)]
pub(crate) struct ClosedTemp {
    tmp: PathBuf,
    dest: PathBuf,
}

impl ClosedTemp {
    /// The destination.
    pub(crate) fn dest(&self) -> &Path {
        &self.dest
    }

    /// Renames the temporary over the destination (the caller syncs the directory).
    pub(crate) fn rename(mut self) -> io::Result<()> {
        std::fs::rename(&self.tmp, &self.dest)?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for ClosedTemp {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses a destination that exists and is not a regular file (a device such as `/dev/null`,
/// a FIFO, a directory, a socket): renaming over it would replace it with a regular file.
fn refuse_special(dest: &Path) -> io::Result<()> {
    match std::fs::metadata(dest) {
        Ok(m) if !m.is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the destination exists and is not a regular file; it is not replaced",
        )),
        _ => Ok(()),
    }
}

/// Gives `file` the permissions of `old` and, where allowed, its owner and group (a user may
/// not give a file away; then it keeps the writer's, as a fresh file would).
fn keep_mode_and_owner(file: &File, old: &std::fs::Metadata) -> io::Result<()> {
    file.set_permissions(old.permissions())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mine = file.metadata()?;
        if (mine.uid(), mine.gid()) != (old.uid(), old.gid())
            && std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).is_err()
        {
            // Not allowed to give it away: keep at least the group, if ours to give.
            let _ = std::os::unix::fs::fchown(file, None, Some(old.gid()));
        }
        // chown clears set-user-ID and set-group-ID bits: put the mode back after it.
        file.set_permissions(old.permissions())?;
    }
    Ok(())
}

/// Syncs the directory holding `path` (best effort: some file systems cannot open or sync a
/// directory), so a rename, link or removal there survives a crash. A bare name
/// (`-o out.gguf`) is in the current directory, which is synced too.
pub(crate) fn sync_dir(path: &Path) {
    let _ = File::open(dir_of(path)).and_then(|d| d.sync_all());
}

/// The directory holding `path`: its parent, or `.` for a bare name (whose parent is empty)
/// and for a root.
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            // Best effort: the error that dropped us is the one worth reporting. Removed
            // before it is closed, so no sweep sees it unlocked.
            let _ = std::fs::remove_file(&self.tmp);
            self.file.take();
        }
    }
}

/// Checks that the file system holding `dir` has room for `bytes` more (the blocks an
/// unprivileged writer may still use: `statvfs`'s `f_bavail`), before a write whose size
/// someone else claims — a remote server's object size, fetched into a temporary — fills the
/// disk for every other program too. Where the file system cannot say (no `statvfs`), the
/// write goes on and a full disk is its own error.
///
/// # Errors
///
/// [`io::ErrorKind::StorageFull`], saying both sizes, when the room is short.
pub fn check_room(dir: &Path, bytes: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        let Ok(stat) = rustix::fs::statvfs(dir) else { return Ok(()) };
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        if free < bytes {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "{} bytes are needed, but {} has {} bytes free; nothing was written",
                    sipllm_format::group(bytes),
                    dir.display(),
                    sipllm_format::group(free)
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = (dir, bytes);
    Ok(())
}

/// Removes the temporaries a killed writer left for the destinations `names` in `dir`
/// (`.NAME.PID-N.tmp`, as [`AtomicFile::create`] names them): those whose process (`PID`)
/// no longer exists and that nobody holds locked. Returns how many were removed. Errors (an
/// unreadable directory) remove nothing.
pub fn remove_stale_temps(dir: &Path, names: &[&std::ffi::OsStr]) -> usize {
    // `dir` as a path's parent: empty for a bare name.
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let wanted: std::collections::HashSet<&[u8]> =
        names.iter().map(|n| n.as_encoded_bytes()).collect();
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(dest) = temp_dest(file_name.as_encoded_bytes()) else { continue };
        if !wanted.contains(dest) {
            continue;
        }
        let path = entry.path();
        // A living writer's temporary is never taken, locked or not: it may be between its
        // creation and its lock, or complete, closed and waiting for its rename (a split
        // set's shards).
        if temp_pid(file_name.as_encoded_bytes()).is_none_or(process_lives) {
            continue;
        }
        let Ok(file) = File::open(&path) else { continue };
        if matches!(entry.file_type(), Ok(t) if t.is_file())
            && lockable(&file)
            && std::fs::remove_file(&path).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// True when an exclusive lock on `file` is granted: no living writer holds it (and locks
/// work on its file system: where they do not, a lock proves nothing and nothing is taken).
fn lockable(file: &File) -> bool {
    #[cfg(unix)]
    {
        use rustix::fs::{FlockOperation, flock};
        flock(file, FlockOperation::NonBlockingLockExclusive).is_ok()
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        false
    }
}

/// The destination name a temporary's name `.NAME.PID-N.tmp` stands for.
fn temp_dest(name: &[u8]) -> Option<&[u8]> {
    temp_parts(name).map(|(dest, _)| dest)
}

/// The process id in a temporary's name `.NAME.PID-N.tmp`.
fn temp_pid(name: &[u8]) -> Option<u32> {
    let (_, pid) = temp_parts(name)?;
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// `(NAME, PID)` of a temporary's name `.NAME.PID-N.tmp`.
fn temp_parts(name: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = name.strip_prefix(b".")?.strip_suffix(b".tmp")?;
    let dot = rest.iter().rposition(|&b| b == b'.')?;
    let (dest, tag) = (rest.get(..dot)?, rest.get(dot + 1..)?);
    let (pid, n) = tag.split_at(tag.iter().position(|&b| b == b'-')?);
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    (digits(pid) && digits(n.get(1..)?) && !dest.is_empty()).then_some((dest, pid))
}

/// True unless no process with this id exists (this process counts as living). A process
/// that exists but is another user's (`EPERM`) lives; a reused id of a dead writer only
/// keeps its temporary until that process ends too. Off Unix, every process lives (nothing
/// is taken).
fn process_lives(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
            // Not a valid id (0, or too large): no process has it.
            return false;
        };
        !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// What a [`copy_range`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyStats {
    /// Bytes of data copied.
    pub data_bytes: u64,
    /// Bytes skipped because the source has a hole there (left as a hole, reading as zeros).
    pub hole_bytes: u64,
    /// Bytes copied through the buffer because the kernel could not copy them.
    pub buffered_bytes: u64,
}

impl CopyStats {
    fn add(&mut self, other: CopyStats) {
        self.data_bytes += other.data_bytes;
        self.hole_bytes += other.hole_bytes;
        self.buffered_bytes += other.buffered_bytes;
    }
}

/// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`.
///
/// Holes in the source are skipped, not written: **the destination range must read as zeros
/// beforehand** (a fresh file extended with `set_len`, as [`GgufFileBuilder`] does). A source
/// shorter than `src_off + len` is an `UnexpectedEof` error.
pub fn copy_range(
    src: &File,
    src_off: u64,
    dst: &File,
    dst_off: u64,
    len: u64,
) -> io::Result<CopyStats> {
    let end = src_off
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "source range overflows"))?;
    dst_off.checked_add(len).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "destination range overflows")
    })?;
    if src.metadata()?.len() < end {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the source ends before byte {end} of the range to copy"),
        ));
    }
    let mut stats = CopyStats::default();
    let mut pos = src_off;
    while pos < end {
        let (data_start, data_end) = match data_extent(src, pos, end) {
            Some(extent) => extent,
            None => {
                // No data left: the rest of the range is a hole.
                stats.hole_bytes += end - pos;
                break;
            }
        };
        stats.hole_bytes += data_start - pos;
        let out = dst_off + (data_start - src_off);
        stats.add(copy_data(src, data_start, dst, out, data_end - data_start)?);
        pos = data_end;
    }
    Ok(stats)
}

/// The next data extent in `[pos, end)`: `SEEK_DATA` then `SEEK_HOLE`. Without hole support
/// (or on any error) the whole rest is data.
fn data_extent(src: &File, pos: u64, end: u64) -> Option<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{SeekFrom, seek};
        match seek(src, SeekFrom::Data(pos)) {
            Ok(start) if start >= end => None,
            Ok(start) => {
                let stop = seek(src, SeekFrom::Hole(start)).map_or(end, |h| h.min(end));
                Some((start, stop.max(start + 1).min(end)))
            }
            // ENXIO: only a hole after `pos`.
            Err(rustix::io::Errno::NXIO) => None,
            Err(_) => Some((pos, end)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Some((pos, end))
    }
}

/// Copies a data range: `copy_file_range` in a loop, the buffer for whatever it leaves.
fn copy_data(
    src: &File,
    mut from: u64,
    dst: &File,
    mut to: u64,
    len: u64,
) -> io::Result<CopyStats> {
    let mut left = len;
    #[cfg(target_os = "linux")]
    while left > 0 {
        let chunk = usize::try_from(left.min(1 << 30)).unwrap_or(1 << 30);
        match rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), chunk) {
            // The source ended early (it shrank): let the buffered path report it.
            Ok(0) => break,
            Ok(n) => left -= n as u64,
            Err(rustix::io::Errno::INTR) => continue,
            // Not supported between these files (EXDEV on old kernels, EINVAL, ENOSYS, …):
            // fall back to the buffer for the rest.
            Err(_) => break,
        }
    }
    let buffered = left;
    let mut buf = vec![0u8; COPY_BUF.min(usize::try_from(left).unwrap_or(COPY_BUF))];
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let chunk = buf.get_mut(..n).unwrap_or_default();
        src.read_exact_at(chunk, from)?;
        dst.write_all_at(chunk, to)?;
        from += n as u64;
        to += n as u64;
        left -= n as u64;
    }
    Ok(CopyStats { data_bytes: len, hole_bytes: 0, buffered_bytes: buffered })
}

/// How often, in bytes, a long copy reports progress (`write_into_with`) within a tensor.
pub const PROGRESS_STEP: u64 = 64 << 20;

/// Where a tensor's data comes from.
#[derive(Debug)]
pub enum TensorData<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// A reader that yields exactly the tensor's bytes.
    Reader(ReaderData<'a>),
    /// A range of another file, starting at `offset` (copied in the kernel, holes kept).
    File {
        /// The source file.
        file: &'a File,
        /// Absolute offset of the tensor's data in it.
        offset: u64,
    },
}

/// A boxed reader (wrapped so [`TensorData`] can implement `Debug`).
pub struct ReaderData<'a>(pub Box<dyn Read + 'a>);

impl std::fmt::Debug for ReaderData<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReaderData(..)")
    }
}

/// What [`GgufFileBuilder::write_to_path`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildStats {
    /// Final file size.
    pub file_size: u64,
    /// Header bytes (up to the data section).
    pub header_len: u64,
    /// How the tensor data was copied (file-to-file copies).
    pub copy: CopyStats,
}

/// Writes a GGUF file: header, then tensor data, in bounded memory. See the
/// [module docs](self).
#[derive(Debug)]
pub struct GgufFileBuilder<'a> {
    writer: GgufWriter<'a>,
    data: Vec<Option<TensorData<'a>>>,
}

impl<'a> GgufFileBuilder<'a> {
    /// A builder for the header `writer` describes; every tensor's data must then be given.
    pub fn new(writer: GgufWriter<'a>) -> GgufFileBuilder<'a> {
        let n = writer.tensors().len();
        GgufFileBuilder { writer, data: (0..n).map(|_| None).collect() }
    }

    /// The header being written.
    pub fn writer(&self) -> &GgufWriter<'a> {
        &self.writer
    }

    /// Sets tensor `index`'s data (in the writer's directory order).
    pub fn set_data(&mut self, index: usize, data: TensorData<'a>) -> &mut Self {
        if let Some(slot) = self.data.get_mut(index) {
            *slot = Some(data);
        }
        self
    }

    /// Writes the file to `dest` atomically: `dest` is the old file (or absent) until the new
    /// one is complete and synced.
    pub fn write_to_path(self, dest: impl AsRef<Path>) -> Result<BuildStats, WriteError> {
        let dest = dest.as_ref();
        let out = AtomicFile::create(dest).map_err(|source| {
            WriteError::at(dest.to_path_buf(), WriteErrorKind::Create { source })
        })?;
        let stats = self.write_into(&out)?;
        out.commit()
            .map_err(|source| WriteError::write(dest.to_path_buf(), stats.file_size, source))?;
        Ok(stats)
    }

    /// Writes the file into `out` (positional writes; `out` should be empty).
    pub fn write_into(self, out: &AtomicFile) -> Result<BuildStats, WriteError> {
        self.write_into_with(out, &mut |_, _| {})
    }

    /// [`GgufFileBuilder::write_into`], calling `progress(done, total)` with the bytes of
    /// tensor data written so far and their total, after each tensor and every
    /// [`PROGRESS_STEP`] bytes within a large one (a copied hole counts as written).
    pub fn write_into_with(
        self,
        out: &AtomicFile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<BuildStats, WriteError> {
        let path = out.dest().to_path_buf();
        let werr = |offset: u64, source: io::Error| WriteError::write(path.clone(), offset, source);
        let layout = self
            .writer
            .layout()
            .map_err(|source| WriteError::from(WriteErrorKind::Header { source }))?;
        let file = out.file();
        // Extending first makes every unwritten byte (padding, skipped holes) a zero hole.
        file.set_len(layout.file_size).map_err(|e| werr(0, e))?;
        // The header is streamed through one bounded buffer, never held whole: a 7.7 MB
        // Llama-3 header costs 1 MiB here, not a second copy beside the source's. Its zero
        // padding is not written: after `set_len` it is a hole (a 2^27 alignment costs no
        // 128 MiB of zeros on disk).
        let mut header = io::BufWriter::with_capacity(COPY_BUF, PosWriter { file, pos: 0 });
        self.writer.write_directory(&mut header).map_err(|e| werr(0, e))?;
        header.flush().map_err(|e| werr(0, e))?;
        drop(header);
        let mut stats = BuildStats {
            file_size: layout.file_size,
            header_len: layout.header_len,
            copy: CopyStats::default(),
        };
        let names = self.writer.tensors();
        let total = layout.tensors.iter().fold(0u64, |sum, &(_, n)| sum.saturating_add(n));
        let mut done = 0u64;
        for (i, (data, &(abs, nbytes))) in self.data.into_iter().zip(&layout.tensors).enumerate() {
            let tensor = || {
                names
                    .get(i)
                    .map_or_else(String::new, |t| String::from_utf8_lossy(&t.name).into_owned())
            };
            match data {
                None => {
                    return Err(WriteError::from(WriteErrorKind::MissingData { tensor: tensor() }));
                }
                Some(TensorData::Bytes(b)) => {
                    if b.len() as u64 != nbytes {
                        return Err(WriteError::from(WriteErrorKind::DataLength {
                            tensor: tensor(),
                            expected: nbytes,
                            got: b.len() as u64,
                        }));
                    }
                    file.write_all_at(b, abs).map_err(|e| werr(abs, e))?;
                }
                Some(TensorData::Reader(ReaderData(mut r))) => {
                    copy_reader(&mut *r, file, abs, nbytes, &werr).map_err(|e| match e {
                        ReaderError::Length(got) => WriteError::from(WriteErrorKind::DataLength {
                            tensor: tensor(),
                            expected: nbytes,
                            got,
                        }),
                        ReaderError::Stream(e) => e,
                    })?;
                }
                Some(TensorData::File { file: src, offset }) => {
                    // In steps, so that a bar moves within a multi-GB tensor.
                    let mut at = 0u64;
                    while at < nbytes {
                        let step = (nbytes - at).min(PROGRESS_STEP);
                        // (An overflowing range is copy_range's error, not a wrap.)
                        let (from, to) = (offset.saturating_add(at), abs.saturating_add(at));
                        let copied =
                            copy_range(src, from, file, to, step).map_err(|e| werr(to, e))?;
                        stats.copy.add(copied);
                        at += step;
                        if at < nbytes {
                            progress(done.saturating_add(at), total);
                        }
                    }
                }
            }
            done = done.saturating_add(nbytes);
            progress(done, total);
        }
        Ok(stats)
    }
}

/// Writes the `.llmw` file `writer` describes into `out` (positional writes from offset 0, in
/// bounded memory: a 1 MiB buffer, and the writer's own 64 KiB buffer for tensor readers);
/// `out` should be empty. Returns the bytes written. [`AtomicFile::commit`] makes it the
/// destination; [`LlmwWriter::write_to_path`] does both when no check is wanted in between.
///
/// # Errors
///
/// [`WriteErrorKind::Llmw`]: the writer refused the model (a duplicate key, a string too
/// long…), a tensor's reader failed, or a write failed.
pub fn write_llmw_into(writer: LlmwWriter<'_>, out: &AtomicFile) -> Result<u64, WriteError> {
    let fail = |source| WriteError::at(out.dest().to_path_buf(), WriteErrorKind::Llmw { source });
    let mut w = io::BufWriter::with_capacity(COPY_BUF, PosWriter { file: out.file(), pos: 0 });
    let n = writer.write_to(&mut w).map_err(fail)?;
    w.flush().map_err(|e| fail(e.into()))?;
    Ok(n)
}

/// Positional writes from `pos` on, whatever the file's cursor.
struct PosWriter<'a> {
    file: &'a File,
    pos: u64,
}

impl io::Write for PosWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum ReaderError {
    Length(u64),
    Stream(WriteError),
}

/// Copies exactly `nbytes` from `r` to `file` at `at` through a bounded buffer.
fn copy_reader(
    r: &mut dyn Read,
    file: &File,
    at: u64,
    nbytes: u64,
    werr: &dyn Fn(u64, io::Error) -> WriteError,
) -> Result<(), ReaderError> {
    let mut buf = vec![0u8; COPY_BUF.min(usize::try_from(nbytes).unwrap_or(COPY_BUF)).max(1)];
    let mut done = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReaderError::Stream(werr(at + done, e))),
        };
        if n == 0 {
            break;
        }
        if done + n as u64 > nbytes {
            return Err(ReaderError::Length(done + n as u64));
        }
        let chunk = buf.get(..n).unwrap_or_default();
        file.write_all_at(chunk, at + done).map_err(|e| ReaderError::Stream(werr(at + done, e)))?;
        done += n as u64;
    }
    if done != nbytes {
        return Err(ReaderError::Length(done));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_checked_against_the_free_blocks() {
        let dir = std::env::temp_dir();
        check_room(&dir, 0).unwrap();
        check_room(&dir, 1).unwrap();
        let e = check_room(&dir, u64::MAX).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("18,446,744,073,709,551,615 bytes are needed"), "{e}");
    }

    #[test]
    fn a_bare_name_is_in_the_current_directory() {
        // `-o out.gguf`: the rename is in `.`, which must be synced (it was skipped).
        assert_eq!(dir_of(Path::new("out.gguf")), Path::new("."));
        assert_eq!(dir_of(Path::new("./out.gguf")), Path::new("."));
        assert_eq!(dir_of(Path::new("models/out.gguf")), Path::new("models"));
        assert_eq!(dir_of(Path::new("/out.gguf")), Path::new("/"));
        assert_eq!(dir_of(Path::new("/")), Path::new("."));
    }

    #[test]
    fn temporary_names_give_their_destination_and_writer() {
        assert_eq!(temp_dest(b".m.gguf.123-4.tmp"), Some(&b"m.gguf"[..]));
        assert_eq!(temp_pid(b".m.gguf.123-4.tmp"), Some(123));
        assert_eq!(temp_pid(b".m.gguf.x-4.tmp"), None);
        assert_eq!(temp_pid(b"m.gguf.123-4.tmp"), None);
        assert_eq!(temp_pid(b".m.gguf.99999999999-4.tmp"), None, "no such pid fits a u32");
        assert!(process_lives(std::process::id()));
    }
}
