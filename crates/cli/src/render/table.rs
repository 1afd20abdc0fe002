//! Plain-text tables: columns padded to their widest cell, no trailing spaces; on a terminal,
//! fitted to its width ([`Table::write_fit`]): optional columns left out, long cells cut with
//! `…`.

use std::io::{self, Write};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// Where a cell too wide for its column is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Keep the start (`"abc", "de…`): values, previews.
    End,
    /// Keep the start and the end (`blk.17.post…norm.weight`): names, whose end says what
    /// they are.
    Middle,
}

/// The columns of one character, as a terminal draws them: 2 for the East Asian wide and
/// full-width ranges, 0 for combining marks, else 1 (text reaching here is escaped, so there
/// are no control characters).
pub fn char_width(c: char) -> usize {
    match u32::from(c) {
        0x0300..=0x036f | 0x200b..=0x200f | 0xfe00..=0xfe0f => 0,
        0x1100..=0x115f
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

/// The columns `s` takes on a terminal ([`char_width`] of each character).
pub fn text_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// `s` cut to at most `width` columns with `…` where text was left out (as is when it fits).
pub fn cut(s: &str, width: usize, how: Cut) -> String {
    if text_width(s) <= width {
        return s.to_owned();
    }
    let room = width.saturating_sub(1);
    let take = |chars: &mut dyn Iterator<Item = char>, budget: usize| -> Vec<char> {
        let mut used = 0;
        let mut kept = Vec::new();
        for c in chars {
            let w = char_width(c);
            if used + w > budget {
                break;
            }
            used += w;
            kept.push(c);
        }
        kept
    };
    match how {
        Cut::End => {
            let mut out: String = take(&mut s.chars(), room).into_iter().collect();
            out.push('…');
            out
        }
        Cut::Middle => {
            let tail_budget = room / 2;
            let tail = take(&mut s.chars().rev(), tail_budget);
            let head = take(&mut s.chars(), room - text_width(&tail.iter().collect::<String>()));
            let mut out: String = head.into_iter().collect();
            out.push('…');
            out.extend(tail.into_iter().rev());
            out
        }
    }
}

/// A line cut to `width` columns (`None`: as is) with `…` at the end.
pub fn fit_line(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) => cut(line, w, Cut::End),
        None => line.to_owned(),
    }
}

#[derive(Debug, Clone)]
struct Column {
    header: &'static str,
    align: Align,
    /// May be left out to fit, lowest rank first.
    optional: Option<u8>,
    /// May be cut (down to the smallest minimum it was given), and how.
    shrink: Option<(usize, Cut)>,
}

/// A table under construction. Cells must already be escaped.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<Column>,
    /// Shrinkable columns in the order they give up width, each down to its minimum there.
    shrink_order: Vec<(usize, usize)>,
    rows: Vec<Vec<String>>,
    /// Leave out the header line (a block whose title names the columns).
    headless: bool,
}

impl Table {
    /// A table with these column headers and alignments.
    pub fn new(columns: &[(&'static str, Align)]) -> Table {
        let columns = columns
            .iter()
            .map(|&(header, align)| Column { header, align, optional: None, shrink: None })
            .collect();
        Table { columns, shrink_order: Vec::new(), rows: Vec::new(), headless: false }
    }

    /// Writes no header line: the rows alone, aligned as with one (the headers still count
    /// towards the column widths).
    pub fn headless(&mut self) -> &mut Table {
        self.headless = true;
        self
    }

    /// Lets [`Table::write_fit`] leave out the column `header` when the table is too wide
    /// even with every shrinkable column cut (lowest `rank` first).
    pub fn optional(&mut self, header: &str, rank: u8) -> &mut Table {
        if let Some(c) = self.columns.iter_mut().find(|c| c.header == header) {
            c.optional = Some(rank);
        }
        self
    }

    /// Lets [`Table::write_fit`] cut the cells of column `header` down to `min` columns;
    /// columns give up width in the order this is called (a column may come again with a
    /// smaller minimum: first down to 40, then others, then down to 24).
    pub fn shrinkable(&mut self, header: &str, min: usize, how: Cut) -> &mut Table {
        if let Some(i) = self.columns.iter().position(|c| c.header == header) {
            let least = self.columns[i].shrink.map_or(min, |(m, _)| m.min(min));
            self.columns[i].shrink = Some((least, how));
            self.shrink_order.push((i, min));
        }
        self
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

    /// Writes the header and the rows, each line starting with `indent`, at full width.
    pub fn write(&self, out: &mut dyn Write, indent: &str) -> io::Result<()> {
        self.write_fit(out, indent, None).map(drop)
    }

    /// Writes the table within `width` columns when given (`None`: full width, as for a
    /// pipe): shrinkable columns are cut first (down to their minimum), then optional
    /// columns are left out until the rest fits. Returns the headers of the columns left
    /// out, for the caller to say so.
    pub fn write_fit(
        &self,
        out: &mut dyn Write,
        indent: &str,
        width: Option<usize>,
    ) -> io::Result<Vec<&'static str>> {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| text_width(c.header)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(text_width(cell));
            }
        }
        let mut shown = vec![true; self.columns.len()];
        if let Some(max) = width {
            self.fit(&mut widths, &mut shown, text_width(indent), max);
        }
        if !self.headless {
            let headers: Vec<String> = self.columns.iter().map(|c| c.header.to_owned()).collect();
            self.line(out, indent, &headers, &widths, &shown)?;
        }
        for row in &self.rows {
            self.line(out, indent, row, &widths, &shown)?;
        }
        Ok(self.columns.iter().zip(&shown).filter(|(_, s)| !**s).map(|(c, _)| c.header).collect())
    }

