//! Toy models: one tiny llama-shaped model, written identically as GGUF and as `.llmw`.
//!
//! [`toy_model`] describes the model for a seed — llama metadata, a small vocabulary and a
//! full set of llama tensors with deterministic weights — and [`ToyModel::gguf_bytes`] /
//! [`ToyModel::llmw_bytes`] serialize it with each format's writer; [`write_toy`] writes
//! `toy.gguf` and `toy.llmw` into a directory. Opened through the seam, the two files are
//! indistinguishable: same tensors (names, row-major shapes, types, bytes) and the same
//! [`Meta`](sipllm_streaming::Meta) for every key (the seam equivalence tests check exactly that).
//!
//! The weights come from a seeded splitmix64 stream per tensor (seeded by the model seed and
//! the tensor's name), so a seed always gives the same bytes on every platform: the float
//! operations used (`+`, `*`, `/`, `sqrt`, `round`) are exactly rounded in IEEE 754.
//!
//! | tensors | type | row-major shape |
//! |---|---|---|
//! | `token_embd.weight` | F32 | `[n_vocab, n_embd]` |
//! | `blk.N.attn_norm.weight`, `blk.N.ffn_norm.weight`, `output_norm.weight` | F32 | `[n_embd]` |
//! | `blk.N.attn_q.weight`, `blk.N.attn_output.weight` | F16 | `[n_embd, n_embd]` |
//! | `blk.N.attn_k.weight`, `blk.N.attn_v.weight` | F16 | `[n_embd_kv, n_embd]` |
//! | `blk.N.ffn_gate.weight`, `blk.N.ffn_up.weight` | Q8_0 | `[n_ff, n_embd]` |
//! | `blk.N.ffn_down.weight` | Q8_0 | `[n_embd, n_ff]` |
//! | `output.weight` | Q8_0 | `[n_vocab, n_embd]` |
//!
//! (`n_embd_kv = n_embd / n_head × n_head_kv`.) Q8_0 data is valid ggml blocks: per 32
//! weights an IEEE half scale `d = max|x| / 127` and 32 `i8` quants `round(x / d)`, as ggml's
//! reference quantizer makes them.
//!
//! Metadata, with its GGUF type and the `.llmw` type it is stored as:
//!
//! | key | GGUF | `.llmw` |
//! |---|---|---|
//! | `general.architecture` (`llama`), `general.name`, `tokenizer.ggml.model` (`llama`) | `STRING` | string |
//! | `llama.context_length`, `llama.embedding_length`, `llama.block_count`, `llama.feed_forward_length`, `llama.rope.dimension_count`, `llama.attention.head_count`, `llama.attention.head_count_kv`, `llama.vocab_size`, `tokenizer.ggml.bos_token_id`, `tokenizer.ggml.eos_token_id`, `tokenizer.ggml.unknown_token_id` | `UINT32` | `i64` |
//! | `llama.attention.layer_norm_rms_epsilon` (1e-5), `llama.rope.freq_base` (10000) | `FLOAT32` | `f64` (the `f32` widened exactly) |
//! | `tokenizer.ggml.tokens` | `ARRAY` of `STRING` | string array |
//! | `tokenizer.ggml.scores` | `ARRAY` of `FLOAT32` | `f64` array (widened) |
//! | `tokenizer.ggml.token_type` | `ARRAY` of `INT32` | `i64` array |
//!
//! No bools (`tokenizer.ggml.add_bos_token`): `.llmw` has no bool type, and the model must
//! cross the seam unchanged. The vocabulary is `<unk>`, `<s>`, `</s>`, byte tokens `<0x00>`,
//! `<0x01>`, … (a quarter of the rest) and SentencePiece-style pieces (`▁the`, `er`, `▁café`,
//! …), with llama.cpp's token types (normal 1, unknown 2, control 3, byte 6) and scores 0 for
//! special and byte tokens, `-rank` for pieces.

use std::borrow::Cow;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sipllm_gguf::writer::{GgufWriter, TensorDesc, Value};
use sipllm_gguf::{GgmlType, ValueType};
use sipllm_llmw::LlmwWriter;

use crate::half;
use crate::write::AtomicFile;

/// The file name [`write_toy`] gives the GGUF copy.
pub const TOY_GGUF: &str = "toy.gguf";

