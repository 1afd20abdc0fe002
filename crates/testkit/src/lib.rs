//! A GGUF byte builder for tests, fuzz seeds, benchmarks and doc examples: test support, no
//! part of the parser's public surface.
//!
//! It writes a valid file by default (v3, little-endian, tensors packed at the alignment, data
//! filled with a deterministic pattern) and lets every field be overridden — magic, version,
//! counts, string lengths, array counts, type codes, `n_dims`, offsets, padding — so tests
//! build their hostile inputs instead of shipping blobs. It is not the GGUF writer: it will
//! happily write files no reader accepts.

pub mod check;
pub mod command;
pub mod corpus;
pub mod temp;

use sipllm_gguf::Endian;
use sipllm_gguf::ggml::{GgmlType, align_up, tensor_nbytes};
use sipllm_gguf::value::{ArrayView, MetaValue, ValueType};

/// A value to write. The scalar variants mirror [`ValueType`]; the rest write malformed data.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Value {
    Uint8(u8),
    Int8(i8),
    Uint16(u16),
    Int16(i16),
    Uint32(u32),
    Int32(i32),
    Float32(f32),
    Bool(bool),
    /// A string (bytes, so invalid UTF-8 can be written).
    String(Vec<u8>),
    /// An array: element type code and elements (written without per-element tags).
    Array(u32, Vec<Value>),
    Uint64(u64),
    Int64(i64),
    Float64(f64),
    /// A string whose length field says `declared` instead of `bytes.len()`.
    StringWithLen {
        declared: u64,
        bytes: Vec<u8>,
    },
    /// An array whose count field says `declared` instead of the number of elements.
    ArrayWithLen {
        elem_type: u32,
        declared: u64,
        elems: Vec<Value>,
    },
    /// Any type code followed by raw value bytes (as an array element: just the bytes).
    Raw {
        type_code: u32,
        bytes: Vec<u8>,
    },
}

impl Value {
    /// A UTF-8 string.
    pub fn str(s: &str) -> Value {
        Value::String(s.as_bytes().to_vec())
    }

    /// An array of strings.
    pub fn strings<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
        Value::Array(
            ValueType::String.code(),
            items.into_iter().map(|s| Value::str(s.as_ref())).collect(),
        )
    }

    /// An array with the given element type.
    pub fn array(elem_type: ValueType, elems: Vec<Value>) -> Value {
        Value::Array(elem_type.code(), elems)
    }

    /// The type code written before this value.
    pub fn type_code(&self) -> u32 {
        match self {
            Value::Uint8(_) => 0,
            Value::Int8(_) => 1,
            Value::Uint16(_) => 2,
            Value::Int16(_) => 3,
            Value::Uint32(_) => 4,
            Value::Int32(_) => 5,
            Value::Float32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) | Value::StringWithLen { .. } => 8,
            Value::Array(..) | Value::ArrayWithLen { .. } => 9,
            Value::Uint64(_) => 10,
            Value::Int64(_) => 11,
            Value::Float64(_) => 12,
            Value::Raw { type_code, .. } => *type_code,
        }
    }

    /// The builder value equal to a parsed value (for round-trip comparisons).
    pub fn from_meta(v: &MetaValue<'_>) -> Value {
        match *v {
            MetaValue::Uint8(x) => Value::Uint8(x),
            MetaValue::Int8(x) => Value::Int8(x),
            MetaValue::Uint16(x) => Value::Uint16(x),
            MetaValue::Int16(x) => Value::Int16(x),
            MetaValue::Uint32(x) => Value::Uint32(x),
            MetaValue::Int32(x) => Value::Int32(x),
            MetaValue::Float32(x) => Value::Float32(x),
            MetaValue::Bool(x) => Value::Bool(x),
            MetaValue::String(s) => Value::String(s.as_bytes().to_vec()),
            MetaValue::Array(a) => Value::from_array(&a),
            MetaValue::Uint64(x) => Value::Uint64(x),
            MetaValue::Int64(x) => Value::Int64(x),
            MetaValue::Float64(x) => Value::Float64(x),
        }
    }

    fn from_array(a: &ArrayView<'_>) -> Value {
        Value::Array(a.elem_type().code(), a.iter().map(|v| Value::from_meta(&v)).collect())
    }
}

