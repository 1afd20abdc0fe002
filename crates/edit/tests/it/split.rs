//! Split GGUF sets: `split_file` then `merge` gives the original back byte for byte; a set
//! reads through one `WeightSource` exactly like the original file; every broken set is a
//! clear, coded error.

use std::fs;
use std::path::{Path, PathBuf};

use sipllm_edit::split::{SplitLimit, SplitOptions, WrittenFile, merge, merge_set, split_file};
use sipllm_gguf::{GgmlType, MetaValue, ValueType};
use sipllm_streaming::split::{KEY_COUNT, KEY_NO, KEY_TENSORS_COUNT, shard_path};
use sipllm_streaming::{
    GgufFile, MemSource, Model, OpenOptions, SplitFile, StreamError, WeightSource, open_model,
};
use sipllm_testkit::{GgufBuilder, Value};

use crate::support::{TempDir, shared_dir};

fn opts() -> OpenOptions {
    OpenOptions::default()
}

/// A model of `n` tensors of assorted types and sizes (some larger than others, so size limits
/// matter), with metadata including a vocabulary.
fn many_tensor_model(n: usize, alignment: Option<u32>) -> Vec<u8> {
    let mut b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str("many tensors"))
        .kv("llama.block_count", Value::Uint32((n / 4) as u32))
        .kv("tokenizer.ggml.tokens", Value::strings((0..200).map(|i| format!("tok{i}"))));
    if let Some(a) = alignment {
        b = b.kv("general.alignment", Value::Uint32(a));
    }
    for i in 0..n {
        let (ty, dims): (GgmlType, Vec<u64>) = match i % 4 {
            0 => (GgmlType::F32, vec![7 + (i as u64 % 5)]),
            1 => (GgmlType::F16, vec![16, 3 + (i as u64 % 7)]),
            2 => (GgmlType::Q8_0, vec![64, 2]),
            _ => (GgmlType::F32, vec![33, 5]),
        };
        b = b.tensor(&format!("blk.{}.t{}.weight", i / 4, i % 4), ty, &dims);
    }
    b.build()
}

/// Every tensor's bytes through a weight source, in its order.
fn tensor_bytes(src: &dyn WeightSource) -> Vec<(String, Vec<u8>)> {
    src.tensors()
        .iter()
        .map(|t| {
            let mut buf = vec![0u8; t.byte_len().unwrap()];
            src.read_raw(t, &mut buf).unwrap();
            (t.name.clone(), buf)
        })
        .collect()
}

/// Tensor facts without offsets.
fn facts(src: &dyn WeightSource) -> Vec<(String, GgmlType, Vec<u64>, Option<u64>)> {
    src.tensors()
        .iter()
        .map(|t| (t.name.clone(), t.ggml_type, t.shape.to_vec(), t.nbytes))
        .collect()
}

/// Splits `original` with `limit`, checks the set against it, merges, and returns the shards.
fn round_trip(
    original: &Path,
    limit: SplitLimit,
    no_tensor_first_split: bool,
    dir: &TempDir,
) -> Vec<WrittenFile> {
    let options = SplitOptions::new(limit)
        .with_out_dir(dir.path())
        .with_no_tensor_first_split(no_tensor_first_split);
    let shards = split_file(original, &options).unwrap();
    let count = shards.len() as u16;
    let stem = original.file_stem().unwrap().to_str().unwrap();
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s.path, shard_path(&dir.join(stem), i as u16, count));
        assert_eq!(fs::metadata(&s.path).unwrap().len(), s.file_size);
    }
    if no_tensor_first_split {
        assert_eq!(shards[0].tensors, 0, "metadata-only first shard");
    }
    assert!(shards.iter().skip(usize::from(no_tensor_first_split)).all(|s| s.tensors > 0));

    let orig = GgufFile::open(original, &opts()).unwrap();
    let total: usize = shards.iter().map(|s| s.tensors).sum();
    assert_eq!(total, orig.tensors().len());

    if count > 1 {
        // Any shard opens the whole set, with the original's tensors and bytes.
        for s in &shards {
            let set = open_model(&s.path, &opts()).unwrap();
            assert_eq!(facts(&*set), facts(&orig));
            assert_eq!(set.file_size(), shards.iter().map(|s| s.file_size).sum::<u64>());
        }
        let set = SplitFile::open(&shards[0].path, &opts()).unwrap();
        assert_eq!(set.shard_count(), shards.len());
        assert_eq!(tensor_bytes(&set), tensor_bytes(&orig));
        // Metadata: the original's pairs, then the split keys.
        let orig_keys: Vec<String> = orig.meta_keys().map(|k| k.to_string()).collect();
        let set_keys: Vec<String> = set.meta_keys().map(|k| k.to_string()).collect();
        assert_eq!(set_keys[..orig_keys.len()], orig_keys[..]);
        assert_eq!(set_keys[orig_keys.len()..], [KEY_NO, KEY_COUNT, KEY_TENSORS_COUNT]);
        assert_eq!(set.meta_uint(KEY_COUNT).unwrap(), u64::from(count));
    }

    let merged = dir.join("merged.gguf");
    for s in &shards {
        let m = merge(&s.path, &merged, &opts()).unwrap();
        assert_eq!(m.tensors, total);
        assert!(
            fs::read(&merged).unwrap() == fs::read(original).unwrap(),
            "merge({}) of {limit:?} (no tensor first split: {no_tensor_first_split}) differs",
            s.path.display()
        );
    }
    fs::remove_file(&merged).unwrap();
    shards
}

