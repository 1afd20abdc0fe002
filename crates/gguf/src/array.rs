//! Array values whose elements are still arriving: a stack of frames (one per open nested
//! array), consumed element by element as bytes arrive, so a vocabulary split over many
//! chunks is scanned once. String elements go to the hot loop ([`crate::strings`]); nested
//! heads and bool elements through the profile's rules.

use nom::Parser;
use smallvec::SmallVec;

use sipllm_format::grammar::{Got, lift, offset_in, span_in, to_finding};

use crate::ast::{ArrayHead, Span};
use crate::error::{Error, Path, PathSeg, kv_path};
use crate::grammar::{self, Encoding};
use crate::options::{ParseOptions, Profile};
use crate::rules::{self, Findings};
use crate::strings::{self, Walked};
use crate::value_type::ValueType;

fn rest(buf: &[u8], pos: u64) -> &[u8] {
    usize::try_from(pos).ok().and_then(|p| buf.get(p..)).unwrap_or_default()
}

/// A metadata array whose elements are still arriving.
#[derive(Debug)]
pub(crate) struct PendingArray {
    pub(crate) index: usize,
    pub(crate) kv_start: u64,
    pub(crate) key: Span,
    pub(crate) head: ArrayHead,
    pub(crate) payload_start: u64,
    /// Innermost array last; each frame counts its consumed elements.
    frames: SmallVec<[Frame; 4]>,
    /// Lenient parsing warns once per array and kind, so a broken 100k-element array cannot
    /// allocate 100k warnings.
    warned_utf8: bool,
    warned_bool: bool,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    elem_type: ValueType,
    len: u64,
    next: u64,
}

impl PendingArray {
    /// The array of pair `index` (which starts at `kv_start`, with its key at `key`), its
    /// head read, its payload starting at `payload_start`.
    pub(crate) fn new(
        index: usize,
        kv_start: u64,
        key: Span,
        head: ArrayHead,
        payload_start: u64,
    ) -> PendingArray {
        let mut frames = SmallVec::new();
        frames.push(Frame { elem_type: head.elem_type, len: head.len, next: 0 });
        PendingArray {
            index,
            kv_start,
            key,
            head,
            payload_start,
            frames,
            warned_utf8: false,
            warned_bool: false,
        }
    }

    /// Under llama-cpp neither UTF-8 nor bools are checked, so there is nothing to warn about.
    pub(crate) fn unchecked(mut self, profile: Profile) -> PendingArray {
        let unchecked = profile == Profile::LlamaCpp;
        (self.warned_utf8, self.warned_bool) = (unchecked, unchecked);
        self
    }

    /// The truncation error's path: the pair, and each open array's next element.
    pub(crate) fn eof_path(&self, buf: &[u8]) -> Path {
        let mut path = kv_path(buf, self.index, Some(self.key));
        for f in &self.frames {
            path.push(PathSeg::Element(f.next));
        }
        path
    }

    /// The truncation path had the input ended at `at` (at or after `pos`, where this array
    /// stands) with the bytes in between never read: what [`eof_path`](Self::eof_path) gives
    /// after a read to `at`, which consumes every whole fixed-width element before `at` (a
    /// fixed-width array asks for all the bytes it lacks at once). `None` when a read would
    /// judge those bytes: a strict profile's bool elements.
    pub(crate) fn eof_path_at(
        &self,
        buf: &[u8],
        pos: u64,
        at: u64,
        profile: Profile,
    ) -> Option<Path> {
        let mut path = kv_path(buf, self.index, Some(self.key));
        let last = self.frames.len().saturating_sub(1);
        for (d, f) in self.frames.iter().enumerate() {
            let mut next = f.next;
            if d == last
                && let Some(size) = f.elem_type.fixed_size()
            {
                if f.elem_type == ValueType::Bool && profile == Profile::Strict {
                    return None;
                }
                let whole = at.saturating_sub(pos) / (size as u64).max(1);
                next = next.saturating_add(whole).min(f.len);
            }
            path.push(PathSeg::Element(next));
        }
        Some(path)
    }