/// The file name [`write_toy`] gives the `.llmw` copy.
pub const TOY_LLMW: &str = "toy.llmw";

/// The largest toy model [`ToyConfig::build`] makes: 256 MiB of tensor data.
pub const MAX_TOY_BYTES: u64 = 256 << 20;

/// llama.cpp's token types (`LLAMA_TOKEN_TYPE_*`).
const TOKEN_NORMAL: i32 = 1;
const TOKEN_UNKNOWN: i32 = 2;
const TOKEN_CONTROL: i32 = 3;
const TOKEN_BYTE: i32 = 6;

/// The Q8_0 block: 32 weights.
const QK8_0: u64 = 32;

/// SentencePiece-style pieces after the special and byte tokens (unique; `▁` is U+2581, the
/// word-start marker). Beyond these, pieces are `▁tokN`.
const PIECES: [&str; 44] = [
    "▁",
    "e",
    "t",
    "a",
    "o",
    "i",
    "n",
    "s",
    "r",
    "h",
    "l",
    "er",
    "in",
    "th",
    "an",
    "re",
    "on",
    "at",
    "en",
    "nd",
    "ing",
    "ed",
    "es",
    "or",
    "▁the",
    "▁a",
    "▁of",
    "▁and",
    "▁to",
    "▁in",
    "▁is",
    "▁it",
    "▁toy",
    "▁model",
    "▁weights",
    "▁stream",
    "▁s",
    "▁w",
    "▁c",
    "▁b",
    "▁café",
    "日本",
    "▁Ω",
    "\u{1F980}",
];

/// The shape of a toy model. [`ToyConfig::new`] gives the defaults (64 tokens, 32-wide, 2
/// layers, 4 heads sharing 2 KV heads, FFN 64, context 128); change fields and call
/// [`build`](Self::build), which checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToyConfig {
    /// Seeds every weight.
    pub seed: u64,
    /// Vocabulary size: 3 to 65,536.
    pub n_vocab: u32,
    /// Embedding width: a non-zero multiple of 32 (the Q8_0 row length), at most 8,192.
    pub n_embd: u32,
    /// Transformer blocks: 1 to 256.
    pub n_layer: u32,
    /// Attention heads: non-zero, divides `n_embd`.
    pub n_head: u32,
    /// Key/value heads (grouped-query attention): non-zero, divides `n_head`.
    pub n_head_kv: u32,
    /// Feed-forward width: a non-zero multiple of 32, at most 32,768.
    pub n_ff: u32,
    /// Context length (metadata only): at least 1.
    pub n_ctx: u32,
}

impl Default for ToyConfig {
    fn default() -> ToyConfig {
        ToyConfig::new(0)
    }
}

// The defaults are valid, checked at compile time: `toy_model` cannot fail.
const _: () = assert!(ToyConfig::new(0).problem().is_none());

impl ToyConfig {
    /// The default shape with this seed.
    pub const fn new(seed: u64) -> ToyConfig {
        ToyConfig {
            seed,
            n_vocab: 64,
            n_embd: 32,
            n_layer: 2,
            n_head: 4,
            n_head_kv: 2,
            n_ff: 64,
            n_ctx: 128,
        }
    }

    /// The key/value projection width: `n_embd / n_head × n_head_kv`.
    pub const fn n_embd_kv(&self) -> u32 {
        match self.n_embd.checked_div(self.n_head) {
            Some(head_dim) => head_dim.saturating_mul(self.n_head_kv),
            None => 0,
        }
    }

    /// Checks the fields ([`ToyError::Config`] names the first bad one) and describes the
    /// model.
    pub fn build(&self) -> Result<ToyModel, ToyError> {
        if let Some((field, value, rule)) = self.problem() {
            return Err(ToyError::Config { field, value, rule });
        }
        Ok(self.generate())
    }

