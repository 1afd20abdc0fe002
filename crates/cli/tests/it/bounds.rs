//! Bounded resources and unambiguous output (issue 16): `--set-file` reads at most its cap
//! from any source, special files are refused instead of hanging, long names are elided in
//! diagnostics, large alignments cost neither memory nor disk, and the escaping (so the
//! `verify` manifest) is unambiguous.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sipllm_gguf::GgmlType;
use sipllm_testkit::GgufBuilder;

use crate::files::{valid, write};
use crate::support::{Run, sipllm, temp_dir};

/// Tensors `a<LF>b` and `a\nb` (a backslash and an `n`) print differently, and `verify
/// --check` against the file's own fresh manifest passes (it failed: both escaped to `a\nb`,
/// "listed more than once").
#[test]
fn a_line_feed_and_a_backslash_n_are_different_names() {
    let dir = temp_dir("bounds-escape");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("llama"))
        .tensor("a\nb", GgmlType::F32, &[4])
        .tensor("a\\nb", GgmlType::F32, &[8])
        .build();
    let file = write(&dir, "m.gguf", &bytes);
    let run = sipllm(&dir, &["tensors", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("a\\nb"), "{}", run.stdout);
    assert!(run.stdout.contains("a\\\\nb"), "{}", run.stdout);
    let run = sipllm(&dir, &["verify", "--manifest", "m.sha256", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let text = std::fs::read_to_string(dir.join("m.sha256")).unwrap();
    let names: Vec<&str> = text.lines().map(|l| l.splitn(3, "  ").nth(2).unwrap()).collect();
    assert_eq!(names, ["a\\nb", "a\\\\nb"]);
    let run = sipllm(&dir, &["verify", "--check", "m.sha256", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("check: all 2 tensors match"), "{}", run.stdout);
}

/// Runs `sipllm args…` in `dir` with `stdin`, killing it (and failing) after `secs` seconds:
/// a hang is a failure, not a stuck test run.
fn sipllm_within(dir: &Path, args: &[&str], stdin: Stdio, secs: u64) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the sipllm binary runs");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let run = Run {
                code: status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                stdout_bytes: out.stdout,
            };
            assert_ne!(run.code, Some(101), "sipllm {args:?} panicked:\n{}", run.stderr);
            return run;
        }
        if started.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("sipllm {args:?} still ran after {secs} s: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `--set-file` reads at most the 64 MiB cap + 1 byte from any source: `/dev/zero` (it grew
/// to 20 GB before), an endless pipe on standard input (read whole before, refused only
/// afterwards), and a FIFO with no writer (it hung) are all refused promptly.
#[test]
fn set_file_is_bounded_whatever_the_source() {
    let dir = temp_dir("bounds-set-file");
    let model = write(&dir, "m.gguf", &valid());
    let refused = |run: &Run, what: &str| {
        assert_eq!(run.code, Some(2), "{what}: {}", run.transcript());
        assert!(!dir.join("out.gguf").exists(), "{what}: nothing was written");
    };
    let run = sipllm_within(
        &dir,
        &["edit", &model, "-o", "out.gguf", "--set-file", "tokenizer.chat_template=/dev/zero"],
        Stdio::null(),
        60,
    );
    refused(&run, "/dev/zero");
    assert!(
        run.stderr.contains("more than 67,108,864 bytes (reading stopped there)"),
        "{}",
        run.stderr
    );

    // An endless pipe as standard input.
    let mut yes = Command::new("yes").stdout(Stdio::piped()).spawn().expect("yes runs");
    let stdin = Stdio::from(yes.stdout.take().unwrap());
    let run = sipllm_within(
        &dir,
        &["edit", &model, "-o", "out.gguf", "--set-file", "tokenizer.chat_template=/dev/stdin"],
        stdin,
        60,
    );
    yes.kill().unwrap();
    yes.wait().unwrap();
    refused(&run, "an endless pipe");
    assert!(run.stderr.contains("more than 67,108,864 bytes"), "{}", run.stderr);

    // A FIFO nobody writes into.
    mkfifo(&dir.join("t.fifo"));
    let run = sipllm_within(
        &dir,
        &["edit", &model, "-o", "out.gguf", "--set-file", "tokenizer.chat_template=t.fifo"],
        Stdio::null(),
        20,
    );
    refused(&run, "a FIFO with no writer");
    assert!(run.stderr.contains("a FIFO (pipe) that delivered no bytes"), "{}", run.stderr);

    // A pipe with a template in it is what the user meant: it is read.
    let mut echo = Command::new("printf")
        .arg("{{ bos_token }}")
        .stdout(Stdio::piped())
        .spawn()
        .expect("printf runs");
    let stdin = Stdio::from(echo.stdout.take().unwrap());
    let run = sipllm_within(
        &dir,
        &["edit", &model, "-o", "out.gguf", "--set-file", "tokenizer.chat_template=/dev/stdin"],
        stdin,
        60,
    );
    echo.wait().unwrap();
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let run = sipllm(&dir, &["inspect", "out.gguf"]);
    // inspect shows a chat template as its size and sha256 (of "{{ bos_token }}").
    assert!(
        run.stdout.contains(
            "15 bytes, sha256 38924663eb3df1cd5aca30e34168f06d9b884a78b5d25426b14f675456a66eec"
        ),
        "{}",
        run.stdout
    );
}

/// Every command refuses a model that is a FIFO, promptly and with a typed error (they all
/// hung forever), and so does every command given a split set whose second shard is a FIFO.
#[test]
fn every_command_refuses_a_fifo_instead_of_hanging() {
    let dir = temp_dir("bounds-fifo");
    write(&dir, "m.gguf", &valid());
    mkfifo(&dir.join("f.gguf"));
    let commands: [&[&str]; 11] = [
        &["inspect", "f.gguf"],
        &["inspect", "--json", "f.gguf"],
        &["validate", "f.gguf"],
        &["tensors", "f.gguf"],
        &["read", "f.gguf", "output_norm.weight", "-o", "t.bin"],
        &["verify", "f.gguf"],
        &["edit", "f.gguf", "-o", "out.gguf", "--set", "general.name=str:x"],
        &["edit", "f.gguf", "--in-place", "--set", "general.name=str:x"],
        &["convert", "f.gguf", "out.llmw"],
        &["split", "f.gguf", "--max-tensors", "1"],
        &["merge", "f.gguf", "out.gguf"],
    ];
    for args in commands {
        let run = sipllm_within(&dir, args, Stdio::null(), 20);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("a FIFO (pipe), not a regular file"), "{args:?}: {all}");
        assert!(all.contains("stream::open::not_a_file"), "{args:?}: {all}");
    }
    // `validate` of several files judges the FIFO and goes on to the next.
    let run = sipllm_within(&dir, &["validate", "f.gguf", "m.gguf"], Stdio::null(), 20);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stdout.contains("m.gguf"), "{}", run.transcript());

    // A sibling shard replaced by a FIFO.
    let run = sipllm(&dir, &["split", "m.gguf", "--max-tensors", "1"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    mkfifo(&dir.join("m-00002-of-00003.gguf"));
    let first = "m-00001-of-00003.gguf";
    let commands: [&[&str]; 5] = [
        &["inspect", first],
        &["tensors", first],
        &["verify", first],
        &["validate", first],
        &["merge", first, "merged.gguf"],
    ];
    for args in commands {
        let run = sipllm_within(&dir, args, Stdio::null(), 20);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("stream::open::not_a_file"), "{args:?}: {all}");
        assert!(
            all.contains("m-00002-of-00003.gguf: cannot open: it is a FIFO (pipe)"),
            "{args:?}: {all}"
        );
    }
}

/// A file with an 8 MiB tensor name (an error: longer than 64 bytes) and one with an 8 MiB key
/// (a warning: longer than the spec's 65,535).
fn long_name_files(dir: &Path) -> [String; 2] {
    let long = "a".repeat(8 << 20);
    let name = GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("llama"))
        .tensor(&long, GgmlType::F32, &[4])
        .build();
    let key = GgufBuilder::new()
        .kv(&"k".repeat(8 << 20), sipllm_testkit::Value::Uint32(1))
        .tensor("t", GgmlType::F32, &[4])
        .build();
    [write(dir, "long-name.gguf", &name), write(dir, "long-key.gguf", &key)]
}

