//! The sans-I/O decoder: the state machine that runs the grammar ([`crate::grammar`]) one
//! record at a time over the bytes received so far, applies the checks ([`crate::rules`])
//! between fields, and commits each finished record to the directory.
//!
//! States: `Header` → `Meta` (one entry per call; a string array moves to `Strings` until
//! its last element has arrived) → `Tensor` (one info per call) → `Padding` → `Done`. A call
//! either completes an item (and commits it), consumes the complete elements of a string
//! array, or returns `NeedMore` having changed nothing else, so the next call resumes at the
//! same item.

use nom::Parser;

use sipllm_format::got;
use sipllm_format::grammar::{lift, offset_in, span_in, to_finding};
use sipllm_format::{DecoderEvent, HeaderDecoder, NameIndex};
use sipllm_gguf::ggml::align_up;

use crate::ast::{Directory, Header, MetaInfo, TensorInfo};
use crate::error::{Error, ErrorKind, Path, PathSeg, StrField};
use crate::grammar;
use crate::options::ParseOptions;
use crate::rules;
use crate::value::MetaType;
use crate::{ALIGNMENT, Span};

/// What one [`Decoder::decode`] call did: bytes consumed, and the [`Event`].
pub type Step = sipllm_format::Step<Event>;

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
/// This is the shared contract of both formats ([`HeaderDecoder`], which this implements),
/// so one driver loop serves both.
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

/// Item counts are at most `u32::MAX` (they come from `u32` header fields).
fn index_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn name_of(buf: &[u8], s: Option<Span>) -> Option<Box<str>> {
    s.and_then(|s| s.slice(buf)).map(sipllm_format::shown_name)
}

fn meta_path(buf: &[u8], index: u32, key: Option<Span>) -> Path {
    Path::root().with(PathSeg::Metadata { index: index.into(), key: name_of(buf, key) })
}

fn tensor_path(buf: &[u8], index: u32, name: Option<Span>) -> Path {
    Path::root().with(PathSeg::Tensor { index: index.into(), name: name_of(buf, name) })
}

fn misuse(reason: &'static str, at: u64) -> Error {
    Error::new(ErrorKind::Misuse { reason }, at, 0, Path::root())
}

impl DecoderEvent for Event {
    fn needed(&self) -> Option<u64> {
        match *self {
            Event::NeedMore { needed } => Some(needed),
            _ => None,
        }
    }

    fn is_done(&self) -> bool {
        matches!(self, Event::Done)
    }
}

impl HeaderDecoder for Decoder {
    type Event = Event;
    type Directory = Directory;
    type Error = Error;

    fn decode(&mut self, buf: &[u8]) -> Result<Step, Error> {
        Decoder::decode(self, buf)
    }

    fn end_of_input(&self, buf: &[u8]) -> Error {
        Decoder::end_of_input(self, buf)
    }

    fn end_of_input_at(&self, buf: &[u8], at: u64, needed: u64) -> Option<Error> {
        Some(Decoder::end_of_input_at(self, buf, at, needed))
    }

