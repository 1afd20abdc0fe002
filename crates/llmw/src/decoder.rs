//! The sans-I/O decoder: fed bytes, it parses one item per call (contract on [`Decoder`]).

use nom::Parser;
use smallvec::SmallVec;

use sipllm_gguf::{GgmlType, NameIndex, SizeError, align_up, tensor_nbytes};

use crate::ast::{Directory, Header, MetaInfo, TensorInfo, between, span};
use crate::error::{Error, ErrorKind, Path, PathSeg, StrField};
use crate::grammar::{self, PErr, PResult};
use crate::options::{Limits, ParseOptions};
use crate::value::MetaType;
use crate::{ALIGNMENT, MAGIC, Span};

/// What one [`Decoder::decode`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Bytes consumed by this call (the position advanced by this much). May be non-zero with
    /// [`Event::NeedMore`]: the complete elements of a string array are consumed as they
    /// arrive.
    pub consumed: u64,
    /// What happened.
    pub event: Event,
}

/// The item a [`Decoder::decode`] call completed, or what it is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The current item needs at least `needed` more bytes than `buf` holds.
    NeedMore {
        /// Bytes still missing, at least.
        needed: u64,
    },
    /// The fixed header was parsed.
    Header,
    /// Metadata entry `index` was parsed.
    Meta {
        /// Its index.
        index: u32,
    },
    /// Tensor info `index` was parsed.
    TensorInfo {
        /// Its index.
        index: u32,
    },
    /// The header, directory and padding are complete and the layout is valid; call
    /// [`Decoder::finish`].
    Done,
}

/// A chunk-fed `.llmw` header decoder.
///
/// # Contract
///
/// **`buf` is every byte of the file received so far, starting at offset 0; between calls the
/// caller may only append to it.** Each [`Decoder::decode`] call parses at most one item (the
/// fixed header, one metadata entry, one tensor info, or the padding before the data section)
/// starting at [`Decoder::position`], and returns a [`Step`]: how many bytes it consumed and
/// what happened. [`Event::NeedMore`] says how many more bytes the current item needs, at
/// least; append them (or more) and call again. When the input has really ended, call
/// [`Decoder::end_of_input`] for the truncation error.
///
/// This is the contract of `sipllm_gguf::Decoder`, so one driver loop serves both formats.
///
/// The decoder keeps no borrow of `buf` between calls, so the caller may grow (reallocate) it
/// freely. Looking back into `buf` is what lets duplicate keys and names be detected without
/// copying them, and what lets the final [`Directory`] be spans only.
///
/// Chunked and whole decoding agree by construction: every decision depends on the bytes,
/// never on where a chunk ended. A string array (a vocabulary) is consumed incrementally, so
/// one split over many chunks is scanned once, not restarted; every limit is checked when a
/// field's declared end becomes known, before the decoder asks for its bytes — so a declared
/// length can never make a caller buffer more than [`Limits::max_header_bytes`].
///
/// # Validation order
///
/// Items are validated in file order and each field as soon as it is read, so the error
/// reported is the first problem in the file: header (magic, version, counts), then each
/// metadata entry (key, tag, value), then each tensor info (name, dtype, `n_dims`, dims and
/// size arithmetic, offset alignment and order, stored size), then the padding, then the
/// checks that need the whole directory (data section start, file bounds).
///
/// [`Limits::max_header_bytes`]: crate::Limits::max_header_bytes
#[derive(Debug)]
pub struct Decoder {
    opts: ParseOptions,
    state: State,
    pos: u64,
    last_needed: u64,
    header: Option<Header>,
    meta: Vec<MetaInfo>,
    tensors: Vec<TensorInfo>,
    keys: NameIndex,
    names: NameIndex,
    directory_end: u64,
    data_start: u64,
}

#[derive(Debug)]
enum State {
    Header,
    Meta,
    Strings(PendingStrings),
    Tensor,
    Padding,
    Done,
    Failed,
}

/// A string array whose elements are still arriving.
#[derive(Debug, Clone, Copy)]
struct PendingStrings {
    index: u32,
    start: u64,
    key: Span,
    len: u32,
    next: u32,
    payload_start: u64,
}

