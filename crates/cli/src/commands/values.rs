//! Tensor values: `sipllm read FILE TENSOR --as f32 [--format raw|npy]` and
//! `sipllm tensors --stats`. Both stream a tensor's values in bounded chunks through the
//! seam's `read_f32_at`, so memory stays at one chunk whatever the tensor's size.

use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::Path;

use sipllm_streaming::{SourceTensor, StreamError, WeightSource};

use crate::cli::{ReadArgs, TensorsArgs, ValueFormat, ValueType};
use crate::commands::range::parse_range;
use crate::commands::{keep, report_open_error, usage_error, write_output};
use crate::glob::Glob;
use crate::open::Opened;
use crate::render::escape;
use crate::render::table::{Align, Cut, Table};
use crate::render::value::group;
use crate::{Ctx, Exit};

/// Values per chunk (4 MiB of f32), rounded down to whole blocks.
const CHUNK_VALUES: u64 = 1 << 20;

/// Runs `read --as`.
pub fn read(
    args: &ReadArgs,
    as_type: ValueType,
    source: &dyn WeightSource,
    tensor: &SourceTensor,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let ValueType::F32 = as_type;
    let Some(count) = tensor.element_count() else {
        return Ok(usage_error("the tensor's element count overflows 64 bits"));
    };
    let range = match args.range.as_deref().map(|r| element_range(r, count)).transpose() {
        Ok(r) => r.unwrap_or(0..count),
        Err(msg) => return Ok(usage_error(&msg)),
    };
    // An empty read asks the seam whether these values can be read at all (a type without
    // values, a size that is not whole blocks) before any output is written: the error is
    // the seam's own, and no `.npy` header announces values that never come.
    if let Err(e) = source.read_f32_at(tensor, range.start..range.start, &mut []) {
        return Ok(report_open_error(&args.file, &e, ctx));
    }
    let shape: Vec<u64> =
        if range == (0..count) { tensor.shape.to_vec() } else { vec![range.end - range.start] };
    let write = |out: &mut dyn Write| -> io::Result<Exit> {
        if args.format == ValueFormat::Npy {
            out.write_all(&npy_header(&shape))?;
        }
        let mut exit = Exit::Ok;
        // Values written, as f32 bytes.
        let bar = crate::progress::bar(ctx, (range.end - range.start).saturating_mul(4));
        let result = for_each_chunk(source, tensor, range.clone(), |values| {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            bar.inc(bytes.len() as u64);
            out.write_all(&bytes)
        });
        bar.finish_and_clear();
        match result {
            Ok(()) => {}
            Err(ChunkError::Read(e)) => exit = report_open_error(&args.file, &e, ctx),
            Err(ChunkError::Write(e)) => return Err(e),
        }
        Ok(exit)
    };
    match &args.output {
        Some(path) if path != Path::new("-") => Ok(write_output(path, write)),
        _ => {
            let stdout = io::stdout();
            let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
            let exit = write(&mut out)?;
            out.flush()?;
            Ok(exit)
        }
    }
}

/// `--range` with `--as`: element indices.
fn element_range(text: &str, count: u64) -> Result<Range<u64>, String> {
    parse_range(text, count).map_err(|_| {
        format!(
            "invalid --range {} with --as: expected START..END, element indices within the \
             tensor's {count} values (END exclusive, e.g. 0..1024, 4096.., ..0x100)",
            escape::quoted(text.as_bytes())
        )
    })
}

