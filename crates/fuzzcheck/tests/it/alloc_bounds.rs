//! Resource bounds: parsing any input of n bytes allocates at most `A·n + B` bytes at peak
//! (`A` = 12, `B` = 64 KiB; the measured figures are at the constants), for every seed, every
//! regression, every `../shared/corpus` file and the densest inputs the formats allow, in
//! every option set, GGUF and `.llmw` alike. The parsers never copy the input and allocate
//! nothing per array element, so memory follows the number of items, not declared counts.
//!
//! A counting global allocator (this binary's own) measures the peak of live bytes allocated
//! during the parse, on the parsing thread only. The per-bug-class hostile table, with its own
//! allocation checks, is `crates/gguf/tests/it/hostile.rs`; this test covers every input the
//! fuzzers start from or found.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use crate::support::{corpus_files, files_in, fuzz_dir, say_skipped, shared_dir};

/// Peak bytes per input byte: at most 12. Measured (`SIPLLM_ALLOC_TABLE=1 cargo test -p
/// sipllm-fuzzcheck --test it alloc_bounds -- --nocapture` prints every figure): real headers,
/// which are nearly all vocabulary strings, cost under 0.005 bytes per byte (3 KiB for a
/// 724 KB vocabulary header); the worst are files made of the smallest possible items, where
/// every 17-byte pair or 28-byte tensor info becomes an AST entry and an index slot: 8.7 per
/// byte for one-byte pairs, 9.5 when lenient parsing also records a warning per pair, 7.6 for
/// scalar tensor infos, 7.1 for `.llmw` entries.
const A_NUM: u64 = 12;
const A_DEN: u64 = 1;
/// Constant part: 64 KiB (measured: at most 4.4 KiB, for the 7 KB tiny-llama sample).
const B: u64 = 64 << 10;

#[derive(Clone, Copy)]
struct Counters {
    active: bool,
    current: i64,
    peak: i64,
}

thread_local! {
    // `const` and `Copy` without `Drop`: never allocates, never destroyed.
    static COUNTERS: Cell<Counters> =
        const { Cell::new(Counters { active: false, current: 0, peak: 0 }) };
}

fn record(delta: i64) {
    let _ = COUNTERS.try_with(|c| {
        let mut s = c.get();
        if s.active {
            s.current += delta;
            s.peak = s.peak.max(s.current);
            c.set(s);
        }
    });
}

