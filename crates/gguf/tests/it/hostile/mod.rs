//! Hostile inputs, a module per section (`header`, `kv`, `tensor_infos`, `data`: the cases of
//! llama.cpp's `tests/test-gguf.cpp`; `bug_classes`: the peers' bug classes and the whole
//! table; `alloc`, `work`, `kinds`, `truncation`); this file holds the layout arithmetic and
//! the case table they share.
//!
//! * `corruption_table`: one named case per corruption of llama.cpp's `tests/test-gguf.cpp`
//!   and per GGUF-parser bug class (`shared/notes/gguf-facts.md` §4–5, `peers.md` §4), each with
//!   the exact outcome under every profile: what loads, or the exact `ErrorKind`, code, absolute
//!   offset and path.
//! * Allocation bounds, measured with a counting global allocator (`support/count_alloc.rs`).
//! * One test per `ErrorKind` and `WarningKind` variant, reached from bytes; code format and
//!   uniqueness.
//! * The truncation sweep: every cut before the data section of a file with every value type.
//!
//! Expected offsets are computed here from the byte layout — the header is 24 bytes, a string
//! is 8 + len bytes, a metadata pair is key, 4-byte type and value, a tensor info is name,
//! 4-byte `n_dims`, 8 bytes per dimension, 4-byte type and 8-byte offset — never copied from
//! the parser's output.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use sipllm_gguf::{
    Decoder, Endian, Error, ErrorKind, Event, GgmlType, Gguf, Limits, MetaValue, ParseOptions,
    Profile, ValueType, Warning, WarningKind, error::StrField, ggml::align_up, parse_with,
};
use sipllm_testkit::{GgufBuilder, Tensor, Value, pattern};

use crate::support::count_alloc::{AllocStats, CountingAlloc, is_installed, measure};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

// ----- layout arithmetic (the spec, independent of the parser) -------------------------------

/// Size of the v2/v3 fixed header.
const HEADER: u64 = 24;
const MIB: u64 = 1 << 20;
const MAX_STRING: u64 = 64 << 20;
const MAX_ARRAY: u64 = 1 << 26;
const MAX_COUNT: u64 = 1 << 20;

/// Where the fields of a metadata pair starting at `at` lie.
#[derive(Debug, Clone, Copy)]
struct KvAt {
    /// The key's bytes (after its 8-byte length).
    key: u64,
    /// The 4-byte value type.
    ty: u64,
    /// The value (for arrays: the 4-byte element type, then the 8-byte count at `value + 4`).
    value: u64,
}

fn kv_at(at: u64, key: &str) -> KvAt {
    let key_len = key.len() as u64;
    KvAt { key: at + 8, ty: at + 8 + key_len, value: at + 12 + key_len }
}

/// Where the fields of a tensor info starting at `at` lie.
#[derive(Debug, Clone, Copy)]
struct TensorAt {
    name: u64,
    n_dims: u64,
    ne: u64,
    ty: u64,
    offset: u64,
    end: u64,
}

fn tensor_at(at: u64, name: &str, n_dims: u64) -> TensorAt {
    let name_at = at + 8;
    let n_dims_at = name_at + name.len() as u64;
    let ne = n_dims_at + 4;
    let ty = ne + 8 * n_dims;
    TensorAt { name: name_at, n_dims: n_dims_at, ne, ty, offset: ty + 4, end: ty + 12 }
}

/// Size of a value as written (spec §1.3): fixed scalars by type, strings 8 + len, arrays
/// 4 + 8 + elements; `Raw` is exactly its bytes.
fn value_size(v: &Value) -> u64 {
    match v {
        Value::Uint8(_) | Value::Int8(_) | Value::Bool(_) => 1,
        Value::Uint16(_) | Value::Int16(_) => 2,
        Value::Uint32(_) | Value::Int32(_) | Value::Float32(_) => 4,
        Value::Uint64(_) | Value::Int64(_) | Value::Float64(_) => 8,
        Value::String(b) | Value::StringWithLen { bytes: b, .. } => 8 + b.len() as u64,
        Value::Array(_, elems) | Value::ArrayWithLen { elems, .. } => {
            12 + elems.iter().map(value_size).sum::<u64>()
        }
        Value::Raw { bytes, .. } => bytes.len() as u64,
    }
}

