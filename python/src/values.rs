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
use sipllm_streaming::{StreamError, TensorError, TensorInfo, VALUES_CHUNK_BYTES, WeightSource};

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

/// Whole blocks per piece of `ty`: about [`PIECE_VALUES`] values, or with threads enough
/// input for each of them to get [`PARALLEL_MIN_BYTES_PER_THREAD`].
fn piece_blocks(ty: GgmlType, threads: usize) -> usize {
    let (bn, bb) = sipllm_quants::block_layout(ty).unwrap_or((1, 1));
    let blocks = (PIECE_VALUES / bn).max(1);
    if threads == 1 {
        return blocks;
    }
    let need = PARALLEL_MIN_BYTES_PER_THREAD.saturating_mul(thread_count(threads));
    blocks.max(need.div_ceil(bb))
}

/// Dequantizes `src` (whole blocks of `ty`) into values `at..` of `out`, a piece at a time;
/// returns the number of values.
fn put_blocks(
    py: Python<'_>,
    ty: GgmlType,
    src: &[u8],
    out: &Bound<'_, PyAny>,
    at: usize,
    threads: usize,
) -> PyResult<Result<usize, DequantError>> {
    let Some((bn, bb)) = sipllm_quants::block_layout(ty) else {
        return Ok(Err(DequantError::UnsupportedType { ty }));
    };
    let mut done = 0;
    for piece in src.chunks(piece_blocks(ty, threads) * bb) {
        let n = piece.len() / bb * bn;
        let r = put(py, out, at + done, n, |r, dst| {
            run(ty, &piece[r.start / bn * bb..r.end / bn * bb], dst, threads)
        })?;
        if let Err(e) = r {
            return Ok(Err(e));
        }
        done += n;
    }
    Ok(Ok(done))
}

/// Input bytes copied at a time from an input that is not `bytes` (rounded to whole blocks).
const COPY_BYTES: usize = 4 << 20;

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
    let fail = |e: DequantError| dequant_error(py, &e, "");
    if let Ok(bytes) = data.cast::<PyBytes>() {
        // `bytes` is immutable: borrowed as it is.
        put_blocks(py, ty, bytes.as_bytes(), out, 0, threads)?.map_err(fail)?;
        return Ok(());
    }
    let (_, bb) = sipllm_quants::block_layout(ty).unwrap_or((1, 1));
    let step = (COPY_BYTES / bb).max(piece_blocks(ty, threads)) * bb;
    let (mut lo, mut at) = (0usize, 0usize);
    while lo < len {
        let hi = lo.saturating_add(step).min(len);
        let slice = PySlice::new(py, isize::try_from(lo)?, isize::try_from(hi)?, 1);
        let copied = data.get_item(slice)?.call_method0("tobytes")?.cast_into::<PyBytes>()?;
        let src = copied.as_bytes();
        if src.len() != hi - lo {
            return Err(PyValueError::new_err(format!(
                "bytes {lo}..{hi} of the input came out as {} bytes: the input must be a 1-D \
                 buffer of bytes (a numpy uint8 array)",
                src.len()
            )));
        }
        at += put_blocks(py, ty, src, out, at, threads)?.map_err(fail)?;
        lo = hi;
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
/// `float32` array of the range's length), the GIL released while they are read and
/// computed. A whole tensor is read in chunks of whole blocks into one reused buffer and
/// dequantized a piece at a time on up to `threads` threads (0 = every core); a part of one
/// goes through the seam's `read_f32_at` (which cuts the blocks at its ends and picks its
/// threads) a piece at a time.
pub(crate) fn tensor_values(
    py: Python<'_>,
    source: &(dyn WeightSource + '_),
    tensor: &TensorInfo,
    range: Range<u64>,
    out: &Bound<'_, PyAny>,
    threads: usize,
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
    if range.start == 0 && range.end == count {
        return whole_tensor(py, source, tensor, out, threads);
    }
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

/// All of `tensor`'s values into `out` (sized by the caller): chunks of at most
/// `VALUES_CHUNK_BYTES` of whole blocks through `read_raw_at` into one buffer, each
/// dequantized a piece at a time. (`read_f32_at` per piece would allocate and zero its read
/// buffer on every call, which costs as much as the values.)
fn whole_tensor(
    py: Python<'_>,
    source: &(dyn WeightSource + '_),
    tensor: &TensorInfo,
    out: &Bound<'_, PyAny>,
    threads: usize,
) -> Result<(), ValuesError> {
    let ty = tensor.ggml_type;
    let dequant = |source| {
        ValuesError::Stream(StreamError::Tensor(TensorError::Dequant {
            tensor: tensor.name.clone(),
            source,
        }))
    };
    let (bn, bb) = sipllm_quants::block_layout(ty)
        .ok_or_else(|| dequant(DequantError::UnsupportedType { ty }))?;
    let nbytes = tensor.byte_size().map_err(ValuesError::Stream)?;
    let count = tensor.element_count().unwrap_or(u64::MAX);
    // The stored size must be the element count's whole blocks (as read_f32_at checks).
    let len = usize::try_from(nbytes).unwrap_or(usize::MAX);
    if !count.is_multiple_of(bn as u64)
        || (count / bn as u64).checked_mul(bb as u64) != Some(nbytes)
    {
        return Err(dequant(DequantError::PartialBlock { ty, len, type_size: bb }));
    }
    let chunk = (VALUES_CHUNK_BYTES / bb).max(1) * bb;
    let mut raw = vec![0u8; chunk.min(len)];
    let (mut done, mut at) = (0usize, 0usize);
    while done < len {
        let k = chunk.min(len - done);
        let bytes = &mut raw[..k];
        let offset = tensor.abs_offset.checked_add(done as u64).ok_or_else(|| {
            ValuesError::Stream(StreamError::TooLarge { what: "an offset".into(), bytes: u64::MAX })
        })?;
        py.detach(|| source.read_raw_at(offset, bytes)).map_err(ValuesError::Stream)?;
        at += put_blocks(py, ty, bytes, out, at, threads)
            .map_err(ValuesError::Python)?
            .map_err(dequant)?;
        done += k;
    }
    Ok(())
}

/// Why [`tensor_values`] failed: the read side's error, or Python's.
#[derive(Debug)]
pub(crate) enum ValuesError {
    Stream(StreamError),
    Python(PyErr),
}
