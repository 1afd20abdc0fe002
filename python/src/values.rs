//! Tensor values: `dequantize(data, code, out)` (behind `sipllm_gguf.quants.dequantize`, the
//! drop-in for gguf-py's) and `Model.values(name)` (through the seam's `read_f32_at`).
//!
//! The output is a numpy array the caller made with `numpy.empty`: numpy asks the kernel for
//! transparent huge pages for big arrays and does not zero them, where a fresh `bytearray`
//! (the one writable Python buffer safe Rust can fill in place under the limited API of 3.9)
//! is malloc'd in 4 KiB pages and zeroed first: measured here, filling a fresh 1 GB
//! `bytearray` runs at 2-3 GB/s, `numpy.empty` and a copy in 1 MiB pieces at 9-15 GB/s.
//! So values are computed in pieces of about 1 MiB into a `bytes` object (still in cache
//! when numpy copies it into its place), with the GIL released while each is computed.
//! `bytemuck` views the piece's bytes as `&mut [f32]` (CPython aligns them to 16 bytes); if a
//! buffer ever is not aligned, the values go through an aligned scratch buffer instead.
//! Inputs that are not `bytes` (numpy arrays, memoryviews) are copied to Rust a piece at a
//! time (without the buffer protocol, borrowing them would need `unsafe`).

use std::ops::Range;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView, PySlice};
use sipllm_gguf::GgmlType;
use sipllm_quants::{DequantError, PARALLEL_MIN_BYTES_PER_THREAD};
use sipllm_streaming::{StreamError, TensorError, TensorInfo, WeightSource};

use crate::errors::{Diag, gguf_error};

/// Values per step of the unaligned fallback: a multiple of every block size (1, 32, 64, 256).
const SCRATCH_VALUES: usize = 1 << 16;

/// The Python exception for a dequantization error; `path` names the part of the input at
/// fault.
fn dequant_error(py: Python<'_>, e: &DequantError, path: &str) -> PyErr {
    gguf_error(py, &Diag::from_dequant(e, path), None)
}

fn thread_count(threads: usize) -> usize {
    if threads == 0 { std::thread::available_parallelism().map_or(1, usize::from) } else { threads }
}

/// `dequantize` on one thread, `dequantize_parallel` otherwise (0 = every core).
fn run(ty: GgmlType, src: &[u8], dst: &mut [f32], threads: usize) -> Result<(), DequantError> {
    if threads == 1 {
        sipllm_quants::dequantize(ty, src, dst)
    } else {
        sipllm_quants::dequantize_parallel(ty, src, dst, threads)
    }
}

/// A fresh output buffer, as f32 if it is aligned for them.
enum Out<'a> {
    Aligned(&'a mut [f32]),
    Unaligned(&'a mut [u8], Vec<f32>),
}

impl<'a> Out<'a> {
    fn new(buf: &'a mut [u8]) -> Out<'a> {
        if buf.as_ptr().align_offset(std::mem::align_of::<f32>()) == 0
            && buf.len().is_multiple_of(4)
        {
            // Aligned and whole f32s, so the cast cannot fail.
            Out::Aligned(bytemuck::cast_slice_mut(buf))
        } else {
            Out::Unaligned(buf, Vec::new())
        }
    }

    /// Values `at..at + n` (element indices), computed by `fill` into a slice of `n` values:
    /// in place when aligned, else in steps of at most `step` values through the scratch
    /// buffer (`fill` is then called once per step, with the step's element range).
    fn fill<E>(
        &mut self,
        at: usize,
        n: usize,
        step: usize,
        mut fill: impl FnMut(Range<usize>, &mut [f32]) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            Out::Aligned(values) => fill(0..n, &mut values[at..at + n]),
            Out::Unaligned(bytes, scratch) => {
                let mut done = 0;
                while done < n {
                    let k = step.min(n - done);
                    scratch.clear();
                    scratch.resize(k, 0.0);
                    fill(done..done + k, scratch)?;
                    let to = (at + done) * 4;
                    bytes[to..to + 4 * k].copy_from_slice(bytemuck::cast_slice(scratch));
                    done += k;
                }
                Ok(())
            }
        }
    }
}

/// Values per piece: 1 MiB of f32, a multiple of every block size (1, 32, 64, 256).
const PIECE_VALUES: usize = 1 << 18;

/// Checks that `out` (a 1-D numpy `uint8` view of the output) holds `values` f32.
fn check_out(out: &Bound<'_, PyAny>, values: usize) -> PyResult<()> {
    let have = out.len()?;
    if values.checked_mul(4) != Some(have) {
        return Err(PyValueError::new_err(format!(
            "the output has {have} bytes, but the values take {values} x 4"
        )));
    }
    Ok(())
}

/// Computes values `at..at + n` with `fill` (the GIL released) into a fresh `bytes`, then
/// copies them into their place in `out` (numpy's copy).
fn put<E: Send>(
    py: Python<'_>,
    out: &Bound<'_, PyAny>,
    at: usize,
    n: usize,
    fill: impl FnMut(Range<usize>, &mut [f32]) -> Result<(), E> + Send,
) -> PyResult<Result<(), E>> {
    let mut failure = None;
    let piece = PyBytes::new_with(py, n * 4, |buf| {
        let mut piece = Out::new(buf);
        failure = py.detach(|| piece.fill(0, n, SCRATCH_VALUES, fill)).err();
        Ok(())
    })?;
    if let Some(e) = failure {
        return Ok(Err(e));
    }
    let to = PySlice::new(py, isize::try_from(at * 4)?, isize::try_from((at + n) * 4)?, 1);
    out.set_item(to, PyMemoryView::from(piece.as_any())?)?;
    Ok(Ok(()))
}

/// Dequantizes `data` (a `bytes` object, or a 1-D object of bytes that slices and has
/// `tobytes()`: a numpy `uint8` array, a memoryview) as ggml type `code` into `out`, a 1-D
/// numpy `uint8` view of a C-contiguous `float32` array of exactly the values' size. Up to
/// `threads` threads share each piece (0 = every core); 1 keeps to the calling one.
#[pyfunction]
#[pyo3(signature = (data, code, out, threads = 1))]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    code: u32,
    out: &Bound<'py, PyAny>,
    threads: usize,
) -> PyResult<()> {
    let ty = GgmlType::from_code(code);
    let len = data.len()?;
    let count = sipllm_quants::element_count(ty, len).map_err(|e| dequant_error(py, &e, ""))?;
    check_out(out, count)?;
    let (bn, bb) = sipllm_quants::block_layout(ty).unwrap_or((1, 1));
    // Whole blocks per piece: about PIECE_VALUES values, or with threads enough input for
    // each of them to get PARALLEL_MIN_BYTES_PER_THREAD.
    let mut blocks = (PIECE_VALUES / bn).max(1);
    if threads != 1 {
        let need = PARALLEL_MIN_BYTES_PER_THREAD.saturating_mul(thread_count(threads));
        blocks = blocks.max(need.div_ceil(bb));
    }
    let borrowed = data.cast::<PyBytes>().ok().map(|b| b.as_bytes());
    let (mut lo, mut at) = (0usize, 0usize);
    while lo < len {
        let hi = lo.saturating_add(blocks * bb).min(len);
        let copied;
        let src = match borrowed {
            // `bytes` is immutable: borrowed as it is.
            Some(all) => &all[lo..hi],
            None => {
                let slice = PySlice::new(py, isize::try_from(lo)?, isize::try_from(hi)?, 1);
                copied = data.get_item(slice)?.call_method0("tobytes")?.cast_into::<PyBytes>()?;
                copied.as_bytes()
            }
        };
        if src.len() != hi - lo {
            return Err(PyValueError::new_err(format!(
                "bytes {lo}..{hi} of the input came out as {} bytes: the input must be a 1-D \
                 buffer of bytes (a numpy uint8 array)",
                src.len()
            )));
        }
        let n = (hi - lo) / bb * bn;
        put(py, out, at, n, |r, dst| {
            run(ty, &src[r.start / bn * bb..r.end / bn * bb], dst, threads)
        })?
        .map_err(|e| dequant_error(py, &e, ""))?;
        lo = hi;
        at += n;
    }
    Ok(())
}