    /// The first field that breaks its rule: (field, value, rule).
    const fn problem(&self) -> Option<(&'static str, u64, &'static str)> {
        let c = self;
        if c.n_vocab < 3 || c.n_vocab > 65_536 {
            return Some(("n_vocab", c.n_vocab as u64, "3 to 65536"));
        }
        if c.n_embd == 0 || !c.n_embd.is_multiple_of(QK8_0 as u32) || c.n_embd > 8192 {
            return Some(("n_embd", c.n_embd as u64, "a non-zero multiple of 32, at most 8192"));
        }
        if c.n_ff == 0 || !c.n_ff.is_multiple_of(QK8_0 as u32) || c.n_ff > 32_768 {
            return Some(("n_ff", c.n_ff as u64, "a non-zero multiple of 32, at most 32768"));
        }
        if c.n_layer == 0 || c.n_layer > 256 {
            return Some(("n_layer", c.n_layer as u64, "1 to 256"));
        }
        if c.n_head == 0 || !c.n_embd.is_multiple_of(c.n_head) {
            return Some(("n_head", c.n_head as u64, "non-zero and dividing n_embd"));
        }
        if c.n_head_kv == 0 || !c.n_head.is_multiple_of(c.n_head_kv) {
            return Some(("n_head_kv", c.n_head_kv as u64, "non-zero and dividing n_head"));
        }
        if c.n_ctx == 0 {
            return Some(("n_ctx", c.n_ctx as u64, "at least 1"));
        }
        let bytes = c.total_bytes();
        if bytes > MAX_TOY_BYTES {
            return Some(("n_vocab, n_embd, n_ff, n_layer", bytes, "at most 256 MiB of tensors"));
        }
        None
    }

    /// The tensor bytes this shape needs (saturating: a huge shape gives `u64::MAX`).
    const fn total_bytes(&self) -> u64 {
        const fn mul(a: u64, b: u64) -> u64 {
            a.saturating_mul(b)
        }
        const fn add(a: u64, b: u64) -> u64 {
            a.saturating_add(b)
        }
        const fn q8_0(n: u64) -> u64 {
            mul(n / QK8_0, 34)
        }
        let (vocab, embd, ff) = (self.n_vocab as u64, self.n_embd as u64, self.n_ff as u64);
        let embd_kv = self.n_embd_kv() as u64;
        // Per layer: two F32 norms, four F16 attention matrices, three Q8_0 FFN matrices.
        let mut layer = mul(embd, 2 * 4);
        layer = add(layer, mul(mul(embd, embd), 2 * 2));
        layer = add(layer, mul(mul(embd_kv, embd), 2 * 2));
        layer = add(layer, mul(q8_0(mul(ff, embd)), 3));
        // The F32 embedding, the layers, the F32 output norm, the Q8_0 output matrix.
        let mut total = mul(mul(vocab, embd), 4);
        total = add(total, mul(layer, self.n_layer as u64));
        total = add(total, mul(embd, 4));
        add(total, q8_0(mul(vocab, embd)))
    }

    /// Describes the model; the shape was checked (every size is at most [`MAX_TOY_BYTES`]).
    fn generate(&self) -> ToyModel {
        let c = *self;
        let (vocab, embd, ff, embd_kv): (u64, u64, u64, u64) =
            (c.n_vocab.into(), c.n_embd.into(), c.n_ff.into(), c.n_embd_kv().into());
        let mut tensors = Vec::new();
        let mut add = |name: String, ty: GgmlType, shape: Vec<u64>| {
            let data = weights(c.seed, &name, ty, &shape);
            tensors.push(ToyTensor { name, ggml_type: ty, shape, data });
        };
        add("token_embd.weight".into(), GgmlType::F32, vec![vocab, embd]);
        for i in 0..c.n_layer {
            let blk = |part: &str| format!("blk.{i}.{part}.weight");
            add(blk("attn_norm"), GgmlType::F32, vec![embd]);
            add(blk("attn_q"), GgmlType::F16, vec![embd, embd]);
            add(blk("attn_k"), GgmlType::F16, vec![embd_kv, embd]);
            add(blk("attn_v"), GgmlType::F16, vec![embd_kv, embd]);
            add(blk("attn_output"), GgmlType::F16, vec![embd, embd]);
            add(blk("ffn_norm"), GgmlType::F32, vec![embd]);
            add(blk("ffn_gate"), GgmlType::Q8_0, vec![ff, embd]);
            add(blk("ffn_up"), GgmlType::Q8_0, vec![ff, embd]);
            add(blk("ffn_down"), GgmlType::Q8_0, vec![embd, ff]);
        }
        add("output_norm.weight".into(), GgmlType::F32, vec![embd]);
        add("output.weight".into(), GgmlType::Q8_0, vec![vocab, embd]);

        let vocab = Vocab::new(c.n_vocab);
        let head_dim = c.n_embd.checked_div(c.n_head).unwrap_or(0);
        let metadata = vec![
            meta("general.architecture", ToyValue::Str("llama".into())),
            meta("general.name", ToyValue::Str(format!("sipllm toy llama (seed {})", c.seed))),
            meta("llama.context_length", ToyValue::U32(c.n_ctx)),
            meta("llama.embedding_length", ToyValue::U32(c.n_embd)),
            meta("llama.block_count", ToyValue::U32(c.n_layer)),
            meta("llama.feed_forward_length", ToyValue::U32(c.n_ff)),
            meta("llama.rope.dimension_count", ToyValue::U32(head_dim)),
            meta("llama.attention.head_count", ToyValue::U32(c.n_head)),
            meta("llama.attention.head_count_kv", ToyValue::U32(c.n_head_kv)),
            meta("llama.attention.layer_norm_rms_epsilon", ToyValue::F32(1e-5)),
            meta("llama.rope.freq_base", ToyValue::F32(10_000.0)),
            meta("llama.vocab_size", ToyValue::U32(c.n_vocab)),
            meta("tokenizer.ggml.model", ToyValue::Str("llama".into())),
            meta("tokenizer.ggml.tokens", ToyValue::Strs(vocab.tokens)),
            meta("tokenizer.ggml.scores", ToyValue::F32s(vocab.scores)),
            meta("tokenizer.ggml.token_type", ToyValue::I32s(vocab.types)),
            meta("tokenizer.ggml.bos_token_id", ToyValue::U32(1)),
            meta("tokenizer.ggml.eos_token_id", ToyValue::U32(2)),
            meta("tokenizer.ggml.unknown_token_id", ToyValue::U32(0)),
        ];
        ToyModel { config: c, metadata, tensors }
    }
}