/// An overlong name or key is elided in every diagnostic and table: an 8 MiB name gave a
/// 21 MB message (and 148 MB of memory). The elision says how long the name is.
#[test]
fn diagnostics_elide_long_names() {
    let dir = temp_dir("bounds-long-names");
    let files = long_name_files(&dir);
    for file in &files {
        for args in [
            &["validate", file.as_str()][..],
            &["validate", "--format", "json", file],
            &["inspect", file],
            &["tensors", file],
            &["verify", file],
        ] {
            let run = sipllm(&dir, args);
            let all = format!("{}{}", run.stdout, run.stderr);
            assert!(all.len() < 16 << 10, "{args:?}: {} bytes of output", all.len());
            if file.contains("name") || args[0] == "validate" {
                assert!(all.contains("…") && all.contains("(8388608 bytes)"), "{args:?}: {all}");
            }
        }
    }
}

/// One flipped bit in a real model's header — a key length grown by 8 MiB, so the key
/// swallows the vocabulary after it — gave every command 115 MB and 13 MB of standard error.
#[test]
fn a_flipped_bit_in_a_key_length_gives_a_short_diagnostic() {
    let dir = temp_dir("bounds-flipped-bit");
    let mut header = sipllm_testkit::llama3::builder(1).build_header();
    let key = b"tokenizer.ggml.merges";
    let mut field = (key.len() as u64).to_le_bytes().to_vec();
    field.extend_from_slice(key);
    let at = header.windows(field.len()).position(|w| w == field).unwrap();
    header[at + 2] ^= 0x80;
    let file = write(&dir, "flip.gguf", &header);
    // The tensor data a sparse hole after it, so the grown key still lies inside the file.
    let f = std::fs::OpenOptions::new().write(true).open(dir.join(&file)).unwrap();
    f.set_len(header.len() as u64 + (64 << 20)).unwrap();
    drop(f);
    for command in ["validate", "inspect", "tensors", "verify"] {
        let run = sipllm(&dir, &[command, &file]);
        assert_eq!(run.code, Some(1), "{command}: {}", run.transcript());
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.len() < 16 << 10, "{command}: {} bytes of output", all.len());
        assert!(all.contains("(8388629 bytes)"), "{command}: {all}");
    }
}
