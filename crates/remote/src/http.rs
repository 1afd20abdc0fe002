//! [`HttpSource`]: a [`ReadAt`] over HTTP(S) range requests.
//!
//! Every byte comes from a `GET` with `Range: bytes=A-B` that must answer `206` with a
//! `Content-Range` naming exactly that range; the object's size is that header's total,
//! learned from the first response (no `HEAD`). Three read paths, chosen per read:
//!
//! * **the first block** (2 MiB, [`HttpOptions::first_block`]) is fetched at open and kept:
//!   the magic and the start of the header are read from it.
//! * **streams**: every other read is served from an open response body, whose later reads
//!   continue it while they follow on (gaps up to 1 MiB, alignment padding, are read past).
//!   A stream opened where the last one ended asks for twice as much (4, 8, … MiB, up to
//!   [`HttpOptions::max_request`], 64 MiB), so the header reader's 64 KiB windows cost one
//!   request per doubling — a 7.7 MB header 3 requests and under twice its bytes — and a
//!   file-order pass (`verify`) one request per 64 MiB. A range announced with
//!   [`ReadAt::prefetch`] is one request (per 64 MiB) however it is read; any other read is
//!   one request for exactly its bytes. Bytes go from the socket into the caller's buffer;
//!   nothing else is cached.
//! * the first response pins the object's `ETag` (else `Last-Modified`); every later one must
//!   carry the same, or the read fails with `remote::http::changed`: bytes of two versions are never
//!   spliced.
//!
//! Faults are bounded: connect and per-read timeouts, a total deadline per read call,
//! [`HttpOptions::retries`] retries with exponential backoff on 429/5xx, transport errors
//! and bodies cut short (resumed where they stopped), at most [`HttpOptions::max_redirects`]
//! redirects (followed by hand: `Authorization` goes to the first URL's origin only, never
//! from `https` to `http`). A `200` to a ranged request is abandoned unread
//! (`remote::http::range_ignored`).

use std::fmt;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sipllm_streaming::{ReadAt, ShortRead};

use crate::error::{RemoteError, RemoteErrorKind};
use crate::url::HttpUrl;

/// The largest gap between a stream's position and the next read that is skipped by reading
/// and discarding (alignment padding between tensors) instead of opening a new request.
const SKIP_MAX: u64 = 1 << 20;

/// How an [`HttpSource`] talks to its server.
#[derive(Clone)]
pub struct HttpOptions {
    /// Time to connect (TCP and TLS) before the attempt fails (default 10 s).
    pub connect_timeout: Duration,
    /// Longest silence while waiting for bytes (default 30 s).
    pub read_timeout: Duration,
    /// The total time one read call may take, retries and redirects included (default
    /// 120 s; a read is at most [`max_request`](Self::max_request) bytes per request).
    pub deadline: Duration,
    /// The total time opening may take: [`HttpSource::open`]'s first block, and for
    /// [`open_model`](crate::open_model) the whole header — of every shard of a split set —
    /// however many read calls it takes (default 300 s). The per-call
    /// [`deadline`](Self::deadline) alone would let a server that drips bytes stretch a
    /// header of many reads without bound. Running out is `remote::http::open_timeout`.
    pub open_deadline: Duration,
    /// Retries after the first attempt, on 429/5xx, transport errors and short bodies
    /// (default 3).
    pub retries: u32,
    /// The first backoff; it doubles per retry (default 200 ms). `Retry-After` is honoured up
    /// to 10 s.
    pub backoff: Duration,
    /// Redirects followed per request (default 5).
    pub max_redirects: u32,
    /// The first block, fetched at open; each stream opened where the last one ended asks for
    /// twice as much as that one, up to [`max_request`](Self::max_request) (default 2 MiB).
    pub first_block: u64,
    /// The largest range one request asks for (default 64 MiB).
    pub max_request: u64,
    /// Sent as `Authorization: Bearer …`, to the given URL's origin only.
    pub bearer_token: Option<String>,
    /// The `User-Agent`.
    pub user_agent: String,
    /// Called with the total bytes received so far, after each body read (progress bars).
    pub on_progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
            open_deadline: Duration::from_secs(300),
            retries: 3,
            backoff: Duration::from_millis(200),
            max_redirects: 5,
            first_block: 2 << 20,
            max_request: 64 << 20,
            bearer_token: None,
            user_agent: concat!("sipllm/", env!("CARGO_PKG_VERSION")).to_owned(),
            on_progress: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("deadline", &self.deadline)
            .field("open_deadline", &self.open_deadline)
            .field("retries", &self.retries)
            .field("max_redirects", &self.max_redirects)
            .field("first_block", &self.first_block)
            .field("max_request", &self.max_request)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "REDACTED"))
            .finish_non_exhaustive()
    }
}

