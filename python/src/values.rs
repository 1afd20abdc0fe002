//! Tensor values: `dequantize(data, code)` (behind `sipllm_gguf.quants.dequantize`, the drop-in
//! for gguf-py's) and `Model.values(name)` (through the seam's `read_f32_at`).
//!
//! Both write f32 straight into a fresh `bytearray` (writable, as gguf-py's arrays are), which
//! Python wraps with `numpy.frombuffer` without a copy. The bytes are viewed as `&mut [f32]` by
//! `bytemuck` (CPython's allocators align it to 16 bytes); if a buffer ever is not aligned, the
//! values go through a small aligned scratch buffer and are copied. The GIL is released while
//! values are computed. Inputs that are not `bytes` (numpy arrays, memoryviews) are copied to
//! Rust in pieces of a few MiB (the limited API of Python 3.9 has no buffer protocol, and
//! borrowing a mutable buffer without it would need `unsafe`), so a piece is still in cache
//! when it is dequantized and the extra memory is one piece, whatever the input's size.

use std::ops::Range;

use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PySlice};
use sipllm_gguf::GgmlType;
use sipllm_quants::{DequantError, PARALLEL_MIN_BYTES_PER_THREAD};
use sipllm_streaming::{StreamError, TensorError, TensorInfo, WeightSource};

use crate::errors::{Diag, gguf_error};

/// Input bytes per piece copied from a non-`bytes` input (rounded down to whole blocks; more
/// when many threads share a piece, so that each still gets
/// [`PARALLEL_MIN_BYTES_PER_THREAD`] or more).
const PIECE_BYTES: usize = 4 << 20;

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

    /// Dequantizes `src` (whole blocks of `ty`) into values `at..`.
    fn dequantize(
        &mut self,
        ty: GgmlType,
        src: &[u8],
        at: usize,
        threads: usize,
    ) -> Result<(), DequantError> {
        let n = sipllm_quants::element_count(ty, src.len())?;
        let (bn, bb) =
            sipllm_quants::block_layout(ty).ok_or(DequantError::UnsupportedType { ty })?;
        self.fill(at, n, SCRATCH_VALUES, |r, dst| {
            run(ty, &src[r.start / bn * bb..r.end / bn * bb], dst, threads)
        })
    }
}

/// The `bytearray` of the f32 values of `data` (a `bytes` object, or a 1-D object of bytes
/// that slices and has `tobytes()`: a numpy `uint8` array, a memoryview), dequantized as ggml
/// type `code` on up to `threads` threads (0 = every core).
#[pyfunction]
#[pyo3(signature = (data, code, threads = 0))]
pub(crate) fn dequantize<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    code: u32,
    threads: usize,
) -> PyResult<Bound<'py, PyByteArray>> {
    let ty = GgmlType::from_code(code);
    let len = data.len()?;
    let count = sipllm_quants::element_count(ty, len).map_err(|e| dequant_error(py, &e, ""))?;
    let (_, bb) = sipllm_quants::block_layout(ty).unwrap_or((1, 1));
    let out_len = count.checked_mul(4).ok_or_else(|| {
        PyMemoryError::new_err(format!("{count} f32 values do not fit in memory"))
    })?;
    let mut failure = None;
    let out = PyByteArray::new_with(py, out_len, |buf| {
        let mut out = Out::new(buf);
        if let Ok(bytes) = data.cast::<PyBytes>() {
            // Immutable: borrowed as it is, whole.
            let src = bytes.as_bytes();
            failure = py.detach(|| out.dequantize(ty, src, 0, threads)).err();
            return Ok(());
        }
        let per_thread = PARALLEL_MIN_BYTES_PER_THREAD.saturating_mul(2);
        let piece = PIECE_BYTES.max(per_thread.saturating_mul(thread_count(threads)));
        let piece = (piece / bb).max(1) * bb;
        let (mut lo, mut at) = (0usize, 0usize);
        while lo < len && failure.is_none() {
            let hi = lo.saturating_add(piece).min(len);
            let slice = PySlice::new(py, isize::try_from(lo)?, isize::try_from(hi)?, 1);
            let copied = data.get_item(slice)?.call_method0("tobytes")?;
            let src = copied.cast::<PyBytes>()?.as_bytes();
            if src.len() != hi - lo {
                return Err(PyValueError::new_err(format!(
                    "bytes {lo}..{hi} of the input came out as {} bytes: the input must be a \
                     1-D buffer of bytes (a numpy uint8 array)",
                    src.len()
                )));
            }
            let values = (hi - lo) / bb * sipllm_quants::block_layout(ty).map_or(0, |l| l.0);
            failure = py.detach(|| out.dequantize(ty, src, at, threads)).err();
            lo = hi;
            at += values;
        }
        Ok(())
    })?;
    match failure {
        Some(e) => Err(dequant_error(py, &e, "")),
        None => Ok(out),
    }
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

/// Values `range` of `tensor` from `source` in a fresh `bytearray` (the GIL released while
/// they are read and computed).
pub(crate) fn tensor_values<'py>(
    py: Python<'py>,
    source: &(dyn WeightSource + '_),
    tensor: &TensorInfo,
    range: Range<u64>,
) -> Result<Bound<'py, PyByteArray>, ValuesError> {
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
    let n = usize::try_from(range.end - range.start).ok().filter(|n| n.checked_mul(4).is_some());
    let Some(n) = n else {
        return Err(ValuesError::Stream(StreamError::TooLarge {
            what: format!("the values of tensor {:?}", tensor.name),
            bytes: (range.end - range.start).saturating_mul(4),
        }));
    };
    let mut failure = None;
    let out = PyByteArray::new_with(py, n * 4, |buf| {
        let mut out = Out::new(buf);
        let start = range.start;
        failure = py
            .detach(|| {
                out.fill(0, n, SCRATCH_VALUES, |r, dst| {
                    source.read_f32_at(tensor, start + r.start as u64..start + r.end as u64, dst)
                })
            })
            .err();
        Ok(())
    })
    .map_err(ValuesError::Python)?;
    match failure {
        Some(e) => Err(ValuesError::Stream(e)),
        None => Ok(out),
    }
}

/// Why [`tensor_values`] failed: the read side's error, or Python's (out of memory).
#[derive(Debug)]
pub(crate) enum ValuesError {
    Stream(StreamError),
    Python(PyErr),
}
