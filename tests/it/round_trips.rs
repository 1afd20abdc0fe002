//! Round trips through the `sipllm` command that cross crates: GGUF ↔ `.llmw` conversion
//! (parser, `.llmw` writer and reader, the seam) and split/merge (the split writer, the
//! split-set reader, every reading command on a set), byte for byte.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{manifest, metadata, sample_path, sipllm, temp_dir};

#[test]
fn the_toy_model_crosses_both_ways_byte_for_byte() {
    let dir = temp_dir("convert-toy");
    let run = sipllm(&dir, &["make-toy", "--seed", "3", "--out-dir", "."]);
    assert_eq!(run.code, Some(0));
    // GGUF -> .llmw is the toy's .llmw; .llmw -> GGUF is the toy's GGUF.
    let run = sipllm(&dir, &["convert", "toy.gguf", "a.llmw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout.contains("converted toy.gguf (GGUF) -> a.llmw (.llmw): 19 keys, 21 tensors")
    );
    assert!(run.stdout.contains("checked a.llmw: re-opened"), "{}", run.stdout);
    assert_eq!(fs::read(dir.join("a.llmw")).unwrap(), fs::read(dir.join("toy.llmw")).unwrap());
    let run = sipllm(&dir, &["convert", "toy.llmw", "b.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(fs::read(dir.join("b.gguf")).unwrap(), fs::read(dir.join("toy.gguf")).unwrap());
    // And the round trip GGUF -> .llmw -> GGUF.
    let run = sipllm(&dir, &["convert", "a.llmw", "c.gguf"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(fs::read(dir.join("c.gguf")).unwrap(), fs::read(dir.join("toy.gguf")).unwrap());
}

/// GGUF -> `.llmw` -> GGUF gives `input` back: every key (value and, being well known, type),
/// every tensor's bytes, every byte of the file.
fn assert_converts_back(dir: &Path, input: &Path) {
    let input = input.to_str().unwrap().to_owned();
    let run = sipllm(dir, &["convert", &input, "t.llmw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let run = sipllm(dir, &["convert", "t.llmw", "t.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(metadata(dir, "t.gguf"), metadata(dir, &input));
    assert_eq!(manifest(dir, "t.gguf", "sha256"), manifest(dir, &input, "sha256"));
    assert_eq!(manifest(dir, "t.llmw", "sha256"), manifest(dir, &input, "sha256"));
    assert_eq!(fs::read(dir.join("t.gguf")).unwrap(), fs::read(&input).unwrap());
}

#[test]
fn tiny_llama_round_trips_byte_for_byte() {
    assert_converts_back(&temp_dir("convert-tiny-llama"), &sample_path());
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn the_corpus_tiny_llama_round_trips_byte_for_byte() {
    let input = sipllm_tests::path("generated/tiny-llama.le.gguf");
    assert_converts_back(&temp_dir("convert-corpus-tiny-llama"), &input);
}

/// The bundled sample copied into `dir` as `name`.
fn copy_into(dir: &Path, from: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    fs::copy(from, &p).unwrap();
    p
}

/// A 300-tensor model of assorted types (builder-made, pattern data).
fn big_model(dir: &Path) -> PathBuf {
    let p = dir.join("big.gguf");
    fs::write(&p, sipllm_testkit::three_hundred_tensors()).unwrap();
    p
}

/// The shard files in `dir` for prefix `stem`, sorted.
fn shards(dir: &Path, stem: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{stem}-")) && n.contains("-of-"))
        .collect();
    v.sort();
    v
}

/// Splits `original` four ways; every set verifies like the original from its first or last
/// shard, and merges back to it byte for byte.
fn assert_splits_and_merges_back(dir: &Path, stem: &str, original: &Path) {
    let original = original.to_str().unwrap();
    let whole_manifest = manifest(dir, original, "sha256");
    for limit in [
        &["--max-tensors", "3"][..],
        &["--max-tensors", "128", "--no-tensor-first-split"],
        &["--max-size", "1KiB"],
        &["--max-size", "2K", "--no-tensor-first-split"],
    ] {
        let out = dir.join(format!("{stem}-out"));
        let _ = fs::remove_dir_all(&out);
        let mut args = vec!["split", original, "--out-dir", out.to_str().unwrap()];
        args.extend_from_slice(limit);
        let run = sipllm(dir, &args);
        assert_eq!(run.code, Some(0), "{limit:?}: {}", run.transcript());
        let names = shards(&out, stem);
        let n = names.len();
        assert!(n >= 2, "{limit:?}: {names:?}");
        assert!(run.stdout.contains(&format!("into {n} files")), "{}", run.stdout);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(name, &format!("{stem}-{:05}-of-{n:05}.gguf", i + 1));
            assert!(run.stdout.contains(name.as_str()), "{}", run.stdout);
        }
        let first = out.join(&names[0]);
        let last = out.join(&names[n - 1]);

        // verify: the set's manifest is the original's, line for line, from any shard.
        for shard in [&first, &last] {
            let got = manifest(dir, shard.to_str().unwrap(), "sha256");
            assert_eq!(got, whole_manifest, "{stem} {limit:?}");
        }
        let run = sipllm(dir, &["verify", last.to_str().unwrap()]);
        assert!(run.stdout.contains(&format!("of a set of {n} files")), "{}", run.stdout);

        // merge from the first or the last shard: the original, byte for byte.
        for shard in [&first, &last] {
            let merged = dir.join("merged.gguf");
            let run = sipllm(dir, &["merge", shard.to_str().unwrap(), "merged.gguf"]);
            assert_eq!(run.code, Some(0), "{}", run.transcript());
            assert!(
                fs::read(&merged).unwrap() == fs::read(original).unwrap(),
                "{stem} {limit:?}: merge differs"
            );
            fs::remove_file(merged).unwrap();
        }
    }
}

#[test]
fn split_then_merge_gives_the_file_back_and_the_set_reads_like_it() {
    let dir = temp_dir("split-round-trip");
    assert_splits_and_merges_back(&dir, "tiny", &copy_into(&dir, &sample_path(), "tiny.gguf"));
    assert_splits_and_merges_back(&dir, "big", &big_model(&dir));
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn the_corpus_tiny_llamas_split_and_merge_back() {
    let dir = temp_dir("split-round-trip-corpus");
    for endian in ["le", "be"] {
        let stem = format!("corpus-{endian}");
        let from = sipllm_tests::path(&format!("generated/tiny-llama.{endian}.gguf"));
        let original = copy_into(&dir, &from, &format!("{stem}.gguf"));
        assert_splits_and_merges_back(&dir, &stem, &original);
    }
}
