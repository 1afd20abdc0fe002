//! Hash manifests: hashing a model's tensors and the whole model, writing the hashes as a
//! manifest, reading one back and checking a model against it — what `sipllm verify` does.
//!
//! Two formats, both plain text, one line per hash:
//!
//! * **sipllm's**: `<lowercase hex hash>  <byte size>  <tensor name>` per tensor, one hash
//!   function (the corpus `.tensors.sha256` files);
//! * **llama.cpp's `llama-gguf-hash`** (`examples/gguf-hash/gguf-hash.cpp`):
//!   `printf("%-8s  %s  %s\n", hash, hex, FILE ":" TENSOR)` per tensor and hash function
//!   (xxh64, xxh3, sha1, sha256, in that order), then `printf("%-8s  %s  %s\n", hash, hex,
//!   FILE)` per hash function for the whole model (uuid last: a UUIDv5 in llama.cpp's
//!   namespace, [`UUID_NAMESPACE`], over all tensor data).
//!
//! The whole-model hash is, as llama-gguf-hash computes it, the hash of every tensor's bytes
//! concatenated in directory order (padding excluded); [`hash_model`] reads the tensors in
//! directory order, which is file order in every file a converter writes, so the disk sees one
//! sequential pass.
//!
//! Tensor names are compared as the manifest spells them. This crate does not choose the
//! spelling: the caller passes each tensor's ([`hash_model`]'s `names`). `sipllm` escapes
//! names with `sipllm_view::escape::text` (the backslash, every control character and every
//! byte that is not UTF-8), so each name is one line and two names never encode alike.
//!
//! ```
//! use sipllm_gguf::GgmlType;
//! use sipllm_model::manifest::{HashKind, Manifest, check, hash_model};
//! use sipllm_streaming::{MemSource, Model, OpenOptions};
//! use sipllm_testkit::GgufBuilder;
//!
//! let bytes = GgufBuilder::new().tensor("w", GgmlType::F32, &[4]).build();
//! let model = Model::from_source(MemSource::new(bytes), &OpenOptions::default())?;
//! let hashes = hash_model(&model, &[HashKind::Sha256], &[], &mut |_| {})?;
//! let text = hashes.to_sipllm(HashKind::Sha256).expect("a per-tensor hash");
//! assert!(text.ends_with("  16  w\n"));
//! let report = check(&Manifest::parse(&text)?, &hashes);
//! assert!(report.is_match());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;

use sha1::Digest as _;
use sipllm_format::Kind;
use sipllm_streaming::{StreamError, WeightSource};

/// Largest tensor read whole; larger ones are read in pieces of this size
/// ([`WeightSource::read_chunked`]).
const BUFFER: usize = 8 << 20;

/// llama.cpp's UUIDv5 namespace (`uuid.uuid5(uuid.NAMESPACE_URL,
/// 'en.wikipedia.org/wiki/Llama.cpp')`), hashed before the tensor data.
pub const UUID_NAMESPACE: [u8; 16] = [
    0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d, 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5,
];

/// A hash function: llama-gguf-hash's, in the order it prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HashKind {
    /// XXH64, seed 0 (16 hex digits): llama-gguf-hash's default; fast, not cryptographic.
    Xxh64,
    /// XXH3-64 (16 hex digits): fast, not cryptographic.
    Xxh3,
    /// SHA-1 (40 hex digits).
    Sha1,
    /// SHA-256 (64 hex digits), as `sha256sum` and the corpus `.tensors.sha256` files.
    Sha256,
    /// The whole model's UUIDv5 (llama.cpp's namespace over all tensor data): no per-tensor
    /// hash.
    Uuid,
}

impl HashKind {
    /// Every kind, in llama-gguf-hash's order.
    pub const ALL: [HashKind; 5] =
        [HashKind::Xxh64, HashKind::Xxh3, HashKind::Sha1, HashKind::Sha256, HashKind::Uuid];