fn meta(key: &'static str, value: ToyValue) -> (&'static str, ToyValue) {
    (key, value)
}

/// A metadata value of a toy model, with the GGUF type it is written as (the `.llmw` type
/// follows: integers `i64`, floats `f64`, strings and arrays likewise).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToyValue {
    /// GGUF `UINT32`; `.llmw` `i64`.
    U32(u32),
    /// GGUF `FLOAT32`; `.llmw` `f64` (widened exactly).
    F32(f32),
    /// GGUF `STRING`; `.llmw` string.
    Str(String),
    /// GGUF `ARRAY` of `STRING`; `.llmw` string array.
    Strs(Vec<String>),
    /// GGUF `ARRAY` of `FLOAT32`; `.llmw` `f64` array (widened exactly).
    F32s(Vec<f32>),
    /// GGUF `ARRAY` of `INT32`; `.llmw` `i64` array.
    I32s(Vec<i32>),
}

impl ToyValue {
    /// The GGUF writer's value (borrowing strings).
    fn gguf(&self) -> Value<'_> {
        let array = |elem_type, elems| Value::Array { elem_type, elems };
        match self {
            ToyValue::U32(v) => Value::Uint32(*v),
            ToyValue::F32(v) => Value::Float32(*v),
            ToyValue::Str(s) => Value::str(s),
            ToyValue::Strs(v) => {
                array(ValueType::String, v.iter().map(|s| Value::str(s)).collect())
            }
            ToyValue::F32s(v) => {
                array(ValueType::Float32, v.iter().map(|&x| Value::Float32(x)).collect())
            }
            ToyValue::I32s(v) => {
                array(ValueType::Int32, v.iter().map(|&x| Value::Int32(x)).collect())
            }
        }
    }

    /// Adds the value to a `.llmw` writer.
    fn add_to(&self, w: &mut LlmwWriter<'_>, key: &str) -> Result<(), sipllm_llmw::LlmwWriteError> {
        match self {
            ToyValue::U32(v) => w.add_meta_i64(key, i64::from(*v)),
            ToyValue::F32(v) => w.add_meta_f64(key, f64::from(*v)),
            ToyValue::Str(s) => w.add_meta_str(key, s),
            ToyValue::Strs(v) => w.add_meta_strs(key, v),
            ToyValue::F32s(v) => w.add_meta_f64s(key, v.iter().map(|&x| f64::from(x))),
            ToyValue::I32s(v) => w.add_meta_i64s(key, v.iter().map(|&x| i64::from(x))),
        }
        .map(|_| ())
    }
}

