//! Inputs for differential runs against other GGUF readers (the ggml oracle:
//! `tests/it/ggml_differential.rs`): hand-made files at the edges of the format, and byte- and
//! field-level mutants of any base file. Deterministic (seeded), pure (no I/O).
//!
//! Field mutants find each field of a base file from a lenient parse (the fixed header, every
//! key's length, type and value, every array's element type and count, every tensor's name,
//! `n_dims`, dims, type and offset) and overwrite it with values at the boundaries readers
//! check: 0, 1, powers of two, `INT64_MAX` and its neighbours, the divisions ggml's
//! element-count check makes, type codes at the ends of the tables. Semantic mutants rename
//! keys into `general.alignment` (whole, or up to a NUL byte), put NUL bytes into keys and
//! tensor names, and copy one tensor's name onto another.

use sipllm_gguf::{Endian, ParseOptions, Profile};
use sipllm_testkit::{GgufBuilder, Tensor, Value};

/// One input: a name saying how it was made, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// How it was made: `base/field-or-op/value`.
    pub name: String,
    /// The file.
    pub bytes: Vec<u8>,
}

impl Mutant {
    fn new(name: impl Into<String>, bytes: Vec<u8>) -> Mutant {
        Mutant { name: name.into(), bytes }
    }
}

/// A small deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// 32-bit values at the boundaries: type codes at the ends of the value-type (0–12) and ggml
/// type (0–42, removed 4, 5, 31–33, 36–38) tables, versions, alignments, `n_dims`.
pub const INTERESTING_U32: &[u32] = &[
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    9,
    10,
    12,
    13,
    16,
    24,
    30,
    31,
    34,
    36,
    39,
    42,
    43,
    64,
    0x100,
    0x0300_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// 64-bit values at the boundaries: lengths and counts around ggml's caps (2^30), sizes
/// around `INT64_MAX` and `u64::MAX`, and the divisions of ggml's element-count check
/// (`INT64_MAX / 3` and its neighbours).
pub const INTERESTING_U64: &[u64] = &[
    0,
    1,
    2,
    3,
    31,
    32,
    33,
    63,
    64,
    65,
    256,
    1 << 30,
    (1 << 30) + 1,
    1 << 31,
    1 << 32,
    (1 << 32) + 1,
    1 << 40,
    (1 << 61) - 1,
    1 << 62,
    (1 << 62) + 1,
    i64::MAX as u64 / 3,
    i64::MAX as u64 / 3 + 1,
    i64::MAX as u64 - 1,
    i64::MAX as u64,
    1 << 63,
    u64::MAX - 7,
    u64::MAX,
];

/// A field of a base file: where it is, how wide, and what it is.
#[derive(Debug, Clone)]
struct Field {
    at: usize,
    width: usize,
    what: String,
}

/// A base file's fields, and the (offset, length) of every key and tensor name.
struct Layout {
    fields: Vec<Field>,
    keys: Vec<(usize, usize)>,
    names: Vec<(usize, usize)>,
    endian: Endian,
}

/// The fields of `base`, from a lenient parse without limits (none if it does not parse).
fn fields(base: &[u8]) -> Layout {
    let unlimited = sipllm_testkit::unlimited_limits();
    let opts = ParseOptions::new(Profile::Lenient).with_limits(unlimited).with_v1(true);
    let Ok(g) = sipllm_gguf::parse_with(base, &opts) else {
        return Layout {
            fields: Vec::new(),
            keys: Vec::new(),
            names: Vec::new(),
            endian: Endian::Little,
        };
    };
    let endian = g.endian();
    let wide = g.version() != 1;
    let len = if wide { 8 } else { 4 };
    let f = |at: u64, width: usize, what: String| Field { at: at as usize, width, what };
    let mut out = vec![
        f(4, 4, "version".into()),
        f(8, len, "n_tensors".into()),
        f(8 + len as u64, len, "n_kv".into()),
    ];
    let mut keys = Vec::new();
    for (i, e) in g.metadata().enumerate() {
        let key = e.kv.key_span();
        keys.push((key.offset as usize, key.len as usize));
        let type_at = key.offset + key.len;
        out.push(f(key.offset - len as u64, len, format!("kv{i}.key_len")));
        out.push(f(type_at, 4, format!("kv{i}.type")));
        let value = e.kv.value_span();
        match e.kv.array_head() {
            Some(_) => {
                out.push(f(type_at + 4, 4, format!("kv{i}.elem_type")));
                out.push(f(type_at + 8, len, format!("kv{i}.count")));
            }
            None if e.kv.value_type() == sipllm_gguf::ValueType::String => {
                out.push(f(value.offset - len as u64, len, format!("kv{i}.str_len")));
            }
            None if value.len > 0 => {
                out.push(f(value.offset, value.len as usize, format!("kv{i}.value")));
            }
            None => {}
        }
    }
    let mut names = Vec::new();
    for (i, t) in g.tensor_infos().iter().enumerate() {
        let name = t.name_span();
        names.push((name.offset as usize, name.len as usize));
        let n_dims_at = name.offset + name.len;
        out.push(f(name.offset - len as u64, len, format!("t{i}.name_len")));
        out.push(f(n_dims_at, 4, format!("t{i}.n_dims")));
        let dims_at = n_dims_at + 4;
        for j in 0..t.dims().len() as u64 {
            out.push(f(dims_at + j * len as u64, len, format!("t{i}.ne{j}")));
        }
        let type_at = dims_at + t.dims().len() as u64 * len as u64;
        out.push(f(type_at, 4, format!("t{i}.type")));
        out.push(f(type_at + 4, 8, format!("t{i}.offset")));
    }
    Layout { fields: out, keys, names, endian }
}

fn put(bytes: &mut [u8], at: usize, width: usize, value: u64, endian: Endian) {
    let le = value.to_le_bytes();
    let be = value.to_be_bytes();
    let src: &[u8] = match endian {
        Endian::Little => &le[..width],
        Endian::Big => &be[8 - width..],
    };
    if let Some(dst) = bytes.get_mut(at..at + width) {
        dst.copy_from_slice(src);
    }
}

fn get(bytes: &[u8], at: usize, width: usize, endian: Endian) -> u64 {
    let Some(src) = bytes.get(at..at + width) else { return 0 };
    src.iter().enumerate().fold(0u64, |acc, (k, &b)| match endian {
        Endian::Little => acc | u64::from(b) << (8 * k),
        Endian::Big => acc << 8 | u64::from(b),
    })
}

/// Field-level mutants of `base`: every field found by a lenient parse, set to boundary
/// values (and to its own value ± 1, × 2), plus the semantic mutants of the module docs. At
/// most `max`, chosen evenly over the fields when there are more (`seed` picks which).
pub fn field_mutants(base_name: &str, base: &[u8], max: usize, seed: u64) -> Vec<Mutant> {
    let Layout { fields, keys, names, endian } = fields(base);
    let mut out = Vec::new();
    for field in &fields {
        let own = get(base, field.at, field.width, endian);
        let mut values: Vec<u64> = if field.width == 8 {
            INTERESTING_U64.to_vec()
        } else if field.width == 4 {
            INTERESTING_U32.iter().map(|&v| u64::from(v)).collect()
        } else {
            vec![0, 1, 2, 0x7f, 0x80, 0xff, u64::MAX]
        };
        values.extend([own.wrapping_add(1), own.wrapping_sub(1), own.wrapping_mul(2)]);
        values.sort_unstable();
        values.dedup();
        for v in values.into_iter().filter(|&v| v != own) {
            let mut bytes = base.to_vec();
            put(&mut bytes, field.at, field.width, v, endian);
            out.push(Mutant::new(format!("{base_name}/{}={v:#x}", field.what), bytes));
        }
    }
    // Semantic mutants: keys renamed into general.alignment (whole or up to a NUL byte), NUL
    // bytes in keys and names, a tensor name copied onto the next.
    const ALIGN: &[u8] = b"general.alignment";
    for (i, &(at, len)) in keys.iter().enumerate() {
        if len >= ALIGN.len() {
            let mut bytes = base.to_vec();
            bytes[at..at + ALIGN.len()].copy_from_slice(ALIGN);
            if len > ALIGN.len() {
                bytes[at + ALIGN.len()] = 0;
            }
            out.push(Mutant::new(format!("{base_name}/kv{i}.key=general.alignment\\0"), bytes));
        }
        for pos in [0, len / 2, len.saturating_sub(1)] {
            if pos < len {
                let mut bytes = base.to_vec();
                bytes[at + pos] = 0;
                out.push(Mutant::new(format!("{base_name}/kv{i}.key[{pos}]=NUL"), bytes));
            }
        }
    }
    for (i, &(at, len)) in names.iter().enumerate() {
        for pos in [0, len / 2, len.saturating_sub(1)] {
            if pos < len {
                let mut bytes = base.to_vec();
                bytes[at + pos] = 0;
                out.push(Mutant::new(format!("{base_name}/t{i}.name[{pos}]=NUL"), bytes));
            }
        }
        if let Some(&(next_at, next_len)) = names.get(i + 1) {
            // The next name becomes this one up to its length, then NULs: equal as C strings.
            let mut bytes = base.to_vec();
            let n = len.min(next_len);
            let copy = base[at..at + n].to_vec();
            bytes[next_at..next_at + n].copy_from_slice(&copy);
            bytes[next_at + n..next_at + next_len].fill(0);
            out.push(Mutant::new(format!("{base_name}/t{}.name=t{i}", i + 1), bytes));
        }
    }
    if out.len() > max {
        let mut rng = Rng::new(seed);
        // Keep an even spread: a random choice of `max` (a partial Fisher–Yates shuffle).
        for k in 0..max {
            let j = k + rng.below((out.len() - k) as u64) as usize;
            out.swap(k, j);
        }
        out.truncate(max);
    }
    out
}

/// `n` byte-level mutants of `base`: bit flips, bytes and 8-byte words set to boundary
/// values, truncations, insertions, deletions and duplicated runs. Positions favour the first
/// `hot` bytes (the header and directory, where readers decide), three times in four.
pub fn byte_mutants(base_name: &str, base: &[u8], hot: usize, n: usize, seed: u64) -> Vec<Mutant> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    if base.is_empty() {
        return out;
    }
    let hot = hot.clamp(1, base.len());
    for _ in 0..n {
        let mut bytes = base.to_vec();
        let len = bytes.len();
        let at = |rng: &mut Rng| {
            if rng.below(4) < 3 {
                rng.below(hot as u64) as usize
            } else {
                rng.below(len as u64) as usize
            }
        };
        let pos = at(&mut rng);
        let name = match rng.below(8) {
            0 => {
                let bit = rng.below(8);
                bytes[pos] ^= 1 << bit;
                format!("flip@{pos}.{bit}")
            }
            1 => {
                let v = rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff, b'\0', b'G']);
                bytes[pos] = v;
                format!("byte@{pos}={v:#x}")
            }
            2 | 3 => {
                let v = rng.pick(INTERESTING_U64);
                let le = v.to_le_bytes();
                let end = (pos + 8).min(len);
                bytes[pos..end].copy_from_slice(&le[..end - pos]);
                format!("u64@{pos}={v:#x}")
            }
            4 => {
                bytes.truncate(pos);
                format!("truncate@{pos}")
            }
            5 => {
                let v = rng.next_u64() as u8;
                bytes.insert(pos, v);
                format!("insert@{pos}={v:#x}")
            }
            6 => {
                let k = 1 + rng.below(16) as usize;
                let end = (pos + k).min(len);
                bytes.drain(pos..end);
                format!("delete@{pos}+{k}")
            }
            _ => {
                let k = 1 + rng.below(32) as usize;
                let end = (pos + k).min(len);
                let run = bytes[pos..end].to_vec();
                bytes.splice(pos..pos, run);
                format!("dup@{pos}+{k}")
            }
        };
        out.push(Mutant::new(format!("{base_name}/{name}"), bytes));
    }
    out
}

