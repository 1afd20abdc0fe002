//! Work: counting decoder calls, not time.

use super::*;

/// Feeds `bytes` one byte at a time; returns the decode calls made and the bytes consumed.
fn feed_bytewise(bytes: &[u8], opts: ParseOptions) -> (usize, u64, Decoder) {
    let mut d = Decoder::new(opts);
    let (mut calls, mut consumed) = (0, 0);
    for n in 0..=bytes.len() {
        loop {
            calls += 1;
            let step = d.decode(&bytes[..n]).unwrap();
            consumed += step.consumed;
            if matches!(step.event, Event::NeedMore { .. }) {
                break;
            }
        }
    }
    (calls, consumed, d)
}

#[test]
fn declared_counts_cost_nothing_before_their_bytes_arrive() {
    let opts = ParseOptions::default().with_limits(sipllm_testkit::unlimited_limits());
    // A u8 array declaring 2^40 elements with 16 present: 49 + 16 bytes.
    let sixteen: Vec<Value> = (0..16).map(Value::Uint8).collect();
    let bytes = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 0, declared: 1 << 40, elems: sixteen })
        .build();
    assert_eq!(bytes.len(), 65);
    // Whole: the header, then the pair consumes the 16 elements and asks for exactly the rest.
    let mut d = Decoder::new(opts);
    let step = d.decode(&bytes).unwrap();
    assert_eq!((step.consumed, step.event), (HEADER, Event::Header));
    let step = d.decode(&bytes).unwrap();
    assert_eq!(
        (step.consumed, step.event),
        (65 - HEADER, Event::NeedMore { needed: (1 << 40) - 16 })
    );
    assert_eq!(d.position(), 65);
    let e = d.end_of_input(&bytes);
    assert_eq!((e.kind(), e.offset()), (&ErrorKind::UnexpectedEof { needed: (1 << 40) - 16 }, 65));
    // Byte by byte: one call per input length plus one for the completed header, and every
    // byte consumed exactly once.
    let (calls, consumed, d) = feed_bytewise(&bytes, opts);
    assert_eq!((calls, consumed, d.position()), (bytes.len() + 1 + 1, 65, 65));

    // The same for 2^40 strings of which 3 are present.
    let three = vec![Value::str("x"), Value::str("yz"), Value::str("")];
    let bytes = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 8, declared: 1 << 40, elems: three })
        .build();
    let (calls, consumed, d) = feed_bytewise(&bytes, opts);
    assert_eq!((calls, consumed, d.position()), (bytes.len() + 2, bytes.len() as u64, 76));
    assert_eq!(d.end_of_input(&bytes).path().to_string(), format!("{}[3]", kv_path(0, "a")));
}
