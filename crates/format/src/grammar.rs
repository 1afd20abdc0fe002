//! The nom plumbing both formats' grammars are written with.
//!
//! Every parser of a format grammar is a *streaming* parser over `&[u8]`: when its input ends
//! early it returns `Incomplete` with the number of bytes still missing, which the decoder
//! turns into its `NeedMore` event. A parser that fails for another reason returns
//! `nom::Err::Failure` carrying the format's error kind and the input position of the
//! offending field ([`PErr`]); [`lift`] turns that position into an absolute offset and the
//! field tags ([`field`]) into the error's [`Path`].

use nom::error::ParseError;
use nom::{IResult, Parser};

use crate::finding::{Finding, Kind};
use crate::path::{Path, PathSeg};

/// The parse error carried through nom: where (a suffix of the input), what (`kind`, a
/// format's error kind) and in which field.
///
/// `kind: None` is a plain grammar mismatch, which neither format's grammar produces (every
/// field is a fixed-size number or a length-prefixed byte string); it exists for nom's trait
/// and becomes [`Misuse::misuse`].
#[derive(Debug)]
pub struct PErr<'a, K> {
    /// The input at the offending field.
    pub at: &'a [u8],
    /// What is wrong.
    pub kind: Option<K>,
    /// Length of the offending field, for the error's byte range.
    pub len: u64,
    /// The field of the enclosing item, if known.
    pub field: Option<PathSeg>,
}

impl<'a, K> PErr<'a, K> {
    /// A failure of `kind` about the `len` bytes at the start of `at`.
    pub fn fail(at: &'a [u8], len: u64, kind: K) -> nom::Err<PErr<'a, K>> {
        nom::Err::Failure(PErr { at, kind: Some(kind), len, field: None })
    }
}

impl<'a, K> ParseError<&'a [u8]> for PErr<'a, K> {
    fn from_error_kind(input: &'a [u8], _kind: nom::error::ErrorKind) -> Self {
        PErr { at: input, kind: None, len: 0, field: None }
    }

    fn append(_input: &'a [u8], _kind: nom::error::ErrorKind, other: Self) -> Self {
        // Keep the innermost error: it has the most precise position.
        other
    }
}

/// A grammar parser's result.
pub type PResult<'a, T, K> = IResult<&'a [u8], T, PErr<'a, K>>;

/// An error kind with a "the decoder was misused" variant, for the grammar mismatches nom's
/// trait can express but neither grammar produces.
pub trait Misuse: Kind {
    /// The kind for a misuse, with its reason.
    fn misuse(reason: &'static str) -> Self;
}

/// Tags errors from `parser` with the field they occurred in (unless an inner parser already
/// named a more precise one).
pub fn field<'a, O, K>(
    seg: PathSeg,
    mut parser: impl Parser<&'a [u8], Output = O, Error = PErr<'a, K>>,
) -> impl Parser<&'a [u8], Output = O, Error = PErr<'a, K>> {
    move |i: &'a [u8]| {
        parser.parse(i).map_err(|e| {
            e.map(|mut pe| {
                if pe.field.is_none() {
                    pe.field = Some(seg.clone());
                }
                pe
            })
        })
    }
}

/// `count` bytes, or `Incomplete` with exactly the number missing.
#[inline]
pub fn bytes_at<K>(count: u64, i: &[u8]) -> PResult<'_, &[u8], K> {
    match usize::try_from(count) {
        Ok(n) => match i.split_at_checked(n) {
            Some((taken, rest)) => Ok((rest, taken)),
            None => Err(incomplete(n - i.len())),
        },
        // More than the address space: it can never be present.
        Err(_) => Err(nom::Err::Incomplete(nom::Needed::Unknown)),
    }
}

/// [`bytes_at`] as a combinator.
pub fn bytes<'a, K>(count: u64) -> impl Parser<&'a [u8], Output = &'a [u8], Error = PErr<'a, K>> {
    move |i: &'a [u8]| bytes_at(count, i)
}

/// `Incomplete` with `missing` bytes (at least one).
pub fn incomplete<'a, K>(missing: usize) -> nom::Err<PErr<'a, K>> {
    match std::num::NonZeroUsize::new(missing) {
        Some(n) => nom::Err::Incomplete(nom::Needed::Size(n)),
        None => nom::Err::Incomplete(nom::Needed::Unknown),
    }
}

/// Absolute offset of `sub` (a subslice of `buf`) in `buf`.
#[inline]
pub fn offset_in(buf: &[u8], sub: &[u8]) -> u64 {
    (sub.as_ptr() as usize).saturating_sub(buf.as_ptr() as usize) as u64
}

/// The [`Span`](crate::Span) of `sub` (a subslice of `buf`) in `buf`.
#[inline]
pub fn span_in(buf: &[u8], sub: &[u8]) -> crate::Span {
    crate::Span::new(offset_in(buf, sub), sub.len() as u64)
}

/// A parse result lifted out of nom: a value with the remaining input, or "need more".
#[derive(Debug)]
pub enum Got<'b, T> {
    /// The value, and the input after it.
    Value(&'b [u8], T),
    /// At least this many more bytes are needed.
    Need(u64),
}

/// Lifts a grammar result over `buf` into a [`Got`] or a [`Finding`] at `path` (plus the
/// failing field, if the grammar named one).
#[inline]
pub fn lift<'b, T, K: Misuse>(
    buf: &'b [u8],
    res: PResult<'b, T, K>,
    path: impl FnOnce() -> Path,
) -> Result<Got<'b, T>, Finding<K>> {
    match res {
        Ok((rest, v)) => Ok(Got::Value(rest, v)),
        Err(nom::Err::Incomplete(nom::Needed::Size(n))) => Ok(Got::Need(n.get() as u64)),
        Err(nom::Err::Incomplete(nom::Needed::Unknown)) => Ok(Got::Need(1)),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(to_finding(buf, e, path())),
    }
}

/// The finding for a grammar failure over `buf`, at `path` plus the failing field.
pub fn to_finding<K: Misuse>(buf: &[u8], e: PErr<'_, K>, mut path: Path) -> Finding<K> {
    if let Some(seg) = e.field {
        path.push(seg);
    }
    let kind = e.kind.unwrap_or_else(|| K::misuse("grammar mismatch"));
    Finding::new(kind, offset_in(buf, e.at), e.len, path)
}

/// Unwraps a [`Got`] inside a decoder step, returning the format's `NeedMore` event from the
/// enclosing function when bytes are missing: `got!(Event, lift(..))`.
#[macro_export]
macro_rules! got {
    ($event:ident, $e:expr) => {
        match $e? {
            $crate::grammar::Got::Value(rest, v) => (rest, v),
            $crate::grammar::Got::Need(n) => return Ok($event::NeedMore { needed: n }),
        }
    };
}