/// A parse result lifted out of nom: a value with the remaining input, or "need more".
enum Got<'b, T> {
    Value(&'b [u8], T),
    Need(u64),
}

/// Absolute offset of `sub` (a subslice of `buf`) in `buf`.
fn offset_in(buf: &[u8], sub: &[u8]) -> u64 {
    (sub.as_ptr() as usize).saturating_sub(buf.as_ptr() as usize) as u64
}

fn lift<'b, T>(
    buf: &'b [u8],
    res: PResult<'b, T>,
    path: impl FnOnce() -> Path,
) -> Result<Got<'b, T>, Error> {
    match res {
        Ok((rest, v)) => Ok(Got::Value(rest, v)),
        Err(nom::Err::Incomplete(nom::Needed::Size(n))) => Ok(Got::Need(n.get() as u64)),
        Err(nom::Err::Incomplete(nom::Needed::Unknown)) => Ok(Got::Need(1)),
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => Err(perr_to_error(buf, e, path())),
    }
}

fn perr_to_error(buf: &[u8], e: PErr<'_>, path: Path) -> Error {
    let kind = e.kind.unwrap_or(ErrorKind::Misuse { reason: "grammar mismatch" });
    Error::new(kind, offset_in(buf, e.at), e.len, path)
}

/// Unwraps a [`Got`], returning `NeedMore` from the enclosing function when bytes are missing.
macro_rules! got {
    ($e:expr) => {
        match $e? {
            Got::Value(rest, v) => (rest, v),
            Got::Need(n) => return Ok(Event::NeedMore { needed: n }),
        }
    };
}

/// A string whose declared length is checked against the limits before its bytes are
/// requested: the string limit, and the header limit on where the string would end. Errors
/// point at the 4-byte length field.
fn checked_string<'b>(
    buf: &'b [u8],
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    move |i: &'b [u8]| {
        let (rest, len) = grammar::u32_().parse(i)?;
        if len > limits.max_string_len {
            return Err(PErr::fail(
                i,
                4,
                ErrorKind::StringTooLong { len, max: limits.max_string_len },
            ));
        }
        if offset_in(buf, rest).saturating_add(len.into()) > limits.max_header_bytes {
            return Err(PErr::fail(
                i,
                4,
                ErrorKind::HeaderTooLarge { max: limits.max_header_bytes },
            ));
        }
        grammar::bytes(len.into()).parse(rest)
    }
}

/// The UTF-8 check of a string at absolute `at`: the error points at the first invalid byte.
fn check_utf8(
    s: &[u8],
    at: u64,
    field: StrField,
    path: impl FnOnce() -> Path,
) -> Result<(), Error> {
    if simdutf8::basic::from_utf8(s).is_ok() {
        return Ok(());
    }
    let valid_up_to = std::str::from_utf8(s).err().map_or(0, |e| e.valid_up_to()) as u64;
    Err(Error::new(
        ErrorKind::InvalidUtf8 { field, valid_up_to },
        at.saturating_add(valid_up_to),
        1,
        path(),
    ))
}

/// Item counts are at most `u32::MAX` (they come from `u32` header fields).
fn index_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

impl Decoder {
    /// A decoder with the given options.
    pub fn new(opts: ParseOptions) -> Decoder {
        Decoder {
            opts,
            state: State::Header,
            pos: 0,
            last_needed: 0,
            header: None,
            meta: Vec::new(),
            tensors: Vec::new(),
            keys: NameIndex::default(),
            names: NameIndex::default(),
            directory_end: 0,
            data_start: 0,
        }
    }

    /// The options in use.
    pub fn options(&self) -> &ParseOptions {
        &self.opts
    }

    /// Absolute offset of the next byte to parse.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The fixed header, once parsed.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The tensor infos parsed so far.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The metadata entries parsed so far.
    pub fn meta(&self) -> &[MetaInfo] {
        &self.meta
    }

