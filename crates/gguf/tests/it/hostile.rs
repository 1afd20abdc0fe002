//! Hostile inputs.
//!
//! * [`corruption_table`]: one named case per corruption of llama.cpp's `tests/test-gguf.cpp`
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

// ----- test-gguf.cpp: header ----------------------------------------------------------------

fn v1_file() -> Vec<u8> {
    GgufBuilder::new()
        .version(1)
        .kv("general.name", Value::str("v1"))
        .kv("n", Value::Uint32(7))
        .build()
}

fn header_cases() -> Vec<Case> {
    let v1_loads = || {
        loads_clean(|g| {
            assert_eq!((g.version(), g.header().size()), (1, 16));
            assert_eq!(g.get_str("general.name"), Some("v1"));
            assert_eq!(g.get_u64("n"), Some(7));
            // 16-byte header + (4 + 12 + 4 + 4 + 2) + (4 + 1 + 4 + 4).
            assert_eq!(g.directory().directory_end(), 16 + 26 + 13);
        })
    };
    vec![
        case("HEADER_BAD_MAGIC", GgufBuilder::new().magic(*b"FUGG").build()).all(err(
            ErrorKind::BadMagic { found: *b"FUGG" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        // A short non-GGUF input is not a truncated GGUF: the magic is judged on its own.
        case("HEADER_BAD_MAGIC (4-byte file)", b"FUGG".to_vec()).all(err(
            ErrorKind::BadMagic { found: *b"FUGG" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        case("HEADER_BAD_MAGIC (5-byte text file)", b"hello".to_vec()).all(err(
            ErrorKind::BadMagic { found: *b"hell" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        case("HEADER_EMPTY (3 bytes of the magic)", b"GGU".to_vec()).all(err(
            ErrorKind::UnexpectedEof { needed: 1 },
            "gguf::input::unexpected_eof",
            3,
            "header.magic",
        )),
        case("HEADER_BAD_VERSION_0", GgufBuilder::new().version(0).build()).all(err(
            ErrorKind::UnsupportedVersion { version: 0 },
            "gguf::header::unsupported_version",
            4,
            "header.version",
        )),
        case("HEADER_BAD_VERSION_1", v1_file()).all(err(
            ErrorKind::VersionOneDisabled,
            "gguf::header::v1_disabled",
            4,
            "header.version",
        )),
        case("HEADER_BAD_VERSION_1 (v1 reading enabled)", v1_file())
            .opts(|o| o.with_v1(true))
            .strict(v1_loads())
            .llama(err(
                ErrorKind::VersionOneDisabled,
                "gguf::header::v1_disabled",
                4,
                "header.version",
            ))
            .lenient(v1_loads()),
        case("HEADER_BAD_VERSION_FUTURE", GgufBuilder::new().version(4).build()).all(err(
            ErrorKind::UnsupportedVersion { version: 4 },
            "gguf::header::unsupported_version",
            4,
            "header.version",
        )),
        case("HEADER_BAD_N_TENSORS", GgufBuilder::new().tensor_count(u64::MAX).build()).all(err(
            ErrorKind::TooManyTensors { count: u64::MAX, max: MAX_COUNT },
            "gguf::limits::too_many_tensors",
            8,
            "header.tensor_count",
        )),
        case("HEADER_BAD_N_KV", GgufBuilder::new().kv_count(u64::MAX).build()).all(err(
            ErrorKind::TooManyKvs { count: u64::MAX, max: MAX_COUNT },
            "gguf::limits::too_many_kvs",
            16,
            "header.kv_count",
        )),
        case("HEADER_EMPTY", GgufBuilder::new().build()).all(loads_clean(|g| {
            assert_eq!(g.version(), 3);
            assert_eq!((g.header().tensor_count, g.header().kv_count), (0, 0));
            assert_eq!((g.kv_len(), g.tensor_infos().len()), (0, 0));
            assert_eq!(g.directory().directory_end(), HEADER);
        })),
    ]
}

// ----- test-gguf.cpp: key/value pairs -------------------------------------------------------

/// One pair of every value type (arrays of several element types, no nested array).
fn every_type_kvs() -> Vec<(&'static str, Value)> {
    vec![
        ("general.architecture", Value::str("llama")),
        ("t.u8", Value::Uint8(200)),
        ("t.i8", Value::Int8(-100)),
        ("t.u16", Value::Uint16(65_000)),
        ("t.i16", Value::Int16(-30_000)),
        ("t.u32", Value::Uint32(4_000_000_000)),
        ("t.i32", Value::Int32(-2_000_000_000)),
        ("t.f32", Value::Float32(1.5)),
        ("t.bool", Value::Bool(true)),
        ("t.str", Value::str("h\u{e9}llo \u{65e5}\u{672c}")),
        ("t.empty_str", Value::str("")),
        ("t.u64", Value::Uint64(u64::MAX)),
        ("t.i64", Value::Int64(i64::MIN)),
        ("t.f64", Value::Float64(-0.25)),
        ("t.arr_u32", Value::Array(4, vec![Value::Uint32(1), Value::Uint32(2), Value::Uint32(3)])),
        ("t.arr_i16", Value::Array(3, vec![Value::Int16(-1), Value::Int16(7)])),
        ("t.arr_bool", Value::Array(7, vec![Value::Bool(true), Value::Bool(false)])),
        ("t.arr_str", Value::strings(["a", "", "\u{65e5}\u{672c}"])),
        ("t.arr_empty", Value::Array(12, vec![])),
        ("t.arr_f64", Value::Array(12, vec![Value::Float64(0.5), Value::Float64(-2.0)])),
    ]
}

/// A pair holding a nested array (arrays of `UINT8`, `STRING` and `ARRAY` of `INT32`).
fn nested_kv() -> (&'static str, Value) {
    (
        "t.nested",
        Value::Array(
            9,
            vec![
                Value::Array(0, vec![Value::Uint8(1), Value::Uint8(2), Value::Uint8(3)]),
                Value::strings(["x", "yz"]),
                Value::Array(9, vec![Value::Array(5, vec![Value::Int32(-1)])]),
                Value::Array(8, vec![]),
            ],
        ),
    )
}

fn build_kvs(kvs: &[(&str, Value)]) -> GgufBuilder {
    kvs.iter().fold(GgufBuilder::new(), |b, (k, v)| b.kv(k, v.clone()))
}

/// Every pair of `kvs` reads back as written (through `get`, i.e. the key index).
fn values_round_trip(kvs: Vec<(&'static str, Value)>) -> impl Fn(&Gguf<&[u8]>) + 'static {
    move |g| {
        assert_eq!(g.kv_len(), kvs.len());
        for (k, v) in &kvs {
            let got = g.get(k).unwrap_or_else(|| panic!("{k} missing"));
            assert_eq!(&Value::from_meta(&got), v, "{k}");
        }
    }
}

fn kv_cases() -> Vec<Case> {
    let k0 = kv_at(HEADER, "my_key_0");
    let align = kv_at(HEADER, "general.alignment");
    // Two empty-key UINT32 pairs of 8 + 4 + 4 bytes; two "my_key_0" pairs of 8 + 8 + 4 + 4.
    let (empty0, empty1) = (kv_at(HEADER, "").key, kv_at(HEADER + 16, "").key);
    let dup1 = kv_at(HEADER + 24, "my_key_0").key;
    let mut cases = vec![
        case(
            "KV_BAD_KEY_SIZE",
            raw_kvs(1, &[&u64::MAX.to_le_bytes(), b"my_key_0", &4u32.to_le_bytes(), &[0; 4]]),
        )
        .all(err(
            ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
            "gguf::limits::string_too_long",
            HEADER,
            "metadata[0] key",
        )),
        case("KV_EMPTY_KEY", {
            GgufBuilder::new().kv("", Value::Uint32(1)).kv("", Value::Uint32(2)).build()
        })
        .strict_llama(err(
            ErrorKind::EmptyKey,
            "gguf::metadata::empty_key",
            empty0,
            r#"metadata[0] "" key"#,
        ))
        .lenient(loads_warning(
            vec![
                tolerated(ErrorKind::EmptyKey, "gguf::metadata::empty_key", empty0),
                tolerated(ErrorKind::EmptyKey, "gguf::metadata::empty_key", empty1),
                tolerated(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    empty1,
                ),
            ],
            |g| {
                assert_eq!(g.kv_len(), 2);
                assert_eq!(g.get_u64(""), Some(2), "last wins");
            },
        )),
        case(
            "KV_BAD_TYPE",
            GgufBuilder::new()
                .kv("my_key_0", Value::Raw { type_code: 13, bytes: vec![0; 4] })
                .build(),
        )
        .all(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.ty,
            format!("{} type", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (string length 2^64-1)",
            GgufBuilder::new()
                .kv("my_key_0", Value::StringWithLen { declared: u64::MAX, bytes: b"abc".to_vec() })
                .build(),
        )
        .all(err(
            ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
            "gguf::limits::string_too_long",
            k0.value,
            format!("{} value", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (array count 2^40)",
            GgufBuilder::new()
                .kv(
                    "my_key_0",
                    Value::ArrayWithLen {
                        elem_type: 4,
                        declared: 1 << 40,
                        elems: vec![Value::Uint32(1)],
                    },
                )
                .build(),
        )
        .all(err(
            ErrorKind::ArrayTooLong { len: 1 << 40, max: MAX_ARRAY },
            "gguf::limits::array_too_long",
            k0.value + 4,
            format!("{} value count", kv_path(0, "my_key_0")),
        )),
        case(
            "KV_BAD_VALUE_SIZE (60 MiB string, 3 bytes present)",
            GgufBuilder::new()
                .kv("my_key_0", Value::StringWithLen { declared: 60 * MIB, bytes: b"abc".to_vec() })
                .build(),
        )
        .all(err(
            ErrorKind::UnexpectedEof { needed: 60 * MIB - 3 },
            "gguf::input::unexpected_eof",
            k0.value + 8 + 3,
            kv_path(0, "my_key_0"),
        )),
        case("KV_DUPLICATE_KEY", {
            GgufBuilder::new()
                .kv("my_key_0", Value::Uint32(1))
                .kv("my_key_0", Value::Uint32(2))
                .build()
        })
        .strict_llama(err(
            ErrorKind::DuplicateKey { first: 0 },
            "gguf::metadata::duplicate_key",
            dup1,
            format!("{} key", kv_path(1, "my_key_0")),
        ))
        .lenient(loads_warning(
            vec![tolerated(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                dup1,
            )],
            |g| {
                assert_eq!(g.kv_len(), 2);
                assert_eq!(g.get_u64("my_key_0"), Some(2), "last wins");
                assert_eq!(g.get_entry("my_key_0").unwrap().index, 1);
            },
        )),
    ];
    for (name, value, kind) in [
        ("KV_BAD_ALIGN", Value::Uint32(13), ErrorKind::BadAlignment { alignment: 13 }),
        ("C8 alignment 0", Value::Uint32(0), ErrorKind::BadAlignment { alignment: 0 }),
        (
            "C8 alignment 48 (not a power of two)",
            Value::Uint32(48),
            ErrorKind::BadAlignment { alignment: 48 },
        ),
    ] {
        cases.push(
            case(name, GgufBuilder::new().kv("general.alignment", value).build())
                .strict_llama(err(
                    kind.clone(),
                    "gguf::metadata::bad_alignment",
                    align.value,
                    format!("{} value", kv_path(0, "general.alignment")),
                ))
                .lenient(loads_warning(
                    vec![tolerated(kind, "gguf::metadata::bad_alignment", align.value)],
                    |g| assert_eq!(g.alignment(), 32),
                )),
        );
    }
    for (name, value, found) in [
        ("KV_WRONG_TYPE_ALIGN (INT32)", Value::Int32(32), ValueType::Int32),
        ("C5 general.alignment as UINT64", Value::Uint64(32), ValueType::Uint64),
        (
            "C5 general.alignment as ARRAY",
            Value::Array(4, vec![Value::Uint32(32)]),
            ValueType::Array,
        ),
    ] {
        let kind = ErrorKind::AlignmentType { found };
        cases.push(
            case(name, GgufBuilder::new().kv("general.alignment", value.clone()).build())
                .strict_llama(err(
                    kind.clone(),
                    "gguf::metadata::alignment_type",
                    align.ty,
                    format!("{} type", kv_path(0, "general.alignment")),
                ))
                .lenient(loads_warning(
                    vec![tolerated(kind, "gguf::metadata::alignment_type", align.ty)],
                    move |g| {
                        assert_eq!(g.alignment(), 32, "the default is used");
                        let got = g.get("general.alignment").unwrap();
                        assert_eq!(Value::from_meta(&got), value);
                    },
                )),
        );
    }

    // KV_SUCCESS: every type loads and reads back, under every profile.
    let kvs = every_type_kvs();
    cases
        .push(case("KV_SUCCESS", build_kvs(&kvs).build()).all(loads_clean(values_round_trip(kvs))));

    // KV_SUCCESS writes random bytes into bools: llama.cpp loads them as "non-zero is true".
    let kvs = vec![
        ("my_key_0", Value::Uint32(5)),
        ("my_key_1", Value::Raw { type_code: 7, bytes: vec![0xA7] }),
        (
            "my_key_2",
            Value::Array(
                7,
                [1u8, 0, 0x80, 2].map(|b| Value::Raw { type_code: 7, bytes: vec![b] }).to_vec(),
            ),
        ),
    ];
    let at = kv_starts(&kvs);
    let (bool_at, arr) = (kv_at(at[1], "my_key_1").value, kv_at(at[2], "my_key_2"));
    // The array's payload follows its element type and count; 0x80 is element 2.
    let bad_elem = arr.value + 12 + 2;
    let bools_true = |g: &Gguf<&[u8]>| {
        assert_eq!(g.get("my_key_1").unwrap().as_bool(), Some(true));
        let a = g.get_array("my_key_2").unwrap();
        assert_eq!(a.to_vec::<bool>(), Some(vec![true, false, true, true]));
    };
    cases.push(
        case("KV_SUCCESS (random bool bytes)", build_kvs(&kvs).build())
            .strict(err(
                ErrorKind::InvalidBool { value: 0xA7 },
                "gguf::metadata::invalid_bool",
                bool_at,
                format!("{} value", kv_path(1, "my_key_1")),
            ))
            .llama(loads_clean(bools_true))
            .lenient(loads_warning(
                vec![
                    tolerated(
                        ErrorKind::InvalidBool { value: 0xA7 },
                        "gguf::metadata::invalid_bool",
                        bool_at,
                    ),
                    // One warning per array: the 0x02 after it is not reported.
                    tolerated(
                        ErrorKind::InvalidBool { value: 0x80 },
                        "gguf::metadata::invalid_bool",
                        bad_elem,
                    ),
                ],
                bools_true,
            )),
    );
    cases.push(
        case("KV_SUCCESS (random bool bytes in an array)", build_kvs(&kvs[2..]).build())
            // Alone, the array pair starts at 24: payload at 24 + 8 + 8 + 4 + 4 + 8 = 56.
            .strict(err(
                ErrorKind::InvalidBool { value: 0x80 },
                "gguf::metadata::invalid_bool",
                58,
                format!("{}[2]", kv_path(0, "my_key_2")),
            ))
            .llama(loads_clean(|_| {}))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::InvalidBool { value: 0x80 },
                    "gguf::metadata::invalid_bool",
                    58,
                )],
                |_| {},
            )),
    );
    cases
}

// ----- test-gguf.cpp: tensor infos ----------------------------------------------------------

const F32: u32 = 0;
const F16: u32 = 1;
const Q8_0: u32 = 8;
const Q4_K: u32 = 12;
const I8: u32 = 24;
const I64: u32 = 27;
const BF16: u32 = 30;

/// A file with the given tensors (no metadata), with data.
fn tensors_file(tensors: Vec<Tensor>) -> GgufBuilder {
    tensors.into_iter().fold(GgufBuilder::new(), GgufBuilder::tensor_info)
}

fn tensor_cases() -> Vec<Case> {
    let t0 = |n_dims| tensor_at(HEADER, "t0", n_dims);
    let t0_path = tensor_path(0, "t0");
    let mut cases = Vec::new();

    let long = "n".repeat(65);
    let long_at = tensor_at(HEADER, &long, 1);
    let long_path = format!("{} name", tensor_path(0, &long));
    let name = long.clone();
    cases.push(
        case("TENSORS_BAD_NAME_SIZE", tensors_file(vec![tensor(&long, F32, &[4])]).build())
            .strict(err(
                ErrorKind::NameTooLong { len: 65, max: 64 },
                "gguf::tensor::name_too_long",
                long_at.name,
                long_path.clone(),
            ))
            .llama(err(
                ErrorKind::NameTooLong { len: 65, max: 63 },
                "gguf::tensor::name_too_long",
                long_at.name,
                long_path,
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::NameTooLong { len: 65, max: 64 },
                    "gguf::tensor::name_too_long",
                    long_at.name,
                )],
                move |g| assert_eq!(g.tensor(&name).unwrap().info.nbytes(), Some(16)),
            )),
    );

    for n_dims in [5, u32::MAX] {
        let t = Tensor { n_dims: Some(n_dims), ..tensor("t0", F32, &[1; 5]) };
        cases.push(
            case(&format!("TENSORS_BAD_N_DIMS ({n_dims})"), tensors_file(vec![t]).build()).all(
                err(
                    ErrorKind::TooManyDims { n_dims, max: 4 },
                    "gguf::tensor::too_many_dims",
                    t0(5).n_dims,
                    format!("{t0_path} n_dims"),
                ),
            ),
        );
    }

    cases.push(
        case("TENSORS_BAD_SHAPE (every dim -1)", {
            tensors_file(vec![tensor("t0", F32, &[u64::MAX, u64::MAX])]).build()
        })
        .strict_lenient(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        ))
        // ggml reads dimensions as i64: -1 is rejected on its own.
        .llama(err(
            ErrorKind::DimTooLarge { value: u64::MAX },
            "gguf::tensor::dim_too_large",
            t0(2).ne,
            format!("{t0_path} ne[0]"),
        )),
    );

    // Both tensors [4, 0] at offset 0. Tensor 0 is 8 + 2 + 4 + 16 + 4 + 8 = 42 bytes long.
    let t1 = tensor_at(HEADER + 42, "t1", 2);
    cases.push(
        case("TENSORS_ZERO_DIM", {
            tensors_file(vec![tensor("t0", F32, &[4, 0]), tensor("t1", F32, &[4, 0])]).build()
        })
        .strict(err(
            ErrorKind::ZeroDim,
            "gguf::tensor::zero_dim",
            t0(2).ne + 8,
            format!("{t0_path} ne[1]"),
        ))
        .llama(loads_clean(|g| {
            for t in g.tensor_infos() {
                assert_eq!((t.offset(), t.nbytes(), t.element_count()), (0, Some(0), 0));
            }
        }))
        .lenient(loads_warning(
            vec![
                tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", t0(2).ne + 8),
                tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", t1.ne + 8),
            ],
            |g| assert_eq!(g.tensor("t1").unwrap().info.nbytes(), Some(0)),
        )),
    );

    for n_dims in [2usize, 4] {
        let dims = vec![4 * i32::MAX as u64; n_dims];
        cases.push(
            case(
                &format!("TENSORS_NE_TOO_BIG ({n_dims} dims of 4*INT32_MAX)"),
                tensors_file(vec![tensor("t0", F32, &dims)]).build(),
            )
            .all(err(
                ErrorKind::ElementCountOverflow,
                "gguf::tensor::element_count_overflow",
                t0(n_dims as u64).ne,
                format!("{t0_path} ne"),
            )),
        );
    }

    // I64 with dims ~ (SIZE_MAX / 8)^(1/n) * 1.01: the element count fits, the bytes do not.
    for dims in [vec![2_328_901_439_305_830_891u64], vec![1_533_685_252; 2]] {
        let count = dims.iter().product::<u64>();
        assert!(count < i64::MAX as u64 && count.checked_mul(8).is_none());
        cases.push(
            case(
                &format!("TENSORS_NBYTES_TOO_BIG ({} dims)", dims.len()),
                tensors_file(vec![tensor("t0", I64, &dims)]).build(),
            )
            .all(err(
                ErrorKind::ByteSizeOverflow,
                "gguf::tensor::byte_size_overflow",
                t0(dims.len() as u64).ne,
                format!("{t0_path} ne"),
            )),
        );
    }

    // Unknown, negative and removed ggml types: rejected, except by the lenient profile, which
    // reads the tensor with an unknown size.
    for (label, code, kind, err_code) in [
        (
            "TENSORS_BAD_TYPE (43)",
            43,
            ErrorKind::UnknownGgmlType { code: 43 },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 ggml type 2^31",
            1 << 31,
            ErrorKind::UnknownGgmlType { code: 1 << 31 },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 ggml type -1",
            u32::MAX,
            ErrorKind::UnknownGgmlType { code: u32::MAX },
            "gguf::tensor::unknown_type",
        ),
        (
            "C6 removed type 4",
            4,
            ErrorKind::RemovedGgmlType { code: 4, name: "Q4_2" },
            "gguf::tensor::removed_type",
        ),
        (
            "C6 removed type 31",
            31,
            ErrorKind::RemovedGgmlType { code: 31, name: "Q4_0_4_4" },
            "gguf::tensor::removed_type",
        ),
        (
            "C6 removed type 36",
            36,
            ErrorKind::RemovedGgmlType { code: 36, name: "IQ4_NL_4_4" },
            "gguf::tensor::removed_type",
        ),
    ] {
        cases.push(
            case(label, tensors_file(vec![tensor("t0", code, &[32])]).build())
                .strict_llama(err(kind.clone(), err_code, t0(1).ty, format!("{t0_path} ggml_type")))
                .lenient(loads_warning(vec![tolerated(kind, err_code, t0(1).ty)], move |g| {
                    let t = g.tensor("t0").unwrap().info;
                    assert_eq!(t.ggml_type().code(), code);
                    assert_eq!((t.nbytes(), t.dims()), (None, &[32][..]));
                })),
        );
    }

    let t = Tensor { offset: Some(u64::MAX), ..tensor("t0", F32, &[4]) };
    cases.push(case("TENSORS_BAD_OFFSET (2^64-1)", header_padded(&tensors_file(vec![t]))).all(
        err(
            ErrorKind::OffsetOverflow,
            "gguf::layout::offset_overflow",
            t0(1).offset,
            format!("{t0_path} offset"),
        ),
    ));

    // Tensor 0 is 8 + 9 + 4 + 8 + 4 + 8 = 41 bytes: tensor 1's name is at 24 + 41 + 8 = 73.
    let dup = tensors_file(vec![tensor("my_tensor", F32, &[4]), tensor("my_tensor", F32, &[4])]);
    cases.push(
        case("TENSORS_DUPLICATE_NAME", dup.build())
            .strict_llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                73,
                format!("{} name", tensor_path(1, "my_tensor")),
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::DuplicateTensor { first: 0 },
                    "gguf::tensor::duplicate_name",
                    73,
                )],
                |g| {
                    let t = g.tensor("my_tensor").unwrap();
                    assert_eq!((t.index, t.info.offset()), (1, 32), "last wins");
                },
            )),
    );

    // general.alignment = 13 with a tensor: header only (test-gguf's TENSORS_* files have no
    // data), and the same with data.
    let align = kv_at(HEADER, "general.alignment");
    let b = GgufBuilder::new().kv("general.alignment", Value::Uint32(13)).tensor_info(tensor(
        "t0",
        F32,
        &[4],
    ));
    for (label, bytes, header_only) in
        [("TENSORS_BAD_ALIGN", header_padded(&b), true), ("DATA_BAD_ALIGN", b.build(), false)]
    {
        let mut c = case(label, bytes)
            .strict_llama(err(
                ErrorKind::BadAlignment { alignment: 13 },
                "gguf::metadata::bad_alignment",
                align.value,
                format!("{} value", kv_path(0, "general.alignment")),
            ))
            .lenient(loads_warning(
                vec![tolerated(
                    ErrorKind::BadAlignment { alignment: 13 },
                    "gguf::metadata::bad_alignment",
                    align.value,
                )],
                |g| {
                    assert_eq!(g.alignment(), 32);
                    assert_eq!(g.tensor("t0").unwrap().info.offset(), 0);
                },
            ));
        if header_only {
            c = c.header_only();
        }
        cases.push(c);
    }

    // Laid out with alignment 1 but no alignment key (so 32 applies): tensor 1's offset 12 is
    // misaligned. Tensor infos are 8 + 2 + 4 + 8 + 4 + 8 = 34 bytes: tensor 1 at 58, its offset
    // field at 84, the directory ends at 92.
    let b = GgufBuilder::new()
        .layout_alignment(1)
        .tensor_info(Tensor { data: Some(vec![0xAA; 12]), ..tensor("t0", F32, &[3]) })
        .tensor_info(Tensor { data: Some(vec![0xAA; 12]), ..tensor("t1", F32, &[3]) });
    let misaligned = err(
        ErrorKind::MisalignedOffset { offset: 12, alignment: 32 },
        "gguf::layout::misaligned",
        84,
        format!("{} offset", tensor_path(1, "t1")),
    );
    cases.push(
        case("TENSORS_INCONSISTENT_ALIGN", b.build_header())
            .header_only()
            .strict_llama(misaligned.clone())
            // Lenient reads on, and needs the padding to offset 96, which a header-only file
            // written with alignment 1 does not have.
            .lenient(err(
                ErrorKind::UnexpectedEof { needed: 4 },
                "gguf::input::unexpected_eof",
                tensor_at(58, "t1", 1).end,
                "padding",
            )),
    );
    cases.push(case("DATA_INCONSISTENT_ALIGN", b.build()).strict_llama(misaligned).lenient(
        loads_warning(
            vec![
                tolerated(
                    ErrorKind::MisalignedOffset { offset: 12, alignment: 32 },
                    "gguf::layout::misaligned",
                    84,
                ),
                // The 4 bytes from the directory's end (92) to 96 hold tensor 0's data.
                (WarningKind::NonZeroPadding, "gguf::layout::nonzero_padding", 92),
                // The file is 92 + 24 bytes; tensor 1 is read at 96 + 12 .. 96 + 24.
                tolerated(
                    ErrorKind::TensorOutOfBounds { end: 120, file_size: 116 },
                    "gguf::layout::out_of_bounds",
                    84,
                ),
            ],
            |g| assert_eq!(g.data_offset(), 96),
        ),
    ));

    // TENSORS_SUCCESS: names, types, shapes and offsets (header only, as test-gguf writes it).
    // Infos: 45 + 45 + 36 + 32 bytes after the header: the directory ends at 182, data at 192.
    let specs: [(&str, u32, &[u64], u64, u64); 4] = [
        ("t.f32", F32, &[4, 3], 0, 48),
        ("t.q4k", Q4_K, &[256, 2], 64, 288),
        ("t.i8", I8, &[7], 352, 7),
        ("t.scalar", F16, &[], 384, 2),
    ];
    let b = tensors_file(specs.iter().map(|(n, ty, dims, ..)| tensor(n, *ty, dims)).collect());
    cases.push(case("TENSORS_SUCCESS", header_padded(&b)).header_only().all(loads_clean(
        move |g| {
            assert_eq!((g.directory().directory_end(), g.data_offset()), (182, 192));
            assert_eq!(g.tensor_infos().len(), 4);
            for (i, t) in g.tensors().enumerate() {
                let (name, ty, dims, offset, nbytes) = specs[i];
                assert_eq!(t.name, name);
                assert_eq!(t.info.ggml_type().code(), ty);
                assert_eq!(t.info.dims(), dims);
                assert_eq!((t.info.offset(), t.info.nbytes()), (offset, Some(nbytes)));
                assert_eq!(t.info.abs_offset(), 192 + offset);
            }
        },
    )));

    // TENSORS_CUSTOM_ALIGN: alignment 1, packed without padding.
    let b = GgufBuilder::new()
        .kv("general.alignment", Value::Uint32(1))
        .tensor_info(tensor("t0", F32, &[3]))
        .tensor_info(tensor("t1", F32, &[3]))
        .tensor_info(tensor("t2", I8, &[5]));
    cases.push(case("TENSORS_CUSTOM_ALIGN", header_padded(&b)).header_only().all(loads_clean(
        |g| {
            assert_eq!(g.alignment(), 1);
            let offsets: Vec<u64> = g.tensor_infos().iter().map(|t| t.offset()).collect();
            assert_eq!(offsets, [0, 12, 24]);
            // The header, the 33-byte pair and three 34-byte infos: no padding at alignment 1.
            assert_eq!(g.data_offset(), HEADER + 33 + 3 * 34);
        },
    )));
    cases
}

// ----- test-gguf.cpp: data ------------------------------------------------------------------

/// Every tensor's data is where the directory says and holds the builder's pattern.
fn data_is_the_pattern(g: &Gguf<&[u8]>) {
    for (i, t) in g.tensors().enumerate() {
        let n = t.info.nbytes().unwrap();
        let start = t.info.abs_offset() as usize;
        assert_eq!(&g.bytes()[start..start + n as usize], &pattern(i, n)[..], "{}", t.name);
    }
}

fn data_cases() -> Vec<Case> {
    let t0 = tensor_at(HEADER, "t0", 1);
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    let mut cases = Vec::new();

    // 32 bytes of data at 64 (the directory ends at 58): the file is 96 bytes; cut one.
    let mut bytes = tensors_file(vec![tensor("t0", F32, &[8])]).build();
    assert_eq!(bytes.len(), 96);
    bytes.pop();
    let oob = ErrorKind::TensorOutOfBounds { end: 96, file_size: 95 };
    cases.push(
        case("DATA_NOT_ENOUGH_DATA", bytes)
            .strict_llama(err(
                oob.clone(),
                "gguf::layout::out_of_bounds",
                t0.offset,
                t0_offset.clone(),
            ))
            .lenient(loads_warning(
                vec![tolerated(oob, "gguf::layout::out_of_bounds", t0.offset)],
                |g| assert_eq!(g.tensor("t0").unwrap().info.abs_offset(), 64),
            )),
    );

    // Two I8 tensors of 0x7FFFFFFFFFFFFFC0 elements with 32 bytes of data: ggml's memory-size
    // sum overflowed here. Infos are 34 bytes: tensor 1's offset field is at 84, data at 96.
    let big = 0x7FFF_FFFF_FFFF_FFC0u64;
    let b = tensors_file(vec![
        Tensor { offset: Some(0), ..tensor("t0", I8, &[big]) },
        Tensor { offset: Some(big), ..tensor("t1", I8, &[big]) },
    ]);
    let mut bytes = header_padded(&b);
    bytes.extend((0..32u8).collect::<Vec<_>>());
    let oob0 = ErrorKind::TensorOutOfBounds { end: 96 + big, file_size: 128 };
    let oob1 = ErrorKind::TensorOutOfBounds { end: 96 + 2 * big, file_size: 128 };
    cases.push(
        case("DATA_MEM_SIZE_OVERFLOW", bytes)
            .strict_llama(err(
                oob0.clone(),
                "gguf::layout::out_of_bounds",
                t0.offset,
                t0_offset.clone(),
            ))
            .lenient(loads_warning(
                vec![
                    tolerated(oob0, "gguf::layout::out_of_bounds", t0.offset),
                    tolerated(oob1, "gguf::layout::out_of_bounds", 84),
                ],
                move |g| {
                    let sizes: Vec<_> = g.tensor_infos().iter().map(|t| t.nbytes()).collect();
                    assert_eq!(sizes, [Some(big), Some(big)]);
                },
            )),
    );

    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("t.f32", GgmlType::F32, &[4, 3])
        .tensor("t.q8_0", GgmlType::Q8_0, &[64])
        .tensor("t.i8", GgmlType::I8, &[5])
        .tensor_info(tensor("t.bf16", BF16, &[3, 2]));
    cases.push(case("DATA_SUCCESS", b.build()).all(loads_clean(|g| {
        let got: Vec<_> = g.tensor_infos().iter().map(|t| (t.offset(), t.nbytes())).collect();
        assert_eq!(got, [(0, Some(48)), (64, Some(68)), (160, Some(5)), (192, Some(12))]);
        data_is_the_pattern(g);
    })));

    let b = GgufBuilder::new()
        .kv("general.alignment", Value::Uint32(1))
        .tensor_info(tensor("t0", F32, &[3]))
        .tensor_info(tensor("t1", I8, &[5]))
        .tensor_info(tensor("t2", F16, &[3]));
    cases.push(case("DATA_CUSTOM_ALIGN", b.build()).all(loads_clean(|g| {
        let offsets: Vec<u64> = g.tensor_infos().iter().map(|t| t.offset()).collect();
        assert_eq!(offsets, [0, 12, 17]);
        data_is_the_pattern(g);
    })));
    cases
}

// ----- peers.md §4: bug classes -------------------------------------------------------------

fn class_cases() -> Vec<Case> {
    let t0 = |n| tensor_at(HEADER, "t0", n);
    let t0_path = tensor_path(0, "t0");
    let a = kv_at(HEADER, "a");
    let k0 = kv_at(HEADER, "my_key_0");
    let mut cases = Vec::new();

    // 1. count x size overflow.
    for (label, ty, dims) in [
        ("C1 [2^32, 2^32] F32 wraps to 0 elements", F32, vec![1u64 << 32, 1 << 32]),
        ("C1 [256, 2^56] Q4_K wraps to 0 elements", Q4_K, vec![256, 1 << 56]),
    ] {
        cases.push(case(label, tensors_file(vec![tensor("t0", ty, &dims)]).build()).all(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        )));
    }
    cases.push(
        case("C1 byte size overflow: F16 [2^62, 2]", {
            tensors_file(vec![tensor("t0", F16, &[1 << 62, 2])]).build()
        })
        .strict_lenient(err(
            ErrorKind::ByteSizeOverflow,
            "gguf::tensor::byte_size_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        ))
        // 2^63 elements: past INT64_MAX, which ggml checks first.
        .llama(err(
            ErrorKind::ElementCountOverflow,
            "gguf::tensor::element_count_overflow",
            t0(2).ne,
            format!("{t0_path} ne"),
        )),
    );
    // I64 with 2^61 - 1 elements is 2^64 - 8 bytes: GGML_PAD wraps it to 0. ggml (d99724f2)
    // accepts this file with no_alloc: a deliberate difference (D4, docs/parser.md).
    let b = tensors_file(vec![tensor("t0", I64, &[(1 << 61) - 1])]);
    cases.push(case("C1 GGML_PAD wrap: I64 [2^61 - 1]", header_padded(&b)).all(err(
        ErrorKind::OffsetOverflow,
        "gguf::layout::offset_overflow",
        t0(1).offset,
        format!("{t0_path} offset"),
    )));
    // Running sum: 2^63 (tensor 0, padded) + 2^63 (tensor 1, padded) = 2^64, while tensor 1's
    // own offset + size (2^64 - 8) still fits.
    let b = tensors_file(vec![
        Tensor { offset: Some(0), ..tensor("t0", I8, &[(1 << 63) - 1]) },
        Tensor { offset: Some(1 << 63), ..tensor("t1", I8, &[(1 << 63) - 8]) },
    ]);
    // ggml refuses tensor 0 already: its check `INT64_MAX / ne[1] <= ne[0]` holds for
    // 2^63 - 1 elements.
    cases.push(
        case("C1 running-sum offset overflow", header_padded(&b))
            .header_only()
            .strict_lenient(err(
                ErrorKind::OffsetOverflow,
                "gguf::layout::offset_overflow",
                84,
                format!("{} offset", tensor_path(1, "t1")),
            ))
            .llama(err(
                ErrorKind::ElementCountOverflow,
                "gguf::tensor::element_count_overflow",
                t0(1).ne,
                format!("{t0_path} ne"),
            )),
    );

    // 2. unbounded allocation from declared counts and lengths.
    let tiny = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 0, declared: 1 << 62, elems: vec![] })
        .build();
    assert_eq!(tiny.len(), 49);
    cases.push(case("C2 49-byte file declaring 2^62 array elements", tiny.clone()).all(err(
        ErrorKind::ArrayTooLong { len: 1 << 62, max: MAX_ARRAY },
        "gguf::limits::array_too_long",
        a.value + 4,
        format!("{} value count", kv_path(0, "a")),
    )));
    cases.push(
        case("C2 49-byte file declaring 2^62 array elements, no limits", tiny)
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: 1 << 62 },
                "gguf::input::unexpected_eof",
                49,
                format!("{}[0]", kv_path(0, "a")),
            )),
    );
    let many = GgufBuilder::new().tensor_count(1 << 63).build();
    cases.push(case("C2 2^63 tensors", many.clone()).all(err(
        ErrorKind::TooManyTensors { count: 1 << 63, max: MAX_COUNT },
        "gguf::limits::too_many_tensors",
        8,
        "header.tensor_count",
    )));
    // Indexes are u32: that is the limit in force whatever Limits says.
    cases.push(
        case("C2 2^63 tensors, no limits", many).limits(sipllm_testkit::unlimited_limits()).all(
            err(
                ErrorKind::TooManyTensors { count: 1 << 63, max: u32::MAX.into() },
                "gguf::limits::too_many_tensors",
                8,
                "header.tensor_count",
            ),
        ),
    );
    let many = GgufBuilder::new().kv_count(u64::MAX).build();
    cases.push(
        case("C2 2^64-1 pairs, no limits", many).limits(sipllm_testkit::unlimited_limits()).all(
            err(
                ErrorKind::TooManyKvs { count: u64::MAX, max: u32::MAX.into() },
                "gguf::limits::too_many_kvs",
                16,
                "header.kv_count",
            ),
        ),
    );
    let kv = Value::Array(
        8,
        vec![Value::str("ok"), Value::StringWithLen { declared: u64::MAX, bytes: vec![] }],
    );
    cases.push(
        // The payload is at 49: element 0 is 8 + 2 bytes, element 1's length at 59.
        case("C2 string length 2^64-1 in an array", GgufBuilder::new().kv("a", kv).build()).all(
            err(
                ErrorKind::StringTooLong { len: u64::MAX, max: MAX_STRING },
                "gguf::limits::string_too_long",
                59,
                format!("{}[1]", kv_path(0, "a")),
            ),
        ),
    );
    let key_len = 0xFFFF_FFFF_FFFFu64;
    let huge_key = raw_kvs(1, &[&key_len.to_le_bytes(), b"abc"]);
    cases.push(case("C2 key length 0xFFFFFFFFFFFF", huge_key.clone()).all(err(
        ErrorKind::StringTooLong { len: key_len, max: MAX_STRING },
        "gguf::limits::string_too_long",
        HEADER,
        "metadata[0] key",
    )));
    cases.push(
        case("C2 key length 0xFFFFFFFFFFFF, no limits", huge_key)
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: key_len - 3 },
                "gguf::input::unexpected_eof",
                HEADER + 8 + 3,
                "metadata[0]",
            )),
    );

    // 3. fixed-size arrays with file-controlled counts: n_dims (TENSORS_BAD_N_DIMS); 4 is fine.
    cases.push(
        case(
            "C3 n_dims 4 is the maximum",
            tensors_file(vec![tensor("t0", F32, &[2, 2, 2, 2])]).build(),
        )
        .all(loads_clean(|g| {
            assert_eq!(g.tensor("t0").unwrap().info.shape().as_slice(), &[2, 2, 2, 2]);
            assert_eq!(g.tensor("t0").unwrap().info.nbytes(), Some(64));
        })),
    );

    // 4. offsets not checked against the file.
    let b = tensors_file(vec![tensor("t0", F32, &[8])]);
    let oob = ErrorKind::TensorOutOfBounds { end: 64 + 32, file_size: 64 };
    cases.push(
        case("C4 tensor data past EOF", header_padded(&b))
            .strict_llama(err(
                oob.clone(),
                "gguf::layout::out_of_bounds",
                t0(1).offset,
                format!("{t0_path} offset"),
            ))
            .lenient(loads_warning(
                vec![tolerated(oob, "gguf::layout::out_of_bounds", t0(1).offset)],
                |_| {},
            )),
    );
    let b = tensors_file(vec![Tensor {
        offset: Some(0u64.wrapping_sub(64)),
        ..tensor("t0", F32, &[4])
    }]);
    cases.push(
        // The relative end (2^64 - 48) fits; the absolute start (64 + 2^64 - 64) does not.
        case("C4 data offset + offset overflows", header_padded(&b))
            .strict_lenient(err(
                ErrorKind::OffsetOverflow,
                "gguf::layout::offset_overflow",
                t0(1).offset,
                format!("{t0_path} offset"),
            ))
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 0u64.wrapping_sub(64), expected: 0 },
                "gguf::layout::not_contiguous",
                t0(1).offset,
                format!("{t0_path} offset"),
            )),
    );

    // 5. type confusion: general.alignment (kv_cases); a value read as another type.
    let kvs = vec![
        (
            "tokenizer.ggml.scores",
            Value::Array(1, vec![Value::Int8(1), Value::Int8(-2), Value::Int8(3)]),
        ),
        ("llama.block_count", Value::Int32(-1)),
    ];
    cases.push(case("C5 declared vs assumed type", build_kvs(&kvs).build()).all(loads_clean(
        |g| {
            let scores = g.get_array("tokenizer.ggml.scores").unwrap();
            assert_eq!(scores.values::<f32>().map(|_| ()), None, "INT8 is not read as f32");
            assert_eq!(scores.to_vec::<u8>(), None);
            assert_eq!(scores.to_vec::<i8>(), Some(vec![1, -2, 3]));
            assert_eq!(g.get("tokenizer.ggml.scores").unwrap().as_f64(), None);
            assert_eq!(g.get_u64("llama.block_count"), None, "-1 is not a count");
            assert_eq!(g.get("llama.block_count").unwrap().as_i64(), Some(-1));
            assert_eq!(g.get_str("llama.block_count"), None);
            assert_eq!(g.get_array("llama.block_count").map(|_| ()), None);
        },
    )));

    // 6. unvalidated enum ids (ggml types: tensor_cases).
    cases.push(
        case("C6 value type -1", {
            GgufBuilder::new()
                .kv("my_key_0", Value::Raw { type_code: u32::MAX, bytes: vec![] })
                .build()
        })
        .all(err(
            ErrorKind::UnknownValueType { code: u32::MAX },
            "gguf::metadata::unknown_value_type",
            k0.ty,
            format!("{} type", kv_path(0, "my_key_0")),
        )),
    );
    cases.push(
        case("C6 array element type 13", {
            let v = Value::ArrayWithLen { elem_type: 13, declared: 1, elems: vec![] };
            GgufBuilder::new().kv("my_key_0", v).build()
        })
        .all(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.value,
            format!("{} value elem_type", kv_path(0, "my_key_0")),
        )),
    );
    cases.push(
        case("C6 nested array element type 13", {
            let inner = Value::ArrayWithLen { elem_type: 13, declared: 0, elems: vec![] };
            GgufBuilder::new().kv("my_key_0", Value::Array(9, vec![inner])).build()
        })
        // The inner array's header follows the outer element type and count.
        .strict_lenient(err(
            ErrorKind::UnknownValueType { code: 13 },
            "gguf::metadata::unknown_value_type",
            k0.value + 12,
            format!("{}[0]", kv_path(0, "my_key_0")),
        ))
        .llama(err(
            ErrorKind::NestedArray,
            "gguf::metadata::nested_array",
            k0.value,
            format!("{} value elem_type", kv_path(0, "my_key_0")),
        )),
    );
    // v1 has value types 0-9 only; its header is 16 bytes and its string lengths 4 bytes.
    cases.push(
        case(
            "C6 value type 10 in v1",
            GgufBuilder::new().version(1).kv("k", Value::Uint64(1)).build(),
        )
        .opts(|o| o.with_v1(true))
        .strict_lenient(err(
            ErrorKind::UnknownValueType { code: 10 },
            "gguf::metadata::unknown_value_type",
            16 + 4 + 1,
            format!("{} type", kv_path(0, "k")),
        ))
        .llama(err(
            ErrorKind::VersionOneDisabled,
            "gguf::header::v1_disabled",
            4,
            "header.version",
        )),
    );

    // 7. unbounded recursion. The outer array's element type is at 37, its count at 41, then
    // each level's 12-byte header: level 2 at 49, ..., level 9 at 49 + 7 * 12 = 133.
    let nested_error = || {
        err(
            ErrorKind::NestingTooDeep { max: 8 },
            "gguf::limits::nesting_too_deep",
            133,
            format!("{}{}", kv_path(0, "a"), "[0]".repeat(8)),
        )
    };
    let llama_nested = || {
        err(
            ErrorKind::NestedArray,
            "gguf::metadata::nested_array",
            a.value,
            format!("{} value elem_type", kv_path(0, "a")),
        )
    };
    for (label, depth) in
        [("C7 arrays nested 5000 deep", 5000), ("C7 one past Limits::max_depth", 9)]
    {
        cases.push(
            case(label, GgufBuilder::new().kv("a", nested(depth)).build())
                .strict_lenient(nested_error())
                .llama(llama_nested()),
        );
    }
    let depth_is = |depth: usize| {
        loads_clean(move |g| {
            // Walk down iteratively (a recursive walk would itself be the bug under test).
            let mut view = g.get_array("a").unwrap();
            for level in 1..depth {
                assert_eq!((view.elem_type(), view.len()), (ValueType::Array, 1), "level {level}");
                view = view.get(0).unwrap().as_array().unwrap();
            }
            assert_eq!(view.to_vec::<u8>(), Some(vec![7]));
        })
    };
    cases.push(
        case("C7 exactly Limits::max_depth", GgufBuilder::new().kv("a", nested(8)).build())
            .strict_lenient(depth_is(8))
            .llama(llama_nested()),
    );
    // Raising the limit is the caller's choice; the accessors must not recurse per level then
    // either (they overflowed the stack here). Walking all 5000 levels costs O(depth^2) (each
    // level's view is delimited by walking it), so only the top levels are descended.
    let deep = Limits { max_depth: 5000, ..Limits::default() };
    let deep_loads = || {
        loads_clean(|g| {
            let mut view = g.get_array("a").unwrap();
            for level in 0..3 {
                // Below this level: (5000 - level - 1) 12-byte headers and the byte 7.
                let payload = view.payload();
                assert_eq!(payload.len(), (5000 - level - 1) * 12 + 1, "level {level}");
                assert_eq!(payload.last(), Some(&7));
                view = view.iter().next().unwrap().as_array().unwrap();
            }
        })
    };
    cases.push(
        case(
            "C7 arrays nested 5000 deep, max_depth 5000",
            GgufBuilder::new().kv("a", nested(5000)).build(),
        )
        .limits(deep)
        .strict_lenient(deep_loads())
        .llama(llama_nested()),
    );

    // 8. arithmetic edge cases (alignment 0 and 48: kv_cases).
    for (label, dims, j) in [
        ("C8 zero in ne[1] (ggml divided by it)", [4u64, 0, 3, 5], 1),
        ("C8 zero in ne[2]", [4, 1, 0, 2], 2),
        ("C8 zero in ne[3]", [4, 1, 1, 0], 3),
    ] {
        let at = t0(4).ne + 8 * j;
        cases.push(
            case(label, tensors_file(vec![tensor("t0", F32, &dims)]).build())
                .strict(err(
                    ErrorKind::ZeroDim,
                    "gguf::tensor::zero_dim",
                    at,
                    format!("{t0_path} ne[{j}]"),
                ))
                .llama(loads_clean(|g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), Some(0))))
                .lenient(loads_warning(
                    vec![tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", at)],
                    |g| assert_eq!(g.tensor("t0").unwrap().info.element_count(), 0),
                )),
        );
    }

    // 9. work amplification: a declared count with little payload fails at the end of the
    // input, after work proportional to the bytes present (see also the decoder-call counts in
    // `declared_counts_cost_nothing_before_their_bytes_arrive`).
    let sixteen: Vec<Value> = (0..16).map(Value::Uint8).collect();
    let b = GgufBuilder::new()
        .kv("a", Value::ArrayWithLen { elem_type: 0, declared: 1 << 40, elems: sixteen });
    cases.push(case("C9 u8 array of 2^40 with 16 bytes", b.build()).all(err(
        ErrorKind::ArrayTooLong { len: 1 << 40, max: MAX_ARRAY },
        "gguf::limits::array_too_long",
        a.value + 4,
        format!("{} value count", kv_path(0, "a")),
    )));
    cases.push(
        case("C9 u8 array of 2^40 with 16 bytes, no limits", b.build())
            .limits(sipllm_testkit::unlimited_limits())
            .all(err(
                ErrorKind::UnexpectedEof { needed: (1 << 40) - 16 },
                "gguf::input::unexpected_eof",
                49 + 16,
                format!("{}[16]", kv_path(0, "a")),
            )),
    );
    let three = vec![Value::str("x"), Value::str("yz"), Value::str("")];
    // 2^25 strings need at least 2^25 length fields (256 MiB): more than the header limit
    // allows, so the count fails at once (the count field is at 41), before any byte of the
    // payload is asked for.
    let v = Value::ArrayWithLen { elem_type: 8, declared: 1 << 25, elems: three.clone() };
    cases.push(
        case(
            "C9 string array of 2^25 (under the limit) with 3 strings",
            GgufBuilder::new().kv("a", v).build(),
        )
        .all(err(
            ErrorKind::HeaderTooLarge { max: Limits::default().max_header_bytes },
            "gguf::limits::header_too_large",
            41,
            format!("{} value count", kv_path(0, "a")),
        )),
    );
    // Without limits, the walk stops where the bytes end.
    let v = Value::ArrayWithLen { elem_type: 8, declared: 1 << 40, elems: three.clone() };
    // The payload is at 49: 9 + 10 + 8 bytes, then element 3's length is missing.
    cases.push(
        case(
            "C9 string array of 2^40 with 3 strings, no limits",
            GgufBuilder::new().kv("a", v).build(),
        )
        .limits(sipllm_testkit::unlimited_limits())
        .all(err(
            ErrorKind::UnexpectedEof { needed: 8 },
            "gguf::input::unexpected_eof",
            49 + 27,
            format!("{}[3]", kv_path(0, "a")),
        )),
    );
    cases
}

