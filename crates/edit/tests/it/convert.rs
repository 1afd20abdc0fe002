//! `convert` to `.llmw` of a model with the bools every real model has
//! (`tokenizer.ggml.add_*_token`): refused with every key named, or with `drop_unsupported`
//! converted with each bool left out reported — key, value, and the `sipllm edit` options
//! that put it back into a GGUF made from the output. Then every other refusal and failure,
//! each with its code, the destination left as it was.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use sipllm_edit::convert::{ConvertError, ConvertOptions, Unfit, convert, convert_with};
use sipllm_edit::header::CheckError;
use sipllm_edit::split::{SplitLimit, SplitOptions, split_file};
use sipllm_gguf::writer::HeaderWriteError;
use sipllm_gguf::{Endian, GgmlType, Profile, ValueType};
use sipllm_llmw::{LlmwWriteError, LlmwWriter};
use sipllm_streaming::{Model, OpenOptions, WeightSource, ZeroPadded};
use sipllm_testkit::{GgufBuilder, Tensor, Value};

use crate::support::TempDir;

const BOOLS: [(&str, bool); 4] = [
    ("tokenizer.ggml.add_bos_token", true),
    ("tokenizer.ggml.add_eos_token", false),
    ("tokenizer.ggml.add_sep_token", false),
    ("tokenizer.ggml.add_space_prefix", true),
];

fn model() -> Vec<u8> {
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("llama.block_count", Value::Uint32(1));
    for (k, v) in BOOLS {
        b = b.kv(k, Value::Bool(v));
    }
    b.kv("my.flags", Value::array(ValueType::Bool, vec![Value::Bool(true), Value::Bool(false)]))
        .tensor("token_embd.weight", GgmlType::F32, &[8, 4])
        .build()
}

fn open(path: &std::path::Path) -> (Model, File) {
    let file = File::open(path).unwrap();
    let model = Model::from_file(&file, path, &OpenOptions::default()).unwrap();
    (model, file)
}

#[test]
fn the_bools_of_a_real_model_are_named_with_their_values_and_how_to_restore_them() {
    let dir = TempDir::new("convert-bools");
    let src = dir.join("m.gguf");
    std::fs::write(&src, model()).unwrap();
    let (model, file) = open(&src);
    let out = dir.join("m.llmw");

    // Refused: every key named, nothing written.
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    let ConvertError::Unsupported { keys, .. } = &e else { panic!("{e:?}") };
    assert_eq!(e.code(), "edit::convert::unsupported_metadata");
    assert_eq!(e.to_string(), "the file has metadata .llmw cannot hold (5 keys)");
    let named: Vec<&str> = keys.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(named[..4], BOOLS.map(|(k, _)| k));
    assert_eq!(named[4], "my.flags");
    assert!(!out.exists());

    // Dropped: the same keys, each with its value, and how to put them back.
    let done = convert(&model, &file, &out, &ConvertOptions { drop_unsupported: true }).unwrap();
    let dropped: Vec<(&str, String)> =
        done.dropped.iter().map(|d| (d.key.as_str(), d.why.to_string())).collect();
    assert_eq!(
        dropped,
        [
            ("tokenizer.ggml.add_bos_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_eos_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_sep_token", "BOOL: .llmw has no bool type".to_owned()),
            ("tokenizer.ggml.add_space_prefix", "BOOL: .llmw has no bool type".to_owned()),
            ("my.flags", "ARRAY of BOOL: .llmw has no bool arrays".to_owned()),
        ]
    );
    assert!(matches!(done.dropped[0].why, Unfit::Bool { value: true }));
    assert!(matches!(done.dropped[1].why, Unfit::Bool { value: false }));
    assert_eq!(
        done.restore_args(),
        [
            "--set",
            "tokenizer.ggml.add_bos_token=bool:true",
            "--set",
            "tokenizer.ggml.add_eos_token=bool:false",
            "--set",
            "tokenizer.ggml.add_sep_token=bool:false",
            "--set",
            "tokenizer.ggml.add_space_prefix=bool:true",
            "--set-array",
            "my.flags=bool:true,false",
        ]
    );
    assert_eq!(done.keys, 2);

    // The round trip has every other key, and not the bools (which restore_args gives back).
    let (llmw, llmw_file) = open(&out);
    assert!(llmw.meta("tokenizer.ggml.add_bos_token").is_none());
    let back = dir.join("back.gguf");
    let done = convert(&llmw, &llmw_file, &back, &ConvertOptions::default()).unwrap();
    assert!(done.dropped.is_empty() && done.restore_args().is_empty());
    let (gguf, _) = open(&back);
    assert_eq!(gguf.meta_uint("llama.block_count").unwrap(), 1);
    assert_eq!(gguf.tensors().len(), 1);
}

/// A model of two F32 tensors with pattern data.
fn small() -> GgufBuilder {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("a.weight", GgmlType::F32, &[8, 4])
        .tensor("b.weight", GgmlType::F32, &[16])
}

fn open_with(path: &Path, options: &OpenOptions) -> (Model, File) {
    let file = File::open(path).unwrap();
    let model = Model::from_file(&file, path, options).unwrap();
    (model, file)
}

