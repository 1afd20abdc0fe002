//! The vocabulary fast path: a speculative walk over a run of length-prefixed strings.
//!
//! Why it exists: a string array ends where its last element ends, and each element's place
//! depends on the length just before it, so a plain walk is a chain of dependent loads: one
//! load latency per string, whatever the core's width (408,403 of them in a Llama-3
//! vocabulary and its merges). The walk below splits a window of the run into
//! [`LANES`] lanes, starts every lane but the first at a *guessed* element boundary, and steps
//! the lanes in lockstep so their loads overlap.
//!
//! Guesses are never trusted: a lane counts only when the lane before it, itself trusted,
//! landed exactly on its start (the first lane starts where the caller says an element
//! starts). A wrong guess costs only that lane's work; the answer is always a prefix of what
//! a plain walk would walk. The walk is conservative: it stops before any
//! element it does not like (see [`element_end`]) and leaves the last few hundred elements of
//! an array to the decoder's own loop, which alone reports errors and missing bytes.

use crate::header::Endian;

/// Lanes walked at once: enough to hide the load latency behind the other lanes' work.
const LANES: usize = 4;
/// Bytes one round spans (the lanes split it).
const WINDOW: usize = 64 << 10;
/// Below this the round's fixed costs are not worth it; the decoder's loop walks the rest.
const MIN_WINDOW: usize = 4 << 10;
/// Elements the first lane walks alone before a round guesses: when long strings are frequent,
/// a round would often end early, and this keeps its cost that of a plain walk.
pub(crate) const PROBE: u64 = 64;
/// How far past a guess point to look for something that looks like a length field.
const GUESS_SCAN: usize = 64;
/// The longest string the fast path walks. Up to 127 every byte of the length field is ASCII,
/// which lets the decoder validate a whole run (lengths included) as UTF-8 in one pass: an
/// ASCII byte can neither continue nor be continued by a multi-byte sequence. Real
/// vocabularies hold a few dozen longer tokens at most; the decoder's loop walks those.
const MAX_FAST_LEN: u64 = 127;

/// What [`strings`] walked: a prefix of the run holding exactly `elements` whole strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Walked {
    pub(crate) elements: u64,
    pub(crate) bytes: usize,
}

/// Walks whole string elements (64-bit length, then bytes) from the start of `run`, which must
/// be an element boundary: at most `max_elements` of them, each no longer than `max_len` (nor
/// [`MAX_FAST_LEN`]) and wholly inside `run`. Stops at the first element it rejects, or up to
/// [`MIN_WINDOW`] / 8 elements short of where a plain walk would.
pub(crate) fn strings(endian: Endian, run: &[u8], max_elements: u64, max_len: u64) -> Walked {
    match endian {
        Endian::Little => walk(run, max_elements, max_len, u64::from_le_bytes),
        Endian::Big => walk(run, max_elements, max_len, u64::from_be_bytes),
    }
}

#[inline(always)]
fn walk(run: &[u8], max_elements: u64, max_len: u64, read: fn([u8; 8]) -> u64) -> Walked {
    let mut done = Walked::default();
    loop {
        // Every element takes at least 8 bytes, so no more than `left` elements can start in
        // a window of at most 8 · `left` bytes: a round never walks past the array's end.
        let left = max_elements.saturating_sub(done.elements);
        let window = usize::try_from(left.saturating_mul(8))
            .unwrap_or(usize::MAX)
            .min(WINDOW)
            .min(run.len().saturating_sub(done.bytes));
        if window < MIN_WINDOW {
            return done;
        }
        let (elements, end) = round(run, done.bytes, done.bytes + window, max_len, read);
        if elements == 0 {
            return done;
        }
        done.elements += elements;
        done.bytes = end;
    }
}

