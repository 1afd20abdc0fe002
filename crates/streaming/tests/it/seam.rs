//! Seam equivalence: the toy model written as GGUF and as `.llmw` is the same model through
//! `WeightSource` — tensors (names, row-major shapes, types, sizes, bytes), every metadata
//! value (collapsed `Meta`, typed accessors, lists), and so the tokenizer built from it — and
//! `open_model` picks the format from the content, never from the name.

use std::fs;
use std::path::Path;

use crate::common::{TempDir, TempFile};
use sipllm_edit::toy::{self, ToyModel, ToyValue};
use sipllm_gguf::GgmlType;
use sipllm_streaming::{
    Backend, Format, MemSource, Meta, Model, OpenOptions, StreamError, StreamErrorKind,
    WeightSource, open_model, open_model_from,
};

const SEEDS: [u64; 4] = [0, 1, 42, u64::MAX];

/// Metadata equality across formats: integers as `i128`, floats bit for bit as `f64`,
/// strings byte for byte, lists element by element (never the storage).
fn same_meta(a: &Meta<'_>, b: &Meta<'_>) -> bool {
    match (a, b) {
        (Meta::Int(x), Meta::Int(y)) => x == y,
        (Meta::Float(x), Meta::Float(y)) => x.to_bits() == y.to_bits(),
        (Meta::Bool(x), Meta::Bool(y)) => x == y,
        (Meta::Str(x), Meta::Str(y)) => x.as_bytes() == y.as_bytes(),
        (Meta::Ints(x), Meta::Ints(y)) => x.len() == y.len() && x.iter().eq(y.iter()),
        (Meta::Floats(x), Meta::Floats(y)) => {
            x.len() == y.len() && x.iter().map(f64::to_bits).eq(y.iter().map(f64::to_bits))
        }
        (Meta::Strs(x), Meta::Strs(y)) => {
            x.len() == y.len() && x.iter().map(|t| t.as_bytes()).eq(y.iter().map(|t| t.as_bytes()))
        }
        _ => false,
    }
}

/// What a tokenizer needs, read through the seam only.
#[derive(Debug, PartialEq)]
struct Tokenizer {
    model: String,
    tokens: Vec<String>,
    /// Bit patterns, so equality is exact.
    scores: Vec<u32>,
    types: Vec<i32>,
    bos: u32,
    eos: u32,
    unk: u32,
}

impl Tokenizer {
    fn from_source(src: &dyn WeightSource) -> Result<Tokenizer, StreamError> {
        let tokens = src.meta_strs("tokenizer.ggml.tokens")?;
        Ok(Tokenizer {
            model: src.meta_str("tokenizer.ggml.model")?.to_owned(),
            tokens: tokens.to_vec()?.into_iter().map(str::to_owned).collect(),
            scores: src
                .meta_floats("tokenizer.ggml.scores")?
                .to_vec_f32()
                .into_iter()
                .map(f32::to_bits)
                .collect(),
            types: src.meta_ints("tokenizer.ggml.token_type")?.to_vec()?,
            bos: u32::try_from(src.meta_uint("tokenizer.ggml.bos_token_id")?).unwrap(),
            eos: u32::try_from(src.meta_uint("tokenizer.ggml.eos_token_id")?).unwrap(),
            unk: u32::try_from(src.meta_uint("tokenizer.ggml.unknown_token_id")?).unwrap(),
        })
    }

    /// SentencePiece-style greedy longest match with byte fallback: enough to show that
    /// both sources tokenize text alike.
    fn encode(&self, text: &str) -> Vec<u32> {
        let text = format!("▁{}", text.replace(' ', "▁"));
        let mut ids = vec![self.bos];
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let best = (0..self.tokens.len())
                .filter(|&i| self.types[i] == 1 && rest.starts_with(self.tokens[i].as_str()))
                .max_by_key(|&i| self.tokens[i].len());
            match best {
                Some(i) => {
                    ids.push(i as u32);
                    rest = &rest[self.tokens[i].len()..];
                }
                None => {
                    let ch = rest.chars().next().unwrap();
                    for b in ch.to_string().bytes() {
                        let byte = format!("<0x{b:02X}>");
                        let id = self.tokens.iter().position(|t| *t == byte);
                        ids.push(id.map_or(self.unk, |i| i as u32));
                    }
                    rest = &rest[ch.len_utf8()..];
                }
            }
        }
        ids
    }
}

