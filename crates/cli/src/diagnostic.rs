//! Parser errors and warnings as miette diagnostics over a hex view of the file.
//!
//! A [`Finding`] is the format-neutral record of one problem (code, message, logical path,
//! offset, length, help), made from a GGUF or `.llmw` parser error, a GGUF warning, or any
//! library error with a code and help ([`Kind`]: the read side's, the write side's). Library
//! messages never repeat the file they are about; [`FileDiagnostic`] renders that context —
//! the file's name, and the bytes around the offset — around the message, which it never
//! edits. [`FileDiagnostic`] pairs it with a [`sipllm_hexview`] window of the
//! bytes around the offset and implements [`miette::Diagnostic`] by hand (not with the derive:
//! zkat/miette#458 makes derived fields raise false `unused_assignments` warnings on Rust
//! ≥ 1.93). [`Renderer`] draws it with miette's graphical handler, in color only when asked.

use std::fmt;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};
use sipllm_streaming::{Kind, ReadAt, StreamError, StreamErrorKind};

use crate::render::escape;
use sipllm_hexview as hexview;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The file is invalid under the profile (or could not be read).
    Error,
    /// The file is valid, but something deserves a look.
    Warning,
}

impl Severity {
    /// `error` or `warning` (the JSON spelling).
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code (`gguf::metadata::duplicate_key`, `llmw::…`, `streaming::io::open`).
    pub code: &'static str,
    /// What is wrong, without the location.
    pub message: String,
    /// The logical path (`metadata[12] "tokenizer.ggml.tokens"[5031]`), escaped; may be empty.
    pub path: String,
    /// Absolute offset of the offending bytes, when the problem is in the file's bytes.
    pub offset: Option<u64>,
    /// Length of the offending range (0 for a position).
    pub len: u64,
    /// What to check or change.
    pub help: String,
}

impl Finding {
    /// A GGUF parse error.
    pub fn from_gguf_error(e: &sipllm_gguf::Error) -> Finding {
        Finding::parsed(Severity::Error, e)
    }

    /// A GGUF warning.
    pub fn from_gguf_warning(w: &sipllm_gguf::Warning) -> Finding {
        Finding::parsed(Severity::Warning, w)
    }

    /// A `.llmw` parse error.
    pub fn from_llmw_error(e: &sipllm_llmw::Error) -> Finding {
        Finding::parsed(Severity::Error, e)
    }

    /// A parser's finding (either format's): its logical path escaped, its byte range.
    fn parsed<K: sipllm_gguf::error::Kind>(
        severity: Severity,
        f: &sipllm_gguf::error::Finding<K>,
    ) -> Finding {
        Finding {
            severity,
            code: f.code(),
            message: f.message(),
            path: escape::message(&f.path().to_string()).into_owned(),
            offset: Some(f.offset()),
            len: f.len(),
            help: crate::help::for_cli(f.code(), f.help()).into_owned(),
        }
    }

    /// Why a file could not be opened or read: the parser's error when there is one (GGUF or
    /// `.llmw`), a wrong magic or a file too short for one (over the bytes concerned), else the
    /// read side's error (without a byte range). Its message is the error's `Display`, which
    /// never repeats the file: [`FileDiagnostic`] renders the file (and the offset) around it.
    pub fn from_stream_error(e: &StreamError) -> Finding {
        if let Some(p) = e.parse_error() {
            return Finding::from_gguf_error(p);
        }
        if let Some(p) = e.llmw_error() {
            return Finding::from_llmw_error(p);
        }
        // A remote failure: its own code and help (the URL, status and hop are in the message).
        if let Some(r) = crate::open::remote_error(e) {
            return Finding { help: r.help().into(), code: r.code(), ..Finding::from_error(e) };
        }
        match e.kind() {
            StreamErrorKind::UnknownMagic { found } => {
                // The GGUF parser knows one more history than the sniffing does: "FUGG" is the
                // byte-swapped magic of pre-release GGUF files.
                let help = if found == b"FUGG" {
                    sipllm_gguf::ErrorKind::BadMagic { found: *found }.help()
                } else {
                    e.help()
                };
                Finding {
                    path: "header.magic".to_owned(),
                    offset: Some(0),
                    len: 4,
                    help: help.to_owned(),
                    ..Finding::from_error(e)
                }
            }
            StreamErrorKind::TooShort { len } => Finding {
                path: "header.magic".to_owned(),
                offset: Some(*len),
                ..Finding::from_error(e)
            },
            _ => Finding::from_error(e),
        }
    }

