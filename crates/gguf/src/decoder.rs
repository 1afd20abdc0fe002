//! The sans-I/O decoder: fed bytes, it parses one item per call (see [`Decoder`]).

use nom::Parser;
use smallvec::SmallVec;

use crate::ast::{ArrayHead, Directory, MetaKv, Span, TensorInfo};
use crate::error::{Error, ErrorKind, Path, PathSeg, StrField, Warning, WarningKind};
use crate::ggml::{self, GgmlType, SizeError};
use crate::ggml_compat::{self, c_str};
use crate::grammar::{self, Encoding, PErr, PResult};
use crate::header::{Endian, Header, VersionProbe, probe_version};
use crate::index::NameIndex;
use crate::layout::{self, Placement};
use crate::options::{Limits, ParseOptions, Profile};
use crate::parallel::{self, Parallel};
use crate::value::ValueType;
use crate::walk;

/// The default alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u32 = 32;

/// Most warnings recorded per file. Beyond it they are counted, and one
/// [`WarningKind::Suppressed`] says how many were dropped: a lenient parse of a file made of
/// broken items would otherwise allocate a path per item.
pub const MAX_WARNINGS: usize = 1024;

/// What one [`Decoder::decode`] call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Bytes consumed by this call (the position advanced by this much). May be non-zero with
    /// [`Event::NeedMore`]: the complete elements of a large array are consumed as they arrive.
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
    names: NameIndex,
    /// Under `LlamaCpp` only: the tensor names up to their first NUL, as ggml stores and
    /// compares them (`ggml_set_name`, then `strcmp`).
    c_names: NameIndex,
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

/// A metadata array whose elements are still arriving.
#[derive(Debug)]
struct PendingArray {
    index: usize,
    kv_start: u64,
    key: Span,
    head: ArrayHead,
    payload_start: u64,
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

fn perr_to_error(buf: &[u8], e: PErr<'_>, mut path: Path) -> Error {
    if let Some(seg) = e.field {
        path.push(seg);
    }
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
/// requested: the string limit, and the header limit on where the string would end.
fn checked_string<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: Limits,
) -> impl Parser<&'b [u8], Output = &'b [u8], Error = PErr<'b>> {
    move |i: &'b [u8]| checked_string_at(buf, enc, &limits, i)
}

/// [`checked_string`] as a plain nom parser function (the vocabulary hot loop's).
#[inline]
fn checked_string_at<'b>(
    buf: &'b [u8],
    enc: Encoding,
    limits: &Limits,
    i: &'b [u8],
) -> PResult<'b, &'b [u8]> {
    let (rest, len) = grammar::len_field_at(enc, i)?;
    let len_size = enc.len_size() as u64;
    if len > limits.max_string_len {
        return Err(PErr::fail(
            i,
            len_size,
            ErrorKind::StringTooLong { len, max: limits.max_string_len },
        ));
    }
    if offset_in(buf, rest).saturating_add(len) > limits.max_header_bytes {
        return Err(PErr::fail(
            i,
            len_size,
            ErrorKind::HeaderTooLarge { max: limits.max_header_bytes },
        ));
    }
    grammar::bytes_at(len, rest)
}

/// The index and contents of the first element of a run of (already parsed) string elements
/// that is not valid UTF-8.
///
/// The first element is checked on its own: its length field may not be ASCII (see
/// [`Decoder::run_strings`]), and a big-endian one ends with the length's low byte, which a
/// pass over both could read as one character with the string's first byte. Then one SIMD
/// pass says where the rest first fails; only the element there is checked on its own, and
/// when it is valid (a length field that is not ASCII) the pass resumes after it.
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

fn lossy(bytes: &[u8]) -> Box<str> {
    String::from_utf8_lossy(bytes).into()
}