/// `System`, plus per-thread counters of live bytes.
struct Counting;

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the bookkeeping only touches a thread-local `Cell` and never
// allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            record(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            record(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) };
        record(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            record(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns the peak of live bytes it allocated on this thread.
fn peak_of<R>(f: impl FnOnce() -> R) -> u64 {
    COUNTERS.with(|c| c.set(Counters { active: true, current: 0, peak: 0 }));
    let r = f();
    let s = COUNTERS.with(|c| {
        let s = c.get();
        c.set(Counters { active: false, ..s });
        s
    });
    drop(r);
    s.peak.max(0) as u64
}

/// The figures the test reports: the largest peak, and the largest peak per input byte
/// among inputs of at least 4 KiB.
#[derive(Default)]
struct Figures {
    max_peak: (u64, u64, String),
    max_ratio: (f64, u64, u64, String),
}

fn measure(what: &str, bytes: &[u8], figures: &mut Figures) {
    let n = bytes.len() as u64;
    let bound = n * A_NUM / A_DEN + B;
    let mut check = |label: &str, peak: u64| {
        assert!(
            peak <= bound,
            "{what} ({label}): parsing {n} bytes allocated {peak} bytes at peak, over the bound \
             {A_NUM}/{A_DEN}·n + {B} = {bound}"
        );
        if peak > figures.max_peak.0 {
            figures.max_peak = (peak, n, format!("{what} ({label})"));
        }
        let ratio = peak as f64 / n as f64;
        if std::env::var_os("SIPLLM_ALLOC_TABLE").is_some() {
            eprintln!("{peak:>10} {n:>10} {ratio:>8.4}  {what} ({label})");
        }
        if n >= 4096 && ratio > figures.max_ratio.0 {
            figures.max_ratio = (ratio, peak, n, format!("{what} ({label})"));
        }
    };
    for (name, opts) in sipllm_fuzzcheck::gguf_option_sets(bytes.len()) {
        check(name, peak_of(|| sipllm_gguf::parse_with(bytes, &opts)));
    }
    for (name, opts) in sipllm_fuzzcheck::llmw_option_sets(bytes.len()) {
        check(&format!("llmw {name}"), peak_of(|| sipllm_llmw::parse_with(bytes, &opts)));
    }
}

/// The inputs that cost the parser the most memory per byte: the smallest possible items,
/// as many as fit (each pair or tensor info becomes an AST entry and an index slot), and a
/// lenient file with a warning per pair.
fn dense_inputs() -> Vec<(String, Vec<u8>)> {
    use sipllm_testkit::{GgufBuilder, Tensor, Value};
    let count = 20_000;
    let mut kvs = GgufBuilder::new();
    let mut bools = GgufBuilder::new();
    let mut tensors = GgufBuilder::new().with_data(false);
    for i in 0..count {
        let key = format!("{i:x}");
        kvs = kvs.kv(&key, Value::Uint8(0));
        bools = bools.kv(&key, Value::Raw { type_code: 7, bytes: vec![2] });
        tensors = tensors.tensor_info(Tensor {
            name: key.into_bytes(),
            dims: vec![],
            type_code: 0,
            offset: Some(0),
            n_dims: None,
            data: None,
        });
    }
    let array = GgufBuilder::new().kv(
        "a",
        Value::array(
            sipllm_gguf::ValueType::Array,
            (0..count).map(|_| Value::array(sipllm_gguf::ValueType::Uint8, vec![])).collect(),
        ),
    );
    let mut llmw = sipllm_llmw::LlmwWriter::new();
    for i in 0..count {
        llmw.add_meta_i64(&format!("{i:x}"), 0).unwrap();
    }
    vec![
        (format!("{count} one-byte pairs"), kvs.build()),
        (format!("{count} bool pairs of byte 2 (lenient: a warning each)"), bools.build()),
        (format!("{count} scalar tensor infos"), tensors.build()),
        (format!("an array of {count} empty arrays"), array.build()),
        (format!("{count} .llmw i64 entries"), llmw.to_vec().unwrap()),
    ]
}

#[test]
fn parsing_allocates_linearly_with_a_small_constant() {
    assert!(peak_of(|| std::hint::black_box(vec![0u8; 1000])) >= 1000, "allocator not counting");
    let mut figures = Figures::default();
    let mut inputs = 0;
    for kind in ["seeds", "regressions"] {
        for (target, _) in sipllm_fuzzcheck::TARGETS {
            for (name, bytes) in files_in(&fuzz_dir().join(kind).join(target)) {
                measure(&format!("fuzz/{kind}/{target}/{name}"), &bytes, &mut figures);
                inputs += 1;
            }
        }
    }
    for (what, bytes) in dense_inputs() {
        measure(&what, &bytes, &mut figures);
        inputs += 1;
    }
    match shared_dir() {
        Some(shared) => {
            for path in corpus_files(&shared) {
                let bytes = std::fs::read(&path).unwrap();
                measure(&path.display().to_string(), &bytes, &mut figures);
                inputs += 1;
            }
        }
        None => say_skipped("the corpus files are not measured"),
    }
    assert!(inputs > 40, "only {inputs} inputs measured");
    let (peak, n, what) = &figures.max_peak;
    let (ratio, rpeak, rn, rwhat) = &figures.max_ratio;
    eprintln!(
        "{inputs} inputs, each in every option set: largest peak {peak} bytes (for {n} input \
         bytes: {what}); largest peak/n for n >= 4 KiB {ratio:.4} ({rpeak} bytes for {rn}: \
         {rwhat})"
    );
}
