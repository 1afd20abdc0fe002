//! File identity: whether two paths (or a path and an open file) are one file, whatever names
//! reach it — symlinks, hard links, `./x` against `x`.
//!
//! Every writing command asks this before it writes: an output that is one of its inputs is
//! refused ([`refuse_output_is_input`], [`WriteErrorKind::OutputIsInput`]), never truncated or
//! replaced. The in-place header backup is keyed by it too
//! ([`HeaderBackup`](crate::HeaderBackup) lives beside the file a symlink [`resolve`]s to and
//! records the [`FileId`] it belongs to).
//!
//! On Unix a file is its `(st_dev, st_ino)` pair; elsewhere the canonical path stands in for it
//! (which misses hard links).
//!
//! ```
//! use sipllm_edit::identity::{FileId, same_file};
//!
//! let dir = std::env::temp_dir().join(format!("sipllm-identity-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let a = dir.join("a.gguf");
//! std::fs::write(&a, b"GGUF")?;
//! assert!(same_file(&a, &dir.join(".").join("a.gguf")));
//! assert!(!same_file(&a, &dir.join("missing.gguf")));
//! assert_eq!(FileId::of_path(&dir.join("missing.gguf"))?, None);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{WriteError, WriteErrorKind};

/// The identity of a file: the same for every path and every open descriptor of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileId(Repr);

#[cfg(unix)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Repr {
    dev: u64,
    ino: u64,
}

/// Without device and inode numbers: a canonical path, or (for an open file, whose path is not
/// known) a value unique to this call, equal to no other identity.
#[cfg(not(unix))]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Repr {
    Path(PathBuf),
    Unknown(u64),
}

#[cfg(not(unix))]
fn unknown() -> Repr {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    Repr::Unknown(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

impl FileId {
    /// The identity of an open file.
    pub fn of_file(file: &File) -> io::Result<FileId> {
        #[cfg(unix)]
        {
            Ok(FileId::of_metadata(&file.metadata()?))
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            Ok(FileId(unknown()))
        }
    }

    /// The identity of the file `path` names (symlinks followed), `None` when there is none.
    pub fn of_path(path: &Path) -> io::Result<Option<FileId>> {
        match std::fs::metadata(path) {
            #[cfg(unix)]
            Ok(meta) => Ok(Some(FileId::of_metadata(&meta))),
            #[cfg(not(unix))]
            Ok(_) => Ok(Some(FileId(Repr::Path(std::fs::canonicalize(path)?)))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The identity recorded in `meta` (Unix: device and inode numbers).
    #[cfg(unix)]
    pub fn of_metadata(meta: &Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId(Repr { dev: meta.dev(), ino: meta.ino() })
    }

    /// The identity recorded in `meta`; without device and inode numbers there is none to
    /// compare, so it equals no other.
    #[cfg(not(unix))]
    pub fn of_metadata(_meta: &Metadata) -> FileId {
        FileId(unknown())
    }

    /// `(device, inode)` as the in-place header backup records them (zeros where the platform
    /// has no such numbers).
    pub fn dev_ino(&self) -> (u64, u64) {
        #[cfg(unix)]
        {
            (self.0.dev, self.0.ino)
        }
        #[cfg(not(unix))]
        {
            (0, 0)
        }
    }
}

/// True when both paths name one existing file (symlinks followed, hard links included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (FileId::of_path(a), FileId::of_path(b)) {
        (Ok(Some(x)), Ok(Some(y))) => x == y,
        _ => false,
    }
}

/// Refuses to write `output` when it names the same file as `input` (by identity: a symlink
/// or a hard link to the input is the input). `what` says what the output is
/// (`"the manifest"`, `"the output"`, `"shard 2"`). A missing output is fine.
///
/// # Errors
///
/// [`WriteErrorKind::OutputIsInput`].
pub fn refuse_output_is_input(
    input: &Path,
    output: &Path,
    what: &'static str,
) -> Result<(), WriteError> {
    if same_file(input, output) {
        return Err(WriteError::at(
            output.to_path_buf(),
            WriteErrorKind::OutputIsInput { input: input.to_path_buf(), what },
        ));
    }
    Ok(())
}

/// Like [`refuse_output_is_input`], against a file already open (its identity taken from the
/// descriptor, so a path replaced since it was opened cannot hide it). `input` names it in the
/// error.
///
/// # Errors
///
/// [`WriteErrorKind::OutputIsInput`].
pub fn refuse_output_is_open_file(
    input: &File,
    input_path: &Path,
    output: &Path,
    what: &'static str,
) -> Result<(), WriteError> {
    #[cfg(unix)]
    {
        if let (Ok(a), Ok(Some(b))) = (FileId::of_file(input), FileId::of_path(output))
            && a == b
        {
            return Err(WriteError::at(
                output.to_path_buf(),
                WriteErrorKind::OutputIsInput { input: input_path.to_path_buf(), what },
            ));
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = input;
        refuse_output_is_input(input_path, output, what)
    }
}

/// Most symlinks [`resolve`] follows before giving up (Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// The path with its last component's symlinks followed (relative targets taken from the
/// link's directory), the target possibly not existing yet; other paths are returned as they
/// are. Directory components are left alone: they name the same directory either way.
///
/// Writers put their temporaries and sidecars beside what this returns, so writing "through" a
/// symlink replaces the file it points at and keeps the link.
pub fn resolve(path: &Path) -> PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&at) {
                Ok(target) if target.is_absolute() => at = target,
                Ok(target) => {
                    let dir = at.parent().unwrap_or(Path::new(""));
                    at = dir.join(target);
                }
                Err(_) => return at,
            },
            _ => return at,
        }
    }
    at
}