/// Every leaf of a value, walked iteratively, exercising every array accessor on the way.
fn walk(v: MetaValue<'_>) -> Vec<MetaValue<'_>> {
    let mut leaves = Vec::new();
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        let Some(a) = v.as_array() else {
            leaves.push(v);
            continue;
        };
        let elems: Vec<_> = a.iter().collect();
        assert_eq!(elems.len() as u64, a.len());
        assert_eq!(a.get(a.len()), None);
        for (i, e) in elems.iter().enumerate() {
            assert_eq!(a.get(i as u64).as_ref(), Some(e));
        }
        assert_eq!(
            a.strings().map(|s| s.count() as u64),
            (a.elem_type() == ValueType::String).then_some(a.len())
        );
        let fixed = [
            a.values::<u8>().map(|v| v.count()),
            a.values::<i8>().map(|v| v.count()),
            a.values::<u16>().map(|v| v.count()),
            a.values::<i16>().map(|v| v.count()),
            a.values::<u32>().map(|v| v.count()),
            a.values::<i32>().map(|v| v.count()),
            a.values::<f32>().map(|v| v.count()),
            a.values::<bool>().map(|v| v.count()),
            a.values::<u64>().map(|v| v.count()),
            a.values::<i64>().map(|v| v.count()),
            a.values::<f64>().map(|v| v.count()),
        ];
        let typed: Vec<usize> = fixed.iter().flatten().copied().collect();
        let expected: Vec<usize> =
            if a.elem_type().fixed_size().is_some() { vec![a.len() as usize] } else { vec![] };
        assert_eq!(typed, expected, "typed views of {:?}", a.elem_type());
        todo.extend(elems.into_iter().rev());
    }
    leaves
}