fn clear(dir: &TempDir, shards: &[WrittenFile]) {
    for s in shards {
        fs::remove_file(&s.path).unwrap();
    }
    assert!(dir.names().iter().all(|n| !n.contains("-of-")), "{:?}", dir.names());
}

#[test]
fn tiny_llama_splits_and_merges_back_byte_for_byte() {
    let Some(shared) = shared_dir("tiny_llama_splits_and_merges_back_byte_for_byte") else {
        return;
    };
    for endian in ["le", "be"] {
        let dir = TempDir::new(&format!("tiny-{endian}"));
        let original = dir.join(&format!("tiny-llama.{endian}.gguf"));
        fs::copy(shared.join(format!("corpus/generated/tiny-llama.{endian}.gguf")), &original)
            .unwrap();
        let n = GgufFile::open(&original, &opts()).unwrap().tensors().len();
        for (limit, first_empty, shards) in [
            (SplitLimit::Tensors(1), false, n),
            (SplitLimit::Tensors(3), false, n.div_ceil(3)),
            (SplitLimit::Tensors(3), true, n.div_ceil(3) + 1),
            (SplitLimit::Tensors(10_000), false, 1),
            (SplitLimit::Size(1), false, n),
            (SplitLimit::Size(4096), false, 0),
            (SplitLimit::Size(4096), true, 0),
        ] {
            let written = round_trip(&original, limit, first_empty, &dir);
            if shards > 0 {
                assert_eq!(written.len(), shards, "{limit:?}");
            } else {
                assert!(written.len() > 1, "{limit:?}");
            }
            clear(&dir, &written);
        }
    }
}

#[test]
fn a_model_with_hundreds_of_tensors_round_trips() {
    for alignment in [None, Some(64), Some(8)] {
        let dir = TempDir::new("many");
        let original = dir.join("many.gguf");
        fs::write(&original, many_tensor_model(400, alignment)).unwrap();
        for (limit, first_empty) in [
            (SplitLimit::Tensors(128), false),
            (SplitLimit::Tensors(37), true),
            (SplitLimit::Size(2000), false),
            (SplitLimit::Size(10_000), true),
        ] {
            let written = round_trip(&original, limit, first_empty, &dir);
            assert!(written.len() > 2, "{limit:?}: {}", written.len());
            if let Some(a) = alignment {
                // The first shard keeps general.alignment and is laid out with it; the others
                // have no such key and use 32.
                let first = GgufFile::open(&written[0].path, &opts()).unwrap();
                assert_eq!(first.gguf().alignment(), a);
                let second = GgufFile::open(&written[1].path, &opts()).unwrap();
                assert_eq!(second.gguf().alignment(), 32);
            }
            clear(&dir, &written);
        }
    }
}

#[test]
fn shards_follow_the_gguf_split_conventions() {
    let dir = TempDir::new("conventions");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(10, None)).unwrap();
    let written = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(4))).unwrap();
    assert_eq!(
        dir.names(),
        ["m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf", "m.gguf"]
    );
    assert_eq!(written.iter().map(|w| w.tensors).collect::<Vec<_>>(), [4, 4, 2]);
    let orig = GgufFile::open(&original, &opts()).unwrap();
    let mut names = Vec::new();
    for (i, w) in written.iter().enumerate() {
        // Each shard is a complete GGUF on its own.
        let shard = GgufFile::open(&w.path, &opts()).unwrap();
        let g = shard.gguf();
        assert_eq!(g.get(KEY_NO), Some(MetaValue::Uint16(i as u16)));
        assert_eq!(g.get(KEY_COUNT), Some(MetaValue::Uint16(3)));
        assert_eq!(g.get(KEY_TENSORS_COUNT), Some(MetaValue::Int32(10)));
        let keys: Vec<String> = g.metadata().map(|e| e.key.to_string_lossy().into()).collect();
        if i == 0 {
            assert_eq!(keys.len(), orig.gguf().kv_len() + 3);
            assert_eq!(g.get_str("general.architecture"), Some("llama"));
        } else {
            assert_eq!(keys, [KEY_NO, KEY_COUNT, KEY_TENSORS_COUNT], "only the split keys");
        }
        names.extend(shard.tensors().iter().map(|t| t.name.clone()));
        assert!(shard.tensors().iter().all(|t| t.abs_offset % 32 == 0));
    }
    let orig_names: Vec<String> = orig.tensors().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, orig_names, "original order, greedy");
}