/// A big-endian GGUF's tensor data is big-endian too: refused (not byte-swapped), unless there
/// is no tensor data at all.
#[test]
fn a_big_endian_gguf_with_tensors_is_refused() {
    let dir = TempDir::new("convert-be");
    let src = dir.join("be.gguf");
    std::fs::write(&src, small().endian(Endian::Big).build()).unwrap();
    let (model, file) = open(&src);
    let out = dir.join("be.llmw");
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(e, ConvertError::BigEndian), "{e:?}");
    assert_eq!(e.code(), "edit::convert::big_endian");
    assert!(e.to_string().starts_with("the file is a big-endian GGUF: its tensor data"), "{e}");
    assert_eq!(e.help(), "convert a little-endian copy of the model.");
    assert!(!out.exists());

    let empty = dir.join("be-empty.gguf");
    let bytes = GgufBuilder::new().endian(Endian::Big).kv("general.name", Value::str("be")).build();
    std::fs::write(&empty, bytes).unwrap();
    let (model, file) = open(&empty);
    let done = convert(&model, &file, &out, &ConvertOptions::default()).unwrap();
    assert_eq!((done.keys, done.tensors), (1, 0));
    assert_eq!(open(&out).0.meta_str("general.name").unwrap(), "be");
}

/// A split set is one model to the read side, but not one file to convert.
#[test]
fn a_split_set_is_refused_until_merged() {
    let dir = TempDir::new("convert-split");
    let src = dir.join("m.gguf");
    std::fs::write(&src, small().build()).unwrap();
    let shards = split_file(&src, &SplitOptions::new(SplitLimit::Tensors(1))).unwrap();
    assert_eq!(shards.len(), 2);
    let model = Model::open(&shards[0].path, &OpenOptions::default()).unwrap();
    assert!(matches!(model, Model::Split(_)));
    let file = File::open(&shards[0].path).unwrap();
    let out = dir.join("m.llmw");
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(e, ConvertError::Format), "{e:?}");
    assert_eq!(e.code(), "edit::convert::format");
    assert_eq!(e.to_string(), "this input cannot be converted (a split set? merge it first)");
    assert!(e.help().contains("sipllm merge"), "{}", e.help());
    assert!(!out.exists());
}

/// Tensors `.llmw` cannot hold — an empty name (a warning in every GGUF profile), a zero
/// dimension (tolerated by the lenient one) — are all named, and nothing is written.
#[test]
fn tensors_llmw_cannot_hold_are_all_named() {
    let dir = TempDir::new("convert-tensors");
    let src = dir.join("m.gguf");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("", GgmlType::F32, &[4])
        .tensor("ok.weight", GgmlType::F32, &[4])
        .tensor("zero.weight", GgmlType::F32, &[4, 0])
        .build();
    std::fs::write(&src, bytes).unwrap();
    let (model, file) = open_with(&src, &OpenOptions::default().with_profile(Profile::Lenient));
    let out = dir.join("m.llmw");
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    let ConvertError::Tensors { tensors } = &e else { panic!("{e:?}") };
    let why: Vec<String> = tensors.iter().map(ToString::to_string).collect();
    assert_eq!(why, ["empty tensor name", "tensor \"zero.weight\": dimension 0 is 0"]);
    assert_eq!(e.code(), "edit::convert::unsupported_tensors");
    assert_eq!(e.to_string(), "the file has tensors .llmw cannot hold (2 tensors)");
    assert!(!out.exists());
}

/// A GGUF source of 2^64 - 1 bytes with four tensors of 2^62 bytes over the same data (the
/// lenient profile, for inspecting broken files, tolerates the overlap): laid out one after
/// the other in `.llmw`, they end past 2^64.
#[test]
fn a_llmw_file_past_2_pow_64_cannot_be_laid_out() {
    let mut b = GgufBuilder::new().kv("general.architecture", Value::str("llama"));
    for name in ["a", "b", "c", "d"] {
        b = b.tensor_info(Tensor {
            name: name.as_bytes().to_vec(),
            dims: vec![1 << 31, 1 << 31],
            type_code: GgmlType::I8.code(),
            offset: Some(0),
            n_dims: None,
            data: Some(Vec::new()),
        });
    }
    let dir = TempDir::new("convert-llmw-layout");
    let header = b.build();
    let header_file = dir.join("virtual.gguf");
    std::fs::write(&header_file, &header).unwrap();
    let file = File::open(&header_file).unwrap();
    let lenient = OpenOptions::default().with_profile(Profile::Lenient);
    let model = Model::from_source(ZeroPadded::new(header, u64::MAX), &lenient).unwrap();
    assert_eq!(model.tensors()[3].nbytes, Some(1 << 62));
    let out = dir.join("m.llmw");
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(e, ConvertError::LlmwLayout(LlmwWriteError::FileTooLarge)), "{e:?}");
    assert_eq!(e.code(), "edit::convert::llmw_layout");
    assert_eq!(
        e.to_string(),
        "cannot lay out the .llmw file: the file would be larger than 2^64 bytes"
    );
    assert!(!out.exists());
}

