//! Bounds of positional reads: [`ShortRead`] (how many bytes a read came up short, carried
//! inside an [`io::Error`]) and the bounds-checked slice copy of the in-memory sources. No
//! other module of the crate is imported here, so every reader (and the error type) can use it.

use std::fmt;
use std::io;

/// The input ended `missing` bytes short of a read of `len` bytes at `offset`.
///
/// Carried inside an [`io::Error`] of kind [`io::ErrorKind::UnexpectedEof`], so [`ReadAt`](crate::ReadAt)
/// keeps the standard signature and the count survives to
/// [`StreamErrorKind::UnexpectedEof`](crate::StreamErrorKind::UnexpectedEof).
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
    /// do, else the `ShortRead` saying how many are missing (a [`ReadAt`](crate::ReadAt) whose size is known
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
