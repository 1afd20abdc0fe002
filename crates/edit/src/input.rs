//! Reading auxiliary inputs bounded: the file a user names on purpose for a value
//! (`sipllm edit --set-file KEY=PATH`, [`read_capped`]), and the inputs that must be regular
//! files (`verify --check`'s manifest, `edit --recover`'s header backup, [`read_file_capped`]).
//!
//! Such an input may be a stream — `/dev/stdin`, a shell's `<(…)`, a FIFO — so it is opened
//! without blocking (`open_input`, over [`open_nonblocking`](sipllm_streaming::open_nonblocking)), but at most `max + 1` bytes
//! are ever read from any source: `/dev/zero`, a large file or an endless pipe is refused as
//! soon as it exceeds the cap, without reading further. A stream that ends before its first
//! byte (a FIFO nobody has opened for writing reads as end-of-input at once) is refused too
//! ([`InputError::EmptyStream`]), so a missing writer is never mistaken for an empty value.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use sipllm_format::Kind;
use sipllm_streaming::{FileKind, StreamError, StreamErrorKind};

/// An auxiliary input that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The input holds more than its cap; no more than `max + 1` bytes of it were read.
    #[error("{}: more than {max} bytes (reading stopped there)", path.display())]
    TooLarge {
        /// The input.
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// The input is a stream (a FIFO, a pipe, a device) that ended before its first byte: a
    /// FIFO nobody has opened for writing reads as end-of-input at once.
    #[error("{}: {kind} that delivered no bytes (no writer?)", path.display())]
    EmptyStream {
        /// The input.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// Opening or reading it failed (a directory, a socket, a missing file, an I/O error).
    #[error(transparent)]
    Read(#[from] StreamError),
}

impl Kind for InputError {
    fn code(&self) -> &'static str {
        match self {
            InputError::TooLarge { .. } => "edit::input::too_large",
            InputError::EmptyStream { .. } => "edit::input::empty_stream",
            InputError::Read(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            InputError::TooLarge { .. } => {
                "give a smaller file: a GGUF string holds at most this many bytes."
            }
            InputError::EmptyStream { .. } => {
                "start the program that writes into it first, or give a regular file; an empty \
                 string value is `--set KEY=str:`."
            }
            InputError::Read(e) => e.help(),
        }
    }
}

impl InputError {
    /// The stable code ([`Kind::code`], without importing the trait).
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// The input the error concerns: its own, or the read error's.
    pub fn path(&self) -> Option<&Path> {
        match self {
            InputError::TooLarge { path, .. } | InputError::EmptyStream { path, .. } => Some(path),
            InputError::Read(e) => e.path(),
        }
    }

    /// The message with the input named once: `TooLarge` and `EmptyStream` name it
    /// themselves, a read error is `path: message`.
    pub fn located(&self) -> String {
        match self {
            InputError::Read(e) => e.located().to_string(),
            other => other.to_string(),
        }
    }
}

/// Reads the whole of the file or stream at `path`, refusing it as soon as it holds more than
/// `max` bytes: at most `max + 1` bytes are ever read (and held), whatever the source — a
/// regular file, a pipe, a FIFO, `/dev/zero`.
///
/// Regular files and streams (pipes, FIFOs, character devices such as `/dev/stdin`) are
/// accepted and opened without blocking: for an input a user names on purpose as a value
/// (`edit --set-file`). An input that must be a file is [`read_file_capped`]'s.
///
/// # Errors
///
/// A directory is [`StreamErrorKind::Open`], a socket [`StreamErrorKind::NotAFile`] (both inside
/// [`InputError::Read`]), more than `max` bytes [`InputError::TooLarge`], a stream that ends
/// before its first byte (a FIFO with no writer) [`InputError::EmptyStream`].
pub fn read_capped(path: impl AsRef<Path>, max: u64) -> Result<Vec<u8>, InputError> {
    let path = path.as_ref();
    let (file, meta, kind) = open_input(path)?;
    read_opened(path, file, &meta, kind, max)
}

/// Reads the whole of the regular file at `path` — an auxiliary input that is a file by its
/// nature (`verify --check`'s manifest, `edit --recover`'s `.NAME.header-backup`) — refusing
/// anything else before reading a byte, and the file once it holds more than `max` bytes: at
/// most `max + 1` bytes are ever read. The open never blocks (`O_NONBLOCK`, then the opened
/// descriptor is checked), so a FIFO or `/dev/zero` named there is refused at once instead of
/// hanging or growing without bound.
///
/// # Errors
///
/// A missing file or a directory is [`StreamErrorKind::Open`], anything but a regular file
/// [`StreamErrorKind::NotAFile`] (both inside [`InputError::Read`]), more than `max` bytes
/// [`InputError::TooLarge`].
pub fn read_file_capped(path: impl AsRef<Path>, max: u64) -> Result<Vec<u8>, InputError> {
    let path = path.as_ref();
    let file = sipllm_streaming::open_regular(path, false)?;
    let meta = file
        .metadata()
        .map_err(|source| StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source }))?;
    read_opened(path, file, &meta, None, max)
}

