//! `split` and `merge`, and `inspect`, `tensors`, `read`, `verify`, `validate` on a split set.
//! The split-then-merge round trips are in the workspace's `tests/` crate (`round_trips`).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sipllm_testkit::GgufBuilder;

use crate::support::{sample_path, sipllm, temp_dir};

/// The bundled sample copied into `dir` as `name`.
fn sample_in(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    fs::copy(sample_path(), &p).unwrap();
    p
}

/// A 300-tensor model of assorted types (the dry-run test's input).
fn big_model(dir: &Path) -> PathBuf {
    let p = dir.join("big.gguf");
    fs::write(&p, sipllm_testkit::three_hundred_tensors()).unwrap();
    p
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
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

#[test]
fn inspect_and_tensors_describe_the_set() {
    let dir = temp_dir("split-inspect");
    let original = sample_in(&dir, "tiny.gguf");
    let run = sipllm(&dir, &["split", "tiny.gguf", "--max-tensors", "3"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let names = shards(&dir, "tiny");
    assert_eq!(names.len(), 3);

    let run = sipllm(&dir, &["inspect", &names[1]]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let text = &run.stdout;
    assert!(text.contains("split         set of 3 files (file 1 holds the metadata)"), "{text}");
    assert!(text.contains("tensors       8 in 3 files"), "{text}");
    assert!(text.contains("\nfiles (3)\n"), "{text}");
    for (i, n) in names.iter().enumerate() {
        assert!(text.contains(&format!("  {}  {n}", i + 1)), "{text}");
    }
    assert!(text.contains("split.count                             UINT16   3"), "{text}");
    assert!(text.contains("  file  offset"), "the tensor table has a file column: {text}");

    // JSON: the whole set's tensors with their shard, the first shard's metadata.
    let whole = json(&sipllm(&dir, &["inspect", "--json", original.to_str().unwrap()]).stdout);
    let set = json(&sipllm(&dir, &["inspect", "--json", &names[2]]).stdout);
    assert_eq!(set["split"]["count"], 3);
    assert_eq!(set["split"]["tensors_count"], 8);
    let files = set["split"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    let mut total = 0;
    for (f, n) in files.iter().zip(&names) {
        assert_eq!(f["path"], n.as_str());
        assert_eq!(f["file_size"], fs::metadata(dir.join(n)).unwrap().len());
        total += f["file_size"].as_u64().unwrap();
    }
    assert_eq!(set["file_size"], total);
    assert_eq!(set["tensor_count"], 8);
    assert_eq!(set["kv_count"], whole["kv_count"].as_u64().unwrap() + 3);
    let tensors = set["tensors"].as_array().unwrap();
    let whole_tensors = whole["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), whole_tensors.len());
    for (i, (t, w)) in tensors.iter().zip(whole_tensors).enumerate() {
        assert_eq!(t["shard"], i / 3, "{t}");
        for field in ["name", "ggml_type", "ne", "shape", "nbytes"] {
            assert_eq!(t[field], w[field], "{field}");
        }
    }
    assert!(whole.get("split").is_none(), "single files have no split field");
    assert!(whole_tensors.iter().all(|t| t.get("shard").is_none()));
    let metadata = set["metadata"].as_array().unwrap();
    let keys: Vec<&str> = metadata.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(keys[keys.len() - 3..], ["split.no", "split.count", "split.tensors.count"]);

    let run = sipllm(&dir, &["tensors", "--json", &names[0]]);
    let listed = json(&run.stdout);
    assert_eq!(listed.as_array().unwrap().len(), 8);
    assert_eq!(listed[7]["shard"], 2);

    // read: a tensor of the last shard, the same bytes as from the original.
    let name = whole_tensors[7]["name"].as_str().unwrap();
    let a = sipllm(&dir, &["read", &names[0], name, "-o", "a.bin"]);
    let b = sipllm(&dir, &["read", "tiny.gguf", name, "-o", "b.bin"]);
    assert_eq!((a.code, b.code), (Some(0), Some(0)), "{}{}", a.transcript(), b.transcript());
    assert_eq!(fs::read(dir.join("a.bin")).unwrap(), fs::read(dir.join("b.bin")).unwrap());

    // validate: the set is checked, and says what it read.
    let run = sipllm(&dir, &["validate", &names[2]]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout.contains("valid (GGUF v3, a set of 3 files, strict profile)"),
        "{}",
        run.stdout
    );
}

#[test]
fn broken_sets_and_refusals_have_their_exit_codes() {
    let dir = temp_dir("split-broken");
    sample_in(&dir, "tiny.gguf");
    let run = sipllm(&dir, &["split", "tiny.gguf", "--max-tensors", "3"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let names = shards(&dir, "tiny");

    // A missing shard: the set is invalid (1), and the message names the file.
    fs::rename(dir.join(&names[1]), dir.join("elsewhere.gguf")).unwrap();
    for command in ["inspect", "verify", "validate", "tensors"] {
        let run = sipllm(&dir, &[command, &names[0]]);
        assert_eq!(run.code, Some(1), "{command}: {}", run.transcript());
        // Unwrapped: the diagnostic wraps long lines at 100 columns.
        let all = format!("{}{}", run.stdout, run.stderr).replace("\n  │ ", "");
        assert!(all.contains("streaming::split::missing_shard"), "{command}: {all}");
        assert!(all.contains(&format!("{} does not exist", names[1])), "{command}: {all}");
    }
    let run = sipllm(&dir, &["merge", &names[0], "m.gguf"]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(!dir.join("m.gguf").exists());

    // A shard copied over another: shown over the offending shard's name.
    fs::copy(dir.join(&names[2]), dir.join(&names[1])).unwrap();
    let run = sipllm(&dir, &["inspect", &names[0]]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(run.stderr.contains("streaming::split::name_mismatch"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("{}: the file name says shard 2 of 3", names[1])),
        "{}",
        run.stderr
    );
    let run = sipllm(&dir, &["validate", "--format", "json", &names[0]]);
    let finding = json(run.stdout.lines().next().unwrap());
    assert_eq!(finding["file"], names[1].as_str());
    assert_eq!(finding["code"], "streaming::split::name_mismatch");

    // Requests that do not fit the file: exit code 2.
    for (args, code) in [
        (vec!["split", &names[0], "--max-tensors", "1"], "edit::split::already_split"),
        (vec!["merge", "tiny.gguf", "out.gguf"], "streaming::split::not_a_set"),
        (vec!["merge", &names[0], &names[2]], "streaming::split::name_mismatch"),
    ] {
        let run = sipllm(&dir, &args);
        let expected = if code.ends_with("name_mismatch") { 1 } else { 2 };
        assert_eq!(run.code, Some(expected), "{args:?}: {}", run.transcript());
        assert!(run.stderr.contains(code), "{args:?}: {}", run.stderr);
    }
    for args in [
        vec!["split", "tiny.gguf"],
        vec!["split", "tiny.gguf", "--max-tensors", "2", "--max-size", "1M"],
        vec!["split", "tiny.gguf", "--max-tensors", "0"],
        vec!["split", "tiny.gguf", "--max-size", "0"],
        vec!["split", "tiny.gguf", "--max-size", "1.5G"],
        vec!["merge", "tiny.gguf"],
    ] {
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
    }
    // One tensor per shard of an empty file: nothing to split.
    fs::write(dir.join("empty.gguf"), GgufBuilder::new().build()).unwrap();
    let run = sipllm(&dir, &["split", "empty.gguf", "--max-tensors", "1"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("edit::split::refused"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing to split"), "{}", run.stderr);
}

/// `--dry-run` prints the plan the split would write (the same names and tensor counts) and
/// writes nothing; a shard over `--max-size` (one tensor larger than the limit) gets a note,
/// on a dry run and a real one alike.
#[test]
fn dry_run_prints_the_plan_and_writes_nothing_and_over_size_shards_get_a_note() {
    let dir = temp_dir("split-dry-run");
    big_model(&dir);
    let before = fs::read_dir(&dir).unwrap().count();
    let run = sipllm(&dir, &["split", "big.gguf", "--max-tensors", "100", "--dry-run"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout.starts_with(
            "would split big.gguf into 3 files (300 tensors; at most 100 tensors per file); \
             nothing written:"
        ),
        "{}",
        run.stdout
    );
    for k in 1..=3 {
        assert!(run.stdout.contains(&format!("big-0000{k}-of-00003.gguf")), "{}", run.stdout);
    }
    assert_eq!(run.stdout.matches(" 100 tensors  ").count(), 3, "{}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), before, "nothing written");
    assert!(shards(&dir, "big").is_empty());

    // Q8_0 [64, 3] is 204 bytes (224 padded): over a 100-byte limit, alone in its shard.
    let run = sipllm(&dir, &["split", "big.gguf", "--max-size", "100", "--dry-run"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("nothing written"), "{}", run.stdout);
    assert!(
        run.stderr.contains("more than --max-size 100: tensor \"blk.0.w2\" alone is 224 bytes"),
        "{}",
        run.stderr
    );
    assert!(shards(&dir, "big").is_empty(), "a dry run writes nothing");
    let run = sipllm(&dir, &["split", "big.gguf", "--max-size", "100"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stderr.contains("a tensor is never split across shards"), "{}", run.stderr);
    assert!(!shards(&dir, "big").is_empty());
}