/// A tensor info to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Name bytes.
    pub name: Vec<u8>,
    /// Dimensions in GGUF order (`ne[0]` first).
    pub dims: Vec<u64>,
    /// The ggml type code.
    pub type_code: u32,
    /// Relative offset to write; `None`: packed after the previous tensor at the alignment.
    pub offset: Option<u64>,
    /// `n_dims` to write; `None`: `dims.len()`.
    pub n_dims: Option<u32>,
    /// Data bytes; `None`: a deterministic pattern of the computed size.
    pub data: Option<Vec<u8>>,
}

/// Builds GGUF bytes. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct GgufBuilder {
    magic: [u8; 4],
    version: u32,
    endian: Endian,
    tensor_count: Option<u64>,
    kv_count: Option<u64>,
    kvs: Vec<(Vec<u8>, Value)>,
    tensors: Vec<Tensor>,
    alignment: Option<u32>,
    pad_byte: u8,
    write_data: bool,
}

impl Default for GgufBuilder {
    fn default() -> GgufBuilder {
        GgufBuilder::new()
    }
}

impl GgufBuilder {
    /// An empty v3 little-endian file.
    pub fn new() -> GgufBuilder {
        GgufBuilder {
            magic: *b"GGUF",
            version: 3,
            endian: Endian::Little,
            tensor_count: None,
            kv_count: None,
            kvs: Vec::new(),
            tensors: Vec::new(),
            alignment: None,
            pad_byte: 0,
            write_data: true,
        }
    }

    /// Overrides the magic bytes.
    pub fn magic(mut self, magic: [u8; 4]) -> Self {
        self.magic = magic;
        self
    }

    /// Sets the version (1 writes 32-bit lengths, counts and dims).
    pub fn version(mut self, version: u32) -> Self {
        self.version = version;
        self
    }

    /// Sets the byte order.
    pub fn endian(mut self, endian: Endian) -> Self {
        self.endian = endian;
        self
    }

    /// Overrides the declared tensor count.
    pub fn tensor_count(mut self, n: u64) -> Self {
        self.tensor_count = Some(n);
        self
    }

    /// Overrides the declared key/value count.
    pub fn kv_count(mut self, n: u64) -> Self {
        self.kv_count = Some(n);
        self
    }

    /// Adds a key/value pair.
    pub fn kv(self, key: &str, value: Value) -> Self {
        self.kv_bytes(key.as_bytes(), value)
    }

    /// Adds a key/value pair with a key given as raw bytes.
    pub fn kv_bytes(mut self, key: &[u8], value: Value) -> Self {
        self.kvs.push((key.to_vec(), value));
        self
    }

    /// Adds a packed tensor with pattern data.
    pub fn tensor(self, name: &str, ty: GgmlType, dims: &[u64]) -> Self {
        self.tensor_info(Tensor {
            name: name.as_bytes().to_vec(),
            dims: dims.to_vec(),
            type_code: ty.code(),
            offset: None,
            n_dims: None,
            data: None,
        })
    }

    /// Adds a tensor info with every field under control.
    pub fn tensor_info(mut self, tensor: Tensor) -> Self {
        self.tensors.push(tensor);
        self
    }

    /// The alignment used to lay out data (by default `general.alignment` if it is a
    /// `Uint32` power of two, else 32). Setting this does not add the key.
    pub fn layout_alignment(mut self, alignment: u32) -> Self {
        self.alignment = Some(alignment);
        self
    }