    /// The name llama-gguf-hash gives it (`xxh64`, `xxh3`, `sha1`, `sha256`, `uuid`).
    pub fn name(self) -> &'static str {
        match self {
            HashKind::Xxh64 => "xxh64",
            HashKind::Xxh3 => "xxh3",
            HashKind::Sha1 => "sha1",
            HashKind::Sha256 => "sha256",
            HashKind::Uuid => "uuid",
        }
    }

    /// The kind named `name` ([`name`](Self::name)'s inverse).
    pub fn from_name(name: &str) -> Option<HashKind> {
        HashKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether it hashes each tensor (every kind but [`Uuid`](HashKind::Uuid), which names
    /// the whole model only).
    pub fn per_tensor(self) -> bool {
        self != HashKind::Uuid
    }
}

/// A running hash.
enum Hasher {
    /// SHA-256.
    Sha256(Box<sha2::Sha256>),
    /// SHA-1.
    Sha1(Box<sha1::Sha1>),
    /// XXH64, seed 0.
    Xxh64(Box<xxhash_rust::xxh64::Xxh64>),
    /// XXH3-64.
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    /// SHA-1 over the UUID namespace and the data, for a UUIDv5.
    Uuid(Box<sha1::Sha1>),
}

impl Hasher {
    /// A fresh hash of `kind`.
    fn new(kind: HashKind) -> Hasher {
        match kind {
            HashKind::Sha256 => Hasher::Sha256(Box::default()),
            HashKind::Sha1 => Hasher::Sha1(Box::default()),
            HashKind::Xxh64 => Hasher::Xxh64(Box::new(xxhash_rust::xxh64::Xxh64::new(0))),
            HashKind::Xxh3 => Hasher::Xxh3(Box::default()),
            HashKind::Uuid => {
                let mut h = sha1::Sha1::default();
                h.update(UUID_NAMESPACE);
                Hasher::Uuid(Box::new(h))
            }
        }
    }

    /// Feeds `bytes`.
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha1(h) | Hasher::Uuid(h) => h.update(bytes),
            Hasher::Xxh64(h) => h.update(bytes),
            Hasher::Xxh3(h) => h.update(bytes),
        }
    }

    /// The result as llama-gguf-hash prints it: lowercase hex (a 64-bit hash big-endian, as
    /// `%016x` of the value), or the UUID as `8-4-4-4-12` hex groups.
    fn hex(self) -> String {
        match self {
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Sha1(h) => hex(&h.finalize()),
            Hasher::Xxh64(h) => format!("{:016x}", h.digest()),
            Hasher::Xxh3(h) => format!("{:016x}", h.digest()),
            Hasher::Uuid(h) => uuid_v5(&h.finalize()),
        }
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// A UUIDv5 from a SHA-1 digest (RFC 9562 §5.5: the first 16 bytes, version 5, variant 10).
fn uuid_v5(sha1: &[u8]) -> String {
    let mut u = [0u8; 16];
    for (d, s) in u.iter_mut().zip(sha1) {
        *d = *s;
    }
    u[6] = (u[6] & 0x0f) | 0x50;
    u[8] = (u[8] & 0x3f) | 0x80;
    let h = hex(&u);
    let part = |r: std::ops::Range<usize>| h.get(r).unwrap_or_default().to_owned();
    format!("{}-{}-{}-{}-{}", part(0..8), part(8..12), part(12..16), part(16..20), part(20..32))
}

// ---------------------------------------------------------------------------------------
// Manifests and their parsing.

/// One line of a sipllm manifest (or a tensor line of a gguf-hash one, which has no size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestLine {
    /// Lower-case hex hash.
    pub hash: String,
    /// Byte size (`None`: not in the manifest, not compared).
    pub size: Option<u64>,
    /// Tensor name, as the manifest spells it.
    pub name: String,
}