/// The header of a format-1.0 `.npy` file of little-endian f32 in C order.
pub fn npy_header(shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + length (2) + dict + '\n', padded to a multiple of 64.
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    while 10 + dict.len() + 1 < total {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    // A tensor has at most a few dimensions: the dict is far below 64 KiB.
    out.extend_from_slice(&u16::try_from(dict.len()).unwrap_or(u16::MAX).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

enum ChunkError {
    Read(StreamError),
    Write(io::Error),
}

/// Calls `f` on consecutive chunks of the values in `range` (whole blocks where possible).
fn for_each_chunk(
    source: &dyn WeightSource,
    tensor: &SourceTensor,
    range: Range<u64>,
    mut f: impl FnMut(&[f32]) -> io::Result<()>,
) -> Result<(), ChunkError> {
    let block = sipllm_quants::block_layout(tensor.ggml_type).map_or(1, |(n, _)| n as u64);
    let step = (CHUNK_VALUES / block).max(1) * block;
    let mut buf = vec![0f32; usize::try_from(step.min(range.end - range.start)).unwrap_or(0)];
    // The whole range announced once: over HTTP the chunks' reads continue one request (per
    // 64 MiB) instead of making one each.
    source.prefetch_values(tensor, range.clone());
    let mut at = range.start;
    while at < range.end {
        // Chunk ends on a block boundary (except at the range's end).
        let end = ((at / block + 1) * block).max(at / block * block + step).min(range.end);
        let n = (end - at) as usize;
        let chunk = buf.get_mut(..n).unwrap_or_default();
        source.read_f32_at(tensor, at..end, chunk).map_err(ChunkError::Read)?;
        f(chunk).map_err(ChunkError::Write)?;
        at = end;
    }
    Ok(())
}

/// Running statistics of a tensor's values; NaN and ±Inf are counted apart and left out of
/// min, max, mean and standard deviation.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Finite values seen.
    pub finite: u64,
    /// NaN values.
    pub nan: u64,
    /// Infinite values.
    pub inf: u64,
    /// Smallest finite value.
    pub min: f32,
    /// Largest finite value.
    pub max: f32,
    /// Mean of the finite values.
    pub mean: f64,
    /// Sum of squared deviations from the mean (Chan et al.'s M2).
    m2: f64,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            finite: 0,
            nan: 0,
            inf: 0,
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Stats {
    /// Adds a chunk: two passes over it (sum, then squared deviations), merged with the
    /// running totals by Chan's formula, which stays accurate for billions of values.
    pub fn add(&mut self, values: &[f32]) {
        let mut n = 0u64;
        let mut sum = 0f64;
        for &v in values {
            if v.is_nan() {
                self.nan += 1;
            } else if v.is_infinite() {
                self.inf += 1;
            } else {
                n += 1;
                sum += f64::from(v);
                self.min = self.min.min(v);
                self.max = self.max.max(v);
            }
        }
        if n == 0 {
            return;
        }
        let mean = sum / n as f64;
        let m2: f64 =
            values.iter().filter(|v| v.is_finite()).map(|&v| (f64::from(v) - mean).powi(2)).sum();
        let total = self.finite + n;
        let delta = mean - self.mean;
        self.mean += delta * n as f64 / total as f64;
        self.m2 += m2 + delta * delta * (self.finite as f64) * (n as f64) / total as f64;
        self.finite = total;
    }

    /// Population standard deviation of the finite values.
    pub fn std(&self) -> f64 {
        if self.finite == 0 { f64::NAN } else { (self.m2 / self.finite as f64).sqrt() }
    }
}

/// One tensor's line of `tensors --stats` (and its `--json` record).
struct StatRow<'a> {
    index: usize,
    tensor: &'a SourceTensor,
    /// `None`: a type whose values are not decoded.
    stats: Option<Stats>,
}

/// Runs `tensors --stats`.
pub fn stats(
    args: &TensorsArgs,
    filter: Option<&Glob>,
    opened: &Opened,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let Some(source) = opened.source() else {
        return Ok(usage_error("the file's tensor data cannot be read"));
    };
    let tensors: Vec<(usize, &SourceTensor)> = source
        .tensors()
        .iter()
        .enumerate()
        .filter(|(_, t)| keep(filter, t.name.as_bytes()))
        .collect();
    let total: u64 = tensors
        .iter()
        .filter(|(_, t)| sipllm_quants::is_supported(t.ggml_type))
        .filter_map(|(_, t)| t.nbytes)
        .fold(0u64, u64::saturating_add);
    let bar = crate::progress::bar(ctx, total);
    let mut rows = Vec::with_capacity(tensors.len());
    for (index, t) in tensors {
        let mut stats = None;
        if sipllm_quants::is_supported(t.ggml_type) {
            let mut s = Stats::default();
            let count = t.element_count().unwrap_or(0);
            let bytes_per_value = t.nbytes.unwrap_or(0) as f64 / count.max(1) as f64;
            let result = for_each_chunk(source, t, 0..count, |v| {
                s.add(v);
                bar.inc((v.len() as f64 * bytes_per_value) as u64);
                Ok(())
            });
            if let Err(ChunkError::Read(e)) = result {
                bar.finish_and_clear();
                return Ok(report_open_error(&args.file, &e, ctx));
            }
            stats = Some(s);
        }
        rows.push(StatRow { index, tensor: t, stats });
    }
    bar.finish_and_clear();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        let records: Vec<StatRecord<'_>> = rows.iter().map(stat_record).collect();
        serde_json::to_writer(&mut out, &records).map_err(io::Error::other)?;
        writeln!(out)?;
    } else {
        stats_table(&mut out, &rows, ctx.fit)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// The `tensors --stats --json` record of one tensor: its `tensors --json` identity (index,
/// name, type, row-major shape), whether its values were decoded (`false`: a type without a
/// dequantizer, and no counts), the counts, and the statistics of its finite values (`null`
/// when it has none).
#[derive(serde::Serialize)]
struct StatRecord<'a> {
    index: usize,
    name: &'a str,
    ggml_type: String,
    shape: &'a [u64],
    decoded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    finite: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nan: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inf: Option<u64>,
    min: Option<f32>,
    max: Option<f32>,
    mean: Option<f64>,
    std: Option<f64>,
}

fn stat_record<'a>(row: &StatRow<'a>) -> StatRecord<'a> {
    let t = row.tensor;
    let s = row.stats.filter(|s| s.finite > 0);
    let finite = |x: f64| x.is_finite().then_some(x);
    StatRecord {
        index: row.index,
        name: &t.name,
        ggml_type: t.ggml_type.name().to_string(),
        shape: &t.shape,
        decoded: row.stats.is_some(),
        finite: row.stats.map(|s| s.finite),
        nan: row.stats.map(|s| s.nan),
        inf: row.stats.map(|s| s.inf),
        min: s.map(|s| s.min),
        max: s.map(|s| s.max),
        mean: s.and_then(|s| finite(s.mean)),
        std: s.and_then(|s| finite(s.std())),
    }
}