#[test]
fn read_raw_at_reads_the_concatenation_of_the_shards() {
    let dir = TempDir::new("concat");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(12, None)).unwrap();
    let written = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(5))).unwrap();
    let mut concat = Vec::new();
    for w in &written {
        concat.extend(fs::read(&w.path).unwrap());
    }
    let set = SplitFile::open(&written[1].path, &opts()).unwrap();
    assert_eq!(set.file_size(), concat.len() as u64);
    // Tensor offsets are virtual: the shard's base plus the offset in the shard file.
    for t in set.tensors() {
        let (s, local) = set.shard_tensor(t).unwrap();
        assert_eq!(t.abs_offset, set.shard_base(s).unwrap() + local.abs_offset);
        assert_eq!(set.locate(t.abs_offset), Some((s, local.abs_offset)));
        let mut part = vec![0u8; 3];
        set.read_raw_at(t.abs_offset + 1, &mut part).unwrap();
        let start = t.abs_offset as usize + 1;
        assert_eq!(part, concat[start..start + 3]);
    }
    // A range across a shard boundary reads the end of one file and the start of the next.
    let boundary = set.shard_base(1).unwrap();
    let mut buf = vec![0u8; 100];
    set.read_raw_at(boundary - 40, &mut buf).unwrap();
    assert_eq!(buf, concat[boundary as usize - 40..boundary as usize + 60]);
    let all = {
        let mut all = vec![0u8; concat.len()];
        set.read_raw_at(0, &mut all).unwrap();
        all
    };
    assert_eq!(all, concat);
    // Past the end: the set's size is the bound.
    let e = set.read_raw_at(concat.len() as u64 - 2, &mut [0u8; 3]).unwrap_err();
    assert_eq!(e.code(), "streaming::read::out_of_bounds");
    assert_eq!(set.locate(concat.len() as u64), None);
    // A SourceTensor from another source is refused.
    let orig = GgufFile::open(&original, &opts()).unwrap();
    let foreign = &orig.tensors()[0];
    let e = set.read_raw(foreign, &mut vec![0u8; foreign.byte_len().unwrap()]).unwrap_err();
    assert_eq!(e.code(), "streaming::tensor::not_in_source");
    // And sizes are checked as for one file.
    let t = &set.tensors()[7];
    let e = set.read_raw(t, &mut [0u8; 1]).unwrap_err();
    assert_eq!(e.code(), "streaming::read::size_mismatch");
    set.prefetch(t).unwrap();
}

#[test]
fn a_set_opens_from_any_shard_from_a_path_list_and_from_memory() {
    let dir = TempDir::new("open");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(9, None)).unwrap();
    let written = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(2))).unwrap();
    let orig = GgufFile::open(&original, &opts()).unwrap();
    let expected = tensor_bytes(&orig);
    for w in &written {
        let model = Model::open(&w.path, &opts()).unwrap();
        let set = model.split().expect("a shard opens as the set");
        assert!(model.gguf().is_none());
        assert_eq!(model.format(), sipllm_streaming::Format::Gguf);
        assert_eq!(model.path(), Some(written[0].path.as_path()));
        assert_eq!(
            set.paths().flatten().collect::<Vec<_>>(),
            written.iter().map(|w| w.path.as_path()).collect::<Vec<_>>()
        );
        assert_eq!(tensor_bytes(&model), expected);
        assert_eq!(model.header_stats().reads as usize, written.len(), "one read per header");
    }
    // An explicit list, in any order; names are not consulted.
    let mut renamed = Vec::new();
    for (i, w) in written.iter().enumerate().rev() {
        let p = dir.join(&format!("blob-{}", 9 - i));
        fs::copy(&w.path, &p).unwrap();
        renamed.push(p);
    }
    let set = SplitFile::open_paths(&renamed, &opts()).unwrap();
    assert_eq!(tensor_bytes(&set), expected);
    assert_eq!(set.path(), Some(renamed.last().unwrap().as_path()), "split.no 0 comes first");
    // Memory sources: a shard alone is a plain GGUF; the sources together are the set.
    let bytes: Vec<Vec<u8>> = written.iter().map(|w| fs::read(&w.path).unwrap()).collect();
    let alone = Model::from_source(MemSource::new(bytes[1].clone()), &opts()).unwrap();
    assert!(alone.gguf().is_some());
    let files: Vec<GgufFile> = bytes
        .into_iter()
        .rev()
        .map(|b| GgufFile::from_source(MemSource::new(b), &opts()).unwrap())
        .collect();
    let set = SplitFile::from_files(files).unwrap();
    assert_eq!(tensor_bytes(&set), expected);
}