/// The capped read both share: `kind` is `None` for a regular file, the stream's otherwise.
fn read_opened(
    path: &Path,
    file: std::fs::File,
    meta: &std::fs::Metadata,
    kind: Option<FileKind>,
    max: u64,
) -> Result<Vec<u8>, InputError> {
    let too_large = || InputError::TooLarge { path: path.to_path_buf(), max };
    if kind.is_none() && meta.len() > max {
        return Err(too_large());
    }
    // A regular file's size sizes the buffer (it may still grow while read: the cap holds);
    // a stream starts small and grows as it delivers.
    let hint = if kind.is_none() { meta.len().min(max) } else { 0 };
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    let read_err = |source| {
        StreamError::new(
            Some(path.to_path_buf()),
            StreamErrorKind::Io { offset: 0, len: max.saturating_add(1), source },
        )
    };
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(read_err)?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    if bytes.is_empty()
        && let Some(kind) = kind
    {
        return Err(InputError::EmptyStream { path: path.to_path_buf(), kind });
    }
    Ok(bytes)
}

/// Opens an auxiliary input a user names on purpose (`sipllm edit --set-file KEY=PATH`)
/// without blocking: a regular file (`None`), or a stream — a pipe, a FIFO, a character device
/// such as `/dev/stdin` — with its kind (`Some`). [`read_capped`] reads it bounded.
///
/// # Errors
///
/// A directory is [`StreamErrorKind::Open`], a socket [`StreamErrorKind::NotAFile`].
fn open_input(path: &Path) -> Result<(File, Metadata, Option<FileKind>), StreamError> {
    let (file, meta) = sipllm_streaming::open_nonblocking(path, false)?;
    if meta.is_dir() {
        let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory");
        return Err(StreamError::at(path.to_path_buf(), StreamErrorKind::Open { source }));
    }
    match FileKind::of(&meta) {
        // A socket is no stream of bytes to read a value from.
        Some(FileKind::Socket) => Err(StreamError::at(
            path.to_path_buf(),
            StreamErrorKind::NotAFile { kind: FileKind::Socket },
        )),
        kind => Ok((file, meta, kind)),
    }
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
    fn inputs_open_as_files_or_streams_never_as_directories_or_sockets() {
        let dir = temp("kinds");
        let file = dir.join("t.jinja");
        std::fs::write(&file, b"0123456789").unwrap();
        assert!(matches!(open_input(&file), Ok((_, _, None))));
        let fifo = fifo(&dir, "f");
        assert!(matches!(open_input(&fifo), Ok((_, _, Some(FileKind::Fifo)))));
        assert!(matches!(
            open_input(Path::new("/dev/zero")),
            Ok((_, _, Some(FileKind::CharDevice)))
        ));
        assert!(matches!(
            open_input(&dir).map_err(StreamError::into_kind),
            Err(StreamErrorKind::Open { source, .. }) if source.kind() == std::io::ErrorKind::IsADirectory
        ));
        let socket = dir.join("s");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        // Linux refuses to open(2) a socket (ENXIO); elsewhere its kind refuses it.
        assert!(matches!(
            open_input(&socket).map_err(StreamError::into_kind),
            Err(StreamErrorKind::Open { .. }
                | StreamErrorKind::NotAFile { kind: FileKind::Socket, .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_fifo_without_a_writer_is_an_empty_stream() {
        let dir = temp("fifo");
        let path = fifo(&dir, "m.gguf");
        match read_capped(&path, 10).unwrap_err() {
            InputError::EmptyStream { kind: FileKind::Fifo, .. } => {}
            e => panic!("{e:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_only_refuses_streams_before_reading() {
        let dir = temp("files-only");
        let path = fifo(&dir, "manifest");
        for p in [path.as_path(), Path::new("/dev/zero")] {
            match read_file_capped(p, 10).unwrap_err() {
                InputError::Read(e) if matches!(e.kind(), StreamErrorKind::NotAFile { .. }) => {
                    assert_eq!(e.path(), Some(p))
                }
                e => panic!("{e:?}"),
            }
        }
        let file = dir.join("m.txt");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_file_capped(&file, 10).unwrap(), b"0123456789");
        let e = read_file_capped(&file, 9).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { max: 9, .. }), "{e:?}");
        assert!(e.to_string().contains("m.txt: more than 9 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn character_devices_are_read_capped() {
        match read_capped("/dev/zero", 1000).unwrap_err() {
            InputError::TooLarge { max: 1000, .. } => {}
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn regular_files_are_read_up_to_the_cap_exactly() {
        let dir = temp("regular");
        let path = dir.join("t.jinja");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_capped(&path, 10).unwrap(), b"0123456789");
        assert!(matches!(read_capped(&path, 9), Err(InputError::TooLarge { max: 9, .. })));
        std::fs::write(&path, b"").unwrap();
        assert_eq!(read_capped(&path, 9).unwrap(), b"", "an empty regular file is an empty value");
        assert!(matches!(
            read_capped(&dir, 9),
            Err(InputError::Read(e)) if matches!(e.kind(), StreamErrorKind::Open { source }
                if source.kind() == std::io::ErrorKind::IsADirectory)
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
        assert!(matches!(got, Err(InputError::TooLarge { max: 100_000, .. })), "{got:?}");
    }
}
