//! The `chunk_independent` property: feeding a decoder in chunks gives exactly the whole-slice
//! result, and the decoder keeps its contract (`crates/gguf/src/decoder.rs` module docs) on
//! the way.

/// How many bytes a driver appends per refill.
///
/// Built from the front of a fuzz input (see [`Schedule::split`]), so the fuzzer mutates the
/// schedule and the file together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Chunk sizes, cycled; 0 means "exactly the `needed` the decoder asked for".
    pub sizes: Vec<usize>,
}

impl Schedule {
    /// Splits a fuzz input into a chunk schedule and the file.
    ///
    /// Byte 0: its low 4 bits are the number `k` of schedule bytes that follow (bits 4–7 are
    /// ignored). Each schedule byte `s` is a chunk size: 0 is exactly what the decoder asked
    /// for, 1–127 that many bytes, 128–255 `(s - 127) × 64` bytes (64 to 8192). `k = 0` means
    /// one byte per refill. The rest of the input is the file. An empty input is an empty file
    /// fed one byte at a time.
    pub fn split(input: &[u8]) -> (Schedule, &[u8]) {
        let Some((&first, rest)) = input.split_first() else {
            return (Schedule { sizes: vec![1] }, input);
        };
        let k = usize::from(first & 0x0f).min(rest.len());
        let (sched, file) = rest.split_at(k);
        let sizes = sched
            .iter()
            .map(|&s| match s {
                0..=127 => usize::from(s),
                _ => (usize::from(s) - 127) * 64,
            })
            .collect::<Vec<_>>();
        let sizes = if sizes.is_empty() { vec![1] } else { sizes };
        (Schedule { sizes }, file)
    }

    /// The inverse of [`split`](Self::split) for schedules it can express: the prefix to put
    /// before a file (for seeds). Sizes are encoded as the nearest expressible size.
    pub fn encode(sizes: &[usize]) -> Vec<u8> {
        let sizes = &sizes[..sizes.len().min(15)];
        let mut out = vec![sizes.len() as u8];
        out.extend(sizes.iter().map(|&s| match s {
            0..=127 => s as u8,
            _ => (127 + (s / 64).clamp(1, 128)) as u8,
        }));
        out
    }
}

/// Extra bytes a `NeedMore` may ask for past `max_header_bytes`: one fixed-size field (the
/// longest, a tensor info's dims, type and offset, is under 64 bytes).
const NEED_SLACK: u64 = 64;

macro_rules! chunked_driver {
    ($name:ident, $krate:ident, $item_event:ident, $misuse:literal) => {
        /// Decodes `file` by appending chunks per `schedule`, checking the decoder contract at
        /// every call; returns what `finish` or `end_of_input` gave.
        pub(crate) fn $name(
            target: &str,
            file: &[u8],
            opts: &$krate::ParseOptions,
            schedule: &Schedule,
        ) -> Result<$krate::Directory, $krate::Error> {
            use $krate::{Decoder, Event};
            let mut decoder = Decoder::new(*opts);
            let mut buf: Vec<u8> = Vec::new();
            let mut sizes = schedule.sizes.iter().copied().cycle();
            let (mut headers, mut items, mut tensors) = (0u32, 0u64, 0u64);
            let mut calls = 0u64;
            loop {
                calls += 1;
                // Each call either completes an item (at least one byte, except the final
                // padding step) or asks for more bytes, which are appended below.
                assert!(
                    calls <= 2 * file.len() as u64 + 8,
                    "{target}: {calls} decode calls for {} bytes (no progress?)",
                    file.len()
                );
                let before = decoder.position();
                let step = match decoder.decode(&buf) {
                    Ok(step) => step,
                    Err(e) => {
                        // The decoder is poisoned after an error.
                        let again = decoder.decode(&buf).expect_err("decode after an error");
                        assert_eq!(again.code(), $misuse, "{target}: decode after an error");
                        return Err(e);
                    }
                };
                let after = decoder.position();
                assert_eq!(step.consumed, after - before, "{target}: consumed vs position");
                assert!(after <= buf.len() as u64, "{target}: position past the buffer");
                match step.event {
                    Event::Done => {
                        assert!(decoder.is_done());
                        let again = decoder.decode(&buf).expect("decode after Done");
                        assert_eq!(again.consumed, 0, "{target}: decode after Done consumed");
                        assert!(matches!(again.event, Event::Done), "{target}: after Done");
                        return decoder.finish();
                    }
                    Event::NeedMore { needed } => {
                        assert!(needed > 0, "{target}: NeedMore asks for 0 bytes");
                        let max = opts.limits.max_header_bytes.saturating_add(NEED_SLACK);
                        let want = (buf.len() as u64).saturating_add(needed);
                        assert!(
                            want <= max.max(buf.len() as u64 + NEED_SLACK),
                            "{target}: NeedMore would buffer {want} bytes, past the header \
                             limit {} (+{NEED_SLACK})",
                            opts.limits.max_header_bytes
                        );
                        if buf.len() == file.len() {
                            let e = decoder.end_of_input(&buf);
                            let eof = e.offset() == buf.len() as u64 && e.len() == 0;
                            assert!(eof, "{target}: end_of_input is not at the end: {e}");
                            return Err(e);
                        }
                        let n = match sizes.next().unwrap_or(1) {
                            0 => usize::try_from(needed).unwrap_or(usize::MAX),
                            n => n,
                        };
                        let end = buf.len().saturating_add(n.max(1)).min(file.len());
                        buf.extend_from_slice(&file[buf.len()..end]);
                    }
                    Event::Header => {
                        headers += 1;
                        assert!(headers == 1 && items == 0 && tensors == 0, "{target}: header");
                        assert!(decoder.header().is_some());
                    }
                    Event::$item_event { index } => {
                        assert_eq!(u64::from(index as u32), items, "{target}: item index");
                        assert!(headers == 1 && tensors == 0, "{target}: item out of order");
                        items += 1;
                    }
                    Event::TensorInfo { index } => {
                        assert_eq!(index as u64, tensors, "{target}: tensor index");
                        assert_eq!(headers, 1, "{target}: tensor before the header");
                        tensors += 1;
                    }
                    _ => {}
                }
            }
        }
    };
}