/// One line of a llama-gguf-hash manifest: `<hash name>  <hex>  <name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashLine {
    /// The hash function.
    pub kind: HashKind,
    /// Lower-case hex (a UUID for `uuid`).
    pub hash: String,
    /// `FILE:TENSOR`, or `FILE` for the whole model.
    pub name: String,
}

/// A manifest, in either format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// sipllm's.
    Sipllm(Vec<ManifestLine>),
    /// llama-gguf-hash's.
    GgufHash(Vec<HashLine>),
}

/// Why a manifest does not parse: what, and on which line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// The 1-based line, `None` when the whole text is at fault.
    line: Option<usize>,
    kind: ManifestErrorKind,
}

/// What is wrong with a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestErrorKind {
    /// A sipllm manifest line is not `<hex hash>  <byte size>  <tensor name>`.
    SipllmLine {
        /// The line.
        found: String,
    },
    /// A llama-gguf-hash line starts with a hash name but lacks its hash or its name.
    GgufHashLine {
        /// The line.
        found: String,
    },
    /// A llama-gguf-hash line's hash is not hex digits.
    NotHex {
        /// The hash as written.
        hash: String,
    },
    /// A llama-gguf-hash manifest without a single hash line.
    NoHashLines,
}

impl ManifestError {
    fn at(line: usize, kind: ManifestErrorKind) -> ManifestError {
        ManifestError { line: Some(line), kind }
    }

    /// The 1-based line at fault, `None` when the whole text is.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong.
    pub fn kind(&self) -> &ManifestErrorKind {
        &self.kind
    }
}

impl fmt::Display for ManifestErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestErrorKind::SipllmLine { found } => {
                write!(f, "expected `<hex hash>  <byte size>  <tensor name>`, found {found:?}")
            }
            ManifestErrorKind::GgufHashLine { found } => {
                write!(f, "expected `<hash name>  <hex>  <name>`, found {found:?}")
            }
            ManifestErrorKind::NotHex { hash } => write!(f, "{hash:?} is not a hex hash"),
            ManifestErrorKind::NoHashLines => {
                f.write_str("no hash lines (`xxh64  <hex>  <name>` …)")
            }
        }
    }
}

impl Kind for ManifestErrorKind {
    fn code(&self) -> &'static str {
        match self {
            ManifestErrorKind::SipllmLine { .. } => "model::manifest::sipllm_line",
            ManifestErrorKind::GgufHashLine { .. } => "model::manifest::gguf_hash_line",
            ManifestErrorKind::NotHex { .. } => "model::manifest::not_hex",
            ManifestErrorKind::NoHashLines => "model::manifest::no_hash_lines",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            ManifestErrorKind::SipllmLine { .. } => {
                "each line is a hex hash, two spaces, the byte size, two spaces, the tensor name \
                 (as `sipllm verify --manifest` writes it)"
            }
            ManifestErrorKind::GgufHashLine { .. } | ManifestErrorKind::NotHex { .. } => {
                "each line is a hash name (xxh64, xxh3, sha1, sha256, uuid), its hex value and \
                 FILE:TENSOR or FILE, as llama-gguf-hash writes them"
            }
            ManifestErrorKind::NoHashLines => {
                "the file holds no manifest: write one with `sipllm verify --manifest` or \
                 llama-gguf-hash"
            }
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.kind),
            None => self.kind.fmt(f),
        }
    }
}

impl std::error::Error for ManifestError {}

impl Kind for ManifestError {
    fn code(&self) -> &'static str {
        self.kind.code()
    }

    fn help(&self) -> &'static str {
        self.kind.help()
    }
}