/// What an [`HttpSource`] has cost so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpStats {
    /// HTTP requests sent (redirect hops and retries included).
    pub requests: u64,
    /// Body bytes received (including bytes skipped over and block bytes never asked for).
    pub bytes: u64,
    /// Retries (after 429/5xx, transport errors, short bodies).
    pub retries: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    retries: AtomicU64,
}

/// The validator pinned at the first response.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Validator {
    ETag(String),
    LastModified(String),
}

impl Validator {
    fn of(resp: &ureq::http::Response<ureq::Body>) -> Option<Validator> {
        let h = |name| header(resp, name).map(str::to_owned);
        h("etag").map(Validator::ETag).or_else(|| h("last-modified").map(Validator::LastModified))
    }

    fn shown(&self) -> &str {
        match self {
            Validator::ETag(v) | Validator::LastModified(v) => v,
        }
    }
}

/// An open response body over `pos..end`.
struct Stream {
    reader: Body,
    pos: u64,
    end: u64,
    url: HttpUrl,
    hop: u32,
}

struct State {
    /// Where the last redirect chain ended (and its hop count): later requests go there
    /// directly, until it refuses (a presigned URL expired).
    location: Option<(HttpUrl, u32)>,
    /// The first block, fetched at open (the magic and the start of the header are read from
    /// it, then read again by the header reader).
    blocks: Vec<(u64, Vec<u8>)>,
    /// The length of the next stream opened where the last one ended.
    next_len: u64,
    /// Where the last stream opened was to end.
    last_stream_end: u64,
    /// Where the last read call ended.
    last_read_end: u64,
    stream: Option<Stream>,
    /// The last range announced with `prefetch`.
    hint: Option<(u64, u64)>,
    /// While opening: the instant the open deadline runs out, bounding every read call
    /// until [`HttpSource::opened`].
    until: Option<Instant>,
}

impl State {
    /// The deadline of a read call starting now: the per-call one, or the open deadline
    /// when that is nearer.
    fn deadline(&self, opts: &HttpOptions) -> Instant {
        let per_call = Instant::now() + opts.deadline;
        self.until.map_or(per_call, |u| u.min(per_call))
    }

    fn explain(&self, opts: &HttpOptions, e: RemoteError) -> RemoteError {
        match self.until {
            Some(until) => open_timeout(e, until, opts.open_deadline),
            None => e,
        }
    }
}

/// `e`, or `remote::http::open_timeout` (with `e`'s URL, hop and status) when the open deadline
/// `until` has run out and `e` is what running out of time looks like: a timeout, or a
/// transient failure (a broken connection or body, 429/5xx) whose retries the deadline cut
/// short. Any other error (a changed object, a bad range) is itself the reason.
fn open_timeout(e: RemoteError, until: Instant, limit: Duration) -> RemoteError {
    let transient = matches!(
        e.kind,
        RemoteErrorKind::Timeout { .. }
            | RemoteErrorKind::Connect { .. }
            | RemoteErrorKind::ShortBody { .. }
            | RemoteErrorKind::Status
    );
    if transient && Instant::now() >= until {
        RemoteError { kind: RemoteErrorKind::OpenTimeout { limit }, ..e }
    } else {
        e
    }
}

/// The connection pool the sources of one model share (every shard of a split set, which
/// are siblings on one host): one idle connection serves the next shard's requests, instead
/// of an agent, a socket and its 1 MiB input buffer kept per shard. At most 4 idle
/// connections are kept (2 per host), each for at most 15 s.
pub(crate) fn agent(opts: &HttpOptions) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .accept_encoding("identity")
        .user_agent(opts.user_agent.as_str())
        .timeout_connect(Some(opts.connect_timeout))
        .timeout_per_read(Some(opts.read_timeout))
        // Fewer, larger socket reads for bodies of many MiB.
        .input_buffer_size(1 << 20)
        .max_idle_connections(4)
        .max_idle_connections_per_host(2)
        .max_idle_age(Duration::from_secs(15))
        .build()
        .into()
}

/// A remote object read by HTTP range requests, as a [`ReadAt`]. See the module docs.
pub struct HttpSource {
    url: HttpUrl,
    agent: ureq::Agent,
    opts: HttpOptions,
    len: u64,
    validator: Option<Validator>,
    state: Mutex<State>,
    counters: Counters,
}

impl fmt::Debug for HttpSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSource")
            .field("url", &self.url)
            .field("len", &self.len)
            .field("stats", &self.stats())
            .finish()
    }
}

