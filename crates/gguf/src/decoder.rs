//! The sans-I/O decoder: the state machine that runs the grammar (`grammar.rs`) one
//! record at a time over the bytes received so far, applies the profile's rules
//! (`rules.rs`) between fields, and commits each finished record to the directory.
//!
//! States: `Header` → `Kv` (one pair per call; an array value moves to `Array` until its
//! last element has arrived) → `Tensor` (one info per call) → `Padding` → `Done`. A call
//! either completes an item (and commits it: record, index, warnings, position), consumes the
//! complete elements of an array, or returns `NeedMore` having changed nothing else, so the
//! next call resumes at the same item.

use nom::Parser;

use sipllm_format::got;
use sipllm_format::grammar::{lift, offset_in, span_in};
// The contract every chunk-fed header decoder implements (what a generic driver such as the
// streaming crate's refilling window programs against).
use sipllm_format::NameIndex;
pub use sipllm_format::{DecoderEvent, HeaderDecoder};

use crate::array::PendingArray;
use crate::ast::{ArrayHead, Directory, MetaKv, Span, TensorInfo};
use crate::error::{Error, ErrorKind, Path, PathSeg, Warning, WarningKind, kv_path, tensor_path};
use crate::ggml::{self, GgmlType};
use crate::grammar::{self, Encoding};
use crate::header::Header;
use crate::layout::{self, Placement};
use crate::options::ParseOptions;
use crate::rules::{self, Findings, TensorNames};
use crate::value_type::ValueType;

/// The default alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u32 = 32;

/// Most warnings recorded per file. Beyond it they are counted, and one
/// [`WarningKind::Suppressed`] says how many were dropped: a lenient parse of a file made of
/// broken items would otherwise allocate a path per item.
pub const MAX_WARNINGS: usize = 1024;

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
    /// Metadata pair `index` was parsed.
    Kv {
        /// Its index.
        index: usize,
    },
    /// Tensor info `index` was parsed.
    TensorInfo {
        /// Its index.
        index: usize,
    },
    /// The header, directory and padding are complete and the layout is valid; call
    /// [`Decoder::finish`].
    Done,
}

/// A chunk-fed GGUF header decoder: fed bytes, it parses one item per call.
///
/// # Contract
///
/// The shared contract of both formats ([`HeaderDecoder`], which this implements):
///
/// **`buf` is every byte of the GGUF received so far, starting at offset 0; between calls the
/// caller may only append to it.** Each [`Decoder::decode`] call parses at most one item (the
/// fixed header, one key/value pair, one tensor info, or the padding before the data section)
/// starting at [`Decoder::position`], and returns a [`Step`]: how many bytes it consumed and
/// what happened. [`Event::NeedMore`] says how many more bytes the current item needs, at
/// least; append them (or more) and call again. When the input has really ended, call
/// [`Decoder::end_of_input`] for the truncation error.
///
/// The decoder keeps no borrow of `buf` between calls, so the caller may grow (reallocate) it
/// freely. Looking back into `buf` is what lets duplicate keys be detected without copying any
/// key, and what lets the final [`Directory`] be spans only.
///
/// Chunked and whole decoding agree by construction: every decision depends on the bytes,
/// never on where a chunk ended. Large arrays are consumed incrementally (an array of 128k
/// strings split over many chunks is scanned once, not restarted), and every limit is checked
/// when a field's declared end becomes known, before the decoder asks for its bytes — so a
/// declared length can never make a caller buffer more than [`Limits::max_header_bytes`].
///
/// [`Limits::max_header_bytes`]: crate::Limits::max_header_bytes
#[derive(Debug)]
pub struct Decoder {
    opts: ParseOptions,
    state: State,
    pos: u64,
    last_needed: u64,
    header: Option<Header>,
    enc: Encoding,
    kvs: Vec<MetaKv>,
    tensors: Vec<TensorInfo>,
    keys: NameIndex,
    names: TensorNames,
    alignment: Option<u32>,
    placement: Placement,
    warnings: Vec<Warning>,
    suppressed: u64,
    directory_end: u64,
    data_offset: u64,
}

#[derive(Debug)]
enum State {
    Header,
    Kv,
    Array(Box<PendingArray>),
    Tensor,
    Padding,
    Done,
    Failed,
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
        Decoder::end_of_input_at(self, buf, at, needed)
    }

    fn finish(self) -> Result<Directory, Error> {
        Decoder::finish(self)
    }
}