/// A file with one of almost every problem the lenient profile tolerates.
fn weird_file() -> Vec<u8> {
    let nested = Value::Array(
        9,
        vec![
            Value::Array(8, vec![Value::str("a"), Value::String(vec![0xFF])]),
            Value::Array(12, vec![]),
        ],
    );
    GgufBuilder::new()
        .kv("dup", Value::Uint32(1))
        .kv("dup", Value::str("second"))
        .kv("bad.utf8", Value::String(vec![0xFF, 0xFE, b'a']))
        .kv_bytes(&[b'k', 0xC3], Value::Uint8(1))
        .kv(
            "bools",
            Value::Array(
                7,
                [2u8, 0, 1].map(|b| Value::Raw { type_code: 7, bytes: vec![b] }).to_vec(),
            ),
        )
        .kv("nested", nested)
        .kv("general.alignment", Value::Int32(8))
        .kv("empty_arr", Value::Array(8, vec![]))
        .tensor_info(tensor("weird\x01", 43, &[4]))
        .tensor_info(tensor("removed", 31, &[32]))
        .tensor_info(tensor("q8", Q8_0, &[33]))
        .tensor_info(tensor("zero", F32, &[0, 3]))
        .tensor_info(Tensor { name: vec![0xFF, b'x'], ..tensor("", F32, &[4]) })
        .tensor_info(tensor("dup_t", F32, &[2]))
        .tensor_info(tensor("dup_t", F32, &[2]))
        .build()
}

