//! Tensor values: [`WeightSource::read_f32`] and [`WeightSource::read_f32_at`], streaming
//! whole blocks through `read_raw_at`, byte-swapping a big-endian file's elements and
//! dequantizing them with `sipllm-quants`.

use std::ops::Range;

use sipllm_gguf::{Endian, GgmlType};
use sipllm_quants::{DequantError, Values};

use super::{SourceTensor, WeightSource};
use crate::error::{StreamError, StreamErrorKind, TensorError};

/// The most raw bytes a values read holds at once (a whole number of blocks at most this
/// long). 16 MiB keeps a read's working set small while each chunk's values are at least
/// `sipllm_quants::STREAM_MIN_OUTPUT_BYTES` (32 MiB) for every type but F32, so a whole-tensor
/// read writes them with non-temporal stores, and a chunk is big enough to split over two
/// threads.
pub const VALUES_CHUNK_BYTES: usize = 16 << 20;

fn dequant(tensor: &SourceTensor, source: DequantError) -> StreamError {
    StreamError::from(TensorError::Dequant { tensor: tensor.name.clone(), source })
}

/// `(elements, bytes)` per block of the tensor's type, or why it has no values.
fn layout(tensor: &SourceTensor) -> Result<(u64, u64), StreamError> {
    let ty = tensor.ggml_type;
    let (n, b) = sipllm_quants::block_layout(ty)
        .ok_or_else(|| dequant(tensor, DequantError::UnsupportedType { ty }))?;
    Ok((n as u64, b as u64))
}

/// The format's byte-order rule, in one place: a big-endian GGUF stores each element of a
/// whole-element type (one element per block: F32, F16, BF16, I8, I16, I32, I64, F64)
/// byte-swapped, and block-quantized data as the little-endian layout has it (the official
/// writer, gguf-py's `GGUFWriter`, byte-swaps numpy arrays element by element and writes
/// quantized blocks, stored as `uint8`, as they are). So the stored bytes of `ty` in a file
/// of byte order `endian` become little-endian, what the kernels read, by swapping each
/// element in place; anything else is left as stored.
pub fn to_little_endian(endian: Endian, ty: GgmlType, bytes: &mut [u8]) {
    if endian != Endian::Big || ty.block_size() != Some(1) {
        return;
    }
    match ty.type_size() {
        Some(2) => bytes.chunks_exact_mut(2).for_each(|e| e.swap(0, 1)),
        Some(width @ (4 | 8)) => {
            bytes.chunks_exact_mut(width as usize).for_each(<[u8]>::reverse);
        }
        // One-byte elements (I8) have no order.
        _ => {}
    }
}

pub(crate) fn read_f32<S: WeightSource + ?Sized>(
    src: &S,
    tensor: &SourceTensor,
) -> Result<Values, StreamError> {
    layout(tensor)?;
    let count = element_count(tensor)?;
    let too_large = || {
        StreamError::from(StreamErrorKind::TooLarge {
            what: format!("the values of tensor {:?}", tensor.name),
            bytes: count.saturating_mul(4),
        })
    };
    let len = usize::try_from(count).map_err(|_| too_large())?;
    // Zeros nothing touches before the dequantization writes them (a mapping of huge pages
    // for big tensors): a fresh output costs its page faults once, not twice.
    let mut out = Values::zeroed(len).map_err(|_| too_large())?;
    read_f32_at(src, tensor, 0..count, &mut out)?;
    Ok(out)
}

fn element_count(tensor: &SourceTensor) -> Result<u64, StreamError> {
    tensor.element_count().ok_or_else(|| {
        StreamError::from(StreamErrorKind::TooLarge {
            what: format!("the values of tensor {:?}", tensor.name),
            bytes: u64::MAX,
        })
    })
}

/// The bytes of the blocks that hold values `range` of `tensor`, announced with
/// `prefetch_range`. Only a hint: a type without values or a range past the tensor announces
/// nothing (the read that follows reports those); inside the file, as the directory's bounds
/// check made every tensor.
pub(crate) fn prefetch_values<S: WeightSource + ?Sized>(
    src: &S,
    tensor: &SourceTensor,
    range: Range<u64>,
) {
    let Ok((bn, bb)) = layout(tensor) else { return };
    let (first, end) = (range.start / bn, range.end.div_ceil(bn));
    let len = end.checked_sub(first).and_then(|blocks| blocks.checked_mul(bb));
    let start = first.checked_mul(bb).and_then(|b| tensor.abs_offset.checked_add(b));
    if let (Some(start), Some(len)) = (start, len)
        && len > 0
        && tensor.nbytes.is_some_and(|n| len <= n)
    {
        let _ = src.prefetch_range(start, len);
    }
}

