//! A hex-dump window around a byte range of a binary file, with the range labeled for
//! [`miette`]: what a diagnostic about a file's bytes shows instead of the raw bytes (which
//! miette would split at random `0x0A` bytes, and which could hold terminal controls).
//!
//! ```text
//!               00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f
//! 0x00000000  47 47 55 46 04 00 00 00  00 00 00 00 00 00 00 00  |GGUF............|
//! ```
//!
//! * [`Layout`] is the number of bytes per row: 16 on a terminal of 86 columns or more, 8 down
//!   to 53 columns, 4 below ([`Layout::fit`]), so the window stays one line per row.
//! * [`Excerpt`] holds the bytes around a range, read once (enough for every layout), and
//!   builds the [`HexWindow`] for a layout: the text, and the labels (on the hex bytes and
//!   the ASCII column) miette draws under it.
//! * [`HexDiagnostic`] is a ready [`miette::Diagnostic`] (code, message, help, the window), and
//!   [`Renderer`] draws one for a terminal width, laying the window out to fit.
//!
//! The window shows [`CONTEXT_ROWS`] rows before and after the range (fewer at the start and
//! end of the file). A range over more than [`MAX_LABELED_ROWS`] rows is labeled on its first
//! rows only, the label saying how long it is. A zero-length range (a position, such as the
//! end of the input) is shown as the one cell at that position, also just past the last byte.
//!
//! ```
//! use sipllm_hexview::{Excerpt, HexDiagnostic, Renderer};
//!
//! let file = b"GGUF\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
//! // The version field: 4 bytes at offset 4.
//! let excerpt = Excerpt::of(file, 4, 4);
//! let diag = HexDiagnostic::new("gguf::header::unsupported_version", "version 9 is not supported")
//!     .with_help("GGUF versions 2 and 3 are read")
//!     .with_bytes("model.gguf", excerpt);
//! let text = Renderer { color: false, width: 60 }.render(&diag);
//! // At 60 columns a row holds 8 bytes.
//! assert!(text.contains("0x00000000  47 47 55 46 09 00 00 00  |GGUF....|"), "{text}");
//! assert!(text.contains("0x00000004, 4 bytes"));
//! assert!(text.contains("help: GGUF versions 2 and 3 are read"));
//! ```

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

use std::fmt::{self, Write as _};
use std::ops::Range;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, Severity,
    SourceCode,
};

/// Rows shown before and after the labeled range.
pub const CONTEXT_ROWS: u64 = 3;
/// Ranges spanning at most this many rows are labeled on every row.
pub const MAX_LABELED_ROWS: u64 = 4;

/// The columns miette's gutter takes before each line of a window (` 10 │ `).
const GUTTER: usize = 6;

/// Bytes per row of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    row: u64,
}

impl Layout {
    /// 16 bytes per row, two groups of 8: the classic dump (80 columns).
    pub const WIDE: Layout = Layout { row: 16 };
    /// 8 bytes per row (47 columns).
    pub const NARROW: Layout = Layout { row: 8 };
    /// 4 bytes per row (31 columns).
    pub const TINY: Layout = Layout { row: 4 };

    /// Bytes per row.
    pub const fn bytes_per_row(self) -> u64 {
        self.row
    }

    /// The widest layout whose lines, with miette's gutter, fit in `columns` for a file of
    /// `file_size` bytes (offsets past 4 GiB take more digits); [`Layout::TINY`] when none
    /// does.
    pub fn fit(columns: usize, file_size: u64) -> Layout {
        [Layout::WIDE, Layout::NARROW]
            .into_iter()
            .find(|l| l.line_width(file_size) + GUTTER <= columns)
            .unwrap_or(Layout::TINY)
    }

    /// The width of one line of a window over a file of `file_size` bytes (without miette's
    /// gutter).
    pub fn line_width(self, file_size: u64) -> usize {
        let digits = hex_digits(file_size).max(8);
        let row = self.row as usize;
        // "0x" + offset, 2 spaces, "xx " per byte (+1 between groups of 8), " |", ASCII, "|".
        2 + digits + 2 + row * 3 + (row - 1) / 8 + 2 + row + 1
    }

