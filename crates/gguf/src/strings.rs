//! The string-array hot loop: the elements of a vocabulary, walked and validated.
//!
//! Why it is hand-tuned, and here in one place: a Llama-3 header is two string arrays of
//! 128k and 280k elements, so this loop *is* the parse. It calls the grammar's plain parser
//! functions ([`checked_string_at`]) rather than combinators (those did not inline here), lets
//! the speculative walk ([`walk::strings`]) take the bulk, and validates UTF-8 per segment with
//! one SIMD pass instead of once per string. It reports what it found; the decoder turns that
//! into events, paths and the profile's verdict.

use crate::grammar::{self, Encoding, PErr, checked_string_at, offset_in};
use crate::options::Limits;
use crate::walk;

/// What [`walk_strings`] found.
pub(crate) enum Walked<'b> {
    /// Every element `buf` holds is consumed: the array now ends `next` elements in (of its
    /// declared count) at offset `pos`. `need`: the next element needs this many more bytes;
    /// `None`: the array is complete.
    Progress { next: u64, pos: u64, need: Option<u64> },
    /// Element `elem` broke the grammar (a limit).
    Failed { elem: u64, err: PErr<'b> },
    /// Element `elem`, at `pos` with the bytes `s`, is not UTF-8; the elements before it are
    /// valid.
    Invalid { elem: u64, pos: u64, s: &'b [u8] },
}

/// The index and contents of the first element of a run of (already parsed) string elements
/// that is not valid UTF-8.
///
/// The first element is checked on its own: its length field may not be ASCII (see
/// [`walk_strings`]), and a big-endian one ends with the length's low byte, which a pass over
/// both could read as one character with the string's first byte. Then one SIMD pass says
/// where the rest first fails; only the element there is checked on its own, and when it is
/// valid (a length field that is not ASCII) the pass resumes after it.
fn first_invalid_string(run: &[u8], enc: Encoding) -> Option<(u64, &[u8])> {
    let (mut i, first) = grammar::string_at(enc, run).ok()?;
    if std::str::from_utf8(first).is_err() {
        return Some((0, first));
    }
    let mut k = 1;
    loop {
        // Offsets from here: the failing sequence starts `bad` bytes in.
        let bad = simdutf8::compat::from_utf8(i).err()?.valid_up_to();
        let mut walked = 0;
        loop {
            let (rest, s) = grammar::string_at(enc, i).ok()?;
            walked += i.len() - rest.len();
            i = rest;
            k += 1;
            if walked > bad {
                if std::str::from_utf8(s).is_err() {
                    return Some((k - 1, s));
                }
                break;
            }
        }
    }
}

/// Consumes the complete string elements of an array that `buf` holds from `pos` on, element
/// `next` of `len`; `check`: validate UTF-8.
///
/// Most elements are walked by the speculative fast path ([`walk`]); this loop walks the ones
/// it leaves (long strings, the array's last few hundred, anything wrong) and alone reports
/// problems and missing bytes.
///
/// UTF-8 is validated per *segment* of elements with one SIMD pass over the segment's bytes,
/// length fields included: a segment ends before, and the next starts after, every length
/// field that is not ASCII (a long string's: 130 is the byte 0x82). That is exact: ASCII bytes
/// are character boundaries, so a segment is valid iff each string in it is. The fast path
/// only walks strings of at most 127 bytes, whose length fields are ASCII, so segments are as
/// long as long strings are rare.
pub(crate) fn walk_strings<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: &Limits,
    check: bool,
    pos: u64,
    start: u64,
    len: u64,
) -> Walked<'b> {
    let run = usize::try_from(pos).ok().and_then(|p| buf.get(p..)).unwrap_or_default();
    let mut i = run;
    let mut next = start;
    // The open segment starts at `seg` (a length field that is ASCII, or a string's bytes); to
    // find its invalid element, walk from element `seg_elem`, whose length field starts at
    // `seg_walk`. A segment is validated when it closes, while its bytes are in cache.
    let (mut seg, mut seg_walk, mut seg_elem) = (run, run, start);
    // Whether `seg` up to `end` is valid; if not, the first invalid element there.
    let invalid_in = |seg: &[u8], seg_walk: &[u8], seg_elem: u64, end: &[u8]| {
        let from = offset_in(buf, seg) as usize;
        let to = offset_in(buf, end) as usize;
        if buf.get(from..to).is_none_or(|b| simdutf8::basic::from_utf8(b).is_ok()) {
            return None;
        }
        let region = seg_walk.get(..seg_walk.len() - end.len()).unwrap_or_default();
        first_invalid_string(region, enc).map(|(k, _)| seg_elem + k)
    };
    // Elements this loop walks before it tries the fast path again, after the fast path walked
    // little: when it is of no use (frequent long strings, an array's tail), asking it after
    // every element would cost more than it saves.
    let mut pause = 0u32;
    let mut problem = None;
    let need = loop {
        // The fast path walks the bulk of a long array without reporting anything; it stops
        // before any element this loop might have something to say about, and this loop walks
        // that one and hands back.
        if enc.wide && pause == 0 {
            // What it walks must also end inside the header-size limit.
            let room = limits.max_header_bytes.saturating_sub(offset_in(buf, i));
            let fast_run = i.get(..usize::try_from(room).unwrap_or(usize::MAX)).unwrap_or(i);
            let walked = walk::strings(enc.endian, fast_run, len - next, limits.max_string_len);
            i = i.get(walked.bytes..).unwrap_or_default();
            next += walked.elements;
            if walked.elements < walk::PROBE {
                pause = 16;
            }
        }
        pause = pause.saturating_sub(1);
        if next == len {
            break None;
        }
        match checked_string_at(buf, enc, limits, i) {
            Ok((rest, s)) => {
                let ascii_len = i.get(..enc.len_size()).is_some_and(|f| f.is_ascii());
                if check && !ascii_len {
                    if let Some(elem) = invalid_in(seg, seg_walk, seg_elem, i) {
                        problem = Some(Err(elem));
                        break None;
                    }
                    (seg, seg_walk, seg_elem) = (s, i, next);
                }
                i = rest;
                next += 1;
            }
            Err(nom::Err::Incomplete(nom::Needed::Size(n))) => break Some(n.get() as u64),
            Err(nom::Err::Incomplete(nom::Needed::Unknown)) => break Some(1),
            Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                problem = Some(Ok((next, e)));
                break None;
            }
        }
    };
    // An invalid string in the last segment comes before any problem found after it, so it is
    // reported first whatever the chunking.
    if check
        && !matches!(problem, Some(Err(_)))
        && let Some(elem) = invalid_in(seg, seg_walk, seg_elem, i)
    {
        problem = Some(Err(elem));
    }
    match problem {
        None => Walked::Progress { next, pos: offset_in(buf, i), need },
        Some(Ok((elem, err))) => Walked::Failed { elem, err },
        Some(Err(elem)) => {
            // Re-walk to the bad element: consume the good ones before it.
            let mut at = run;
            for _ in start..elem {
                at = grammar::string_at(enc, at).map_or(at, |(rest, _)| rest);
            }
            let s = grammar::string_at(enc, at).map_or(&[][..], |(_, s)| s);
            Walked::Invalid { elem, pos: offset_in(buf, at), s }
        }
    }
}
