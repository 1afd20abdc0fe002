//! A small range-serving HTTP/1.1 server on 127.0.0.1 with fault modes, for tests and
//! loopback measurements (the `test-server` feature; std only).
//!
//! It binds `127.0.0.1:0` only, answers at most [`ServerOptions::max_requests`] requests
//! (then `503` and close), gives every socket a 10 s timeout, and stops when dropped.
//! `GET /__stats` answers how many requests and body bytes it served before.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the server serves at a path.
#[derive(Debug, Clone)]
pub enum Body {
    /// Bytes in memory.
    Mem(Arc<[u8]>),
    /// A file, read by position.
    File(Arc<File>, u64),
    /// `len` zero bytes, never stored (a 4.9 GB object for the Range-ignoring test).
    Zeros(u64),
}

impl Body {
    /// A file served from disk.
    pub fn file(path: &std::path::Path) -> io::Result<Body> {
        let f = File::open(path)?;
        let len = f.metadata()?.len();
        Ok(Body::File(Arc::new(f), len))
    }

    fn len(&self) -> u64 {
        match self {
            Body::Mem(b) => b.len() as u64,
            Body::File(_, n) | Body::Zeros(n) => *n,
        }
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        match self {
            Body::Mem(b) => {
                let start = usize::try_from(offset).map_err(io::Error::other)?;
                let src = b.get(start..start + dst.len()).ok_or(io::ErrorKind::UnexpectedEof)?;
                dst.copy_from_slice(src);
                Ok(())
            }
            Body::File(f, _) => std::os::unix::fs::FileExt::read_exact_at(&**f, dst, offset),
            Body::Zeros(_) => {
                dst.fill(0);
                Ok(())
            }
        }
    }
}

/// A misbehaviour.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    /// Correct `206` answers.
    #[default]
    None,
    /// `200` with the whole body, whatever the `Range`.
    IgnoreRange,
    /// Every body is cut after this many bytes (the connection closed).
    CutShort(u64),
    /// The first `n` bodies are cut after half their bytes; later ones are whole.
    CutShortFirst(u64),
    /// `Content-Range` one byte off from the range asked for.
    WrongContentRange,
    /// `Content-Range: bytes A-B/*` (no total).
    UnknownTotal,
    /// No total either, and no suffix ranges: `bytes=-n` is answered `416` with
    /// `Content-Range: bytes */0`, as for an empty object.
    NoSuffixRange,
    /// `416` to every request.
    Always416,
    /// One body byte per this interval.
    SlowDrip(Duration),
    /// `ETag: "v1"` for the first `n` requests, `"v2"` after.
    EtagChangeAfter(u64),
    /// `302` to this base URL plus the path asked for.
    RedirectTo(String),
    /// `Content-Encoding: gzip` on every answer.
    Gzip,
    /// The first `times` requests answer `code` (with `Retry-After: 0`).
    Status {
        /// The status.
        code: u16,
        /// How many requests get it.
        times: u64,
    },
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The fault mode.
    pub fault: Fault,
    /// Write bodies in pieces of random sizes (1 byte to 64 KiB) from this seed, flushing
    /// each; `None` writes 1 MiB pieces.
    pub split_seed: Option<u64>,
    /// Requests answered before the server refuses more.
    pub max_requests: u64,
    /// Send an `ETag`.
    pub etag: bool,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions { fault: Fault::None, split_seed: None, max_requests: 100_000, etag: true }
    }
}

/// One request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The path.
    pub path: String,
    /// The `Range` header.
    pub range: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `Accept-Encoding` header.
    pub accept_encoding: Option<String>,
}

struct Shared {
    files: Mutex<HashMap<String, Body>>,
    opts: ServerOptions,
    log: Mutex<Vec<Logged>>,
    requests: AtomicU64,
    body_bytes: AtomicU64,
    /// Connections accepted, and of those the ones still open.
    accepted: AtomicU64,
    open: AtomicU64,
    stop: AtomicBool,
}

