//! The GGUF inspector in the browser: what `sipllm inspect --json` and `sipllm validate`
//! report, computed in wasm32 from a local `File` or a URL, reading the header only.
//!
//! The read side is synchronous ([`ReadAt`]); a browser reads a `Blob` or a URL
//! asynchronously, except in a Web Worker, where `FileReaderSync` and synchronous
//! `XMLHttpRequest` (with a `Range` header) read byte ranges synchronously. So the page runs
//! this module in a worker (`static/worker.js`) that defines the global `sipllmReadAt(offset,
//! dst)` over the file or URL, and the wasm opens the model through exactly the code
//! `sipllm inspect` uses ([`Model::from_named_source`], the refilling header window, the
//! `inspect --json` records of `sipllm-view`), through [`Readahead`], which turns the header
//! reader's 64 KiB windows into O(log header) reads of at most twice the header's bytes.
//!
//! Nothing is uploaded and nothing but header windows is read: the page shows how many
//! reads and bytes that took.

#![forbid(unsafe_code)]

// Not in the wasm itself: the page's files include the wasm.
#[cfg(not(target_arch = "wasm32"))]
pub mod assets;

use std::io;
use std::sync::{Arc, Mutex};

use miette::Severity;
use serde::Serialize;
use sipllm_hexview::{Excerpt, HexDiagnostic, Renderer};
use sipllm_streaming::{
    Model, OpenOptions, ReadAt, ShortRead, StreamError, StreamErrorKind, WeightSource,
};
use sipllm_view::View;
use sipllm_view::json::{ArrayMode, InspectDoc, write_line};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// The worker's reader (`static/worker.js`): fills `dst` with the bytes at `offset` of the
    /// file or URL being inspected, or throws.
    #[wasm_bindgen(catch, js_name = sipllmReadAt)]
    fn js_read_at(offset: f64, dst: &mut [u8]) -> Result<(), JsValue>;
}

/// The largest offset a JS number holds exactly (2^53): no file reaches it.
const MAX_SAFE_OFFSET: u64 = 1 << 53;

/// The file or URL the worker reads, `len` bytes long.
#[derive(Debug, Clone, Copy)]
struct JsSource {
    len: u64,
}