/// What one request must answer.
struct Asked {
    start: u64,
    /// Inclusive; `None` for a suffix request (`bytes=-1`).
    last: Option<u64>,
}

impl Asked {
    fn header(&self) -> String {
        match self.last {
            Some(last) => format!("bytes={}-{last}", self.start),
            None => "bytes=-1".to_owned(),
        }
    }
}

/// A validated `206` (or, for the first request of an empty object, a `416` `*/0`).
struct Answer {
    stream: Stream,
    total: Option<u64>,
    validator: Option<Validator>,
}

impl HttpSource {
    /// Opens `url`: one ranged `GET` of the first block, which gives the size (and pins the
    /// validator). Nothing else is fetched until read. The open is bounded by
    /// [`HttpOptions::open_deadline`] as well as the per-call deadline.
    pub fn open(url: HttpUrl, opts: HttpOptions) -> Result<HttpSource, RemoteError> {
        let agent = agent(&opts);
        let until = Instant::now() + opts.open_deadline;
        let src = HttpSource::open_in(url, opts, agent, until)?;
        src.opened();
        Ok(src)
    }

    /// [`open`](Self::open) through `agent` (shared with the other sources of a model), with
    /// every read call bounded by `until` as well as the per-call deadline until
    /// [`opened`](Self::opened) is called.
    pub(crate) fn open_in(
        url: HttpUrl,
        opts: HttpOptions,
        agent: ureq::Agent,
        until: Instant,
    ) -> Result<HttpSource, RemoteError> {
        let first_block = opts.first_block.max(1);
        let limit = opts.open_deadline;
        let src = HttpSource {
            url,
            agent,
            len: 0,
            validator: None,
            state: Mutex::new(State {
                location: None,
                blocks: Vec::new(),
                next_len: first_block,
                last_stream_end: 0,
                last_read_end: 0,
                stream: None,
                hint: None,
                until: Some(until),
            }),
            counters: Counters::default(),
            opts,
        };
        src.fetch_first_block(first_block).map_err(|e| open_timeout(e, until, limit))
    }

    /// The first request: the size, the validator and the first block.
    fn fetch_first_block(mut self, first_block: u64) -> Result<HttpSource, RemoteError> {
        let src = &mut self;
        let mut guard = src.state.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = guard.deadline(&src.opts);
        let st = &mut *guard;
        let asked = Asked { start: 0, last: Some(first_block - 1) };
        let answer = src_request(
            &src.url,
            &src.agent,
            &src.opts,
            &src.counters,
            st,
            &asked,
            deadline,
            None,
            None,
        )?;
        let Some(answer) = answer else {
            // `416` with `bytes */0`: an empty object.
            drop(guard);
            return Ok(self);
        };
        src.validator = answer.validator.clone();
        let mut stream = answer.stream;
        let got_end = stream.end;
        let len = match answer.total {
            Some(total) => total,
            // The server clamps the last position to the object's end: a shorter answer
            // than asked means the object ends there.
            None if got_end < first_block => got_end,
            None => {
                drop(stream);
                let probe = Asked { start: 0, last: None };
                let answer = src_request(
                    &src.url,
                    &src.agent,
                    &src.opts,
                    &src.counters,
                    st,
                    &probe,
                    deadline,
                    src.validator.as_ref(),
                    None,
                )?;
                let Some(a) = answer else {
                    return Err(RemoteError::new(RemoteErrorKind::UnknownSize)
                        .with_url(&src.url.as_request_url()));
                };
                let len = a.total.unwrap_or(a.stream.end);
                // Refetch the first block now that the size is known.
                let asked = Asked { start: 0, last: Some(first_block.min(len).saturating_sub(1)) };
                match src_request(
                    &src.url,
                    &src.agent,
                    &src.opts,
                    &src.counters,
                    st,
                    &asked,
                    deadline,
                    src.validator.as_ref(),
                    Some(len),
                )? {
                    Some(a) => stream = a.stream,
                    None => {
                        return Err(RemoteError::new(RemoteErrorKind::UnknownSize)
                            .with_url(&src.url.as_request_url()));
                    }
                }
                len
            }
        };
        drop(guard);
        src.len = len;
        let block_len = stream.end - stream.pos;
        if block_len > 0 {
            let mut st = src.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut broken = 0;
            let block =
                src.fill_block(&mut st, Some(stream), 0, block_len, deadline, &mut broken)?;
            st.last_stream_end = block_len;
            st.blocks.push((0, block));
        }
        Ok(self)
    }

