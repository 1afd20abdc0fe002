//! One case per error kind: each malformed input is rejected with the expected code, at the
//! exact offset, with the expected path; and every chunking of it fails identically.

use std::collections::BTreeSet;

use sipllm_llmw::{Decoder, ErrorKind, Limits, ParseOptions, parse_with};

use crate::support::{Raw, assert_chunkings_agree};

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    limits: Limits,
    code: &'static str,
    offset: u64,
    path: &'static str,
}

fn case(name: &'static str, r: &Raw, code: &'static str, offset: u64, path: &'static str) -> Case {
    Case { name, bytes: r.build(), limits: Limits::default(), code, offset, path }
}

fn with_limits(mut c: Case, limits: Limits) -> Case {
    c.limits = limits;
    c
}

const F32: u32 = 0;
const F16: u32 = 1;
const Q8_0: u32 = 8;

/// A one-tensor file around a tensor info: header, the info, padding, 64 bytes of data.
fn one_tensor(name: &[u8], dtype: u32, dims: &[u64], offset: u64, size: u64) -> (Raw, u64) {
    let mut r = Raw::header(1, 1, 0);
    let at = r.pos();
    r.tensor(name, dtype, dims, offset, size);
    (r, at)
}

/// Offset of the dtype field of a tensor info starting at `at` with name `name`.
fn dtype_at(at: u64, name: &[u8]) -> u64 {
    at + 4 + name.len() as u64
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();

    // ----- header
    let mut r = Raw::new();
    r.bytes(b"GGUF").u32(3).u64(0).u64(0);
    v.push(case("bad magic", &r, "llmw::header::bad_magic", 0, "header.magic"));
    let r = Raw::header(3, 0, 0);
    v.push(case("version 3", &r, "llmw::header::unsupported_version", 4, "header.version"));
    let r = Raw::header(0, 0, 0);
    v.push(case("version 0", &r, "llmw::header::unsupported_version", 4, "header.version"));

    // ----- truncation
    let mut r = Raw::header(1, 0, 1);
    r.str(b"key");
    let end = r.pos();
    v.push(case("no tag", &r, "llmw::input::unexpected_eof", end, "metadata[0] \"key\""));

    // ----- limits
    let mut r = Raw::header(1, 0, 1);
    r.u32(100).bytes(&[b'k'; 100]).u8(0).i64(0);
    let small_header = Limits { max_header_bytes: 64, ..Limits::default() };
    v.push(with_limits(
        case(
            "key past the header limit",
            &r,
            "llmw::limits::header_too_large",
            16,
            "metadata[0] key",
        ),
        small_header,
    ));
    let mut r = Raw::header(2, 0, 1);
    r.str(b"k");
    let count_at = r.pos() + 1;
    r.u8(3).u32(10);
    v.push(with_limits(
        case(
            "i64 array past the header limit",
            &r,
            "llmw::limits::header_too_large",
            count_at,
            "metadata[0] \"k\" count",
        ),
        small_header,
    ));
    let (mut r, _) = one_tensor(b"t", F32, &[16], 64, 64);
    let dir_end = r.pos();
    r.pad_to(64).bytes(&[0; 64]);
    v.push(with_limits(
        case(
            "padding past the header limit",
            &r,
            "llmw::limits::header_too_large",
            dir_end,
            "padding",
        ),
        Limits { max_header_bytes: 60, ..Limits::default() },
    ));
    let r = Raw::header(1, 0, 2);
    v.push(with_limits(
        case("too many entries", &r, "llmw::limits::too_many_meta", 12, "header.meta_count"),
        Limits { max_meta_count: 1, ..Limits::default() },
    ));
    let r = Raw::header(1, 2, 0);
    v.push(with_limits(
        case("too many tensors", &r, "llmw::limits::too_many_tensors", 8, "header.tensor_count"),
        Limits { max_tensor_count: 1, ..Limits::default() },
    ));
    let mut r = Raw::header(1, 0, 1);
    r.meta_str(b"abcde", b"");
    v.push(with_limits(
        case("long key", &r, "llmw::limits::string_too_long", 16, "metadata[0] key"),
        Limits { max_string_len: 4, ..Limits::default() },
    ));
    let mut r = Raw::header(2, 0, 1);
    r.str(b"k");
    let count_at = r.pos() + 1;
    r.u8(5).u32(3).str(b"a").str(b"b").str(b"c");
    v.push(with_limits(
        case("long array", &r, "llmw::limits::array_too_long", count_at, "metadata[0] \"k\" count"),
        Limits { max_array_len: 2, ..Limits::default() },
    ));

    // ----- metadata
    let mut r = Raw::header(1, 0, 1);
    r.meta_i64(b"", 1);
    v.push(case("empty key", &r, "llmw::metadata::empty_key", 16, "metadata[0] \"\" key"));
    let mut r = Raw::header(1, 0, 1);
    r.meta_i64(b"ab\xff", 1);
    v.push(case(
        "key not UTF-8",
        &r,
        "llmw::metadata::invalid_utf8_key",
        22,
        "metadata[0] \"ab\u{FFFD}\" key",
    ));
    let mut r = Raw::header(1, 0, 1);
    r.str(b"k").u8(2);
    let at = r.pos() + 4 + 1;
    r.str(b"x\xc3");
    v.push(case(
        "value not UTF-8",
        &r,
        "llmw::metadata::invalid_utf8_value",
        at,
        "metadata[0] \"k\" value",
    ));
    let mut r = Raw::header(2, 0, 1);
    r.str(b"vocab").u8(5).u32(3).str(b"ok");
    let at = r.pos() + 4;
    r.str(b"\x80").str(b"never read");
    v.push(case(
        "element not UTF-8",
        &r,
        "llmw::metadata::invalid_utf8_value",
        at,
        "metadata[0] \"vocab\"[1]",
    ));
    let mut r = Raw::header(1, 0, 2);
    r.meta_i64(b"k", 1);
    let at = r.pos() + 4;
    r.meta_i64(b"k", 2);
    v.push(case("duplicate key", &r, "llmw::metadata::duplicate_key", at, "metadata[1] \"k\" key"));
    let mut r = Raw::header(2, 0, 1);
    r.str(b"k");
    let at = r.pos();
    r.u8(6).i64(0);
    v.push(case("unknown tag", &r, "llmw::metadata::unknown_tag", at, "metadata[0] \"k\" tag"));
    let mut r = Raw::header(1, 0, 1);
    r.str(b"k");
    let at = r.pos();
    r.u8(3).u32(0);
    v.push(case(
        "array in version 1",
        &r,
        "llmw::metadata::array_in_v1",
        at,
        "metadata[0] \"k\" tag",
    ));

    // ----- tensor infos
    let (r, _) = one_tensor(b"", F32, &[16], 64, 64);
    v.push(case("empty name", &r, "llmw::tensor::empty_name", 16, "tensor[0] \"\" name"));
    let (r, _) = one_tensor(b"\xffa", F32, &[16], 64, 64);
    v.push(case(
        "name not UTF-8",
        &r,
        "llmw::tensor::invalid_utf8_name",
        20,
        "tensor[0] \"\u{FFFD}a\" name",
    ));
    let mut r = Raw::header(1, 2, 0);
    r.tensor(b"t", F32, &[16], 128, 64);
    let at = r.pos() + 4;
    r.tensor(b"t", F32, &[16], 192, 64);
    v.push(case("duplicate name", &r, "llmw::tensor::duplicate_name", at, "tensor[1] \"t\" name"));
    let (r, at) = one_tensor(b"t", 999, &[16], 64, 64);
    v.push(case(
        "unknown dtype",
        &r,
        "llmw::tensor::unknown_dtype",
        dtype_at(at, b"t"),
        "tensor[0] \"t\" dtype",
    ));
    let (r, at) = one_tensor(b"t", 4, &[32], 64, 64);
    v.push(case(
        "removed dtype",
        &r,
        "llmw::tensor::removed_dtype",
        dtype_at(at, b"t"),
        "tensor[0] \"t\" dtype",
    ));
    let (r, at) = one_tensor(b"t", F32, &[], 64, 64);
    v.push(case(
        "0 dims",
        &r,
        "llmw::tensor::bad_dim_count",
        dtype_at(at, b"t") + 4,
        "tensor[0] \"t\" n_dims",
    ));
    let (r, at) = one_tensor(b"t", F32, &[1, 1, 1, 1, 16], 64, 64);
    v.push(case(
        "5 dims",
        &r,
        "llmw::tensor::bad_dim_count",
        dtype_at(at, b"t") + 4,
        "tensor[0] \"t\" n_dims",
    ));
    let (r, at) = one_tensor(b"t", F32, &[3, 0], 64, 0);
    v.push(case(
        "zero dim",
        &r,
        "llmw::tensor::zero_dim",
        dtype_at(at, b"t") + 16,
        "tensor[0] \"t\" dims[1]",
    ));
    let (r, at) = one_tensor(b"t", Q8_0, &[2, 33], 64, 68);
    v.push(case(
        "row not a block multiple",
        &r,
        "llmw::tensor::not_block_multiple",
        dtype_at(at, b"t") + 16,
        "tensor[0] \"t\" dims[1]",
    ));
    let (r, at) = one_tensor(b"t", F32, &[1 << 32, 1 << 32], 64, 0);
    v.push(case(
        "element count overflow",
        &r,
        "llmw::tensor::element_count_overflow",
        dtype_at(at, b"t") + 8,
        "tensor[0] \"t\" dims",
    ));
    let (r, at) = one_tensor(b"t", F16, &[2, 1 << 62], 64, 0);
    v.push(case(
        "byte size overflow",
        &r,
        "llmw::tensor::byte_size_overflow",
        dtype_at(at, b"t") + 8,
        "tensor[0] \"t\" dims",
    ));
    let (r, at) = one_tensor(b"t", F32, &[16], 64, 60);
    v.push(case(
        "size disagrees with dtype x dims",
        &r,
        "llmw::tensor::size_mismatch",
        dtype_at(at, b"t") + 4 + 4 + 8 + 8,
        "tensor[0] \"t\" size",
    ));

    // ----- layout
    let (r, at) = one_tensor(b"t", F32, &[16], 65, 64);
    let offset_field = dtype_at(at, b"t") + 16;
    v.push(case(
        "misaligned",
        &r,
        "llmw::layout::misaligned",
        offset_field,
        "tensor[0] \"t\" offset",
    ));
    let mut r = Raw::header(1, 2, 0);
    r.tensor(b"a", F32, &[16], 192, 64);
    let second = r.pos();
    r.tensor(b"b", F32, &[16], 128, 64);
    let second_offset = dtype_at(second, b"b") + 16;
    v.push(case(
        "out of order",
        &r,
        "llmw::layout::out_of_order",
        second_offset,
        "tensor[1] \"b\" offset",
    ));
    let mut r = Raw::header(1, 2, 0);
    r.tensor(b"a", F32, &[32], 128, 128);
    r.tensor(b"b", F32, &[16], 192, 64);
    v.push(case("overlap", &r, "llmw::layout::overlap", second_offset, "tensor[1] \"b\" offset"));
    let (r, _) = one_tensor(b"t", F32, &[16], !63, 64);
    v.push(case(
        "offset overflow",
        &r,
        "llmw::layout::offset_overflow",
        offset_field,
        "tensor[0] \"t\" offset",
    ));
    let (mut r, _) = one_tensor(b"t", F32, &[16], 0, 64);
    r.pad_to(64).bytes(&[0; 64]);
    v.push(case(
        "data inside the header",
        &r,
        "llmw::layout::before_data_section",
        offset_field,
        "tensor[0] \"t\" offset",
    ));
    let (mut r, _) = one_tensor(b"t", F32, &[16], 64, 64);
    r.pad_to(64).bytes(&[0; 63]);
    v.push(case(
        "data past the end",
        &r,
        "llmw::layout::out_of_bounds",
        offset_field,
        "tensor[0] \"t\" offset",
    ));
    let (mut r, _) = one_tensor(b"t", F32, &[16], 64, 64);
    r.pad_to(60).u8(1).pad_to(64).bytes(&[0; 64]);
    v.push(case("padding not zero", &r, "llmw::layout::nonzero_padding", 60, "padding"));
    v
}

