//! The machine's ceilings for an f32 output, in the same run as the kernels' figures: how
//! fast one and two threads can only *write* a 1 GB buffer (no input, no arithmetic), with
//! plain and with non-temporal stores, into a reused buffer and into fresh pages, and how fast
//! they can only *read* one (the input side: a kernel that reads B bytes per 4 bytes of
//! output cannot write more than 4/B times the read ceiling, even into a cached tile). A
//! kernel cannot beat the row that matches how it stores and reads; a goal above it is out of
//! reach on this machine whatever the code.

/// Bytes written per measurement: far past any cache.
const BYTES: usize = 1 << 30;

/// Plain 32-byte stores of a constant (not a byte pattern, so not turned into `memset`,
/// whose large-size path may itself store non-temporally).
#[inline(never)]
fn plain(dst: &mut [f32]) {
    for v in dst.iter_mut() {
        *v = 1.5;
    }
    std::hint::black_box(dst);
}

/// Reads every value (a wrapping sum of the bits, which vectorizes; no output), with 32-byte
/// loads where the CPU has them, as the kernels read.
#[inline(never)]
fn read(src: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        std::hint::black_box(unsafe { sum_avx2(src) });
        return;
    }
    std::hint::black_box(sum(src));
}

#[inline(always)]
fn sum(src: &[f32]) -> [u32; 32] {
    let (lines, _) = src.as_chunks::<32>();
    lines.iter().fold([0u32; 32], |mut s, l| {
        for (s, v) in s.iter_mut().zip(l) {
            *s = s.wrapping_add(v.to_bits());
        }
        s
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_avx2(src: &[f32]) -> [u32; 32] {
    sum(src)
}

/// Non-temporal 32-byte stores over the 64-byte-aligned middle of `dst`.
#[inline(never)]
fn streamed(dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        unsafe { streamed_avx(dst) };
        return;
    }
    plain(dst);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn streamed_avx(dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let head = ((dst.as_ptr() as usize).wrapping_neg() % 64 / 4).min(dst.len());
    let (a, rest) = dst.split_at_mut(head);
    a.fill(1.5);
    let (lines, tail) = rest.as_chunks_mut::<16>();
    let v = _mm256_set1_ps(1.5);
    for l in lines {
        // SAFETY: `l` is 16 writable f32 on a 64-byte boundary (the head was split off),
        // so both halves are 32-byte aligned as `_mm256_stream_ps` requires.
        unsafe {
            _mm256_stream_ps(l.as_mut_ptr(), v);
            _mm256_stream_ps(l.as_mut_ptr().add(8), v);
        }
    }
    tail.fill(1.5);
    _mm_sfence();
}

/// GB/s of `f` over `threads` threads splitting `dst` (wall time; median of 3).
fn rate(dst: &mut [f32], threads: usize, f: fn(&mut [f32])) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            split(dst, threads, f);
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (dst.len() * 4) as f64 / 1e9 / times[1]
}

fn split(dst: &mut [f32], threads: usize, f: fn(&mut [f32])) {
    let per = dst.len().div_ceil(threads);
    std::thread::scope(|s| {
        let mut parts = dst.chunks_mut(per);
        let first = parts.next();
        for p in parts {
            s.spawn(move || f(p));
        }
        if let Some(p) = first {
            f(p);
        }
    });
}

/// An anonymous mapping of `BYTES`, advised for huge pages or not, written once by `f` over
/// `threads` threads and unmapped: GB/s of the write including its page faults (median of 3).
fn fresh(huge: bool, threads: usize, f: fn(&mut [f32])) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let t = std::time::Instant::now();
            // SAFETY: a private anonymous mapping of BYTES, used only as the slice below
            // and unmapped before the next run; madvise is a hint on that range.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                if huge {
                    libc::madvise(p, BYTES, libc::MADV_HUGEPAGE);
                }
                split(std::slice::from_raw_parts_mut(p.cast(), BYTES / 4), threads, f);
                let e = t.elapsed().as_secs_f64();
                libc::munmap(p, BYTES);
                e
            }
        })
        .collect();
    times.sort_by(f64::total_cmp);
    BYTES as f64 / 1e9 / times[1]
}

/// Prints the ceilings (GB/s written or read), one line each.
pub fn report() {
    let mut buf = vec![0f32; BYTES / 4];
    plain(&mut buf);
    println!(
        "roofline: GB/s of a pure write of 1 GB (no input, no arithmetic) or a pure read, wall time, median of 3"
    );
    println!(
        "  reused buffer, plain stores:          1 thread {:6.1}  2 threads {:6.1}",
        rate(&mut buf, 1, plain),
        rate(&mut buf, 2, plain)
    );
    println!(
        "  reused buffer, non-temporal stores:   1 thread {:6.1}  2 threads {:6.1}",
        rate(&mut buf, 1, streamed),
        rate(&mut buf, 2, streamed)
    );
    println!(
        "  read of a 1 GB buffer (no output):    1 thread {:6.1}  2 threads {:6.1}",
        rate(&mut buf, 1, read),
        rate(&mut buf, 2, read)
    );
    drop(buf);
    println!(
        "  fresh 4 KiB pages, plain stores:      1 thread {:6.1}  2 threads {:6.1}",
        fresh(false, 1, plain),
        fresh(false, 2, plain)
    );
    println!(
        "  fresh huge-page-advised, plain:       1 thread {:6.1}  2 threads {:6.1}",
        fresh(true, 1, plain),
        fresh(true, 2, plain)
    );
}
