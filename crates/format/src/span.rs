//! Byte ranges of a file, by absolute offset.

/// A byte range in the file, by absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Absolute offset of the first byte.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

impl Span {
    /// The span of `len` bytes at `offset`.
    pub fn new(offset: u64, len: u64) -> Span {
        Span { offset, len }
    }

    /// The span from `start` to `end` (empty if `end < start`).
    pub fn between(start: u64, end: u64) -> Span {
        Span { offset: start, len: end.saturating_sub(start) }
    }

    /// Offset one past the last byte.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    /// The bytes of this span in `bytes` (which starts at offset 0), if present.
    pub fn slice<'b>(&self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        let start = usize::try_from(self.offset).ok()?;
        let end = usize::try_from(self.end()).ok()?;
        bytes.get(start..end)
    }
}