    /// Column of byte `i` of a row within the hex area (one more space between groups of 8).
    fn hex_col(self, i: u64) -> usize {
        let i = i as usize;
        i * 3 + i / 8
    }
}

/// The rendered window.
#[derive(Debug, Clone)]
pub struct HexWindow {
    /// The hex dump (a column ruler, then one line per row).
    pub text: String,
    /// Labels on the hex bytes (the first carries the label text) and on the ASCII column.
    pub labels: Vec<LabeledSpan>,
    /// Number of text lines.
    pub lines: usize,
}

/// The absolute rows a window shows, for a range at `offset` of `len` bytes in a file of
/// `file_size` bytes: `(first_row, last_row)`, inclusive, in rows of `layout`.
pub fn rows(layout: Layout, offset: u64, len: u64, file_size: u64) -> (u64, u64) {
    let row = layout.row;
    let first = offset / row;
    let last_byte = offset.saturating_add(len.max(1) - 1);
    let span_last = (last_byte / row).min(first.saturating_add(MAX_LABELED_ROWS - 1));
    // The last row holding a byte of the file.
    let file_last = file_size.saturating_sub(1) / row;
    // Context rows after the range only where the file has bytes; a range reaching past the
    // end (or a position just past it) still shows its own rows.
    let end = span_last.max(span_last.saturating_add(CONTEXT_ROWS).min(file_last));
    (first.saturating_sub(CONTEXT_ROWS), end)
}

/// Builds the window. `bytes` are the file's bytes starting at `first_row * row` (as many as
/// exist up to the end of the window; missing ones show as blanks); `label` is the text of
/// the primary label.
pub fn build(
    layout: Layout,
    bytes: &[u8],
    (first_row, last_row): (u64, u64),
    offset: u64,
    len: u64,
    file_size: u64,
    label: String,
) -> HexWindow {
    let row_len = layout.row;
    let window_end = last_row.saturating_add(1).saturating_mul(row_len);
    let digits = hex_digits(window_end.saturating_sub(1)).max(8);
    let prefix = digits + 2; // "0x" + digits
    let mut text = String::new();
    // The column ruler.
    text.push_str(&" ".repeat(prefix + 2));
    for i in 0..row_len {
        let _ = write!(text, "{i:02x} ");
        if i % 8 == 7 && i + 1 < row_len {
            text.push(' ');
        }
    }
    // Trailing spaces would make snapshots fragile: trim the ruler.
    let trimmed = text.trim_end().len();
    text.truncate(trimmed);
    text.push('\n');
    let mut lines = 1;
    let mut row_starts = Vec::new();
    for row in first_row..=last_row {
        row_starts.push((row, text.len()));
        let base = row.saturating_mul(row_len);
        let _ = write!(text, "0x{base:0digits$x}  ");
        let mut ascii = String::with_capacity(row_len as usize);
        for i in 0..row_len {
            let abs = base.saturating_add(i);
            let byte = if abs < file_size {
                usize::try_from(abs - first_row * row_len).ok().and_then(|k| bytes.get(k)).copied()
            } else {
                None
            };
            match byte {
                Some(b) => {
                    let _ = write!(text, "{b:02x} ");
                    ascii.push(if (0x20..0x7f).contains(&b) { b as char } else { '.' });
                }
                None => {
                    text.push_str("   ");
                    ascii.push(' ');
                }
            }
            if i % 8 == 7 && i + 1 < row_len {
                text.push(' ');
            }
        }
        let _ = write!(text, " |{ascii}|");
        text.push('\n');
        lines += 1;
    }

    // Labels: the range's part in each labeled row, on the hex bytes and the ASCII column.
    let last_byte = offset.saturating_add(len.max(1) - 1);
    let last_labeled_row =
        (last_byte / row_len).min((offset / row_len).saturating_add(MAX_LABELED_ROWS - 1));
    let mut labels = Vec::new();
    let mut label = Some(label);
    for &(row, start) in &row_starts {
        let base = row.saturating_mul(row_len);
        let row_end = base.saturating_add(row_len - 1);
        if row_end < offset || base > last_byte || row > last_labeled_row {
            continue;
        }
        let lo = offset.max(base) - base;
        let hi = last_byte.min(row_end) - base;
        let hex_lo = start + prefix + 2 + layout.hex_col(lo);
        let hex_hi = start + prefix + 2 + layout.hex_col(hi) + 2;
        labels.push(LabeledSpan::new_with_span(label.take(), (hex_lo, hex_hi - hex_lo)));
        let ascii_start = start + prefix + 2 + layout.hex_col(row_len - 1) + 2 + 3;
        let a_lo = ascii_start + lo as usize;
        let a_hi = ascii_start + hi as usize + 1;
        labels.push(LabeledSpan::new_with_span(None, (a_lo, a_hi - a_lo)));
    }
    if let Some(first) = labels.first_mut() {
        *first =
            LabeledSpan::new_primary_with_span(first.label().map(str::to_owned), *first.inner());
    }
    HexWindow { text, labels, lines }
}

