//! Plain-text tables: columns padded to their widest cell, no trailing spaces.

use std::io::{self, Write};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A table under construction. Cells must already be escaped.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<(&'static str, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and alignments.
    pub fn new(columns: &[(&'static str, Align)]) -> Table {
        Table { columns: columns.to_vec(), rows: Vec::new() }
    }

    /// Adds a row (missing cells are empty, extra cells are ignored).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the header and the rows, each line starting with `indent`.
    pub fn write(&self, out: &mut dyn Write, indent: &str) -> io::Result<()> {
        let width = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.columns.iter().map(|(h, _)| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let headers: Vec<String> = self.columns.iter().map(|(h, _)| (*h).to_owned()).collect();
        self.line(out, indent, &headers, &widths)?;
        for row in &self.rows {
            self.line(out, indent, row, &widths)?;
        }
        Ok(())
    }

    fn line(
        &self,
        out: &mut dyn Write,
        indent: &str,
        cells: &[String],
        widths: &[usize],
    ) -> io::Result<()> {
        let mut line = String::from(indent);
        let n = self.columns.len();
        for (i, ((_, align), &w)) in self.columns.iter().zip(widths).enumerate() {
            let cell = cells.get(i).map_or("", String::as_str);
            let pad = w.saturating_sub(cell.chars().count());
            let last = i + 1 == n;
            match align {
                Align::Left if last => line.push_str(cell),
                Align::Left => {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
            }
            if !last {
                line.push_str("  ");
            }
        }
        let trimmed = line.trim_end();
        writeln!(out, "{trimmed}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_without_trailing_spaces() {
        let mut t =
            Table::new(&[("name", Align::Left), ("size", Align::Right), ("note", Align::Left)]);
        t.row(vec!["a".into(), "1,024".into(), "".into()]);
        t.row(vec!["blk.0.attn_q.weight".into(), "7".into(), "x".into()]);
        let mut out = Vec::new();
        t.write(&mut out, "  ").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  name                  size  note\n\
             \x20 a                    1,024\n\
             \x20 blk.0.attn_q.weight      7  x\n"
        );
    }
}
