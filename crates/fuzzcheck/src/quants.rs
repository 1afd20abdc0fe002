//! `dequantize`: arbitrary bytes, type and shape through `sipllm-quants` and the seam's
//! `read_f32` / `read_f32_at`.

use sipllm_gguf::GgmlType;
use sipllm_quants::{DequantError, dequantize, dequantize_parallel, dequantize_scalar};
use sipllm_streaming::{GgufFile, MemSource, OpenOptions, WeightSource};
use sipllm_testkit::{GgufBuilder, Tensor};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Input: a type byte (code = byte % 48: every named, removed and a few unknown codes), a
/// mode byte, two shape bytes, then the data.
///
/// Mode bits 0-1 pick the output length (exact, one more, one less, or the third byte), and
/// the slice check runs on the raw data; mode bit 2 instead makes a tensor of shape
/// `[rows, ne0]` from the shape bytes, fills it by repeating the data, and reads it through
/// the seam.
pub(crate) fn dequantize_check(data: &[u8]) {
    let [ty, mode, s0, s1, rest @ ..] = data else { return };
    let ty = GgmlType::from_code(u32::from(*ty) % 48);
    if mode & 4 != 0 {
        seam(ty, *s0, *s1, rest);
        return;
    }
    let layout = sipllm_quants::block_layout(ty);
    let count = layout.map(|(n, b)| rest.len() / b * n);
    let len = match (mode & 3, count) {
        (0, Some(c)) => c,
        (1, Some(c)) => c + 1,
        (2, Some(c)) => c.saturating_sub(1),
        _ => usize::from(*s0),
    };
    let expected = match layout {
        None => Err(DequantError::UnsupportedType { ty }),
        Some((_, b)) if rest.len() % b != 0 => {
            Err(DequantError::PartialBlock { ty, len: rest.len(), type_size: b })
        }
        Some((n, b)) if len != rest.len() / b * n => Err(DequantError::OutputLength {
            ty,
            blocks: rest.len() / b,
            expected: rest.len() / b * n,
            actual: len,
        }),
        Some(_) => Ok(()),
    };
    let mut fast = vec![0f32; len];
    let mut slow = vec![1f32; len];
    let mut par = vec![2f32; len];
    let r = dequantize(ty, rest, &mut fast);
    assert_eq!(r, expected, "dequantize({ty}, {} bytes, {len} values)", rest.len());
    assert_eq!(dequantize_scalar(ty, rest, &mut slow), expected, "scalar result, {ty}");
    assert_eq!(dequantize_parallel(ty, rest, &mut par, 2), expected, "parallel result, {ty}");
    if let Err(e) = r {
        assert!(e.code().starts_with("quants::dequant::") && !e.help().is_empty());
        return;
    }
    assert_eq!(bits(&fast), bits(&slow), "{ty}: dispatched and scalar kernels differ");
    assert_eq!(bits(&fast), bits(&par), "{ty}: threaded output differs");
    // Blocks are independent: each alone gives its slice of the whole.
    if let Some((n, b)) = layout {
        let mut one = vec![0f32; n];
        for (i, block) in rest.chunks_exact(b).enumerate().take(64) {
            dequantize(ty, block, &mut one).unwrap();
            assert_eq!(bits(&one), bits(&fast[i * n..(i + 1) * n]), "{ty}: block {i} alone");
        }
    }
}

/// A `[rows, ne0]` tensor of `ty` in a GGUF, read through the seam.
fn seam(ty: GgmlType, s0: u8, s1: u8, fill: &[u8]) {
    let Some(block) = ty.block_size() else { return };
    let ne0 = block * (1 + u64::from(s0 % 4));
    let rows = u64::from(s1 % 8);
    let Ok(nbytes) = sipllm_gguf::ggml::tensor_nbytes(ty, &[ne0, rows]) else { return };
    let bytes: Vec<u8> = if fill.is_empty() {
        vec![0; nbytes as usize]
    } else {
        fill.iter().copied().cycle().take(nbytes as usize).collect()
    };
    let file = GgufBuilder::new()
        .tensor_info(Tensor {
            name: b"t".to_vec(),
            dims: vec![ne0, rows],
            type_code: ty.code(),
            offset: None,
            n_dims: None,
            data: Some(bytes.clone()),
        })
        .build();
    let Ok(f) = GgufFile::from_source(MemSource::new(file), &OpenOptions::default()) else {
        return;
    };
    let Some(t) = f.find("t") else { return };
    let count = ne0 * rows;
    match f.read_f32(t) {
        Ok(values) => {
            assert!(sipllm_quants::is_supported(ty), "{ty} has no values but read_f32 gave some");
            assert_eq!(values.len() as u64, count, "{ty}: read_f32 length");
            let mut expect = vec![0f32; count as usize];
            dequantize(ty, &bytes, &mut expect).unwrap();
            assert_eq!(bits(&values), bits(&expect), "{ty}: read_f32 values");
            // A range cutting blocks at both ends.
            let (a, b) = (count / 3, count - count / 5);
            let mut part = vec![0f32; (b - a) as usize];
            f.read_f32_at(t, a..b, &mut part).unwrap();
            assert_eq!(bits(&part), bits(&expect[a as usize..b as usize]), "{ty}: {a}..{b}");
        }
        Err(e) => {
            assert!(!sipllm_quants::is_supported(ty), "{ty}: read_f32 failed: {e}");
            assert_eq!(e.code(), "quants::dequant::unsupported_type", "{ty}: {e}");
        }
    }
}