impl Manifest {
    /// Reads either format: llama-gguf-hash's when a line starts with a hash name (`xxh64`,
    /// `sha256`, …; a sipllm line starts with hex digits, which no hash name is).
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        let gguf_hash = text
            .lines()
            .any(|l| l.split_whitespace().next().and_then(HashKind::from_name).is_some());
        if gguf_hash {
            parse_gguf_hash(text).map(Manifest::GgufHash)
        } else {
            parse_sipllm(text).map(Manifest::Sipllm)
        }
    }

    /// The hash function to check it with when none is asked for: for a sipllm manifest the
    /// one its hash length says (16 digits xxh3 — an xxh64 one must be asked for —, 40 sha1,
    /// otherwise sha256); for a gguf-hash one the strongest it holds, as llama-gguf-hash
    /// chooses.
    pub fn default_kind(&self) -> HashKind {
        match self {
            Manifest::Sipllm(lines) => match lines.first().map(|l| l.hash.len()) {
                Some(16) => HashKind::Xxh3,
                Some(40) => HashKind::Sha1,
                _ => HashKind::Sha256,
            },
            Manifest::GgufHash(lines) => {
                let has = |k| lines.iter().any(|l| l.kind == k);
                [HashKind::Sha256, HashKind::Sha1, HashKind::Xxh64, HashKind::Xxh3, HashKind::Uuid]
                    .into_iter()
                    .find(|&k| has(k))
                    .unwrap_or(HashKind::Sha256)
            }
        }
    }
}

/// The hash functions to compute: `asked` (each once, in llama-gguf-hash's order), or when
/// nothing is asked the manifest's [`default_kind`](Manifest::default_kind), or sha256.
pub fn choose_kinds(asked: &[HashKind], check: Option<&Manifest>) -> Vec<HashKind> {
    let mut kinds = asked.to_vec();
    if kinds.is_empty() {
        kinds.push(check.map_or(HashKind::Sha256, Manifest::default_kind));
    }
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Parses a llama-gguf-hash manifest: `<hash name> <hex> <name>` per line, separated by
/// whitespace as llama-gguf-hash reads them (`istream >>`); empty lines are skipped. Its check
/// output (a `manifest  …` first line, `  -  Ok` suffixes, the verdict line) reads too: words
/// after the name are ignored, and lines that do not start with a hash name are skipped.
pub fn parse_gguf_hash(text: &str) -> Result<Vec<HashLine>, ManifestError> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = i.saturating_add(1);
        let mut words = line.split_whitespace();
        let Some(kind) = words.next().and_then(HashKind::from_name) else { continue };
        let (Some(hash), Some(name)) = (words.next(), words.next()) else {
            return Err(ManifestError::at(
                at,
                ManifestErrorKind::GgufHashLine { found: line.to_owned() },
            ));
        };
        let hex_ok =
            hash.bytes().all(|b| b.is_ascii_hexdigit() || (kind == HashKind::Uuid && b == b'-'));
        if hash.is_empty() || !hex_ok {
            return Err(ManifestError::at(at, ManifestErrorKind::NotHex { hash: hash.to_owned() }));
        }
        lines.push(HashLine { kind, hash: hash.to_ascii_lowercase(), name: name.to_owned() });
    }
    if lines.is_empty() {
        return Err(ManifestError { line: None, kind: ManifestErrorKind::NoHashLines });
    }
    Ok(lines)
}

/// Parses a sipllm manifest: `<hex>  <size>  <name>` per line; empty lines are skipped. The
/// name is everything after the second double space.
pub fn parse_sipllm(text: &str) -> Result<Vec<ManifestLine>, ManifestError> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || {
            ManifestError::at(
                i.saturating_add(1),
                ManifestErrorKind::SipllmLine { found: line.to_owned() },
            )
        };
        let (hash, rest) = line.split_once("  ").ok_or_else(bad)?;
        let (size, name) = rest.split_once("  ").ok_or_else(bad)?;
        if hash.is_empty() || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let size = size.trim().parse().map_err(|_| bad())?;
        lines.push(ManifestLine {
            hash: hash.to_ascii_lowercase(),
            size: Some(size),
            name: name.to_owned(),
        });
    }
    Ok(lines)
}