fn walk_weird_file(g: &Gguf<&[u8]>) {
    let codes: Vec<&str> = g.warnings().iter().map(Warning::code).collect();
    assert_eq!(
        codes,
        [
            "gguf::metadata::duplicate_key",
            "gguf::metadata::invalid_utf8_value",
            "gguf::metadata::invalid_utf8_key",
            "gguf::metadata::key_not_ascii",
            "gguf::metadata::invalid_bool",
            "gguf::metadata::invalid_utf8_value",
            "gguf::metadata::alignment_type",
            "gguf::tensor::unknown_type",
            "gguf::tensor::removed_type",
            "gguf::tensor::not_block_multiple",
            "gguf::tensor::zero_dim",
            "gguf::tensor::invalid_utf8_name",
            "gguf::tensor::duplicate_name",
        ]
    );
    for w in g.warnings() {
        assert!(!w.help().is_empty() && !w.message().is_empty());
    }
    // Every value, through every accessor.
    let leaves: usize = g.metadata().map(|e| walk(e.value).len()).sum();
    assert_eq!(leaves, 10);
    assert_eq!(g.metadata().len(), 8);
    assert_eq!(g.get_str("dup"), Some("second"), "last wins");
    let bad = g.get("bad.utf8").unwrap();
    assert_eq!(bad.as_str(), None);
    assert_eq!(bad.as_meta_str().unwrap().as_bytes(), [0xFF, 0xFE, b'a']);
    assert_eq!(bad.as_meta_str().unwrap().to_string_lossy(), "\u{fffd}\u{fffd}a");
    let e3 = g.metadata().nth(3).unwrap();
    assert_eq!((e3.key.as_bytes(), e3.key.as_str()), (&[b'k', 0xC3][..], None));
    assert_eq!(e3.value, MetaValue::Uint8(1));
    assert_eq!(g.get_array("bools").unwrap().to_vec::<bool>(), Some(vec![true, false, true]));
    let inner: Vec<_> =
        g.get_array("nested").unwrap().iter().map(|v| v.as_array().unwrap()).collect();
    let strings: Vec<&[u8]> = inner[0].strings().unwrap().map(|s| s.as_bytes()).collect();
    assert_eq!(strings, [&b"a"[..], &[0xFF][..]]);
    assert_eq!((inner[1].elem_type(), inner[1].len()), (ValueType::Float64, 0));
    assert_eq!(g.alignment(), 32);
    assert_eq!(g.get("general.alignment"), Some(MetaValue::Int32(8)));
    assert_eq!(g.get_array("empty_arr").unwrap().strings().unwrap().count(), 0);
    // Every tensor, through every accessor.
    let got: Vec<_> = g
        .tensors()
        .map(|t| {
            (
                t.info.ggml_type().name(),
                t.info.nbytes(),
                t.info.element_count(),
                t.info.shape().len(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("unknown", None, 4, 1),
            ("Q4_0_4_4", None, 32, 1),
            ("Q8_0", None, 33, 1),
            ("F32", Some(0), 0, 2),
            ("F32", Some(16), 4, 1),
            ("F32", Some(8), 2, 1),
            ("F32", Some(8), 2, 1),
        ]
    );
    for t in g.tensors() {
        assert!(!t.info.ggml_type().to_string().is_empty());
        assert!(t.info.abs_offset() >= g.data_offset());
    }
    assert_eq!(g.tensor("weird\u{1}").unwrap().index, 0);
    assert_eq!(g.tensor("dup_t").unwrap().index, 6, "last wins");
    assert_eq!(g.tensors().nth(4).unwrap().name.as_bytes(), [0xFF, b'x']);
    assert_eq!(g.tensor("nope").map(|t| t.index), None);
    assert_eq!(g.get("nope"), None);
}

fn escape_and_differential_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // 10. asserts used as validation: the lenient profile reads everything, and every accessor
    // answers (without panicking) on what it read. "dup" pair 0 is 8 + 3 + 4 + 4 = 19 bytes:
    // pair 1's key is at 24 + 19 + 8 = 51.
    cases.push(
        case("C10 lenient file with every tolerated problem, every accessor", weird_file())
            .strict_llama(err(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                51,
                r#"metadata[1] "dup" key"#,
            ))
            .lenient(loads(walk_weird_file)),
    );

    // 11. terminal escapes and bidi controls in keys and names reach messages escaped.
    let esc = "a\x1b[2Jb\x07";
    cases.push(
        case("C11 escape sequences in a duplicate key", {
            GgufBuilder::new().kv(esc, Value::Uint8(1)).kv(esc, Value::Uint8(2)).build()
        })
        // Pair 0 is 8 + 7 + 4 + 1 = 20 bytes: pair 1's key is at 52.
        .strict_llama(err(
            ErrorKind::DuplicateKey { first: 0 },
            "gguf::metadata::duplicate_key",
            52,
            r#"metadata[1] "a\u{1b}[2Jb\u{7}" key"#,
        ))
        .lenient(loads_warning(
            vec![
                (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 32),
                tolerated(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    52,
                ),
                (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 52),
            ],
            |g| assert_eq!(g.get_u64(esc), Some(2)),
        )),
    );
    let name = "\x1b]0;pwned\x07\n";
    cases.push(
        case("C11 escape sequences in a duplicate tensor name", {
            tensors_file(vec![tensor(name, F32, &[4]), tensor(name, F32, &[4])]).build()
        })
        // Tensor 0 is 8 + 11 + 4 + 8 + 4 + 8 = 43 bytes: tensor 1's name is at 24 + 43 + 8.
        .strict_llama(err(
            ErrorKind::DuplicateTensor { first: 0 },
            "gguf::tensor::duplicate_name",
            75,
            r#"tensor[1] "\u{1b}]0;pwned\u{7}\n" name"#,
        ))
        .lenient(loads_warning(
            vec![tolerated(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                75,
            )],
            |_| {},
        )),
    );
    // "x", U+202E RIGHT-TO-LEFT OVERRIDE, "y", then an invalid byte.
    let key = b"x\xE2\x80\xAEy\xFF";
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::Key, valid_up_to: 5 };
    cases.push(
        case("C11 bidi override and invalid UTF-8 in a key", {
            GgufBuilder::new().kv_bytes(key, Value::Uint8(1)).build()
        })
        .strict(err(
            invalid.clone(),
            "gguf::metadata::invalid_utf8_key",
            32,
            "metadata[0] \"x\\u{202e}y\u{fffd}\" key",
        ))
        .llama(loads_warning(
            vec![(WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32)],
            |_| {},
        ))
        .lenient(loads_warning(
            vec![
                tolerated(invalid, "gguf::metadata::invalid_utf8_key", 32),
                (WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32),
            ],
            move |g| assert_eq!(g.metadata().next().unwrap().key.as_bytes(), key),
        )),
    );
    cases.push(
        case("C11 escape sequence as the magic", GgufBuilder::new().magic(*b"\x1b[2J").build())
            .all(err(
                ErrorKind::BadMagic { found: *b"\x1b[2J" },
                "gguf::header::bad_magic",
                0,
                "header.magic",
            )),
    );

    // 12. parser differentials: one file, three documented answers.
    let b = GgufBuilder::new()
        .endian(Endian::Big)
        .kv("general.name", Value::str("be"))
        .kv("n", Value::Uint32(7))
        .kv("xs", Value::Array(11, vec![Value::Int64(-2), Value::Int64(3)]))
        .tensor("t0", GgmlType::F32, &[4]);
    let big_endian_loads = || {
        loads_clean(|g| {
            assert_eq!((g.endian(), g.version()), (Endian::Big, 3));
            assert_eq!(g.get_str("general.name"), Some("be"));
            assert_eq!(g.get_u64("n"), Some(7));
            assert_eq!(g.get_array("xs").unwrap().to_vec::<i64>(), Some(vec![-2, 3]));
            assert_eq!(g.tensor("t0").unwrap().info.dims(), [4]);
        })
    };
    cases.push(
        case("C12 big-endian v3", b.build())
            .strict(big_endian_loads())
            .llama(err(
                ErrorKind::EndianMismatch { version: 0x0300_0000 },
                "gguf::header::endian_mismatch",
                4,
                "header.version",
            ))
            .lenient(big_endian_loads()),
    );
    let (k, v) = nested_kv();
    let nested_loads = || loads_clean(values_round_trip(vec![nested_kv()]));
    cases.push(
        case("C12 nested arrays", GgufBuilder::new().kv(k, v).build())
            .strict_lenient(nested_loads())
            .llama(err(
                ErrorKind::NestedArray,
                "gguf::metadata::nested_array",
                kv_at(HEADER, k).value,
                format!("{} value elem_type", kv_path(0, k)),
            )),
    );
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: 1 };
    let at = kv_at(HEADER, "k").value + 8;
    cases.push(
        case(
            "C12 invalid UTF-8 value",
            GgufBuilder::new().kv("k", Value::String(vec![b'a', 0xFF])).build(),
        )
        .strict(err(
            invalid.clone(),
            "gguf::metadata::invalid_utf8_value",
            at,
            format!("{} value", kv_path(0, "k")),
        ))
        .llama(loads_clean(|g| {
            assert_eq!(g.get("k").unwrap().as_meta_str().unwrap().as_bytes(), b"a\xFF")
        }))
        .lenient(loads_warning(
            vec![tolerated(invalid, "gguf::metadata::invalid_utf8_value", at)],
            |_| {},
        )),
    );
    let invalid = ErrorKind::InvalidUtf8 { field: StrField::TensorName, valid_up_to: 1 };
    let t = Tensor { name: vec![b'a', 0xFF], ..tensor("", F32, &[4]) };
    cases.push(
        case("C12 invalid UTF-8 tensor name", tensors_file(vec![t]).build())
            .strict(err(
                invalid.clone(),
                "gguf::tensor::invalid_utf8_name",
                32,
                "tensor[0] \"a\u{fffd}\" name",
            ))
            .llama(loads_clean(|g| {
                assert_eq!(g.tensors().next().unwrap().name.as_bytes(), b"a\xFF")
            }))
            .lenient(loads_warning(
                vec![tolerated(invalid, "gguf::tensor::invalid_utf8_name", 32)],
                |_| {},
            )),
    );
    let name64 = "m".repeat(64);
    let at = tensor_at(HEADER, &name64, 1).name;
    let warned = || {
        loads_warning(
            vec![(WarningKind::NameRejectedByLlamaCpp, "gguf::tensor::name_64_bytes", at)],
            |_| {},
        )
    };
    cases.push(
        case("C12 tensor name of 64 bytes", tensors_file(vec![tensor(&name64, F32, &[4])]).build())
            .strict_lenient(warned())
            .llama(err(
                ErrorKind::NameTooLong { len: 64, max: 63 },
                "gguf::tensor::name_too_long",
                at,
                format!("{} name", tensor_path(0, &name64)),
            )),
    );

    // Layout: two 34-byte infos; tensor 0's offset field at 50, tensor 1's at 84.
    let t1_offset = format!("{} offset", tensor_path(1, "t1"));
    let two = |o0: u64, o1: u64, n0: u64| {
        tensors_file(vec![
            Tensor { offset: Some(o0), ..tensor("t0", F32, &[n0]) },
            Tensor { offset: Some(o1), ..tensor("t1", F32, &[4]) },
        ])
        .build()
    };
    let gap = || {
        loads_warning(vec![(WarningKind::TensorGap { gap: 32 }, "gguf::layout::gap", 84)], |_| {})
    };
    cases.push(case("C12 gap between tensors", two(0, 64, 4)).strict_lenient(gap()).llama(err(
        ErrorKind::NonContiguousOffset { offset: 64, expected: 32 },
        "gguf::layout::not_contiguous",
        84,
        t1_offset.clone(),
    )));
    let out_of_order =
        || loads_warning(vec![(WarningKind::OutOfOrder, "gguf::layout::out_of_order", 84)], |_| {});
    cases.push(
        case("C12 data out of directory order", two(32, 0, 4))
            .strict_lenient(out_of_order())
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 32, expected: 0 },
                "gguf::layout::not_contiguous",
                50,
                format!("{} offset", tensor_path(0, "t0")),
            )),
    );
    cases.push(
        case("C12 overlapping tensors", two(0, 0, 8))
            .strict(err(
                ErrorKind::TensorOverlap { other: 0 },
                "gguf::layout::overlap",
                84,
                t1_offset.clone(),
            ))
            .llama(err(
                ErrorKind::NonContiguousOffset { offset: 0, expected: 32 },
                "gguf::layout::not_contiguous",
                84,
                t1_offset,
            ))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::TensorOverlap { other: 0 }, "gguf::layout::overlap", 84)],
                |_| {},
            )),
    );
    let t0_ne0 = format!("{} ne[0]", tensor_path(0, "t0"));
    let kind = ErrorKind::NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 };
    let ne0 = tensor_at(HEADER, "t0", 1).ne;
    cases.push(
        case(
            "C12 row not a multiple of the block size",
            tensors_file(vec![tensor("t0", Q8_0, &[33])]).build(),
        )
        .strict_llama(err(kind.clone(), "gguf::tensor::not_block_multiple", ne0, t0_ne0))
        .lenient(loads_warning(
            vec![tolerated(kind, "gguf::tensor::not_block_multiple", ne0)],
            |g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), None),
        )),
    );
    // ggml cuts tensor names at their first NUL (ggml_set_name) and compares them with strcmp:
    // "a\0x" and "a\0y" are one name to llama.cpp. Tensor 0 is 8 + 3 + 4 + 8 + 4 + 8 = 35
    // bytes: tensor 1's name is at 24 + 35 + 8 = 67.
    let nul_names = tensors_file(vec![tensor("a\0x", F32, &[4]), tensor("a\0y", F32, &[4])]);
    // Strict refuses the NUL; lenient loads both, and says llama.cpp would cut the names there.
    let nul = |at| tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", at);
    cases.push(
        case("C12 tensor names equal up to a NUL", nul_names.build())
            .strict(err(
                ErrorKind::NulInName,
                "gguf::tensor::nul_in_name",
                32,
                r#"tensor[0] "a\0x" name"#,
            ))
            .lenient(loads_warning(vec![nul(32), nul(67)], |g| {
                assert_eq!(g.tensor("a\0x").unwrap().index, 0);
                assert_eq!(g.tensor("a\0y").unwrap().index, 1);
                assert_eq!(g.tensor("a").map(|t| t.index), None);
            }))
            .llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                67,
                r#"tensor[1] "a\0y" name"#,
            )),
    );
    // Keys, by contrast, are std::strings compared whole when ggml looks for duplicates: these
    // are two keys to llama.cpp (it finds both under "a", the first first). Strict refuses the
    // NUL. Pair 0 is 8 + 3 + 4 + 1 = 16 bytes: pair 1's key is at 24 + 16 + 8 = 48.
    let nul_keys = GgufBuilder::new().kv("a\0x", Value::Uint8(1)).kv("a\0y", Value::Uint8(2));
    let nul_key = |at| tolerated(ErrorKind::NulInKey, "gguf::metadata::nul_in_key", at);
    let snake = |at| (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", at);
    cases.push(
        case("C12 keys equal up to a NUL", nul_keys.build())
            .strict(err(
                ErrorKind::NulInKey,
                "gguf::metadata::nul_in_key",
                32,
                r#"metadata[0] "a\0x" key"#,
            ))
            .llama(loads_warning(vec![nul_key(32), snake(32), nul_key(48), snake(48)], |g| {
                assert_eq!((g.get_u64("a\0x"), g.get_u64("a\0y")), (Some(1), Some(2)))
            }))
            .lenient(loads_warning(vec![nul_key(32), snake(32), nul_key(48), snake(48)], |_| {})),
    );
    // n_dims 0 is a scalar (ne = [1, 1, 1, 1]): one element is not a whole Q4_K block. There is
    // no ne[0] in the file, so the finding points at the empty dims (where the type field is).
    let kind = ErrorKind::NotBlockMultiple { ne0: 1, block_size: 256, ty: GgmlType::Q4_K };
    let ne = tensor_at(HEADER, "t0", 0).ne;
    cases.push(
        case("C12 scalar of a block type", tensors_file(vec![tensor("t0", Q4_K, &[])]).build())
            .strict_llama(err(
                kind.clone(),
                "gguf::tensor::not_block_multiple",
                ne,
                format!("{} ne", tensor_path(0, "t0")),
            ))
            .lenient(loads_warning(
                vec![tolerated(kind, "gguf::tensor::not_block_multiple", ne)],
                |g| assert_eq!(g.tensor("t0").unwrap().info.nbytes(), None),
            )),
    );
    cases.push(
        case("C12 empty tensor name", tensors_file(vec![tensor("", F32, &[4])]).build()).all(
            loads_warning(
                vec![(WarningKind::EmptyTensorName, "gguf::tensor::empty_name", 32)],
                |g| assert_eq!(g.tensor("").unwrap().info.nbytes(), Some(16)),
            ),
        ),
    );
    cases
}

