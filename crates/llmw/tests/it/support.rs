//! Test support: a raw byte builder for hostile inputs, chunked drivers, a fixed-seed PRNG,
//! sample files and scratch directories.

#![allow(dead_code)]

use std::path::PathBuf;

use sipllm_llmw::{
    Decoder, Directory, Error, Event, GgmlType, Llmw, LlmwWriter, MetaValue, ParseOptions,
};

/// Writes `.llmw` fields one by one, valid or not. `pos()` gives the offset of the next field,
/// so tests know the exact offset an error must point at.
#[derive(Debug, Default, Clone)]
pub(crate) struct Raw {
    pub(crate) buf: Vec<u8>,
}

impl Raw {
    pub(crate) fn new() -> Raw {
        Raw::default()
    }

    /// A header: `LLMW`, version, tensor count, metadata count.
    pub(crate) fn header(version: u32, tensors: u32, meta: u32) -> Raw {
        let mut r = Raw::new();
        r.bytes(b"LLMW").u32(version).u32(tensors).u32(meta);
        r
    }

    pub(crate) fn pos(&self) -> u64 {
        self.buf.len() as u64
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) -> &mut Raw {
        self.buf.extend_from_slice(b);
        self
    }

    pub(crate) fn u8(&mut self, v: u8) -> &mut Raw {
        self.buf.push(v);
        self
    }

