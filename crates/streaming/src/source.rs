//! The seam: [`WeightSource`] and the format-neutral [`SourceTensor`].

use sipllm_gguf::GgmlType;
use smallvec::SmallVec;

use crate::MetaStr;
use crate::error::{MetaError, StreamError, StreamErrorKind, TensorError};
use crate::meta::{self, FloatList, IntList, Meta, MetaKind, StrList};

// Tensor values (dequantized reads): the default methods of the trait below, in their own
// file.
pub(crate) mod values;

/// One tensor as the seam describes it, whatever the file format: the record every
/// [`WeightSource`] hands out. Each parser has its own on-disk record, with spans into its
/// header (`sipllm_gguf::TensorInfo`, `sipllm_llmw::TensorInfo`, the format's own word); this
/// one is the source's — owned and format-neutral, built from theirs at open — hence its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceTensor {
    /// The tensor's name (GGUF names that are not UTF-8, which only the lenient profile
    /// admits, are converted lossily).
    pub name: String,
    /// The ggml type of the stored elements.
    pub ggml_type: GgmlType,
    /// Dimensions in row-major order, outermost first: `shape[0]` is the output (`n_out`)
    /// dimension of a matrix and the last entry the row length. GGUF stores the reverse
    /// (`ne[0]` is the row length), so a `[n_out, n_in]` matrix has GGUF `ne = [n_in, n_out]`.
    pub shape: SmallVec<[u64; 4]>,
    /// Absolute byte offset of the data in the file.
    pub abs_offset: u64,
    /// Stored byte size; `None` only for a type with no known size (listed by the lenient GGUF
    /// profile; reading it is [`TensorError::UnknownSize`]).
    pub nbytes: Option<u64>,
}

impl SourceTensor {
    /// Number of elements (product of the shape; 1 for a scalar), `None` on overflow.
    pub fn element_count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// The byte size, or why it is unknown.
    pub fn byte_size(&self) -> Result<u64, StreamError> {
        self.nbytes.ok_or_else(|| {
            StreamError::from(TensorError::UnknownSize {
                tensor: self.name.clone(),
                ggml_type: self.ggml_type,
            })
        })
    }

    /// The byte size as a buffer length: the least `dst.len()` [`WeightSource::read_raw`]
    /// takes.
    pub fn byte_len(&self) -> Result<usize, StreamError> {
        let n = self.byte_size()?;
        usize::try_from(n).map_err(|_| {
            StreamError::from(StreamErrorKind::TooLarge {
                what: format!("tensor {:?}", self.name),
                bytes: n,
            })
        })
    }

    /// Offset one past the last byte, when the size is known and the sum fits.
    pub fn end(&self) -> Option<u64> {
        self.abs_offset.checked_add(self.nbytes?)
    }
}

/// A source of model weights and metadata: what the engine and every other consumer program
/// against, whatever the file format.
///
/// Object-safe (`Box<dyn WeightSource>`) and shareable across threads: every method takes
/// `&self`, and reads are positional.
pub trait WeightSource: Send + Sync {
    /// Every tensor, in directory order.
    fn tensors(&self) -> &[SourceTensor];

    /// The tensor with this name.
    fn find(&self, name: &str) -> Option<&SourceTensor>;