    /// Narrows `widths` and hides columns (`shown`) until the lines fit `max` (or nothing
    /// more can be given up).
    fn fit(&self, widths: &mut [usize], shown: &mut [bool], indent: usize, max: usize) {
        let total = |widths: &[usize], shown: &[bool]| {
            let n = shown.iter().filter(|s| **s).count();
            indent
                + widths
                    .iter()
                    .zip(shown.iter())
                    .filter(|(_, s)| **s)
                    .map(|(w, _)| w)
                    .sum::<usize>()
                + 2 * n.saturating_sub(1)
        };
        loop {
            let over = total(widths, shown).saturating_sub(max);
            if over == 0 {
                return;
            }
            let slack: usize = self
                .columns
                .iter()
                .enumerate()
                .filter(|(i, _)| shown[*i])
                .filter_map(|(i, c)| c.shrink.map(|(min, _)| widths[i].saturating_sub(min)))
                .sum();
            let next_optional = self
                .columns
                .iter()
                .enumerate()
                .filter(|(i, c)| shown[*i] && c.optional.is_some())
                .min_by_key(|(_, c)| c.optional)
                .map(|(i, _)| i);
            match next_optional {
                // Cutting cannot make it fit: leave out a column and try again.
                Some(i) if slack < over => shown[i] = false,
                _ => {
                    let mut over = over;
                    for &(i, min) in &self.shrink_order {
                        if over == 0 || !shown[i] {
                            continue;
                        }
                        let give = widths[i].saturating_sub(min).min(over);
                        widths[i] -= give;
                        over -= give;
                    }
                    return;
                }
            }
        }
    }

    fn line(
        &self,
        out: &mut dyn Write,
        indent: &str,
        cells: &[String],
        widths: &[usize],
        shown: &[bool],
    ) -> io::Result<()> {
        let mut line = String::from(indent);
        let last_shown = shown.iter().rposition(|s| *s);
        for (i, (column, &w)) in self.columns.iter().zip(widths).enumerate() {
            if !shown[i] {
                continue;
            }
            let raw = cells.get(i).map_or("", String::as_str);
            let cell = match column.shrink {
                Some((_, how)) => cut(raw, w, how),
                None => raw.to_owned(),
            };
            let pad = w.saturating_sub(text_width(&cell));
            let last = Some(i) == last_shown;
            match column.align {
                Align::Left if last => line.push_str(&cell),
                Align::Left => {
                    line.push_str(&cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(&cell);
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

    fn fitted(t: &Table, width: Option<usize>) -> (String, Vec<&'static str>) {
        let mut out = Vec::new();
        let left_out = t.write_fit(&mut out, "  ", width).unwrap();
        (String::from_utf8(out).unwrap(), left_out)
    }

    #[test]
    fn tables_fit_the_width_by_cutting_then_leaving_out() {
        let mut t =
            Table::new(&[("name", Align::Left), ("offset", Align::Right), ("value", Align::Left)]);
        t.shrinkable("value", 8, Cut::End)
            .shrinkable("name", 12, Cut::Middle)
            .optional("offset", 0);
        t.row(vec!["blk.17.post_attention_norm.weight".into(), "0x1000".into(), "x".repeat(50)]);
        // Full width without a limit (a pipe).
        let (full, left_out) = fitted(&t, None);
        assert!(full.lines().any(|l| l.chars().count() > 80) && left_out.is_empty());
        // 60 columns: the value is cut first, nothing left out.
        let (text, left_out) = fitted(&t, Some(60));
        assert!(left_out.is_empty(), "{text}");
        assert!(text.lines().all(|l| text_width(l) <= 60), "{text}");
        assert!(text.contains("blk.17.post_attention_norm.weight") && text.contains("x…"));
        // 40: the name is cut in the middle too.
        let (text, left_out) = fitted(&t, Some(40));
        assert!(left_out.is_empty(), "{text}");
        assert!(text.lines().all(|l| text_width(l) <= 40), "{text}");
        assert!(text.contains("blk.17.pos…rm.weight"), "{text}");
        // 30: cutting to the minimums is not enough: the offset is left out.
        let (text, left_out) = fitted(&t, Some(30));
        assert_eq!(left_out, ["offset"], "{text}");
        assert!(text.lines().all(|l| text_width(l) <= 30), "{text}");
        assert!(!text.contains("0x1000") && text.contains("…"), "{text}");
    }

    #[test]
    fn cuts_count_terminal_columns() {
        assert_eq!(cut("abcdef", 6, Cut::End), "abcdef");
        assert_eq!(cut("abcdef", 4, Cut::End), "abc…");
        assert_eq!(cut("abcdefgh", 5, Cut::Middle), "ab…gh");
        // Wide characters take two columns.
        assert_eq!(text_width("亼N"), 3);
        assert_eq!(cut("亼亼亼", 4, Cut::End), "亼…");
        assert!(text_width(&cut("亼亼亼亼", 5, Cut::Middle)) <= 5);
    }
}