/// One round over the elements starting in `start..end`; returns how many it verified and
/// where the last of them ends.
#[inline(always)]
fn round(
    run: &[u8],
    start: usize,
    end: usize,
    max_len: u64,
    read: fn([u8; 8]) -> u64,
) -> (u64, usize) {
    // The first lane goes a few elements alone (see PROBE).
    let mut first = start;
    let mut probed = 0;
    while probed < PROBE && first < end {
        match element_end(run, first, max_len, read) {
            Some(next) => {
                first = next;
                probed += 1;
            }
            None => return (probed, first),
        }
    }
    let mut starts = [end; LANES];
    starts[0] = first;
    let mut lanes = 1;
    for k in 1..LANES {
        let point = first + end.saturating_sub(first) / LANES * k;
        if let Some(q) = guess(run, point, end, read)
            && q > starts[lanes - 1]
        {
            starts[lanes] = q;
            lanes += 1;
        }
    }
    // Lane k walks until it reaches the next lane's start (the last lane: `end`). Unused
    // lanes start at `end` and never step.
    let mut stop = [end; LANES];
    stop[..lanes - 1].copy_from_slice(&starts[1..lanes]);
    let mut pos = starts;
    let mut steps = [0u64; LANES];
    steps[0] = probed;
    // Every lane steps while all are short of their stops and accept their next element: no
    // per-lane branches, so the lanes' loads overlap best.
    'lockstep: while (0..LANES).all(|k| pos[k] < stop[k]) {
        let mut next = [0usize; LANES];
        for k in 0..LANES {
            match element_end(run, pos[k], max_len, read) {
                Some(n) => next[k] = n,
                None => break 'lockstep,
            }
        }
        pos = next;
        for s in &mut steps {
            *s += 1;
        }
    }
    // Then the lanes still going, each until its stop or an element it rejects.
    loop {
        let mut moved = false;
        for k in 0..LANES {
            if pos[k] < stop[k] {
                match element_end(run, pos[k], max_len, read) {
                    Some(next) => {
                        pos[k] = next;
                        steps[k] += 1;
                        moved = true;
                    }
                    None => {
                        // This lane and the ones after it stop here: the later ones can no
                        // longer be trusted.
                        for (s, p) in stop.iter_mut().zip(&pos).skip(k) {
                            *s = *p;
                        }
                    }
                }
            }
        }
        if !moved {
            break;
        }
    }
    // Trust lanes in order while each landed exactly on the next one's start (a lane that
    // rejected an element stopped short of it).
    let mut elements = 0;
    let mut k = 0;
    loop {
        elements += steps[k];
        if k + 1 == lanes || pos[k] != starts[k + 1] {
            return (elements, pos[k]);
        }
        k += 1;
    }
}

/// Where the element at `at` ends, if it is whole and no longer than `max_len` nor
/// [`MAX_FAST_LEN`].
#[inline(always)]
fn element_end(run: &[u8], at: usize, max_len: u64, read: fn([u8; 8]) -> u64) -> Option<usize> {
    let len = len_at(run, at, read)?;
    if len > max_len.min(MAX_FAST_LEN) {
        return None;
    }
    // No overflow: `at` is at most `run.len()`, and `len` is below 128.
    let next = at + 8 + len as usize;
    (next <= run.len()).then_some(next)
}

/// The first place at or after `point` (and before `end`) that looks like the length field of
/// a short string: 1 to [`MAX_FAST_LEN`]. Text rarely holds seven zero bytes in a row, so in a real
/// vocabulary this is almost always an element boundary; when it is not, verification says so.
fn guess(run: &[u8], point: usize, end: usize, read: fn([u8; 8]) -> u64) -> Option<usize> {
    (point..end.min(point.saturating_add(GUESS_SCAN)))
        .find(|&q| len_at(run, q, read).is_some_and(|len| (1..=MAX_FAST_LEN).contains(&len)))
}

