//! [`Values`]: an owned f32 buffer in memory chosen for fast first writes.
//!
//! Writing a fresh output is dominated by the kernel's page faults, not by the dequantization:
//! on a 4 KiB page each fault zeroes and maps one page, about 3 GB/s of stores here against
//! 20–30 GB/s into memory already mapped. An anonymous mapping advised for transparent huge
//! pages faults 2 MiB at a time (about 18 GB/s), which is also what numpy does for its arrays
//! of 4 MiB and more. A `Vec` from a fallible reservation is worse still: it must be written
//! once (zeroed) before the values are written again.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::DequantError;

/// An owned, zero-initialized `[f32]`, in the memory that is fastest to write the first time:
/// outputs of [`Values::MAP_MIN_BYTES`] and more live in an anonymous private memory map
/// advised for transparent huge pages (on Unix; the advice on Linux), smaller ones (and all of
/// them elsewhere, under Miri, or when the map fails) in a `Vec<f32>`.
///
/// It dereferences to `[f32]`; [`into_vec`](Values::into_vec) gives a `Vec<f32>` (a copy when
/// mapped). Made by [`Values::zeroed`], [`dequantize_to_values`](crate::dequantize_to_values),
/// or from a `Vec<f32>`.
///
/// ```
/// use sipllm_quants::{GgmlType, Values};
/// // Two F16 values, 1.0 and -2.0.
/// let values = sipllm_quants::dequantize_to_values(GgmlType::F16, &[0x00, 0x3c, 0x00, 0xc0])?;
/// assert_eq!(values, [1.0, -2.0][..]);
/// assert_eq!(values.as_bytes(), &[0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]);
///
/// let mut big = Values::zeroed(1 << 22)?; // 16 MiB: mapped, on Unix
/// assert!(big.iter().all(|&x| x == 0.0));
/// big[7] = 3.5;
/// assert_eq!(big.into_vec()[7], 3.5);
/// # Ok::<(), sipllm_quants::DequantError>(())
/// ```
pub struct Values {
    backing: Backing,
}

enum Backing {
    Heap(Vec<f32>),
    /// `len` values at the start of `map` (whose length is at least `4 * len`).
    #[cfg(all(unix, not(miri)))]
    Map {
        map: memmap2::MmapMut,
        len: usize,
    },
}

impl Values {
    /// Outputs of at least this many bytes (4 MiB, numpy's threshold for its huge-page advice)
    /// are mapped. Below it a mapping's system calls cost more than the faults they save, and
    /// a `Vec` reuses memory the allocator already has.
    pub const MAP_MIN_BYTES: usize = 4 << 20;

    /// `len` zeros, in a mapping or a `Vec` as the type's documentation says. The mapped
    /// pages are the kernel's zero pages until written: nothing is touched here.
    ///
    /// # Errors
    ///
    /// [`DequantError::Alloc`] if neither the mapping nor the `Vec` can be had (or `4 * len`
    /// overflows `usize`).
    pub fn zeroed(len: usize) -> Result<Values, DequantError> {
        let too_big = DequantError::Alloc { bytes: (len as u64).saturating_mul(4) };
        let bytes = len.checked_mul(4).ok_or(too_big)?;
        #[cfg(all(unix, not(miri)))]
        if bytes >= Self::MAP_MIN_BYTES
            && let Some(map) = map_zeroed(bytes)
        {
            return Ok(Values { backing: Backing::Map { map, len } });
        }
        let _ = bytes;
        let mut v = Vec::new();
        v.try_reserve_exact(len).map_err(|_| too_big)?;
        // Safe code cannot have zeroed memory from a fallible allocation without writing it;
        // below the threshold these pages are about to be written anyway, and stay in cache.
        v.resize(len, 0.0);
        Ok(Values { backing: Backing::Heap(v) })
    }

    /// The values' bytes (little-endian f32 on a little-endian machine: the native layout).
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }

    /// The values as a `Vec<f32>`: the `Vec` itself if they are in one, else a copy (which
    /// allocates like `Vec::with_capacity`, aborting if the memory cannot be had).
    pub fn into_vec(self) -> Vec<f32> {
        match self.backing {
            Backing::Heap(v) => v,
            #[cfg(all(unix, not(miri)))]
            Backing::Map { .. } => self.to_vec(),
        }
    }
}

/// The transparent huge page size of x86_64 and of aarch64 with 4 KiB pages.
#[cfg(all(unix, not(miri)))]
const HUGE_PAGE: usize = 2 << 20;

/// An anonymous private mapping of at least `bytes` zero bytes, advised for huge pages; `None`
/// if the system refuses it (the caller falls back to the heap).
///
/// The length is rounded up to whole huge pages: Linux places only such mappings on a huge
/// page boundary, and an unaligned one faults its first and last partial huge pages 4 KiB at
/// a time (a 20 MB output filled at 15 GB/s instead of 36). The price is at most one huge
/// page of zeros past the end once the last one is written.
#[cfg(all(unix, not(miri)))]
fn map_zeroed(bytes: usize) -> Option<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(bytes.checked_next_multiple_of(HUGE_PAGE)?).ok()?;
    // Only a hint: without transparent huge pages (disabled, or not compiled in) the mapping
    // works as well, with 4 KiB pages.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(map)
}