fn hex_digits(n: u64) -> usize {
    (64 - n.leading_zeros() as usize).div_ceil(4).max(1)
}

/// `1234567` as `1,234,567`: how the hex view writes byte counts in its labels (the
/// workspace's one way, [`sipllm_format::group`]), exported so a tool that prints the view
/// beside its own figures writes them the same way.
///
/// ```
/// assert_eq!(sipllm_hexview::group(1234567), "1,234,567");
/// ```
pub use sipllm_format::group;

/// The label text for a range: `0x00000004, 4 bytes`, `0x00001b80 (end of file)`, or for long
/// ranges `0x00000118, 131,072 bytes (the first 56 labeled)`.
pub fn label(layout: Layout, offset: u64, len: u64, file_size: u64) -> String {
    let row = layout.row;
    let digits = hex_digits(offset.saturating_add(len)).max(8);
    let at = format!("0x{offset:0digits$x}");
    if len == 0 {
        if offset >= file_size {
            return format!("{at} (end of file)");
        }
        return at;
    }
    let rows = (offset.saturating_add(len - 1) / row) - offset / row + 1;
    let bytes = group(len);
    let unit = if len == 1 { "byte" } else { "bytes" };
    if rows > MAX_LABELED_ROWS {
        let shown = MAX_LABELED_ROWS * row - offset % row;
        format!("{at}, {bytes} {unit} (the first {shown} labeled)")
    } else {
        format!("{at}, {bytes} {unit}")
    }
}

/// The bytes around a range of a file, read once: enough for the window of every layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    start: u64,
    bytes: Vec<u8>,
    offset: u64,
    len: u64,
    file_size: u64,
}

impl Excerpt {
    /// The file bytes to read for a range at `offset` of `len` bytes in a file of `file_size`
    /// bytes: the rows of the widest layout (a superset of every narrower layout's), cut at
    /// the end of the file.
    pub fn range(offset: u64, len: u64, file_size: u64) -> Range<u64> {
        let (first, last) = rows(Layout::WIDE, offset, len, file_size);
        let start = first.saturating_mul(Layout::WIDE.row).min(file_size);
        let end = last.saturating_add(1).saturating_mul(Layout::WIDE.row).min(file_size);
        start..end
    }

    /// An excerpt from `bytes`, the file's bytes over [`Excerpt::range`] (fewer at the end are
    /// shown as blanks).
    pub fn new(bytes: Vec<u8>, offset: u64, len: u64, file_size: u64) -> Excerpt {
        let start = Excerpt::range(offset, len, file_size).start;
        Excerpt { start, bytes, offset, len, file_size }
    }

    /// The excerpt of a range of a file held in memory.
    pub fn of(file: &[u8], offset: u64, len: u64) -> Excerpt {
        let size = file.len() as u64;
        let r = Excerpt::range(offset, len, size);
        let slice = usize::try_from(r.start)
            .ok()
            .zip(usize::try_from(r.end).ok())
            .and_then(|(s, e)| file.get(s..e))
            .unwrap_or_default();
        Excerpt::new(slice.to_vec(), offset, len, size)
    }

    /// The size of the file the excerpt is from.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The labeled range: `(offset, len)`.
    pub fn span(&self) -> (u64, u64) {
        (self.offset, self.len)
    }