impl ReadAt for JsSource {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        ShortRead::check(offset, dst.len() as u64, self.len).map_err(ShortRead::into_io)?;
        if offset > MAX_SAFE_OFFSET {
            return Err(io::Error::other(format!("offset {offset} is past 2^53")));
        }
        js_read_at(offset as f64, dst).map_err(|e| {
            let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
            io::Error::other(format!("the browser could not read the bytes: {why}"))
        })
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// The first read of a run of reads that follow on: what a header's first windows cost.
pub const FIRST_BLOCK: u64 = 64 << 10;
/// The largest read: the block a run of reads doubles up to.
pub const MAX_BLOCK: u64 = 16 << 20;

/// A [`ReadAt`] that serves reads from one block read ahead, each run of reads doubling.
///
/// A read inside the block is served from it. Any other read fetches a new block starting at
/// its offset: when it follows on where the block ended, as long as the whole run of blocks so
/// far (up to [`MAX_BLOCK`]), else [`FIRST_BLOCK`] (a new run); never less than the read, never
/// past the end. The header reader's 64 KiB windows thus cost one read per doubling of the
/// bytes read (a 7.7 MB header 8 reads), and the bytes read are less than twice the end of the
/// last read asked for — the header plus at most one 64 KiB window. One request per read
/// matters for a URL (each is an HTTP request) and for a `File` (each is a `FileReaderSync`
/// call). Holds one block: memory stays O(header).
#[derive(Debug)]
pub struct Readahead<S> {
    inner: S,
    state: Mutex<Block>,
}

#[derive(Debug, Default)]
struct Block {
    start: u64,
    bytes: Vec<u8>,
    /// Where the run of blocks that follow on, this one the last, started.
    run_start: u64,
}

impl<S: ReadAt> Readahead<S> {
    /// Reads `inner` through the block.
    pub fn new(inner: S) -> Readahead<S> {
        Readahead { inner, state: Mutex::new(Block::default()) }
    }
}

impl<S: ReadAt> ReadAt for Readahead<S> {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        ShortRead::check(offset, dst.len() as u64, self.inner.len()).map_err(ShortRead::into_io)?;
        // A poisoned lock only means a read panicked: the block is still bytes of the source.
        let mut block = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (mut offset, mut dst) = (offset, dst);
        loop {
            let end = block.start.saturating_add(block.bytes.len() as u64);
            // What the block holds of the read: served from it. A read that runs past its
            // end continues at the end, where the next block of the run starts.
            if (block.start..end).contains(&offset) {
                let from = usize::try_from(offset - block.start).map_err(io::Error::other)?;
                let have = block.bytes.get(from..).unwrap_or_default();
                let n = have.len().min(dst.len());
                let (now, rest) = std::mem::take(&mut dst).split_at_mut(n);
                now.copy_from_slice(have.get(..n).unwrap_or_default());
                (offset, dst) = (offset + n as u64, rest);
            }
            if dst.is_empty() {
                return Ok(());
            }
            let follows = offset == end && !block.bytes.is_empty();
            let (run_start, span) = if follows {
                (block.run_start, (end - block.run_start).clamp(FIRST_BLOCK, MAX_BLOCK))
            } else {
                (offset, FIRST_BLOCK)
            };
            let span = span.max(dst.len() as u64).min(self.inner.len() - offset);
            let size = usize::try_from(span).map_err(io::Error::other)?;
            let mut bytes = std::mem::take(&mut block.bytes);
            bytes.clear();
            bytes.try_reserve_exact(size).map_err(io::Error::other)?;
            bytes.resize(size, 0);
            self.inner.read_exact_at(offset, &mut bytes)?;
            *block = Block { start: offset, bytes, run_start };
        }
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// Inspects the file or URL the worker reads (`len` bytes, shown as `name`): the report as
/// one line of JSON (see [`report`]). Called by `static/worker.js`.
#[wasm_bindgen]
pub fn inspect(name: &str, len: f64, array_limit: u32) -> String {
    // A JS number of bytes: non-negative and integral for any real file.
    let len = if len.is_finite() && len >= 0.0 { len as u64 } else { 0 };
    report(Arc::new(JsSource { len }), name, u64::from(array_limit))
}

/// The findings shown with a hex window; the rest are listed without one (each window is one
/// more read, a request for a URL).
pub const HEX_WINDOWS: usize = 32;

/// What `validate` says about one file: its verdict's facts and its findings.
#[derive(Debug, Serialize)]
struct Validate {
    /// True when the file parsed (warnings or not).
    valid: bool,
    /// How it was read (`GGUF v3, default profile`), when it parsed.
    read_as: Option<String>,
    findings: Vec<FindingDoc>,
}

/// One finding, as `validate --format json` writes it, plus the rendered diagnostic.
#[derive(Debug, Serialize)]
struct FindingDoc {
    severity: &'static str,
    code: &'static str,
    offset: Option<u64>,
    length: Option<u64>,
    path: String,
    message: String,
    help: String,
    /// The diagnostic as `sipllm validate` draws it (no color): code, message, the hex
    /// window over the bytes concerned, help.
    rendered: Option<String>,
}

/// The terminal width the diagnostics are drawn for: the widest hex layout (16 bytes a row).
const RENDER_WIDTH: usize = 100;

/// Opens `source` as `sipllm inspect` does and reports, as one line of JSON:
///
/// * `inspect`: the `sipllm inspect --json --array-limit ARRAY_LIMIT` document without the
///   arrays' `payload_sha256` ([`ArrayMode::Preview`]; `null` when the file does not parse),
/// * `validate`: `valid`, `read_as` and the `findings` (`validate --format json`'s fields and
///   each finding's diagnostic drawn over its bytes),
/// * `header`: the reads and bytes the header cost (`reads`, `bytes_read`, `data_offset`).
pub fn report(source: Arc<dyn ReadAt>, name: &str, array_limit: u64) -> String {
    let reader = Arc::new(Readahead::new(source));
    let options = OpenOptions::default();
    let opened = Model::from_named_source(Arc::clone(&reader), name, &options);
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"name\":");
    json_into(&mut out, &name);
    let findings = match &opened {
        Ok(model) => model
            .gguf()
            .map(|g| g.gguf().warnings().iter().map(|w| (Severity::Warning, w)).collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let mut docs: Vec<FindingDoc> = findings
        .iter()
        .map(|&(severity, w)| FindingDoc {
            severity: severity_name(severity),
            code: w.code(),
            offset: Some(w.offset()),
            length: Some(w.len()),
            path: w.path().to_string(),
            message: w.message(),
            help: w.help().to_owned(),
            rendered: None,
        })
        .collect();
    if let Err(e) = &opened {
        docs.push(stream_finding(e));
    }
    for doc in docs.iter_mut().take(HEX_WINDOWS) {
        doc.rendered = Some(render(doc, name, &*reader));
    }
    let validate = Validate {
        valid: opened.is_ok(),
        read_as: opened.as_ref().ok().map(|m| read_as(m, &options)),
        findings: docs,
    };
    out.extend_from_slice(b",\"validate\":");
    json_into(&mut out, &validate);
    out.extend_from_slice(b",\"header\":");
    match &opened {
        Ok(model) => {
            let stats = model.header_stats();
            out.extend_from_slice(
                format!(
                    "{{\"reads\":{},\"bytes_read\":{},\"data_offset\":{}}}",
                    stats.reads, stats.bytes_read, stats.data_offset
                )
                .as_bytes(),
            );
        }
        Err(_) => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"inspect\":");
    match &opened {
        Ok(model) => {
            let view = View::of_model(model);
            let config = sipllm_view::config(
                Some(model.as_weight_source() as &dyn WeightSource),
                model.gguf().map(|g| g.gguf()),
            );
            let entries = view.entries.iter().collect();
            let tensors = Some(view.tensors.iter().collect());
            let doc =
                InspectDoc::new(&view, &config, entries, tensors, ArrayMode::Preview(array_limit));
            json_into(&mut out, &doc);
        }
        Err(_) => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
    // serde_json writes UTF-8 (strings that are not come out as `bytes_hex`).
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `value` as compact JSON, terminal controls escaped (the CLI's formatter).
fn json_into<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail; drop the line feed `write_line` ends with.
    if write_line(out, value).is_ok() && out.last() == Some(&b'\n') {
        out.pop();
    }
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        _ => "warning",
    }
}

/// Why the file could not be opened: the parser's error (GGUF or `.llmw`, with its bytes),
/// else the read side's.
fn stream_finding(e: &StreamError) -> FindingDoc {
    let parsed = |code, offset, len, path: String, message, help: &str| FindingDoc {
        severity: "error",
        code,
        offset: Some(offset),
        length: Some(len),
        path,
        message,
        help: help.to_owned(),
        rendered: None,
    };
    if let Some(p) = e.parse_error() {
        return parsed(p.code(), p.offset(), p.len(), p.path().to_string(), p.message(), p.help());
    }
    if let Some(p) = e.llmw_error() {
        return parsed(p.code(), p.offset(), p.len(), p.path().to_string(), p.message(), p.help());
    }
    let (offset, length) = match e.kind() {
        StreamErrorKind::UnknownMagic { .. } => (Some(0), Some(4)),
        StreamErrorKind::TooShort { len, .. } => (Some(*len), Some(0)),
        _ => (None, None),
    };
    FindingDoc {
        severity: "error",
        code: e.code(),
        offset,
        length,
        path: if offset.is_some() { "header.magic".to_owned() } else { String::new() },
        message: e.to_string(),
        help: e.help().to_owned(),
        rendered: None,
    }
}

/// The finding as `sipllm validate` draws it: over a hex window of its bytes (one read).
fn render(f: &FindingDoc, name: &str, source: &dyn ReadAt) -> String {
    let message =
        if f.path.is_empty() { f.message.clone() } else { format!("{}: {}", f.path, f.message) };
    let severity = if f.severity == "error" { Severity::Error } else { Severity::Warning };
    let mut diag = HexDiagnostic::new(f.code, message).with_help(f.help.clone());
    diag = diag.with_severity(severity);
    if let (Some(offset), Some(len)) = (f.offset, f.length) {
        let size = source.len();
        let range = Excerpt::range(offset, len, size);
        let mut bytes = vec![0u8; usize::try_from(range.end - range.start).unwrap_or(0)];
        if source.read_exact_at(range.start, &mut bytes).is_ok() {
            diag = diag.with_bytes(name, Excerpt::new(bytes, offset, len, size));
        }
    }
    Renderer { color: false, width: RENDER_WIDTH }.render(&diag)
}

/// How the file was read, as `validate`'s verdict says it: `GGUF v3, default profile`.
fn read_as(model: &Model, options: &OpenOptions) -> String {
    match (model.gguf(), model.llmw()) {
        (Some(g), _) => {
            format!("GGUF v{}, {} profile", g.gguf().version(), options.parse.profile.name())
        }
        (None, Some(l)) => format!("LLMW v{}", l.llmw().version()),
        (None, None) => model.format().label().to_owned(),
    }
}