#[test]
fn every_error_kind_is_rejected_with_code_offset_and_path() {
    let mut covered = BTreeSet::new();
    for c in cases() {
        let opts = ParseOptions::default()
            .with_limits(c.limits)
            .with_file_size(Some(c.bytes.len() as u64));
        let err = parse_with(&c.bytes, &opts).expect_err(c.name);
        assert_eq!(err.code(), c.code, "{}: {err}", c.name);
        assert_eq!(err.offset(), c.offset, "{}: {err}", c.name);
        assert_eq!(err.path().to_string(), c.path, "{}: {err}", c.name);
        assert!(!err.help().is_empty());
        assert!(err.to_string().contains(&format!("(at byte {})", c.offset)));
        // The same error whatever the chunking.
        let chunked = assert_chunkings_agree(&c.bytes, &opts).expect_err(c.name);
        assert_eq!(chunked, err, "{}", c.name);
        covered.insert(c.code);
    }
    covered.insert(misuse_code());
    let all: BTreeSet<&str> = ErrorKind::CODES.iter().copied().collect();
    let missing: Vec<_> = all.difference(&covered).collect();
    assert!(missing.is_empty(), "error kinds without a malformed case: {missing:?}");
}

/// Driving the decoder against its contract is reported, not a panic.
fn misuse_code() -> &'static str {
    let bytes = Raw::header(1, 0, 0).build();
    let mut decoder = Decoder::new(ParseOptions::default());
    decoder.decode(&bytes).unwrap();
    let err = decoder.decode(&bytes[..4]).unwrap_err();
    assert_eq!((err.code(), err.offset()), ("llmw::decoder::misuse", 16));
    let err = decoder.decode(&bytes).unwrap_err();
    assert_eq!(err.code(), "llmw::decoder::misuse", "poisoned after an error");

    let mut decoder = Decoder::new(ParseOptions::default());
    assert!(decoder.decode(b"XXXX").is_err());
    assert_eq!(decoder.decode(b"XXXX").unwrap_err().code(), "llmw::decoder::misuse");
    let decoder = Decoder::new(ParseOptions::default());
    assert_eq!(decoder.finish().unwrap_err().code(), "llmw::decoder::misuse");
    "llmw::decoder::misuse"
}

#[test]
fn errors_print_where_what_and_how_to_fix() {
    let mut r = Raw::header(1, 0, 2);
    r.meta_i64(b"general.name", 1).meta_i64(b"general.name", 2);
    let err = sipllm_llmw::parse(&r.build()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "metadata[1] \"general.name\" key: duplicate key (first defined by metadata[0]) (at byte 45)"
    );
    assert_eq!(err.len(), 12);
    assert!(err.help().contains("remove one"));
}
