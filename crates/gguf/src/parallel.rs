//! UTF-8 validation of long string arrays on a second thread, for a whole-slice parse.
//!
//! The strict parse of a vocabulary does two things of about equal cost, one after the other:
//! it walks the array (to find where it ends) and validates the bytes walked as UTF-8. The
//! walk is inherently serial, but validation is not, and it need not wait for the walk: the
//! bytes after an array's start are there in a whole-slice parse, and whatever lies past the
//! array's end is simply validated for nothing. So a helper thread validates the slice in
//! [`PIECE`]-sized pieces, from the first long array on, while the decoder walks; when the
//! decoder asks whether a segment of elements is valid, it validates the pieces the helper
//! has not claimed yet itself, from the segment's end backwards, and waits briefly for the
//! ones in progress (validating them itself if the helper is slow, say descheduled).
//!
//! The answer is exactly that of one pass over the range asked about: the pieces inside it
//! and its two ends validated directly tile it, and valid UTF-8 is closed under
//! concatenation; each cut is moved past continuation bytes ([`Pieces::bound`]), so where the
//! range is valid it falls between characters, and where a cut cannot be moved (four
//! continuation bytes in a row) the range is invalid anyway. Results, errors and warnings
//! are therefore those of the one-thread parse, which `tests/string_arrays.rs` and the unit
//! tests below check.
//!
//! Only [`crate::decode`] (the whole-slice path) uses this, and only when the options allow
//! it; the chunk-fed [`crate::Decoder`] sees a growing buffer, so it never validates ahead.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::thread::Scope;

use crate::ast::Directory;
use crate::error::Error;
use crate::options::ParseOptions;

/// Bytes validated per claim: small enough that waiting for a piece in progress is short
/// (about 3 µs), large enough that claiming costs nothing next to validating.
pub(crate) const PIECE: usize = 64 * 1024;

/// A string array must have at least this many elements left for the decoder to hand its
/// validation to the helper: below it, starting the helper costs more than it saves.
pub const PARALLEL_MIN_ELEMENTS: u64 = 65_536;

/// Spins [`Pieces::wait`] gives the helper to finish a piece before validating it itself:
/// about 12 µs on this project's machine, four times what a piece takes.
const WAIT_SPINS: u32 = 512;

/// A piece's state.
const UNCLAIMED: u8 = 0;
const BUSY: u8 = 1;
const VALID: u8 = 2;
const INVALID: u8 = 3;

/// The slice cut into pieces, each validated at most once, by whichever thread claims it.
pub(crate) struct Pieces<'a> {
    buf: &'a [u8],
    state: Box<[AtomicU8]>,
    /// The next piece the helper looks at.
    next: AtomicUsize,
    stop: AtomicBool,
}

impl<'a> Pieces<'a> {
    /// Pieces over `buf` up to `cap` bytes (no string array ends beyond the header limit).
    fn new(buf: &'a [u8], cap: u64) -> Pieces<'a> {
        let len = usize::try_from(cap).map_or(buf.len(), |cap| cap.min(buf.len()));
        let state = (0..len / PIECE).map(|_| AtomicU8::new(UNCLAIMED)).collect();
        Pieces { buf, state, next: AtomicUsize::new(0), stop: AtomicBool::new(false) }
    }

    /// Where piece `k` starts: `k * PIECE`, moved past up to three continuation bytes, so that
    /// in valid UTF-8 every cut falls between characters.
    fn bound(&self, k: usize) -> usize {
        let mut at = k.saturating_mul(PIECE).min(self.buf.len());
        for _ in 0..3 {
            if self.buf.get(at).is_some_and(|&b| b & 0xC0 == 0x80) {
                at += 1;
            }
        }
        at
    }

    fn is_valid_range(&self, from: usize, to: usize) -> bool {
        self.buf.get(from..to).is_none_or(|b| simdutf8::basic::from_utf8(b).is_ok())
    }

    /// Validates piece `k` if nobody has claimed it; `None` if somebody had.
    fn claim(&self, k: usize) -> Option<bool> {
        let state = self.state.get(k)?;
        state.compare_exchange(UNCLAIMED, BUSY, Ordering::Acquire, Ordering::Relaxed).ok()?;
        let valid = self.is_valid_range(self.bound(k), self.bound(k + 1));
        state.store(if valid { VALID } else { INVALID }, Ordering::Release);
        Some(valid)
    }

    /// The helper thread: validates pieces in order until there are none or it is told to stop.
    fn help(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            if k >= self.state.len() {
                break;
            }
            self.claim(k);
        }
    }

