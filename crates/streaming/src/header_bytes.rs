//! [`HeaderBytes`]: the buffer a header is read into, and that the parsed header borrows.
//!
//! A Llama-3-8B header is 7.7 MB. Read into a growing `Vec`, the cost of opening is not the
//! parse but the fresh memory: ~1,900 page faults (each a zeroed 4 KiB page charged to the
//! process), a `memset` of every byte before `pread` overwrites it, and the `munmap` at the
//! end — three times what reading the bytes from the page cache costs. So a header that
//! outgrows [`RESERVE_FROM`] moves into an anonymous mapping reserved once at the size the
//! header can reach (at most the file, at most [`MAX_RESERVE`]; address space only, with no
//! swap reserved) and advised for transparent huge pages: the rest of the header is read
//! straight into it, never zeroed by us, never moved, faulted in 2 MiB at a time. Small headers
//! stay in a `Vec`. No `unsafe`: memmap2's anonymous maps and `madvise(MADV_HUGEPAGE)` are
//! safe calls.

use std::fmt;
use std::ops::Deref;

/// Headers that grow past this many bytes move from a `Vec` into a reserved mapping.
#[cfg_attr(not(all(unix, feature = "file")), allow(dead_code))]
pub(crate) const RESERVE_FROM: usize = 256 << 10;

/// The largest reservation: a header that outgrows it continues in a `Vec` (a copy).
#[cfg_attr(not(all(unix, feature = "file")), allow(dead_code))]
pub(crate) const MAX_RESERVE: u64 = 1 << 30;

/// The bytes of a header read by [`read_header`](crate::read_header) or
/// [`read_llmw_header`](crate::read_llmw_header): a byte slice (it dereferences to `[u8]`),
/// held in a `Vec` or, for a large header, in memory mapped for it.
///
/// Parsed headers are `Gguf<HeaderBytes>` / `Llmw<HeaderBytes>`; [`into_vec`](Self::into_vec)
/// gives the bytes as a `Vec` where one is needed.
pub struct HeaderBytes {
    repr: Repr,
}

enum Repr {
    Heap(Vec<u8>),
    #[cfg(all(unix, feature = "file"))]
    Reserved {
        map: memmap2::MmapMut,
        len: usize,
    },
}

impl HeaderBytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.repr {
            Repr::Heap(v) => v,
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { map, len } => map.get(..*len).unwrap_or_default(),
        }
    }

    /// The bytes as a `Vec` (a copy, unless they are held in one).
    pub fn into_vec(self) -> Vec<u8> {
        match self.repr {
            Repr::Heap(v) => v,
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { .. } => self.as_slice().to_vec(),
        }
    }

    /// Bytes of memory the buffer holds: the `Vec`'s capacity, or the bytes written into the
    /// reserved mapping (the kernel may back them with 2 MiB pages).
    pub(crate) fn held(&self) -> u64 {
        match &self.repr {
            Repr::Heap(v) => v.capacity() as u64,
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { len, .. } => *len as u64,
        }
    }
}

impl Deref for HeaderBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for HeaderBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for HeaderBytes {
    fn from(bytes: Vec<u8>) -> HeaderBytes {
        HeaderBytes { repr: Repr::Heap(bytes) }
    }
}

impl Clone for HeaderBytes {
    fn clone(&self) -> HeaderBytes {
        HeaderBytes::from(self.as_slice().to_vec())
    }
}

impl PartialEq for HeaderBytes {
    fn eq(&self, other: &HeaderBytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for HeaderBytes {}

impl fmt::Debug for HeaderBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = match &self.repr {
            Repr::Heap(_) => "heap",
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { .. } => "mapped",
        };
        f.debug_struct("HeaderBytes").field("len", &self.len()).field("in", &held).finish()
    }
}

/// The growing buffer [`fill`](crate::window::fill) reads into.
pub(crate) struct HeaderBuf {
    bytes: HeaderBytes,
    /// The most the header can grow to (the source's length).
    #[cfg_attr(not(all(unix, feature = "file")), allow(dead_code))]
    limit: u64,
}