/// The text table of `tensors --stats`, fitted to `width` when given: names are cut in the
/// middle down to 20 columns, then the shape and the type left out (a note says so).
fn stats_table(out: &mut dyn Write, rows: &[StatRow<'_>], width: Option<usize>) -> io::Result<()> {
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("name", Align::Left),
        ("type", Align::Left),
        ("shape", Align::Left),
        ("min", Align::Right),
        ("max", Align::Right),
        ("mean", Align::Right),
        ("std", Align::Right),
        ("nan", Align::Right),
        ("inf", Align::Right),
    ]);
    table.shrinkable("name", 20, Cut::Middle).optional("shape", 0).optional("type", 1);
    for row in rows {
        let t = row.tensor;
        let shape =
            format!("[{}]", t.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
        let mut cells = vec![
            row.index.to_string(),
            escape::str(&t.name).into_owned(),
            t.ggml_type.name().to_string(),
            shape,
        ];
        match row.stats {
            Some(s) if s.finite > 0 => cells.extend([
                decimal(f64::from(s.min)),
                decimal(f64::from(s.max)),
                decimal(s.mean),
                decimal(s.std()),
                group(s.nan),
                group(s.inf),
            ]),
            Some(s) => cells.extend(
                ["-", "-", "-", "-"]
                    .map(String::from)
                    .into_iter()
                    .chain([group(s.nan), group(s.inf)]),
            ),
            None => cells.extend(std::iter::repeat_n("-".to_owned(), 6)),
        }
        table.row(cells);
    }
    let left_out = table.write_fit(out, "", width)?;
    if !left_out.is_empty() {
        writeln!(out, "({} left out to fit; `sipllm tensors` lists them)", left_out.join(" and "))?;
    }
    Ok(())
}

/// A statistic in plain decimal, five significant digits (`26.346`, `-0.0012346`, `0`),
/// trailing zeros dropped; an exponent only below 1e-4 or from 1e15 on, with four
/// significant digits (`1.235e-7`).
pub fn decimal(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if !(1e-4..1e15).contains(&a) {
        let text = format!("{x:.3e}");
        // `1.200e-7` -> `1.2e-7`.
        return match text.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => text,
        };
    }
    let magnitude = a.log10().floor() as i32;
    let decimals = usize::try_from(4 - magnitude).unwrap_or(0);
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    if text == "-0" { "0".to_owned() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_are_aligned_and_shaped() {
        for shape in [&[][..], &[5], &[2, 3], &[7, 1, 4096]] {
            let h = npy_header(shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(usize::from(u16::from_le_bytes([h[8], h[9]])), h.len() - 10);
            assert_eq!(h.last(), Some(&b'\n'));
        }
        let h = String::from_utf8_lossy(&npy_header(&[5])[10..]).into_owned();
        assert!(h.contains("'shape': (5,), }"), "{h}");
        let h = String::from_utf8_lossy(&npy_header(&[2, 3])[10..]).into_owned();
        assert!(h.contains("'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
    }

    #[test]
    fn stats_merge_chunks_exactly_enough() {
        let values: Vec<f32> = (0..10_000).map(|i| (i % 97) as f32 * 0.5 - 7.0).collect();
        let mut whole = Stats::default();
        whole.add(&values);
        let mut parts = Stats::default();
        for c in values.chunks(333) {
            parts.add(c);
        }
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
        let var = values.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / n;
        for s in [whole, parts] {
            assert_eq!(s.finite, 10_000);
            assert!((s.mean - mean).abs() < 1e-12);
            assert!((s.std() - var.sqrt()).abs() < 1e-12);
            assert_eq!((s.min, s.max), (-7.0, 41.0));
        }
        let mut odd = Stats::default();
        odd.add(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0]);
        assert_eq!((odd.nan, odd.inf, odd.finite, odd.min, odd.max), (1, 2, 1, 1.0, 1.0));
        assert_eq!(odd.std(), 0.0);
    }

    #[test]
    fn statistics_print_as_plain_decimals() {
        assert_eq!(decimal(26.346_401), "26.346");
        assert_eq!(decimal(3.75), "3.75");
        assert_eq!(decimal(-0.001_234_567), "-0.0012346");
        assert_eq!(decimal(0.0), "0");
        assert_eq!(decimal(-0.000_01), "-1e-5");
        assert_eq!(decimal(1.234_567e-7), "1.235e-7");
        assert_eq!(decimal(-3.002_44e36), "-3.002e36");
        assert_eq!(decimal(2_436_096.0), "2436096");
        assert_eq!(decimal(1e20), "1e20");
        assert_eq!(decimal(-0.000_000_000_000_000_1), "-1e-16");
    }
}