/// The disagreements the differential against ggml's own reader found (ggml-org/ggml
/// d99724f2, `gguf_init_from_file` with `no_alloc`; `docs/parser.md`, "The llama-cpp profile
/// against ggml"), each with what ggml does: the llama-cpp profile now judges these bytes as
/// ggml does, and the strict profile refuses what ggml reads differently from other readers.
/// The last cases are the deliberate differences: ggml accepts, the file cannot be used, and
/// every profile refuses (D1–D3), and D5, a name ggml reads cut at a NUL byte.
fn ggml_oracle_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let nul_key = |at| tolerated(ErrorKind::NulInKey, "gguf::metadata::nul_in_key", at);
    let snake = |at| (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", at);
    let strict_nul_key = |key: &str| {
        err(
            ErrorKind::NulInKey,
            "gguf::metadata::nul_in_key",
            32,
            format!("{} key", kv_path(0, key)),
        )
    };

    // ggml finds `general.alignment` with strcmp: `general.alignment\0x` is the alignment key
    // there (gguf_get_alignment 64, data at 128). Header 24 + pair 8 + 19 + 4 + 4 = 59, then
    // tensor info 8 + 2 + 4 + 8 + 4 + 8 = 34: the directory ends at 93 (32-aligned: 96).
    let key = "general.alignment\0x";
    let b = GgufBuilder::new()
        .kv(key, Value::Uint32(64))
        .tensor_info(tensor("t0", F32, &[4]))
        .layout_alignment(64);
    cases.push(
        case("ggml: general.alignment\\0x is the alignment key", b.build())
            .strict(strict_nul_key(key))
            .llama(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!((g.alignment(), g.data_offset()), (64, 128));
                assert_eq!(g.tensor("t0").unwrap().info.abs_offset(), 128);
            }))
            .lenient(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!((g.alignment(), g.data_offset()), (32, 96));
            })),
    );
    // ... and so it must be a UINT32 there (ggml: "key 'general.alignment' must be of type
    // u32"). Its type field is at 24 + 8 + 19 = 51.
    let b = GgufBuilder::new().kv(key, Value::Bool(true));
    cases.push(
        case("ggml: general.alignment\\0x of type BOOL", b.build())
            .strict(strict_nul_key(key))
            .llama(err(
                ErrorKind::AlignmentType { found: ValueType::Bool },
                "gguf::metadata::alignment_type",
                51,
                format!("{} type", kv_path(0, key)),
            ))
            .lenient(loads_warning(vec![nul_key(32), snake(32)], |g| {
                assert_eq!(g.alignment(), 32)
            })),
    );
    // Only the first key equal to `general.alignment` as a C string counts in ggml: a later
    // exact `general.alignment` of type BOOL is not even checked. Pair 0 is 8 + 18 + 4 + 4 = 34
    // bytes: pair 1's key is at 66, its type at 66 + 17 = 83.
    let first = "general.alignment\0";
    let b = GgufBuilder::new()
        .kv(first, Value::Uint32(64))
        .kv("general.alignment", Value::Bool(true))
        .tensor_info(tensor("t0", F32, &[4]))
        .layout_alignment(64);
    cases.push(
        case("ggml: the first C-string general.alignment wins", b.build())
            .strict(strict_nul_key(first))
            .llama(loads_warning(vec![nul_key(32), snake(32)], |g| assert_eq!(g.alignment(), 64)))
            .lenient(loads_warning(
                vec![
                    nul_key(32),
                    snake(32),
                    tolerated(
                        ErrorKind::AlignmentType { found: ValueType::Bool },
                        "gguf::metadata::alignment_type",
                        83,
                    ),
                ],
                |g| assert_eq!(g.alignment(), 32),
            )),
    );
    // ggml_set_name keeps "ab" of "ab\0cd", and strcmp finds it equal to the next "ab".
    // Tensor 0 is 8 + 5 + 4 + 8 + 4 + 8 = 37 bytes: tensor 1's name is at 24 + 37 + 8 = 69.
    let b = tensors_file(vec![tensor("ab\0cd", F32, &[4]), tensor("ab", F32, &[4])]);
    cases.push(
        case("ggml: tensor ab\\0cd duplicates ab", b.build())
            .strict(err(
                ErrorKind::NulInName,
                "gguf::tensor::nul_in_name",
                32,
                format!("{} name", tensor_path(0, "ab\0cd")),
            ))
            .llama(err(
                ErrorKind::DuplicateTensor { first: 0 },
                "gguf::tensor::duplicate_name",
                69,
                format!("{} name", tensor_path(1, "ab")),
            ))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", 32)],
                |g| assert_eq!(g.tensor("ab").unwrap().index, 1),
            )),
    );
    // A zero dimension holds nothing, however large the others: ggml accepts [2^40, 2^40, 0]
    // (0 elements, 0 bytes). Its ne[2] is at 24 + 8 + 2 + 4 + 16 = 54.
    let b = tensors_file(vec![tensor("t0", F32, &[1 << 40, 1 << 40, 0])]);
    let empty = |g: &Gguf<&[u8]>| {
        let t = g.tensor("t0").unwrap().info;
        assert_eq!((t.element_count(), t.nbytes()), (0, Some(0)));
    };
    cases.push(
        case("ggml: a zero dimension beside an overflowing product", b.build())
            .strict(err(
                ErrorKind::ZeroDim,
                "gguf::tensor::zero_dim",
                54,
                format!("{} ne[2]", tensor_path(0, "t0")),
            ))
            .llama(loads_clean(empty))
            .lenient(loads_warning(
                vec![tolerated(ErrorKind::ZeroDim, "gguf::tensor::zero_dim", 54)],
                empty,
            )),
    );
    // No tensors: current ggml (since 2026-05) puts the data section right after the
    // directory, unpadded; gguf-py and older ggml pad it to the alignment. The directory ends
    // at 24 + 8 + 1 + 4 + 1 = 38.
    let b = GgufBuilder::new().kv("a", Value::Uint8(1));
    cases.push(
        case("ggml: no tensors, no padding", b.build_header())
            .llama(loads_clean(|g| assert_eq!(g.data_offset(), 38)))
            .strict_lenient(loads_clean(|g| assert_eq!(g.data_offset(), 64))),
    );

    // Deliberate differences: ggml accepts these with no_alloc, but their tensors cannot be
    // read; every profile refuses them.
    // D1: data past the end of the file. The directory ends at 58, the data starts at 64 and
    // t0's 16 bytes would end at 80; the file ends at 64. Its offset field is at 50.
    let b = tensors_file(vec![tensor("t0", F32, &[4])]);
    let kind = ErrorKind::TensorOutOfBounds { end: 80, file_size: 64 };
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    cases.push(
        case("ggml accepts (deliberate D1): data past the end of the file", header_padded(&b))
            .strict_llama(err(kind.clone(), "gguf::layout::out_of_bounds", 50, t0_offset))
            .lenient(loads_warning(
                vec![tolerated(kind, "gguf::layout::out_of_bounds", 50)],
                |_| {},
            )),
    );
    // D2: an int64 element count that wraps past ggml's check. I8 [3, 2^62 + 1] wraps to
    // -2^62 + 3: ggml checks the count only when that product is positive, and its byte-size
    // check passes for 1-byte elements. The count fits u64 and so does its byte size: strict
    // and lenient find the data past the end of the file; the llama-cpp profile refuses the
    // count, which ggml's int64_t cannot hold. Two dims: the directory ends at 66, the data
    // starts at 96; the dims are at 24 + 8 + 2 + 4 = 38, the offset at 58.
    let wrapped = |ty: u32, dims: &[u64]| {
        header_padded(&tensors_file(vec![Tensor { offset: Some(0), ..tensor("t0", ty, dims) }]))
    };
    let ne = |kind, code| err(kind, code, 38, format!("{} ne", tensor_path(0, "t0")));
    let count = || ne(ErrorKind::ElementCountOverflow, "gguf::tensor::element_count_overflow");
    let kind = ErrorKind::TensorOutOfBounds { end: 96 + 3 * ((1 << 62) + 1), file_size: 96 };
    let t0_offset = format!("{} offset", tensor_path(0, "t0"));
    cases.push(
        case(
            "ggml accepts (deliberate D2): an element count wrapping to a negative int64",
            wrapped(I8, &[3, (1 << 62) + 1]),
        )
        .strict(err(kind.clone(), "gguf::layout::out_of_bounds", 58, t0_offset))
        .llama(count())
        .lenient(loads_warning(vec![tolerated(kind, "gguf::layout::out_of_bounds", 58)], |_| {})),
    );
    // D3: [2^32, 2^32] wraps to 0 elements, and ggml_nbytes to 0 bytes.
    cases.push(
        case(
            "ggml accepts (deliberate D3): a byte size wrapping to 0",
            wrapped(F32, &[1 << 32, 1 << 32]),
        )
        .all(count()),
    );
    // D5: ggml cuts a tensor name at its first NUL (the tensor `w`); the llama-cpp and
    // lenient profiles keep the name whole and say so, strict refuses it. Both accept here:
    // the difference is in the reading, which the differential compares whole.
    let keeps_whole = || {
        loads_warning(vec![tolerated(ErrorKind::NulInName, "gguf::tensor::nul_in_name", 32)], |g| {
            let t = g.tensor("w\0x").expect("the whole name");
            assert_eq!(t.name.as_bytes(), b"w\0x");
            assert!(g.tensor("w").is_none(), "the cut name is not a name here");
        })
    };
    cases.push(
        case(
            "ggml reads differently (deliberate D5): a tensor name kept past a NUL",
            tensors_file(vec![tensor("w\0x", F32, &[4])]).build(),
        )
        .strict(err(
            ErrorKind::NulInName,
            "gguf::tensor::nul_in_name",
            32,
            r#"tensor[0] "w\0x" name"#,
        ))
        .llama(keeps_whole())
        .lenient(keeps_whole()),
    );
    cases
}

