//! Tensor values: `dequantize(data, code, out)` (behind `sipllm_gguf.quants.dequantize`, the
//! drop-in for gguf-py's) and `Model.values(name)` (through the seam: `read_raw_at` for a
//! whole tensor, `read_f32_at` for a part of one).
//!
//! The output is a numpy array the caller made with `numpy.empty`: numpy asks the kernel for
//! transparent huge pages for big arrays and does not zero them, where a fresh `bytearray`
//! (the one writable Python buffer safe Rust can fill in place under the limited API of 3.9)
//! is malloc'd in 4 KiB pages and zeroed first: measured here, filling a fresh 1 GB
//! `bytearray` runs at 2-3 GB/s, `numpy.empty` and a copy in 1 MiB pieces at 9-15 GB/s.
//! So values are computed in pieces of about 1 MiB into one reused Rust buffer with the GIL
//! released, copied into a `bytes` object (`bytemuck` gives the safe byte view of the f32),
//! which numpy copies into its place while it is still in cache.
//! Inputs that are not `bytes` (numpy arrays, memoryviews) are copied to Rust 4 MiB at a
//! time (without the buffer protocol, borrowing them would need `unsafe`).

use std::ops::Range;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView, PySlice};
use sipllm_gguf::GgmlType;
use sipllm_quants::DequantError;
use sipllm_streaming::{
    SourceTensor, StreamError, StreamErrorKind, TensorError, VALUES_CHUNK_BYTES, WeightSource,
    to_little_endian,
};

use crate::errors::{Diag, gguf_error};

/// The Python exception for a dequantization error; `path` names the part of the input at
/// fault. The help is said in this package's terms (the crate's names Rust functions).
fn dequant_error(py: Python<'_>, e: &DequantError, path: &str) -> PyErr {
    let mut diag = Diag::from_dequant(e, path);
    match e {
        DequantError::UnsupportedType { .. } => {
            diag.help = "the type has no values here (nor in gguf-py); \
                         sipllm_gguf.quants.SUPPORTED lists those that do; read the stored \
                         bytes instead (Model.read, GGUFReader tensors' data)"
                .to_owned();
        }
        DequantError::PartialBlock { type_size, .. } => {
            diag.help = format!(
                "pass whole blocks: the last axis must be a multiple of the type's \
                 {type_size}-byte blocks (sipllm_gguf.quants.block_layout(qtype) is \
                 (block_size, type_size))"
            );
        }
        _ => {}
    }
    gguf_error(py, &diag, None)
}

fn thread_count(threads: usize) -> usize {
    if threads == 0 { std::thread::available_parallelism().map_or(1, usize::from) } else { threads }
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

/// Copies `values` into their place `at..` in `out`: into a `bytes` first (the one Python
/// object safe Rust can fill), which numpy copies while it is still in cache.
fn copy_in(py: Python<'_>, out: &Bound<'_, PyAny>, at: usize, values: &[f32]) -> PyResult<()> {
    let piece = PyBytes::new(py, bytemuck::cast_slice(values));
    let (from, to) = (at * 4, (at + values.len()) * 4);
    let to = PySlice::new(py, isize::try_from(from)?, isize::try_from(to)?, 1);
    out.set_item(to, PyMemoryView::from(piece.as_any())?)
}

/// Computes `scratch.len()` values with `fill` (the GIL released), then copies them in.
fn put<E: Send>(
    py: Python<'_>,
    out: &Bound<'_, PyAny>,
    at: usize,
    scratch: &mut [f32],
    fill: impl FnOnce(&mut [f32]) -> Result<(), E> + Send,
) -> PyResult<Result<(), E>> {
    if let Err(e) = py.detach(|| fill(scratch)) {
        return Ok(Err(e));
    }
    copy_in(py, out, at, scratch)?;
    Ok(Ok(()))
}

/// A reusable buffer of up to `n` values (grown once, then reused by every piece).
fn scratch(buf: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if buf.len() < n {
        buf.resize(n, 0.0);
    }
    &mut buf[..n]
}

/// A computed piece: its index, its values' buffer and whether they could be computed.
type Done = (usize, Vec<f32>, Result<(), DequantError>);

/// Dequantizes `src` (whole blocks of `ty`) into values `at..` of `out`, a piece of about
/// [`PIECE_VALUES`] values at a time; returns the number of values.
///
/// With more than one thread, `threads - 1` workers compute pieces (round robin, two buffers
/// each) while this thread, holding the GIL, copies finished ones into place in order: the
/// copies and the output's page faults, not the kernels, set the pace of a fresh output, and
/// a pipeline overlaps the two. (`dequantize_parallel` would split one piece, which is below
/// its 1 MiB-per-thread floor.)
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
    let pieces: Vec<&[u8]> = src.chunks((PIECE_VALUES / bn).max(1) * bb).collect();
    let workers = thread_count(threads).saturating_sub(1).min(pieces.len());
    if workers == 0 {
        let mut done = 0;
        let mut buf = Vec::new();
        for piece in &pieces {
            let n = piece.len() / bb * bn;
            let dst = scratch(&mut buf, n);
            if let Err(e) =
                put(py, out, at + done, dst, |d| sipllm_quants::dequantize(ty, piece, d))?
            {
                return Ok(Err(e));
            }
            done += n;
        }
        return Ok(Ok(done));
    }
    std::thread::scope(|scope| {
        let mut finished = Vec::with_capacity(workers);
        let mut recycle = Vec::with_capacity(workers);
        for w in 0..workers {
            let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<Done>(1);
            let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<f32>>();
            let pieces = &pieces;
            scope.spawn(move || {
                let mut spare = vec![Vec::new(), Vec::new()];
                for i in (w..pieces.len()).step_by(workers) {
                    let Some(mut buf) = spare.pop().or_else(|| back_rx.recv().ok()) else { return };
                    let n = pieces[i].len() / bb * bn;
                    let r = sipllm_quants::dequantize(ty, pieces[i], scratch(&mut buf, n));
                    buf.truncate(n);
                    // A closed channel: the caller stopped (an error); so do we.
                    if done_tx.send((i, buf, r)).is_err() {
                        return;
                    }
                }
            });
            finished.push(done_rx);
            recycle.push(back_tx);
        }
        let mut done = 0;
        for i in 0..pieces.len() {
            let w = i % workers;
            // `&mut`: a Receiver may move between threads, not be shared.
            let rx = &mut finished[w];
            let Ok((j, buf, r)) = py.detach(move || rx.recv()) else {
                return Err(PyValueError::new_err("a dequantization thread stopped"));
            };
            debug_assert_eq!(i, j);
            if let Err(e) = r {
                return Ok(Err(e));
            }
            copy_in(py, out, at + done, &buf)?;
            done += buf.len();
            // A worker that has finished has dropped its end: nothing to recycle then.
            let _ = recycle[w].send(buf);
        }
        Ok(Ok(done))
    })
}