/// Asserts that `a` (GGUF) and `b` (`.llmw`) are the same model, and that both are `toy`.
fn assert_equivalent(a: &dyn WeightSource, b: &dyn WeightSource, toy: &ToyModel) {
    // Tensors: everything but the offsets (each format lays data out its own way).
    let facts = |s: &dyn WeightSource| -> Vec<_> {
        s.tensors()
            .iter()
            .map(|t| (t.name.clone(), t.shape.to_vec(), t.ggml_type, t.nbytes))
            .collect()
    };
    assert_eq!(facts(a), facts(b));
    let expected: Vec<_> = toy
        .tensors()
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone(), t.ggml_type, Some(t.data.len() as u64)))
        .collect();
    assert_eq!(facts(a), expected);
    let types: Vec<GgmlType> = a.tensors().iter().map(|t| t.ggml_type).collect();
    for ty in [GgmlType::F32, GgmlType::F16, GgmlType::Q8_0] {
        assert!(types.contains(&ty), "the toy model has {ty} tensors");
    }

    // Tensor bytes: one read each, equal across formats and to what was written.
    for (ta, tb) in a.tensors().iter().zip(b.tensors()) {
        let mut da = vec![0u8; ta.byte_len().unwrap()];
        let mut db = vec![0u8; tb.byte_len().unwrap()];
        a.read_raw(ta, &mut da).unwrap();
        b.read_raw(tb, &mut db).unwrap();
        assert_eq!(da, db, "{}", ta.name);
        assert_eq!(da, toy.tensor(&ta.name).unwrap().data, "{}", ta.name);
        // A sub-range (the last row) too.
        let row = da.len() / ta.shape[0] as usize;
        let mut ra = vec![0u8; row];
        let mut rb = vec![0u8; row];
        a.read_raw_at(ta.end().unwrap() - row as u64, &mut ra).unwrap();
        b.read_raw_at(tb.end().unwrap() - row as u64, &mut rb).unwrap();
        assert_eq!(ra, rb, "{} last row", ta.name);
        // `find` agrees with the list.
        assert_eq!(a.find(&ta.name), Some(ta));
        assert_eq!(b.find(&tb.name), Some(tb));
    }

    // Metadata: the same keys in the same order, the same collapsed values.
    let keys =
        |s: &dyn WeightSource| -> Vec<String> { s.meta_keys().map(|k| k.to_string()).collect() };
    assert_eq!(keys(a), keys(b));
    assert_eq!(keys(a), toy.metadata().iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>());
    let pairs_b: Vec<_> = b.metadata().collect();
    for ((ka, va), (kb, vb)) in a.metadata().zip(pairs_b.iter()) {
        assert_eq!(ka, *kb);
        assert!(same_meta(&va, vb), "{ka}: {va:?} vs {vb:?}");
        let key = ka.as_str().unwrap();
        assert!(same_meta(&a.meta(key).unwrap(), &b.meta(key).unwrap()), "{key} by lookup");
    }

    // Typed accessors, against the values written.
    for (key, value) in toy.metadata() {
        match value {
            ToyValue::U32(v) => {
                assert_eq!(a.meta_int(key).unwrap(), i64::from(*v), "{key}");
                assert_eq!(b.meta_int(key).unwrap(), i64::from(*v), "{key}");
                assert_eq!(a.meta_uint(key).unwrap(), b.meta_uint(key).unwrap(), "{key}");
            }
            ToyValue::F32(v) => {
                let (fa, fb) = (a.meta_float(key).unwrap(), b.meta_float(key).unwrap());
                assert_eq!(fa.to_bits(), f64::from(*v).to_bits(), "{key}: widened exactly");
                assert_eq!(fa.to_bits(), fb.to_bits(), "{key}");
            }
            ToyValue::Str(s) => {
                assert_eq!(a.meta_str(key).unwrap(), s, "{key}");
                assert_eq!(b.meta_str(key).unwrap(), s, "{key}");
            }
            ToyValue::Strs(v) => {
                assert_eq!(a.meta_strs(key).unwrap().to_vec().unwrap(), *v, "{key}");
                assert_eq!(b.meta_strs(key).unwrap().to_vec().unwrap(), *v, "{key}");
                let (la, lb) = (a.meta_strs(key).unwrap(), b.meta_strs(key).unwrap());
                assert_eq!(la, lb);
                assert_eq!(la.get(v.len() - 1), lb.get(v.len() - 1));
                assert_eq!(lb.iter().len(), v.len(), "exact size");
            }
            ToyValue::F32s(v) => {
                assert_eq!(a.meta_floats(key).unwrap().to_vec_f32(), *v, "{key}");
                assert_eq!(b.meta_floats(key).unwrap().to_vec_f32(), *v, "{key}");
                let (la, lb) = (a.meta_floats(key).unwrap(), b.meta_floats(key).unwrap());
                assert_eq!(la.get(3).map(f64::to_bits), lb.get(3).map(f64::to_bits));
            }
            ToyValue::I32s(v) => {
                assert_eq!(a.meta_ints(key).unwrap().to_vec::<i32>().unwrap(), *v, "{key}");
                assert_eq!(b.meta_ints(key).unwrap().to_vec::<i32>().unwrap(), *v, "{key}");
                let (la, lb) = (a.meta_ints(key).unwrap(), b.meta_ints(key).unwrap());
                assert_eq!(la.get(1), lb.get(1));
                assert_eq!(la.get(v.len()), None);
                assert_eq!(lb.get(v.len()), None);
            }
            other => panic!("{key}: a value kind this test does not know: {other:?}"),
        }
    }
    // Kinds are reported alike in errors.
    let (ea, eb) = (a.meta_float("llama.block_count"), b.meta_float("llama.block_count"));
    assert_eq!(ea.unwrap_err().to_string(), eb.unwrap_err().to_string());

    // The tokenizer, and what it does.
    let (tok_a, tok_b) = (Tokenizer::from_source(a).unwrap(), Tokenizer::from_source(b).unwrap());
    assert_eq!(tok_a, tok_b);
    assert_eq!(tok_a.tokens.len() as u64, a.meta_uint("llama.vocab_size").unwrap());
    for text in ["the toy model", "in the stream", "café 日本 Ω 🦀!"] {
        assert_eq!(tok_a.encode(text), tok_b.encode(text), "{text}");
    }
}

