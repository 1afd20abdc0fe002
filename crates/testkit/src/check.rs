//! Comparisons and drivers the parser's own tests and the workspace's corpus tests share:
//! decoding in chunks, re-writing a parse with its own data, comparing two parses' values.

use sipllm_gguf::writer::GgufWriter;
use sipllm_gguf::{Decoder, Directory, Endian, Error, Event, Gguf, MetaValue, ParseOptions};

/// Feeds `bytes` to the decoder in chunks of the given sizes, cycled (0: exactly what the
/// decoder asks for).
pub fn decode_chunked(
    bytes: &[u8],
    opts: &ParseOptions,
    sizes: &[usize],
) -> Result<Directory, Error> {
    let mut decoder = Decoder::new(*opts);
    let mut buf = Vec::new();
    let mut sizes = sizes.iter().copied().cycle();
    loop {
        let step = decoder.decode(&buf)?;
        match step.event {
            Event::Done => return decoder.finish(),
            Event::NeedMore { needed } => {
                assert!(needed > 0, "NeedMore must ask for at least one byte");
                if buf.len() == bytes.len() {
                    return Err(decoder.end_of_input(&buf));
                }
                let n = match sizes.next().unwrap_or(1) {
                    0 => needed as usize,
                    n => n,
                };
                let end = (buf.len() + n.max(1)).min(bytes.len());
                buf.extend_from_slice(&bytes[buf.len()..end]);
            }
            _ => {}
        }
    }
}

/// Re-writes a parsed file with its own data: header from the writer, data copied over.
pub fn rewrite<B: AsRef<[u8]>>(gguf: &Gguf<B>, original: &[u8], endian: Endian) -> Vec<u8> {
    let w = GgufWriter::from_gguf(gguf).endian(endian);
    w.to_bytes(|i| {
        let t = &gguf.tensor_infos()[i];
        let start = t.abs_offset() as usize;
        original[start..start + t.nbytes().unwrap() as usize].to_vec()
    })
    .unwrap()
}

/// The same values, whatever the byte order they were stored in.
pub fn assert_same_content(a: &Gguf<&[u8]>, b: &Gguf<&[u8]>) {
    assert_eq!(a.kv_len(), b.kv_len());
    for (x, y) in a.metadata().zip(b.metadata()) {
        assert_eq!(x.key, y.key);
        assert_same_value(&x.value, &y.value);
    }
    assert_eq!(a.tensor_infos().len(), b.tensor_infos().len());
    for (x, y) in a.tensors().zip(b.tensors()) {
        assert_eq!(
            (x.name, x.info.dims(), x.info.ggml_type()),
            (y.name, y.info.dims(), y.info.ggml_type())
        );
        assert_eq!((x.info.offset(), x.info.nbytes()), (y.info.offset(), y.info.nbytes()));
    }
}

/// One value against another: arrays element by element, floats bit for bit (NaN payloads
/// included), the rest by equality.
pub fn assert_same_value(x: &MetaValue<'_>, y: &MetaValue<'_>) {
    match (x, y) {
        (MetaValue::Array(p), MetaValue::Array(q)) => {
            assert_eq!((p.elem_type(), p.len()), (q.elem_type(), q.len()));
            for (u, v) in p.iter().zip(q.iter()) {
                assert_same_value(&u, &v);
            }
        }
        (MetaValue::Float32(p), MetaValue::Float32(q)) => assert_eq!(p.to_bits(), q.to_bits()),
        (MetaValue::Float64(p), MetaValue::Float64(q)) => assert_eq!(p.to_bits(), q.to_bits()),
        _ => assert_eq!(x, y),
    }
}