#[test]
fn one_shard_and_merged_files_are_not_sets() {
    let dir = TempDir::new("notaset");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(6, None)).unwrap();
    // A limit the model fits in gives one shard with split.count = 1: a single file.
    let one = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(100))).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].path, dir.join("m-00001-of-00001.gguf"));
    let model = Model::open(&one[0].path, &opts()).unwrap();
    assert!(model.gguf().is_some(), "split.count 1 is not a set");
    let e = SplitFile::open(&one[0].path, &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::not_a_set");
    assert_eq!(
        e.located().to_string(),
        format!("{}: not a split set: split.count is 1", one[0].path.display())
    );
    // gguf-split's merge output: split.count = 0.
    let merged = dir.join("gguf-split-merged.gguf");
    fs::write(
        &merged,
        GgufBuilder::new()
            .kv(KEY_NO, Value::Uint16(0))
            .kv(KEY_COUNT, Value::Uint16(0))
            .kv(KEY_TENSORS_COUNT, Value::Int32(1))
            .tensor("a", GgmlType::F32, &[4])
            .build(),
    )
    .unwrap();
    assert!(Model::open(&merged, &opts()).unwrap().gguf().is_some());
    assert_eq!(
        merge(&merged, &dir.join("x.gguf"), &opts()).unwrap_err().code(),
        "streaming::split::not_a_set"
    );
    assert_eq!(
        merge(&original, &dir.join("x.gguf"), &opts()).unwrap_err().code(),
        "streaming::split::not_a_set"
    );
}

/// A hand-made shard: the given split keys, `n_kv` extra pairs (first shard), and tensors.
fn shard(keys: &[(&str, Value)], tensors: &[&str], first: bool) -> Vec<u8> {
    let mut b = GgufBuilder::new();
    if first {
        b = b.kv("general.architecture", Value::str("llama"));
    }
    for (k, v) in keys {
        b = b.kv(k, v.clone());
    }
    for t in tensors {
        b = b.tensor(t, GgmlType::F32, &[8]);
    }
    b.build()
}

fn keys(no: u16, count: u16, total: i32) -> Vec<(&'static str, Value)> {
    vec![
        (KEY_NO, Value::Uint16(no)),
        (KEY_COUNT, Value::Uint16(count)),
        (KEY_TENSORS_COUNT, Value::Int32(total)),
    ]
}

/// Writes a set of three shards named `m-0000N-of-00003.gguf` in `dir`, shard `i` from
/// `make(i)`; returns the paths.
fn write_set(dir: &TempDir, make: impl Fn(u16) -> Vec<u8>) -> Vec<PathBuf> {
    (0..3)
        .map(|i| {
            let p = shard_path(&dir.join("m"), i, 3);
            fs::write(&p, make(i)).unwrap();
            p
        })
        .collect()
}

fn good(i: u16) -> Vec<u8> {
    let names = [["a", "b"], ["c", "d"], ["e", "f"]];
    shard(&keys(i, 3, 6), &names[usize::from(i)], i == 0)
}

fn open_err(path: &Path) -> StreamError {
    let e = Model::open(path, &opts()).unwrap_err();
    assert!(!e.help().is_empty());
    e
}

#[test]
fn a_well_formed_hand_made_set_opens() {
    let dir = TempDir::new("good");
    let paths = write_set(&dir, good);
    for p in &paths {
        let set = SplitFile::open(p, &opts()).unwrap();
        let names: Vec<&str> = set.tensors().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(set.declared_tensors(), 6);
        assert_eq!(set.meta_str("general.architecture").unwrap(), "llama");
        assert!(set.find("f").is_some());
        assert!(set.find("g").is_none());
    }
}