// ---------------------------------------------------------------------------------------
// Hashing a model.

/// One tensor's hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorHashes {
    /// The name, as the manifest spells it.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// One hash per [`ModelHashes::per_tensor`] kind, in that order.
    pub hashes: Vec<String>,
}

/// What hashing a model gave ([`hash_model`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelHashes {
    /// The hash functions, each once, in llama-gguf-hash's order.
    pub kinds: Vec<HashKind>,
    /// Per tensor, in directory order.
    pub tensors: Vec<TensorHashes>,
    /// Per kind, the whole model's hash (of every tensor's bytes in directory order).
    pub model: Vec<(HashKind, String)>,
    /// Tensor bytes read.
    pub bytes_read: u64,
}

/// A tensor that could not be read back while hashing.
#[derive(Debug, thiserror::Error)]
#[error("tensor {tensor:?} cannot be read back: {source}")]
pub struct ReadBackError {
    /// The tensor's name.
    pub tensor: String,
    /// Why (boxed: the error stays small on the success path).
    #[source]
    pub source: Box<StreamError>,
}

/// Reads every tensor of `source` in directory order through one bounded buffer, hashing
/// each with every per-tensor kind of `kinds` and the whole model with every kind.
///
/// `names` spells each tensor's name as the manifest will (one per tensor in directory
/// order); a tensor past its end is named by [`SourceTensor::name`](sipllm_streaming::SourceTensor).
/// `progress` is called with each tensor's byte count once it is read.
pub fn hash_model(
    source: &dyn WeightSource,
    kinds: &[HashKind],
    names: &[String],
    progress: &mut dyn FnMut(u64),
) -> Result<ModelHashes, ReadBackError> {
    let mut kinds = kinds.to_vec();
    kinds.sort();
    kinds.dedup();
    let per_tensor: Vec<HashKind> = kinds.iter().copied().filter(|k| k.per_tensor()).collect();
    let tensors = source.tensors();
    let mut model: Vec<Hasher> = kinds.iter().map(|&k| Hasher::new(k)).collect();
    let mut out = Vec::with_capacity(tensors.len());
    let mut buf = vec![0u8; BUFFER];
    let mut bytes_read = 0u64;
    for (i, t) in tensors.iter().enumerate() {
        let mut own: Vec<Hasher> = per_tensor.iter().map(|&k| Hasher::new(k)).collect();
        source
            .read_chunked(t, &mut buf, &mut |chunk| {
                for h in own.iter_mut().chain(model.iter_mut()) {
                    h.update(chunk);
                }
            })
            .map_err(|e| ReadBackError { tensor: t.name.clone(), source: Box::new(e) })?;
        let size = t.nbytes.unwrap_or(0);
        bytes_read = bytes_read.saturating_add(size);
        progress(size);
        out.push(TensorHashes {
            name: names.get(i).cloned().unwrap_or_else(|| t.name.clone()),
            size,
            hashes: own.into_iter().map(Hasher::hex).collect(),
        });
    }
    let model = kinds.iter().copied().zip(model.into_iter().map(Hasher::hex)).collect();
    Ok(ModelHashes { kinds, tensors: out, model, bytes_read })
}

