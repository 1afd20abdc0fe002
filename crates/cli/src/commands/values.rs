//! Tensor values: `sipllm read FILE TENSOR --as f32 [--format raw|npy]` and
//! `sipllm tensors --stats`. Both stream a tensor's values in bounded chunks through the
//! seam's `read_f32_at`, so memory stays at one chunk whatever the tensor's size.

use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sipllm_streaming::{StreamError, TensorInfo, WeightSource};

use crate::cli::{ReadArgs, TensorsArgs, ValueFormat, ValueType};
use crate::commands::range::parse_range;
use crate::commands::{keep, report_open_error, usage_error, write_output};
use crate::glob::Glob;
use crate::open::Opened;
use crate::render::escape;
use crate::{Ctx, Exit};

/// Values per chunk (4 MiB of f32), rounded down to whole blocks.
const CHUNK_VALUES: u64 = 1 << 20;

/// Runs `read --as`.
pub fn read(
    args: &ReadArgs,
    as_type: ValueType,
    source: &dyn WeightSource,
    tensor: &TensorInfo,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let ValueType::F32 = as_type;
    if !sipllm_quants::is_supported(tensor.ggml_type) {
        let e = StreamError::Tensor(sipllm_streaming::TensorError::Dequant {
            tensor: tensor.name.clone(),
            source: sipllm_quants::DequantError::UnsupportedType { ty: tensor.ggml_type },
        });
        return Ok(report_open_error(&args.file, &e, ctx));
    }
    let Some(count) = tensor.element_count() else {
        return Ok(usage_error("the tensor's element count overflows 64 bits"));
    };
    let range = match args.range.as_deref().map(|r| element_range(r, count)).transpose() {
        Ok(r) => r.unwrap_or(0..count),
        Err(msg) => return Ok(usage_error(&msg)),
    };
    let shape: Vec<u64> =
        if range == (0..count) { tensor.shape.to_vec() } else { vec![range.end - range.start] };
    let write = |out: &mut dyn Write| -> io::Result<Exit> {
        if args.format == ValueFormat::Npy {
            out.write_all(&npy_header(&shape))?;
        }
        let mut exit = Exit::Ok;
        let result = for_each_chunk(source, tensor, range.clone(), |values| {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            out.write_all(&bytes)
        });
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
    tensor: &TensorInfo,
    range: Range<u64>,
    mut f: impl FnMut(&[f32]) -> io::Result<()>,
) -> Result<(), ChunkError> {
    let block = sipllm_quants::block_layout(tensor.ggml_type).map_or(1, |(n, _)| n as u64);
    let step = (CHUNK_VALUES / block).max(1) * block;
    let mut buf = vec![0f32; usize::try_from(step.min(range.end - range.start)).unwrap_or(0)];
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
    let tensors: Vec<(usize, &TensorInfo)> = source
        .tensors()
        .iter()
        .enumerate()
        .filter(|(_, t)| keep(filter, t.name.as_bytes()))
        .collect();
    let total: u64 = tensors
        .iter()
        .filter(|(_, t)| sipllm_quants::is_supported(t.ggml_type))
        .filter_map(|(_, t)| t.nbytes)
        .sum();
    let bar = progress_bar(ctx, total);
    let mut rows = vec![
        ["#", "name", "type", "shape", "min", "max", "mean", "std", "nan", "inf"].map(String::from),
    ];
    for (i, t) in tensors {
        let shape =
            format!("[{}]", t.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "));
        let mut row = [
            i.to_string(),
            escape::str(&t.name).to_string(),
            t.ggml_type.name().to_string(),
            shape,
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ];
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
            let (lo, hi, mean, std) = if s.finite == 0 {
                ("-".into(), "-".into(), "-".into(), "-".into())
            } else {
                (short(s.min), short(s.max), format!("{:.6e}", s.mean), format!("{:.6e}", s.std()))
            };
            row[4..].clone_from_slice(&[lo, hi, mean, std, s.nan.to_string(), s.inf.to_string()]);
        } else {
            for cell in &mut row[4..] {
                *cell = "-".into();
            }
        }
        rows.push(row);
    }
    bar.finish_and_clear();
    let mut widths = [0usize; 10];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for row in &rows {
        let mut line = String::new();
        for (c, (cell, w)) in row.iter().zip(widths).enumerate() {
            // Text columns left-aligned, numbers right-aligned.
            let pad = " ".repeat(w - cell.chars().count());
            let sep = if c == 0 { "" } else { "  " };
            if matches!(c, 1..=3) {
                line.push_str(&format!("{sep}{cell}{pad}"));
            } else {
                line.push_str(&format!("{sep}{pad}{cell}"));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// An f32 in its shortest round-trip form: plain for everyday magnitudes, with an exponent
/// for very large or very small ones.
fn short(v: f32) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-4..1e6).contains(&a) { v.to_string() } else { format!("{v:e}") }
}

/// The bar of a long streaming job (hidden unless standard error is a terminal).
pub(crate) fn progress_bar(ctx: &Ctx, total: u64) -> ProgressBar {
    if !ctx.stderr_is_tty {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
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
}