    /// The URL as given.
    pub fn url(&self) -> &HttpUrl {
        &self.url
    }

    /// What this source has cost so far.
    pub fn stats(&self) -> HttpStats {
        HttpStats {
            requests: self.counters.requests.load(Ordering::Relaxed),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
            retries: self.counters.retries.load(Ordering::Relaxed),
        }
    }

    /// Ends the opening: reads are bounded by the per-call deadline alone from now on.
    pub(crate) fn opened(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).until = None;
    }

    /// Closes the open response body, if any, and with it its connection: a shard of a set
    /// whose header is read must not hold a socket (and its buffer) until its tensors are,
    /// or a 1000-shard set holds 1000. The next read opens a request of its own.
    pub(crate) fn release(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stream = None;
    }

    fn read_locked(&self, st: &mut State, offset: u64, dst: &mut [u8]) -> Result<(), RemoteError> {
        let deadline = st.deadline(&self.opts);
        let len = dst.len() as u64;
        let mut done = 0usize;
        let mut broken = 0u32;
        while let Some(rest) = dst.get_mut(done..).filter(|r| !r.is_empty()) {
            let pos = offset + done as u64;
            let want = rest.len() as u64;
            if let Some(n) = copy_from_blocks(&st.blocks, pos, rest) {
                done += n;
                continue;
            }
            if let Some(s) = st
                .stream
                .as_mut()
                .filter(|s| s.pos <= pos && pos < s.end && pos - s.pos <= SKIP_MAX)
            {
                let n = want.min(s.end - pos) as usize;
                let result =
                    skip(&self.counters, &self.opts, s, pos - s.pos, deadline).and_then(|()| {
                        read_stream(&self.counters, &self.opts, s, &mut rest[..n], deadline)
                            .map_err(|(got, e)| {
                                done += got;
                                e
                            })
                    });
                match result {
                    Ok(()) => {
                        done += n;
                        if s.pos == s.end
                            && let Some(s) = st.stream.take()
                        {
                            finish(s);
                        }
                    }
                    Err(e) => {
                        st.stream = None;
                        broken += 1;
                        if broken > self.opts.retries || Instant::now() >= deadline {
                            return Err(e);
                        }
                        self.counters.retries.fetch_add(1, Ordering::Relaxed);
                        backoff(&self.opts, broken, deadline, None);
                    }
                }
                continue;
            }
            st.stream = None;
            // A new stream: as far as announced; growing geometrically (2, 4, 8, … MiB up to
            // `max_request`) while reads follow on, which is how a header of any size costs
            // O(log size) requests and at most twice its bytes; else just the read.
            let hinted = st.hint.filter(|&(a, b)| a <= pos && pos < b);
            let follows = pos.abs_diff(st.last_read_end) <= SKIP_MAX || pos == st.last_stream_end;
            let span = match hinted {
                Some((_, b)) => b - pos,
                None if follows => {
                    st.next_len = st.next_len.saturating_mul(2).min(self.opts.max_request);
                    st.next_len
                }
                None => {
                    st.next_len = self.opts.first_block;
                    want
                }
            };
            let span = span.max(want).clamp(1, self.opts.max_request.max(1)).min(self.len - pos);
            let end = pos + span;
            st.stream = Some(self.open_stream(st, pos, end, deadline)?);
            st.last_stream_end = end;
            if hinted.is_some_and(|(_, b)| end >= b) {
                // The announced range is all requested: it no longer keeps a narrower
                // announcement (a later read of a part of it) from taking its place.
                st.hint = None;
            }
        }
        st.last_read_end = offset + len;
        Ok(())
    }

    /// Reads `start..start + len` into a new buffer, from `first` if given, resuming with a
    /// new request where a body breaks off (counted in `broken`, bounded by the retries).
    fn fill_block(
        &self,
        st: &mut State,
        first: Option<Stream>,
        start: u64,
        len: u64,
        deadline: Instant,
        broken: &mut u32,
    ) -> Result<Vec<u8>, RemoteError> {
        let end = start + len;
        let mut block = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        let mut stream = first;
        let mut have = 0usize;
        while let Some(rest) = block.get_mut(have..).filter(|r| !r.is_empty()) {
            let mut s = match stream.take() {
                Some(s) => s,
                None => self.open_stream(st, start + have as u64, end, deadline)?,
            };
            match read_stream(&self.counters, &self.opts, &mut s, rest, deadline) {
                Ok(()) => {
                    have = block.len();
                    finish(s);
                }
                Err((got, e)) => {
                    have += got;
                    *broken += 1;
                    if *broken > self.opts.retries || Instant::now() >= deadline {
                        return Err(e);
                    }
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                    backoff(&self.opts, *broken, deadline, None);
                }
            }
        }
        Ok(block)
    }

    fn open_stream(
        &self,
        st: &mut State,
        start: u64,
        end: u64,
        deadline: Instant,
    ) -> Result<Stream, RemoteError> {
        let asked = Asked { start, last: Some(end - 1) };
        match src_request(
            &self.url,
            &self.agent,
            &self.opts,
            &self.counters,
            st,
            &asked,
            deadline,
            self.validator.as_ref(),
            Some(self.len),
        )? {
            Some(a) => Ok(a.stream),
            None => Err(RemoteError::new(RemoteErrorKind::RangeNotSatisfiable)
                .with_url(&self.url.as_request_url())
                .with_status(416)),
        }
    }
}