fn open_both(
    dir: &Path,
    seed: u64,
    backend: Backend,
) -> (Box<dyn WeightSource>, Box<dyn WeightSource>) {
    let files = toy::write_toy(seed, dir).unwrap();
    assert_eq!(files.gguf, dir.join("toy.gguf"));
    assert_eq!(files.llmw, dir.join("toy.llmw"));
    let opts = OpenOptions::default().with_backend(backend).with_readahead(2);
    (open_model(&files.gguf, &opts).unwrap(), open_model(&files.llmw, &opts).unwrap())
}

#[test]
fn the_toy_model_is_the_same_model_in_both_formats() {
    let dir = TempDir::new("seam");
    for seed in SEEDS {
        for backend in [Backend::Pread, Backend::Mmap] {
            let (gguf, llmw) = open_both(dir.path(), seed, backend);
            assert_equivalent(&*gguf, &*llmw, &toy::toy_model(seed));
            let tok = Tokenizer::from_source(&*llmw).unwrap();
            let id = |s: &str| tok.tokens.iter().position(|t| t == s).unwrap() as u32;
            assert_eq!(tok.encode("the toy model"), [1, id("▁the"), id("▁toy"), id("▁model")]);
            assert_eq!(tok.encode("!"), [1, id("▁"), 0], "no byte token for '!': unknown");
            assert_eq!(
                gguf.meta_str("general.name").unwrap(),
                format!("sipllm toy llama (seed {seed})")
            );
        }
    }
}

#[test]
fn seeds_change_the_weights_not_the_shape() {
    let dir = TempDir::new("seeds");
    let (a, _) = open_both(&dir.path().join("a"), 1, Backend::Pread);
    let (b, _) = open_both(&dir.path().join("b"), 2, Backend::Pread);
    let facts = |s: &dyn WeightSource| -> Vec<_> {
        s.tensors().iter().map(|t| (t.name.clone(), t.shape.to_vec(), t.ggml_type)).collect()
    };
    assert_eq!(facts(&*a), facts(&*b));
    let t = a.find("blk.1.ffn_up.weight").unwrap();
    let mut da = vec![0u8; t.byte_len().unwrap()];
    let mut db = da.clone();
    a.read_raw(t, &mut da).unwrap();
    b.read_raw(b.find("blk.1.ffn_up.weight").unwrap(), &mut db).unwrap();
    assert_ne!(da, db);
}