/// One tensor of a toy model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToyTensor {
    /// The llama.cpp tensor name (`blk.0.attn_q.weight`).
    pub name: String,
    /// F32, F16 or Q8_0.
    pub ggml_type: GgmlType,
    /// Row-major, outermost first (what the seam reports; GGUF stores it reversed).
    pub shape: Vec<u64>,
    /// The raw bytes as stored in both files.
    pub data: Vec<u8>,
}

/// A toy model: what both files hold. Made by [`toy_model`] or [`ToyConfig::build`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToyModel {
    config: ToyConfig,
    metadata: Vec<(&'static str, ToyValue)>,
    tensors: Vec<ToyTensor>,
}

impl ToyModel {
    /// The shape and seed it was made from.
    pub fn config(&self) -> &ToyConfig {
        &self.config
    }

    /// The metadata, in file order.
    pub fn metadata(&self) -> &[(&'static str, ToyValue)] {
        &self.metadata
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&ToyValue> {
        self.metadata.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The tensors, in file order.
    pub fn tensors(&self) -> &[ToyTensor] {
        &self.tensors
    }

    /// The tensor with this name.
    pub fn tensor(&self, name: &str) -> Option<&ToyTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// A GGUF writer holding the model (v3, little-endian, default alignment 32), borrowing
    /// its strings.
    pub fn gguf_writer(&self) -> GgufWriter<'_> {
        let mut w = GgufWriter::new();
        for (key, value) in &self.metadata {
            w.set(key.as_bytes(), value.gguf());
        }
        for t in &self.tensors {
            w.add_tensor(TensorDesc {
                name: Cow::Borrowed(t.name.as_bytes()),
                dims: t.shape.iter().rev().copied().collect(),
                ggml_type: t.ggml_type,
            });
        }
        w
    }

    /// The model as a GGUF file (written by [`GgufWriter`] in canonical layout).
    ///
    /// Never an error: a toy model's header is valid by construction (unique keys and names,
    /// arrays of one type, no alignment key, at most 2 dims; rows of whole Q8_0 blocks and at
    /// most [`MAX_TOY_BYTES`] of data, which [`ToyConfig::build`] checked); the `Result`
    /// matches its `.llmw` twin, [`llmw_bytes`](Self::llmw_bytes).
    pub fn gguf_bytes(&self) -> Result<Vec<u8>, ToyError> {
        let data = |i: usize| self.tensors.get(i).map(|t| t.data.clone()).unwrap_or_default();
        Ok(self.gguf_writer().to_bytes(data).expect("a toy model's shape makes a valid header"))
    }

    /// A `.llmw` writer holding the model (version 2: the vocabulary is arrays), borrowing
    /// the tensor data.
    pub fn llmw_writer(&self) -> Result<LlmwWriter<'_>, ToyError> {
        let err = |source| ToyError::Llmw { path: None, source };
        let mut w = LlmwWriter::new();
        for (key, value) in &self.metadata {
            value.add_to(&mut w, key).map_err(err)?;
        }
        for t in &self.tensors {
            w.add_tensor(&t.name, t.ggml_type, &t.shape, &t.data).map_err(err)?;
        }
        Ok(w)
    }

    /// The model as a `.llmw` file (written by [`LlmwWriter`]).
    pub fn llmw_bytes(&self) -> Result<Vec<u8>, ToyError> {
        self.llmw_writer()?.to_vec().map_err(|source| ToyError::Llmw { path: None, source })
    }

    /// Writes `toy.gguf` and `toy.llmw` into `dir` (created if missing), each through a
    /// temporary file renamed into place, so neither is ever seen half-written.
    pub fn write_to_dir(&self, dir: impl AsRef<Path>) -> Result<ToyFiles, ToyError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)
            .map_err(|source| ToyError::Io { path: dir.to_path_buf(), source })?;
        let files = ToyFiles { gguf: dir.join(TOY_GGUF), llmw: dir.join(TOY_LLMW) };
        write_atomic(&files.gguf, &self.gguf_bytes()?)
            .map_err(|source| ToyError::Io { path: files.gguf.clone(), source })?;
        self.llmw_writer()?
            .write_to_path(&files.llmw)
            .map_err(|source| ToyError::Llmw { path: Some(files.llmw.clone()), source })?;
        Ok(files)
    }
}