    /// The window in `layout`.
    pub fn window(&self, layout: Layout) -> HexWindow {
        let (first, last) = rows(layout, self.offset, self.len, self.file_size);
        let from = first.saturating_mul(layout.row).saturating_sub(self.start);
        let bytes =
            usize::try_from(from).ok().and_then(|f| self.bytes.get(f..)).unwrap_or_default();
        let text = label(layout, self.offset, self.len, self.file_size);
        build(layout, bytes, (first, last), self.offset, self.len, self.file_size, text)
    }
}

/// A diagnostic about a file's bytes: code, message, help and the hex window.
#[derive(Debug, Clone)]
pub struct HexDiagnostic {
    code: String,
    severity: Severity,
    message: String,
    help: Option<String>,
    name: String,
    excerpt: Option<Excerpt>,
    shown: Option<Shown>,
}

#[derive(Debug, Clone)]
struct Shown {
    source: NamedSource<String>,
    labels: Vec<LabeledSpan>,
    lines: usize,
}

impl HexDiagnostic {
    /// An error with a stable code and a message (no bytes shown until
    /// [`with_bytes`](Self::with_bytes)).
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> HexDiagnostic {
        HexDiagnostic {
            code: code.into(),
            severity: Severity::Error,
            message: message.into(),
            help: None,
            name: String::new(),
            excerpt: None,
            shown: None,
        }
    }

    /// What to check or change.
    pub fn with_help(mut self, help: impl Into<String>) -> HexDiagnostic {
        self.help = Some(help.into());
        self
    }

    /// Error (the default), warning or advice.
    pub fn with_severity(mut self, severity: Severity) -> HexDiagnostic {
        self.severity = severity;
        self
    }

    /// The bytes concerned, in the file shown as `name` (the window laid out
    /// [`Layout::WIDE`] until a [`Renderer`] lays it out for its width).
    pub fn with_bytes(mut self, name: impl Into<String>, excerpt: Excerpt) -> HexDiagnostic {
        self.name = name.into();
        self.excerpt = Some(excerpt);
        self.lay_out(Layout::WIDE)
    }

    /// The same diagnostic with its window in `layout`.
    pub fn lay_out(mut self, layout: Layout) -> HexDiagnostic {
        self.shown = self.excerpt.as_ref().map(|e| {
            let w = e.window(layout);
            Shown { source: NamedSource::new(&self.name, w.text), labels: w.labels, lines: w.lines }
        });
        self
    }

    /// The excerpt, when bytes are shown.
    pub fn excerpt(&self) -> Option<&Excerpt> {
        self.excerpt.as_ref()
    }

    fn file_size(&self) -> u64 {
        self.excerpt.as_ref().map_or(0, Excerpt::file_size)
    }
}

impl fmt::Display for HexDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HexDiagnostic {}

impl Diagnostic for HexDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.shown.as_ref().map(|s| &s.source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let shown = self.shown.as_ref().filter(|s| !s.labels.is_empty())?;
        Some(Box::new(shown.labels.iter().cloned()))
    }
}

/// Draws diagnostics as text (miette's graphical handler, Unicode, color only when asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renderer {
    /// Use ANSI colors.
    pub color: bool,
    /// Wrap text at this many columns; the hex window is laid out to fit ([`Layout::fit`]).
    pub width: usize,
}

impl Renderer {
    /// The diagnostic, its window laid out for the width (ends with a newline).
    pub fn render(&self, diag: &HexDiagnostic) -> String {
        let layout = Layout::fit(self.width, diag.file_size());
        let laid_out = diag.clone().lay_out(layout);
        let lines = laid_out.shown.as_ref().map_or(1, |s| s.lines);
        self.render_any(&laid_out, lines)
    }