/// Values per row of `row_bytes` bytes of type `code` (gguf-py's output shape rule), or the
/// typed error for an unsupported type or a row that is not whole blocks (then its `path` is
/// `data.shape[-1]`).
#[pyfunction]
pub(crate) fn row_values(py: Python<'_>, code: u32, row_bytes: usize) -> PyResult<usize> {
    sipllm_quants::element_count(GgmlType::from_code(code), row_bytes).map_err(|e| {
        let at = if matches!(e, DequantError::PartialBlock { .. }) { "data.shape[-1]" } else { "" };
        dequant_error(py, &e, at)
    })
}

/// `(code, name, elements per block, bytes per block)` of every type with values.
#[pyfunction]
pub(crate) fn supported_types(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows = sipllm_quants::SUPPORTED.iter().filter_map(|&ty| {
        sipllm_quants::block_layout(ty).map(|(n, b)| (ty.code(), ty.name(), n, b))
    });
    PyList::new(py, rows)
}

/// Values `range` of `tensor` from `source` into `out` (a 1-D numpy `uint8` view of a
/// `float32` array of the range's length), a piece at a time through `read_f32_at` (the GIL
/// released while each is read and computed).
pub(crate) fn tensor_values(
    py: Python<'_>,
    source: &(dyn WeightSource + '_),
    tensor: &TensorInfo,
    range: Range<u64>,
    out: &Bound<'_, PyAny>,
) -> Result<(), ValuesError> {
    let count = tensor.element_count().unwrap_or(u64::MAX);
    if range.start > range.end || range.end > count {
        return Err(ValuesError::Stream(StreamError::Tensor(TensorError::ElementRange {
            tensor: tensor.name.clone(),
            start: range.start,
            end: range.end,
            count,
            got: range.end.saturating_sub(range.start),
        })));
    }
    let n = usize::try_from(range.end - range.start).map_err(|_| {
        ValuesError::Stream(StreamError::TooLarge {
            what: format!("the values of tensor {:?}", tensor.name),
            bytes: (range.end - range.start).saturating_mul(4),
        })
    })?;
    check_out(out, n).map_err(ValuesError::Python)?;
    let mut at = 0;
    while at < n {
        let k = PIECE_VALUES.min(n - at);
        let from = range.start + at as u64;
        put(py, out, at, k, |r, dst| {
            source.read_f32_at(tensor, from + r.start as u64..from + r.end as u64, dst)
        })
        .map_err(ValuesError::Python)?
        .map_err(ValuesError::Stream)?;
        at += k;
    }
    Ok(())
}

/// Why [`tensor_values`] failed: the read side's error, or Python's.
#[derive(Debug)]
pub(crate) enum ValuesError {
    Stream(StreamError),
    Python(PyErr),
}
