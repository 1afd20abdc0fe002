//! Peak heap use of `GgufFile::open` on the Llama-3-shaped file, measured with a counting
//! global allocator: at most 1.25 × the header bytes + 1 MiB.
//!
//! This binary holds one test so nothing else allocates while it measures. It prints the
//! figures (`cargo test -p sipllm-streaming --test open_memory -- --nocapture`).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{LLAMA3_DATA_OFFSET, llama3_file};
use sipllm_streaming::{Backend, GgufFile, OpenOptions, WeightSource};

/// Counts live bytes and two peaks: `PEAK` (live bytes, a reallocation counting as its net
/// change, as glibc's `mremap` makes it for large blocks) and `PEAK_REALLOC` (the worst case
/// where a reallocation holds the old and new block at once).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static PEAK_REALLOC: AtomicUsize = AtomicUsize::new(0);

fn grew(live: usize, transient: usize) {
    PEAK.fetch_max(live, Ordering::Relaxed);
    PEAK_REALLOC.fetch_max(live.max(transient), Ordering::Relaxed);
}

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the counters
// are only statistics.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            grew(live, live);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let before = LIVE.load(Ordering::Relaxed);
            if new_size >= layout.size() {
                let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                grew(live, before + new_size);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn open_peak_heap_is_at_most_1_25_header_plus_1_mib() {
    let path = llama3_file();
    let header = LLAMA3_DATA_OFFSET as usize;
    let limit = header + header / 4 + (1 << 20);
    for backend in [Backend::Pread, Backend::Mmap] {
        let opts = OpenOptions::default().with_backend(backend);
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        PEAK_REALLOC.store(base, Ordering::Relaxed);

        let file = GgufFile::open(path, &opts).unwrap();

        let peak = PEAK.load(Ordering::Relaxed) - base;
        let peak_realloc = PEAK_REALLOC.load(Ordering::Relaxed) - base;
        let retained = LIVE.load(Ordering::Relaxed) - base;
        let stats = file.header_stats();
        eprintln!(
            "{}: header {header} B, read {} B in {} reads, buffer capacity {} B; heap: peak {} B \
             ({:.3} x header), retained {} B, peak counting realloc as old + new {} B ({:.3} x)",
            backend.name(),
            stats.bytes_read,
            stats.reads,
            stats.capacity,
            peak,
            peak as f64 / header as f64,
            retained,
            peak_realloc,
            peak_realloc as f64 / header as f64,
        );
        assert_eq!(file.tensors().len(), 291);
        assert!(peak <= limit, "{}: peak {peak} B > limit {limit} B", backend.name());
        assert!(retained <= peak);
        drop(file);
    }
}