impl ReadAt for HttpSource {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        ShortRead::check(offset, dst.len() as u64, self.len).map_err(ShortRead::into_io)?;
        if dst.is_empty() {
            return Ok(());
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let result = self.read_locked(&mut st, offset, dst);
        result.map_err(|e| st.explain(&self.opts, e).into_io())
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// Announces a range: the next read inside it opens one request to its end (at most
    /// [`HttpOptions::max_request`]) instead of one per read. A range inside the one
    /// announced last, while that one is not yet all requested, keeps it: a caller that
    /// announces a whole tensor and then reads it in pieces that each announce themselves
    /// (the values reads) still gets one request per 64 MiB, not one per piece.
    fn prefetch(&self, offset: u64, len: u64) -> io::Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let new = (offset, offset.saturating_add(len).min(self.len));
        match st.hint {
            Some((a, b)) if a <= new.0 && new.1 <= b => {}
            _ => st.hint = Some(new),
        }
        Ok(())
    }
}

/// The block holding `pos`: copies what it has of `dst` from there.
fn copy_from_blocks(blocks: &[(u64, Vec<u8>)], pos: u64, dst: &mut [u8]) -> Option<usize> {
    let (start, block) =
        blocks.iter().rev().find(|(s, b)| *s <= pos && pos < s + b.len() as u64)?;
    let from = block.get((pos - start) as usize..)?;
    let n = from.len().min(dst.len());
    dst.get_mut(..n)?.copy_from_slice(from.get(..n)?);
    Some(n)
}

/// Reads all of `dst` from the stream; on failure, how many bytes arrived and the error.
fn read_stream(
    counters: &Counters,
    opts: &HttpOptions,
    s: &mut Stream,
    dst: &mut [u8],
    deadline: Instant,
) -> Result<(), (usize, RemoteError)> {
    let mut got = 0usize;
    while let Some(rest) = dst.get_mut(got..).filter(|r| !r.is_empty()) {
        match s.reader.read(rest) {
            Ok(0) => {
                let expected = s.end.saturating_sub(s.pos) + got as u64;
                let kind = RemoteErrorKind::ShortBody { got: got as u64, expected };
                return Err((got, stream_error(s, kind)));
            }
            Ok(n) => {
                let n = n.min(rest.len());
                got += n;
                s.pos += n as u64;
                let total = counters.bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
                if let Some(cb) = &opts.on_progress {
                    cb(total);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let timed_out = e.kind() == io::ErrorKind::TimedOut
                    || Instant::now() >= deadline
                    || e.get_ref()
                        .and_then(|i| i.downcast_ref::<ureq::Error>())
                        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
                let kind = match e.kind() {
                    _ if timed_out => {
                        RemoteErrorKind::Timeout { what: format!("reading the body: {e}") }
                    }
                    io::ErrorKind::UnexpectedEof => {
                        let expected = s.end.saturating_sub(s.pos) + got as u64;
                        RemoteErrorKind::ShortBody { got: got as u64, expected }
                    }
                    _ => RemoteErrorKind::Connect { detail: format!("reading the body: {e}") },
                };
                return Err((got, stream_error(s, kind)));
            }
        }
    }
    Ok(())
}

fn stream_error(s: &Stream, kind: RemoteErrorKind) -> RemoteError {
    RemoteError::new(kind).with_url(&s.url.as_request_url()).with_hop(s.hop).with_status(206)
}

/// Reads and discards `n` bytes (a gap between reads on one stream).
fn skip(
    counters: &Counters,
    opts: &HttpOptions,
    s: &mut Stream,
    n: u64,
    deadline: Instant,
) -> Result<(), RemoteError> {
    let mut buf = [0u8; 8192];
    let mut left = n;
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        read_stream(counters, opts, s, &mut buf[..k], deadline).map_err(|(_, e)| e)?;
        left -= k as u64;
    }
    Ok(())
}