    pub(crate) fn u32(&mut self, v: u32) -> &mut Raw {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn u64(&mut self, v: u64) -> &mut Raw {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn i64(&mut self, v: i64) -> &mut Raw {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn f64(&mut self, v: f64) -> &mut Raw {
        self.bytes(&v.to_le_bytes())
    }

    /// A `u32`-length string.
    pub(crate) fn str(&mut self, s: &[u8]) -> &mut Raw {
        self.u32(s.len() as u32).bytes(s)
    }

    /// A metadata entry with an `i64` value.
    pub(crate) fn meta_i64(&mut self, key: &[u8], v: i64) -> &mut Raw {
        self.str(key).u8(0).i64(v)
    }

    /// A metadata entry with a string value.
    pub(crate) fn meta_str(&mut self, key: &[u8], v: &[u8]) -> &mut Raw {
        self.str(key).u8(2).str(v)
    }

    /// A tensor info.
    pub(crate) fn tensor(
        &mut self,
        name: &[u8],
        dtype: u32,
        dims: &[u64],
        offset: u64,
        size: u64,
    ) -> &mut Raw {
        self.str(name).u32(dtype).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u64(offset).u64(size)
    }

    /// Zero bytes up to `offset`.
    pub(crate) fn pad_to(&mut self, offset: u64) -> &mut Raw {
        let len = (offset as usize).max(self.buf.len());
        self.buf.resize(len, 0);
        self
    }

    /// The data section start for the current end of the directory.
    pub(crate) fn data_start(&self) -> u64 {
        self.pos().div_ceil(64) * 64
    }

    pub(crate) fn build(&self) -> Vec<u8> {
        self.buf.clone()
    }
}

/// Drives a decoder over `bytes`, revealing them in chunks of the given sizes (cycled; a 0 is
/// read as 1). Returns the directory or the error, and checks the contract on the way: the
/// consumed counts add up to the position, and the decoder never asks for bytes it has.
pub(crate) fn decode_chunked(
    bytes: &[u8],
    sizes: &mut dyn FnMut() -> usize,
    opts: &ParseOptions,
) -> Result<Directory, Error> {
    let mut decoder = Decoder::new(*opts);
    let mut have = 0usize;
    let mut consumed = 0u64;
    loop {
        let buf = &bytes[..have];
        let step = decoder.decode(buf)?;
        consumed += step.consumed;
        assert_eq!(consumed, decoder.position(), "consumed counts add up to the position");
        match step.event {
            Event::Done => return decoder.finish(),
            Event::NeedMore { needed } => {
                assert!(needed > 0);
                assert_header_limit(have, needed, opts);
                if have == bytes.len() {
                    return Err(decoder.end_of_input(buf));
                }
                have = (have + sizes().max(1)).min(bytes.len());
            }
            _ => {}
        }
    }
}

/// Limits are checked before bytes are requested: no `NeedMore` asks a caller to buffer more
/// than the header limit (plus one fixed-size field of at most 8 bytes).
fn assert_header_limit(have: usize, needed: u64, opts: &ParseOptions) {
    let max = opts.limits.max_header_bytes + 8;
    assert!(have as u64 + needed <= max, "NeedMore {{ needed: {needed} }} at {have}: past {max}");
}

/// Drives a decoder appending exactly what each `NeedMore` asks for: ends in a bounded number
/// of calls (no spinning) with the same result.
pub(crate) fn decode_minimal(bytes: &[u8], opts: &ParseOptions) -> Result<Directory, Error> {
    let mut decoder = Decoder::new(*opts);
    let mut have = 0usize;
    let mut calls = 0usize;
    loop {
        calls += 1;
        assert!(calls <= 4 * bytes.len() + 16, "the decoder spins");
        let buf = &bytes[..have];
        match decoder.decode(buf)?.event {
            Event::Done => return decoder.finish(),
            Event::NeedMore { needed } => {
                assert_header_limit(have, needed, opts);
                if have == bytes.len() {
                    return Err(decoder.end_of_input(buf));
                }
                have = (have + needed as usize).min(bytes.len());
            }
            _ => {}
        }
    }
}

/// xorshift64*: a fixed-seed PRNG, so chunkings are reproducible.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Every way the tests chunk an input, each giving the same result as the whole-slice parse.
pub(crate) fn assert_chunkings_agree(
    bytes: &[u8],
    opts: &ParseOptions,
) -> Result<Directory, Error> {
    let whole = sipllm_llmw::decode(bytes, opts);
    let one = decode_chunked(bytes, &mut || 1, opts);
    assert_eq!(one, whole, "1-byte chunks");
    let minimal = decode_minimal(bytes, opts);
    assert_eq!(minimal, whole, "exactly what NeedMore asks for");
    for seed in [1, 7, 42, 0xdead_beef] {
        let mut rng = Rng::new(seed);
        let mut sizes = || 1 + rng.below(97) as usize;
        let random = decode_chunked(bytes, &mut sizes, opts);
        assert_eq!(random, whole, "random chunks, seed {seed}");
    }
    let all = decode_chunked(bytes, &mut || usize::MAX / 2, opts);
    assert_eq!(all, whole, "one chunk");
    whole
}

/// A file that uses every metadata type and a few dtypes (version 2).
pub(crate) fn sample_writer(data: &[Vec<u8>]) -> LlmwWriter<'_> {
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.architecture", "toy").unwrap();
    w.add_meta_i64("toy.context_length", 2048).unwrap();
    w.add_meta_f64("toy.rope.freq_base", 10000.5).unwrap();
    w.add_meta_i64s("toy.layer_sizes", [1, -2, i64::MAX, i64::MIN]).unwrap();
    w.add_meta_f64s("tokenizer.scores", [0.0, -1.25, f64::INFINITY]).unwrap();
    w.add_meta_strs("tokenizer.tokens", ["<s>", "</s>", "", "héllo", "▁the"]).unwrap();
    w.add_meta_str("general.empty", "").unwrap();
    w.add_tensor("token_embd.weight", GgmlType::F32, &[5, 3], &data[0]).unwrap();
    w.add_tensor("blk.0.attn_q.weight", GgmlType::Q8_0, &[2, 64], &data[1]).unwrap();
    w.add_tensor("output_norm.weight", GgmlType::F16, &[7], &data[2]).unwrap();
    w
}

/// Deterministic tensor data for [`sample_writer`].
pub(crate) fn sample_data() -> Vec<Vec<u8>> {
    let sizes = [5 * 3 * 4, 2 * 2 * 34, 7 * 2];
    sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| (0..n).map(|i| (i * 7 + k * 13) as u8).collect())
        .collect()
}

/// The sample file's bytes.
pub(crate) fn sample_file() -> Vec<u8> {
    let data = sample_data();
    sample_writer(&data).to_vec().unwrap()
}

/// Metadata as owned values, for comparisons.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Owned {
    I64(i64),
    F64(u64),
    Str(String),
    I64s(Vec<i64>),
    F64s(Vec<u64>),
    Strs(Vec<String>),
}

pub(crate) fn owned(v: MetaValue<'_>) -> Owned {
    match v {
        MetaValue::I64(x) => Owned::I64(x),
        MetaValue::F64(x) => Owned::F64(x.to_bits()),
        MetaValue::Str(s) => Owned::Str(s.to_owned()),
        MetaValue::I64Array(a) => Owned::I64s(a.to_vec()),
        MetaValue::F64Array(a) => Owned::F64s(a.iter().map(f64::to_bits).collect()),
        MetaValue::StrArray(a) => Owned::Strs(a.iter().map(str::to_owned).collect()),
        other => panic!("new value type {other:?}"),
    }
}

pub(crate) fn metadata<B: AsRef<[u8]>>(f: &Llmw<B>) -> Vec<(String, Owned)> {
    f.metadata().map(|e| (e.key.to_owned(), owned(e.value))).collect()
}

/// A fresh scratch directory under the system temp dir (removed by [`Scratch::drop`]).
#[derive(Debug)]
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sipllm-llmw-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub(crate) fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