    /// Reads the whole of `tensor` (one of this source's [`tensors`](Self::tensors)) into the
    /// start of `dst` and returns its byte size: `dst` may be longer than the tensor (a buffer
    /// reused for tensors of several sizes; the rest is left as it was), not shorter
    /// ([`TensorError::SizeMismatch`]).
    fn read_raw(&self, tensor: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError>;

    /// Reads `dst.len()` bytes at absolute offset `abs_offset` (any range inside the file,
    /// e.g. a few rows of a tensor).
    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError>;

    /// The metadata value under `key`, collapsed and borrowed (lists are decoded lazily).
    fn meta(&self, key: &str) -> Option<Meta<'_>>;

    /// Every metadata pair, in file order.
    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_>;

    /// A hint that `tensor` will be read soon (readahead); errors may be ignored.
    fn prefetch(&self, tensor: &SourceTensor) -> Result<(), StreamError>;

    /// A hint that `len` bytes at absolute offset `abs_offset` (clamped to the file) will be
    /// read soon, in order: `readahead` for a file, one request for exactly the range (up to
    /// 64 MiB each) for a URL, which otherwise sizes its requests by guessing. The values
    /// reads ([`read_f32_at`](Self::read_f32_at)) announce the blocks they read with it, so
    /// over HTTP they fetch those bytes and none past them. Only a hint: the default does
    /// nothing, and errors may be ignored.
    fn prefetch_range(&self, abs_offset: u64, len: u64) -> Result<(), StreamError> {
        let _ = (abs_offset, len);
        Ok(())
    }

    /// A hint that values `range` (element indices) of `tensor` will be read soon, by one or
    /// many [`read_f32_at`](Self::read_f32_at) calls: the bytes of the blocks they touch,
    /// announced with [`prefetch_range`](Self::prefetch_range), so that over HTTP the calls
    /// continue one request (per 64 MiB) and fetch nothing past the range. Nothing for a type
    /// without values or a range past the tensor.
    fn prefetch_values(&self, tensor: &SourceTensor, range: std::ops::Range<u64>) {
        values::prefetch_values(self, tensor, range);
    }

    /// The size of the underlying file in bytes.
    fn file_size(&self) -> u64;

    /// The byte order the file stores numbers in: [`Endian::Big`](sipllm_gguf::Endian::Big)
    /// only for a big-endian GGUF (and a split set of them); `.llmw` is little-endian.
    /// [`read_f32`](Self::read_f32) byte-swaps the elements of a big-endian file's
    /// whole-element types by it; [`read_raw`](Self::read_raw) returns the bytes as stored.
    /// Required, so no source can forget it and hand out byte-swapped values as data.
    fn endian(&self) -> sipllm_gguf::Endian;

    /// The whole of `tensor`'s values as f32 (dequantized as gguf-py does, bit for bit), in
    /// a new [`Values`](crate::Values) (a `[f32]` in memory fast to write the first time:
    /// huge pages for big tensors; [`into_vec`](crate::Values::into_vec) for a `Vec`).
    ///
    /// Reads through [`read_raw_at`](Self::read_raw_at) in chunks of whole blocks of at most
    /// [`VALUES_CHUNK_BYTES`](crate::VALUES_CHUNK_BYTES), so besides the returned values it
    /// holds one chunk, whatever the tensor's size; the tensor's bytes are announced first
    /// ([`prefetch_range`](Self::prefetch_range)). Types without values (integers, unknown
    /// codes) are [`TensorError::Dequant`]; values that cannot be allocated are
    /// [`StreamErrorKind::TooLarge`].
    fn read_f32(&self, tensor: &SourceTensor) -> Result<crate::Values, StreamError> {
        values::read_f32(self, tensor)
    }

    /// Values `range` (element indices, row-major, `range.end` exclusive) of `tensor` into
    /// `dst`, whose length must be the range's. A range may start and end inside a block;
    /// only the blocks it touches are read, in bounded chunks as in
    /// [`read_f32`](Self::read_f32), announced first as one range
    /// ([`prefetch_range`](Self::prefetch_range)): over HTTP, exactly those bytes. A caller
    /// reading a tensor in many such calls announces the whole of it first, and the calls
    /// continue that one request.
    fn read_f32_at(
        &self,
        tensor: &SourceTensor,
        range: std::ops::Range<u64>,
        dst: &mut [f32],
    ) -> Result<(), StreamError> {
        values::read_f32_at(self, tensor, range, dst)
    }

    /// The stored bytes of the tensor named `name`, in a new vector of its byte size
    /// ([`TensorError::Missing`](crate::TensorError::Missing) if there is none). For a buffer the caller reuses, see
    /// [`read_raw`](Self::read_raw).
    fn read_tensor(&self, name: &str) -> Result<Vec<u8>, StreamError> {
        let tensor = self
            .find(name)
            .ok_or_else(|| StreamError::from(crate::TensorError::Missing { name: name.into() }))?;
        let mut buf = vec![0u8; tensor.byte_len()?];
        self.read_raw(tensor, &mut buf)?;
        Ok(buf)
    }

    /// Streams all of `tensor` through `buf` (of any length but 0, which only a 0-byte tensor
    /// takes), handing each piece in order to `each`; returns the byte count. A tensor that fits `buf` is one
    /// [`read_raw`](Self::read_raw) (size-checked, with the readahead hint); a larger one is
    /// read in `buf.len()` pieces with [`read_raw_at`](Self::read_raw_at), so memory stays at
    /// `buf` whatever the tensor's size (hashing, copying to a pipe).
    fn read_chunked(
        &self,
        tensor: &SourceTensor,
        buf: &mut [u8],
        each: &mut dyn FnMut(&[u8]),
    ) -> Result<u64, StreamError> {
        let n = tensor.byte_size()?;
        if n <= buf.len() as u64 || buf.is_empty() {
            // (An empty buffer and a non-empty tensor: `read_raw`'s size error, not a loop.)
            let len = self.read_raw(tensor, buf)?;
            each(buf.get(..len).unwrap_or_default());
            return Ok(n);
        }
        let mut done = 0u64;
        while done < n {
            let len = usize::try_from(n - done).unwrap_or(buf.len()).min(buf.len());
            let piece = buf.get_mut(..len).unwrap_or_default();
            // In bounds: the open checked that the whole tensor lies in the source.
            self.read_raw_at(tensor.abs_offset.saturating_add(done), piece)?;
            each(piece);
            done += len as u64;
        }
        Ok(n)
    }

    /// Every metadata key, in file order.
    fn meta_keys(&self) -> Box<dyn Iterator<Item = MetaStr<'_>> + '_> {
        Box::new(self.metadata().map(|(k, _)| k))
    }

    /// An integer that fits `i64`.
    fn meta_int(&self, key: &str) -> Result<i64, StreamError> {
        let v = meta::expect(key, self.meta(key), MetaKind::Int, Meta::as_int)?;
        i64::try_from(v).map_err(|_| range(key, v, "i64"))
    }

    /// A non-negative integer that fits `u64` (counts, sizes, token ids).
    fn meta_uint(&self, key: &str) -> Result<u64, StreamError> {
        let v = meta::expect(key, self.meta(key), MetaKind::Int, Meta::as_int)?;
        u64::try_from(v).map_err(|_| range(key, v, "u64"))
    }

    /// A float (`FLOAT32` widened exactly, or `FLOAT64`). Integers are not converted.
    fn meta_float(&self, key: &str) -> Result<f64, StreamError> {
        meta::expect(key, self.meta(key), MetaKind::Float, Meta::as_float)
    }

    /// A float as `f32` (exact for `FLOAT32`, rounded to nearest for `FLOAT64`: what an engine
    /// computing in `f32` wants for an epsilon or a rope base). Integers are not converted.
    fn meta_f32(&self, key: &str) -> Result<f32, StreamError> {
        self.meta_float(key).map(|v| v as f32)
    }

    /// A bool.
    fn meta_bool(&self, key: &str) -> Result<bool, StreamError> {
        meta::expect(key, self.meta(key), MetaKind::Bool, Meta::as_bool)
    }

    /// A UTF-8 string.
    fn meta_str(&self, key: &str) -> Result<&str, StreamError> {
        let text = meta::expect(key, self.meta(key), MetaKind::Str, Meta::as_text)?;
        text.as_str()
            .ok_or_else(|| StreamError::from(MetaError::Utf8 { key: key.into(), index: None }))
    }

    /// An integer array.
    fn meta_ints(&self, key: &str) -> Result<IntList<'_>, StreamError> {
        meta::expect(key, self.meta(key), MetaKind::Ints, Meta::as_ints)
    }

    /// A float array.
    fn meta_floats(&self, key: &str) -> Result<FloatList<'_>, StreamError> {
        meta::expect(key, self.meta(key), MetaKind::Floats, Meta::as_floats)
    }

    /// A string array.
    fn meta_strs(&self, key: &str) -> Result<StrList<'_>, StreamError> {
        meta::expect(key, self.meta(key), MetaKind::Strs, Meta::as_strs)
    }
}

fn range(key: &str, value: i128, target: &'static str) -> StreamError {
    StreamError::from(MetaError::Range { key: key.into(), index: None, value, target })
}
