//! The refilling window: one driver loop that reads a header through any chunk-fed decoder.
//!
//! The GGUF and `.llmw` decoders share one contract ([`HeaderDecoder`]: `decode(&buf)` over
//! every byte received from offset 0, an event that says how many more bytes it needs,
//! `end_of_input`, `end_of_input_at`, `finish()`), so one loop serves both: [`fill`] appends
//! one positional read of `max(window, needed)` bytes, clamped to the end of the source, each
//! time the decoder asks for more, and stops when it is done. Everything about buffering —
//! growth, clamping, the truncation error, the read accounting — lives here once.

use std::path::Path;

use sipllm_format::{DecoderEvent, HeaderDecoder};

use crate::backing::ReadAt;
use crate::error::{StreamError, StreamErrorKind};
use crate::header_bytes::{HeaderBuf, HeaderBytes};

/// The initial header read size: 64 KiB.
pub const DEFAULT_WINDOW: usize = 64 << 10;

/// What reading a header cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeaderStats {
    /// Read calls made.
    pub reads: u64,
    /// Bytes read (the header buffer's final length).
    pub bytes_read: u64,
    /// Offset of the data section (the header, directory and padding end here).
    pub data_offset: u64,
    /// Capacity of the header buffer (bytes held).
    pub capacity: u64,
}

/// The bytes a [`fill`] read, and how many reads it took.
pub(crate) struct Filled {
    pub(crate) buf: HeaderBytes,
    pub(crate) reads: u64,
}

impl Filled {
    /// The statistics; the data offset is the format's to fill in
    /// ([`HeaderStats::with_data_offset`]).
    pub(crate) fn stats(&self) -> HeaderStats {
        HeaderStats {
            reads: self.reads,
            bytes_read: self.buf.len() as u64,
            data_offset: 0,
            capacity: self.buf.held(),
        }
    }
}

impl HeaderStats {
    /// These statistics with the data section's start.
    pub(crate) fn with_data_offset(self, data_offset: u64) -> HeaderStats {
        HeaderStats { data_offset, ..self }
    }
}

/// Drives `decoder` over `source` until it is done: every time it needs more bytes, one read of
/// `max(window, needed)` bytes (never past the end of the source) is appended to one growing
/// buffer. When the source ends first, the error is the decoder's own truncation error (naming
/// the item that was cut), wrapped by `wrap`. The caller then calls the decoder's `finish`.
pub(crate) fn fill<D: HeaderDecoder>(
    decoder: &mut D,
    source: &dyn ReadAt,
    path: Option<&Path>,
    window: usize,
    wrap: impl Fn(D::Error) -> StreamError,
) -> Result<Filled, StreamError> {
    let file_size = source.len();
    let window = window.max(1) as u64;
    let mut buf = HeaderBuf::new(file_size);
    let mut reads = 0u64;
    loop {
        let event = decoder.decode(buf.as_slice()).map_err(&wrap)?.event;
        if event.is_done() {
            break;
        }
        let Some(needed) = event.needed() else { continue };
        let have = buf.len() as u64;
        // The item needs at least `needed` more bytes: when the source cannot have them, it
        // can never complete, so it is judged now — with the very error a read to the end
        // would give — instead of after buffering the rest of the source (a corrupted string
        // length within the llama-cpp profile's 1 GiB limit buffered 251 MB of a real model).
        let want = have.saturating_add(needed);
        if have < file_size
            && want > file_size
            && let Some(e) = decoder.end_of_input_at(buf.as_slice(), file_size, want - file_size)
        {
            return Err(wrap(e));
        }
        let end = have.saturating_add(needed.max(window)).min(file_size);
        if end <= have {
            return Err(wrap(decoder.end_of_input(buf.as_slice())));
        }
        let add = end - have;
        let too_large = || {
            StreamError::from(StreamErrorKind::TooLarge {
                what: "header buffer".into(),
                bytes: end,
            })
        };
        let add_usize = usize::try_from(add).map_err(|_| too_large())?;
        if add_usize > SPARSE_READ {
            let mut bytes = buf.take_vec();
            let sparse = read_sparse(&mut bytes, source, have, add_usize);
            buf.put_vec(bytes);
            reads += sparse.map_err(|e| e.into_stream(path, too_large))?;
            continue;
        }
        let start = buf.len();
        // Straight into the buffer's new bytes: one positional read, no copy.
        let dst = buf.extend(add_usize).map_err(|_| too_large())?;
        if let Err(e) = source.read_exact_at(have, dst) {
            buf.truncate(start);
            return Err(StreamError::read(path, have, add, e));
        }
        reads += 1;
    }
    Ok(Filled { buf: buf.into_bytes(), reads })
}

/// Reads larger than this go through [`read_sparse`].
const SPARSE_READ: usize = 1 << 20;

/// Why [`read_sparse`] failed.
enum SparseError {
    Alloc,
    Read { offset: u64, len: u64, err: std::io::Error },
}

impl SparseError {
    fn into_stream(self, path: Option<&Path>, too_large: impl Fn() -> StreamError) -> StreamError {
        match self {
            SparseError::Alloc => too_large(),
            SparseError::Read { offset, len, err } => StreamError::read(path, offset, len, err),
        }
    }
}

/// Appends the `add` bytes at `have` to `buf` without making the zero runs among them
/// resident: the buffer moves into one zeroed allocation of the final length (fresh zero
/// pages, which the system does not back with memory until written), and the bytes are read
/// in [`SPARSE_READ`]-byte pieces through a scratch buffer, each copied in only when it holds
/// a non-zero byte. A large `general.alignment` (2^27: 128 MiB of zero padding before the data
/// section) thus costs address space, not memory; the parser still sees every byte (and warns
/// about non-zero padding). Returns the reads made.
fn read_sparse(
    buf: &mut Vec<u8>,
    source: &dyn ReadAt,
    have: u64,
    add: usize,
) -> Result<u64, SparseError> {
    let start = buf.len();
    let total = start.checked_add(add).ok_or(SparseError::Alloc)?;
    // `vec![0; n]` is one zeroed allocation (calloc: fresh pages are not written). It aborts
    // rather than failing on exhaustion, but `total` is within the limits the decoder checked
    // and the bytes the source has (the caller clamps to both).
    let mut grown = vec![0u8; total];
    if let Some(dst) = grown.get_mut(..start) {
        dst.copy_from_slice(buf);
    }
    *buf = Vec::new();
    let mut scratch = vec![0u8; SPARSE_READ];
    let mut at = start;
    let mut reads = 0u64;
    while at < total {
        let n = (total - at).min(SPARSE_READ);
        let piece = scratch.get_mut(..n).unwrap_or_default();
        let offset = have + (at - start) as u64;
        source.read_exact_at(offset, piece).map_err(|err| SparseError::Read {
            offset,
            len: n as u64,
            err,
        })?;
        reads += 1;
        if piece.iter().any(|&b| b != 0)
            && let Some(dst) = grown.get_mut(at..at + n)
        {
            dst.copy_from_slice(piece);
        }
        at += n;
    }
    *buf = grown;
    Ok(reads)
}