    /// Any library error (the read side's, the write side's): its code, its message (escaped)
    /// and its help, with no byte range. The file it concerns is the caller's context.
    pub fn from_error(e: &dyn Kind) -> Finding {
        Finding {
            severity: Severity::Error,
            code: e.code(),
            message: escape::message(&e.to_string()).into_owned(),
            path: String::new(),
            offset: None,
            len: 0,
            help: crate::help::for_cli(e.code(), e.help()).into_owned(),
        }
    }

    /// A finding of the llama.cpp load check (`model::load::…`); one at no byte range (a key or
    /// tensor that is absent) has no offset.
    pub fn from_model_issue(f: &sipllm_gguf::error::Finding<sipllm_model::load::Issue>) -> Finding {
        use sipllm_model::load::Severity as S;
        let severity = match f.kind().severity() {
            S::Error => Severity::Error,
            S::Warning => Severity::Warning,
        };
        Finding {
            severity,
            code: f.code(),
            message: escape::message(&f.message()).into_owned(),
            path: escape::message(&f.path().to_string()).into_owned(),
            offset: (!f.is_empty()).then_some(f.offset()),
            len: f.len(),
            help: crate::help::for_cli(f.code(), f.help()).into_owned(),
        }
    }

    /// `path: message`, or the message alone.
    pub fn located_message(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        }
    }
}

/// A finding with its hex window: a [`miette::Diagnostic`].
#[derive(Debug, Clone)]
pub struct FileDiagnostic {
    finding: Finding,
    source: Option<NamedSource<String>>,
    labels: Vec<LabeledSpan>,
    lines: usize,
    /// The file's name (escaped) and the bytes around the finding, for laying the window out
    /// again at another width.
    excerpt: Option<(String, hexview::Excerpt)>,
}

impl FileDiagnostic {
    /// The diagnostic for `finding` in the file shown as `name`, reading the bytes of the hex
    /// window from `file` (no window when there is no file or no offset, or the read fails).
    /// A finding with neither a byte range nor a logical path (an I/O error) names the file in
    /// its message instead.
    pub fn new(mut finding: Finding, name: &str, file: Option<&dyn ReadAt>) -> FileDiagnostic {
        if finding.offset.is_none() && finding.path.is_empty() {
            finding.message = format!("{}: {}", escape::str(name), finding.message);
        }
        let mut diag =
            FileDiagnostic { finding, source: None, labels: Vec::new(), lines: 0, excerpt: None };
        let (Some(offset), Some(file)) = (diag.finding.offset, file) else { return diag };
        let len = diag.finding.len;
        let size = file.len();
        // The bytes of the widest window (every narrower one is inside them).
        let range = hexview::Excerpt::range(offset, len, size);
        let Ok(n) = usize::try_from(range.end - range.start) else { return diag };
        let mut bytes = vec![0u8; n];
        if file.read_exact_at(range.start, &mut bytes).is_err() {
            return diag;
        }
        diag.excerpt =
            Some((escape::str(name).into_owned(), hexview::Excerpt::new(bytes, offset, len, size)));
        diag.lay_out(hexview::Layout::WIDE)
    }

    /// The same diagnostic with its hex window in `layout` (fewer bytes per row for a narrow
    /// terminal).
    pub fn lay_out(mut self, layout: hexview::Layout) -> FileDiagnostic {
        if let Some((name, excerpt)) = &self.excerpt {
            let window = excerpt.window(layout);
            self.source = Some(NamedSource::new(name, window.text));
            self.labels = window.labels;
            self.lines = window.lines;
        }
        self
    }

    /// The finding.
    pub fn finding(&self) -> &Finding {
        &self.finding
    }
}

impl fmt::Display for FileDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.finding.located_message())
    }
}

impl std::error::Error for FileDiagnostic {}

impl Diagnostic for FileDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.finding.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        (!self.finding.help.is_empty())
            .then(|| Box::new(&self.finding.help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            return None;
        }
        Some(Box::new(self.labels.iter().cloned()))
    }
}

/// Draws diagnostics as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renderer {
    /// Use ANSI colors.
    pub color: bool,
    /// Wrap text at this many columns.
    pub width: usize,
}

impl Renderer {
    /// The diagnostic as the terminal shows it (ends with a newline), its hex window laid
    /// out to fit the width.
    pub fn render(&self, diag: &FileDiagnostic) -> String {
        let size = diag.excerpt.as_ref().map_or(0, |(_, e)| e.file_size());
        let diag = diag.clone().lay_out(hexview::Layout::fit(self.width, size));
        hexview::Renderer { color: self.color, width: self.width }.render_any(&diag, diag.lines)
    }
}