    /// A long string array's elements start at `at`: the helper need not look before it.
    pub(crate) fn begin(&self, at: usize) {
        self.next.fetch_max(at / PIECE, Ordering::Relaxed);
    }

    /// Whether `buf[from..to]` is valid UTF-8: exactly one pass's answer.
    pub(crate) fn is_valid(&self, from: usize, to: usize) -> bool {
        // The whole pieces inside the range: `first..last`.
        let first = from.div_ceil(PIECE);
        let mut last = (to / PIECE).min(self.state.len());
        while last > first && self.bound(last) > to {
            last -= 1;
        }
        if last <= first {
            return self.is_valid_range(from, to);
        }
        if !self.is_valid_range(from, self.bound(first))
            || !self.is_valid_range(self.bound(last), to)
        {
            return false;
        }
        // Take what the helper has not reached yet, from the far end towards it.
        for k in (first..last).rev() {
            if self.claim(k) == Some(false) {
                return false;
            }
        }
        (first..last).all(|k| self.wait(k))
    }

    /// Whether piece `k` is valid: the helper's answer if it comes within about the time a
    /// piece takes, else this thread's own. A helper that lost its core (a busy machine) must
    /// not hold the parse up: waiting for it cost up to milliseconds per piece.
    fn wait(&self, k: usize) -> bool {
        let Some(state) = self.state.get(k) else { return true };
        for _ in 0..WAIT_SPINS {
            match state.load(Ordering::Acquire) {
                VALID => return true,
                INVALID => return false,
                _ => std::hint::spin_loop(),
            }
        }
        self.is_valid_range(self.bound(k), self.bound(k + 1))
    }
}

/// What the decoder is lent during a whole-slice parse: the pieces, and a way to start the
/// helper thread the first time a long string array is met.
pub(crate) struct Parallel<'p, 'a> {
    pieces: &'p Pieces<'a>,
    start: &'p dyn Fn(),
}

impl Parallel<'_, '_> {
    /// A long string array's elements start at `at`: start the helper there (once) and return
    /// the pieces to ask about its segments.
    pub(crate) fn begin(&self, at: usize) -> &Pieces<'_> {
        self.pieces.begin(at);
        (self.start)();
        self.pieces
    }
}