/// Where [`write_toy`] wrote the two files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToyFiles {
    /// `DIR/toy.gguf`.
    pub gguf: PathBuf,
    /// `DIR/toy.llmw`.
    pub llmw: PathBuf,
}

/// The toy model of the default shape ([`ToyConfig::new`]) for `seed`.
pub fn toy_model(seed: u64) -> ToyModel {
    // The default shape passes `problem()` (a compile-time assertion above), so `generate`
    // is called only on a valid shape, as `build` would.
    ToyConfig::new(seed).generate()
}

/// Writes the toy model for `seed` as `DIR/toy.gguf` and `DIR/toy.llmw` (see
/// [`ToyModel::write_to_dir`]).
pub fn write_toy(seed: u64, dir: impl AsRef<Path>) -> Result<ToyFiles, ToyError> {
    toy_model(seed).write_to_dir(dir)
}

/// Why a toy model could not be made or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToyError {
    /// A [`ToyConfig`] field breaks its rule.
    #[error("toy model: {field} = {value} is invalid; it must be {rule}")]
    Config {
        /// The field (or fields, for the size limit).
        field: &'static str,
        /// Its value (the byte total, for the size limit).
        value: u64,
        /// What it must be.
        rule: &'static str,
    },
    /// The `.llmw` writer refused the model or failed to write it.
    #[error("toy model: the .llmw writer failed{}: {source}", at(path))]
    Llmw {
        /// The file being written, if any.
        path: Option<PathBuf>,
        /// The writer's error.
        source: sipllm_llmw::LlmwWriteError,
    },
    /// Creating the directory or writing a file failed.
    #[error("toy model: cannot write {}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

fn at(path: &Option<PathBuf>) -> String {
    path.as_ref().map(|p| format!(" writing {}", p.display())).unwrap_or_default()
}

impl ToyError {
    /// The stable code: `edit::toy::invalid_config`, `edit::toy::write_llmw` or `edit::toy::io`.
    pub fn code(&self) -> &'static str {
        match self {
            ToyError::Config { .. } => "edit::toy::invalid_config",
            ToyError::Llmw { .. } => "edit::toy::write_llmw",
            ToyError::Io { .. } => "edit::toy::io",
        }
    }

    /// What to change to fix the problem.
    pub fn help(&self) -> &'static str {
        match self {
            ToyError::Config { .. } => {
                "use the defaults of ToyConfig::new, or change the field named to satisfy its rule."
            }
            ToyError::Llmw { path: None, .. } => {
                "the toy model and the .llmw writer disagree: this is a bug in sipllm; please report it."
            }
            ToyError::Llmw { path: Some(_), .. } | ToyError::Io { .. } => {
                "check that the output directory exists or can be created, is writable, and has \
                 free space."
            }
        }
    }

    /// The file or directory concerned, when there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ToyError::Llmw { path, .. } => path.as_deref(),
            ToyError::Io { path, .. } => Some(path),
            ToyError::Config { .. } => None,
        }
    }
}

/// Writes `bytes` to `dest` atomically (see [`AtomicFile`]): `dest` is untouched or complete.
fn write_atomic(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let out = AtomicFile::create(dest)?;
    out.file().write_all_at(bytes, 0)?;
    out.commit()
}

// ----- vocabulary --------------------------------------------------------------------------

struct Vocab {
    tokens: Vec<String>,
    scores: Vec<f32>,
    types: Vec<i32>,
}

impl Vocab {
    /// `n` tokens (at least 3): the specials, byte tokens for a quarter of the rest, then
    /// pieces.
    fn new(n: u32) -> Vocab {
        let n = n as usize;
        let mut v = Vocab { tokens: Vec::new(), scores: Vec::new(), types: Vec::new() };
        let mut push = |token: String, score: f32, ty: i32| {
            v.tokens.push(token);
            v.scores.push(score);
            v.types.push(ty);
        };
        push("<unk>".into(), 0.0, TOKEN_UNKNOWN);
        push("<s>".into(), 0.0, TOKEN_CONTROL);
        push("</s>".into(), 0.0, TOKEN_CONTROL);
        let rest = n.saturating_sub(3);
        let n_bytes = (rest / 4).min(256);
        for b in 0..n_bytes {
            push(format!("<0x{b:02X}>"), 0.0, TOKEN_BYTE);
        }
        for rank in 0..rest.saturating_sub(n_bytes) {
            let piece = match PIECES.get(rank) {
                Some(p) => (*p).to_owned(),
                None => format!("▁tok{rank}"),
            };
            // Scores are exact in f32: ranks are below 2^24.
            push(piece, -(rank as f32), TOKEN_NORMAL);
        }
        v
    }
}