impl ModelHashes {
    /// The kinds each tensor was hashed with ([`kinds`](Self::kinds) without uuid).
    pub fn per_tensor(&self) -> impl Iterator<Item = HashKind> + '_ {
        self.kinds.iter().copied().filter(|k| k.per_tensor())
    }

    /// The whole model's `kind` hash, if computed.
    pub fn model_hash(&self, kind: HashKind) -> Option<&str> {
        self.model.iter().find(|(k, _)| *k == kind).map(|(_, h)| h.as_str())
    }

    /// The sipllm manifest lines of `kind` (`None` when no tensor was hashed with it).
    pub fn lines(&self, kind: HashKind) -> Option<Vec<ManifestLine>> {
        let k = self.per_tensor().position(|p| p == kind)?;
        Some(
            self.tensors
                .iter()
                .map(|t| ManifestLine {
                    hash: t.hashes.get(k).cloned().unwrap_or_default(),
                    size: Some(t.size),
                    name: t.name.clone(),
                })
                .collect(),
        )
    }

    /// The sipllm manifest of `kind`: `<hex>  <size>  <name>` per tensor (`None` when no
    /// tensor was hashed with it).
    pub fn to_sipllm(&self, kind: HashKind) -> Option<String> {
        let mut text = String::new();
        for l in self.lines(kind)? {
            text.push_str(&format!("{}  {}  {}\n", l.hash, l.size.unwrap_or(0), l.name));
        }
        Some(text)
    }

    /// The whole model's lines, as llama-gguf-hash prints them (`<kind padded to 8>  <hex>
    /// FILE`, no line feed), `file` spelled as the manifest should.
    pub fn model_lines(&self, file: &str) -> Vec<String> {
        self.model.iter().map(|(k, h)| format!("{:<8}  {h}  {file}", k.name())).collect()
    }

    /// What llama-gguf-hash prints for these hash functions (without `--no-layer`): per
    /// tensor a line per hash function, `FILE:TENSOR`, then the model's lines.
    pub fn to_gguf_hash(&self, file: &str) -> String {
        let per_tensor: Vec<HashKind> = self.per_tensor().collect();
        let mut text = String::new();
        for t in &self.tensors {
            for (k, h) in per_tensor.iter().zip(&t.hashes) {
                text.push_str(&format!("{:<8}  {h}  {file}:{}\n", k.name(), t.name));
            }
        }
        for l in self.model_lines(file) {
            text.push_str(&l);
            text.push('\n');
        }
        text
    }
}

// ---------------------------------------------------------------------------------------
// Checking.

/// One difference between a manifest and a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// The manifest names the tensor more than once.
    Duplicate {
        /// The tensor.
        name: String,
    },
    /// A tensor of the model the manifest lacks.
    Extra {
        /// The tensor.
        name: String,
    },
    /// A tensor whose size differs.
    Size {
        /// The tensor.
        name: String,
        /// The model's.
        file: u64,
        /// The manifest's.
        manifest: u64,
    },
    /// A tensor whose hash differs.
    Hash {
        /// The tensor.
        name: String,
        /// The model's.
        file: String,
        /// The manifest's.
        manifest: String,
    },
    /// A tensor of the manifest the model lacks.
    Missing {
        /// The tensor.
        name: String,
    },
    /// The whole model's hash differs.
    Model {
        /// The hash function.
        kind: HashKind,
        /// The model's.
        file: String,
        /// The manifest's.
        manifest: String,
    },
    /// The manifest has no line of this hash function.
    NoLines {
        /// The hash function.
        kind: HashKind,
    },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Duplicate { name } => {
                write!(f, "{name}: listed more than once in the manifest")
            }
            Difference::Extra { name } => write!(f, "{name}: in the file, not in the manifest"),
            Difference::Size { name, file, manifest } => {
                write!(f, "{name}: size {file} in the file, {manifest} in the manifest")
            }
            Difference::Hash { name, file, manifest } => {
                write!(f, "{name}: hash {file} in the file, {manifest} in the manifest")
            }
            Difference::Missing { name } => write!(f, "{name}: in the manifest, not in the file"),
            Difference::Model { kind, file, manifest } => {
                write!(f, "model: {} {file} in the file, {manifest} in the manifest", kind.name())
            }
            Difference::NoLines { kind } => write!(f, "the manifest has no {} lines", kind.name()),
        }
    }
}

/// The outcome of checking one hash function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCheck {
    /// The hash function.
    pub kind: HashKind,
    /// The model's tensor count when the manifest's tensor lines were compared and every
    /// one matched; `None` when there were none, or a difference.
    pub tensors_match: Option<usize>,
    /// Whether the manifest's model line matched (`None`: not compared).
    pub model_match: Option<bool>,
    /// Every difference, in the model's order, then the tensors the model lacks.
    pub differences: Vec<Difference>,
}

