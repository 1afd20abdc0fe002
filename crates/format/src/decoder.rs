//! The chunk-fed decoder contract both formats' decoders implement ([`HeaderDecoder`]).
//!
//! One driver loop serves both formats: [`decode_slice`] for a whole slice, the read side's
//! refilling window for a file.

/// What one `decode` call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<E> {
    /// Bytes consumed by this call (the position advanced by this much). May be non-zero when
    /// more bytes are needed: the complete elements of a large array are consumed as they
    /// arrive.
    pub consumed: u64,
    /// What happened.
    pub event: E,
}

/// A decoder event, as a driver loop sees it.
pub trait DecoderEvent: Copy {
    /// `Some(n)`: the current item needs at least `n` more bytes than the buffer holds.
    fn needed(&self) -> Option<u64>;
    /// True once the header, directory and padding are complete.
    fn is_done(&self) -> bool;
}

/// A chunk-fed header decoder.
///
/// **`buf` is every byte of the file received so far, starting at offset 0; between calls the
/// caller may only append to it.** Each `decode(buf)` call parses at most one item and returns
/// a [`Step`]: how many bytes it consumed and what happened. An event whose
/// [`needed`](DecoderEvent::needed) is `Some(n)` says the current item needs at least `n` more
/// bytes: append them (or more) and call again. When the input has really ended,
/// [`end_of_input`](HeaderDecoder::end_of_input) gives the truncation error; after the done
/// event, [`finish`](HeaderDecoder::finish) gives the directory. The decoder keeps no borrow of
/// `buf` between calls, so the caller may grow (reallocate) it freely.
pub trait HeaderDecoder {
    /// What one call reports.
    type Event: DecoderEvent;
    /// What [`finish`](HeaderDecoder::finish) returns: the directory, as spans.
    type Directory;
    /// The format's error.
    type Error;

    /// Parses the next item from `buf` (every byte received so far, from offset 0).
    fn decode(&mut self, buf: &[u8]) -> Result<Step<Self::Event>, Self::Error>;

    /// The truncation error for input that ended at `buf.len()` while more was needed.
    fn end_of_input(&self, buf: &[u8]) -> Self::Error;

    /// The truncation error [`end_of_input`](HeaderDecoder::end_of_input) would give had `buf`
    /// been extended with the input's bytes up to its end at `at` and the current item still
    /// lacked `needed` bytes, computed without those bytes: a reader that knows the input's
    /// size judges an item that can never fit at once, instead of buffering the rest of the
    /// input first. `None` when only reading the bytes in between gives that error (the
    /// parser would judge them on the way).
    fn end_of_input_at(&self, buf: &[u8], at: u64, needed: u64) -> Option<Self::Error>;

    /// The decoded directory; only after the done event.
    fn finish(self) -> Result<Self::Directory, Self::Error>;
}

/// Runs `decoder` over all of `bytes` (a whole file, or at least its whole header).
pub fn decode_slice<D: HeaderDecoder>(
    mut decoder: D,
    bytes: &[u8],
) -> Result<D::Directory, D::Error> {
    loop {
        let event = decoder.decode(bytes)?.event;
        if event.is_done() {
            return decoder.finish();
        }
        if event.needed().is_some() {
            return Err(decoder.end_of_input(bytes));
        }
    }
}
