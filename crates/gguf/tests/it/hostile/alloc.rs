//! Allocation bounds.

use super::*;

/// Peak live bytes allowed while parsing `n` input bytes: the directory vectors, the two name
/// indexes and the warnings grow with the items actually parsed (each at least 13 bytes of
/// input), plus a constant. The worst case measured is lenient parsing of empty duplicate keys
/// (two warnings, each with a path, per 13-byte pair): about 47 bytes per input byte.
fn alloc_bound(n: usize) -> u64 {
    64 * n as u64 + 64 * 1024
}

/// Parses and drops the result inside the measurement.
fn measure_parse(bytes: &[u8], opts: &ParseOptions) -> (Result<usize, &'static str>, AllocStats) {
    measure(|| {
        parse_with(bytes, opts).map(|g| g.kv_len() + g.tensor_infos().len()).map_err(|e| e.code())
    })
}

#[test]
fn hostile_inputs_allocate_o_of_n_and_at_most_a_few_mib() {
    assert!(is_installed(), "the counting allocator is not this binary's global allocator");
    let mut cases: Vec<Case> = all_cases();
    cases.extend(reach_cases().into_iter().map(|(_, _, c)| c));
    // Per group of cases (the name up to the first space or parenthesis): inputs, largest
    // input, highest peak, most allocation calls.
    let mut groups: std::collections::BTreeMap<String, (usize, usize, u64, u64)> =
        Default::default();
    let mut failures = Vec::new();
    for c in &cases {
        for profile in PROFILES {
            let (_, stats) = measure_parse(&c.bytes, &c.options(profile));
            let n = c.bytes.len();
            if stats.peak_bytes > 4 * MIB || stats.peak_bytes > alloc_bound(n) {
                failures.push(format!(
                    "{} [{}]: {n} bytes in, peak {stats:?}",
                    c.name,
                    profile.name()
                ));
            }
            let group = c.name.split([' ', '(']).next().unwrap_or_default();
            let group =
                if group.starts_with('C') { group } else { group.split('_').next().unwrap() };
            let g = groups.entry(group.to_string()).or_default();
            *g = (g.0 + 1, g.1.max(n), g.2.max(stats.peak_bytes), g.3.max(stats.allocations));
        }
    }
    eprintln!(
        "{:<10} {:>6} {:>10} {:>10} {:>8}",
        "group", "parses", "max input", "max peak", "max allocs"
    );
    for (name, (parses, input, peak, allocs)) in &groups {
        eprintln!("{name:<10} {parses:>6} {input:>10} {peak:>10} {allocs:>8}");
    }
    assert!(failures.is_empty(), "over the allocation bound:\n{}", failures.join("\n"));
}

/// A header with a vocabulary of `n` tokens, `n` scores and one tensor.
fn vocab_file(n: usize) -> Vec<u8> {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings((0..n).map(|i| format!("tok{i}"))))
        .kv(
            "tokenizer.ggml.scores",
            Value::Array(6, (0..n).map(|i| Value::Float32(i as f32)).collect()),
        )
        .tensor("token_embd.weight", GgmlType::F32, &[4, 2])
        .build()
}

#[test]
fn allocations_do_not_depend_on_array_lengths() {
    assert!(is_installed());
    // Exactly the same allocations whatever the array's length.
    let opts = |b: &[u8]| ParseOptions::default().with_file_size(Some(b.len() as u64));
    let (small, big, huge) = (vocab_file(10), vocab_file(100_000), vocab_file(400_000));
    let (r10, s10) = measure_parse(&small, &opts(&small));
    let (r100k, s100k) = measure_parse(&big, &opts(&big));
    let (r400k, s400k) = measure_parse(&huge, &opts(&huge));
    assert_eq!((r10, r100k, r400k), (Ok(4), Ok(4), Ok(4)));
    eprintln!("10 strings: {s10:?}\n100k strings: {s100k:?} ({} bytes)", big.len());
    assert_eq!(s100k.allocations, s10.allocations, "allocation calls");
    assert_eq!(s100k.peak_bytes, s10.peak_bytes, "peak bytes");
    assert_eq!(s400k.allocations, s10.allocations, "allocation calls, 400k strings");
    assert_eq!(s400k.peak_bytes, s10.peak_bytes, "peak bytes, 400k strings");
}

#[test]
fn allocations_grow_with_items_not_declared_counts() {
    assert!(is_installed());
    // n pairs of every kind of warning the lenient profile gives per pair (empty key, then
    // duplicates of it): the worst case per input byte.
    let empties =
        |n: usize| (0..n).fold(GgufBuilder::new(), |b, _| b.kv("", Value::Uint8(0))).build();
    // n tensors.
    let tensors = |n: usize| {
        (0..n)
            .fold(GgufBuilder::new(), |b, i| b.tensor(&format!("t{i}"), GgmlType::F32, &[1]))
            .build()
    };
    // n distinct one-byte pairs (strict).
    let pairs = |n: usize| {
        (0..n).fold(GgufBuilder::new(), |b, i| b.kv(&format!("k{i}"), Value::Uint8(0))).build()
    };
    type Make<'a> = &'a dyn Fn(usize) -> Vec<u8>;
    let shapes: [(&str, Make<'_>, Profile); 3] = [
        ("empty keys", &empties, Profile::Lenient),
        ("pairs", &pairs, Profile::Strict),
        ("tensors", &tensors, Profile::Strict),
    ];
    for (label, make, profile) in shapes {
        for n in [100, 1000, 10_000] {
            let bytes = make(n);
            let opts = ParseOptions::new(profile).with_file_size(Some(bytes.len() as u64));
            let (r, stats) = measure_parse(&bytes, &opts);
            assert_eq!(r, Ok(n), "{label}");
            eprintln!(
                "{label:>10} x{n:>6}: {:>7} bytes in, peak {:>8} ({:.1}x), {} allocations",
                bytes.len(),
                stats.peak_bytes,
                stats.peak_bytes as f64 / bytes.len() as f64,
                stats.allocations
            );
            assert!(stats.peak_bytes <= alloc_bound(bytes.len()), "{label} x{n}: {stats:?}");
        }
    }
    // A declared count costs nothing until its items arrive.
    let declared = GgufBuilder::new().kv_count(MAX_COUNT).tensor_count(MAX_COUNT).build();
    let (r, stats) = measure_parse(&declared, &ParseOptions::default());
    assert_eq!(r, Err("gguf::input::unexpected_eof"));
    assert!(stats.peak_bytes < 1024, "{stats:?}");
}
