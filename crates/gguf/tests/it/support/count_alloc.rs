//! A counting global allocator for tests: live bytes, peak live bytes and the number of
//! allocation calls, per thread.
//!
//! Install it in a test binary and wrap the code to measure in [`measure`]:
//!
//! ```ignore
//! mod support {
//!     pub(crate) mod count_alloc;
//! }
//! use support::count_alloc::{CountingAlloc, measure};
//!
//! #[global_allocator]
//! static ALLOC: CountingAlloc = CountingAlloc;
//!
//! let (result, stats) = measure(|| sipllm_gguf::parse(&bytes));
//! assert!(stats.peak_bytes < 1 << 20);
//! ```
//!
//! The counters are thread-local and only run inside [`measure`], so tests running in parallel
//! threads never see each other's allocations, and neither do the test harness's own. The
//! module is self-contained (std only) so that any test file can include it.
//!
//! This is the only `unsafe` in the crate's tests: [`GlobalAlloc`] is an unsafe trait. Every
//! method forwards its arguments unchanged to [`System`] and then updates plain counters.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator: [`System`] plus thread-local counters.
#[derive(Debug)]
pub(crate) struct CountingAlloc;

/// What one [`measure`] call saw on its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct AllocStats {
    /// Highest number of live bytes allocated during the measurement (bytes allocated before
    /// it and freed during it are not subtracted below zero).
    pub(crate) peak_bytes: u64,
    /// Number of allocation calls (`alloc`, `alloc_zeroed` and `realloc`).
    pub(crate) allocations: u64,
    /// Sum of the sizes requested by those calls.
    pub(crate) total_bytes: u64,
    /// Live bytes at the end of the measurement (allocated during it and not freed).
    pub(crate) live_bytes: i64,
}

#[derive(Clone, Copy)]
struct Counters {
    active: bool,
    current: i64,
    peak: i64,
    allocations: u64,
    total: u64,
}

const IDLE: Counters = Counters { active: false, current: 0, peak: 0, allocations: 0, total: 0 };

thread_local! {
    // `const` initialisation and a `Copy` type without `Drop`: reading it never allocates and
    // it is never destroyed, so the allocator may touch it at any time.
    static COUNTERS: Cell<Counters> = const { Cell::new(IDLE) };
}

/// Records an allocation of `new` bytes (0 for a pure free) that replaces `old` bytes.
fn record(new: usize, old: usize, is_alloc: bool) {
    let _ = COUNTERS.try_with(|c| {
        let mut s = c.get();
        if !s.active {
            return;
        }
        s.current += new as i64 - old as i64;
        s.peak = s.peak.max(s.current);
        if is_alloc {
            s.allocations += 1;
            s.total += new as u64;
        }
        c.set(s);
    });
}

// SAFETY: every method forwards to `System`, which upholds the `GlobalAlloc` contract; the
// counting only reads and writes a thread-local `Cell` and never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract; forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            record(layout.size(), 0, true);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            record(layout.size(), 0, true);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract; `ptr` came from
        // `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) };
        record(0, layout.size(), false);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract; forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            record(new_size, layout.size(), true);
        }
        p
    }
}

/// Resets the counting when dropped, also when the measured code panics.
struct Stop;

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = COUNTERS.try_with(|c| {
            let mut s = c.get();
            s.active = false;
            c.set(s);
        });
    }
}

/// Runs `f` on this thread and reports the allocations it made. Nested calls are not
/// supported (the inner one resets the counters).
pub(crate) fn measure<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    COUNTERS.with(|c| c.set(Counters { active: true, ..IDLE }));
    let stop = Stop;
    let r = f();
    drop(stop);
    let s = COUNTERS.with(Cell::get);
    let stats = AllocStats {
        peak_bytes: s.peak.max(0) as u64,
        allocations: s.allocations,
        total_bytes: s.total,
        live_bytes: s.current,
    };
    (r, stats)
}

/// True when [`CountingAlloc`] is this binary's global allocator (otherwise [`measure`] sees
/// nothing, and every bound asserted with it would pass vacuously).
pub(crate) fn is_installed() -> bool {
    let (b, stats) = measure(|| std::hint::black_box(Box::new([0u8; 64])));
    drop(b);
    stats.allocations == 1 && stats.peak_bytes == 64
}
