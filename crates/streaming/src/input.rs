//! Opening inputs without hanging on special files, and reading auxiliary inputs bounded.
//!
//! `open(2)` of a FIFO blocks until a writer appears, so a model path naming a FIFO (or a
//! sibling shard replaced by one) would hang every command forever. Models are therefore
//! opened with `O_NONBLOCK` (which never blocks the open; on a regular file it changes
//! nothing and is cleared again at once) and the *opened descriptor* is checked with `fstat`:
//! anything but a regular file is [`StreamError::NotAFile`] (a directory stays
//! [`StreamError::Open`] with [`io::ErrorKind::IsADirectory`]). Checking the descriptor, not
//! the path, leaves no window for the path to be swapped between the check and the use. (On
//! Unix systems other than Linux and Android, which this crate reaches without `rustix`, the
//! path is checked with `stat` before the open as well: a FIFO swapped in between could still
//! block there.)
//!
//! Auxiliary inputs a user names on purpose (`sipllm edit --set-file KEY=PATH`) may be streams
//! — `/dev/stdin`, a shell's `<(…)`, a FIFO — so [`read_capped`] accepts them, but reads at most
//! `max + 1` bytes from any source: `/dev/zero`, a large file or an endless pipe is refused as
//! soon as it exceeds the cap, without reading further. A stream that ends before its first
//! byte (a FIFO nobody has opened for writing reads as end-of-input at once) is refused too
//! ([`StreamError::InputEmptyStream`]), so a missing writer is never mistaken for an empty
//! value.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

use crate::error::{FileKind, StreamError};

/// Opens `path` read-only (or read-write when `write`) without blocking on a special file,
/// and refuses anything but a regular file.
pub(crate) fn open_regular(path: &Path, write: bool) -> Result<File, StreamError> {
    let (file, meta) = open_nonblocking(path, write)?;
    check_regular(&meta, path)?;
    Ok(file)
}

/// Refuses a directory ([`StreamError::Open`]) or a special file ([`StreamError::NotAFile`]).
pub(crate) fn check_regular(meta: &Metadata, path: &Path) -> Result<(), StreamError> {
    if meta.is_dir() {
        let source = io::Error::new(io::ErrorKind::IsADirectory, "is a directory");
        return Err(StreamError::Open { path: path.to_path_buf(), source });
    }
    match FileKind::of(meta) {
        None => Ok(()),
        Some(kind) => Err(StreamError::NotAFile { path: path.to_path_buf(), kind }),
    }
}

/// The file at `path`, opened so that the open itself never blocks (a FIFO without a writer),
/// with its metadata from the descriptor; reads on it block as usual again.
fn open_nonblocking(path: &Path, write: bool) -> Result<(File, Metadata), StreamError> {
    let open_err = |source| StreamError::Open { path: path.to_path_buf(), source };
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
            return Err(StreamError::NotAFile { path: path.to_path_buf(), kind });
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

/// Reads the whole of the file or stream at `path`, refusing it as soon as it holds more than
/// `max` bytes: at most `max + 1` bytes are ever read (and held), whatever the source — a
/// regular file, a pipe, a FIFO, `/dev/zero`.
///
/// Regular files and streams (pipes, FIFOs, character devices such as `/dev/stdin`) are
/// accepted and opened without blocking. A directory is [`StreamError::Open`], a socket
/// [`StreamError::NotAFile`], more than `max` bytes [`StreamError::InputTooLarge`], a stream
/// that ends before its first byte (a FIFO with no writer) [`StreamError::InputEmptyStream`].
pub fn read_capped(path: impl AsRef<Path>, max: u64) -> Result<Vec<u8>, StreamError> {
    let path = path.as_ref();
    let (file, meta) = open_nonblocking(path, false)?;
    let kind = match check_regular(&meta, path) {
        Ok(()) => None,
        Err(StreamError::NotAFile { kind: FileKind::Socket, .. }) => {
            return Err(StreamError::NotAFile { path: path.to_path_buf(), kind: FileKind::Socket });
        }
        Err(StreamError::NotAFile { kind, .. }) => Some(kind),
        Err(e) => return Err(e),
    };
    let too_large = || StreamError::InputTooLarge { path: path.to_path_buf(), max };
    if kind.is_none() && meta.len() > max {
        return Err(too_large());
    }
    // A regular file's size sizes the buffer (it may still grow while read: the cap holds);
    // a stream starts small and grows as it delivers.
    let hint = if kind.is_none() { meta.len().min(max) } else { 0 };
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    let read_err = |source| StreamError::Io {
        path: Some(path.to_path_buf()),
        offset: 0,
        len: max.saturating_add(1),
        source,
    };
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    if bytes.is_empty()
        && let Some(kind) = kind
    {
        return Err(StreamError::InputEmptyStream { path: path.to_path_buf(), kind });
    }
    Ok(bytes)
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
        match open_regular(&path, false).unwrap_err() {
            StreamError::NotAFile { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        match open_regular(&path, true).unwrap_err() {
            StreamError::NotAFile { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        match read_capped(&path, 10).unwrap_err() {
            StreamError::InputEmptyStream { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn character_devices_are_refused_as_models_and_read_capped_as_inputs() {
        match open_regular(Path::new("/dev/null"), false).unwrap_err() {
            StreamError::NotAFile { kind: FileKind::CharDevice, .. } => {}
            e => panic!("{e:?}"),
        }
        match read_capped("/dev/zero", 1000).unwrap_err() {
            StreamError::InputTooLarge { max: 1000, .. } => {}
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn regular_files_are_read_up_to_the_cap_exactly() {
        let dir = temp("regular");
        let path = dir.join("t.jinja");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_capped(&path, 10).unwrap(), b"0123456789");
        assert!(matches!(read_capped(&path, 9), Err(StreamError::InputTooLarge { max: 9, .. })));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(read_capped(&path, 9).unwrap(), b"", "an empty regular file is an empty value");
        assert!(open_regular(&path, false).is_ok());
        assert!(matches!(
            open_regular(&dir, false),
            Err(StreamError::Open { source, .. }) if source.kind() == io::ErrorKind::IsADirectory
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_endless_stream_is_refused_after_the_cap() {
        use std::os::fd::AsRawFd as _;
        // `yes` writes forever into a pipe; the read stops after cap + 1 bytes.
        let mut child = std::process::Command::new("yes")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("yes runs");
        let fd = child.stdout.as_ref().unwrap().as_raw_fd();
        let got = read_capped(format!("/proc/self/fd/{fd}"), 100_000);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(matches!(got, Err(StreamError::InputTooLarge { max: 100_000, .. })), "{got:?}");
    }
}