/// Input bytes copied at a time from an input that is not `bytes` (rounded to whole blocks).
/// Measured, not arbitrary: each copy and each piece is a fresh Python object, i.e. a malloc
/// and a free, and with 512 KiB copies beside the 1 MiB pieces glibc trimmed and regrew its
/// heap every step (F16 fell from 11 to 1.2 GB/s); 4 MiB copies keep both in its heap.
const COPY_BYTES: usize = 4 << 20;

/// Dequantizes `data` (a `bytes` object, or a 1-D object of bytes that slices and has
/// `tobytes()`: a numpy `uint8` array, a memoryview) as ggml type `code` into `out`, a 1-D
/// numpy `uint8` view of a C-contiguous `float32` array of exactly the values' size, on
/// `threads` threads (0 = every core; 1, the calling one alone).
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
    let step = (COPY_BYTES / bb).max(1) * bb;
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
    tensor: &SourceTensor,
    range: Range<u64>,
    out: &Bound<'_, PyAny>,
    threads: usize,
) -> Result<(), ValuesError> {
    let count = tensor.element_count().unwrap_or(u64::MAX);
    if range.start > range.end || range.end > count {
        return Err(ValuesError::Stream(StreamError::from(TensorError::ElementRange {
            tensor: tensor.name.clone(),
            start: range.start,
            end: range.end,
            count,
            got: range.end.saturating_sub(range.start),
        })));
    }
    let n = usize::try_from(range.end - range.start).map_err(|_| {
        ValuesError::Stream(StreamError::from(StreamErrorKind::TooLarge {
            what: format!("the values of tensor {:?}", tensor.name),
            bytes: (range.end - range.start).saturating_mul(4),
        }))
    })?;
    check_out(out, n).map_err(ValuesError::Python)?;
    if range.start == 0 && range.end == count {
        return whole_tensor(py, source, tensor, out, threads);
    }
    // The blocks of the whole range announced once: from a URL one request (per 64 MiB) that
    // the pieces' reads continue, instead of one per piece.
    source.prefetch_values(tensor, range.clone());
    let mut at = 0;
    let mut buf = Vec::new();
    while at < n {
        let k = PIECE_VALUES.min(n - at);
        let from = range.start + at as u64;
        let dst = scratch(&mut buf, k);
        put(py, out, at, dst, |dst| source.read_f32_at(tensor, from..from + k as u64, dst))
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
    tensor: &SourceTensor,
    out: &Bound<'_, PyAny>,
    threads: usize,
) -> Result<(), ValuesError> {
    let ty = tensor.ggml_type;
    let dequant = |source| {
        ValuesError::Stream(StreamError::from(TensorError::Dequant {
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
    // Exactly the tensor's bytes announced: from a URL one request per 64 MiB and none past
    // its end. Only a hint.
    let _ = source.prefetch(tensor);
    let (mut done, mut at) = (0usize, 0usize);
    while done < len {
        let k = chunk.min(len - done);
        let bytes = &mut raw[..k];
        let offset = tensor.abs_offset.checked_add(done as u64).ok_or_else(|| {
            ValuesError::Stream(StreamError::from(StreamErrorKind::TooLarge {
                what: "an offset".into(),
                bytes: u64::MAX,
            }))
        })?;
        py.detach(|| {
            source.read_raw_at(offset, bytes)?;
            // A big-endian file's elements as the kernels read them: the seam's one rule.
            to_little_endian(source.endian(), ty, bytes);
            Ok(())
        })
        .map_err(ValuesError::Stream)?;
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
