//! Opening inputs without hanging on special files, and reading auxiliary inputs bounded.
//!
//! `open(2)` of a FIFO blocks until a writer appears, so a model path naming a FIFO (or a
//! sibling shard replaced by one) would hang every command forever. Models are therefore
//! opened with `O_NONBLOCK` (which never blocks the open; on a regular file it changes
//! nothing and is cleared again at once) and the *opened descriptor* is checked with `fstat`:
//! anything but a regular file is [`StreamErrorKind::NotAFile`] (a directory stays
//! [`StreamErrorKind::Open`] with [`io::ErrorKind::IsADirectory`]). Checking the descriptor, not
//! the path, leaves no window for the path to be swapped between the check and the use. (On
//! Unix systems other than Linux and Android, which this crate reaches without `rustix`, the
//! path is checked with `stat` before the open as well: a FIFO swapped in between could still
//! block there.)
//!
//! Auxiliary inputs a user names on purpose (`sipllm edit --set-file KEY=PATH`) may be streams
//! — `/dev/stdin`, a shell's `<(…)`, a FIFO — so the write side opens them with
//! [`open_nonblocking`] and accepts them (its `read_capped` reads at most `max + 1` bytes from
//! any source): `/dev/zero`, a large file or an endless pipe is refused as
//! soon as it exceeds the cap, without reading further. A stream that ends before its first
//! byte (a FIFO nobody has opened for writing reads as end-of-input at once) is refused too
//! (the write side's `InputError::EmptyStream`), so a missing writer is never mistaken for an empty
//! value.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

use crate::error::{FileKind, StreamError, StreamErrorKind};

/// Opens `path` read-only (or read-write when `write`) without blocking on a special file,
/// and refuses anything but a regular file.
///
/// # Errors
///
/// [`StreamErrorKind::Open`] (a directory too), [`StreamErrorKind::NotAFile`].
pub fn open_regular(path: &Path, write: bool) -> Result<File, StreamError> {
    let (file, meta) = open_nonblocking(path, write)?;
    check_regular(&meta, path)?;
    Ok(file)
}

/// Refuses a directory ([`StreamErrorKind::Open`]) or a special file ([`StreamErrorKind::NotAFile`]).
pub(crate) fn check_regular(meta: &Metadata, path: &Path) -> Result<(), StreamError> {
    if meta.is_dir() {
        let source = io::Error::new(io::ErrorKind::IsADirectory, "is a directory");
        return Err(StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source }));
    }
    match FileKind::of(meta) {
        None => Ok(()),
        Some(kind) => Err(StreamError::at(path.to_path_buf(), StreamErrorKind::NotAFile { kind })),
    }
}

/// The file at `path`, opened so that the open itself never blocks (a FIFO without a writer),
/// with its metadata from the descriptor; reads on it block as usual again. Whatever it is
/// (a regular file, a directory, a FIFO, a device) is the caller's to check: [`open_regular`]
/// refuses all but a regular file; the write side's auxiliary inputs accept streams.
///
/// # Errors
///
/// [`StreamErrorKind::Open`] (and, on Unix systems without `O_NONBLOCK` here, a special file is
/// [`StreamErrorKind::NotAFile`] before the open).
pub fn open_nonblocking(path: &Path, write: bool) -> Result<(File, Metadata), StreamError> {
    let open_err = |source| StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source });
    let mut options = File::options();
    options.read(true).write(write);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // `OFlags` bits are the platform's `O_*` values; NONBLOCK fits an `i32`.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        // No portable O_NONBLOCK here: refuse a special file by its path first.
        if let Ok(meta) = std::fs::metadata(path)
            && let Some(kind) = FileKind::of(&meta)
        {
            return Err(StreamError::at(path.to_path_buf(), StreamErrorKind::NotAFile { kind }));
        }
    }
    let file = options.open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| open_err(e.into()))?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
            .map_err(|e| open_err(e.into()))?;
    }
    Ok((file, meta))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn fifo(dir: &Path, name: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let status = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo");
        assert!(status.success());
        path
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sipllm-input-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = temp("fifo");
        let path = fifo(&dir, "m.gguf");
        match open_regular(&path, false).unwrap_err().into_kind() {
            StreamErrorKind::NotAFile { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        match open_regular(&path, true).unwrap_err().into_kind() {
            StreamErrorKind::NotAFile { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn character_devices_are_refused_as_models() {
        match open_regular(Path::new("/dev/null"), false).unwrap_err().into_kind() {
            StreamErrorKind::NotAFile { kind: FileKind::CharDevice, .. } => {}
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn regular_files_and_directories_are_told_apart() {
        let dir = temp("regular");
        let path = dir.join("t.jinja");
        std::fs::write(&path, b"0123456789").unwrap();
        assert!(open_regular(&path, false).is_ok());
        assert!(matches!(
            open_regular(&dir, false).map_err(StreamError::into_kind),
            Err(StreamErrorKind::Open { source, .. }) if source.kind() == io::ErrorKind::IsADirectory
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