impl KindCheck {
    /// The one-line verdict: `all 8 tensors match; the model matches`, …, or
    /// `N difference(s)`.
    pub fn verdict(&self) -> String {
        if !self.differences.is_empty() {
            return format!("{} difference(s)", self.differences.len());
        }
        let mut parts = Vec::new();
        if let Some(n) = self.tensors_match {
            parts.push(format!("all {n} tensors match"));
        }
        if self.model_match == Some(true) {
            parts.push("the model matches".to_owned());
        }
        parts.join("; ")
    }
}

/// A model checked against a manifest: one [`KindCheck`] per hash function compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// Per hash function, in llama-gguf-hash's order.
    pub kinds: Vec<KindCheck>,
}

impl CheckReport {
    /// Every difference, in order.
    pub fn differences(&self) -> impl Iterator<Item = &Difference> {
        self.kinds.iter().flat_map(|k| &k.differences)
    }

    /// True when nothing differs.
    pub fn is_match(&self) -> bool {
        self.differences().next().is_none()
    }
}

/// Checks `hashes` against `manifest`: a sipllm manifest with one hash function, its
/// [`default_kind`](Manifest::default_kind) if hashed, else the first per-tensor kind hashed
/// (an empty report when there is none); a gguf-hash one with every kind hashed
/// ([`check_gguf_hash`]).
pub fn check(manifest: &Manifest, hashes: &ModelHashes) -> CheckReport {
    match manifest {
        Manifest::Sipllm(lines) => {
            let default = manifest.default_kind();
            let kind = if hashes.kinds.contains(&default) {
                Some(default)
            } else {
                hashes.per_tensor().next()
            };
            let Some(kind) = kind else {
                return CheckReport { kinds: Vec::new() };
            };
            let differences = compare(lines, &hashes.lines(kind).unwrap_or_default());
            let tensors_match = differences.is_empty().then_some(hashes.tensors.len());
            CheckReport {
                kinds: vec![KindCheck { kind, tensors_match, model_match: None, differences }],
            }
        }
        Manifest::GgufHash(lines) => CheckReport {
            kinds: hashes.kinds.iter().map(|&k| check_gguf_hash(lines, k, hashes)).collect(),
        },
    }
}

/// Checks the `kind` lines of a gguf-hash manifest against `hashes`.
///
/// Lines are matched by tensor name, not by the file name llama-gguf-hash put before it (the
/// path the manifest was made with, which need not be this file's): the model lines are the
/// ones named `F` where others are named `F:TENSOR`; without such a pair, a line whose name
/// ends in `:` and one of this model's tensor names is that tensor's, any other a model line.
/// Tensor lines are checked when the manifest has any for `kind` (each tensor of the model
/// must have one, and each one a tensor), the model line when it has one.
pub fn check_gguf_hash(lines: &[HashLine], kind: HashKind, hashes: &ModelHashes) -> KindCheck {
    let all_names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    let file_name = all_names
        .iter()
        .find(|n| {
            all_names.iter().any(|m| {
                m.len() > n.len().saturating_add(1)
                    && m.starts_with(**n)
                    && m.as_bytes().get(n.len()) == Some(&b':')
            })
        })
        .copied();
    let ours: HashSet<&str> = hashes.tensors.iter().map(|t| t.name.as_str()).collect();
    let split = |name: &str| -> Option<String> {
        match file_name {
            Some(f) if name == f => None,
            Some(f) => name
                .strip_prefix(f)
                .and_then(|r| r.strip_prefix(':'))
                .map(str::to_owned)
                .or_else(|| Some(name.to_owned())),
            // The longest suffix after a ':' that names one of our tensors.
            None => name
                .match_indices(':')
                .map(|(i, _)| name.get(i.saturating_add(1)..).unwrap_or_default())
                .find(|t| ours.contains(t))
                .map(str::to_owned),
        }
    };
    let mut tensor_lines = Vec::new();
    let mut model_lines = Vec::new();
    for l in lines.iter().filter(|l| l.kind == kind) {
        match split(&l.name) {
            Some(t) if kind.per_tensor() => {
                tensor_lines.push(ManifestLine { hash: l.hash.clone(), size: None, name: t })
            }
            _ => model_lines.push(l),
        }
    }
    let mut differences = Vec::new();
    let mut tensors_match = None;
    if let (false, Some(actual)) = (tensor_lines.is_empty(), hashes.lines(kind)) {
        differences.extend(compare(&tensor_lines, &actual));
        if differences.is_empty() {
            tensors_match = Some(actual.len());
        }
    }
    let mut model_match = None;
    if let (Some(line), Some(ours)) = (model_lines.first(), hashes.model_hash(kind)) {
        model_match = Some(line.hash == ours);
        if line.hash != ours {
            differences.push(Difference::Model {
                kind,
                file: ours.to_owned(),
                manifest: line.hash.clone(),
            });
        }
    }
    if tensor_lines.is_empty() && model_lines.is_empty() {
        differences.push(Difference::NoLines { kind });
    }
    KindCheck { kind, tensors_match, model_match, differences }
}