/// The start offsets of the pairs `kvs` written after the 24-byte header.
fn kv_starts(kvs: &[(&str, Value)]) -> Vec<u64> {
    let mut at = HEADER;
    kvs.iter()
        .map(|(k, v)| {
            let start = at;
            at += 8 + k.len() as u64 + 4 + value_size(v);
            start
        })
        .collect()
}

/// A tensor info with packed offset and pattern data.
fn tensor(name: &str, ty: u32, dims: &[u64]) -> Tensor {
    Tensor {
        name: name.as_bytes().to_vec(),
        dims: dims.to_vec(),
        type_code: ty,
        offset: None,
        n_dims: None,
        data: None,
    }
}

/// The header and directory, zero-padded to the builder's alignment: a test-gguf
/// "metadata only" file (no tensor data).
fn header_padded(b: &GgufBuilder) -> Vec<u8> {
    let mut out = b.build_header();
    let end = align_up(out.len() as u64, b.alignment().into()).unwrap();
    out.resize(end as usize, 0);
    out
}

/// A header declaring `n_kv` pairs and no tensors, followed by hand-written `rest`.
fn raw_kvs(n_kv: u64, rest: &[&[u8]]) -> Vec<u8> {
    let mut out = GgufBuilder::new().kv_count(n_kv).build();
    for part in rest {
        out.extend_from_slice(part);
    }
    out
}

/// `depth` levels of one-element arrays around a `UINT8` array holding the byte 7, as the
/// raw value of an ARRAY pair: `(9, 1)` × (depth − 1), then `(0, 1)`, then `7`.
fn nested(depth: usize) -> Value {
    let mut bytes = Vec::new();
    for _ in 1..depth {
        bytes.extend(9u32.to_le_bytes());
        bytes.extend(1u64.to_le_bytes());
    }
    bytes.extend(0u32.to_le_bytes());
    bytes.extend(1u64.to_le_bytes());
    bytes.push(7);
    Value::Raw { type_code: 9, bytes }
}

fn kv_path(index: usize, key: &str) -> String {
    format!("metadata[{index}] {key:?}")
}

fn tensor_path(index: usize, name: &str) -> String {
    format!("tensor[{index}] {name:?}")
}

// ----- the case table ------------------------------------------------------------------------

type Check = Rc<dyn Fn(&Gguf<&[u8]>)>;