/// A running server; dropped, it stops.
pub struct TestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl TestServer {
    /// Starts serving `files` (path → body; paths start with `/`) on 127.0.0.1.
    pub fn start(files: Vec<(String, Body)>, opts: ServerOptions) -> io::Result<TestServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            files: Mutex::new(files.into_iter().collect()),
            opts,
            log: Mutex::new(Vec::new()),
            requests: AtomicU64::new(0),
            body_bytes: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::spawn(move || accept_loop(&listener, &s));
        Ok(TestServer { addr, shared, thread: Some(thread) })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }

    /// Adds or replaces a file.
    pub fn put(&self, path: &str, body: Body) {
        let mut files = self.shared.files.lock().unwrap_or_else(|e| e.into_inner());
        files.insert(format!("/{}", path.trim_start_matches('/')), body);
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Body bytes written so far (the socket accepted them).
    pub fn body_bytes(&self) -> u64 {
        self.shared.body_bytes.load(Ordering::SeqCst)
    }

    /// Connections accepted so far (a client that reuses connections opens few).
    pub fn connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now (accepted and not yet closed by either side).
    pub fn open_connections(&self) -> u64 {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Every request received so far.
    pub fn log(&self) -> Vec<Logged> {
        self.shared.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let s = shared.clone();
                s.accepted.fetch_add(1, Ordering::SeqCst);
                s.open.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = serve_connection(stream, &s);
                    s.open.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/").to_owned());
        let mut headers: HashMap<String, String> = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let n = shared.requests.fetch_add(1, Ordering::SeqCst) + 1;
        shared.log.lock().unwrap_or_else(|e| e.into_inner()).push(Logged {
            path: path.clone(),
            range: headers.get("range").cloned(),
            authorization: headers.get("authorization").cloned(),
            accept_encoding: headers.get("accept-encoding").cloned(),
        });
        if n > shared.opts.max_requests {
            simple(&mut out, 503, "too many requests to the test server", &[])?;
            return Ok(());
        }
        if method != "GET" && method != "HEAD" {
            simple(&mut out, 405, "GET only", &[])?;
            continue;
        }
        if !respond(&mut out, shared, n, &path, headers.get("range").map(String::as_str))? {
            return Ok(());
        }
    }
}

fn simple(out: &mut TcpStream, code: u16, body: &str, extra: &[String]) -> io::Result<()> {
    let mut head =
        format!("HTTP/1.1 {code} {}\r\nContent-Length: {}\r\n", reason(code), body.len());
    for e in extra {
        head.push_str(e);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// `bytes=a-b`, `bytes=a-`, `bytes=-n` against `len` → inclusive `(a, b)`, or `None`
/// (unsatisfiable).
fn parse_range(v: &str, len: u64) -> Option<(u64, u64)> {
    let spec = v.trim().strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 || len == 0 {
            return None;
        }
        return Some((len.saturating_sub(n), len - 1));
    }
    let a: u64 = a.parse().ok()?;
    let b: u64 = if b.is_empty() { len.checked_sub(1)? } else { b.parse().ok()? };
    if a >= len || a > b {
        return None;
    }
    Some((a, b.min(len - 1)))
}

/// Answers one request; `false` when the connection must close.
fn respond(
    out: &mut TcpStream,
    shared: &Shared,
    n: u64,
    path: &str,
    range: Option<&str>,
) -> io::Result<bool> {
    let fault = &shared.opts.fault;
    if path == "/__stats" {
        // What was served so far (this request excluded), for measurements.
        let text = format!(
            "requests {}\nbody_bytes {}\n",
            n - 1,
            shared.body_bytes.load(Ordering::SeqCst)
        );
        simple(out, 200, &text, &[])?;
        return Ok(true);
    }
    if let Fault::RedirectTo(base) = fault {
        simple(out, 302, "", &[format!("Location: {base}{path}")])?;
        return Ok(true);
    }
    if let Fault::Status { code, times } = fault
        && n <= *times
    {
        simple(out, *code, "try again", &["Retry-After: 0".into()])?;
        return Ok(true);
    }
    let body = shared.files.lock().unwrap_or_else(|e| e.into_inner()).get(path).cloned();
    let Some(body) = body else {
        simple(out, 404, "not found", &[])?;
        return Ok(true);
    };
    let len = body.len();
    let mut extra = Vec::new();
    if shared.opts.etag {
        let v = match fault {
            Fault::EtagChangeAfter(k) if n > *k => "v2",
            _ => "v1",
        };
        extra.push(format!("ETag: \"{v}\""));
    }
    if *fault == Fault::Gzip {
        extra.push("Content-Encoding: gzip".into());
    }
    if *fault == Fault::Always416 {
        simple(out, 416, "", &[format!("Content-Range: bytes */{len}")])?;
        return Ok(true);
    }
    if *fault == Fault::NoSuffixRange && range.is_some_and(|r| r.trim().starts_with("bytes=-")) {
        simple(out, 416, "", &["Content-Range: bytes */0".into()])?;
        return Ok(true);
    }
    let (status, start, end) = match (fault, range) {
        (Fault::IgnoreRange, _) | (_, None) => (200, 0, len),
        (_, Some(r)) => match parse_range(r, len) {
            Some((a, b)) => (206, a, b + 1),
            None => {
                simple(out, 416, "", &[format!("Content-Range: bytes */{len}")])?;
                return Ok(true);
            }
        },
    };
    if status == 206 {
        let total = if matches!(fault, Fault::UnknownTotal | Fault::NoSuffixRange) {
            "*".to_owned()
        } else {
            len.to_string()
        };
        let shift = u64::from(*fault == Fault::WrongContentRange);
        extra.push(format!("Content-Range: bytes {}-{}/{total}", start + shift, end - 1 + shift));
    }
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\n",
        reason(status),
        end - start
    );
    for e in &extra {
        head.push_str(e);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    let cut = match fault {
        Fault::CutShort(k) => Some(start + (*k).min(end - start)),
        Fault::CutShortFirst(k) if n <= *k => Some(start + (end - start) / 2),
        _ => None,
    };
    let stop_at = cut.unwrap_or(end);
    let mut rng = shared.opts.split_seed.map(|s| s ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = start;
    while pos < stop_at {
        let piece = match (&fault, rng.as_mut()) {
            (Fault::SlowDrip(_), _) => 1,
            (_, Some(state)) => {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                1 + (*state % (64 << 10))
            }
            (_, None) => buf.len() as u64,
        };
        let k = piece.min(stop_at - pos) as usize;
        let chunk = &mut buf[..k];
        body.read_at(pos, chunk)?;
        // Counted before the write: once the client holds the bytes, a test reading the
        // count must see them (counting after the write raced with the client's read).
        shared.body_bytes.fetch_add(k as u64, Ordering::SeqCst);
        let written = out.write_all(chunk).and_then(|()| {
            if rng.is_some() || matches!(fault, Fault::SlowDrip(_)) { out.flush() } else { Ok(()) }
        });
        if let Err(e) = written {
            shared.body_bytes.fetch_sub(k as u64, Ordering::SeqCst);
            return Err(e);
        }
        pos += k as u64;
        if let Fault::SlowDrip(d) = fault {
            std::thread::sleep(*d);
            if shared.stop.load(Ordering::SeqCst) {
                return Ok(false);
            }
        }
    }
    out.flush()?;
    Ok(cut.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_forms() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-1", 100), Some((99, 99)));
        assert_eq!(parse_range("bytes=0-1000", 100), Some((0, 99)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=0-1", 0), None);
    }
}