/// [`crate::decode`] lending the decoder a helper thread.
pub(crate) fn decode(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    let pieces = Pieces::new(bytes, opts.limits.max_header_bytes);
    std::thread::scope(|scope: &Scope<'_, '_>| {
        let started = AtomicBool::new(false);
        let start = || {
            if !started.swap(true, Ordering::Relaxed) {
                // If no thread can be had (a target without threads, a process at its limit),
                // the decoder validates every piece itself.
                let _ = std::thread::Builder::new().spawn_scoped(scope, || pieces.help());
            }
        };
        let result =
            crate::decode_whole(bytes, opts, Some(&Parallel { pieces: &pieces, start: &start }));
        // Whatever the helper is validating now is past the last long array.
        pieces.stop.store(true, Ordering::Relaxed);
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Characters of every width, and bytes that are not UTF-8 on their own; runs of
    /// continuation bytes longer than a character allows.
    const UNITS: &[&[u8]] = &[
        b"a",
        b"\0",
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
        b"\x80",
        b"\xC3",
        b"\xFF",
        b"\x80\x80\x80\x80\x80",
    ];

    /// A buffer of a few pieces: mostly valid text of mixed widths, `bad_every` units in
    /// one not valid (or never).
    fn text(seed: u64, bad_every: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(5 * PIECE);
        let mut x = seed | 1;
        while out.len() < 4 * PIECE + 1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let unit = if bad_every > 0 && x.is_multiple_of(bad_every) {
                UNITS[5 + (x >> 32) as usize % 4]
            } else {
                UNITS[(x >> 32) as usize % 5]
            };
            out.extend_from_slice(unit);
        }
        out
    }

    fn check(buf: &[u8], ranges: &[(usize, usize)], helper: bool) -> Result<(), TestCaseError> {
        let pieces = Pieces::new(buf, u64::MAX);
        std::thread::scope(|s| {
            if helper {
                s.spawn(|| pieces.help());
            }
            for &(from, to) in ranges {
                let expected = std::str::from_utf8(&buf[from..to]).is_ok();
                prop_assert_eq!(pieces.is_valid(from, to), expected, "{}..{}", from, to);
            }
            pieces.stop.store(true, Ordering::Relaxed);
            Ok(())
        })
    }

    /// Fixed cases, with the helper thread, that Miri can run (proptest cannot there).
    #[test]
    fn is_valid_with_the_helper_is_a_single_pass() {
        let ranges = [(0, 5 * PIECE), (1, 3 * PIECE + 7), (PIECE - 1, 2 * PIECE + 1), (9, 9)];
        for (seed, bad_every) in [(1, 0), (2, 3_000)] {
            let buf = text(seed, bad_every);
            let ranges: Vec<_> = ranges.iter().map(|&(a, b)| (a, b.min(buf.len()))).collect();
            check(&buf, &ranges, true).unwrap();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Exactly one pass's answer, for any range, whoever validates which piece: the cuts
        /// fall between characters wherever the text is valid there.
        #[test]
        #[cfg_attr(miri, ignore = "proptest needs the file system; see the test above")]
        fn is_valid_is_exactly_a_single_pass(
            seed in any::<u64>(),
            bad_every in prop::sample::select(vec![0u64, 3_000, 200_000]),
            ranges in prop::collection::vec((0..5 * PIECE, 0..5 * PIECE), 1..6),
            helper in any::<bool>(),
        ) {
            let buf = text(seed, bad_every);
            let ranges: Vec<(usize, usize)> = ranges
                .into_iter()
                .map(|(a, b)| (a.min(b).min(buf.len()), a.max(b).min(buf.len())))
                .collect();
            check(&buf, &ranges, helper)?;
        }
    }

    /// Valid text with a character across every cut: every piece is valid on its own.
    #[test]
    fn cuts_move_past_continuation_bytes() {
        let buf = "é€😀".repeat(PIECE).into_bytes();
        let pieces = Pieces::new(&buf, u64::MAX);
        assert!(pieces.state.len() >= 8);
        for k in 0..pieces.state.len() {
            assert_eq!(pieces.claim(k), Some(true), "piece {k}");
            assert_eq!(pieces.claim(k), None, "claimed twice");
            assert_ne!(buf[pieces.bound(k)] & 0xC0, 0x80);
        }
        assert!(
            pieces.is_valid(1, buf.len() - 1)
                == std::str::from_utf8(&buf[1..buf.len() - 1]).is_ok()
        );
        assert!(pieces.is_valid(2, buf.len()));
    }

    /// Nothing past the cap (the header-size limit) is cut into pieces; the range there is
    /// validated directly.
    #[test]
    fn the_cap_bounds_the_pieces() {
        let buf = text(7, 0);
        let pieces = Pieces::new(&buf, 2 * PIECE as u64 + 5);
        assert_eq!(pieces.state.len(), 2);
        assert!(pieces.is_valid(0, buf.len()));
        let mut bad = buf.clone();
        let last = bad.len() - 1;
        bad[last] = 0xFF;
        assert!(!Pieces::new(&bad, 2 * PIECE as u64).is_valid(0, bad.len()));
    }
}