#[test]
fn a_missing_shard_is_named() {
    let dir = TempDir::new("missing");
    let paths = write_set(&dir, good);
    fs::remove_file(&paths[1]).unwrap();
    for p in [&paths[0], &paths[2]] {
        let e = open_err(p);
        assert_eq!(e.code(), "streaming::split::missing_shard");
        assert_eq!(
            e.located().to_string(),
            format!(
                "{}: shard 2 of 3 of the split set (split.no = 1) is missing: {} does not exist",
                p.display(),
                paths[1].display()
            )
        );
    }
    // Explicit lists: the missing index is named.
    let e = SplitFile::open_paths(&[&paths[2], &paths[0]], &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::missing_shard");
    assert!(
        e.to_string()
            .ends_with("shard 2 of 3 of the split set (split.no = 1) is missing: it is not among the files given"),
        "{e}"
    );
}

#[test]
fn a_shard_whose_split_no_disagrees_with_its_name_is_refused() {
    let dir = TempDir::new("renamed");
    // Shard 3's file holds shard 2 (a copy over the wrong name).
    let paths = write_set(&dir, |i| good(if i == 2 { 1 } else { i }));
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::name_mismatch");
    assert_eq!(
        e.located().to_string(),
        format!(
            "{}: the file name says shard 3 of 3, but the metadata says shard 2 of 3 (split.no = \
             1, split.count = 3)",
            paths[2].display()
        )
    );
    // Opening the misnamed file itself finds the mismatch first.
    assert_eq!(open_err(&paths[2]).code(), "streaming::split::name_mismatch");
    // A shard renamed to a name without the pattern cannot find its siblings.
    let odd = dir.join("model.gguf");
    fs::rename(&paths[0], &odd).unwrap();
    let e = open_err(&odd);
    assert_eq!(e.code(), "streaming::split::bad_name");
    assert!(e.to_string().contains("does not end in -NNNNN-of-NNNNN.gguf"), "{e}");
    // ... and its name says which set: 'of-00002' for a set of three.
    let wrong_count = dir.join("m-00001-of-00002.gguf");
    fs::write(&wrong_count, good(0)).unwrap();
    assert_eq!(open_err(&wrong_count).code(), "streaming::split::name_mismatch");
}

#[test]
fn a_different_split_count_in_any_shard_is_refused() {
    let dir = TempDir::new("count");
    let paths =
        write_set(
            &dir,
            |i| {
                if i == 2 { shard(&keys(2, 4, 6), &["e", "f"], false) } else { good(i) }
            },
        );
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::key_mismatch");
    assert_eq!(
        e.located().to_string(),
        format!("{}: split.count is 4 here, but 3 in {}", paths[2].display(), paths[0].display())
    );
    let e = SplitFile::open_paths(&paths, &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::key_mismatch");
    // A different split.tensors.count is the same error.
    let dir = TempDir::new("count2");
    let paths =
        write_set(
            &dir,
            |i| {
                if i == 1 { shard(&keys(1, 3, 7), &["c", "d"], false) } else { good(i) }
            },
        );
    let e = open_err(&paths[2]);
    assert_eq!(e.code(), "streaming::split::key_mismatch");
    assert!(e.to_string().contains("split.tensors.count is 7 here, but 6 in"), "{e}");
}

#[test]
fn a_tensor_in_two_shards_is_refused() {
    let dir = TempDir::new("dup");
    let paths =
        write_set(
            &dir,
            |i| {
                if i == 2 { shard(&keys(2, 3, 6), &["e", "b"], false) } else { good(i) }
            },
        );
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::duplicate_tensor");
    assert_eq!(
        e.to_string(),
        format!("tensor \"b\" is in {} and again in {}", paths[0].display(), paths[2].display())
    );
}

#[test]
fn a_total_that_differs_from_split_tensors_count_is_refused() {
    let dir = TempDir::new("total");
    let paths =
        write_set(&dir, |i| if i == 1 { shard(&keys(1, 3, 6), &["c"], false) } else { good(i) });
    let e = open_err(&paths[1]);
    assert_eq!(e.code(), "streaming::split::tensor_count");
    assert_eq!(
        e.located().to_string(),
        format!(
            "{}: split.tensors.count says the set has 6 tensors, but its 3 shards hold 5",
            paths[0].display()
        )
    );
}

#[test]
fn split_keys_must_have_llama_cpp_types_and_be_present() {
    let dir = TempDir::new("types");
    let cases: [(&str, Value, &str); 3] = [
        (KEY_NO, Value::Uint32(0), "UINT32"),
        (KEY_COUNT, Value::Int32(3), "INT32"),
        (KEY_TENSORS_COUNT, Value::Uint32(6), "UINT32"),
    ];
    for (key, value, found) in cases {
        let bad = dir.join("bad-00001-of-00003.gguf");
        let mut ks = keys(0, 3, 6);
        for k in &mut ks {
            if k.0 == key {
                k.1 = value.clone();
            }
        }
        fs::write(&bad, shard(&ks, &["a"], true)).unwrap();
        let e = open_err(&bad);
        assert_eq!(e.code(), "streaming::split::key_type");
        let expected = if key == KEY_TENSORS_COUNT { "INT32" } else { "UINT16" };
        assert_eq!(
            e.located().to_string(),
            format!(
                "{}: metadata key {key:?} has type {found}, but split files store it as {expected}",
                bad.display()
            )
        );
        assert_eq!(ValueType::Uint16.name(), "UINT16");
    }
    // A plain file with a wrongly typed split key is refused too, as llama.cpp does.
    let plain = dir.join("plain.gguf");
    fs::write(&plain, shard(&[(KEY_COUNT, Value::Uint32(1))], &["a"], true)).unwrap();
    assert_eq!(open_err(&plain).code(), "streaming::split::key_type");

    // Missing keys: split.no in a later shard, split.tensors.count in the first.
    let dir = TempDir::new("missing-key");
    let paths = write_set(&dir, |i| match i {
        1 => shard(&[(KEY_COUNT, Value::Uint16(3))], &["c", "d"], false),
        _ => good(i),
    });
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::key_missing");
    assert_eq!(
        e.located().to_string(),
        format!(
            "{}: metadata key \"split.no\" is missing, but every shard of a split set has it",
            paths[1].display()
        )
    );
    let dir = TempDir::new("missing-total");
    let paths = write_set(&dir, |i| match i {
        0 => shard(&keys(0, 3, 6)[..2], &["a", "b"], true),
        _ => good(i),
    });
    let e = open_err(&paths[2]);
    assert_eq!(e.code(), "streaming::split::key_missing");
    assert!(e.to_string().contains("\"split.tensors.count\""), "{e}");
}

#[test]
fn explicit_lists_refuse_duplicate_and_out_of_range_shards() {
    let dir = TempDir::new("list");
    let paths = write_set(&dir, good);
    let e = SplitFile::open_paths(&[&paths[0], &paths[1], &paths[1]], &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::duplicate_shard");
    assert_eq!(
        e.to_string(),
        format!(
            "{} and {} are both shard 2 of the set (split.no = 1)",
            paths[1].display(),
            paths[1].display()
        )
    );
    let beyond = dir.join("beyond.gguf");
    fs::write(&beyond, shard(&keys(3, 3, 6), &["g"], false)).unwrap();
    let e = SplitFile::open_paths(&[&paths[0], &beyond], &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::bad_index");
    assert_eq!(
        e.located().to_string(),
        format!("{}: split.no is 3, but split.count is 3: it must be below it", beyond.display())
    );
    let none: [&Path; 0] = [];
    assert_eq!(
        SplitFile::open_paths(&none, &opts()).unwrap_err().code(),
        "streaming::split::not_a_set"
    );
}

#[test]
#[allow(clippy::result_large_err)] // the closure returns split_file's own Result
fn splitting_refuses_what_cannot_be_split() {
    let dir = TempDir::new("refuse");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(4, None)).unwrap();
    let split = |limit, first_empty| {
        split_file(&original, &SplitOptions::new(limit).with_no_tensor_first_split(first_empty))
    };
    for limit in [SplitLimit::Tensors(0), SplitLimit::Size(0)] {
        let e = split(limit, false).unwrap_err();
        assert_eq!(e.code(), "edit::split::refused");
        assert!(e.to_string().contains("must be at least 1"), "{e}");
    }
    // A shard cannot be split again.
    let shards = split(SplitLimit::Tensors(2), false).unwrap();
    let e = split_file(&shards[0].path, &SplitOptions::new(SplitLimit::Tensors(1))).unwrap_err();
    assert_eq!(e.code(), "edit::split::already_split");
    assert_eq!(
        e.to_string(),
        "the file is already shard 1 of 2 of a split set: merge the set first"
    );
    assert_eq!(e.path(), Some(shards[0].path.as_path()), "the file is context");
    // No tensors: nothing to split.
    let empty = dir.join("empty.gguf");
    fs::write(&empty, GgufBuilder::new().kv("general.name", Value::str("x")).build()).unwrap();
    let e = split_file(&empty, &SplitOptions::new(SplitLimit::Tensors(1))).unwrap_err();
    assert!(e.to_string().ends_with("the file has no tensors: there is nothing to split"), "{e}");
    // More shards than split.count can number.
    let huge = dir.join("huge.gguf");
    let mut b = GgufBuilder::new();
    for i in 0..65_536 {
        b = b.tensor(&format!("t{i}"), GgmlType::I8, &[1]);
    }
    fs::write(&huge, b.build()).unwrap();
    let e = split_file(&huge, &SplitOptions::new(SplitLimit::Tensors(1))).unwrap_err();
    assert_eq!(e.code(), "edit::split::refused");
    assert!(e.to_string().contains("gives 65536 shards"), "{e}");
    assert!(!dir.names().iter().any(|n| n.starts_with("huge-")), "nothing written");
}

#[test]
fn a_failed_split_leaves_no_partial_set_and_merge_never_overwrites_a_shard() {
    let dir = TempDir::new("partial");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(6, None)).unwrap();
    // Shard 2's destination is a directory: it is never replaced, and shard 1's complete
    // temporary is removed again without ever being renamed.
    fs::create_dir(dir.join("m-00002-of-00003.gguf")).unwrap();
    let e = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(2))).unwrap_err();
    assert_eq!(e.code(), "edit::write::create", "{e}");
    assert!(e.to_string().contains("is not a regular file"), "{e}");
    assert_eq!(dir.names(), ["m-00002-of-00003.gguf", "m.gguf"], "no shard, no temporary left");
    fs::remove_dir(dir.join("m-00002-of-00003.gguf")).unwrap();

    let shards = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(2))).unwrap();
    let before = fs::read(&shards[1].path).unwrap();
    let e = merge(&shards[0].path, &shards[1].path, &opts()).unwrap_err();
    assert_eq!(e.code(), "edit::write::output_is_input");
    assert!(e.to_string().contains("writing it would destroy the input"), "{e}");
    assert!(!e.help().contains("limit"), "merge's help, not split's: {}", e.help());
    assert_eq!(fs::read(&shards[1].path).unwrap(), before);
    // By identity: a hard link to a shard, and a symlink to one, are shards too.
    let hard = dir.join("hard.gguf");
    fs::hard_link(&shards[2].path, &hard).unwrap();
    let soft = dir.join("soft.gguf");
    std::os::unix::fs::symlink(&shards[0].path, &soft).unwrap();
    for out in [&hard, &soft] {
        let e = merge(&shards[0].path, out, &opts()).unwrap_err();
        assert_eq!(e.code(), "edit::write::output_is_input", "{}", out.display());
    }
    assert_eq!(fs::read(&shards[1].path).unwrap(), before);
}

