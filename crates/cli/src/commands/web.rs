//! `sipllm web [--port P] [--no-open]`: serves the browser inspector (`web/`, built into the
//! binary) on 127.0.0.1 and opens it in the browser.
//!
//! A tiny HTTP/1.1 server on `std::net`: GET and HEAD of the page's few files, one short
//! connection at a time per thread, bounded in every way a local page needs (at most
//! [`MAX_CONNECTIONS`] at once, a request head of at most [`MAX_HEAD`] bytes, a read timeout),
//! and only on the loopback address. The page reads the model in the browser: nothing but
//! the page's own files crosses this server.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use sipllm_web::assets::asset;

use crate::cli::WebArgs;
use crate::{Ctx, Exit};

/// Connections served at once; more are answered `503` and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// The longest request head (request line and headers) read.
pub const MAX_HEAD: u64 = 8 << 10;
/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The page's policy: its own scripts and wasm only; reads (the `?url=` model) from anywhere.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
                   style-src 'self' 'unsafe-inline'; connect-src *; img-src 'self'";

/// Runs `web`: serves until interrupted.
pub fn run(args: &WebArgs, _ctx: &Ctx) -> io::Result<Exit> {
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, args.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "error[cli::web::bind]: cannot listen on 127.0.0.1:{}: {e}\n  \
                 help: choose another port with --port (0 picks a free one)",
                args.port
            );
            return Ok(Exit::Trouble);
        }
    };
    let url = format!("http://{}/", listener.local_addr()?);
    // The one line a script (or the browser tests) reads the address from.
    println!("serving the GGUF inspector at {url} (Ctrl-C stops it)");
    if !args.no_open {
        open_browser(&url);
    }
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            let _ = respond(&stream, 503, "text/plain; charset=utf-8", b"busy\n", true);
            continue;
        }
        let counter = Arc::clone(&active);
        let spawned = thread::Builder::new().name("sipllm-web".into()).spawn(move || {
            let _ = serve(&stream);
            counter.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            // The closure (and its guard) never ran.
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
    Ok(Exit::Ok)
}

/// Answers one request on `stream`, then closes it.
fn serve(stream: &TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(stream.take(MAX_HEAD));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // The headers are read (to the blank line) and ignored.
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let head = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            return respond(stream, 405, "text/plain; charset=utf-8", b"GET or HEAD only\n", false);
        }
    };
    match asset(target) {
        Some(a) => respond(stream, 200, a.content_type, a.bytes, head),
        None => respond(stream, 404, "text/plain; charset=utf-8", b"not found\n", head),
    }
}

fn respond(
    mut stream: &TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n\
         Content-Security-Policy: {CSP}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()
}

/// Opens `url` in the desktop's browser; says so when it cannot (the URL is printed anyway).
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener).arg(url).spawn() {
        eprintln!(
            "note: could not start `{opener}` to open the browser ({e}): open {url} yourself"
        );
    }
}