pub(crate) fn read_f32_at<S: WeightSource + ?Sized>(
    src: &S,
    tensor: &SourceTensor,
    range: Range<u64>,
    dst: &mut [f32],
) -> Result<(), StreamError> {
    let (bn, bb) = layout(tensor)?;
    let count = element_count(tensor)?;
    let bad = || {
        StreamError::from(TensorError::ElementRange {
            tensor: tensor.name.clone(),
            start: range.start,
            end: range.end,
            count,
            got: dst.len() as u64,
        })
    };
    if range.start > range.end || range.end > count || dst.len() as u64 != range.end - range.start {
        return Err(bad());
    }
    // The stored size must be the element count's whole blocks, or the values are not the
    // bytes' (a directory the parser accepted always agrees; a hand-built SourceTensor may not).
    let nbytes = tensor.byte_size()?;
    if count % bn != 0 || (count / bn).checked_mul(bb) != Some(nbytes) {
        return Err(dequant(
            tensor,
            DequantError::PartialBlock {
                ty: tensor.ggml_type,
                len: usize::try_from(nbytes).unwrap_or(usize::MAX),
                type_size: bb as usize,
            },
        ));
    }
    if range.is_empty() {
        return Ok(());
    }
    let first_block = range.start / bn;
    let end_block = range.end.div_ceil(bn);
    // Exactly the blocks read, announced as one range: a URL fetches them in one request (per
    // 64 MiB) and nothing past them, instead of guessing a size from the read pattern.
    prefetch_values(src, tensor, range.clone());
    let per_chunk = (VALUES_CHUNK_BYTES as u64 / bb).max(1);
    let mut raw = vec![0u8; (per_chunk.min(end_block - first_block) * bb) as usize];
    // Values of a partial first or last block.
    let mut scratch = vec![0f32; bn as usize];
    let mut written = 0usize;
    let mut block = first_block;
    while block < end_block {
        let k = per_chunk.min(end_block - block);
        let bytes = &mut raw[..(k * bb) as usize];
        let offset = tensor.abs_offset.checked_add(block * bb).ok_or_else(|| {
            StreamError::from(StreamErrorKind::TooLarge {
                what: "an offset".into(),
                bytes: u64::MAX,
            })
        })?;
        src.read_raw_at(offset, bytes)?;
        to_little_endian(src.endian(), tensor.ggml_type, bytes);
        // Element range of this chunk, clipped to the request.
        let chunk_start = block * bn;
        let lo = range.start.max(chunk_start);
        let hi = range.end.min((block + k) * bn);
        let mut b = 0u64;
        while b < k {
            let blk_start = chunk_start + b * bn;
            // A run of whole blocks, all inside the range, straight into `dst`.
            let whole_from = b;
            while b < k && chunk_start + b * bn >= lo && chunk_start + (b + 1) * bn <= hi {
                b += 1;
            }
            if b > whole_from {
                let n = ((b - whole_from) * bn) as usize;
                let s = &bytes[(whole_from * bb) as usize..(b * bb) as usize];
                let d = &mut dst[written..written + n];
                sipllm_quants::dequantize_parallel(tensor.ggml_type, s, d, 0)
                    .map_err(|e| dequant(tensor, e))?;
                written += n;
                continue;
            }
            // A block the range only partly covers.
            let s = &bytes[(b * bb) as usize..((b + 1) * bb) as usize];
            sipllm_quants::dequantize(tensor.ggml_type, s, &mut scratch)
                .map_err(|e| dequant(tensor, e))?;
            let from = (lo.max(blk_start) - blk_start) as usize;
            let to = (hi.min(blk_start + bn) - blk_start) as usize;
            let n = to - from;
            dst[written..written + n].copy_from_slice(&scratch[from..to]);
            written += n;
            b += 1;
        }
        block += k;
    }
    debug_assert_eq!(written, dst.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_big_endian_whole_elements_are_swapped() {
        let stored: Vec<u8> = (0u8..16).collect();
        let swapped = |ty, endian| {
            let mut b = stored.clone();
            to_little_endian(endian, ty, &mut b);
            b
        };
        let f32_le: Vec<u8> = stored.chunks(4).flat_map(|c| c.iter().rev().copied()).collect();
        assert_eq!(swapped(GgmlType::F32, Endian::Big), f32_le);
        assert_eq!(swapped(GgmlType::I32, Endian::Big), f32_le);
        let f16_le: Vec<u8> = stored.chunks(2).flat_map(|c| [c[1], c[0]]).collect();
        assert_eq!(swapped(GgmlType::F16, Endian::Big), f16_le);
        assert_eq!(swapped(GgmlType::BF16, Endian::Big), f16_le);
        assert_eq!(swapped(GgmlType::I16, Endian::Big), f16_le);
        let f64_le: Vec<u8> = stored.chunks(8).flat_map(|c| c.iter().rev().copied()).collect();
        assert_eq!(swapped(GgmlType::F64, Endian::Big), f64_le);
        assert_eq!(swapped(GgmlType::I64, Endian::Big), f64_le);
        // Stored as is: one-byte elements, quantized blocks, and every little-endian file.
        assert_eq!(swapped(GgmlType::I8, Endian::Big), stored);
        assert_eq!(swapped(GgmlType::Q8_0, Endian::Big), stored);
        assert_eq!(swapped(GgmlType::F32, Endian::Little), stored);
    }
}