    /// The byte used for padding (0 by default).
    pub fn pad_byte(mut self, byte: u8) -> Self {
        self.pad_byte = byte;
        self
    }

    /// Whether to write the padding and tensor data after the directory (default true).
    pub fn with_data(mut self, write: bool) -> Self {
        self.write_data = write;
        self
    }

    /// The key/value pairs added so far.
    pub fn kvs(&self) -> &[(Vec<u8>, Value)] {
        &self.kvs
    }

    /// The tensors added so far.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    fn wide(&self) -> bool {
        self.version != 1
    }

    fn put_u32(&self, out: &mut Vec<u8>, v: u32) {
        match self.endian {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    fn put_u64(&self, out: &mut Vec<u8>, v: u64) {
        match self.endian {
            Endian::Little => out.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&v.to_be_bytes()),
        }
    }

    /// A length, count or dimension: 64-bit, or 32-bit (truncated) in v1.
    fn put_len(&self, out: &mut Vec<u8>, v: u64) {
        if self.wide() { self.put_u64(out, v) } else { self.put_u32(out, v as u32) }
    }

    fn put_str(&self, out: &mut Vec<u8>, s: &[u8]) {
        self.put_len(out, s.len() as u64);
        out.extend_from_slice(s);
    }

    fn put_value(&self, out: &mut Vec<u8>, v: &Value) {
        macro_rules! num {
            ($x:expr) => {
                match self.endian {
                    Endian::Little => out.extend_from_slice(&$x.to_le_bytes()),
                    Endian::Big => out.extend_from_slice(&$x.to_be_bytes()),
                }
            };
        }
        match v {
            Value::Uint8(x) => num!(x),
            Value::Int8(x) => num!(x),
            Value::Uint16(x) => num!(x),
            Value::Int16(x) => num!(x),
            Value::Uint32(x) => num!(x),
            Value::Int32(x) => num!(x),
            Value::Float32(x) => num!(x),
            Value::Bool(x) => out.push(u8::from(*x)),
            Value::String(s) => self.put_str(out, s),
            Value::StringWithLen { declared, bytes } => {
                self.put_len(out, *declared);
                out.extend_from_slice(bytes);
            }
            Value::Array(elem_type, elems) => {
                self.put_u32(out, *elem_type);
                self.put_len(out, elems.len() as u64);
                elems.iter().for_each(|e| self.put_value(out, e));
            }
            Value::ArrayWithLen { elem_type, declared, elems } => {
                self.put_u32(out, *elem_type);
                self.put_len(out, *declared);
                elems.iter().for_each(|e| self.put_value(out, e));
            }
            Value::Uint64(x) => num!(x),
            Value::Int64(x) => num!(x),
            Value::Float64(x) => num!(x),
            Value::Raw { bytes, .. } => out.extend_from_slice(bytes),
        }
    }

    /// The alignment the layout uses.
    pub fn alignment(&self) -> u32 {
        if let Some(a) = self.alignment {
            return a;
        }
        self.kvs
            .iter()
            .rev()
            .find_map(|(k, v)| match v {
                Value::Uint32(a) if k == b"general.alignment" && a.is_power_of_two() => Some(*a),
                _ => None,
            })
            .unwrap_or(32)
    }

    /// Each tensor's computed size: its data length, else its type and dims (0 if invalid).
    fn tensor_size(t: &Tensor) -> u64 {
        match &t.data {
            Some(d) => d.len() as u64,
            None => tensor_nbytes(GgmlType::from_code(t.type_code), &t.dims).unwrap_or(0),
        }
    }

    /// The relative offsets the tensors get (explicit ones kept, the others packed).
    pub fn offsets(&self) -> Vec<u64> {
        let align = u64::from(self.alignment().max(1));
        let mut next = 0u64;
        self.tensors
            .iter()
            .map(|t| {
                let off = t.offset.unwrap_or(next);
                let end = off.saturating_add(Self::tensor_size(t));
                next = align_up(end, align.next_power_of_two()).unwrap_or(end);
                off
            })
            .collect()
    }

    /// Writes the header and the tensor directory only (no padding, no data).
    pub fn build_header(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.magic);
        self.put_u32(&mut out, self.version);
        self.put_len(&mut out, self.tensor_count.unwrap_or(self.tensors.len() as u64));
        self.put_len(&mut out, self.kv_count.unwrap_or(self.kvs.len() as u64));
        for (k, v) in &self.kvs {
            self.put_str(&mut out, k);
            self.put_u32(&mut out, v.type_code());
            self.put_value(&mut out, v);
        }
        for (t, off) in self.tensors.iter().zip(self.offsets()) {
            self.put_str(&mut out, &t.name);
            self.put_u32(&mut out, t.n_dims.unwrap_or(t.dims.len() as u32));
            for &d in &t.dims {
                self.put_len(&mut out, d);
            }
            self.put_u32(&mut out, t.type_code);
            self.put_u64(&mut out, off);
        }
        out
    }

    /// Writes the whole file: header, directory, and (unless disabled) padding and data.
    pub fn build(&self) -> Vec<u8> {
        let mut out = self.build_header();
        if !self.write_data || self.tensors.is_empty() {
            return out;
        }
        let align = u64::from(self.alignment().max(1)).next_power_of_two();
        let data_offset = align_up(out.len() as u64, align).unwrap_or(out.len() as u64);
        out.resize(data_offset as usize, self.pad_byte);
        let mut order: Vec<(u64, usize)> =
            self.offsets().into_iter().enumerate().map(|(i, o)| (o, i)).collect();
        order.sort_unstable();
        for (off, i) in order {
            let t = &self.tensors[i];
            let start = data_offset.saturating_add(off) as usize;
            if out.len() < start {
                out.resize(start, self.pad_byte);
            }
            let data = match &t.data {
                Some(d) => d.clone(),
                None => pattern(i, Self::tensor_size(t)),
            };
            let end = start + data.len();
            if out.len() < end {
                out.resize(end, 0);
            }
            out[start..end].copy_from_slice(&data);
        }
        let end = align_up(out.len() as u64, align).unwrap_or(out.len() as u64);
        out.resize(end as usize, self.pad_byte);
        out
    }
}