impl HeaderBuf {
    pub(crate) fn new(limit: u64) -> HeaderBuf {
        HeaderBuf { bytes: HeaderBytes::from(Vec::new()), limit }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn into_bytes(self) -> HeaderBytes {
        self.bytes
    }

    /// Takes the bytes out as a `Vec`, for a caller that grows them itself (the sparse read;
    /// a reserved buffer is copied), to be given back with [`put_vec`](Self::put_vec).
    pub(crate) fn take_vec(&mut self) -> Vec<u8> {
        std::mem::replace(&mut self.bytes, HeaderBytes::from(Vec::new())).into_vec()
    }

    /// Gives back what [`take_vec`](Self::take_vec) took.
    pub(crate) fn put_vec(&mut self, bytes: Vec<u8>) {
        self.bytes = HeaderBytes::from(bytes);
    }

    /// `add` more bytes, uninitialised in meaning (zero in fact), for the caller to fill with
    /// a read; on an allocation failure, nothing changes. The caller calls
    /// [`truncate`](Self::truncate) if the read fails.
    pub(crate) fn extend(
        &mut self,
        add: usize,
    ) -> Result<&mut [u8], std::collections::TryReserveError> {
        let start = self.len();
        let end = start.saturating_add(add);
        #[cfg(all(unix, feature = "file"))]
        self.reserve_for(end);
        match &mut self.bytes.repr {
            Repr::Heap(v) => {
                grow(v, add)?;
                v.resize(end, 0);
                Ok(v.get_mut(start..).unwrap_or_default())
            }
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { map, len } => {
                *len = end;
                Ok(map.get_mut(start..end).unwrap_or_default())
            }
        }
    }

    /// Drops the bytes from `len` on.
    pub(crate) fn truncate(&mut self, len: usize) {
        match &mut self.bytes.repr {
            Repr::Heap(v) => v.truncate(len),
            #[cfg(all(unix, feature = "file"))]
            Repr::Reserved { len: l, .. } => *l = (*l).min(len),
        }
    }

    /// Moves a `Vec` that is to grow past [`RESERVE_FROM`] into a reserved mapping (and a
    /// reserved buffer that is to outgrow its mapping back into a `Vec`). A mapping that
    /// cannot be made leaves the `Vec`.
    #[cfg(all(unix, feature = "file"))]
    fn reserve_for(&mut self, end: usize) {
        match &self.bytes.repr {
            // (Miri cannot run the foreign `mmap` call: it checks the `Vec` path.)
            Repr::Heap(v) if end > RESERVE_FROM && v.len() <= RESERVE_FROM && !cfg!(miri) => {
                let size = self.limit.min(MAX_RESERVE);
                let Ok(size) = usize::try_from(size) else { return };
                if end > size {
                    return;
                }
                let Ok(mut map) =
                    memmap2::MmapOptions::new().len(size).no_reserve_swap().map_anon()
                else {
                    return;
                };
                // Only a hint: where transparent huge pages are off, the pages are 4 KiB.
                let _ = map.advise(memmap2::Advice::HugePage);
                let len = v.len();
                let Some(dst) = map.get_mut(..len) else { return };
                dst.copy_from_slice(v);
                self.bytes = HeaderBytes { repr: Repr::Reserved { map, len } };
            }
            Repr::Reserved { map, .. } if end > map.len() => {
                let v = self.take_vec();
                self.put_vec(v);
            }
            _ => {}
        }
    }
}

/// Makes room for `add` more bytes: exactly, or 1.25× the current length if that is more,
/// so a header of n bytes costs O(log n) reallocations and at most 1.25 n of capacity.
fn grow(buf: &mut Vec<u8>, add: usize) -> Result<(), std::collections::TryReserveError> {
    let needed = buf.len().saturating_add(add);
    if needed <= buf.capacity() {
        return Ok(());
    }
    let target = needed.max(buf.len().saturating_add(buf.len() / 4));
    buf.try_reserve_exact(target - buf.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_mapped(b: &HeaderBytes) -> bool {
        !matches!(b.repr, Repr::Heap(_))
    }

    /// Appends `n` bytes of a pattern the way `fill` does: extend, then write them.
    fn append(buf: &mut HeaderBuf, n: usize) {
        let start = buf.len();
        let dst = buf.extend(n).unwrap();
        for (i, b) in dst.iter_mut().enumerate() {
            *b = ((start + i) % 251) as u8;
        }
    }

    fn expected(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    #[cfg_attr(miri, ignore = "an anonymous mapping is a foreign call Miri cannot run")]
    fn a_large_header_moves_into_a_mapping_and_keeps_its_bytes() {
        let mut buf = HeaderBuf::new(64 << 20);
        append(&mut buf, 1000);
        assert!(!is_mapped(&buf.bytes), "small headers stay in a Vec");
        while buf.len() <= RESERVE_FROM + (3 << 20) {
            append(&mut buf, 64 << 10);
        }
        let len = buf.len();
        assert_eq!(buf.as_slice(), &expected(len)[..]);
        // A failed read gives its bytes back.
        append(&mut buf, 10);
        buf.truncate(len);
        let bytes = buf.into_bytes();
        #[cfg(all(unix, feature = "file"))]
        assert!(is_mapped(&bytes), "{bytes:?}");
        assert_eq!(bytes.held(), len as u64, "held: the bytes written, not the reservation");
        assert_eq!(bytes.clone(), bytes);
        assert_eq!(bytes.into_vec(), expected(len));
    }

    #[test]
    #[cfg_attr(miri, ignore = "an anonymous mapping is a foreign call Miri cannot run")]
    fn a_header_that_outgrows_its_reservation_continues_in_a_vec() {
        // The source is only 3 MiB: the reservation is 3 MiB, and reads past it (which `fill`
        // never asks for) still work, in a Vec.
        let mut buf = HeaderBuf::new(3 << 20);
        while buf.len() < (3 << 20) {
            append(&mut buf, 64 << 10);
        }
        #[cfg(all(unix, feature = "file"))]
        assert!(is_mapped(&buf.bytes));
        append(&mut buf, 100);
        assert!(!is_mapped(&buf.bytes));
        assert_eq!(buf.as_slice(), &expected((3 << 20) + 100)[..]);
        let v = buf.take_vec();
        assert_eq!(v.len(), (3 << 20) + 100);
        buf.put_vec(v);
        assert_eq!(buf.len(), (3 << 20) + 100);
    }
}