// ----- weights -----------------------------------------------------------------------------

/// splitmix64 (Steele, Lea, Flood 2014): a tiny, well-mixed, seedable generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1), exactly representable (24 random bits).
    fn next_f32(&mut self) -> f32 {
        let bits = (self.next_u64() >> 40) as u32; // 24 bits
        (bits as f32) * (2.0 / 16_777_216.0) - 1.0
    }
}

/// FNV-1a of a name, to give each tensor its own stream.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3))
}

/// The stored bytes of a tensor: values uniform in ±1/√(row length) (norm weights: 1 ± 0.1),
/// encoded as `ty`. The shape was checked, so its element count fits memory.
fn weights(seed: u64, name: &str, ty: GgmlType, shape: &[u64]) -> Vec<u8> {
    let mut rng = SplitMix64(seed ^ fnv1a(name.as_bytes()));
    let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).unwrap_or(0);
    let count = usize::try_from(count).unwrap_or(0);
    let row = shape.last().copied().unwrap_or(1).max(1);
    let (scale, bias) =
        if shape.len() == 1 { (0.1, 1.0) } else { (1.0 / (row as f32).sqrt(), 0.0) };
    let mut value = || rng.next_f32() * scale + bias;
    match ty {
        GgmlType::F16 => (0..count).flat_map(|_| half::f16_bits(value()).to_le_bytes()).collect(),
        GgmlType::Q8_0 => {
            let blocks = count / QK8_0 as usize;
            let mut out = Vec::with_capacity(blocks.saturating_mul(34));
            for _ in 0..blocks {
                let mut xs = [0f32; QK8_0 as usize];
                xs.iter_mut().for_each(|x| *x = value());
                out.extend_from_slice(&q8_0_block(&xs));
            }
            out
        }
        _ => (0..count).flat_map(|_| value().to_le_bytes()).collect(),
    }
}