/// A 300-tensor model of assorted types (F32, F16, Q8_0, pattern data) with a 500-token
/// vocabulary: big enough that a split by tensor count or size makes several shards.
pub fn three_hundred_tensors() -> Vec<u8> {
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("three hundred tensors"))
        .kv("tokenizer.ggml.tokens", Value::strings((0..500).map(|i| format!("t{i}"))));
    for i in 0..300u64 {
        let (ty, dims) = match i % 3 {
            0 => (GgmlType::F32, vec![5 + i % 11]),
            1 => (GgmlType::F16, vec![32, 1 + i % 5]),
            _ => (GgmlType::Q8_0, vec![64, 3]),
        };
        b = b.tensor(&format!("blk.{}.w{}", i / 3, i % 3), ty, &dims);
    }
    b.build()
}

/// Parse limits that limit nothing, for tests that must see what the grammar and the rules
/// do with a hostile header rather than where a limit stops it.
pub fn unlimited_limits() -> sipllm_gguf::Limits {
    sipllm_gguf::Limits {
        max_string_len: u64::MAX,
        max_array_len: u64::MAX,
        max_depth: u32::MAX,
        max_kv_count: u64::MAX,
        max_tensor_count: u64::MAX,
        max_header_bytes: u64::MAX,
    }
}