/// Every difference between the expected lines and the model's, in the model's order, then
/// the expected tensors the model lacks. Sizes are compared where `expected` has them.
pub fn compare(expected: &[ManifestLine], actual: &[ManifestLine]) -> Vec<Difference> {
    let mut diffs = Vec::new();
    let mut by_name: HashMap<&str, &ManifestLine> = HashMap::new();
    for e in expected {
        if by_name.insert(&e.name, e).is_some() {
            diffs.push(Difference::Duplicate { name: e.name.clone() });
        }
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for a in actual {
        seen.insert(&a.name);
        match by_name.get(a.name.as_str()) {
            None => diffs.push(Difference::Extra { name: a.name.clone() }),
            Some(e) if e.size.is_some() && e.size != a.size => diffs.push(Difference::Size {
                name: a.name.clone(),
                file: a.size.unwrap_or(0),
                manifest: e.size.unwrap_or(0),
            }),
            Some(e) if e.hash != a.hash => diffs.push(Difference::Hash {
                name: a.name.clone(),
                file: a.hash.clone(),
                manifest: e.hash.clone(),
            }),
            Some(_) => {}
        }
    }
    for e in expected {
        if !seen.contains(e.name.as_str()) {
            diffs.push(Difference::Missing { name: e.name.clone() });
        }
    }
    diffs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published XXH64 and XXH3-64 values of the empty input (seed 0), printed as
    /// llama-gguf-hash prints them; and the UUIDv5 of RFC 9562 built the way llama.cpp built
    /// its own namespace: `uuid5(NAMESPACE_URL, "en.wikipedia.org/wiki/Llama.cpp")` is that
    /// namespace.
    #[test]
    fn hashes_print_as_llama_gguf_hash_prints_them() {
        assert_eq!(Hasher::new(HashKind::Xxh64).hex(), "ef46db3751d8e999");
        assert_eq!(Hasher::new(HashKind::Xxh3).hex(), "2d06800538d394c2");
        assert_eq!(Hasher::new(HashKind::Sha1).hex(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        let namespace_url = [
            0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
            0x30, 0xc8,
        ];
        let mut h = sha1::Sha1::default();
        h.update(namespace_url);
        h.update(b"en.wikipedia.org/wiki/Llama.cpp");
        let id = uuid_v5(&h.finalize());
        assert_eq!(id, "ef001206-dadc-5f6d-a15f-3359e577d4e5");
        assert_eq!(id.replace('-', ""), hex(&UUID_NAMESPACE));
    }
}