fn all_cases() -> Vec<Case> {
    let mut cases = header_cases();
    cases.extend(kv_cases());
    cases.extend(tensor_cases());
    cases.extend(data_cases());
    cases.extend(class_cases());
    cases.extend(escape_and_differential_cases());
    cases.extend(ggml_oracle_cases());
    cases
}

#[test]
fn corruption_table() {
    let cases = all_cases();
    let mut failures = Vec::new();
    let mut names = BTreeSet::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "duplicate case name {}", c.name);
        for profile in PROFILES {
            if let Err(msg) = c.check(profile) {
                failures.push(format!("{} [{}]: {msg}", c.name, profile.name()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} checks failed:\n{}",
        failures.len(),
        3 * cases.len(),
        failures.join("\n")
    );
}

// ----- allocation bounds ---------------------------------------------------------------------

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

// ----- work: counting decoder calls, not time --------------------------------------------------

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

// ----- every error kind, reached from bytes ----------------------------------------------------

/// A reach case: `bytes` under `profile` gives exactly this error.
fn reach(name: &str, bytes: Vec<u8>, e: Expect) -> Case {
    case(&format!("kind: {name}"), bytes).all(e)
}

fn one_tensor(t: Tensor) -> Vec<u8> {
    tensors_file(vec![t]).build()
}

fn with_limits(c: Case, f: impl FnOnce(&mut Limits)) -> Case {
    let mut limits = Limits::default();
    f(&mut limits);
    c.limits(limits)
}

/// Every error kind reached from bytes: (test name, profile, case). Each has its own `#[test]`
/// (`kind_tests!` below); the coverage check asserts that the two lists agree.
fn reach_cases() -> Vec<(&'static str, Profile, Case)> {
    vec![
        (
            "kind_bad_magic",
            Profile::Strict,
            reach(
                "bad magic",
                GgufBuilder::new().magic(*b"GGML").build(),
                err(
                    ErrorKind::BadMagic { found: *b"GGML" },
                    "gguf::header::bad_magic",
                    0,
                    "header.magic",
                ),
            ),
        ),
        (
            "kind_unsupported_version",
            Profile::Strict,
            reach(
                "version 7",
                GgufBuilder::new().version(7).build(),
                err(
                    ErrorKind::UnsupportedVersion { version: 7 },
                    "gguf::header::unsupported_version",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_version_one_disabled",
            Profile::Strict,
            reach(
                "v1",
                v1_file(),
                err(
                    ErrorKind::VersionOneDisabled,
                    "gguf::header::v1_disabled",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_endian_mismatch",
            Profile::LlamaCpp,
            reach(
                "big-endian",
                GgufBuilder::new().endian(Endian::Big).build(),
                err(
                    ErrorKind::EndianMismatch { version: 0x0300_0000 },
                    "gguf::header::endian_mismatch",
                    4,
                    "header.version",
                ),
            ),
        ),
        (
            "kind_unexpected_eof",
            Profile::Strict,
            reach(
                "6 bytes",
                b"GGUF\x03\x00".to_vec(),
                err(
                    ErrorKind::UnexpectedEof { needed: 2 },
                    "gguf::input::unexpected_eof",
                    6,
                    "header.version",
                ),
            ),
        ),
        // The value's length field is at 37; its bytes would end at 45 + 100 > 64.
        (
            "kind_header_too_large",
            Profile::Strict,
            with_limits(
                reach(
                    "string past max_header_bytes",
                    GgufBuilder::new().kv("k", Value::str(&"v".repeat(100))).build(),
                    err(
                        ErrorKind::HeaderTooLarge { max: 64 },
                        "gguf::limits::header_too_large",
                        37,
                        format!("{} value", kv_path(0, "k")),
                    ),
                ),
                |l| l.max_header_bytes = 64,
            ),
        ),
        // The directory ends at 58; the padding would end at 64 > 60.
        (
            "kind_header_too_large_padding",
            Profile::Strict,
            with_limits(
                reach(
                    "padding past max_header_bytes",
                    one_tensor(tensor("t0", F32, &[4])),
                    err(
                        ErrorKind::HeaderTooLarge { max: 60 },
                        "gguf::limits::header_too_large",
                        58,
                        "padding",
                    ),
                ),
                |l| l.max_header_bytes = 60,
            ),
        ),
        (
            "kind_too_many_kvs",
            Profile::Strict,
            reach(
                "2^20 + 1 pairs",
                GgufBuilder::new().kv_count(MAX_COUNT + 1).build(),
                err(
                    ErrorKind::TooManyKvs { count: MAX_COUNT + 1, max: MAX_COUNT },
                    "gguf::limits::too_many_kvs",
                    16,
                    "header.kv_count",
                ),
            ),
        ),
        (
            "kind_too_many_tensors",
            Profile::Strict,
            reach(
                "2^20 + 1 tensors",
                GgufBuilder::new().tensor_count(MAX_COUNT + 1).build(),
                err(
                    ErrorKind::TooManyTensors { count: MAX_COUNT + 1, max: MAX_COUNT },
                    "gguf::limits::too_many_tensors",
                    8,
                    "header.tensor_count",
                ),
            ),
        ),
        (
            "kind_string_too_long",
            Profile::Strict,
            with_limits(
                reach(
                    "5-byte key, limit 4",
                    GgufBuilder::new().kv("hello", Value::Uint8(0)).build(),
                    err(
                        ErrorKind::StringTooLong { len: 5, max: 4 },
                        "gguf::limits::string_too_long",
                        HEADER,
                        "metadata[0] key",
                    ),
                ),
                |l| l.max_string_len = 4,
            ),
        ),
        (
            "kind_array_too_long",
            Profile::Strict,
            with_limits(
                reach(
                    "3 elements, limit 2",
                    GgufBuilder::new().kv("a", Value::Array(0, vec![Value::Uint8(0); 3])).build(),
                    err(
                        ErrorKind::ArrayTooLong { len: 3, max: 2 },
                        "gguf::limits::array_too_long",
                        41,
                        format!("{} value count", kv_path(0, "a")),
                    ),
                ),
                |l| l.max_array_len = 2,
            ),
        ),
        (
            "kind_nesting_too_deep",
            Profile::Strict,
            with_limits(
                reach(
                    "depth 2, limit 1",
                    GgufBuilder::new().kv("a", nested(2)).build(),
                    err(
                        ErrorKind::NestingTooDeep { max: 1 },
                        "gguf::limits::nesting_too_deep",
                        49,
                        format!("{}[0]", kv_path(0, "a")),
                    ),
                ),
                |l| l.max_depth = 1,
            ),
        ),
        (
            "kind_empty_key",
            Profile::Strict,
            reach(
                "empty key",
                GgufBuilder::new().kv("", Value::Uint8(0)).build(),
                err(ErrorKind::EmptyKey, "gguf::metadata::empty_key", 32, r#"metadata[0] "" key"#),
            ),
        ),
        (
            "kind_invalid_utf8_key",
            Profile::Strict,
            reach(
                "key \\xC3(",
                GgufBuilder::new().kv_bytes(b"\xC3(", Value::Uint8(0)).build(),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::Key, valid_up_to: 0 },
                    "gguf::metadata::invalid_utf8_key",
                    32,
                    "metadata[0] \"\u{fffd}(\" key",
                ),
            ),
        ),
        // Element 1 of a string array: payload at 49, element 0 is 8 + 2 bytes, element 1's bytes
        // at 59 + 8.
        (
            "kind_invalid_utf8_value",
            Profile::Strict,
            reach(
                "string element ab\\xFF",
                GgufBuilder::new()
                    .kv(
                        "a",
                        Value::Array(8, vec![Value::str("ok"), Value::String(b"ab\xFF".to_vec())]),
                    )
                    .build(),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::Value, valid_up_to: 2 },
                    "gguf::metadata::invalid_utf8_value",
                    67,
                    format!("{}[1]", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_invalid_utf8_tensor_name",
            Profile::Strict,
            reach(
                "tensor name \\xFF",
                one_tensor(Tensor { name: vec![0xFF], ..tensor("", F32, &[4]) }),
                err(
                    ErrorKind::InvalidUtf8 { field: StrField::TensorName, valid_up_to: 0 },
                    "gguf::tensor::invalid_utf8_name",
                    32,
                    "tensor[0] \"\u{fffd}\" name",
                ),
            ),
        ),
        (
            "kind_duplicate_key",
            Profile::Strict,
            reach(
                "a, b, a",
                build_kvs(&[
                    ("a", Value::Uint8(0)),
                    ("b", Value::Uint8(0)),
                    ("a", Value::Uint8(0)),
                ])
                .build(),
                err(
                    ErrorKind::DuplicateKey { first: 0 },
                    "gguf::metadata::duplicate_key",
                    24 + 14 + 14 + 8,
                    format!("{} key", kv_path(2, "a")),
                ),
            ),
        ),
        (
            "kind_unknown_value_type",
            Profile::Strict,
            reach(
                "type 13",
                GgufBuilder::new().kv("a", Value::Raw { type_code: 13, bytes: vec![] }).build(),
                err(
                    ErrorKind::UnknownValueType { code: 13 },
                    "gguf::metadata::unknown_value_type",
                    33,
                    format!("{} type", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_nested_array",
            Profile::LlamaCpp,
            reach(
                "array of arrays",
                GgufBuilder::new().kv("a", nested(2)).build(),
                err(
                    ErrorKind::NestedArray,
                    "gguf::metadata::nested_array",
                    37,
                    format!("{} value elem_type", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_invalid_bool",
            Profile::Strict,
            reach(
                "bool 2",
                GgufBuilder::new().kv("a", Value::Raw { type_code: 7, bytes: vec![2] }).build(),
                err(
                    ErrorKind::InvalidBool { value: 2 },
                    "gguf::metadata::invalid_bool",
                    37,
                    format!("{} value", kv_path(0, "a")),
                ),
            ),
        ),
        (
            "kind_alignment_type",
            Profile::Strict,
            reach(
                "alignment as string",
                GgufBuilder::new().kv("general.alignment", Value::str("32")).build(),
                err(
                    ErrorKind::AlignmentType { found: ValueType::String },
                    "gguf::metadata::alignment_type",
                    49,
                    format!("{} type", kv_path(0, "general.alignment")),
                ),
            ),
        ),
        (
            "kind_bad_alignment",
            Profile::Strict,
            reach(
                "alignment 3",
                GgufBuilder::new().kv("general.alignment", Value::Uint32(3)).build(),
                err(
                    ErrorKind::BadAlignment { alignment: 3 },
                    "gguf::metadata::bad_alignment",
                    53,
                    format!("{} value", kv_path(0, "general.alignment")),
                ),
            ),
        ),
        (
            "kind_name_too_long",
            Profile::Strict,
            reach(
                "100-byte name",
                one_tensor(tensor(&"x".repeat(100), F32, &[4])),
                err(
                    ErrorKind::NameTooLong { len: 100, max: 64 },
                    "gguf::tensor::name_too_long",
                    32,
                    format!("{} name", tensor_path(0, &"x".repeat(100))),
                ),
            ),
        ),
        (
            "kind_nul_in_key",
            Profile::Strict,
            reach(
                "key a\\0b",
                GgufBuilder::new().kv("a\0b", Value::Uint8(0)).build(),
                err(
                    ErrorKind::NulInKey,
                    "gguf::metadata::nul_in_key",
                    32,
                    format!("{} key", kv_path(0, "a\0b")),
                ),
            ),
        ),
        (
            "kind_nul_in_name",
            Profile::Strict,
            reach(
                "name a\\0b",
                one_tensor(tensor("a\0b", F32, &[4])),
                err(
                    ErrorKind::NulInName,
                    "gguf::tensor::nul_in_name",
                    32,
                    format!("{} name", tensor_path(0, "a\0b")),
                ),
            ),
        ),
        (
            "kind_duplicate_tensor",
            Profile::Strict,
            reach(
                "t0, t0",
                tensors_file(vec![tensor("t0", F32, &[4]), tensor("t0", F32, &[4])]).build(),
                err(
                    ErrorKind::DuplicateTensor { first: 0 },
                    "gguf::tensor::duplicate_name",
                    24 + 34 + 8,
                    format!("{} name", tensor_path(1, "t0")),
                ),
            ),
        ),
        (
            "kind_too_many_dims",
            Profile::Strict,
            reach(
                "n_dims 8",
                one_tensor(tensor("t0", F32, &[1; 8])),
                err(
                    ErrorKind::TooManyDims { n_dims: 8, max: 4 },
                    "gguf::tensor::too_many_dims",
                    34,
                    format!("{} n_dims", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_zero_dim",
            Profile::Strict,
            reach(
                "[0]",
                one_tensor(tensor("t0", F32, &[0])),
                err(
                    ErrorKind::ZeroDim,
                    "gguf::tensor::zero_dim",
                    38,
                    format!("{} ne[0]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_dim_too_large",
            Profile::LlamaCpp,
            reach(
                "[1, 2^63]",
                header_padded(&tensors_file(vec![tensor("t0", I8, &[1, 1 << 63])])),
                err(
                    ErrorKind::DimTooLarge { value: 1 << 63 },
                    "gguf::tensor::dim_too_large",
                    46,
                    format!("{} ne[1]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_element_count_overflow",
            Profile::Strict,
            reach(
                "[2^32, 2^32, 2]",
                one_tensor(tensor("t0", I8, &[1 << 32, 1 << 32, 2])),
                err(
                    ErrorKind::ElementCountOverflow,
                    "gguf::tensor::element_count_overflow",
                    38,
                    format!("{} ne", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_byte_size_overflow",
            Profile::Strict,
            reach(
                "F32 [2^63]",
                one_tensor(tensor("t0", F32, &[1 << 63])),
                err(
                    ErrorKind::ByteSizeOverflow,
                    "gguf::tensor::byte_size_overflow",
                    38,
                    format!("{} ne", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_unknown_ggml_type",
            Profile::Strict,
            reach(
                "type 1000",
                one_tensor(tensor("t0", 1000, &[4])),
                err(
                    ErrorKind::UnknownGgmlType { code: 1000 },
                    "gguf::tensor::unknown_type",
                    46,
                    format!("{} ggml_type", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_removed_ggml_type",
            Profile::Strict,
            reach(
                "type 5",
                one_tensor(tensor("t0", 5, &[32])),
                err(
                    ErrorKind::RemovedGgmlType { code: 5, name: "Q4_3" },
                    "gguf::tensor::removed_type",
                    46,
                    format!("{} ggml_type", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_not_block_multiple",
            Profile::Strict,
            reach(
                "Q4_K [255]",
                one_tensor(tensor("t0", Q4_K, &[255])),
                err(
                    ErrorKind::NotBlockMultiple { ne0: 255, block_size: 256, ty: GgmlType::Q4_K },
                    "gguf::tensor::not_block_multiple",
                    38,
                    format!("{} ne[0]", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_misaligned_offset",
            Profile::Strict,
            reach(
                "offset 8",
                one_tensor(Tensor { offset: Some(8), ..tensor("t0", F32, &[4]) }),
                err(
                    ErrorKind::MisalignedOffset { offset: 8, alignment: 32 },
                    "gguf::layout::misaligned",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_non_contiguous_offset",
            Profile::LlamaCpp,
            reach(
                "offset 64",
                one_tensor(Tensor { offset: Some(64), ..tensor("t0", F32, &[4]) }),
                err(
                    ErrorKind::NonContiguousOffset { offset: 64, expected: 0 },
                    "gguf::layout::not_contiguous",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_tensor_overlap",
            Profile::Strict,
            reach(
                "t1 inside t0",
                tensors_file(vec![
                    tensor("t0", F32, &[16]),
                    Tensor { offset: Some(32), ..tensor("t1", F32, &[4]) },
                ])
                .build(),
                err(
                    ErrorKind::TensorOverlap { other: 0 },
                    "gguf::layout::overlap",
                    84,
                    format!("{} offset", tensor_path(1, "t1")),
                ),
            ),
        ),
        (
            "kind_tensor_out_of_bounds",
            Profile::Strict,
            reach(
                "no data",
                header_padded(&tensors_file(vec![tensor("t0", F32, &[4])])),
                err(
                    ErrorKind::TensorOutOfBounds { end: 80, file_size: 64 },
                    "gguf::layout::out_of_bounds",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
        (
            "kind_offset_overflow",
            Profile::Strict,
            reach(
                "offset 2^64 - 32",
                header_padded(&tensors_file(vec![Tensor {
                    offset: Some(0u64.wrapping_sub(32)),
                    ..tensor("t0", F32, &[16])
                }])),
                err(
                    ErrorKind::OffsetOverflow,
                    "gguf::layout::offset_overflow",
                    50,
                    format!("{} offset", tensor_path(0, "t0")),
                ),
            ),
        ),
    ]
}

fn check_reach(name: &str) {
    let (_, profile, c) = reach_cases().into_iter().find(|(n, ..)| *n == name).unwrap();
    if let Err(msg) = c.check(profile) {
        panic!("{}: {msg}", c.name);
    }
}

/// One `#[test]` per entry of [`reach_cases`], and their names as `KIND_TESTS`.
macro_rules! kind_tests {
    ($($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_reach(stringify!($test));
            }
        )*

        const KIND_TESTS: &[&str] = &[$(stringify!($test)),*];
    };
}

kind_tests!(
    kind_bad_magic,
    kind_unsupported_version,
    kind_version_one_disabled,
    kind_endian_mismatch,
    kind_unexpected_eof,
    kind_header_too_large,
    kind_header_too_large_padding,
    kind_too_many_kvs,
    kind_too_many_tensors,
    kind_string_too_long,
    kind_array_too_long,
    kind_nesting_too_deep,
    kind_empty_key,
    kind_invalid_utf8_key,
    kind_invalid_utf8_value,
    kind_invalid_utf8_tensor_name,
    kind_duplicate_key,
    kind_unknown_value_type,
    kind_nested_array,
    kind_invalid_bool,
    kind_alignment_type,
    kind_bad_alignment,
    kind_name_too_long,
    kind_nul_in_key,
    kind_nul_in_name,
    kind_duplicate_tensor,
    kind_too_many_dims,
    kind_zero_dim,
    kind_dim_too_large,
    kind_element_count_overflow,
    kind_byte_size_overflow,
    kind_unknown_ggml_type,
    kind_removed_ggml_type,
    kind_not_block_multiple,
    kind_misaligned_offset,
    kind_non_contiguous_offset,
    kind_tensor_overlap,
    kind_tensor_out_of_bounds,
    kind_offset_overflow,
);

#[test]
fn kind_misuse() {
    let misuse = |reason| ErrorKind::Misuse { reason };
    // Decoding again after an error.
    let bytes = GgufBuilder::new().magic(*b"GGML").build();
    let mut d = Decoder::new(ParseOptions::default());
    assert_eq!(d.decode(&bytes).unwrap_err().code(), "gguf::header::bad_magic");
    let e = d.decode(&bytes).unwrap_err();
    assert_eq!(
        (e.kind(), e.code(), e.offset()),
        (&misuse("decode called after an error"), "gguf::decoder::misuse", 0)
    );
    // A buffer that shrank.
    let bytes = GgufBuilder::new().kv("a", Value::Uint8(1)).build();
    let mut d = Decoder::new(ParseOptions::default());
    d.decode(&bytes).unwrap();
    let e = d.decode(&bytes[..10]).unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("the buffer shrank between calls"), HEADER));
    // Finishing before Done.
    let e = Decoder::new(ParseOptions::default()).finish().unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("finish called before Done"), 0));
    // Bytes shorter than the directory.
    let dir = sipllm_gguf::decode(&bytes, &ParseOptions::default()).unwrap();
    let e = Gguf::from_parts(&bytes[..30], dir).unwrap_err();
    assert_eq!((e.kind(), e.offset()), (&misuse("bytes shorter than the directory"), 30));
}

/// Every `ErrorKind` variant. The enum is `#[non_exhaustive]`, so the compiler cannot check
/// this list: **a new variant must be added here**, and reached from bytes in [`reach_cases`].
fn every_error_kind() -> Vec<ErrorKind> {
    use ErrorKind::*;
    vec![
        BadMagic { found: *b"FUGG" },
        UnsupportedVersion { version: 0 },
        VersionOneDisabled,
        EndianMismatch { version: 0x0300_0000 },
        UnexpectedEof { needed: 1 },
        HeaderTooLarge { max: 1 },
        TooManyKvs { count: 2, max: 1 },
        TooManyTensors { count: 2, max: 1 },
        StringTooLong { len: 2, max: 1 },
        ArrayTooLong { len: 2, max: 1 },
        NestingTooDeep { max: 1 },
        EmptyKey,
        InvalidUtf8 { field: StrField::Key, valid_up_to: 0 },
        InvalidUtf8 { field: StrField::Value, valid_up_to: 0 },
        InvalidUtf8 { field: StrField::TensorName, valid_up_to: 0 },
        DuplicateKey { first: 0 },
        UnknownValueType { code: 13 },
        NestedArray,
        InvalidBool { value: 2 },
        AlignmentType { found: ValueType::Int32 },
        BadAlignment { alignment: 3 },
        NameTooLong { len: 65, max: 64 },
        NulInKey,
        NulInName,
        DuplicateTensor { first: 0 },
        TooManyDims { n_dims: 5, max: 4 },
        ZeroDim,
        DimTooLarge { value: 1 << 63 },
        ElementCountOverflow,
        ByteSizeOverflow,
        UnknownGgmlType { code: 43 },
        RemovedGgmlType { code: 4, name: "Q4_2" },
        NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 },
        MisalignedOffset { offset: 8, alignment: 32 },
        NonContiguousOffset { offset: 64, expected: 0 },
        TensorOverlap { other: 0 },
        TensorOutOfBounds { end: 2, file_size: 1 },
        OffsetOverflow,
        Misuse { reason: "test" },
    ]
}

/// Every `WarningKind` variant; as for [`every_error_kind`], **a new variant must be added
/// here** and reached in [`warn_cases`].
fn every_warning_kind() -> Vec<WarningKind> {
    use WarningKind::*;
    vec![
        Tolerated(ErrorKind::DuplicateKey { first: 0 }),
        KeyNotAscii,
        KeyNotSnakeCase,
        KeyTooLong { len: 65_536 },
        NameRejectedByLlamaCpp,
        EmptyTensorName,
        InvisibleInName { ch: '\u{e0041}', at: 13 },
        TensorGap { gap: 32 },
        OutOfOrder,
        NonZeroPadding,
        Suppressed { count: 1 },
    ]
}

fn is_code(code: &str) -> bool {
    let parts: Vec<&str> = code.split("::").collect();
    parts.len() == 3
        && parts[0] == "gguf"
        && parts[1..].iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

#[test]
fn codes_are_well_formed_unique_and_every_kind_is_reached() {
    for bad in ["gguf::a", "gguf::a::B", "gguf::a::b::c", "ggml::a::b", "gguf::::b", "gguf::a-b::c"]
    {
        assert!(!is_code(bad), "{bad}");
    }
    let errors = every_error_kind();
    let warnings = every_warning_kind();
    let mut seen = BTreeSet::new();
    for k in &errors {
        assert!(is_code(k.code()), "{k:?}: {}", k.code());
        assert!(seen.insert(k.code()), "{k:?}: code {} used twice", k.code());
        assert!(!k.help().is_empty() && !k.to_string().is_empty(), "{k:?}");
    }
    for w in &warnings {
        match w {
            WarningKind::Tolerated(k) => {
                assert_eq!(w.code(), k.code(), "a tolerated error keeps its code")
            }
            _ => {
                assert!(is_code(w.code()), "{w:?}: {}", w.code());
                assert!(seen.insert(w.code()), "{w:?}: code {} used twice", w.code());
            }
        }
        assert!(!w.help().is_empty() && !w.to_string().is_empty(), "{w:?}");
    }
    // Every error code is reached from bytes by a `kind_*` test (misuse: by API calls).
    let reach = reach_cases();
    let names: BTreeSet<&str> = reach.iter().map(|(n, ..)| *n).collect();
    assert_eq!(names, KIND_TESTS.iter().copied().collect(), "kind_tests! and reach_cases()");
    let mut reached: BTreeSet<&str> = reach
        .iter()
        .filter_map(|(_, p, c)| match &c.expect[PROFILES.iter().position(|x| x == p).unwrap()] {
            Some(Expect::Err { code, .. }) => Some(*code),
            _ => None,
        })
        .collect();
    reached.insert("gguf::decoder::misuse");
    let all: BTreeSet<&str> = errors.iter().map(ErrorKind::code).collect();
    assert_eq!(
        all.difference(&reached).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "error codes not reached"
    );
    let warn = warn_cases();
    let names: BTreeSet<&str> = warn.iter().map(|(n, ..)| *n).collect();
    assert_eq!(names, WARN_TESTS.iter().copied().collect(), "warn_tests! and warn_cases()");
    let mut reached: BTreeSet<&str> = warn.iter().map(|(.., (_, code, _))| *code).collect();
    // Reached by `warning_suppressed` (it needs more than one warning).
    reached.insert("gguf::limits::warnings_suppressed");
    let all: BTreeSet<&str> = warnings.iter().map(WarningKind::code).collect();
    assert_eq!(
        all.difference(&reached).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "warning codes not reached"
    );
}

type Expected = (WarningKind, &'static str, u64);

/// Every warning kind reached from bytes: (test name, profile, file, the one warning expected).
/// Each has its own `#[test]` (`warn_tests!` below).
fn warn_cases() -> Vec<(&'static str, Profile, Vec<u8>, Expected)> {
    vec![
        (
            "warning_tolerated",
            Profile::Lenient,
            GgufBuilder::new().kv("a", Value::Uint8(0)).kv("a", Value::Uint8(0)).build(),
            tolerated(
                ErrorKind::DuplicateKey { first: 0 },
                "gguf::metadata::duplicate_key",
                24 + 14 + 8,
            ),
        ),
        (
            "warning_key_not_ascii",
            Profile::Strict,
            GgufBuilder::new().kv("caf\u{e9}", Value::Uint8(0)).build(),
            (WarningKind::KeyNotAscii, "gguf::metadata::key_not_ascii", 32),
        ),
        (
            "warning_key_not_snake_case",
            Profile::Strict,
            GgufBuilder::new().kv("General.Name", Value::Uint8(0)).build(),
            (WarningKind::KeyNotSnakeCase, "gguf::metadata::key_not_snake_case", 32),
        ),
        (
            "warning_key_too_long",
            Profile::Strict,
            GgufBuilder::new().kv(&"k".repeat(65_536), Value::Uint8(0)).build(),
            (WarningKind::KeyTooLong { len: 65_536 }, "gguf::metadata::key_too_long", 32),
        ),
        (
            "warning_name_rejected_by_llama_cpp",
            Profile::Strict,
            one_tensor(tensor(&"n".repeat(64), F32, &[4])),
            (WarningKind::NameRejectedByLlamaCpp, "gguf::tensor::name_64_bytes", 32),
        ),
        (
            "warning_empty_tensor_name",
            Profile::Strict,
            one_tensor(tensor("", F32, &[4])),
            (WarningKind::EmptyTensorName, "gguf::tensor::empty_name", 32),
        ),
        (
            // Prints like `output.weight`: a tag character (issue 26, item 9).
            "warning_invisible_in_name",
            Profile::Strict,
            one_tensor(tensor("output.weight\u{e0041}", F32, &[4])),
            (
                WarningKind::InvisibleInName { ch: '\u{e0041}', at: 13 },
                "gguf::tensor::invisible_char",
                32,
            ),
        ),
        (
            "warning_tensor_gap",
            Profile::Strict,
            tensors_file(vec![
                tensor("t0", F32, &[4]),
                Tensor { offset: Some(64), ..tensor("t1", F32, &[4]) },
            ])
            .build(),
            (WarningKind::TensorGap { gap: 32 }, "gguf::layout::gap", 84),
        ),
        (
            "warning_out_of_order",
            Profile::Strict,
            tensors_file(vec![
                Tensor { offset: Some(32), ..tensor("t0", F32, &[4]) },
                Tensor { offset: Some(0), ..tensor("t1", F32, &[4]) },
            ])
            .build(),
            (WarningKind::OutOfOrder, "gguf::layout::out_of_order", 84),
        ),
        (
            "warning_non_zero_padding",
            Profile::Strict,
            tensors_file(vec![tensor("t0", F32, &[4])]).pad_byte(0xFF).build(),
            (WarningKind::NonZeroPadding, "gguf::layout::nonzero_padding", 58),
        ),
    ]
}

/// A lenient parse records at most `MAX_WARNINGS` warnings, then one that counts the rest.
#[test]
fn warning_suppressed() {
    let extra = 10;
    let mut b = GgufBuilder::new();
    for _ in 0..sipllm_gguf::decoder::MAX_WARNINGS + extra {
        // Each empty key is an empty_key warning and (after the first) a duplicate_key one.
        b = b.kv("", Value::Uint8(0));
    }
    let bytes = b.build();
    let opts = ParseOptions::new(Profile::Lenient).with_file_size(Some(bytes.len() as u64));
    let gguf = sipllm_gguf::parse_with(&bytes[..], &opts).unwrap();
    let warnings = gguf.warnings();
    assert_eq!(warnings.len(), sipllm_gguf::decoder::MAX_WARNINGS + 1);
    let last = warnings.last().unwrap();
    let total = 2 * (sipllm_gguf::decoder::MAX_WARNINGS + extra) - 1;
    let count = (total - sipllm_gguf::decoder::MAX_WARNINGS) as u64;
    assert_eq!(*last.kind(), WarningKind::Suppressed { count });
    assert_eq!(last.code(), "gguf::limits::warnings_suppressed");
    assert_eq!(last.offset(), bytes.len() as u64, "at the end of the directory");
}

fn check_warning(name: &str) {
    let (_, profile, bytes, warning) = warn_cases().into_iter().find(|(n, ..)| *n == name).unwrap();
    let c = case(name, bytes).all(loads_warning(vec![warning], |_| {}));
    if let Err(msg) = c.check(profile) {
        panic!("{name}: {msg}");
    }
}

/// One `#[test]` per entry of [`warn_cases`], and their names as `WARN_TESTS`.
macro_rules! warn_tests {
    ($($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_warning(stringify!($test));
            }
        )*

        const WARN_TESTS: &[&str] = &[$(stringify!($test)),*];
    };
}

warn_tests!(
    warning_tolerated,
    warning_key_not_ascii,
    warning_key_not_snake_case,
    warning_key_too_long,
    warning_name_rejected_by_llama_cpp,
    warning_empty_tensor_name,
    warning_invisible_in_name,
    warning_tensor_gap,
    warning_out_of_order,
    warning_non_zero_padding,
);

// ----- truncation ----------------------------------------------------------------------------

/// Writes a GGUF field by field, recording for each field where it lies, where the read the
/// decoder is doing there ends (a fixed-size array is read as one piece), and the path the
/// truncation error names.
#[derive(Default)]
struct Fields {
    bytes: Vec<u8>,
    /// (start, end, end of the read, path)
    fields: Vec<(u64, u64, u64, String)>,
}

fn scalar_le(v: &Value) -> Vec<u8> {
    match v {
        Value::Uint8(x) => x.to_le_bytes().to_vec(),
        Value::Int8(x) => x.to_le_bytes().to_vec(),
        Value::Uint16(x) => x.to_le_bytes().to_vec(),
        Value::Int16(x) => x.to_le_bytes().to_vec(),
        Value::Uint32(x) => x.to_le_bytes().to_vec(),
        Value::Int32(x) => x.to_le_bytes().to_vec(),
        Value::Float32(x) => x.to_le_bytes().to_vec(),
        Value::Bool(x) => vec![u8::from(*x)],
        Value::Uint64(x) => x.to_le_bytes().to_vec(),
        Value::Int64(x) => x.to_le_bytes().to_vec(),
        Value::Float64(x) => x.to_le_bytes().to_vec(),
        other => panic!("not a scalar: {other:?}"),
    }
}

impl Fields {
    fn pos(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn field_until(&mut self, data: &[u8], read_end: Option<u64>, path: &str) {
        let start = self.pos();
        self.bytes.extend_from_slice(data);
        let end = self.pos();
        self.fields.push((start, end, read_end.unwrap_or(end), path.to_string()));
    }

    fn field(&mut self, data: &[u8], path: &str) {
        self.field_until(data, None, path)
    }

    fn string(&mut self, s: &[u8], path: &str) {
        self.field(&(s.len() as u64).to_le_bytes(), path);
        self.field(s, path);
    }

    fn value(&mut self, v: &Value, path: &str) {
        match v {
            Value::String(s) => self.string(s, path),
            Value::Array(ty, elems) => {
                self.field(&ty.to_le_bytes(), path);
                self.field(&(elems.len() as u64).to_le_bytes(), path);
                self.payload(*ty, elems, path);
            }
            scalar => self.field(&scalar_le(scalar), path),
        }
    }

    fn payload(&mut self, ty: u32, elems: &[Value], prefix: &str) {
        let ty = ValueType::from_code(ty).unwrap();
        if let Some(size) = ty.fixed_size() {
            // The decoder takes the complete elements present and asks for the rest at once.
            let read_end = self.pos() + (size * elems.len()) as u64;
            for (k, e) in elems.iter().enumerate() {
                self.field_until(&scalar_le(e), Some(read_end), &format!("{prefix}[{k}]"));
            }
            return;
        }
        for (k, e) in elems.iter().enumerate() {
            let path = format!("{prefix}[{k}]");
            match e {
                Value::String(s) => self.string(s, &path),
                Value::Array(ty, inner) => {
                    self.field(&ty.to_le_bytes(), &path);
                    self.field(&(inner.len() as u64).to_le_bytes(), &path);
                    self.payload(*ty, inner, &path);
                }
                other => panic!("not a {ty:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn truncation_anywhere_before_the_data_names_the_item() {
    let mut kvs = every_type_kvs();
    kvs.push(nested_kv());
    kvs.push(("general.alignment", Value::Uint32(64)));
    // (name, type, dims, offset): packed at alignment 64.
    let tensors: [(&str, u32, &[u64], u64); 3] =
        [("t.f32", F32, &[4, 3], 0), ("t.q4k", Q4_K, &[256], 64), ("t.i8", I8, &[5], 64 + 192)];
    let b = tensors
        .iter()
        .fold(build_kvs(&kvs), |b, (n, ty, dims, _)| b.tensor_info(tensor(n, *ty, dims)));
    let file = b.build();

    let mut f = Fields::default();
    f.field(b"GGUF", "header.magic");
    f.field(&3u32.to_le_bytes(), "header.version");
    f.field(&(tensors.len() as u64).to_le_bytes(), "header.counts");
    f.field(&(kvs.len() as u64).to_le_bytes(), "header.counts");
    for (i, (k, v)) in kvs.iter().enumerate() {
        // Until the key is complete the path has no key; then it names it.
        f.string(k.as_bytes(), &format!("metadata[{i}]"));
        let path = kv_path(i, k);
        f.field(&v.type_code().to_le_bytes(), &path);
        f.value(v, &path);
    }
    for (j, (name, ty, dims, offset)) in tensors.iter().enumerate() {
        f.string(name.as_bytes(), &format!("tensor[{j}]"));
        let path = tensor_path(j, name);
        f.field(&(dims.len() as u32).to_le_bytes(), &path);
        for d in *dims {
            f.field(&d.to_le_bytes(), &path);
        }
        f.field(&ty.to_le_bytes(), &path);
        f.field(&offset.to_le_bytes(), &path);
    }
    let directory_end = f.pos();
    let data_offset = align_up(directory_end, 64).unwrap();
    assert!(data_offset > directory_end, "the test wants padding to cut into");
    f.field(&vec![0; (data_offset - directory_end) as usize], "padding");
    assert_eq!(f.bytes, file[..data_offset as usize], "the field map is the builder's file");

    let mut checked = 0;
    for profile in [Profile::Strict, Profile::Lenient] {
        let opts = ParseOptions::new(profile).with_file_size(Some(file.len() as u64));
        // The untruncated file loads.
        assert_eq!(parse_with(&file[..], &opts).map(|g| g.kv_len()), Ok(kvs.len()));
        for cut in 0..data_offset {
            let (_, _, read_end, path) =
                f.fields.iter().find(|(start, end, ..)| (*start..*end).contains(&cut)).unwrap();
            let e = parse_with(&file[..cut as usize], &opts).unwrap_err();
            let got = (e.kind().clone(), e.offset(), e.path().to_string());
            let want = (ErrorKind::UnexpectedEof { needed: read_end - cut }, cut, path.clone());
            assert_eq!(got, want, "cut at {cut} [{}]", profile.name());
            assert_eq!(e.code(), "gguf::input::unexpected_eof");
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * data_offset);
}

#[test]
fn public_helpers_check_instead_of_asserting() {
    // align_up is public: an alignment that is not a power of two is an answer, not a panic.
    assert_eq!(align_up(5, 0), None);
    assert_eq!(align_up(5, 3), None);
    assert_eq!(align_up(5, 48), None);
    assert_eq!(align_up(5, 1 << 63), Some(1 << 63));
    assert_eq!(align_up(u64::MAX, 1), Some(u64::MAX));
    assert_eq!(align_up(u64::MAX - 3, 8), None);
    // Sizes of anything: errors, not panics or wrapped values.
    use sipllm_gguf::{ggml::SizeError, ggml::tensor_element_count, ggml::tensor_nbytes};
    assert_eq!(
        tensor_nbytes(GgmlType::from_code(u32::MAX), &[1]),
        Err(SizeError::UnsizedType(GgmlType::Unknown(u32::MAX)))
    );
    assert_eq!(tensor_element_count(&[u64::MAX, 2]), Err(SizeError::ElementCountOverflow));
    assert_eq!(tensor_nbytes(GgmlType::F32, &[u64::MAX]), Err(SizeError::ByteSizeOverflow));
    assert_eq!(GgmlType::from_code(u32::MAX).name(), "unknown");
    assert_eq!(GgmlType::from_code(u32::MAX).to_string(), "unknown type 4294967295");
    assert_eq!(ValueType::from_code(u32::MAX), None);
    // Spans past the end of the bytes, or past u64::MAX.
    let s = sipllm_gguf::ast::Span { offset: u64::MAX, len: 5 };
    assert_eq!((s.end(), s.slice(b"abc")), (u64::MAX, None));
}

#[test]
fn scalar_of_a_block_type_points_at_no_bytes() {
    let bytes = tensors_file(vec![tensor("t0", Q4_K, &[])]).build();
    let e = parse_with(&bytes[..], &ParseOptions::default()).unwrap_err();
    // The type field is at 38; the finding is the position of the (absent) dims, not 8 bytes
    // of the type and offset fields.
    assert_eq!((e.code(), e.offset(), e.len()), ("gguf::tensor::not_block_multiple", 38, 0));
    let bytes = tensors_file(vec![tensor("t0", Q4_K, &[255])]).build();
    let e = parse_with(&bytes[..], &ParseOptions::default()).unwrap_err();
    assert_eq!((e.code(), e.offset(), e.len()), ("gguf::tensor::not_block_multiple", 38, 8));
}