#[test]
fn corrupt_and_truncated_shards_give_coded_errors_never_panics() {
    let dir = TempDir::new("hostile");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(6, None)).unwrap();
    let written = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(3))).unwrap();
    let second = fs::read(&written[1].path).unwrap();
    let header_len = {
        let g = GgufFile::open(&written[1].path, &opts()).unwrap();
        g.gguf().data_offset() as usize
    };
    let mut outcomes = std::collections::BTreeMap::<&'static str, usize>::new();
    let mut check = |bytes: &[u8]| {
        fs::write(&written[1].path, bytes).unwrap();
        match Model::open(&written[0].path, &opts()) {
            Ok(model) => {
                // Whatever opened reads in bounds, or fails with a code.
                for t in model.tensors() {
                    let mut buf = vec![0u8; t.byte_len().unwrap_or(0)];
                    if let Err(e) = model.read_raw(t, &mut buf) {
                        assert!(!e.code().is_empty());
                    }
                }
                *outcomes.entry("ok").or_default() += 1;
            }
            Err(e) => {
                assert!(!e.help().is_empty(), "{e}");
                *outcomes.entry(e.code()).or_default() += 1;
            }
        }
    };
    for len in 0..second.len() {
        check(&second[..len]);
    }
    for i in 0..header_len {
        let mut bytes = second.clone();
        bytes[i] ^= 0x5A;
        check(&bytes);
    }
    // The header's split keys are in the corrupted range: some corruptions must hit them.
    assert!(outcomes.keys().any(|k| k.starts_with("streaming::split::")), "{outcomes:?}");
    fs::write(&written[1].path, &second).unwrap();
    assert!(Model::open(&written[0].path, &opts()).unwrap().split().is_some());
}