/// Ends a fully read body: one more read lets the client see its end and keep the
/// connection for the next request.
fn finish(s: Stream) {
    match s.reader {
        Body::Direct(mut r) => {
            let mut byte = [0u8; 1];
            let _ = r.read(&mut byte);
        }
        // The pump does it when it reaches the end.
        Body::Pumped(_) => {}
    }
}

/// Streams at least this long are read by a pump thread.
const PUMP_FROM: u64 = 4 << 20;
/// The pump's pieces, and how many wait for the reader at most: the socket is drained while
/// the caller hashes or writes what it read, with at most 8 MiB in flight.
const PUMP_CHUNK: u64 = 1 << 20;
const PUMP_DEPTH: usize = 8;

/// A response body: read in place, or by a pump thread ahead of the reader.
enum Body {
    Direct(ureq::BodyReader<'static>),
    Pumped(Pump),
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Body::Direct(r) => r.read(buf),
            Body::Pumped(p) => p.read(buf),
        }
    }
}

/// The reading end of a pump: chunks of the body in order, then the body's error if it
/// failed; the end of the channel is the end of the body. Dropping it stops the pump (its
/// next send fails), which drops the response and closes the connection. The pump itself
/// is bounded by the request's timeouts, so it cannot outlive a stalled server for long.
struct Pump {
    rx: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    /// Read chunks go back to the pump to be filled again (no page faults per chunk).
    spent: std::sync::mpsc::SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Pump {
    fn start(mut body: ureq::BodyReader<'static>, len: u64) -> Pump {
        let (tx, rx) = std::sync::mpsc::sync_channel(PUMP_DEPTH);
        let (spent, reuse) = std::sync::mpsc::sync_channel::<Vec<u8>>(PUMP_DEPTH + 2);
        std::thread::spawn(move || {
            let mut left = len;
            while left > 0 {
                let mut buf = reuse.try_recv().unwrap_or_default();
                buf.resize(PUMP_CHUNK.min(left) as usize, 0);
                let mut n = 0;
                while let Some(rest) = buf.get_mut(n..).filter(|r| !r.is_empty()) {
                    match body.read(rest) {
                        Ok(0) => break,
                        Ok(k) => n += k.min(rest.len()),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            buf.truncate(n);
                            if n > 0 {
                                let _ = tx.send(Ok(buf));
                            }
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
                let full = n == buf.len();
                buf.truncate(n);
                left -= n as u64;
                if n > 0 && tx.send(Ok(buf)).is_err() {
                    return;
                }
                if !full {
                    // The body ended early: the reader sees the channel end.
                    return;
                }
            }
            // Let the client see the end of the body and keep the connection.
            let mut byte = [0u8; 1];
            let _ = body.read(&mut byte);
        });
        Pump { rx, spent, chunk: Vec::new(), at: 0 }
    }
}

impl Read for Pump {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.chunk.len() {
            match self.rx.recv() {
                Ok(Ok(chunk)) => {
                    let old = std::mem::replace(&mut self.chunk, chunk);
                    if old.capacity() > 0 {
                        let _ = self.spent.try_send(old);
                    }
                    self.at = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let from = self.chunk.get(self.at..).unwrap_or_default();
        let n = from.len().min(buf.len());
        buf.get_mut(..n).unwrap_or_default().copy_from_slice(from.get(..n).unwrap_or_default());
        self.at += n;
        Ok(n)
    }
}

fn header<'r>(resp: &'r ureq::http::Response<ureq::Body>, name: &str) -> Option<&'r str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// `bytes A-B/T` → `(A, B, Some(T))`, `bytes A-B/*` → `(A, B, None)`.
pub(crate) fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (a, b) = range.trim().split_once('-')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    (a <= b && total.is_none_or(|t| b < t)).then_some((a, b, total))
}

/// `bytes */T` (a 416's) → `T`.
fn parse_unsatisfied(v: &str) -> Option<u64> {
    v.trim().strip_prefix("bytes")?.trim_start().strip_prefix("*/")?.trim().parse().ok()
}

fn backoff(opts: &HttpOptions, attempt: u32, deadline: Instant, retry_after: Option<Duration>) {
    let exp = opts.backoff.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let wait = retry_after
        .map_or(exp, |r| r.min(Duration::from_secs(10)).max(exp))
        .min(Duration::from_secs(10));
    let left = deadline.saturating_duration_since(Instant::now());
    std::thread::sleep(wait.min(left));
}

/// Sends one ranged GET (following redirects, retrying 429/5xx and transport errors) and
/// checks the answer. `known_len` is the object's size once known; `None` while opening.
/// `Ok(None)` is a `416` whose `Content-Range` is `bytes */0` at open (an empty object).
#[allow(clippy::too_many_arguments)]
fn src_request(
    origin: &HttpUrl,
    agent: &ureq::Agent,
    opts: &HttpOptions,
    counters: &Counters,
    st: &mut State,
    asked: &Asked,
    deadline: Instant,
    pinned: Option<&Validator>,
    known_len: Option<u64>,
) -> Result<Option<Answer>, RemoteError> {
    let mut attempt = 0u32;
    loop {
        let (mut url, mut hop) = st.location.clone().unwrap_or_else(|| (origin.clone(), 0));
        let from_cached_location = st.location.is_some();
        let fail = |kind: RemoteErrorKind, url: &HttpUrl, hop: u32| {
            RemoteError::new(kind).with_url(&url.as_request_url()).with_hop(hop)
        };
        // One request per hop until a non-redirect answer.
        let sent = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(fail(
                    RemoteErrorKind::Timeout {
                        what: format!("the total deadline ({:?})", opts.deadline),
                    },
                    &url,
                    hop,
                ));
            }
            let mut req = agent
                .get(url.as_request_url())
                .header("Range", asked.header())
                .header("Accept-Encoding", "identity");
            if let Some(token) = &opts.bearer_token
                && url.origin() == origin.origin()
            {
                req = req.header("Authorization", format!("Bearer {token}"));
            }
            counters.requests.fetch_add(1, Ordering::Relaxed);
            let result = req.config().timeout_global(Some(left)).build().call();
            let resp = match result {
                Ok(r) => r,
                Err(e) => break Err(transport_error(e, &url, hop)),
            };
            let status = resp.status().as_u16();
            if matches!(status, 301 | 302 | 303 | 307 | 308) {
                let Some(loc) = header(&resp, "location") else {
                    return Err(fail(
                        RemoteErrorKind::BadRedirect { why: "no Location header".into() },
                        &url,
                        hop,
                    )
                    .with_status(status));
                };
                let next = url.join(loc).map_err(|e| {
                    fail(
                        RemoteErrorKind::BadRedirect {
                            why: format!("Location is no URL this tool follows ({})", e.kind),
                        },
                        &url,
                        hop,
                    )
                    .with_status(status)
                })?;
                if url.is_https() && !next.is_https() {
                    return Err(fail(
                        RemoteErrorKind::BadRedirect { why: "from https to http".into() },
                        &url,
                        hop,
                    )
                    .with_status(status));
                }
                if hop >= opts.max_redirects {
                    return Err(fail(
                        RemoteErrorKind::TooManyRedirects { max: opts.max_redirects },
                        &url,
                        hop,
                    )
                    .with_status(status));
                }
                url = next;
                hop += 1;
                continue;
            }
            break Ok(resp);
        };
        let resp = match sent {
            Ok(r) => r,
            Err((e, retryable)) => {
                attempt += 1;
                if !retryable || attempt > opts.retries || Instant::now() >= deadline {
                    return Err(e);
                }
                counters.retries.fetch_add(1, Ordering::Relaxed);
                backoff(opts, attempt, deadline, None);
                continue;
            }
        };
        let status = resp.status().as_u16();
        let here = |kind: RemoteErrorKind| fail(kind, &url, hop).with_status(status);
        if let Some(enc) =
            header(&resp, "content-encoding").filter(|e| !e.eq_ignore_ascii_case("identity"))
        {
            return Err(here(RemoteErrorKind::Encoded { encoding: enc.to_owned() }));
        }
        match status {
            206 => {}
            200 => return Err(here(RemoteErrorKind::RangeIgnored)),
            412 => {
                let found = Validator::of(&resp).map(|v| v.shown().to_owned()).unwrap_or_default();
                let pinned = pinned.map(|v| v.shown().to_owned()).unwrap_or_default();
                return Err(here(RemoteErrorKind::Changed { pinned, found }));
            }
            416 => {
                let empty = known_len.is_none()
                    && header(&resp, "content-range").and_then(parse_unsatisfied) == Some(0);
                if empty {
                    return Ok(None);
                }
                return Err(here(RemoteErrorKind::RangeNotSatisfiable));
            }
            401 | 403 | 404 | 410 if from_cached_location => {
                // A presigned redirect target expired: resolve again from the URL given.
                st.location = None;
                attempt += 1;
                if attempt > opts.retries {
                    return Err(here(RemoteErrorKind::Status));
                }
                continue;
            }
            429 | 500..=599 => {
                attempt += 1;
                if attempt > opts.retries || Instant::now() >= deadline {
                    return Err(here(RemoteErrorKind::Status));
                }
                counters.retries.fetch_add(1, Ordering::Relaxed);
                let retry_after = header(&resp, "retry-after")
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(Duration::from_secs);
                drop(resp);
                backoff(opts, attempt, deadline, retry_after);
                continue;
            }
            _ => return Err(here(RemoteErrorKind::Status)),
        }
        // A 206: it must be the range asked for, of this object.
        let asked_s = asked.header();
        let cr = header(&resp, "content-range").unwrap_or_default().to_owned();
        let bad =
            || here(RemoteErrorKind::BadContentRange { asked: asked_s.clone(), found: cr.clone() });
        let (a, b, total) = parse_content_range(&cr).ok_or_else(bad)?;
        if let (Some(k), Some(t)) = (known_len, total)
            && k != t
        {
            let pinned =
                pinned.map(|v| v.shown().to_owned()).unwrap_or_else(|| format!("{k} bytes"));
            return Err(here(RemoteErrorKind::Changed { pinned, found: format!("{t} bytes") }));
        }
        let size = total.or(known_len);
        match asked.last {
            Some(last) => {
                let expect_end = size.map_or(b, |s| last.min(s.saturating_sub(1)));
                if a != asked.start || b > last || b != expect_end {
                    return Err(bad());
                }
            }
            None => {
                if size.is_some_and(|s| b + 1 != s) {
                    return Err(bad());
                }
            }
        }
        if let Some(cl) = header(&resp, "content-length")
            && cl.parse::<u64>().ok() != Some(b - a + 1)
        {
            return Err(bad());
        }
        let validator = Validator::of(&resp);
        if let Some(p) = pinned
            && validator.as_ref() != Some(p)
        {
            let found = validator.map(|v| v.shown().to_owned()).unwrap_or_default();
            return Err(here(RemoteErrorKind::Changed { pinned: p.shown().to_owned(), found }));
        }
        if hop > 0 {
            st.location = Some((url.clone(), hop));
        }
        let reader = resp.into_body().into_reader();
        let span = b - a + 1;
        let reader = if span >= PUMP_FROM && a > 0 {
            Body::Pumped(Pump::start(reader, span))
        } else {
            Body::Direct(reader)
        };
        let stream = Stream { reader, pos: a, end: b + 1, url, hop };
        let total = total.or(if asked.last.is_none() { Some(b + 1) } else { None });
        return Ok(Some(Answer { stream, total, validator }));
    }
}

/// A transport error, and whether retrying may help.
fn transport_error(e: ureq::Error, url: &HttpUrl, hop: u32) -> (RemoteError, bool) {
    let (kind, retryable) = match &e {
        ureq::Error::Timeout(t) => (RemoteErrorKind::Timeout { what: format!("{t}") }, true),
        ureq::Error::Io(io) => (RemoteErrorKind::Connect { detail: io.to_string() }, true),
        ureq::Error::ConnectionFailed | ureq::Error::Protocol(_) => {
            (RemoteErrorKind::Connect { detail: e.to_string() }, true)
        }
        ureq::Error::BadUri(why) => (RemoteErrorKind::BadUrl { why: why.clone() }, false),
        _ => (RemoteErrorKind::Connect { detail: e.to_string() }, false),
    };
    (RemoteError::new(kind).with_url(&url.as_request_url()).with_hop(hop), retryable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_forms() {
        assert_eq!(parse_content_range("bytes 0-99/1000"), Some((0, 99, Some(1000))));
        assert_eq!(parse_content_range("bytes 5-5/*"), Some((5, 5, None)));
        assert_eq!(parse_content_range("bytes 10-5/100"), None);
        assert_eq!(parse_content_range("bytes 0-100/100"), None);
        assert_eq!(parse_content_range("items 0-1/2"), None);
        assert_eq!(parse_content_range(""), None);
        assert_eq!(parse_unsatisfied("bytes */0"), Some(0));
    }

    #[test]
    fn block_lookup() {
        let blocks = vec![(0u64, vec![1u8, 2, 3]), (10, vec![4, 5])];
        let mut dst = [0u8; 4];
        assert_eq!(copy_from_blocks(&blocks, 1, &mut dst), Some(2));
        assert_eq!(&dst[..2], &[2, 3]);
        assert_eq!(copy_from_blocks(&blocks, 3, &mut dst), None);
        assert_eq!(copy_from_blocks(&blocks, 11, &mut dst), Some(1));
    }
}