/// The outcome of parsing a case under one profile.
#[derive(Clone)]
enum Expect {
    /// Loads; the check asserts what loaded (including the warnings).
    Ok(Check),
    /// Fails with exactly this kind, code, offset and path.
    Err { kind: ErrorKind, code: &'static str, offset: u64, path: String },
}

fn err(kind: ErrorKind, code: &'static str, offset: u64, path: impl Into<String>) -> Expect {
    Expect::Err { kind, code, offset, path: path.into() }
}

/// Loads; `check` asserts what loaded, warnings included.
fn loads(check: impl Fn(&Gguf<&[u8]>) + 'static) -> Expect {
    Expect::Ok(Rc::new(check))
}

/// Loads without warnings; `check` asserts what loaded.
fn loads_clean(check: impl Fn(&Gguf<&[u8]>) + 'static) -> Expect {
    loads(move |g| {
        assert_warnings(g, &[]);
        check(g)
    })
}

/// Loads with exactly these warnings (kind, code, offset), in order.
fn loads_warning(
    warnings: Vec<(WarningKind, &'static str, u64)>,
    check: impl Fn(&Gguf<&[u8]>) + 'static,
) -> Expect {
    loads(move |g| {
        assert_warnings(g, &warnings);
        check(g)
    })
}

fn tolerated(kind: ErrorKind, code: &'static str, offset: u64) -> (WarningKind, &'static str, u64) {
    (WarningKind::Tolerated(kind), code, offset)
}

fn assert_warnings(g: &Gguf<&[u8]>, expected: &[(WarningKind, &'static str, u64)]) {
    let got: Vec<(WarningKind, &'static str, u64)> =
        g.warnings().iter().map(|w| (w.kind().clone(), w.code(), w.offset())).collect();
    assert_eq!(got, expected, "warnings");
}

const PROFILES: [Profile; 3] = [Profile::Strict, Profile::LlamaCpp, Profile::Lenient];

struct Case {
    name: String,
    bytes: Vec<u8>,
    /// Everything but the profile (by default: the whole file is `bytes`).
    opts: ParseOptions,
    /// Per profile, in [`PROFILES`] order.
    expect: [Option<Expect>; 3],
}

fn case(name: &str, bytes: Vec<u8>) -> Case {
    let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
    Case { name: name.to_string(), bytes, opts, expect: [None, None, None] }
}

impl Case {
    fn opts(mut self, f: impl FnOnce(ParseOptions) -> ParseOptions) -> Case {
        self.opts = f(self.opts);
        self
    }

    fn header_only(self) -> Case {
        self.opts(|o| o.with_file_size(None))
    }

    fn limits(self, limits: Limits) -> Case {
        self.opts(|o| o.with_limits(limits))
    }

    fn strict(mut self, e: Expect) -> Case {
        self.expect[0] = Some(e);
        self
    }

    fn llama(mut self, e: Expect) -> Case {
        self.expect[1] = Some(e);
        self
    }

    fn lenient(mut self, e: Expect) -> Case {
        self.expect[2] = Some(e);
        self
    }

    fn strict_llama(self, e: Expect) -> Case {
        self.strict(e.clone()).llama(e)
    }

    fn strict_lenient(self, e: Expect) -> Case {
        self.strict(e.clone()).lenient(e)
    }

    fn all(self, e: Expect) -> Case {
        self.strict(e.clone()).llama(e.clone()).lenient(e)
    }

    fn options(&self, profile: Profile) -> ParseOptions {
        self.opts.with_profile(profile)
    }

    fn parse(&self, profile: Profile) -> Result<Gguf<&[u8]>, Error> {
        parse_with(&self.bytes[..], &self.options(profile))
    }

    /// Checks the expectation for `profile`; `Err(description)` on a mismatch.
    fn check(&self, profile: Profile) -> Result<(), String> {
        let i = PROFILES.iter().position(|p| *p == profile).unwrap();
        let Some(expect) = &self.expect[i] else {
            return Err("no expectation".into());
        };
        match (expect, self.parse(profile)) {
            (Expect::Ok(check), Ok(g)) => {
                for w in g.warnings() {
                    no_control_chars(&w.to_string())?;
                }
                catch_unwind(AssertUnwindSafe(|| check(&g))).map_err(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                })
            }
            (Expect::Ok(_), Err(e)) => {
                Err(format!("expected to load, got {} [{}] at {}", e, e.code(), e.offset()))
            }
            (Expect::Err { kind, .. }, Ok(_)) => Err(format!("expected {kind:?}, but it loaded")),
            (Expect::Err { kind, code, offset, path }, Err(e)) => {
                let got = (e.kind(), e.code(), e.offset(), e.path().to_string());
                let want = (kind, *code, *offset, path.clone());
                if got != want {
                    return Err(format!("\n   expected {want:?}\n        got {got:?}"));
                }
                if kind.code() != *code {
                    return Err(format!("ErrorKind::code() is {}", kind.code()));
                }
                if e.help().is_empty() || e.message().is_empty() {
                    return Err("empty help or message".into());
                }
                no_control_chars(&e.to_string())
            }
        }
    }
}

/// A file's strings reach messages only escaped: no control character may be printed raw.
fn no_control_chars(s: &str) -> Result<(), String> {
    match s.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!("raw control character {c:?} in message {s:?}")),
        None => Ok(()),
    }
}

mod alloc;
mod bug_classes;
mod data;
mod header;
mod kinds;
mod kv;
mod tensor_infos;
mod truncation;
mod work;

// Helpers one section defines and later ones use.
use bug_classes::*;
use data::*;
use header::*;
use kinds::*;
use kv::*;
use tensor_infos::*;