    /// Any diagnostic whose source is a window of `lines` lines (every line is shown: the
    /// window was built to the size wanted). For a window built by hand, with
    /// [`Layout::fit`] for this width.
    pub fn render_any(&self, diag: &dyn Diagnostic, lines: usize) -> String {
        let theme =
            if self.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(self.width)
            .with_links(false)
            .with_wrap_lines(true)
            .with_break_words(false)
            // Line numbers of the hex window mean nothing; the labels carry offsets.
            .without_primary_span_start()
            .with_context_lines(lines.max(1));
        let mut out = String::new();
        if handler.render_report(&mut out, diag).is_err() {
            // The handler only fails on a broken `fmt::Write`, which a `String` is not; keep
            // the message in any case.
            let code = diag.code().map(|c| c.to_string()).unwrap_or_default();
            out = format!("{code}: {diag}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(layout: Layout, file: &[u8], offset: u64, len: u64) -> HexWindow {
        Excerpt::of(file, offset, len).window(layout)
    }

    fn spans(w: &HexWindow) -> Vec<&str> {
        w.labels.iter().map(|l| &w.text[l.offset()..l.offset() + l.len()]).collect()
    }

    #[test]
    fn a_header_field_is_labeled_in_hex_and_ascii() {
        let mut file = b"GGUF\x04\x00\x00\x00".to_vec();
        file.resize(40, 0);
        let w = window(Layout::WIDE, &file, 4, 4);
        assert_eq!(
            w.text,
            "            00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f\n\
             0x00000000  47 47 55 46 04 00 00 00  00 00 00 00 00 00 00 00  |GGUF............|\n\
             0x00000010  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
             0x00000020  00 00 00 00 00 00 00 00                           |........        |\n"
        );
        assert_eq!(spans(&w), ["04 00 00 00", "...."]);
        assert!(w.labels[0].primary());
        assert_eq!(w.labels[0].label(), Some("0x00000004, 4 bytes"));
    }

    #[test]
    fn narrow_layouts_have_fewer_bytes_per_row() {
        let mut file = b"GGUF\x04\x00\x00\x00".to_vec();
        file.resize(40, 0x41);
        let w = window(Layout::NARROW, &file, 4, 4);
        assert_eq!(
            w.text,
            "            00 01 02 03 04 05 06 07\n\
             0x00000000  47 47 55 46 04 00 00 00  |GGUF....|\n\
             0x00000008  41 41 41 41 41 41 41 41  |AAAAAAAA|\n\
             0x00000010  41 41 41 41 41 41 41 41  |AAAAAAAA|\n\
             0x00000018  41 41 41 41 41 41 41 41  |AAAAAAAA|\n"
        );
        assert_eq!(spans(&w), ["04 00 00 00", "...."]);
        let w = window(Layout::TINY, &file, 4, 4);
        assert_eq!(
            w.text.lines().take(3).collect::<Vec<_>>(),
            [
                "            00 01 02 03",
                "0x00000000  47 47 55 46  |GGUF|",
                "0x00000004  04 00 00 00  |....|"
            ]
        );
        assert_eq!(spans(&w), ["04 00 00 00", "...."]);
        // Every line is as wide as the layout says.
        for layout in [Layout::WIDE, Layout::NARROW, Layout::TINY] {
            let w = window(layout, &file, 4, 4);
            for line in w.text.lines().skip(1) {
                assert_eq!(line.chars().count(), layout.line_width(40), "{line}");
            }
        }
    }

    #[test]
    fn the_layout_fits_the_terminal() {
        assert_eq!(Layout::fit(100, 1 << 20), Layout::WIDE);
        assert_eq!(Layout::fit(86, 1 << 20), Layout::WIDE);
        assert_eq!(Layout::fit(85, 1 << 20), Layout::NARROW);
        assert_eq!(Layout::fit(60, 1 << 20), Layout::NARROW);
        assert_eq!(Layout::fit(52, 1 << 20), Layout::TINY);
        assert_eq!(Layout::fit(40, 1 << 20), Layout::TINY);
        // Offsets past 4 GiB take a digit more.
        assert_eq!(Layout::fit(86, 1 << 33), Layout::NARROW);
    }

    #[test]
    fn every_layouts_window_is_inside_the_excerpt() {
        let file: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        for (offset, len) in [(0, 0), (3, 1), (100, 3000), (4990, 10), (5000, 0), (777, 40)] {
            let e = Excerpt::of(&file, offset, len);
            for layout in [Layout::WIDE, Layout::NARROW, Layout::TINY] {
                let w = e.window(layout);
                let (first, last) = rows(layout, offset, len, file.len() as u64);
                for (row, line) in (first..=last).zip(w.text.lines().skip(1)) {
                    // Every byte of the file in the row is shown (none blank for want of it).
                    let base = (row * layout.row) as usize;
                    let end = (base + layout.row as usize).min(file.len());
                    let expected: String = file
                        .get(base..end)
                        .unwrap_or_default()
                        .iter()
                        .map(|b| format!("{b:02x} "))
                        .collect();
                    let compact: String =
                        line.split("  |").next().unwrap()[12..].replace("  ", " ");
                    assert_eq!(
                        compact.trim_end(),
                        expected.trim_end(),
                        "{layout:?} {offset} {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_range_across_rows_is_labeled_on_each_row() {
        let file: Vec<u8> = (0u8..64).collect();
        let w = window(Layout::WIDE, &file, 12, 8);
        assert_eq!(spans(&w), ["0c 0d 0e 0f", "....", "10 11 12 13", "...."]);
        assert_eq!(w.labels.iter().filter(|l| l.label().is_some()).count(), 1);
    }

    #[test]
    fn the_end_of_the_file_is_a_cell_past_the_last_byte() {
        let file = vec![0x41u8; 20];
        let w = window(Layout::WIDE, &file, 20, 0);
        assert_eq!(spans(&w), ["  ", " "]);
        assert_eq!(w.labels[0].label(), Some("0x00000014 (end of file)"));
        // At a row boundary the empty row is shown.
        let file = vec![0x41u8; 32];
        let w = window(Layout::WIDE, &file, 32, 0);
        let last = w.text.lines().last().unwrap();
        assert_eq!(last, format!("0x00000020{}|{}|", " ".repeat(52), " ".repeat(16)));
        assert_eq!(spans(&w), ["  ", " "]);
        // An empty file.
        let w = window(Layout::WIDE, &[], 0, 0);
        assert_eq!(w.lines, 2);
        assert_eq!(spans(&w), ["  ", " "]);
    }

    #[test]
    fn a_long_range_is_labeled_on_its_first_rows() {
        let file = vec![0u8; 4096];
        let w = window(Layout::WIDE, &file, 100, 3000);
        assert_eq!(w.labels.len(), 2 * MAX_LABELED_ROWS as usize);
        assert_eq!(w.labels[0].label(), Some("0x00000064, 3,000 bytes (the first 60 labeled)"));
        // 3 rows of context before, the labeled rows, 3 after.
        assert_eq!(w.lines, 1 + 3 + MAX_LABELED_ROWS as usize + 3);
        let w = window(Layout::NARROW, &file, 100, 3000);
        assert_eq!(w.labels[0].label(), Some("0x00000064, 3,000 bytes (the first 28 labeled)"));
    }

    #[test]
    fn offsets_past_4_gib_widen_the_column() {
        let layout = Layout::WIDE;
        let (first, last) = rows(layout, 0x1_0000_0000, 4, 0x1_0000_0010);
        let w = build(layout, &[0; 64], (first, last), 0x1_0000_0000, 4, 0x1_0000_0010, "x".into());
        assert!(w.text.contains("\n0x100000000  00 00 00 00 00 00 00 00  00 00"), "{}", w.text);
        assert!(w.text.contains("\n0x0ffffffd0  00"), "{}", w.text);
    }

    #[test]
    fn a_rendered_diagnostic_fits_its_width() {
        let file: Vec<u8> = (0..200u8).collect();
        let diag = HexDiagnostic::new("x::y", "the field is wrong")
            .with_help("fix it")
            .with_bytes("f.bin", Excerpt::of(&file, 70, 4));
        for width in [40, 60, 80, 100] {
            let text = Renderer { color: false, width }.render(&diag);
            for line in text.lines() {
                // At 40 columns the label's text may run past the edge; the rows never do.
                if width > 40 || line.contains("│ 0x") {
                    assert!(line.chars().count() <= width, "{width}: {line:?}\n{text}");
                }
            }
            assert!(text.contains("0x00000046, 4 bytes"), "{text}");
        }
    }
}
