//! The workspace's one `unsafe`: a read-only memory map of a file.
//!
//! The map never leaves this module. Readers get copies ([`FileMap::read_exact_at`] copies
//! into the caller's buffer), so what stays resident is bounded by what the caller holds, and
//! no `&[u8]` into the map outlives a single copy.

use std::fs::File;
use std::io;

use crate::bounds::copy_at;

/// A read-only map of a whole file.
pub(crate) struct FileMap {
    map: memmap2::Mmap,
}

impl FileMap {
    /// Maps `file` read-only, at its current length.
    ///
    /// # Safety (what the caller of this safe function accepts)
    ///
    /// Mapping is `unsafe` in memmap2 because Rust cannot stop another process from changing
    /// the file under the map: truncation makes the lost pages raise `SIGBUS` when touched,
    /// and modification changes bytes a `&[u8]` points at. This function is safe to call
    /// because the crate only selects it through [`Backend::Mmap`], whose documentation makes
    /// "the file is not truncated or modified while open" the caller's contract (as ripgrep
    /// does for `--mmap`), and because the map's bytes are only ever copied out, one read at a
    /// time, never handed out.
    ///
    /// [`Backend::Mmap`]: crate::Backend::Mmap
    pub(crate) fn new(file: &File) -> io::Result<FileMap> {
        // SAFETY: the file is opened read-only and mapped read-only (`PROT_READ`,
        // `MAP_SHARED`), so this process never writes through the map. The remaining hazard,
        // another process truncating or rewriting the file while it is mapped, is excluded
        // by the documented contract of `Backend::Mmap` (see the `# Safety` section above):
        // the caller who selects the mmap backend asserts the file is not changed while open.
        // No reference into the map escapes this module: `read_exact_at` borrows it for the
        // duration of one `copy_from_slice`.
        let map = unsafe { memmap2::MmapOptions::new().map(file) }?;
        Ok(FileMap { map })
    }

    /// The mapped length.
    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Copies the bytes at `offset` into `dst`, or reports a `ShortRead`.
    pub(crate) fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        copy_at(&self.map, offset, dst)
    }

    /// `madvise(MADV_WILLNEED)` over `offset..offset + len`, which the caller clamped to the
    /// map.
    #[cfg(unix)]
    pub(crate) fn advise_willneed(&self, offset: u64, len: u64) -> io::Result<()> {
        let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "range beyond the address space",
            ));
        };
        self.map.advise_range(memmap2::Advice::WillNeed, offset, len)
    }

    /// No `madvise` on this platform: a no-op.
    #[cfg(not(unix))]
    pub(crate) fn advise_willneed(&self, _offset: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }
}