/// Deterministic data for tensor `index`: distinct per tensor, so misrouted reads show.
pub fn pattern(index: usize, len: u64) -> Vec<u8> {
    let mut x = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub mod llama3 {
    //! A Llama-3-8B-shaped header, as `shared/bench/make_llama3_like.py` writes it: the same
    //! splitmix64 generator, vocabulary, merges, chat template and 291 Q4_K_M tensor infos.

    use super::{GgufBuilder, Tensor, Value};
    use sipllm_gguf::ggml::GgmlType;

    /// Vocabulary size of Llama 3.
    pub const N_VOCAB: usize = 128_256;
    /// Merge count of Llama 3.
    pub const N_MERGES: usize = 280_147;
    const N_LAYER: u64 = 32;
    const N_EMBD: u64 = 4096;
    const N_FF: u64 = 14336;
    const N_HEAD: u64 = 32;
    const N_HEAD_KV: u64 = 8;
    const HEAD_DIM: u64 = N_EMBD / N_HEAD;
    const N_SPECIAL: usize = 256;
    const SEED: u64 = 0x6C6C_616D_6133_2D38;

    struct SplitMix64(u64);

    impl SplitMix64 {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn bytes_to_unicode() -> Vec<char> {
        let mut bs: Vec<u32> =
            (u32::from('!')..=u32::from('~')).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
        let mut cs = bs.clone();
        let mut n = 0;
        for b in 0..256 {
            if !bs.contains(&b) {
                bs.push(b);
                cs.push(256 + n);
                n += 1;
            }
        }
        cs.into_iter().filter_map(char::from_u32).collect()
    }

    const ASCII: &str = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789_.,-'()";

    fn pools() -> [Vec<char>; 4] {
        let ascii = ASCII.chars().collect();
        let two = (0xA1..0x100)
            .chain(0x100..0x144)
            .chain(0x410..0x450)
            .filter_map(char::from_u32)
            .collect();
        let three =
            (0x4E00..0x4E00 + 400).chain(0xAC00..0xAC00 + 200).filter_map(char::from_u32).collect();
        let four = (0x1F600..0x1F650).filter_map(char::from_u32).collect();
        [ascii, two, three, four]
    }

    fn gen_token(rng: &mut SplitMix64, pools: &[Vec<char>; 4]) -> String {
        let target = 1 + (rng.below(8) + rng.below(8) + rng.below(2)).min(15);
        let mut s = String::new();
        if rng.below(100) < 45 && target >= 3 {
            s.push('Ġ');
        }
        loop {
            let r = rng.below(100);
            let pool = match r {
                0..80 => &pools[0],
                80..93 => &pools[1],
                93..99 => &pools[2],
                _ => &pools[3],
            };
            let ch = pool[rng.below(pool.len())];
            let used = s.len();
            if used + ch.len_utf8() > target {
                if used == 0 {
                    continue;
                }
                break;
            }
            s.push(ch);
            if s.len() == target {
                break;
            }
        }
        s
    }

    fn special_tokens() -> Vec<String> {
        let mut r = 0;
        (0..N_SPECIAL)
            .map(|i| match i {
                0 => "<|begin_of_text|>".to_string(),
                1 => "<|end_of_text|>".to_string(),
                6 => "<|start_header_id|>".to_string(),
                7 => "<|end_header_id|>".to_string(),
                9 => "<|eot_id|>".to_string(),
                _ => {
                    r += 1;
                    format!("<|reserved_special_token_{}|>", r - 1)
                }
            })
            .collect()
    }

    /// Tokens, token types and merges for a vocabulary of `n_vocab` with `n_merges` merges.
    pub fn vocab(n_vocab: usize, n_merges: usize) -> (Vec<String>, Vec<i32>, Vec<String>) {
        let mut rng = SplitMix64(SEED);
        let pools = pools();
        let mut tokens: Vec<String> = bytes_to_unicode().into_iter().map(String::from).collect();
        let mut seen: std::collections::HashSet<String> = tokens.iter().cloned().collect();
        let n_regular = n_vocab - N_SPECIAL;
        while tokens.len() < n_regular {
            let t = gen_token(&mut rng, &pools);
            if seen.insert(t.clone()) {
                tokens.push(t);
            }
        }
        tokens.extend(special_tokens());
        let types = (0..n_vocab).map(|i| if i < n_regular { 1 } else { 3 }).collect();
        let mut merges = Vec::with_capacity(n_merges);
        let mut mseen = std::collections::HashSet::new();
        while merges.len() < n_merges {
            let t: Vec<char> = tokens[256 + rng.below(n_regular - 256)].chars().collect();
            if t.len() < 2 {
                continue;
            }
            let cut = 1 + rng.below(t.len() - 1);
            let m: String = t[..cut].iter().chain([' '].iter()).chain(t[cut..].iter()).collect();
            if mseen.insert(m.clone()) {
                merges.push(m);
            }
        }
        (tokens, types, merges)
    }

    /// The ~6 KB chat template of the script.
    pub fn chat_template() -> String {
        let mut out = String::from(include_str!("llama3_chat_template.jinja"));
        let notes = [
            "Notes for integrators — kept in the template so they travel with the model.",
            "Multilingual system prompts are passed through unchanged: «Réponds en français», 日本語で答えてください, Отвечай по-русски.",
            "The date string defaults to a fixed value so that renders are reproducible across runs.",
            "Tool results may be JSON objects or plain strings; both are rendered verbatim after the ipython header.",
            "A single tool call per assistant turn is supported; multiple calls raise an exception by design.",
            "Whitespace control (the '-' markers) matters: changing it changes token boundaries at turn edges.",
        ];
        let mut i = 0;
        while out.len() < 6000 {
            out.push_str("{#- ");
            out.push_str(notes[i % notes.len()]);
            out.push_str(" #}\n");
            i += 1;
        }
        out
    }

    fn q4_k_m_type(kind: &str, layer: u64) -> GgmlType {
        let more = !(N_LAYER / 8..7 * N_LAYER / 8).contains(&layer)
            || (layer as i64 - (N_LAYER / 8) as i64).rem_euclid(3) == 2;
        if (kind == "attn_v" || kind == "ffn_down") && more {
            GgmlType::Q6_K
        } else {
            GgmlType::Q4_K
        }
    }

    /// The 291 tensors: (name, ne in GGUF order, type), in the converter's order.
    pub fn tensors(n_vocab: u64) -> Vec<(String, Vec<u64>, GgmlType)> {
        use GgmlType::{F32, Q4_K, Q6_K};
        let kv = N_HEAD_KV * HEAD_DIM;
        let mut out = vec![("token_embd.weight".to_string(), vec![N_EMBD, n_vocab], Q4_K)];
        for i in 0..N_LAYER {
            let p = |s: &str| format!("blk.{i}.{s}");
            out.extend([
                (p("attn_norm.weight"), vec![N_EMBD], F32),
                (p("ffn_down.weight"), vec![N_FF, N_EMBD], q4_k_m_type("ffn_down", i)),
                (p("ffn_gate.weight"), vec![N_EMBD, N_FF], Q4_K),
                (p("ffn_up.weight"), vec![N_EMBD, N_FF], Q4_K),
                (p("ffn_norm.weight"), vec![N_EMBD], F32),
                (p("attn_k.weight"), vec![N_EMBD, kv], Q4_K),
                (p("attn_output.weight"), vec![N_EMBD, N_EMBD], Q4_K),
                (p("attn_q.weight"), vec![N_EMBD, N_EMBD], Q4_K),
                (p("attn_v.weight"), vec![N_EMBD, kv], q4_k_m_type("attn_v", i)),
            ]);
        }
        out.push(("output_norm.weight".to_string(), vec![N_EMBD], F32));
        out.push(("output.weight".to_string(), vec![N_EMBD, n_vocab], Q6_K));
        out
    }

    /// The builder for the Llama-3-shaped file with the vocabulary divided by `vocab_div`
    /// (1: the full 128,256 tokens; 8: the "small" variant). Build it with
    /// [`GgufBuilder::build_header`]: its data section is ~4.9 GB.
    pub fn builder(vocab_div: usize) -> GgufBuilder {
        let n_vocab = N_VOCAB / vocab_div.max(1);
        let n_merges = N_MERGES / vocab_div.max(1);
        let (tokens, types, merges) = vocab(n_vocab, n_merges);
        let bos = (n_vocab - N_SPECIAL) as u32;
        let eot = (n_vocab - N_SPECIAL + 9) as u32;
        let name = if vocab_div <= 1 {
            "Meta Llama 3 8B Instruct (synthetic header)".to_string()
        } else {
            format!("Meta Llama 3 8B Instruct (synthetic header, vocab/{vocab_div})")
        };
        let mut b = GgufBuilder::new()
            .kv("general.architecture", Value::str("llama"))
            .kv("general.type", Value::str("model"))
            .kv("general.name", Value::str(&name))
            .kv("general.basename", Value::str("Meta-Llama-3"))
            .kv("general.finetune", Value::str("Instruct"))
            .kv("general.size_label", Value::str("8B"))
            .kv("general.license", Value::str("llama3"))
            .kv(
                "general.tags",
                Value::strings([
                    "facebook",
                    "meta",
                    "pytorch",
                    "llama",
                    "llama-3",
                    "text-generation",
                ]),
            )
            .kv("general.languages", Value::strings(["en"]))
            .kv("llama.block_count", Value::Uint32(N_LAYER as u32))
            .kv("llama.context_length", Value::Uint32(8192))
            .kv("llama.embedding_length", Value::Uint32(N_EMBD as u32))
            .kv("llama.feed_forward_length", Value::Uint32(N_FF as u32))
            .kv("llama.attention.head_count", Value::Uint32(N_HEAD as u32))
            .kv("llama.attention.head_count_kv", Value::Uint32(N_HEAD_KV as u32))
            .kv("llama.rope.freq_base", Value::Float32(500000.0))
            .kv("llama.attention.layer_norm_rms_epsilon", Value::Float32(1e-5))
            .kv("general.file_type", Value::Uint32(15))
            .kv("llama.vocab_size", Value::Uint32(n_vocab as u32))
            .kv("llama.rope.dimension_count", Value::Uint32(HEAD_DIM as u32))
            .kv("tokenizer.ggml.model", Value::str("gpt2"))
            .kv("tokenizer.ggml.pre", Value::str("llama-bpe"))
            .kv("tokenizer.ggml.tokens", Value::strings(&tokens))
            .kv(
                "tokenizer.ggml.token_type",
                Value::Array(5, types.into_iter().map(Value::Int32).collect()),
            )
            .kv("tokenizer.ggml.merges", Value::strings(&merges))
            .kv("tokenizer.ggml.bos_token_id", Value::Uint32(bos))
            .kv("tokenizer.ggml.eos_token_id", Value::Uint32(eot))
            .kv("tokenizer.chat_template", Value::str(&chat_template()))
            .kv("general.quantization_version", Value::Uint32(2))
            .kv(
                "quantize.imatrix.file",
                Value::str(
                    "/models_out/Meta-Llama-3-8B-Instruct-GGUF/Meta-Llama-3-8B-Instruct.imatrix",
                ),
            )
            .kv("quantize.imatrix.dataset", Value::str("/training_dir/calibration_datav3.txt"))
            .kv("quantize.imatrix.entries_count", Value::Int32(224))
            .kv("quantize.imatrix.chunks_count", Value::Int32(125));
        for (name, dims, ty) in tensors(n_vocab as u64) {
            b = b.tensor_info(Tensor {
                name: name.into_bytes(),
                dims,
                type_code: ty.code(),
                offset: None,
                n_dims: None,
                data: None,
            });
        }
        b
    }
}