fn f32_tensor(name: &[u8], dims: &[u64]) -> Tensor {
    Tensor {
        name: name.to_vec(),
        dims: dims.to_vec(),
        type_code: 0,
        offset: None,
        n_dims: None,
        data: None,
    }
}

/// Hand-made files at the edges the ggml oracle found, or could find: alignment keys (whole,
/// up to a NUL, of every type, with and without tensors), NUL bytes in keys and names, names
/// of 63–65 bytes, zero dimensions beside overflowing products, the boundaries of ggml's
/// element-count check, every ggml type code with a one-block row, offsets contiguous and not,
/// and files without tensors whose directory ends on and off the alignment.
pub fn crafted() -> Vec<Mutant> {
    let mut out = Vec::new();
    let scalars: [(&str, Value); 7] = [
        ("u8", Value::Uint8(64)),
        ("u32-64", Value::Uint32(64)),
        ("u32-3", Value::Uint32(3)),
        ("u32-0", Value::Uint32(0)),
        ("bool", Value::Bool(true)),
        ("u64", Value::Uint64(64)),
        ("str", Value::str("64")),
    ];
    let keys: [&[u8]; 5] = [
        b"general.alignment",
        b"general.alignment\0",
        b"general.alignment\0x",
        b"general.alignmen",
        b"general.alignment.x",
    ];
    for key in keys {
        for (label, value) in &scalars {
            for with_tensor in [false, true] {
                let mut b = GgufBuilder::new().kv_bytes(key, value.clone());
                if with_tensor {
                    b = b.tensor_info(f32_tensor(b"t0", &[4])).layout_alignment(64);
                }
                let name = format!("crafted/align/{}/{label}/{with_tensor}", key.escape_ascii());
                out.push(Mutant::new(name, b.build()));
            }
        }
        // The alignment key twice: first up to a NUL, then whole (or the reverse).
        let orders =
            [(Value::Uint32(64), Value::Bool(true)), (Value::Bool(true), Value::Uint32(64))];
        for (k, (first, second)) in orders.into_iter().enumerate() {
            let b = GgufBuilder::new()
                .kv_bytes(key, first)
                .kv_bytes(b"general.alignment", second)
                .tensor_info(f32_tensor(b"t0", &[4]))
                .layout_alignment(64);
            out.push(Mutant::new(format!("crafted/align2/{}/{k}", key.escape_ascii()), b.build()));
        }
    }
    // NUL bytes in keys and names; C-string duplicates.
    let pairs: [(&[u8], &[u8]); 6] = [
        (b"ab", b"ab"),
        (b"ab\0cd", b"ab"),
        (b"ab", b"ab\0cd"),
        (b"a\0x", b"a\0y"),
        (b"\0", b"\0a"),
        (b"ab\0", b"ab"),
    ];
    for (a, b) in pairs {
        let keys = GgufBuilder::new().kv_bytes(a, Value::Uint8(1)).kv_bytes(b, Value::Uint8(2));
        out.push(Mutant::new(
            format!("crafted/keys/{}/{}", a.escape_ascii(), b.escape_ascii()),
            keys.build(),
        ));
        let names =
            GgufBuilder::new().tensor_info(f32_tensor(a, &[4])).tensor_info(f32_tensor(b, &[4]));
        out.push(Mutant::new(
            format!("crafted/names/{}/{}", a.escape_ascii(), b.escape_ascii()),
            names.build(),
        ));
    }
    // Names around GGML_MAX_NAME (64), with a NUL before the end.
    for len in [62usize, 63, 64, 65] {
        for nul_at in [None, Some(10)] {
            let mut name = vec![b'n'; len];
            if let Some(k) = nul_at {
                name[k] = 0;
            }
            let b = GgufBuilder::new().tensor_info(f32_tensor(&name, &[4]));
            out.push(Mutant::new(format!("crafted/name_len/{len}/{nul_at:?}"), b.build()));
        }
    }
    // Shapes: zero dimensions beside overflowing products, the boundaries of ggml's check.
    let max = i64::MAX as u64;
    let shapes: &[&[u64]] = &[
        &[1 << 40, 1 << 40, 0],
        &[0, 1 << 40, 1 << 40],
        &[1 << 40, 0, 1 << 40, 1 << 40],
        &[0],
        &[2, max / 3],
        &[2, max / 3 + 1],
        &[3, max / 3],
        &[1, max],
        &[max],
        &[max - 1],
        &[1 << 32, 1 << 32],
        &[1 << 32, 1 << 31],
        &[3, (1 << 62) + 1],
        &[(1 << 32) + 1, 1 << 32],
        &[1 << 62, 2],
        &[1 << 31, 1 << 31, 2],
        &[1 << 63],
        &[u64::MAX],
        &[4, 1 << 61],
        &[(1 << 61) - 1],
        &[(1 << 62) - 1],
        &[max - 1, 1, 1, 1],
    ];
    for dims in shapes {
        for ty in [0u32, 24, 27, 30] {
            let t = Tensor { type_code: ty, offset: Some(0), ..f32_tensor(b"t0", dims) };
            let b = GgufBuilder::new().tensor_info(t).with_data(false);
            let mut bytes = b.build_header();
            bytes.resize(bytes.len().div_ceil(32) * 32 + 64, 0);
            out.push(Mutant::new(format!("crafted/shape/{dims:?}/{ty}"), bytes));
        }
    }
    // Every ggml type code, with a row of one block when the type has one.
    for code in 0..46u32 {
        let ty = sipllm_gguf::GgmlType::from_code(code);
        let ne0 = ty.block_size().unwrap_or(32);
        for dims in [vec![ne0], vec![ne0 + 1], vec![ne0, 2]] {
            let t = Tensor { type_code: code, ..f32_tensor(b"t0", &dims) };
            out.push(Mutant::new(
                format!("crafted/type/{code}/{dims:?}"),
                GgufBuilder::new().tensor_info(t).build(),
            ));
        }
    }
    // Offsets: packed, a gap, out of order, misaligned, overlapping.
    for (label, offsets) in [
        ("packed", [0u64, 32]),
        ("gap", [0, 64]),
        ("order", [32, 0]),
        ("misaligned", [0, 16]),
        ("overlap", [0, 0]),
    ] {
        let b = GgufBuilder::new()
            .tensor_info(Tensor { offset: Some(offsets[0]), ..f32_tensor(b"t0", &[4]) })
            .tensor_info(Tensor { offset: Some(offsets[1]), ..f32_tensor(b"t1", &[4]) });
        out.push(Mutant::new(format!("crafted/offsets/{label}"), b.build()));
    }
    // No tensors: the directory's end on and off the alignment, with and without padding.
    for key_len in [1usize, 4, 8, 12] {
        let key = "k".repeat(key_len);
        let b = GgufBuilder::new().kv(&key, Value::Uint32(7));
        let header = b.build_header();
        let mut padded = header.clone();
        padded.resize(header.len().div_ceil(32) * 32, 0);
        out.push(Mutant::new(format!("crafted/no_tensors/{key_len}"), header));
        out.push(Mutant::new(format!("crafted/no_tensors/{key_len}/padded"), padded));
    }
    // Values llama.cpp reads loosely: bools, nested arrays, empty keys, duplicate keys.
    for (label, b) in [
        ("bool2", GgufBuilder::new().kv("b", Value::Raw { type_code: 7, bytes: vec![2] })),
        (
            "nested",
            GgufBuilder::new()
                .kv("a", Value::Array(9, vec![Value::Array(0, vec![Value::Uint8(1)])])),
        ),
        ("empty_key", GgufBuilder::new().kv("", Value::Uint8(1))),
        ("dup_key", GgufBuilder::new().kv("a", Value::Uint8(1)).kv("a", Value::Uint8(2))),
        ("big_endian", GgufBuilder::new().kv("a", Value::Uint8(1)).endian(Endian::Big)),
        ("v1", GgufBuilder::new().kv("a", Value::Uint8(1)).version(1)),
        ("v2", GgufBuilder::new().kv("a", Value::Uint8(1)).version(2)),
        ("v4", GgufBuilder::new().kv("a", Value::Uint8(1)).version(4)),
    ] {
        out.push(Mutant::new(format!("crafted/values/{label}"), b.build()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_deterministic_and_change_the_base() {
        let base = GgufBuilder::new()
            .kv("general.architecture", Value::str("llama"))
            .kv("llama.block_count", Value::Uint32(2))
            .tensor_info(f32_tensor(b"blk.0.w", &[8, 2]))
            .tensor_info(f32_tensor(b"blk.1.w", &[8, 2]))
            .build();
        let a = byte_mutants("b", &base, 128, 50, 7);
        assert_eq!(a, byte_mutants("b", &base, 128, 50, 7));
        assert_ne!(a, byte_mutants("b", &base, 128, 50, 8));
        assert_eq!(a.len(), 50);
        // A byte may be set to the value it had; nearly all change something.
        assert!(a.iter().filter(|m| m.bytes != base).count() >= 45);
        let f = field_mutants("b", &base, 10_000, 1);
        assert!(f.iter().all(|m| m.bytes != base && m.bytes.len() == base.len()), "in place");
        // Every field kind is reached, and the semantic mutants are there.
        for what in ["n_kv=", "kv1.type=", "kv0.str_len=", "t0.ne1=", "t1.offset=", "t1.name=t0"] {
            assert!(f.iter().any(|m| m.name.contains(what)), "{what}");
        }
        let renamed = f.iter().find(|m| m.name.ends_with("kv0.key=general.alignment\\0")).unwrap();
        assert!(renamed.bytes.windows(18).any(|w| w == b"general.alignment\0"));
        assert_eq!(field_mutants("b", &base, 5, 1).len(), 5);
    }

    #[test]
    fn crafted_inputs_have_unique_names() {
        let all = crafted();
        let mut names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate crafted names");
        assert!(n > 300, "{n}");
    }
}