    /// True once [`Event::Done`] was returned.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Parses the next item from `buf` (every byte received so far, from offset 0).
    ///
    /// After an error the decoder is poisoned: further calls return
    /// [`ErrorKind::Misuse`]. After [`Event::Done`], calls return `Done` again.
    pub fn decode(&mut self, buf: &[u8]) -> Result<Step, Error> {
        let start = self.pos;
        if (buf.len() as u64) < self.pos {
            self.state = State::Failed;
            return Err(Error::new(
                ErrorKind::Misuse { reason: "the buffer shrank between calls" },
                self.pos,
                0,
                Path::root(),
            ));
        }
        let res = match self.state {
            State::Header => self.step_header(buf),
            State::Meta => self.step_meta(buf),
            State::Strings(p) => self.step_strings(buf, p),
            State::Tensor => self.step_tensor(buf),
            State::Padding => self.step_padding(buf),
            State::Done => Ok(Event::Done),
            State::Failed => {
                return Err(Error::new(
                    ErrorKind::Misuse { reason: "decode called after an error" },
                    self.pos,
                    0,
                    Path::root(),
                ));
            }
        };
        match res {
            Ok(event) => {
                if let Event::NeedMore { needed } = event {
                    self.last_needed = needed;
                }
                Ok(Step { consumed: self.pos.saturating_sub(start), event })
            }
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    /// The error for input that ended at `buf.len()` bytes while the decoder still needed
    /// more: [`ErrorKind::UnexpectedEof`] at the end of the input, with the path of the item
    /// being parsed. `buf` is the final buffer (used to name the key or tensor).
    pub fn end_of_input(&self, buf: &[u8]) -> Error {
        let needed = self.last_needed.max(1);
        let path = match &self.state {
            State::Header => Path::root().with(PathSeg::Header(match buf.len() {
                0..4 => "magic",
                4..8 => "version",
                8..12 => "tensor_count",
                _ => "meta_count",
            })),
            State::Meta => Self::meta_path(buf, index_u32(self.meta.len()), self.peek(buf)),
            State::Strings(p) => {
                Self::meta_path(buf, p.index, Some(p.key)).with(PathSeg::Element(p.next.into()))
            }
            State::Tensor => Self::tensor_path(buf, index_u32(self.tensors.len()), self.peek(buf)),
            State::Padding => Path::root().with(PathSeg::Padding),
            State::Done | State::Failed => {
                return Error::new(
                    ErrorKind::Misuse { reason: "end_of_input called when no input was needed" },
                    buf.len() as u64,
                    0,
                    Path::root(),
                );
            }
        };
        Error::new(ErrorKind::UnexpectedEof { needed }, buf.len() as u64, 0, path)
    }

    /// The decoded directory. Only after [`Event::Done`].
    pub fn finish(self) -> Result<Directory, Error> {
        let (State::Done, Some(header)) = (&self.state, self.header) else {
            return Err(Error::new(
                ErrorKind::Misuse { reason: "finish called before Done" },
                self.pos,
                0,
                Path::root(),
            ));
        };
        Ok(Directory {
            header,
            meta: self.meta,
            tensors: self.tensors,
            keys: self.keys,
            names: self.names,
            directory_end: self.directory_end,
            data_start: self.data_start,
        })
    }

    // ----- helpers -------------------------------------------------------------------------

    fn rest<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        usize::try_from(self.pos).ok().and_then(|p| buf.get(p..)).unwrap_or_default()
    }

    /// The string at the current position, if its bytes are all present (for error paths).
    fn peek(&self, buf: &[u8]) -> Option<Span> {
        let (_, s) = grammar::string().parse(self.rest(buf)).ok()?;
        Some(span(offset_in(buf, s), s.len() as u64))
    }

    fn name_of(buf: &[u8], s: Option<Span>) -> Option<Box<str>> {
        s.and_then(|s| s.slice(buf)).map(sipllm_gguf::shown_name)
    }

    fn meta_path(buf: &[u8], index: u32, key: Option<Span>) -> Path {
        Path::root().with(PathSeg::Metadata { index: index.into(), key: Self::name_of(buf, key) })
    }

    fn tensor_path(buf: &[u8], index: u32, name: Option<Span>) -> Path {
        Path::root().with(PathSeg::Tensor { index: index.into(), name: Self::name_of(buf, name) })
    }

    /// Where the decoder goes after finishing an item.
    fn next_section(&self) -> State {
        let Some(h) = self.header else { return State::Failed };
        if (self.meta.len() as u64) < u64::from(h.meta_count) {
            State::Meta
        } else if (self.tensors.len() as u64) < u64::from(h.tensor_count) {
            State::Tensor
        } else {
            State::Padding
        }
    }

    // ----- header --------------------------------------------------------------------------

    fn step_header(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let field = |name| move || Path::root().with(PathSeg::Header(name));
        let limits = self.opts.limits;
        let i = self.rest(buf);
        let (rest, magic) = got!(lift(buf, grammar::magic().parse(i), field("magic")));
        if magic != MAGIC {
            return Err(Error::new(ErrorKind::BadMagic { found: magic }, 0, 4, field("magic")()));
        }
        let (rest, version) = got!(lift(buf, grammar::u32_().parse(rest), field("version")));
        if !(1..=2).contains(&version) {
            return Err(Error::new(
                ErrorKind::UnsupportedVersion { version },
                4,
                4,
                field("version")(),
            ));
        }
        let (rest, tensor_count) =
            got!(lift(buf, grammar::u32_().parse(rest), field("tensor_count")));
        if tensor_count > limits.max_tensor_count {
            return Err(Error::new(
                ErrorKind::TooManyTensors { count: tensor_count, max: limits.max_tensor_count },
                8,
                4,
                field("tensor_count")(),
            ));
        }
        let (rest, meta_count) = got!(lift(buf, grammar::u32_().parse(rest), field("meta_count")));
        if meta_count > limits.max_meta_count {
            return Err(Error::new(
                ErrorKind::TooManyMeta { count: meta_count, max: limits.max_meta_count },
                12,
                4,
                field("meta_count")(),
            ));
        }
        self.header = Some(Header { version, tensor_count, meta_count });
        self.pos = offset_in(buf, rest);
        self.state = self.next_section();
        Ok(Event::Header)
    }

    // ----- metadata ------------------------------------------------------------------------

    fn check_array_len(&self, len: u32, at: u64, path: impl FnOnce() -> Path) -> Result<(), Error> {
        let max = self.opts.limits.max_array_len;
        if len > max {
            return Err(Error::new(ErrorKind::ArrayTooLong { len, max }, at, 4, path()));
        }
        Ok(())
    }

    fn step_meta(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let index = index_u32(self.meta.len());
        let limits = self.opts.limits;
        let version = self.header.map_or(1, |h| h.version);
        let start = self.pos;
        let i = self.rest(buf);

        let (rest, key) = got!(lift(buf, checked_string(buf, limits).parse(i), || {
            Self::meta_path(buf, index, None).with(PathSeg::Field("key"))
        }));
        let key_span = span(offset_in(buf, key), key.len() as u64);
        let path = || Self::meta_path(buf, index, Some(key_span));
        let key_path = || path().with(PathSeg::Field("key"));
        if key.is_empty() {
            return Err(Error::new(ErrorKind::EmptyKey, start, 4, key_path()));
        }
        check_utf8(key, key_span.offset, StrField::Key, key_path)?;
        let meta = &self.meta;
        let resolve =
            |i: u32| meta.get(i as usize).and_then(|m| m.key.slice(buf)).unwrap_or_default();
        if let Some(first) = self.keys.find(key, resolve) {
            return Err(Error::new(
                ErrorKind::DuplicateKey { first },
                key_span.offset,
                key_span.len,
                key_path(),
            ));
        }

        let tag_at = offset_in(buf, rest);
        let tag_path = || path().with(PathSeg::Field("tag"));
        let (rest, tag) = got!(lift(buf, grammar::u8_().parse(rest), tag_path));
        let Some(meta_type) = MetaType::from_tag(tag) else {
            return Err(Error::new(ErrorKind::UnknownTag { tag }, tag_at, 1, tag_path()));
        };
        if meta_type.min_version() > version {
            return Err(Error::new(ErrorKind::ArrayInVersion1 { tag }, tag_at, 1, tag_path()));
        }

        let value_at = offset_in(buf, rest);
        let value_path = || path().with(PathSeg::Field("value"));
        let count_path = || path().with(PathSeg::Field("count"));
        let (rest, value, count) = match meta_type {
            MetaType::I64 | MetaType::F64 => {
                let (rest, _) = got!(lift(buf, grammar::bytes(8).parse(rest), value_path));
                (rest, span(value_at, 8), 1)
            }
            MetaType::Str => {
                let (rest, s) =
                    got!(lift(buf, checked_string(buf, limits).parse(rest), value_path));
                let s_span = span(offset_in(buf, s), s.len() as u64);
                check_utf8(s, s_span.offset, StrField::Value, value_path)?;
                (rest, s_span, 1)
            }
            MetaType::I64Array | MetaType::F64Array => {
                let (payload, len) = got!(lift(buf, grammar::u32_().parse(rest), count_path));
                self.check_array_len(len, value_at, count_path)?;
                let payload_start = offset_in(buf, payload);
                let size = u64::from(len) * 8;
                if payload_start.saturating_add(size) > limits.max_header_bytes {
                    return Err(Error::new(
                        ErrorKind::HeaderTooLarge { max: limits.max_header_bytes },
                        value_at,
                        4,
                        count_path(),
                    ));
                }
                let (rest, _) = got!(lift(buf, grammar::bytes(size).parse(payload), value_path));
                (rest, span(payload_start, size), len)
            }
            MetaType::StrArray => {
                let (payload, len) = got!(lift(buf, grammar::u32_().parse(rest), count_path));
                self.check_array_len(len, value_at, count_path)?;
                // The array head is committed now; its elements are consumed as they arrive.
                let pending = PendingStrings {
                    index,
                    start,
                    key: key_span,
                    len,
                    next: 0,
                    payload_start: offset_in(buf, payload),
                };
                self.pos = pending.payload_start;
                return self.step_strings(buf, pending);
            }
        };
        self.commit_meta(buf, start, key_span, meta_type, value, count, offset_in(buf, rest));
        Ok(Event::Meta { index })
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_meta(
        &mut self,
        buf: &[u8],
        start: u64,
        key: Span,
        meta_type: MetaType,
        value: Span,
        count: u32,
        end: u64,
    ) {
        let index = index_u32(self.meta.len());
        self.meta.push(MetaInfo { span: between(start, end), key, meta_type, value, count });
        let meta = &self.meta;
        let resolve =
            |i: u32| meta.get(i as usize).and_then(|m| m.key.slice(buf)).unwrap_or_default();
        self.keys.insert(key.slice(buf).unwrap_or_default(), index, resolve);
        self.pos = end;
        self.state = self.next_section();
    }

    /// Consumes the complete string elements `buf` holds: the hot loop of a vocabulary.
    fn step_strings(&mut self, buf: &[u8], mut p: PendingStrings) -> Result<Event, Error> {
        let limits = self.opts.limits;
        let mut i = self.rest(buf);
        let elem_path = |p: &PendingStrings| {
            Self::meta_path(buf, p.index, Some(p.key)).with(PathSeg::Element(p.next.into()))
        };
        while p.next < p.len {
            match checked_string(buf, limits).parse(i) {
                Ok((rest, s)) => {
                    check_utf8(s, offset_in(buf, s), StrField::Value, || elem_path(&p))?;
                    i = rest;
                    p.next += 1;
                }
                Err(nom::Err::Incomplete(needed)) => {
                    self.pos = offset_in(buf, i);
                    self.state = State::Strings(p);
                    let needed = match needed {
                        nom::Needed::Size(n) => n.get() as u64,
                        nom::Needed::Unknown => 1,
                    };
                    return Ok(Event::NeedMore { needed });
                }
                Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                    return Err(perr_to_error(buf, e, elem_path(&p)));
                }
            }
        }
        let end = offset_in(buf, i);
        let value = between(p.payload_start, end);
        self.commit_meta(buf, p.start, p.key, MetaType::StrArray, value, p.len, end);
        Ok(Event::Meta { index: p.index })
    }

    // ----- tensor infos --------------------------------------------------------------------

    fn step_tensor(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let index = index_u32(self.tensors.len());
        let limits = self.opts.limits;
        let start = self.pos;
        let i = self.rest(buf);

        let (rest, name) = got!(lift(buf, checked_string(buf, limits).parse(i), || {
            Self::tensor_path(buf, index, None).with(PathSeg::Field("name"))
        }));
        let name_span = span(offset_in(buf, name), name.len() as u64);
        let path = || Self::tensor_path(buf, index, Some(name_span));
        let field = |f: &'static str| move || path().with(PathSeg::Field(f));
        if name.is_empty() {
            return Err(Error::new(ErrorKind::EmptyTensorName, start, 4, field("name")()));
        }
        check_utf8(name, name_span.offset, StrField::TensorName, field("name"))?;
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        if let Some(first) = self.names.find(name, resolve) {
            return Err(Error::new(
                ErrorKind::DuplicateTensor { first },
                name_span.offset,
                name_span.len,
                field("name")(),
            ));
        }

        let dtype_at = offset_in(buf, rest);
        let (rest, code) = got!(lift(buf, grammar::u32_().parse(rest), field("dtype")));
        let dtype = GgmlType::from_code(code);
        match dtype {
            GgmlType::Unknown(code) => {
                let kind = ErrorKind::UnknownDtype { code };
                return Err(Error::new(kind, dtype_at, 4, field("dtype")()));
            }
            GgmlType::Removed(code) => {
                let kind = ErrorKind::RemovedDtype { code, name: dtype.name() };
                return Err(Error::new(kind, dtype_at, 4, field("dtype")()));
            }
            _ => {}
        }

        let n_dims_at = offset_in(buf, rest);
        let (rest, n_dims) = got!(lift(buf, grammar::u32_().parse(rest), field("n_dims")));
        if !(1..=4).contains(&n_dims) {
            let kind = ErrorKind::BadDimCount { n_dims };
            return Err(Error::new(kind, n_dims_at, 4, field("n_dims")()));
        }
        let dims_at = offset_in(buf, rest);
        let (rest, dims) = got!(lift(
            buf,
            nom::multi::fold(
                n_dims as usize,
                grammar::u64_(),
                SmallVec::<[u64; 4]>::new,
                |mut acc, d| {
                    acc.push(d);
                    acc
                },
            )
            .parse(rest),
            field("dims")
        ));
        let dim_at = |j: usize| dims_at + 8 * j as u64;
        let dim_path = |j: usize| path().with(PathSeg::RowMajorDim(j as u32));
        if let Some(j) = dims.iter().position(|&d| d == 0) {
            return Err(Error::new(ErrorKind::ZeroDim, dim_at(j), 8, dim_path(j)));
        }
        let gguf_dims: SmallVec<[u64; 4]> = dims.iter().rev().copied().collect();
        let dims_len = 8 * dims.len() as u64;
        let expected = match tensor_nbytes(dtype, &gguf_dims) {
            Ok(n) => n,
            Err(SizeError::NotBlockMultiple { ne0, block_size, ty }) => {
                let last = dims.len().saturating_sub(1);
                let kind = ErrorKind::NotBlockMultiple { row_len: ne0, block_size, dtype: ty };
                return Err(Error::new(kind, dim_at(last), 8, dim_path(last)));
            }
            Err(SizeError::ElementCountOverflow) => {
                let kind = ErrorKind::ElementCountOverflow;
                return Err(Error::new(kind, dims_at, dims_len, field("dims")()));
            }
            Err(SizeError::UnsizedType(_)) => {
                // Removed and unknown codes were rejected above.
                let kind = ErrorKind::UnknownDtype { code };
                return Err(Error::new(kind, dtype_at, 4, field("dtype")()));
            }
            // `SizeError` is non-exhaustive: anything else is a size that cannot be stored.
            Err(_) => {
                let kind = ErrorKind::ByteSizeOverflow;
                return Err(Error::new(kind, dims_at, dims_len, field("dims")()));
            }
        };

        let offset_at = offset_in(buf, rest);
        let (rest, offset) = got!(lift(buf, grammar::u64_().parse(rest), field("offset")));
        let offset_err = |kind| Error::new(kind, offset_at, 8, field("offset")());
        if !offset.is_multiple_of(ALIGNMENT) {
            return Err(offset_err(ErrorKind::Misaligned { offset }));
        }
        if let Some(prev) = self.tensors.last() {
            let previous_end = prev.offset.saturating_add(prev.nbytes);
            if offset < prev.offset {
                return Err(offset_err(ErrorKind::OutOfOrder { offset, previous: prev.offset }));
            }
            if offset < previous_end {
                return Err(offset_err(ErrorKind::Overlap { offset, previous_end }));
            }
        }

        let size_at = offset_in(buf, rest);
        let (rest, declared) = got!(lift(buf, grammar::u64_().parse(rest), field("size")));
        if declared != expected {
            let kind = ErrorKind::SizeMismatch { declared, expected };
            return Err(Error::new(kind, size_at, 8, field("size")()));
        }
        if offset.checked_add(declared).is_none() {
            return Err(offset_err(ErrorKind::OffsetOverflow));
        }

        let end = offset_in(buf, rest);
        self.tensors.push(TensorInfo {
            span: between(start, end),
            name: name_span,
            dtype,
            dims,
            offset,
            nbytes: declared,
        });
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        self.names.insert(name, index, resolve);
        self.pos = end;
        self.state = self.next_section();
        Ok(Event::TensorInfo { index })
    }

    // ----- padding and layout --------------------------------------------------------------

    fn step_padding(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let directory_end = self.pos;
        let path = || Path::root().with(PathSeg::Padding);
        let data_start = align_up(directory_end, ALIGNMENT)
            .ok_or_else(|| Error::new(ErrorKind::OffsetOverflow, directory_end, 0, path()))?;
        if !self.tensors.is_empty() {
            // The padding must be present and zero: a reader seeks past it to the data.
            let max = self.opts.limits.max_header_bytes;
            if data_start > max {
                let len = data_start - directory_end;
                return Err(Error::new(
                    ErrorKind::HeaderTooLarge { max },
                    directory_end,
                    len,
                    path(),
                ));
            }
            if (buf.len() as u64) < data_start {
                return Ok(Event::NeedMore { needed: data_start - buf.len() as u64 });
            }
            let pad = between(directory_end, data_start).slice(buf).unwrap_or_default();
            if let Some((j, &value)) = pad.iter().enumerate().find(|(_, b)| **b != 0) {
                let kind = ErrorKind::NonZeroPadding { value };
                return Err(Error::new(kind, directory_end + j as u64, 1, path()));
            }
            let offset_path = |i: usize, t: &TensorInfo| {
                Self::tensor_path(buf, index_u32(i), Some(t.name)).with(PathSeg::Field("offset"))
            };
            // Offsets increase in directory order, so the first tensor starts lowest.
            if let Some(first) = self.tensors.first()
                && first.offset < data_start
            {
                let kind = ErrorKind::BeforeDataSection { offset: first.offset, data_start };
                return Err(Error::new(kind, first.offset_field(), 8, offset_path(0, first)));
            }
            if let Some(file_size) = self.opts.file_size {
                for (i, t) in self.tensors.iter().enumerate() {
                    let end = t.offset.saturating_add(t.nbytes);
                    if end > file_size {
                        let kind = ErrorKind::OutOfBounds { end, file_size };
                        return Err(Error::new(kind, t.offset_field(), 8, offset_path(i, t)));
                    }
                }
            }
            self.pos = data_start;
        }
        self.directory_end = directory_end;
        self.data_start = data_start;
        self.state = State::Done;
        Ok(Event::Done)
    }
}
