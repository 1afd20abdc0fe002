//! [`FileKind`]: what a path that is not a regular file names.

/// What a path that is not a regular file (nor a directory) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A FIFO (named pipe), or an anonymous pipe reached through `/dev/fd`.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// Something else that is not a regular file.
    Other,
}

impl FileKind {
    /// What `meta` describes, or `None` for a regular file or a directory.
    pub fn of(meta: &std::fs::Metadata) -> Option<FileKind> {
        let ty = meta.file_type();
        if ty.is_file() || ty.is_dir() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt as _;
            if ty.is_fifo() {
                return Some(FileKind::Fifo);
            }
            if ty.is_socket() {
                return Some(FileKind::Socket);
            }
            if ty.is_char_device() {
                return Some(FileKind::CharDevice);
            }
            if ty.is_block_device() {
                return Some(FileKind::BlockDevice);
            }
        }
        Some(FileKind::Other)
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Fifo => "a FIFO (pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "a special file",
        })
    }
}