/// The 64-bit length field at `at`, if all of it is inside `run`.
#[inline(always)]
fn len_at(run: &[u8], at: usize, read: fn([u8; 8]) -> u64) -> Option<u64> {
    Some(read(*run.get(at..)?.first_chunk::<8>()?))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The plain walk the fast one must agree with: same rules, one element at a time.
    fn plain(endian: Endian, run: &[u8], max_elements: u64, max_len: u64) -> Walked {
        let read = match endian {
            Endian::Little => u64::from_le_bytes,
            Endian::Big => u64::from_be_bytes,
        };
        let mut w = Walked::default();
        while w.elements < max_elements {
            match element_end(run, w.bytes, max_len, read) {
                Some(next) => {
                    w.bytes = next;
                    w.elements += 1;
                }
                None => break,
            }
        }
        w
    }

    /// Where the plain walk is after `n` elements.
    fn plain_after(endian: Endian, run: &[u8], n: u64) -> usize {
        plain(endian, run, n, u64::MAX >> 1).bytes
    }

    fn encode(endian: Endian, strings: &[Vec<u8>], tail: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in strings {
            let len = s.len() as u64;
            out.extend_from_slice(&match endian {
                Endian::Little => len.to_le_bytes(),
                Endian::Big => len.to_be_bytes(),
            });
            out.extend_from_slice(s);
        }
        out.extend_from_slice(tail);
        out
    }

    /// Checks the contract against the plain walk: a prefix of it, short by less than
    /// `MIN_WINDOW / 8` elements.
    fn check(endian: Endian, run: &[u8], max_elements: u64, max_len: u64) -> Walked {
        let fast = strings(endian, run, max_elements, max_len);
        let slow = plain(endian, run, max_elements, max_len);
        assert!(fast.elements <= slow.elements, "{fast:?} walked past {slow:?}");
        assert_eq!(fast.bytes, plain_after(endian, run, fast.elements), "{fast:?} is not a prefix");
        assert!(
            slow.elements - fast.elements < (MIN_WINDOW / 8) as u64,
            "{fast:?} stopped too early: the plain walk reached {slow:?}"
        );
        fast
    }

    /// Elements per test array: many rounds natively, a few under Miri (which is slow, and
    /// finds nothing to check here beyond what the native run does: no `unsafe`).
    const N: usize = if cfg!(miri) { 3_000 } else { 20_000 };

    /// A vocabulary-like run: short strings, some multi-byte, counted exactly.
    fn vocabulary(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("tok{i}é{}", "x".repeat(i % 13)).into_bytes()).collect()
    }

    #[test]
    fn walks_a_whole_vocabulary_but_the_tail() {
        for endian in [Endian::Little, Endian::Big] {
            let strings = vocabulary(N);
            let run = encode(endian, &strings, b"");
            // `check` bounds the tail the decoder's loop is left with; here that is all that
            // remains, since every element is acceptable.
            let fast = check(endian, &run, strings.len() as u64, 1 << 20);
            assert!(fast.elements > (N - MIN_WINDOW / 8) as u64, "{fast:?}");
        }
    }

    #[test]
    fn never_counts_elements_past_the_array() {
        // The bytes after the array look just like more elements.
        let strings = vocabulary(N / 2);
        let run = encode(Endian::Little, &vocabulary(N), b"");
        let fast = check(Endian::Little, &run, strings.len() as u64, 1 << 20);
        assert!(fast.elements <= (N / 2) as u64);
    }

    #[test]
    fn stops_at_the_first_rejected_element() {
        let bad = N * 9 / 20;
        let mut strings = vocabulary(N);
        strings[bad] = vec![b'a'; 200]; // longer than the fast path walks
        let run = encode(Endian::Little, &strings, b"");
        assert_eq!(check(Endian::Little, &run, N as u64, 1 << 20).elements, bad as u64);
        strings[bad] = vec![b'a'; 100];
        let run = encode(Endian::Little, &strings, b"");
        assert_eq!(check(Endian::Little, &run, N as u64, 99).elements, bad as u64);
    }

    #[test]
    fn stops_before_an_incomplete_element() {
        let strings = vocabulary(N);
        let run = encode(Endian::Little, &strings, b"");
        let cut = &run[..run.len() - 3];
        let fast = check(Endian::Little, cut, N as u64, 1 << 20);
        assert!(fast.bytes <= cut.len());
    }

    #[test]
    fn false_boundaries_inside_strings_are_not_trusted() {
        // Every string holds what looks like a length field, so most guesses land inside one.
        let strings: Vec<Vec<u8>> = (0..N as u64)
            .map(|i| {
                let mut s = b"ab".to_vec();
                s.extend_from_slice(&(i % 100 + 1).to_le_bytes());
                s
            })
            .collect();
        let run = encode(Endian::Little, &strings, b"");
        check(Endian::Little, &run, strings.len() as u64, 1 << 20);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        #[cfg_attr(miri, ignore = "64 runs of up to 3,000 elements: an hour under Miri")]
        fn agrees_with_the_plain_walk(
            lens in prop::collection::vec(0usize..300, 0..3_000),
            fill in any::<u8>(),
            big_endian in any::<bool>(),
            max_elements_cut in 0usize..3_100,
            max_len in 0u64..400,
            truncate in 0usize..64,
        ) {
            let endian = if big_endian { Endian::Big } else { Endian::Little };
            // Contents repeat `fill`, so zero fills make every byte look like a length field.
            let strings: Vec<Vec<u8>> = lens.iter().map(|&n| vec![fill; n]).collect();
            let mut run = encode(endian, &strings, &[fill; 16]);
            run.truncate(run.len().saturating_sub(truncate));
            check(endian, &run, max_elements_cut as u64, max_len);
        }
    }
}