/// One Q8_0 block as ggml's reference quantizer makes it: `d = max|x| / 127` stored as an
/// IEEE half, then `round(x / d)` as 32 `i8`.
fn q8_0_block(xs: &[f32; QK8_0 as usize]) -> [u8; 34] {
    let amax = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut block = [0u8; 34];
    let (scale, quants) = block.split_at_mut(2);
    scale.copy_from_slice(&half::f16_bits(d).to_le_bytes());
    for (q, x) in quants.iter_mut().zip(xs) {
        // |x × id| <= 127 (up to rounding), clamped to be sure; the cast is then exact.
        *q = ((x * id).round().clamp(-127.0, 127.0) as i8) as u8;
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_blocks_dequantize_close_to_the_input() {
        let mut rng = SplitMix64(7);
        let mut xs = [0f32; 32];
        xs.iter_mut().for_each(|x| *x = rng.next_f32() * 0.3);
        let block = q8_0_block(&xs);
        let d = half::f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        let amax = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
        assert!((d - amax / 127.0).abs() <= amax / 127.0 * 1e-3, "scale {d}");
        assert!(block[2..].iter().any(|&q| q as i8 == 127 || q as i8 == -127), "max maps to ±127");
        for (x, &q) in xs.iter().zip(&block[2..]) {
            assert!((f32::from(q as i8) * d - x).abs() <= d * 0.5 + 1e-3, "{x} vs {}", q as i8);
        }
        assert_eq!(q8_0_block(&[0.0; 32]), [0u8; 34], "all zeros: scale 0, quants 0");
    }

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // The reference implementation's first outputs for seed 0.
        let mut rng = SplitMix64(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut rng = SplitMix64(1);
        for _ in 0..1000 {
            let x = rng.next_f32();
            assert!((-1.0..1.0).contains(&x));
        }
    }

    #[test]
    fn the_default_model_is_llama_shaped_and_deterministic() {
        let m = toy_model(42);
        assert_eq!(m, toy_model(42), "same seed, same model");
        assert_ne!(m.tensors(), toy_model(43).tensors(), "another seed, other weights");
        assert_eq!(m.config(), &ToyConfig::new(42));
        // 1 embedding + 9 per layer × 2 + output norm + output.
        assert_eq!(m.tensors().len(), 21);
        let sizes: Vec<(&str, GgmlType, &[u64], usize)> = m
            .tensors()
            .iter()
            .map(|t| (t.name.as_str(), t.ggml_type, t.shape.as_slice(), t.data.len()))
            .collect();
        assert_eq!(sizes[0], ("token_embd.weight", GgmlType::F32, &[64u64, 32][..], 64 * 32 * 4));
        assert_eq!(sizes[3], ("blk.0.attn_k.weight", GgmlType::F16, &[16u64, 32][..], 16 * 32 * 2));
        assert_eq!(
            sizes[9],
            ("blk.0.ffn_down.weight", GgmlType::Q8_0, &[32u64, 64][..], 32 * 2 * 34)
        );
        assert_eq!(sizes[20], ("output.weight", GgmlType::Q8_0, &[64u64, 32][..], 64 * 34));
        for t in m.tensors() {
            let gguf_dims: Vec<u64> = t.shape.iter().rev().copied().collect();
            let n = sipllm_gguf::ggml::tensor_nbytes(t.ggml_type, &gguf_dims).unwrap();
            assert_eq!(t.data.len() as u64, n, "{}", t.name);
        }
        let total: u64 = m.tensors().iter().map(|t| t.data.len() as u64).sum();
        assert_eq!(total, m.config().total_bytes());

        let Some(ToyValue::Strs(tokens)) = m.get("tokenizer.ggml.tokens") else { panic!() };
        assert_eq!(tokens.len(), 64);
        assert_eq!(&tokens[..4], ["<unk>", "<s>", "</s>", "<0x00>"]);
        assert_eq!(tokens[17], "<0x0E>", "(64 - 3) / 4 = 15 byte tokens");
        assert_eq!(tokens[18], "▁");
        let mut unique = tokens.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), tokens.len(), "tokens are unique");
        let Some(ToyValue::I32s(types)) = m.get("tokenizer.ggml.token_type") else { panic!() };
        assert_eq!(&types[..4], [2, 3, 3, 6]);
        assert_eq!(m.get("llama.rope.freq_base"), Some(&ToyValue::F32(10_000.0)));
        assert_eq!(m.get("llama.rope.dimension_count"), Some(&ToyValue::U32(8)));
    }

    #[test]
    fn large_vocabularies_use_generated_pieces() {
        let m = ToyConfig { n_vocab: 400, ..ToyConfig::new(1) }.build().unwrap();
        let Some(ToyValue::Strs(tokens)) = m.get("tokenizer.ggml.tokens") else { panic!() };
        assert_eq!(tokens.len(), 400);
        assert_eq!(tokens[3 + 98], "<0x62>", "(400 - 3) / 4 = 99 byte tokens");
        assert_eq!(tokens[399], "▁tok297");
        let mut unique = tokens.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 400);
    }

    #[test]
    fn invalid_shapes_name_the_field() {
        let base = ToyConfig::new(0);
        let cases = [
            (ToyConfig { n_vocab: 2, ..base }, "n_vocab"),
            (ToyConfig { n_embd: 48, ..base }, "n_embd"),
            (ToyConfig { n_ff: 0, ..base }, "n_ff"),
            (ToyConfig { n_layer: 0, ..base }, "n_layer"),
            (ToyConfig { n_head: 3, ..base }, "n_head"),
            (ToyConfig { n_head_kv: 3, ..base }, "n_head_kv"),
            (ToyConfig { n_ctx: 0, ..base }, "n_ctx"),
            (
                ToyConfig { n_vocab: 65_536, n_embd: 8192, n_ff: 32_768, n_layer: 256, ..base },
                "n_vocab, n_embd, n_ff, n_layer",
            ),
        ];
        for (config, field) in cases {
            let err = config.build().unwrap_err();
            assert!(matches!(err, ToyError::Config { field: f, .. } if f == field), "{err}");
            assert_eq!(err.code(), "edit::toy::invalid_config");
            assert!(err.to_string().contains(field), "{err}");
        }
        assert_eq!(
            ToyConfig { n_embd: 48, ..base }.build().unwrap_err().to_string(),
            "toy model: n_embd = 48 is invalid; it must be a non-zero multiple of 32, at most 8192"
        );
    }
}