chunked_driver!(decode_gguf_chunked, sipllm_gguf, Kv, "gguf::decoder::misuse");
chunked_driver!(decode_llmw_chunked, sipllm_llmw, Meta, "llmw::decoder::misuse");

/// The `chunk_independent` property over one input: the schedule from its front, then the
/// file decoded whole and chunked as GGUF (every option set) and as `.llmw` (every option
/// set); the two results must be equal — the same directory, or the same error (kind,
/// offset, length and path).
pub(crate) fn chunk_independent(input: &[u8]) {
    let (schedule, file) = Schedule::split(input);
    for (name, opts) in crate::gguf::option_sets(file.len()) {
        let target = format!("chunk_independent[gguf {name}, {:?}]", schedule.sizes);
        let whole = sipllm_gguf::decode(file, &opts);
        let chunked = decode_gguf_chunked(&target, file, &opts, &schedule);
        assert_eq!(whole, chunked, "{target}: whole and chunked decoding differ");
        // A header prefix decodes like the whole file when nothing is bounds-checked.
        if let Ok(dir) = &whole
            && opts.file_size.is_none()
        {
            let end = (dir.directory_end() as usize).max(if dir.tensors().is_empty() {
                0
            } else {
                dir.data_offset() as usize
            });
            if let Some(prefix) = file.get(..end) {
                let again = sipllm_gguf::decode(prefix, &opts);
                assert_eq!(
                    again.as_ref(),
                    Ok(dir),
                    "{target}: the header prefix decodes differently"
                );
            }
        }
    }
    for (name, opts) in crate::llmw::option_sets(file.len()) {
        let target = format!("chunk_independent[llmw {name}, {:?}]", schedule.sizes);
        let whole = sipllm_llmw::decode(file, &opts);
        let chunked = decode_llmw_chunked(&target, file, &opts, &schedule);
        assert_eq!(whole, chunked, "{target}: whole and chunked decoding differ");
    }
}

#[cfg(test)]
mod tests {
    use super::Schedule;

    #[test]
    fn schedules_split_and_encode() {
        let (s, f) = Schedule::split(&[]);
        assert_eq!((s.sizes, f), (vec![1], &[][..]));
        let (s, f) = Schedule::split(&[0x20, b'G']);
        assert_eq!((s.sizes, f), (vec![1], &b"G"[..]));
        let (s, f) = Schedule::split(&[3, 0, 7, 200, b'G', b'G']);
        assert_eq!((s.sizes, f), (vec![0, 7, 73 * 64], &b"GG"[..]));
        // A schedule longer than the input takes what there is.
        let (s, f) = Schedule::split(&[5, 9]);
        assert_eq!((s.sizes, f), (vec![9], &[][..]));
        let prefix = Schedule::encode(&[0, 5, 4096]);
        let mut input = prefix.clone();
        input.extend_from_slice(b"GGUF");
        let (s, f) = Schedule::split(&input);
        assert_eq!((s.sizes, f), (vec![0, 5, 4096], &b"GGUF"[..]));
    }
}
