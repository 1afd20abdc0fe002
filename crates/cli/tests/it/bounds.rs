//! Bounded resources and unambiguous output (issue 16): `--set-file` reads at most its cap
//! from any source, special files are refused instead of hanging, long names are elided in
//! diagnostics, large alignments cost neither memory nor disk, and the escaping (so the
//! `verify` manifest) is unambiguous.

use std::path::Path;
use std::process::{Command, Stdio};

use sipllm_gguf::GgmlType;
use sipllm_testkit::GgufBuilder;

use crate::files::{valid, write};
use crate::support::{Run, run_with_file_limit, sipllm, temp_dir, temporaries};

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

/// Runs `sipllm args…` in `dir` with `stdin`, killing it (and failing) when it hangs: a hang
/// is a failure, not a stuck test run. Hung means [`HANG_CPU`](sipllm_testkit::command::HANG_CPU)
/// of CPU time, or none used for [`HANG_IDLE`](sipllm_testkit::command::HANG_IDLE) (blocked):
/// CPU time, so a busy machine cannot fail the test.
fn sipllm_within(dir: &Path, args: &[&str], stdin: Stdio) -> Run {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the sipllm binary runs");
    // Drained while it runs, so a full pipe cannot block it.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let Some(status) = sipllm_testkit::command::wait_unless_hung(&mut child) else {
        panic!("sipllm {args:?} hung (killed)");
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let run = Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        stdout_bytes: stdout,
    };
    assert_ne!(run.code, Some(101), "sipllm {args:?} panicked:\n{}", run.stderr);
    run
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

/// `verify --check` reads its manifest through the capped, regular-files-only reader:
/// `/dev/zero` (it grew to 24 GB and was killed), a FIFO (it hung) and a file past the cap are
/// refused before the model is read, with the path and the reason; `edit --recover` refuses a
/// header backup that is a FIFO the same way (it hung).
#[test]
fn auxiliary_inputs_are_regular_files_read_bounded() {
    let dir = temp_dir("bounds-check");
    let model = write(&dir, "m.gguf", &valid());
    mkfifo(&dir.join("m.fifo"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.sha256")).unwrap();
    // Sparse: one byte past the cap costs no disk, and is refused by its size unread.
    let big = std::fs::File::create(dir.join("big.sha256")).unwrap();
    big.set_len((256 << 20) + 1).unwrap();
    for (manifest, why) in [
        ("/dev/zero", "it is a character device, not a regular file"),
        ("zero.sha256", "it is a character device, not a regular file"),
        ("m.fifo", "it is a FIFO (pipe), not a regular file"),
        ("big.sha256", "it holds more than 268435456 bytes"),
    ] {
        let run = sipllm_within(&dir, &["verify", "--check", manifest, &model], Stdio::null());
        assert_eq!(run.code, Some(2), "{manifest}: {}", run.transcript());
        let expect = format!("cannot read the manifest {manifest}: {why}");
        assert!(run.stderr.contains(&expect), "{manifest}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{manifest}: {}", run.stdout);
    }

    mkfifo(&dir.join(".m.gguf.header-backup"));
    let run = sipllm_within(&dir, &["edit", "--recover", &model], Stdio::null());
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
    assert_eq!(std::fs::read(dir.join(&model)).unwrap(), valid(), "the model is not written");
}

/// `read -o OUT` (raw and `--as f32`) and `verify --manifest OUT` are written as model files
/// are (issue 26): a kill or a full disk (here a file-size limit: killed by SIGXFSZ, or with
/// the signal ignored, EFBIG) leaves the previous OUT intact and no temporary; they truncated
/// it first. An OUT that is a FIFO is refused at once (it blocked forever).
#[test]
fn auxiliary_outputs_are_atomic_and_never_block() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir("bounds-outputs");
    // 64 KiB of tensor data, and a manifest of 120 long names: both past an 8 KiB limit.
    let mut b = GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("llama"))
        .tensor("big.weight", GgmlType::F32, &[128, 128]);
    for i in 0..120 {
        b = b.tensor(
            &format!("blk.{i}.a_rather_long_tensor_name_for_a_long_manifest"),
            GgmlType::F32,
            &[4],
        );
    }
    write(&dir, "m.gguf", &b.build());
    let old = b"the previous output".to_vec();
    let commands: [&[&str]; 3] = [
        &["read", "m.gguf", "big.weight", "-o", "out"],
        &["read", "m.gguf", "big.weight", "--as", "f32", "-o", "out"],
        &["verify", "m.gguf", "--manifest", "out"],
    ];
    for args in commands {
        std::fs::write(dir.join("out"), &old).unwrap();
        let killed = run_with_file_limit(&dir, false, args);
        assert_eq!(killed.status.signal(), Some(25), "{args:?}: SIGXFSZ: {killed:?}");
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), old, "{args:?}: killed");
        // A later write of `out` removes what the killed one left.
        let failed = run_with_file_limit(&dir, true, args);
        assert_eq!(failed.status.code(), Some(2), "{args:?}: {failed:?}");
        let stderr = String::from_utf8_lossy(&failed.stderr);
        assert!(stderr.contains("cannot write out"), "{args:?}: {stderr}");
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), old, "{args:?}: failed");
        let left = temporaries(&dir);
        assert!(left.is_empty(), "{args:?}: {left:?}");
        // Unlimited, the output is replaced whole.
        let run = sipllm(&dir, args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.transcript());
        assert!(std::fs::metadata(dir.join("out")).unwrap().len() > 8 << 10, "{args:?}");
    }

    mkfifo(&dir.join("out.fifo"));
    let commands: [&[&str]; 3] = [
        &["read", "m.gguf", "big.weight", "-o", "out.fifo"],
        &["read", "m.gguf", "big.weight", "--as", "f32", "-o", "out.fifo"],
        &["verify", "m.gguf", "--manifest", "out.fifo"],
    ];
    for args in commands {
        let run = sipllm_within(&dir, args, Stdio::null());
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        assert!(run.stderr.contains("cannot write out.fifo"), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("not a regular file"), "{args:?}: {}", run.stderr);
    }
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
        let run = sipllm_within(&dir, args, Stdio::null());
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("a FIFO (pipe), not a regular file"), "{args:?}: {all}");
        assert!(all.contains("streaming::open::not_a_file"), "{args:?}: {all}");
    }
    // `validate` of several files judges the FIFO and goes on to the next.
    let run = sipllm_within(&dir, &["validate", "f.gguf", "m.gguf"], Stdio::null());
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
        let run = sipllm_within(&dir, args, Stdio::null());
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("streaming::open::not_a_file"), "{args:?}: {all}");
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