/// A set whose shards disagree on the byte order is refused (issue 16, item 11): merging it
/// would write byte-swapped data into a valid-looking file.
#[test]
fn a_set_of_mixed_byte_orders_is_refused() {
    let dir = TempDir::new("endian");
    let paths = write_set(&dir, |i| {
        let names = [["a", "b"], ["c", "d"], ["e", "f"]];
        let mut b = GgufBuilder::new();
        if i == 1 {
            b = b.endian(sipllm_gguf::Endian::Big);
        }
        if i == 0 {
            b = b.kv("general.architecture", Value::str("llama"));
        }
        for (k, v) in keys(i, 3, 6) {
            b = b.kv(k, v);
        }
        for t in names[usize::from(i)] {
            b = b.tensor(t, GgmlType::F32, &[8]);
        }
        b.build()
    });
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::endian_mismatch", "{e}");
    assert_eq!(e.path(), Some(paths[1].as_path()));
    assert!(e.to_string().contains("big-endian"), "{e}");
    let e = merge(&paths[0], &dir.join("merged.gguf"), &opts()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::endian_mismatch");
    assert!(!dir.join("merged.gguf").exists());
}

/// `split.no = 65535` in a shard is reported as an index past `split.count` (item 16), not as
/// "shard 65536 of 3".
#[test]
fn a_huge_split_no_in_a_sibling_is_a_bad_index() {
    let dir = TempDir::new("bad-no");
    let paths = write_set(&dir, |i| {
        if i == 2 { shard(&keys(65_535, 3, 6), &["e", "f"], false) } else { good(i) }
    });
    let e = open_err(&paths[0]);
    assert_eq!(e.code(), "streaming::split::bad_index", "{e}");
    assert!(e.to_string().contains("split.no is 65535, but split.count is 3"), "{e}");
    assert!(!e.to_string().contains("65536"), "{e}");
}

/// Merge copies every shard's data through the descriptor its header was read from (item 10):
/// a shard replaced on disk after the set was opened cannot slip its tensors in.
#[test]
fn merge_copies_from_the_shards_it_opened() {
    let dir = TempDir::new("held");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(6, None)).unwrap();
    let shards = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(2))).unwrap();
    let set = SplitFile::open(&shards[0].path, &opts()).unwrap();
    // The file each shard was parsed from, by identity, is the one its data is read from.
    for (s, w) in set.shards().zip(&shards) {
        let held = sipllm_edit::identity::FileId::of_file(s.file().unwrap()).unwrap();
        assert_eq!(Some(held), sipllm_edit::identity::FileId::of_path(&w.path).unwrap());
    }
    let before = tensor_bytes(&set);

    // Shard 2 replaced, after the set was opened, by a file of the same layout and other
    // tensor bytes (a second open of its path would copy those under the old header).
    let header = GgufFile::open(&shards[1].path, &opts()).unwrap().gguf().data_offset() as usize;
    let mut swapped = fs::read(&shards[1].path).unwrap();
    for b in &mut swapped[header..] {
        *b ^= 0xFF;
    }
    let tmp = dir.join("replacement.tmp");
    fs::write(&tmp, &swapped).unwrap();
    fs::rename(&tmp, &shards[1].path).unwrap();
    assert_eq!(tensor_bytes(&set), before, "the held shard is read, not the new file");
    let merged = dir.join("merged.gguf");
    merge_set(&set, &merged).unwrap();
    drop(set);
    let g = GgufFile::open(&merged, &opts()).unwrap();
    assert_eq!(tensor_bytes(&g), before, "the merge holds the set that was opened");
    assert!(fs::read(&merged).unwrap() == fs::read(&original).unwrap(), "byte for byte");
}