impl Deref for Values {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match &self.backing {
            Backing::Heap(v) => v,
            // A mapping is page-aligned and `4 * len` long, so the cast cannot fail.
            #[cfg(all(unix, not(miri)))]
            Backing::Map { map, len } => bytemuck::cast_slice(&map[..*len * 4]),
        }
    }
}

impl DerefMut for Values {
    fn deref_mut(&mut self) -> &mut [f32] {
        match &mut self.backing {
            Backing::Heap(v) => v,
            #[cfg(all(unix, not(miri)))]
            Backing::Map { map, len } => bytemuck::cast_slice_mut(&mut map[..*len * 4]),
        }
    }
}

impl AsRef<[f32]> for Values {
    fn as_ref(&self) -> &[f32] {
        self
    }
}

impl AsMut<[f32]> for Values {
    fn as_mut(&mut self) -> &mut [f32] {
        self
    }
}

impl Default for Values {
    /// No values.
    fn default() -> Self {
        Values::from(Vec::new())
    }
}

impl From<Vec<f32>> for Values {
    fn from(v: Vec<f32>) -> Self {
        Values { backing: Backing::Heap(v) }
    }
}

impl From<Values> for Vec<f32> {
    fn from(v: Values) -> Self {
        v.into_vec()
    }
}

/// The values, as `[f32]` prints them (so a `Values` prints as the `Vec` it replaces).
impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Element-wise f32 equality, as for slices (a NaN equals nothing).
impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        **self == **other
    }
}

impl PartialEq<[f32]> for Values {
    fn eq(&self, other: &[f32]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<f32>> for Values {
    fn eq(&self, other: &Vec<f32>) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(v: &Values) -> bool {
        !matches!(v.backing, Backing::Heap(_))
    }

    /// Values cross threads as a `Vec` does (`dequantize_parallel` writes one from several).
    const _: () = {
        const fn send_sync<T: Send + Sync>() {}
        send_sync::<Values>()
    };

    #[test]
    fn small_values_are_a_zeroed_vec() {
        // (Under Miri, which takes minutes per megabyte, without the one just below the map.)
        let below = if cfg!(miri) { 1 } else { Values::MAP_MIN_BYTES / 4 - 1 };
        for len in [0, 1, 1000, below] {
            let v = Values::zeroed(len).unwrap();
            assert!(!mapped(&v), "{len}");
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|x| x.to_bits() == 0), "{len}");
            assert_eq!(v.as_bytes().len(), 4 * len);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "megabytes")]
    fn big_values_are_mapped_zeros() {
        for len in [Values::MAP_MIN_BYTES / 4, (Values::MAP_MIN_BYTES / 4) * 3 + 5] {
            let mut v = Values::zeroed(len).unwrap();
            assert_eq!(mapped(&v), cfg!(unix), "{len}");
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|x| x.to_bits() == 0), "{len}");
            v[0] = 1.0;
            v[len - 1] = -2.5;
            let bytes = v.as_bytes();
            assert_eq!(bytes.len(), 4 * len);
            assert_eq!(bytes[..4], 1f32.to_ne_bytes());
            assert_eq!(bytes[4 * len - 4..], (-2.5f32).to_ne_bytes());
            let copy = v.to_vec();
            let back = v.into_vec();
            assert_eq!(back, copy);
            assert_eq!((back[0], back[len - 1], back.len()), (1.0, -2.5, len));
        }
    }

    #[test]
    fn vec_round_trip_keeps_the_vec() {
        let v: Vec<f32> = (0..100).map(|i| i as f32 / 3.0).collect();
        let ptr = v.as_ptr();
        let values = Values::from(v.clone());
        assert_eq!(values, v);
        assert_eq!(format!("{values:?}"), format!("{v:?}"));
        let back = values.into_vec();
        assert_eq!(back, v);
        let values = Values::from(back);
        let back: Vec<f32> = values.into();
        assert_ne!(back.as_ptr(), ptr); // `v.clone()` above, not `v`, was moved in
        assert_eq!(back, v);
        assert_eq!(Values::default().len(), 0);
    }

    #[test]
    fn impossible_sizes_are_alloc_errors() {
        let e = Values::zeroed(usize::MAX).unwrap_err();
        assert_eq!(e, DequantError::Alloc { bytes: (usize::MAX as u64).saturating_mul(4) });
        assert_eq!(e.code(), "quants::dequant::alloc");
        assert!(!e.help().is_empty());
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri aborts on an allocation it cannot make")]
    fn refused_allocations_are_alloc_errors() {
        // 4 * len fits in usize, but no system maps or allocates 2^61 bytes.
        let len = usize::MAX / 8;
        let e = Values::zeroed(len).unwrap_err();
        assert_eq!(e, DequantError::Alloc { bytes: len as u64 * 4 });
        assert_eq!(e.to_string(), format!("could not allocate {} bytes for the values", len * 4));
    }
}