    /// The path of the innermost element being read, `extra` elements on.
    fn element_path(&self, buf: &[u8], extra: u64) -> Path {
        let mut path = kv_path(buf, self.index, Some(self.key));
        let last = self.frames.len().saturating_sub(1);
        for (d, f) in self.frames.iter().enumerate() {
            path.push(PathSeg::Element(if d == last { f.next + extra } else { f.next }));
        }
        path
    }

    /// Consumes as many elements as `buf` holds from `pos` on, advancing `pos`. `Some(n)`:
    /// `n` more bytes needed; `None`: the array is complete.
    pub(crate) fn advance(
        &mut self,
        buf: &[u8],
        enc: Encoding,
        opts: &ParseOptions,
        pos: &mut u64,
        out: &mut Findings,
    ) -> Result<Option<u64>, Error> {
        let (limits, p) = (opts.limits, self);
        loop {
            let Some(frame) = p.frames.last().copied() else { return Ok(None) };
            if frame.next == frame.len {
                p.frames.pop();
                if let Some(parent) = p.frames.last_mut() {
                    parent.next += 1;
                }
                continue;
            }
            let set_next = |p: &mut PendingArray, next| {
                if let Some(f) = p.frames.last_mut() {
                    f.next = next;
                }
            };
            match frame.elem_type {
                ValueType::String => {
                    let check = !p.warned_utf8;
                    match strings::walk_strings(
                        buf, enc, &limits, check, *pos, frame.next, frame.len,
                    ) {
                        Walked::Progress { next, pos: end, need } => {
                            set_next(p, next);
                            *pos = end;
                            if need.is_some() {
                                return Ok(need);
                            }
                        }
                        Walked::Failed { elem, err } => {
                            set_next(p, elem);
                            return Err(to_finding(buf, err, p.element_path(buf, 0)));
                        }
                        Walked::Invalid { elem, pos: end, s } => {
                            set_next(p, elem);
                            *pos = end;
                            p.warned_utf8 = true;
                            let path = || p.element_path(buf, 0);
                            rules::string_value(out, s, span_in(buf, s), path)?;
                            // Lenient: warned once; the rest is walked without checking.
                        }
                    }
                }
                ValueType::Array => {
                    let at = *pos;
                    let head = grammar::nested_array_head(enc).parse(rest(buf, *pos));
                    let (rest, (elem_type, len)) = match lift(buf, head, || p.element_path(buf, 0))?
                    {
                        Got::Value(rest, v) => (rest, v),
                        Got::Need(n) => return Ok(Some(n)),
                    };
                    let (depth, payload_start) = (p.frames.len() as u32, offset_in(buf, rest));
                    let profile = opts.profile;
                    rules::nested_array(
                        profile,
                        enc,
                        &limits,
                        depth,
                        elem_type,
                        len,
                        at,
                        payload_start,
                    )
                    .map_err(|(k, at, n)| Error::new(k, at, n, p.element_path(buf, 0)))?;
                    *pos = payload_start;
                    p.frames.push(Frame { elem_type, len, next: 0 });
                }
                fixed => {
                    let size = fixed.fixed_size().unwrap_or(1) as u64;
                    let avail = (buf.len() as u64).saturating_sub(*pos);
                    let remaining = frame.len - frame.next;
                    let take = remaining.min(avail / size);
                    if fixed == ValueType::Bool && !p.warned_bool {
                        let bytes = rest(buf, *pos).get(..take as usize).unwrap_or_default();
                        let path = |j| p.element_path(buf, j);
                        p.warned_bool = rules::bool_elements(out, bytes, *pos, path)?;
                    }
                    *pos += take * size;
                    set_next(p, frame.next + take);
                    if take < remaining {
                        // Exactly the bytes this array still lacks.
                        let lacking = (remaining * size).saturating_sub(avail);
                        return Ok(Some(lacking.max(1)));
                    }
                }
            }
        }
    }
}