    fn finish(self) -> Result<Directory, Error> {
        Decoder::finish(self)
    }
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
            return Err(misuse("the buffer shrank between calls", self.pos));
        }
        let res = match self.state {
            State::Header => self.step_header(buf),
            State::Meta => self.step_meta(buf),
            State::Strings(p) => self.step_strings(buf, p),
            State::Tensor => self.step_tensor(buf),
            State::Padding => self.step_padding(buf),
            State::Done => Ok(Event::Done),
            State::Failed => return Err(misuse("decode called after an error", self.pos)),
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
            State::Meta => meta_path(buf, index_u32(self.meta.len()), self.peek(buf)),
            State::Strings(p) => {
                meta_path(buf, p.index, Some(p.key)).with(PathSeg::Element(p.next.into()))
            }
            State::Tensor => tensor_path(buf, index_u32(self.tensors.len()), self.peek(buf)),
            State::Padding => Path::root().with(PathSeg::Padding),
            State::Done | State::Failed => {
                let reason = "end_of_input called when no input was needed";
                return misuse(reason, buf.len() as u64);
            }
        };
        Error::new(ErrorKind::UnexpectedEof { needed }, buf.len() as u64, 0, path)
    }

    /// The truncation error [`end_of_input`](Self::end_of_input) would give had `buf` been
    /// extended with the input's bytes up to its end at `at` and the item still lacked
    /// `needed` bytes, computed without those bytes. Every pending `.llmw` item asks for
    /// exactly its own missing bytes (a string array, for its current element), so a read to
    /// `at` would stop where this one stands: the same path, at `at`.
    pub fn end_of_input_at(&self, buf: &[u8], at: u64, needed: u64) -> Error {
        let path = self.end_of_input(buf).path().clone();
        Error::new(ErrorKind::UnexpectedEof { needed }, at, 0, path)
    }

    /// The decoded directory. Only after [`Event::Done`].
    pub fn finish(self) -> Result<Directory, Error> {
        let (State::Done, Some(header)) = (&self.state, self.header) else {
            return Err(misuse("finish called before Done", self.pos));
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
        Some(span_in(buf, s))
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
        let limits = self.opts.limits;
        let i = self.rest(buf);
        let (i, ()) = got!(Event, lift(buf, grammar::magic().parse(i), Path::root));
        let (i, version) = got!(Event, lift(buf, grammar::version().parse(i), Path::root));
        let count = grammar::tensor_count(limits).parse(i);
        let (i, tensor_count) = got!(Event, lift(buf, count, Path::root));
        let count = grammar::meta_count(limits).parse(i);
        let (rest, meta_count) = got!(Event, lift(buf, count, Path::root));
        self.header = Some(Header { version, tensor_count, meta_count });
        self.pos = offset_in(buf, rest);
        self.state = self.next_section();
        Ok(Event::Header)
    }

    // ----- metadata ------------------------------------------------------------------------

    fn step_meta(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let index = index_u32(self.meta.len());
        let limits = self.opts.limits;
        let version = self.header.map_or(1, |h| h.version);
        let start = self.pos;

        let no_key = || meta_path(buf, index, None);
        let key = grammar::meta_key(buf, limits).parse(self.rest(buf));
        let (rest, key) = got!(Event, lift(buf, key, no_key));
        let key_span = span_in(buf, key);
        let path = || meta_path(buf, index, Some(key_span));
        let meta = &self.meta;
        let resolve =
            |i: u32| meta.get(i as usize).and_then(|m| m.key.slice(buf)).unwrap_or_default();
        let first = self.keys.find(key, resolve);
        rules::key(key, key_span, start, first, || path().with(PathSeg::Field("key")))?;

        let tag_at = offset_in(buf, rest);
        let tag_path = || path().with(PathSeg::Field("tag"));
        let (rest, tag) = got!(Event, lift(buf, grammar::meta_tag().parse(rest), tag_path));
        let meta_type = rules::tag(tag, version, tag_at, tag_path)?;
        let value_path = || path().with(PathSeg::Field("value"));
        let (rest, value, count) = match meta_type {
            MetaType::I64 | MetaType::F64 => {
                let (rest, v) = got!(Event, lift(buf, grammar::number().parse(rest), value_path));
                (rest, span_in(buf, v), 1)
            }
            MetaType::Str => {
                let s = grammar::string_value(buf, limits).parse(rest);
                let (rest, s) = got!(Event, lift(buf, s, path));
                let s_span = span_in(buf, s);
                rules::utf8(s, s_span.offset, StrField::Value, value_path)?;
                (rest, s_span, 1)
            }
            MetaType::I64Array | MetaType::F64Array => {
                let array = grammar::number_array(buf, limits).parse(rest);
                let (rest, (payload, len)) = got!(Event, lift(buf, array, path));
                (rest, span_in(buf, payload), len)
            }
            MetaType::StrArray => {
                let count = grammar::array_count(limits).parse(rest);
                let (payload, len) = got!(Event, lift(buf, count, path));
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

    /// Commits a finished entry: its record and its key in the index.
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
        self.meta.push(MetaInfo { span: Span::between(start, end), key, meta_type, value, count });
        let meta = &self.meta;
        let resolve =
            |i: u32| meta.get(i as usize).and_then(|m| m.key.slice(buf)).unwrap_or_default();
        self.keys.insert(key.slice(buf).unwrap_or_default(), index, resolve);
        self.pos = end;
        self.state = self.next_section();
    }

    /// Consumes the complete string elements `buf` holds: the hot loop of a vocabulary (a
    /// plain loop: `.llmw` vocabularies are the engine's own, small and short).
    fn step_strings(&mut self, buf: &[u8], mut p: PendingStrings) -> Result<Event, Error> {
        let limits = self.opts.limits;
        let mut i = self.rest(buf);
        let elem_path = |p: &PendingStrings| {
            meta_path(buf, p.index, Some(p.key)).with(PathSeg::Element(p.next.into()))
        };
        while p.next < p.len {
            match grammar::checked_string(buf, limits).parse(i) {
                Ok((rest, s)) => {
                    rules::utf8(s, offset_in(buf, s), StrField::Value, || elem_path(&p))?;
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
                    return Err(to_finding(buf, e, elem_path(&p)));
                }
            }
        }
        let end = offset_in(buf, i);
        let value = Span::between(p.payload_start, end);
        self.commit_meta(buf, p.start, p.key, MetaType::StrArray, value, p.len, end);
        Ok(Event::Meta { index: p.index })
    }

    // ----- tensor infos --------------------------------------------------------------------

    fn step_tensor(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let index = index_u32(self.tensors.len());
        let limits = self.opts.limits;
        let start = self.pos;

        let no_name = || tensor_path(buf, index, None);
        let name = grammar::tensor_name(buf, limits).parse(self.rest(buf));
        let (rest, name) = got!(Event, lift(buf, name, no_name));
        let name_span = span_in(buf, name);
        let path = || tensor_path(buf, index, Some(name_span));
        let field = |f: &'static str| path().with(PathSeg::Field(f));
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        let first = self.names.find(name, resolve);
        rules::tensor_name(name, name_span, start, first, || field("name"))?;

        let dtype_at = offset_in(buf, rest);
        let (rest, code) = got!(Event, lift(buf, grammar::dtype().parse(rest), || field("dtype")));
        let dtype = rules::dtype(code, dtype_at, || field("dtype"))?;

        let (rest, shape) = got!(Event, lift(buf, grammar::tensor_shape().parse(rest), path));
        let dims_at = offset_in(buf, shape.field);
        let dim_path = |j: usize| path().with(PathSeg::Indexed { field: "dims", index: j as u32 });
        let expected = rules::shape(&shape.dims, dims_at, dtype, code, dtype_at, dim_path, field)?;

        let offset_at = offset_in(buf, rest);
        let parsed = grammar::tensor_offset().parse(rest);
        let (rest, offset) = got!(Event, lift(buf, parsed, || field("offset")));
        rules::offset(offset, self.tensors.last(), offset_at, || field("offset"))?;

        let size_at = offset_in(buf, rest);
        let (rest, declared) =
            got!(Event, lift(buf, grammar::tensor_size().parse(rest), || field("size")));
        rules::size(declared, expected, offset, size_at, offset_at, field)?;

        let end = offset_in(buf, rest);
        self.tensors.push(TensorInfo {
            span: Span::between(start, end),
            name: name_span,
            dtype,
            dims: shape.dims,
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
            let pad = Span::between(directory_end, data_start).slice(buf).unwrap_or_default();
            let tensors = &self.tensors;
            let offset_path = |i: usize| {
                let name = tensors.get(i).map(|t| t.name);
                tensor_path(buf, index_u32(i), name).with(PathSeg::Field("offset"))
            };
            let file_size = self.opts.file_size;
            rules::data_section(
                pad,
                directory_end,
                data_start,
                tensors,
                file_size,
                path,
                offset_path,
            )?;
            self.pos = data_start;
        }
        self.directory_end = directory_end;
        self.data_start = data_start;
        self.state = State::Done;
        Ok(Event::Done)
    }
}