fn misuse(reason: &'static str, pos: u64) -> Error {
    Error::new(ErrorKind::Misuse { reason }, pos, 0, Path::root())
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
            enc: Encoding::V3_LE,
            kvs: Vec::new(),
            tensors: Vec::new(),
            keys: NameIndex::default(),
            names: TensorNames::default(),
            alignment: None,
            placement: Placement::default(),
            warnings: Vec::new(),
            suppressed: 0,
            directory_end: 0,
            data_offset: 0,
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
            State::Kv => self.step_kv(buf),
            State::Array(_) => self.step_array(buf),
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
                Ok(Step { consumed: self.pos - start, event })
            }
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    /// The error for input that ended at `input_len` bytes while the decoder still needed
    /// more: [`ErrorKind::UnexpectedEof`] at the end of the input, with the path of the item
    /// being parsed. `buf` is the final buffer (used to name the key or tensor).
    pub fn end_of_input(&self, buf: &[u8]) -> Error {
        let needed = self.last_needed.max(1);
        let path = match &self.state {
            State::Header => Path::root().with(PathSeg::Header(if buf.len() < 8 {
                if buf.len() < 4 { "magic" } else { "version" }
            } else {
                "counts"
            })),
            State::Kv => kv_path(buf, self.kvs.len(), self.peek_name(buf)),
            State::Array(p) => p.eof_path(buf),
            State::Tensor => tensor_path(buf, self.tensors.len(), self.peek_name(buf)),
            State::Padding => Path::root().with(PathSeg::Padding),
            State::Done | State::Failed => Path::root(),
        };
        Error::new(ErrorKind::UnexpectedEof { needed }, buf.len() as u64, 0, path)
    }

    /// The truncation error [`end_of_input`](Self::end_of_input) would give had `buf` been
    /// extended with the input's bytes up to its end at `at` and the item still lacked
    /// `needed` bytes, computed without those bytes: a reader that knows the input's size
    /// judges an item that cannot fit now instead of buffering the rest of the input first.
    /// `None` when a read would judge the bytes in between (a strict profile's bool array):
    /// then only reading them gives the same error.
    pub fn end_of_input_at(&self, buf: &[u8], at: u64, needed: u64) -> Option<Error> {
        let path = match &self.state {
            State::Array(p) => p.eof_path_at(buf, self.pos, at, self.opts.profile)?,
            _ => self.end_of_input(buf).path().clone(),
        };
        Some(Error::new(ErrorKind::UnexpectedEof { needed }, at, 0, path))
    }

    /// The decoded directory. Only after [`Event::Done`].
    pub fn finish(self) -> Result<Directory, Error> {
        let State::Done = self.state else {
            return Err(misuse("finish called before Done", self.pos));
        };
        let mut warnings = self.warnings;
        if self.suppressed > 0 {
            warnings.push(Warning::new(
                WarningKind::Suppressed { count: self.suppressed },
                self.directory_end,
                0,
                Path::root(),
            ));
        }
        let header = self.header.ok_or_else(|| misuse("no header", 0))?;
        Ok(Directory {
            header,
            enc: self.enc,
            kvs: self.kvs,
            tensors: self.tensors,
            keys: self.keys,
            names: self.names.names,
            alignment: self.alignment.unwrap_or(DEFAULT_ALIGNMENT),
            directory_end: self.directory_end,
            data_offset: self.data_offset,
            warnings,
        })
    }

    // ----- helpers -------------------------------------------------------------------------

    fn rest<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        usize::try_from(self.pos).ok().and_then(|p| buf.get(p..)).unwrap_or_default()
    }

    fn findings(&self) -> Findings {
        Findings::new(self.opts.profile)
    }

    /// The name at the current position, if its bytes are all present (for error paths).
    fn peek_name(&self, buf: &[u8]) -> Option<Span> {
        let (_, name) = grammar::string(self.enc).parse(self.rest(buf)).ok()?;
        Some(span_in(buf, name))
    }

    /// Where the decoder goes after finishing an item.
    fn next_section(&mut self) -> State {
        let Some(h) = self.header else { return State::Failed };
        if (self.kvs.len() as u64) < h.kv_count {
            State::Kv
        } else if (self.tensors.len() as u64) < h.tensor_count {
            State::Tensor
        } else {
            State::Padding
        }
    }

    fn alignment(&self) -> u32 {
        self.alignment.unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Keeps an item's warnings, up to [`MAX_WARNINGS`] in all.
    fn record(&mut self, findings: Findings) {
        for w in findings.warnings {
            if self.warnings.len() < MAX_WARNINGS {
                self.warnings.push(w);
            } else {
                self.suppressed += 1;
            }
        }
    }

    // ----- header --------------------------------------------------------------------------

    fn step_header(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let i = self.rest(buf);
        let (i, ()) = got!(Event, lift(buf, grammar::magic().parse(i), Path::root));
        let (i, version) = got!(Event, lift(buf, grammar::version().parse(i), Path::root));
        rules::version(&self.opts, version).map_err(|kind| {
            Error::new(kind, 4, 4, Path::root().with(PathSeg::Header("version")))
        })?;
        let enc = Encoding { endian: version.endian, wide: version.version != 1 };
        let (rest, (tensor_count, kv_count)) =
            got!(Event, lift(buf, grammar::counts(enc).parse(i), Path::root));
        rules::counts(&self.opts.limits, enc.len_size() as u64, tensor_count, kv_count)?;
        self.enc = enc;
        let (version, endian) = (version.version, version.endian);
        self.header = Some(Header { version, endian, tensor_count, kv_count });
        self.pos = offset_in(buf, rest);
        self.state = self.next_section();
        Ok(Event::Header)
    }

    // ----- metadata ------------------------------------------------------------------------

    fn step_kv(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let (index, enc, limits, kv_start) = (self.kvs.len(), self.enc, self.opts.limits, self.pos);
        let no_key = || kv_path(buf, index, None);
        let (rest, key) =
            got!(Event, lift(buf, grammar::kv_key(buf, enc, limits).parse(self.rest(buf)), no_key));
        let key_span = span_in(buf, key);
        let path = || kv_path(buf, index, Some(key_span));
        let mut out = self.findings();
        let kvs = &self.kvs;
        let first = self.keys.find(key, |i| {
            kvs.get(i as usize).and_then(|kv| kv.key.slice(buf)).unwrap_or_default()
        });
        rules::key(&mut out, key, key_span, first, || path().with(PathSeg::Field("key")))?;

        let type_at = offset_in(buf, rest);
        let (rest, value_type) = got!(Event, lift(buf, grammar::value_type(enc).parse(rest), path));
        let type_path = || path().with(PathSeg::Field("type"));
        let is_alignment =
            rules::is_alignment_key(self.opts.profile, key, self.alignment.is_some());
        rules::value_type(&mut out, is_alignment, value_type, Span::new(type_at, 4), type_path)?;

        let value_at = offset_in(buf, rest);
        let value_path = || path().with(PathSeg::Field("value"));
        match value_type {
            ValueType::String => {
                let value = grammar::string_value(buf, enc, limits).parse(rest);
                let (rest, s) = got!(Event, lift(buf, value, value_path));
                let span = span_in(buf, s);
                rules::string_value(&mut out, s, span, value_path)?;
                self.commit_kv(buf, kv_start, key_span, value_type, span, None, rest, out);
                Ok(Event::Kv { index })
            }
            ValueType::Array => {
                let head = grammar::array_elem_type(enc).parse(rest);
                let (after_elem, elem_type) = got!(Event, lift(buf, head, value_path));
                rules::elem_type(self.opts.profile, elem_type).map_err(|kind| {
                    Error::new(kind, value_at, 4, value_path().with(PathSeg::Field("elem_type")))
                })?;
                let count = grammar::array_count(buf, enc, limits, elem_type).parse(after_elem);
                let (payload, len) = got!(Event, lift(buf, count, value_path));
                // The array head is committed now; its elements are consumed as they arrive.
                self.record(out);
                let payload_start = offset_in(buf, payload);
                self.pos = payload_start;
                let head = ArrayHead { elem_type, len };
                let array = PendingArray::new(index, kv_start, key_span, head, payload_start);
                self.state = State::Array(Box::new(array.unchecked(self.opts.profile)));
                self.step_array(buf)
            }
            fixed => {
                let (rest, b) =
                    got!(Event, lift(buf, grammar::scalar(fixed).parse(rest), value_path));
                let span = span_in(buf, b);
                if fixed == ValueType::Bool {
                    let value = b.first().copied().unwrap_or(0);
                    rules::bool_value(&mut out, value, span, value_path)?;
                }
                if is_alignment && fixed == ValueType::Uint32 {
                    let found = rules::alignment(&mut out, b, enc.endian, span, value_path)?;
                    self.alignment = found.or(self.alignment);
                }
                self.commit_kv(buf, kv_start, key_span, fixed, span, None, rest, out);
                Ok(Event::Kv { index })
            }
        }
    }

    /// Commits a finished pair: its record, its key in the index, its warnings.
    #[allow(clippy::too_many_arguments)]
    fn commit_kv(
        &mut self,
        buf: &[u8],
        kv_start: u64,
        key: Span,
        value_type: ValueType,
        value: Span,
        array: Option<ArrayHead>,
        rest: &[u8],
        out: Findings,
    ) {
        let index = self.kvs.len();
        let end = offset_in(buf, rest);
        self.kvs.push(MetaKv { span: Span::between(kv_start, end), key, value_type, value, array });
        let kvs = &self.kvs;
        let resolve =
            |i: u32| kvs.get(i as usize).and_then(|kv| kv.key.slice(buf)).unwrap_or_default();
        self.keys.insert(key.slice(buf).unwrap_or_default(), index as u32, resolve);
        self.record(out);
        self.pos = end;
        self.state = self.next_section();
    }

    fn step_array(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let State::Array(mut p) = std::mem::replace(&mut self.state, State::Failed) else {
            return Err(misuse("no array", self.pos));
        };
        let mut out = self.findings();
        let need = p.advance(buf, self.enc, &self.opts, &mut self.pos, &mut out)?;
        self.record(out);
        match need {
            Some(needed) => {
                self.state = State::Array(p);
                Ok(Event::NeedMore { needed })
            }
            None => {
                let value = Span::between(p.payload_start, self.pos);
                let rest = self.rest(buf);
                let (key, head) = (p.key, Some(p.head));
                let out = self.findings();
                self.commit_kv(buf, p.kv_start, key, ValueType::Array, value, head, rest, out);
                Ok(Event::Kv { index: p.index })
            }
        }
    }

    // ----- tensor infos --------------------------------------------------------------------

    fn step_tensor(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let (index, enc, limits, start) =
            (self.tensors.len(), self.enc, self.opts.limits, self.pos);
        let no_name = || tensor_path(buf, index, None);
        let name = grammar::tensor_name(buf, enc, limits).parse(self.rest(buf));
        let (rest, name) = got!(Event, lift(buf, name, no_name));
        let name_span = span_in(buf, name);
        let path = || tensor_path(buf, index, Some(name_span));
        let mut out = self.findings();
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        let first = self.names.find(self.opts.profile, name, resolve);
        rules::tensor_name(&mut out, name, name_span, first, || {
            path().with(PathSeg::Field("name"))
        })?;

        let (rest, shape) = got!(Event, lift(buf, grammar::tensor_shape(enc).parse(rest), path));
        let (rest, place) =
            got!(Event, lift(buf, grammar::tensor_placement(enc).parse(rest), path));

        // All fields are present: validate in the order ggml does.
        let ggml_type = GgmlType::from_code(place.ggml_type);
        let dims_at = offset_in(buf, shape.field);
        let type_at = offset_in(buf, place.type_field);
        let dim_size = enc.len_size() as u64;
        let nbytes =
            rules::tensor(&mut out, &shape.dims, dims_at, dim_size, ggml_type, type_at, path)?;
        let offset_at = type_at + 4;
        let offset_path = || path().with(PathSeg::Field("offset"));
        for finding in
            self.placement.place(self.opts.profile, self.alignment(), place.offset, nbytes)
        {
            out.layout(finding, Span::new(offset_at, 8), offset_path)?;
        }

        let end = offset_in(buf, rest);
        self.tensors.push(TensorInfo {
            span: Span::between(start, end),
            name: name_span,
            dims: shape.dims,
            ggml_type,
            offset: place.offset,
            nbytes,
            abs_offset: 0,
        });
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        self.names.insert(self.opts.profile, name, index as u32, resolve);
        self.record(out);
        self.pos = end;
        self.state = self.next_section();
        Ok(Event::TensorInfo { index })
    }

    // ----- padding and layout --------------------------------------------------------------

    fn step_padding(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let directory_end = self.pos;
        let path = || Path::root().with(PathSeg::Padding);
        let aligned = ggml::align_up(directory_end, self.alignment().into())
            .ok_or_else(|| Error::new(ErrorKind::OffsetOverflow, directory_end, 0, path()))?;
        let has_tensors = self.header.is_some_and(|h| h.tensor_count > 0);
        let data_offset =
            rules::data_offset(self.opts.profile, has_tensors, directory_end, aligned);
        let mut out = self.findings();
        if has_tensors {
            // The padding must exist (ggml seeks to the data section); its bytes should be 0.
            let max = self.opts.limits.max_header_bytes;
            if data_offset > max {
                let kind = ErrorKind::HeaderTooLarge { max };
                return Err(Error::new(kind, directory_end, data_offset - directory_end, path()));
            }
            if (buf.len() as u64) < data_offset {
                return Ok(Event::NeedMore { needed: data_offset - buf.len() as u64 });
            }
            let pad = Span::between(directory_end, data_offset);
            if pad.slice(buf).unwrap_or_default().iter().any(|&b| b != 0) {
                out.warn(WarningKind::NonZeroPadding, pad, path);
            }
        }
        let profile = self.opts.profile;
        let findings = layout::finish(profile, &mut self.tensors, data_offset, self.opts.file_size);
        for f in findings {
            let tensor = self.tensors.get(f.tensor);
            let at = tensor.map_or(directory_end, |t| t.span.end() - 8);
            let name = tensor.map(|t| t.name);
            let tensor_path = || tensor_path(buf, f.tensor, name).with(PathSeg::Field("offset"));
            out.layout(f.finding, Span::new(at, 8), tensor_path)?;
        }
        self.record(out);
        self.directory_end = directory_end;
        self.data_offset = data_offset;
        if has_tensors {
            self.pos = data_offset;
        }
        self.state = State::Done;
        Ok(Event::Done)
    }
}