#[test]
fn writing_is_reproducible_byte_for_byte() {
    let dir = TempDir::new("repro");
    let first = toy::write_toy(9, dir.path()).unwrap();
    let (gguf, llmw) = (fs::read(&first.gguf).unwrap(), fs::read(&first.llmw).unwrap());
    // Writing again replaces the files with identical bytes, and leaves no temporary file.
    toy::write_toy(9, dir.path()).unwrap();
    assert_eq!(fs::read(&first.gguf).unwrap(), gguf);
    assert_eq!(fs::read(&first.llmw).unwrap(), llmw);
    let mut names: Vec<_> =
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["toy.gguf", "toy.llmw"]);
    // And the files are exactly what the in-memory serializers give.
    let model = toy::toy_model(9);
    assert_eq!(model.gguf_bytes().unwrap(), gguf);
    assert_eq!(model.llmw_bytes().unwrap(), llmw);
    assert_eq!(&gguf[..4], b"GGUF");
    assert_eq!(&llmw[..8], b"LLMW\x02\0\0\0", ".llmw version 2: the vocabulary is arrays");
}

#[test]
fn memory_sources_are_equivalent_too() {
    for seed in SEEDS {
        let model = toy::toy_model(seed);
        let opts = OpenOptions::default();
        let gguf = open_model_from(MemSource::new(model.gguf_bytes().unwrap()), &opts).unwrap();
        let llmw = open_model_from(MemSource::new(model.llmw_bytes().unwrap()), &opts).unwrap();
        assert_equivalent(&*gguf, &*llmw, &model);
    }
}

#[test]
fn llmw_lists_are_views_into_the_header_not_copies() {
    let model = toy::toy_model(3);
    let opts = OpenOptions::default();
    let gguf = Model::from_source(MemSource::new(model.gguf_bytes().unwrap()), &opts).unwrap();
    let llmw = Model::from_source(MemSource::new(model.llmw_bytes().unwrap()), &opts).unwrap();
    assert_eq!((gguf.format(), llmw.format()), (Format::Gguf, Format::Llmw));
    let header = llmw.llmw().unwrap().llmw().header_bytes().as_ptr_range();
    let tokens = llmw.meta_strs("tokenizer.ggml.tokens").unwrap();
    let view = tokens.as_llmw().expect("a .llmw string list wraps the parser's view");
    assert!(header.contains(&view.payload().as_ptr()));
    for t in tokens.iter() {
        assert!(header.contains(&t.as_bytes().as_ptr()), "{t:?} points into the header");
    }
    assert!(llmw.meta_ints("tokenizer.ggml.token_type").unwrap().as_llmw().is_some());
    assert!(llmw.meta_floats("tokenizer.ggml.scores").unwrap().as_llmw().is_some());
    assert!(gguf.meta_strs("tokenizer.ggml.tokens").unwrap().as_gguf().is_some());
    assert!(gguf.meta_strs("tokenizer.ggml.tokens").unwrap().as_llmw().is_none());
}

#[test]
fn open_model_dispatches_on_content_not_extension() {
    let dir = TempDir::new("swap");
    let files = toy::write_toy(5, dir.path()).unwrap();
    let gguf_named_llmw = dir.path().join("really-gguf.llmw");
    let llmw_named_gguf = dir.path().join("really-llmw.gguf");
    let no_extension = dir.path().join("model");
    fs::copy(&files.gguf, &gguf_named_llmw).unwrap();
    fs::copy(&files.llmw, &llmw_named_gguf).unwrap();
    fs::copy(&files.llmw, &no_extension).unwrap();
    let opts = OpenOptions::default();
    for (path, format) in [
        (&files.gguf, Format::Gguf),
        (&files.llmw, Format::Llmw),
        (&gguf_named_llmw, Format::Gguf),
        (&llmw_named_gguf, Format::Llmw),
        (&no_extension, Format::Llmw),
    ] {
        let model = Model::open(path, &opts).unwrap();
        assert_eq!(model.format(), format, "{}", path.display());
        assert_eq!(model.path(), Some(path.as_path()));
        assert_eq!(model.gguf().is_some(), format == Format::Gguf);
        assert_eq!(model.llmw().is_some(), format == Format::Llmw);
        assert_eq!(model.as_weight_source().tensors().len(), 21);
    }
    let a = open_model(&gguf_named_llmw, &opts).unwrap();
    let b = open_model(&llmw_named_gguf, &opts).unwrap();
    assert_equivalent(&*a, &*b, &toy::toy_model(5));
}

