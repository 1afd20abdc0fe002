//! The refilling window: one driver loop that reads a header through any chunk-fed decoder.
//!
//! The GGUF and `.llmw` decoders share one contract (`decode(&buf)` over every byte received
//! from offset 0, `NeedMore { needed }`, `end_of_input(&buf)`, `finish()`), so one loop serves
//! both: [`fill`] appends one positional read of `max(window, needed)` bytes, clamped to the
//! end of the source, each time the decoder asks for more, and stops when it is done. Each
//! format implements the small [`ChunkDecoder`] adapter; everything about buffering — growth,
//! clamping, the truncation error, the read accounting — lives here once.

use std::path::Path;

use crate::backing::ReadAt;
use crate::error::StreamError;

/// The initial header read size: 64 KiB.
pub const DEFAULT_WINDOW: usize = 64 << 10;

/// What one decoder step did, as the driver sees it.
pub(crate) enum Progress {
    /// The current item needs at least this many more bytes.
    NeedMore(u64),
    /// An item was parsed (or bytes consumed); call again.
    Item,
    /// The header, directory and padding are complete.
    Done,
}

/// A chunk-fed header decoder with the shared contract (see the parser chapter, "The decoder
/// contract").
pub(crate) trait ChunkDecoder {
    /// The parser's error.
    type Error;

    /// One `decode(buf)` call.
    fn step(&mut self, buf: &[u8]) -> Result<Progress, Self::Error>;

    /// The truncation error for input that ended at `buf.len()`.
    fn end_of_input(&self, buf: &[u8]) -> Self::Error;

    /// Wraps the parser's error, keeping it intact.
    fn wrap(path: Option<&Path>, err: Self::Error) -> StreamError;
}

impl ChunkDecoder for sipllm_gguf::Decoder {
    type Error = sipllm_gguf::Error;

    fn step(&mut self, buf: &[u8]) -> Result<Progress, sipllm_gguf::Error> {
        Ok(match self.decode(buf)?.event {
            sipllm_gguf::Event::Done => Progress::Done,
            sipllm_gguf::Event::NeedMore { needed } => Progress::NeedMore(needed),
            _ => Progress::Item,
        })
    }

    fn end_of_input(&self, buf: &[u8]) -> sipllm_gguf::Error {
        sipllm_gguf::Decoder::end_of_input(self, buf)
    }

    fn wrap(path: Option<&Path>, err: sipllm_gguf::Error) -> StreamError {
        StreamError::parse(path, err)
    }
}

impl ChunkDecoder for sipllm_llmw::Decoder {
    type Error = sipllm_llmw::Error;

    fn step(&mut self, buf: &[u8]) -> Result<Progress, sipllm_llmw::Error> {
        Ok(match self.decode(buf)?.event {
            sipllm_llmw::Event::Done => Progress::Done,
            sipllm_llmw::Event::NeedMore { needed } => Progress::NeedMore(needed),
            _ => Progress::Item,
        })
    }

    fn end_of_input(&self, buf: &[u8]) -> sipllm_llmw::Error {
        sipllm_llmw::Decoder::end_of_input(self, buf)
    }

    fn wrap(path: Option<&Path>, err: sipllm_llmw::Error) -> StreamError {
        StreamError::parse_llmw(path, err)
    }
}

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
    pub(crate) buf: Vec<u8>,
    pub(crate) reads: u64,
}

impl Filled {
    /// The statistics, once the format knows where its data section starts.
    pub(crate) fn stats(&self, data_offset: u64) -> HeaderStats {
        HeaderStats {
            reads: self.reads,
            bytes_read: self.buf.len() as u64,
            data_offset,
            capacity: self.buf.capacity() as u64,
        }
    }
}

/// Drives `decoder` over `source` until it is done: every time it needs more bytes, one read of
/// `max(window, needed)` bytes (never past the end of the source) is appended to one growing
/// buffer. When the source ends first, the error is the decoder's own truncation error (naming
/// the item that was cut), wrapped with `path`. The caller then calls the decoder's `finish`.
pub(crate) fn fill<D: ChunkDecoder>(
    decoder: &mut D,
    source: &dyn ReadAt,
    path: Option<&Path>,
    window: usize,
) -> Result<Filled, StreamError> {
    let file_size = source.len();
    let window = window.max(1) as u64;
    let mut buf: Vec<u8> = Vec::new();
    let mut reads = 0u64;
    loop {
        let needed = match decoder.step(&buf).map_err(|e| D::wrap(path, e))? {
            Progress::Done => break,
            Progress::NeedMore(needed) => needed,
            Progress::Item => continue,
        };
        let have = buf.len() as u64;
        let end = have.saturating_add(needed.max(window)).min(file_size);
        if end <= have {
            return Err(D::wrap(path, decoder.end_of_input(&buf)));
        }
        let add = end - have;
        let too_large = || StreamError::TooLarge { what: "header buffer".into(), bytes: end };
        let add_usize = usize::try_from(add).map_err(|_| too_large())?;
        grow(&mut buf, add_usize).map_err(|_| too_large())?;
        let start = buf.len();
        buf.resize(start.saturating_add(add_usize), 0);
        let dst = buf.get_mut(start..).unwrap_or_default();
        source.read_exact_at(have, dst).map_err(|e| StreamError::read(path, have, add, e))?;
        reads += 1;
    }
    Ok(Filled { buf, reads })
}

/// Makes room for `add` more bytes: exactly, or 1.25× the current length if that is more,
/// so a header of n bytes costs O(log n) reallocations and at most 1.25 n of capacity.
fn grow(buf: &mut Vec<u8>, add: usize) -> Result<(), std::collections::TryReserveError> {
    let needed = buf.len().saturating_add(add);
    if needed <= buf.capacity() {
        return Ok(());
    }
    let target = needed.max(buf.len().saturating_add(buf.len() / 4));
    buf.try_reserve_exact(target - buf.len())
}