/// A writer that keeps the first `cap` bytes and refuses the rest (a file's header, without
/// its data).
struct Prefix {
    bytes: Vec<u8>,
    cap: usize,
}

impl Write for Prefix {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.cap - self.bytes.len();
        if room == 0 {
            return Err(io::Error::other("only the header is kept"));
        }
        let n = room.min(buf.len());
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A `.llmw` source of 2^64 - 1 bytes whose tensors end just below 2^64: its
/// `general.alignment` of 2^31 makes the GGUF layout of the same tensors end past 2^64.
#[test]
fn a_gguf_file_past_2_pow_64_cannot_be_laid_out() {
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.architecture", "llama").unwrap();
    w.add_meta_i64("general.alignment", 1 << 31).unwrap();
    for name in ["a", "b", "c"] {
        // 2^62 bytes each.
        w.add_tensor_from_reader(name, GgmlType::I8, &[1 << 31, 1 << 31], io::repeat(0)).unwrap();
    }
    // 2^62 - 2^30 bytes: the .llmw data ends 2^30 bytes before 2^64, the GGUF's (padded to
    // 2^31) at 2^64.
    w.add_tensor_from_reader("d", GgmlType::I8, &[(1 << 32) - 1, 1 << 30], io::repeat(0)).unwrap();
    let layout = w.layout().unwrap();
    assert!(layout.file_size > u64::MAX - (1 << 30), "{layout:?}");
    let mut header = Prefix { bytes: Vec::new(), cap: layout.data_start as usize };
    assert!(w.write_to(&mut header).is_err(), "only the header is written");

    let dir = TempDir::new("convert-gguf-layout");
    let header_file = dir.join("virtual.llmw");
    std::fs::write(&header_file, &header.bytes).unwrap();
    let file = File::open(&header_file).unwrap();
    let source = ZeroPadded::new(header.bytes, u64::MAX);
    let model = Model::from_source(source, &OpenOptions::default()).unwrap();
    assert!(matches!(model, Model::Llmw(_)));
    let out = dir.join("m.gguf");
    let e = convert(&model, &file, &out, &ConvertOptions::default()).unwrap_err();
    assert!(matches!(e, ConvertError::GgufHeader(HeaderWriteError::Overflow)), "{e:?}");
    assert_eq!(e.code(), "edit::convert::gguf_header");
    assert_eq!(e.to_string(), "the GGUF header is invalid: offsets overflow 64 bits");
    assert!(!out.exists());
}

/// Another process makes the destination a directory while the data is written: the checked
/// temporary is not moved over it, and is removed.
#[test]
fn a_destination_taken_during_the_write_is_not_replaced() {
    let dir = TempDir::new("convert-commit");
    let src = dir.join("m.gguf");
    std::fs::write(&src, small().build()).unwrap();
    let (model, file) = open(&src);
    let out = dir.join("m.llmw");
    let mut take = |done: u64, total: u64| {
        if done == total && !out.exists() {
            std::fs::create_dir(&out).unwrap();
        }
    };
    let e = convert_with(&model, &file, &out, &ConvertOptions::default(), &mut take).unwrap_err();
    assert!(matches!(e, ConvertError::Commit { .. }), "{e:?}");
    assert_eq!(e.code(), "edit::convert::commit");
    assert_eq!(
        e.to_string(),
        "cannot move the new file into place: the destination exists and is not a regular file; \
         it is not replaced"
    );
    assert!(out.is_dir());
    assert_eq!(dir.names(), ["m.gguf", "m.llmw"], "no temporary left behind");
}

/// Another process changes the source's tensor data after it was copied: the check of the
/// written file finds the difference, and the destination is not created.
#[test]
fn a_source_changed_during_the_write_fails_the_check() {
    let dir = TempDir::new("convert-check");
    let src = dir.join("m.gguf");
    std::fs::write(&src, small().build()).unwrap();
    let (model, file) = open(&src);
    let at = model.tensors()[0].abs_offset;
    let out = dir.join("m.llmw");
    let mut changed = false;
    let mut change = |done: u64, total: u64| {
        if done == total && !changed {
            let f = std::fs::OpenOptions::new().read(true).write(true).open(&src).unwrap();
            let mut byte = [0u8];
            f.read_exact_at(&mut byte, at).unwrap();
            f.write_all_at(&[!byte[0]], at).unwrap();
            changed = true;
        }
    };
    let e = convert_with(&model, &file, &out, &ConvertOptions::default(), &mut change).unwrap_err();
    let ConvertError::Check(c) = &e else { panic!("{e:?}") };
    assert!(matches!(&**c, CheckError::Data { tensor, at: 0 } if tensor == "a.weight"), "{c:?}");
    assert_eq!(e.code(), "edit::convert::check_failed");
    assert_eq!(
        e.to_string(),
        "the written file failed its check: tensor \"a.weight\": the bytes at +0 differ from the \
         source's"
    );
    assert!(!out.exists());
    assert_eq!(dir.names(), ["m.gguf"], "no temporary left behind");
}