/// Keys should be dot-separated `lower_snake_case` segments of ASCII letters and digits.
fn is_snake_case_key(key: &[u8]) -> bool {
    key.split(|&b| b == b'.').all(|seg| {
        !seg.is_empty()
            && seg.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
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
            names: NameIndex::default(),
            c_names: NameIndex::default(),
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
        self.decode_with(buf, None)
    }

    /// [`Decoder::decode`], with a helper thread to validate long string arrays when `par`
    /// is given (a whole-slice parse: see [`crate::parallel`]).
    pub(crate) fn decode_with(
        &mut self,
        buf: &[u8],
        par: Option<&Parallel<'_, '_>>,
    ) -> Result<Step, Error> {
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
            State::Kv => self.step_kv(buf, par),
            State::Array(_) => self.step_array(buf, par),
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
            State::Kv => Self::kv_path(buf, self.kvs.len(), self.peek_name(buf)),
            State::Array(p) => {
                let mut path = Self::kv_path(buf, p.index, Some(p.key));
                for f in &p.frames {
                    path.push(PathSeg::Element(f.next));
                }
                path
            }
            State::Tensor => Self::tensor_path(buf, self.tensors.len(), self.peek_name(buf)),
            State::Padding => Path::root().with(PathSeg::Padding),
            State::Done | State::Failed => Path::root(),
        };
        Error::new(ErrorKind::UnexpectedEof { needed }, buf.len() as u64, 0, path)
    }

    /// The decoded directory. Only after [`Event::Done`].
    pub fn finish(self) -> Result<Directory, Error> {
        let State::Done = self.state else {
            return Err(Error::new(
                ErrorKind::Misuse { reason: "finish called before Done" },
                self.pos,
                0,
                Path::root(),
            ));
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
        let header = self.header.ok_or_else(|| {
            Error::new(ErrorKind::Misuse { reason: "no header" }, 0, 0, Path::root())
        })?;
        Ok(Directory {
            header,
            enc: self.enc,
            kvs: self.kvs,
            tensors: self.tensors,
            keys: self.keys,
            names: self.names,
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

    fn profile(&self) -> Profile {
        self.opts.profile
    }

    /// The name at the current position, if its bytes are all present (for error paths).
    fn peek_name(&self, buf: &[u8]) -> Option<Span> {
        let rest = self.rest(buf);
        let (_, name) = grammar::string(self.enc).parse(rest).ok()?;
        Some(Span::new(offset_in(buf, name), name.len() as u64))
    }

    fn name_of(buf: &[u8], span: Option<Span>) -> Option<Box<str>> {
        span.and_then(|s| s.slice(buf)).map(lossy)
    }

    fn kv_path(buf: &[u8], index: usize, key: Option<Span>) -> Path {
        Path::root().with(PathSeg::Metadata { index: index as u64, key: Self::name_of(buf, key) })
    }

    fn tensor_path(buf: &[u8], index: usize, name: Option<Span>) -> Path {
        Path::root().with(PathSeg::Tensor { index: index as u64, name: Self::name_of(buf, name) })
    }

    /// Applies the profile to a tolerable problem: an error, or (lenient) a warning.
    fn tolerate(
        &self,
        kind: ErrorKind,
        span: Span,
        path: impl FnOnce() -> Path,
        warnings: &mut SmallVec<[Warning; 2]>,
    ) -> Result<(), Error> {
        if self.profile() == Profile::Lenient {
            warnings.push(Warning::new(
                WarningKind::Tolerated(kind),
                span.offset,
                span.len,
                path(),
            ));
            Ok(())
        } else {
            Err(Error::new(kind, span.offset, span.len, path()))
        }
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
    fn record(&mut self, warnings: SmallVec<[Warning; 2]>) {
        for w in warnings {
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
        // The magic is judged as soon as its 4 bytes are present: a non-GGUF input of 4 to 7
        // bytes is not a truncated GGUF.
        if let Some(&found) = i.first_chunk::<4>()
            && found != *b"GGUF"
        {
            return Err(Error::new(
                ErrorKind::BadMagic { found },
                0,
                4,
                Path::root().with(PathSeg::Header("magic")),
            ));
        }
        let (after_version, (_magic, word)) =
            got!(lift(buf, grammar::magic_and_version().parse(i), Path::root));
        let version_err =
            |kind| Error::new(kind, 4, 4, Path::root().with(PathSeg::Header("version")));
        let (version, endian) = match probe_version(word) {
            VersionProbe::Unsupported { version } => {
                return Err(version_err(ErrorKind::UnsupportedVersion { version }));
            }
            VersionProbe::Known { version, endian } => (version, endian),
        };
        if version == 1 && (!self.opts.allow_v1 || self.profile() == Profile::LlamaCpp) {
            return Err(version_err(ErrorKind::VersionOneDisabled));
        }
        if endian == Endian::Big && self.profile() == Profile::LlamaCpp {
            return Err(version_err(ErrorKind::EndianMismatch {
                version: u32::from_le_bytes(word),
            }));
        }
        let enc = Encoding { endian, wide: version != 1 };
        let (rest, (tensor_count, kv_count)) =
            got!(lift(buf, grammar::counts(enc).parse(after_version), Path::root));
        let len_size = enc.len_size() as u64;
        let limits = self.opts.limits;
        // Counts above u32::MAX could not be indexed; the default limits are far below. The
        // error reports the limit in force, not a larger configured one.
        let max_tensors = limits.max_tensor_count.min(u32::MAX.into());
        if tensor_count > max_tensors {
            return Err(Error::new(
                ErrorKind::TooManyTensors { count: tensor_count, max: max_tensors },
                8,
                len_size,
                Path::root().with(PathSeg::Header("tensor_count")),
            ));
        }
        let max_kvs = limits.max_kv_count.min(u32::MAX.into());
        if kv_count > max_kvs {
            return Err(Error::new(
                ErrorKind::TooManyKvs { count: kv_count, max: max_kvs },
                8 + len_size,
                len_size,
                Path::root().with(PathSeg::Header("kv_count")),
            ));
        }
        self.enc = enc;
        self.header = Some(Header { version, endian, tensor_count, kv_count });
        self.pos = offset_in(buf, rest);
        self.state = self.next_section();
        Ok(Event::Header)
    }

    // ----- metadata ------------------------------------------------------------------------

    fn check_key(
        &self,
        buf: &[u8],
        index: usize,
        key: &[u8],
        key_span: Span,
        warnings: &mut SmallVec<[Warning; 2]>,
    ) -> Result<(), Error> {
        let path = || Self::kv_path(buf, index, Some(key_span));
        let field_path = || path().with(PathSeg::Field("key"));
        if key.is_empty() {
            self.tolerate(ErrorKind::EmptyKey, key_span, field_path, warnings)?;
        }
        let nul = ErrorKind::NulInKey;
        warnings.extend(ggml_compat::check_nul(self.profile(), key, nul, key_span, field_path)?);
        if self.profile() != Profile::LlamaCpp
            && let Err(e) = std::str::from_utf8(key)
        {
            let kind = ErrorKind::InvalidUtf8 {
                field: StrField::Key,
                valid_up_to: e.valid_up_to() as u64,
            };
            self.tolerate(kind, key_span, field_path, warnings)?;
        }
        let kvs = &self.kvs;
        let resolve =
            |i: u32| kvs.get(i as usize).and_then(|kv| kv.key.slice(buf)).unwrap_or_default();
        if let Some(first) = self.keys.find(key, resolve) {
            self.tolerate(
                ErrorKind::DuplicateKey { first: first.into() },
                key_span,
                field_path,
                warnings,
            )?;
        }
        let style = if key.len() > 65535 {
            Some(WarningKind::KeyTooLong { len: key.len() as u64 })
        } else if !key.is_ascii() {
            Some(WarningKind::KeyNotAscii)
        } else if !key.is_empty() && !is_snake_case_key(key) {
            Some(WarningKind::KeyNotSnakeCase)
        } else {
            None
        };
        if let Some(kind) = style {
            warnings.push(Warning::new(kind, key_span.offset, key_span.len, field_path()));
        }
        Ok(())
    }

    /// UTF-8 check of a string value (not under `LlamaCpp`, which does not check).
    fn check_string_value(
        &self,
        bytes: &[u8],
        span: Span,
        path: impl FnOnce() -> Path,
        warnings: &mut SmallVec<[Warning; 2]>,
    ) -> Result<(), Error> {
        if self.profile() == Profile::LlamaCpp {
            return Ok(());
        }
        if let Err(e) = std::str::from_utf8(bytes) {
            let kind = ErrorKind::InvalidUtf8 {
                field: StrField::Value,
                valid_up_to: e.valid_up_to() as u64,
            };
            self.tolerate(kind, span, path, warnings)?;
        }
        Ok(())
    }

    /// Parses an element type code (for arrays): valid for this version and profile.
    fn elem_type(&self, code: u32) -> Result<ValueType, ErrorKind> {
        match ValueType::from_code(code) {
            Some(ty) if self.enc.wide || ty.in_v1() => {
                if ty == ValueType::Array && self.profile() == Profile::LlamaCpp {
                    Err(ErrorKind::NestedArray)
                } else {
                    Ok(ty)
                }
            }
            _ => Err(ErrorKind::UnknownValueType { code }),
        }
    }

    /// Validates an array's declared count (and, for fixed-size elements, where its payload
    /// would end) as soon as the array header is read. `at` is the count field's offset.
    fn check_array_len(
        &self,
        elem_type: ValueType,
        len: u64,
        payload_start: u64,
    ) -> Result<(), ErrorKind> {
        let limits = self.opts.limits;
        if len > limits.max_array_len {
            return Err(ErrorKind::ArrayTooLong { len, max: limits.max_array_len });
        }
        // Where the payload would end at the least: exactly, for fixed-size elements; for
        // strings and nested arrays, each element has at least its length (and type) fields.
        let min_size = match elem_type.fixed_size() {
            Some(size) => size as u64,
            None if elem_type == ValueType::String => self.enc.len_size() as u64,
            None => 4 + self.enc.len_size() as u64,
        };
        let end = len.checked_mul(min_size).and_then(|n| payload_start.checked_add(n));
        if end.is_none_or(|end| end > limits.max_header_bytes) {
            return Err(ErrorKind::HeaderTooLarge { max: limits.max_header_bytes });
        }
        Ok(())
    }

    fn step_kv(&mut self, buf: &[u8], par: Option<&Parallel<'_, '_>>) -> Result<Event, Error> {
        let index = self.kvs.len();
        let enc = self.enc;
        let limits = self.opts.limits;
        let kv_start = self.pos;
        let i = self.rest(buf);

        let (rest, key) = got!(lift(
            buf,
            grammar::field(PathSeg::Field("key"), checked_string(buf, enc, limits)).parse(i),
            || Self::kv_path(buf, index, None),
        ));
        let key_span = Span::new(offset_in(buf, key), key.len() as u64);
        let path = || Self::kv_path(buf, index, Some(key_span));
        let mut warnings = SmallVec::<[Warning; 2]>::new();
        self.check_key(buf, index, key, key_span, &mut warnings)?;

        let type_at = offset_in(buf, rest);
        let (rest, code) = got!(lift(buf, grammar::u32_(enc).parse(rest), path));
        let type_err = |kind| Error::new(kind, type_at, 4, path().with(PathSeg::Field("type")));
        let value_type = match ValueType::from_code(code) {
            Some(ty) if enc.wide || ty.in_v1() => ty,
            _ => return Err(type_err(ErrorKind::UnknownValueType { code })),
        };
        let is_alignment =
            ggml_compat::is_alignment_key(self.profile(), key, self.alignment.is_some());
        if is_alignment && value_type != ValueType::Uint32 {
            let kind = ErrorKind::AlignmentType { found: value_type };
            self.tolerate(
                kind,
                Span::new(type_at, 4),
                || path().with(PathSeg::Field("type")),
                &mut warnings,
            )?;
        }

        let value_at = offset_in(buf, rest);
        let value_path = || path().with(PathSeg::Field("value"));
        match value_type {
            ValueType::String => {
                let (rest, s) =
                    got!(lift(buf, checked_string(buf, enc, limits).parse(rest), value_path));
                let span = Span::new(offset_in(buf, s), s.len() as u64);
                self.check_string_value(s, span, value_path, &mut warnings)?;
                self.commit_kv(
                    buf, index, kv_start, key_span, value_type, span, None, rest, warnings,
                );
                Ok(Event::Kv { index })
            }
            ValueType::Array => {
                let (after_elem, code) =
                    got!(lift(buf, grammar::u32_(enc).parse(rest), value_path));
                let elem_type = self.elem_type(code).map_err(|kind| {
                    Error::new(kind, value_at, 4, value_path().with(PathSeg::Field("elem_type")))
                })?;
                let count_at = offset_in(buf, after_elem);
                let (payload, len) =
                    got!(lift(buf, grammar::len_field(enc).parse(after_elem), value_path));
                let payload_start = offset_in(buf, payload);
                self.check_array_len(elem_type, len, payload_start).map_err(|kind| {
                    Error::new(
                        kind,
                        count_at,
                        enc.len_size() as u64,
                        value_path().with(PathSeg::Field("count")),
                    )
                })?;
                // The array header is committed now; its elements are consumed as they arrive.
                self.record(warnings);
                self.pos = payload_start;
                let mut frames = SmallVec::new();
                frames.push(Frame { elem_type, len, next: 0 });
                self.state = State::Array(Box::new(PendingArray {
                    index,
                    kv_start,
                    key: key_span,
                    head: ArrayHead { elem_type, len },
                    payload_start,
                    frames,
                    // llama.cpp checks neither, so there is nothing to warn about.
                    warned_utf8: self.profile() == Profile::LlamaCpp,
                    warned_bool: self.profile() == Profile::LlamaCpp,
                }));
                self.step_array(buf, par)
            }
            fixed => {
                let size = fixed.fixed_size().unwrap_or(1) as u64;
                let (rest, b) = got!(lift(buf, grammar::bytes(size).parse(rest), value_path));
                let span = Span::new(value_at, size);
                if fixed == ValueType::Bool {
                    let value = b.first().copied().unwrap_or(0);
                    if value > 1 && self.profile() != Profile::LlamaCpp {
                        self.tolerate(
                            ErrorKind::InvalidBool { value },
                            span,
                            value_path,
                            &mut warnings,
                        )?;
                    }
                }
                if is_alignment && fixed == ValueType::Uint32 {
                    let mut word = [0u8; 4];
                    word.copy_from_slice(b);
                    let alignment = match enc.endian {
                        Endian::Little => u32::from_le_bytes(word),
                        Endian::Big => u32::from_be_bytes(word),
                    };
                    if alignment.is_power_of_two() {
                        self.alignment = Some(alignment);
                    } else {
                        self.tolerate(
                            ErrorKind::BadAlignment { alignment },
                            span,
                            value_path,
                            &mut warnings,
                        )?;
                    }
                }
                self.commit_kv(buf, index, kv_start, key_span, fixed, span, None, rest, warnings);
                Ok(Event::Kv { index })
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_kv(
        &mut self,
        buf: &[u8],
        index: usize,
        kv_start: u64,
        key: Span,
        value_type: ValueType,
        value: Span,
        array: Option<ArrayHead>,
        rest: &[u8],
        warnings: SmallVec<[Warning; 2]>,
    ) {
        let end = offset_in(buf, rest);
        self.kvs.push(MetaKv { span: Span::between(kv_start, end), key, value_type, value, array });
        let kvs = &self.kvs;
        let resolve =
            |i: u32| kvs.get(i as usize).and_then(|kv| kv.key.slice(buf)).unwrap_or_default();
        self.keys.insert(key.slice(buf).unwrap_or_default(), index as u32, resolve);
        self.record(warnings);
        self.pos = end;
        self.state = self.next_section();
    }

    fn step_array(&mut self, buf: &[u8], par: Option<&Parallel<'_, '_>>) -> Result<Event, Error> {
        let State::Array(mut p) = std::mem::replace(&mut self.state, State::Failed) else {
            return Err(Error::new(
                ErrorKind::Misuse { reason: "no array" },
                self.pos,
                0,
                Path::root(),
            ));
        };
        match self.run_array(buf, &mut p, par)? {
            Some(needed) => {
                self.state = State::Array(p);
                Ok(Event::NeedMore { needed })
            }
            None => {
                let value = Span::between(p.payload_start, self.pos);
                let rest = self.rest(buf);
                self.commit_kv(
                    buf,
                    p.index,
                    p.kv_start,
                    p.key,
                    ValueType::Array,
                    value,
                    Some(p.head),
                    rest,
                    SmallVec::new(),
                );
                Ok(Event::Kv { index: p.index })
            }
        }
    }

    fn element_path(buf: &[u8], p: &PendingArray, extra: u64) -> Path {
        let mut path = Self::kv_path(buf, p.index, Some(p.key));
        let last = p.frames.len().saturating_sub(1);
        for (d, f) in p.frames.iter().enumerate() {
            path.push(PathSeg::Element(if d == last { f.next + extra } else { f.next }));
        }
        path
    }

    /// Consumes the complete string elements of the innermost array that `buf` holds: the
    /// hot loop of a vocabulary. `Some(n)`: the next element needs `n` more bytes; `None`:
    /// progress was made (the array may be complete).
    ///
    /// Most elements are walked by the speculative fast path ([`walk`]); this loop walks the
    /// ones it leaves (long strings, the array's last few hundred, anything wrong) and alone
    /// reports problems and missing bytes.
    ///
    /// UTF-8 is validated per *segment* of elements with one SIMD pass over the segment's bytes,
    /// length fields included: a segment ends before, and the next starts after, every length
    /// field that is not ASCII (a long string's: 130 is the byte 0x82). That is exact: ASCII
    /// bytes are character boundaries, so a segment is valid iff each string in it is. The
    /// fast path only walks strings of at most 127 bytes, whose length fields are ASCII, so
    /// segments are as long as long strings are rare.
    fn run_strings(
        &mut self,
        buf: &[u8],
        p: &mut PendingArray,
        par: Option<&Parallel<'_, '_>>,
        warnings: &mut SmallVec<[Warning; 2]>,
    ) -> Result<Option<u64>, Error> {
        let enc = self.enc;
        let limits = self.opts.limits;
        let check = !p.warned_utf8;
        let Some(frame) = p.frames.last().copied() else { return Ok(None) };
        let run = self.rest(buf);
        // A long array's run is validated by a helper thread while this walks it, if one is
        // lent (a whole-slice parse).
        let pieces = par
            .filter(|_| check && frame.len - frame.next >= parallel::PARALLEL_MIN_ELEMENTS)
            .map(|par| par.begin(offset_in(buf, run) as usize));
        let mut i = run;
        let mut next = frame.next;
        let mut problem = None;
        // The open segment starts at `seg` (a length field that is ASCII, or a string's bytes);
        // to find its invalid element, walk from element `seg_elem`, whose length field starts
        // at `seg_walk`. A segment is validated when it closes, while its bytes are in cache.
        let (mut seg, mut seg_walk, mut seg_elem) = (run, run, frame.next);
        // Whether `seg` up to `end` is valid; if not, the first invalid element there.
        let invalid_in = |seg: &[u8], seg_walk: &[u8], seg_elem: u64, end: &[u8]| {
            let from = offset_in(buf, seg) as usize;
            let to = offset_in(buf, end) as usize;
            let valid = match pieces {
                Some(pieces) => pieces.is_valid(from, to),
                None => buf.get(from..to).is_none_or(|b| simdutf8::basic::from_utf8(b).is_ok()),
            };
            let region = seg_walk.get(..seg_walk.len() - end.len()).unwrap_or_default();
            if valid { None } else { first_invalid_string(region, enc).map(|(k, _)| seg_elem + k) }
        };
        // Elements this loop walks before it tries the fast path again, after the fast path
        // walked little: when it is of no use (frequent long strings, an array's tail), asking
        // it after every element would cost more than it saves.
        let mut pause = 0u32;
        let need = loop {
            // The fast path walks the bulk of a long array without reporting anything; it stops
            // before any element this loop might have something to say about, and this loop
            // walks that one and hands back.
            if enc.wide && pause == 0 {
                // What it walks must also end inside the header-size limit.
                let room = limits.max_header_bytes.saturating_sub(offset_in(buf, i));
                let fast_run = i.get(..usize::try_from(room).unwrap_or(usize::MAX)).unwrap_or(i);
                let walked =
                    walk::strings(enc.endian, fast_run, frame.len - next, limits.max_string_len);
                i = i.get(walked.bytes..).unwrap_or_default();
                next += walked.elements;
                if walked.elements < walk::PROBE {
                    pause = 16;
                }
            }
            pause = pause.saturating_sub(1);
            if next == frame.len {
                break None;
            }
            match checked_string_at(buf, enc, &limits, i) {
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
        // An invalid string in the last segment comes before any problem found after it, so it
        // is reported first whatever the chunking.
        if check
            && !matches!(problem, Some(Err(_)))
            && let Some(elem) = invalid_in(seg, seg_walk, seg_elem, i)
        {
            problem = Some(Err(elem));
        }
        match problem {
            None => {
                if let Some(f) = p.frames.last_mut() {
                    f.next = next;
                }
                self.pos = offset_in(buf, i);
                Ok(need)
            }
            Some(Ok((elem, e))) => {
                if let Some(f) = p.frames.last_mut() {
                    f.next = elem;
                }
                Err(perr_to_error(buf, e, Self::element_path(buf, p, 0)))
            }
            Some(Err(elem)) => {
                // Re-walk to the bad element: consume the good ones before it.
                let mut at = run;
                for _ in frame.next..elem {
                    at = grammar::string(enc).parse(at).map_or(at, |(rest, _)| rest);
                }
                let s = grammar::string(enc).parse(at).map_or(&[][..], |(_, s)| s);
                if let Some(f) = p.frames.last_mut() {
                    f.next = elem;
                }
                self.pos = offset_in(buf, at);
                p.warned_utf8 = true;
                let span = Span::new(offset_in(buf, s), s.len() as u64);
                self.check_string_value(s, span, || Self::element_path(buf, p, 0), warnings)?;
                // Lenient: warned once; the next call walks the rest without checking.
                Ok(None)
            }
        }
    }

    /// Consumes as many array elements as `buf` holds. `Some(n)`: `n` more bytes needed.
    fn run_array(
        &mut self,
        buf: &[u8],
        p: &mut PendingArray,
        par: Option<&Parallel<'_, '_>>,
    ) -> Result<Option<u64>, Error> {
        let enc = self.enc;
        let limits = self.opts.limits;
        let mut warnings = SmallVec::<[Warning; 2]>::new();
        let result = loop {
            let Some(frame) = p.frames.last().copied() else { break None };
            if frame.next == frame.len {
                p.frames.pop();
                if let Some(parent) = p.frames.last_mut() {
                    parent.next += 1;
                }
                continue;
            }
            match frame.elem_type {
                ValueType::String => match self.run_strings(buf, p, par, &mut warnings)? {
                    Some(n) => break Some(n),
                    None => continue,
                },
                ValueType::Array => {
                    let i = self.rest(buf);
                    let at = self.pos;
                    let res = (grammar::u32_(enc), grammar::len_field(enc)).parse(i);
                    let (rest, (code, len)) =
                        match lift(buf, res, || Self::element_path(buf, p, 0))? {
                            Got::Value(rest, v) => (rest, v),
                            Got::Need(n) => break Some(n),
                        };
                    let elem_err =
                        |kind, off, len| Error::new(kind, off, len, Self::element_path(buf, p, 0));
                    let elem_type = self.elem_type(code).map_err(|k| elem_err(k, at, 4))?;
                    if p.frames.len() as u32 >= limits.max_depth {
                        return Err(elem_err(
                            ErrorKind::NestingTooDeep { max: limits.max_depth },
                            at,
                            4,
                        ));
                    }
                    let payload_start = offset_in(buf, rest);
                    self.check_array_len(elem_type, len, payload_start)
                        .map_err(|k| elem_err(k, at + 4, enc.len_size() as u64))?;
                    self.pos = payload_start;
                    p.frames.push(Frame { elem_type, len, next: 0 });
                }
                fixed => {
                    let size = fixed.fixed_size().unwrap_or(1) as u64;
                    let avail = (buf.len() as u64).saturating_sub(self.pos);
                    let remaining = frame.len - frame.next;
                    let take = remaining.min(avail / size);
                    if fixed == ValueType::Bool && !p.warned_bool {
                        let bytes = usize::try_from(self.pos)
                            .ok()
                            .and_then(|start| buf.get(start..)?.get(..take as usize))
                            .unwrap_or_default();
                        if let Some((j, &value)) = bytes.iter().enumerate().find(|(_, b)| **b > 1) {
                            p.warned_bool = true;
                            let span = Span::new(self.pos + j as u64, 1);
                            let path = || Self::element_path(buf, p, j as u64);
                            self.tolerate(
                                ErrorKind::InvalidBool { value },
                                span,
                                path,
                                &mut warnings,
                            )?;
                        }
                    }
                    self.pos += take * size;
                    if let Some(f) = p.frames.last_mut() {
                        f.next += take;
                    }
                    if take < remaining {
                        // Exactly the bytes this array still lacks.
                        let lacking = (remaining * size).saturating_sub(avail);
                        break Some(lacking.max(1));
                    }
                }
            }
        };
        self.record(warnings);
        Ok(result)
    }

    // ----- tensor infos --------------------------------------------------------------------

    fn step_tensor(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let index = self.tensors.len();
        let enc = self.enc;
        let limits = self.opts.limits;
        let profile = self.profile();
        let start = self.pos;
        let i = self.rest(buf);

        let (rest, name) = got!(lift(
            buf,
            grammar::field(PathSeg::Field("name"), checked_string(buf, enc, limits)).parse(i),
            || Self::tensor_path(buf, index, None),
        ));
        let name_span = Span::new(offset_in(buf, name), name.len() as u64);
        let path = || Self::tensor_path(buf, index, Some(name_span));
        let mut warnings = SmallVec::<[Warning; 2]>::new();
        self.check_tensor_name(buf, name, name_span, &path, &mut warnings)?;

        let n_dims_at = offset_in(buf, rest);
        let (rest, n_dims) = got!(lift(buf, grammar::u32_(enc).parse(rest), path));
        if n_dims > 4 {
            return Err(Error::new(
                ErrorKind::TooManyDims { n_dims, max: 4 },
                n_dims_at,
                4,
                path().with(PathSeg::Field("n_dims")),
            ));
        }
        let dims_at = offset_in(buf, rest);
        let dim_size = enc.len_size() as u64;
        let (rest, dims) = got!(lift(
            buf,
            nom::multi::fold(
                n_dims as usize,
                grammar::len_field(enc),
                SmallVec::<[u64; 4]>::new,
                |mut acc, d| {
                    acc.push(d);
                    acc
                },
            )
            .parse(rest),
            path
        ));
        let type_at = offset_in(buf, rest);
        let (rest, code) = got!(lift(buf, grammar::u32_(enc).parse(rest), path));
        let offset_at = offset_in(buf, rest);
        let (rest, offset) = got!(lift(buf, grammar::u64_(enc).parse(rest), path));

        // All fields are present: validate in the order ggml does.
        let dim_span = |j: usize| Span::new(dims_at + j as u64 * dim_size, dim_size);
        let dim_path = |j: usize| path().with(PathSeg::Dim(j as u32));
        for (j, &d) in dims.iter().enumerate() {
            let span = dim_span(j);
            if profile == Profile::LlamaCpp && d > i64::MAX as u64 {
                return Err(Error::new(
                    ErrorKind::DimTooLarge { value: d },
                    span.offset,
                    span.len,
                    dim_path(j),
                ));
            }
            if d == 0 && profile != Profile::LlamaCpp {
                self.tolerate(ErrorKind::ZeroDim, span, || dim_path(j), &mut warnings)?;
            }
        }
        let ggml_type = GgmlType::from_code(code);
        let type_span = Span::new(type_at, 4);
        let type_path = || path().with(PathSeg::Field("ggml_type"));
        match ggml_type {
            GgmlType::Unknown(code) => self.tolerate(
                ErrorKind::UnknownGgmlType { code },
                type_span,
                type_path,
                &mut warnings,
            )?,
            GgmlType::Removed(code) => {
                let kind = ErrorKind::RemovedGgmlType { code, name: ggml_type.name() };
                self.tolerate(kind, type_span, type_path, &mut warnings)?
            }
            _ => {}
        }
        let dims_span = Span::new(dims_at, dims.len() as u64 * dim_size);
        let dims_path = || path().with(PathSeg::Field("ne"));
        ggml_compat::element_count_check(profile, &dims)
            .map_err(|kind| Error::new(kind, dims_span.offset, dims_span.len, dims_path()))?;
        // The element count must fit whatever the type: `tensor_nbytes` reports an unsized
        // type before it looks at the dims, so a tolerated unknown type would otherwise let
        // an overflowing count through (and `TensorInfo::element_count` promises it fits).
        if ggml::tensor_element_count(&dims).is_err() {
            return Err(Error::new(
                ErrorKind::ElementCountOverflow,
                dims_span.offset,
                dims_span.len,
                dims_path(),
            ));
        }
        let nbytes = match ggml::tensor_nbytes(ggml_type, &dims) {
            Ok(n) => Some(n),
            // Already reported above (or tolerated): the size is unknown.
            Err(SizeError::UnsizedType(_)) => None,
            Err(SizeError::NotBlockMultiple { ne0, block_size, ty }) => {
                let kind = ErrorKind::NotBlockMultiple { ne0, block_size, ty };
                if dims.is_empty() {
                    // A scalar's row length is an implicit 1: there is no ne[0] to point at
                    // (its "span" would be the type field), so point at the empty dims.
                    self.tolerate(kind, dims_span, dims_path, &mut warnings)?;
                } else {
                    self.tolerate(kind, dim_span(0), || dim_path(0), &mut warnings)?;
                }
                None
            }
            Err(SizeError::ElementCountOverflow) => {
                return Err(Error::new(
                    ErrorKind::ElementCountOverflow,
                    dims_span.offset,
                    dims_span.len,
                    dims_path(),
                ));
            }
            Err(SizeError::ByteSizeOverflow) => {
                return Err(Error::new(
                    ErrorKind::ByteSizeOverflow,
                    dims_span.offset,
                    dims_span.len,
                    dims_path(),
                ));
            }
        };
        let offset_span = Span::new(offset_at, 8);
        let offset_path = || path().with(PathSeg::Field("offset"));
        for finding in self.placement.place(profile, self.alignment(), offset, nbytes) {
            match finding {
                layout::Finding::Fatal(kind) => {
                    return Err(Error::new(kind, offset_at, 8, offset_path()));
                }
                layout::Finding::Tolerable(kind) => {
                    self.tolerate(kind, offset_span, offset_path, &mut warnings)?
                }
                layout::Finding::Warning(kind) => {
                    warnings.push(Warning::new(kind, offset_at, 8, offset_path()))
                }
            }
        }

        let end = offset_in(buf, rest);
        self.tensors.push(TensorInfo {
            span: Span::between(start, end),
            name: name_span,
            dims,
            ggml_type,
            offset,
            nbytes,
            abs_offset: 0,
        });
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        self.names.insert(name, index as u32, resolve);
        if profile == Profile::LlamaCpp {
            self.c_names.insert(c_str(name), index as u32, |i| c_str(resolve(i)));
        }
        self.record(warnings);
        self.pos = end;
        self.state = self.next_section();
        Ok(Event::TensorInfo { index })
    }

    fn check_tensor_name(
        &self,
        buf: &[u8],
        name: &[u8],
        span: Span,
        path: &dyn Fn() -> Path,
        warnings: &mut SmallVec<[Warning; 2]>,
    ) -> Result<(), Error> {
        let profile = self.profile();
        let name_path = || path().with(PathSeg::Field("name"));
        let len = name.len() as u64;
        // The spec allows 64 bytes; ggml needs fewer than GGML_MAX_NAME (64).
        let max = if profile == Profile::LlamaCpp { 63 } else { 64 };
        if len > max {
            self.tolerate(ErrorKind::NameTooLong { len, max }, span, name_path, warnings)?;
        } else if len == 64 {
            warnings.push(Warning::new(
                WarningKind::NameRejectedByLlamaCpp,
                span.offset,
                span.len,
                name_path(),
            ));
        }
        if profile != Profile::LlamaCpp
            && let Err(e) = std::str::from_utf8(name)
        {
            let kind = ErrorKind::InvalidUtf8 {
                field: StrField::TensorName,
                valid_up_to: e.valid_up_to() as u64,
            };
            self.tolerate(kind, span, name_path, warnings)?;
        }
        if name.is_empty() {
            warnings.push(Warning::new(WarningKind::EmptyTensorName, span.offset, 0, name_path()));
        }
        let nul = ErrorKind::NulInName;
        warnings.extend(ggml_compat::check_nul(profile, name, nul, span, name_path)?);
        let tensors = &self.tensors;
        let resolve =
            |i: u32| tensors.get(i as usize).and_then(|t| t.name.slice(buf)).unwrap_or_default();
        let first = if profile == Profile::LlamaCpp {
            // ggml cuts names at their first NUL: "a\0x" and "a\0y" are the same tensor there.
            self.c_names.find(c_str(name), |i| c_str(resolve(i)))
        } else {
            self.names.find(name, resolve)
        };
        if let Some(first) = first {
            self.tolerate(
                ErrorKind::DuplicateTensor { first: first.into() },
                span,
                name_path,
                warnings,
            )?;
        }
        Ok(())
    }

    // ----- padding and layout --------------------------------------------------------------

    fn step_padding(&mut self, buf: &[u8]) -> Result<Event, Error> {
        let directory_end = self.pos;
        let alignment = self.alignment();
        let path = || Path::root().with(PathSeg::Padding);
        let data_offset = ggml::align_up(directory_end, alignment.into())
            .ok_or_else(|| Error::new(ErrorKind::OffsetOverflow, directory_end, 0, path()))?;
        let has_tensors = self.header.is_some_and(|h| h.tensor_count > 0);
        let data_offset =
            ggml_compat::data_offset(self.profile(), has_tensors, directory_end, data_offset);
        let mut warnings = SmallVec::<[Warning; 2]>::new();
        if has_tensors {
            // The padding must exist (ggml seeks to the data section); its bytes should be 0.
            if data_offset > self.opts.limits.max_header_bytes {
                return Err(Error::new(
                    ErrorKind::HeaderTooLarge { max: self.opts.limits.max_header_bytes },
                    directory_end,
                    data_offset - directory_end,
                    path(),
                ));
            }
            if (buf.len() as u64) < data_offset {
                return Ok(Event::NeedMore { needed: data_offset - buf.len() as u64 });
            }
            let pad = Span::between(directory_end, data_offset).slice(buf).unwrap_or_default();
            if pad.iter().any(|&b| b != 0) {
                warnings.push(Warning::new(
                    WarningKind::NonZeroPadding,
                    directory_end,
                    pad.len() as u64,
                    path(),
                ));
            }
        }
        let findings =
            layout::finish(self.profile(), &mut self.tensors, data_offset, self.opts.file_size);
        let tensor_path = |i: usize| {
            let name = self.tensors.get(i).map(|t| t.name);
            Self::tensor_path(buf, i, name).with(PathSeg::Field("offset"))
        };
        for f in findings {
            let at = self.tensors.get(f.tensor).map_or(directory_end, |t| t.span.end() - 8);
            match f.finding {
                layout::Finding::Fatal(kind) => {
                    return Err(Error::new(kind, at, 8, tensor_path(f.tensor)));
                }
                layout::Finding::Tolerable(kind) => {
                    self.tolerate(kind, Span::new(at, 8), || tensor_path(f.tensor), &mut warnings)?
                }
                layout::Finding::Warning(kind) => {
                    warnings.push(Warning::new(kind, at, 8, tensor_path(f.tensor)))
                }
            }
        }
        self.record(warnings);
        self.directory_end = directory_end;
        self.data_offset = data_offset;
        if has_tensors {
            self.pos = data_offset;
        }
        self.state = State::Done;
        Ok(Event::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_keys() {
        assert!(is_snake_case_key(b"tokenizer.ggml.bos_token_id"));
        assert!(is_snake_case_key(b"general.base_model.0.name"));
        assert!(!is_snake_case_key(b"General.name"));
        assert!(!is_snake_case_key(b"a..b"));
        assert!(!is_snake_case_key(b"a-b"));
    }
}
