//! A hex-dump text window around a byte range of a binary file, with the range mapped to
//! spans inside that text: what `miette` renders instead of the raw bytes (which it would
//! split at random `0x0A` bytes, and which could hold terminal controls).
//!
//! ```text
//!               00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f
//! 0x00000000  47 47 55 46 04 00 00 00  00 00 00 00 00 00 00 00  |GGUF............|
//! ```
//!
//! Rows are 16 bytes; the window shows [`CONTEXT_ROWS`] rows before and after the range (fewer
//! at the start and end of the file). A range over more than [`MAX_LABELED_ROWS`] rows is
//! labeled on its first row only, the label saying how long it is. A zero-length range (a
//! position, such as the end of the input) is shown as the one cell at that position, also
//! when it lies just past the last byte.

use std::fmt::Write as _;

use miette::LabeledSpan;

/// Bytes per row.
pub const ROW: u64 = 16;
/// Rows shown before and after the labeled range.
pub const CONTEXT_ROWS: u64 = 3;
/// Ranges spanning at most this many rows are labeled on every row.
pub const MAX_LABELED_ROWS: u64 = 4;

/// The rendered window.
#[derive(Debug, Clone)]
pub struct HexWindow {
    /// The hex dump (a column ruler, then one line per row).
    pub text: String,
    /// Labels on the hex bytes (the first carries `label`) and on the ASCII column.
    pub labels: Vec<LabeledSpan>,
    /// Number of text lines.
    pub lines: usize,
}

/// The absolute rows a window shows and the bytes it needs, for a range at `offset` of `len`
/// bytes in a file of `file_size` bytes: `(first_row, last_row)`, inclusive.
pub fn rows(offset: u64, len: u64, file_size: u64) -> (u64, u64) {
    let first = offset / ROW;
    let last_byte = offset.saturating_add(len.max(1) - 1);
    let span_last = (last_byte / ROW).min(first.saturating_add(MAX_LABELED_ROWS - 1));
    // The last row holding a byte of the file.
    let file_last = file_size.saturating_sub(1) / ROW;
    // Context rows after the range only where the file has bytes; a range reaching past the
    // end (or a position just past it) still shows its own rows.
    let end = span_last.max(span_last.saturating_add(CONTEXT_ROWS).min(file_last));
    (first.saturating_sub(CONTEXT_ROWS), end)
}