#[test]
fn unknown_magic_is_an_error_showing_the_bytes() {
    let opts = OpenOptions::default();
    let file = TempFile::with_bytes("zip.gguf", b"PK\x03\x04 not a model");
    let err = open_model(file.path(), &opts).err().unwrap();
    assert_eq!(err.code(), "streaming::open::unknown_magic");
    assert!(matches!(err.kind(), StreamErrorKind::UnknownMagic { found: [b'P', b'K', 3, 4], .. }));
    assert_eq!(err.path(), Some(file.path()));
    let msg = err.located().to_string();
    assert!(msg.starts_with(&format!("{}: not a model file: ", file.path().display())), "{msg}");
    assert!(msg.contains("50 4B 03 04 (\"PK\\x03\\x04\")"), "{msg}");
    assert!(msg.contains("\"GGUF\"") && msg.contains("\"LLMW\""), "{msg}");

    // The same from memory (no path), and for a legacy GGML file.
    let err = open_model_from(MemSource::new(b"lmgg\x01\0\0\0"), &opts).err().unwrap();
    assert!(matches!(
        err.kind(),
        StreamErrorKind::UnknownMagic { found: [b'l', b'm', b'g', b'g'] }
    ));
    assert_eq!(err.path(), None);
    assert!(err.help().contains("legacy GGML"), "{}", err.help());
    // Case matters: magics are bytes.
    let err = open_model_from(MemSource::new(b"gguf\x03\0\0\0"), &opts).err().unwrap();
    assert_eq!(err.code(), "streaming::open::unknown_magic");
}

#[test]
fn files_shorter_than_a_magic_have_their_own_error() {
    let opts = OpenOptions::default();
    for bytes in [&b""[..], b"G", b"GGU", b"LLM"] {
        let file = TempFile::with_bytes("short", bytes);
        let err = open_model(file.path(), &opts).err().unwrap();
        assert_eq!(err.code(), "streaming::open::too_short", "{bytes:?}");
        assert!(
            matches!(err.kind(), StreamErrorKind::TooShort { len } if *len == bytes.len() as u64)
        );
        assert_eq!(err.path(), Some(file.path()));
        let err = open_model_from(MemSource::new(bytes), &opts).err().unwrap();
        assert!(
            matches!(err.kind(), StreamErrorKind::TooShort { len } if *len == bytes.len() as u64)
        );
        assert_eq!(err.path(), None);
    }
}

#[test]
fn a_bare_magic_is_the_format_parsers_truncation_error() {
    let opts = OpenOptions::default();
    let err = open_model_from(MemSource::new(b"GGUF"), &opts).err().unwrap();
    assert_eq!(err.code(), "gguf::input::unexpected_eof");
    assert!(err.parse_error().is_some() && err.llmw_error().is_none());
    let file = TempFile::with_bytes("bare.gguf", b"LLMW");
    let err = open_model(file.path(), &opts).err().unwrap();
    assert_eq!(err.code(), "llmw::input::unexpected_eof");
    assert_eq!(err.path(), Some(file.path()));
    assert_eq!(err.offset(), Some(4), "at the end of the input");
    let llmw = err.llmw_error().expect("the .llmw parser's error, intact");
    assert_eq!(llmw.path().to_string(), "header.version");
    assert!(
        err.located().to_string().starts_with(&format!("{}: ", file.path().display())),
        "{err}"
    );
}

#[test]
fn a_missing_file_is_an_open_error() {
    let path = crate::common::unique_temp_path("absent.llmw");
    let err = open_model(&path, &OpenOptions::default()).err().unwrap();
    assert_eq!(err.code(), "streaming::io::open");
    assert_eq!(err.path(), Some(path.as_path()));
}