/// Re-splitting over an existing set (item 12): the old first shard goes first and the new
/// one comes last, and temporaries a killed run left are removed.
#[test]
fn a_re_split_replaces_the_set_as_a_set_and_sweeps_stale_temporaries() {
    let dir = TempDir::new("resplit");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(6, None)).unwrap();
    let options = SplitOptions::new(SplitLimit::Tensors(2));
    let old = split_file(&original, &options).unwrap();
    // A killed run's temporaries (no process holds them) and an unrelated hidden file.
    let stale = dir.join(".m-00002-of-00003.gguf.4194303-7.tmp");
    fs::write(&stale, vec![0u8; 4096]).unwrap();
    let unrelated = dir.join(".m-00002-of-00003.gguf.notes.tmp");
    fs::write(&unrelated, b"mine").unwrap();
    // A new model with the same tensor names and shapes but other bytes.
    let mut other = many_tensor_model(6, None);
    let n = other.len();
    for b in &mut other[n - 64..] {
        *b ^= 0x5A;
    }
    fs::write(&original, &other).unwrap();
    let new = split_file(&original, &options).unwrap();
    assert_eq!(
        old.iter().map(|w| &w.path).collect::<Vec<_>>(),
        new.iter().map(|w| &w.path).collect::<Vec<_>>()
    );
    assert!(!stale.exists(), "the stale temporary is removed");
    assert!(unrelated.exists(), "a file of another pattern is not");
    let set = SplitFile::open(&new[0].path, &opts()).unwrap();
    let g = GgufFile::open(&original, &opts()).unwrap();
    assert_eq!(tensor_bytes(&set), tensor_bytes(&g), "the whole set is the new one");
    let names = dir.names();
    assert!(!names.iter().any(|n| n.ends_with(".tmp") && n.contains("4194303")), "{names:?}");
}

/// Splitting onto its own input (a shard name that is a hard link to it) is refused by
/// identity (item 2).
#[test]
fn a_shard_name_that_is_the_input_is_refused() {
    let dir = TempDir::new("self");
    let original = dir.join("m.gguf");
    let bytes = many_tensor_model(6, None);
    fs::write(&original, &bytes).unwrap();
    fs::hard_link(&original, dir.join("m-00002-of-00003.gguf")).unwrap();
    let e = split_file(&original, &SplitOptions::new(SplitLimit::Tensors(2))).unwrap_err();
    assert_eq!(e.code(), "edit::write::output_is_input", "{e}");
    assert_eq!(fs::read(&original).unwrap(), bytes);
    assert_eq!(dir.names(), ["m-00002-of-00003.gguf", "m.gguf"], "nothing written");
}

/// The `_with` variants report the tensor data written: `(done, total)`, `done` never going
/// back, ending at `total`, the input's tensor bytes (over every shard for a split); the
/// output is the one the plain call writes.
#[test]
fn split_merge_and_convert_report_their_progress() {
    use sipllm_edit::convert::{ConvertOptions, convert_with};
    use sipllm_edit::split::{merge_with, split_file_with};
    let dir = TempDir::new("progress");
    let original = dir.join("m.gguf");
    fs::write(&original, many_tensor_model(40, None)).unwrap();
    let input = GgufFile::open(&original, &opts()).unwrap();
    let data: u64 = input.gguf().tensor_infos().iter().map(|t| t.nbytes().unwrap()).sum();
    let check = |calls: &[(u64, u64)]| {
        assert!(!calls.is_empty());
        assert!(calls.iter().all(|&(_, total)| total == data), "{calls:?}");
        assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
        assert_eq!(calls.last().map(|c| c.0), Some(data), "{calls:?}");
    };
    let mut calls = Vec::new();
    let options = SplitOptions::new(SplitLimit::Tensors(7));
    let shards = split_file_with(&original, &options, &mut |d, t| calls.push((d, t))).unwrap();
    assert_eq!(shards.len(), 6);
    check(&calls);
    calls.clear();
    let merged = dir.join("merged.gguf");
    merge_with(&shards[0].path, &merged, &opts(), &mut |d, t| calls.push((d, t))).unwrap();
    check(&calls);
    assert_eq!(fs::read(&merged).unwrap(), fs::read(&original).unwrap());
    calls.clear();
    let model = Model::open(&original, &opts()).unwrap();
    let file = fs::File::open(&original).unwrap();
    let to = dir.join("m.llmw");
    let convert = ConvertOptions { drop_unsupported: true };
    convert_with(&model, &file, &to, &convert, &mut |d, t| calls.push((d, t))).unwrap();
    check(&calls);
    calls.clear();
    let llmw = Model::open(&to, &opts()).unwrap();
    let file = fs::File::open(&to).unwrap();
    let back = dir.join("back.gguf");
    convert_with(&llmw, &file, &back, &convert, &mut |d, t| calls.push((d, t))).unwrap();
    check(&calls);
}