/// Builds the window. `bytes` are the file's bytes starting at `first_row * ROW` (as many as
/// exist up to the end of the window); `label` is the text of the primary label.
pub fn build(
    bytes: &[u8],
    (first_row, last_row): (u64, u64),
    offset: u64,
    len: u64,
    file_size: u64,
    label: String,
) -> HexWindow {
    let window_end = last_row.saturating_add(1).saturating_mul(ROW);
    let digits = hex_digits(window_end.saturating_sub(1)).max(8);
    let prefix = digits + 2; // "0x" + digits
    let mut text = String::new();
    // The column ruler.
    text.push_str(&" ".repeat(prefix + 2));
    for i in 0..ROW {
        let _ = write!(text, "{i:02x} ");
        if i == 7 {
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
        let base = row * ROW;
        let _ = write!(text, "0x{base:0digits$x}  ");
        let mut ascii = String::with_capacity(ROW as usize);
        for i in 0..ROW {
            let abs = base + i;
            let byte = if abs < file_size {
                usize::try_from(abs - first_row * ROW).ok().and_then(|k| bytes.get(k)).copied()
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
            if i == 7 {
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
        (last_byte / ROW).min((offset / ROW).saturating_add(MAX_LABELED_ROWS - 1));
    let mut labels = Vec::new();
    let mut label = Some(label);
    for &(row, start) in &row_starts {
        let base = row * ROW;
        let row_end = base + ROW - 1;
        if row_end < offset || base > last_byte || row > last_labeled_row {
            continue;
        }
        let lo = offset.max(base) - base;
        let hi = last_byte.min(row_end) - base;
        let hex_lo = start + prefix + 2 + hex_col(lo);
        let hex_hi = start + prefix + 2 + hex_col(hi) + 2;
        labels.push(LabeledSpan::new_with_span(label.take(), (hex_lo, hex_hi - hex_lo)));
        let ascii_start = start + prefix + 2 + hex_col(ROW - 1) + 2 + 3;
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

/// Column of byte `i` of a row within the hex area (two spaces between the halves).
fn hex_col(i: u64) -> usize {
    let i = i as usize;
    i * 3 + usize::from(i >= 8)
}

fn hex_digits(n: u64) -> usize {
    (64 - n.leading_zeros() as usize).div_ceil(4).max(1)
}

/// The label text for a range: `0x00000004, 4 bytes`, `0x00001b80 (end of file)`, or for long
/// ranges `0x00000118, 131,072 bytes (the first 56 labeled)`.
pub fn label(offset: u64, len: u64, file_size: u64) -> String {
    let digits = hex_digits(offset.saturating_add(len)).max(8);
    let at = format!("0x{offset:0digits$x}");
    if len == 0 {
        if offset >= file_size {
            return format!("{at} (end of file)");
        }
        return at;
    }
    let rows = (offset.saturating_add(len - 1) / ROW) - offset / ROW + 1;
    let bytes = crate::render::value::group(len);
    let unit = if len == 1 { "byte" } else { "bytes" };
    if rows > MAX_LABELED_ROWS {
        let shown = MAX_LABELED_ROWS * ROW - offset % ROW;
        format!("{at}, {bytes} {unit} (the first {shown} labeled)")
    } else {
        format!("{at}, {bytes} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(file: &[u8], offset: u64, len: u64) -> HexWindow {
        let size = file.len() as u64;
        let (first, last) = rows(offset, len, size);
        let start = (first * ROW) as usize;
        let end = (((last + 1) * ROW) as usize).min(file.len());
        build(
            &file[start.min(end)..end],
            (first, last),
            offset,
            len,
            size,
            label(offset, len, size),
        )
    }

    fn spans(w: &HexWindow) -> Vec<&str> {
        w.labels.iter().map(|l| &w.text[l.offset()..l.offset() + l.len()]).collect()
    }

    #[test]
    fn a_header_field_is_labeled_in_hex_and_ascii() {
        let mut file = b"GGUF\x04\x00\x00\x00".to_vec();
        file.resize(40, 0);
        let w = window(&file, 4, 4);
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
    fn a_range_across_rows_is_labeled_on_each_row() {
        let file: Vec<u8> = (0u8..64).collect();
        let w = window(&file, 12, 8);
        assert_eq!(spans(&w), ["0c 0d 0e 0f", "....", "10 11 12 13", "...."]);
        assert_eq!(w.labels.iter().filter(|l| l.label().is_some()).count(), 1);
    }

    #[test]
    fn the_end_of_the_file_is_a_cell_past_the_last_byte() {
        let file = vec![0x41u8; 20];
        let w = window(&file, 20, 0);
        assert_eq!(spans(&w), ["  ", " "]);
        assert_eq!(w.labels[0].label(), Some("0x00000014 (end of file)"));
        // At a row boundary the empty row is shown.
        let file = vec![0x41u8; 32];
        let w = window(&file, 32, 0);
        let last = w.text.lines().last().unwrap();
        assert_eq!(last, format!("0x00000020{}|{}|", " ".repeat(52), " ".repeat(16)));
        assert_eq!(spans(&w), ["  ", " "]);
        // An empty file.
        let w = window(&[], 0, 0);
        assert_eq!(w.lines, 2);
        assert_eq!(spans(&w), ["  ", " "]);
    }

    #[test]
    fn a_long_range_is_labeled_on_its_first_rows() {
        let file = vec![0u8; 4096];
        let w = window(&file, 100, 3000);
        assert_eq!(w.labels.len(), 2 * MAX_LABELED_ROWS as usize);
        assert_eq!(w.labels[0].label(), Some("0x00000064, 3,000 bytes (the first 60 labeled)"));
        // 3 rows of context before, the labeled rows, 3 after.
        assert_eq!(w.lines, 1 + 3 + MAX_LABELED_ROWS as usize + 3);
    }

    #[test]
    fn offsets_past_4_gib_widen_the_column() {
        let (first, last) = rows(0x1_0000_0000, 4, 0x1_0000_0010);
        let w = build(&[0; 64], (first, last), 0x1_0000_0000, 4, 0x1_0000_0010, "x".into());
        assert!(w.text.contains("\n0x100000000  00 00 00 00 00 00 00 00  00 00"), "{}", w.text);
        assert!(w.text.contains("\n0x0ffffffd0  00"), "{}", w.text);
    }
}
