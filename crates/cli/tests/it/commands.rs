//! `read`, `verify`, `tensors`, `completions`, and `.llmw` files through every command.

use sha2::{Digest, Sha256};
use sipllm_cli::render::json::hex;
use sipllm_llmw::{GgmlType, LlmwWriter};
use sipllm_testkit::pattern;

use crate::files::{valid, write};
use crate::support::{golden, sipllm, temp_dir};

#[test]
fn verify_check_lists_every_mismatch() {
    let dir = temp_dir("verify-check");
    let file = write(&dir, "model.gguf", &valid());
    for (hash, digits) in [("sha256", 64), ("xxh3", 16)] {
        let manifest = format!("{hash}.txt");
        let run = sipllm(&dir, &["verify", "--hash", hash, "--manifest", &manifest, &file]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        let text = std::fs::read_to_string(dir.join(&manifest)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.split("  ").next().unwrap().len() == digits));
        // The hash kind is guessed from the manifest.
        let run = sipllm(&dir, &["verify", "--check", &manifest, &file]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());

        // Change one hash, one size, drop one line and add a stranger: four differences.
        let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        edited[0] = edited[0].replacen(
            &edited[0][..2],
            if &edited[0][..2] == "00" { "11" } else { "00" },
            1,
        );
        edited[1] = edited[1].replacen("  1088  ", "  1089  ", 1);
        edited.remove(2);
        edited.push(format!("{}  4  ghost.weight", "a".repeat(digits)));
        std::fs::write(dir.join("edited.txt"), edited.join("\n")).unwrap();
        let run = sipllm(&dir, &["verify", "--check", "edited.txt", &file]);
        assert_eq!(run.code, Some(1), "{}", run.transcript());
        let mismatches: Vec<&str> =
            run.stdout.lines().filter(|l| l.starts_with("MISMATCH")).collect();
        assert_eq!(mismatches.len(), 4, "{}", run.stdout);
        assert!(mismatches.iter().any(|l| l.contains("token_embd.weight: hash")));
        assert!(
            mismatches
                .iter()
                .any(|l| l.contains("blk.0.attn_q.weight: size 1088 in the file, 1089"))
        );
        assert!(
            mismatches
                .iter()
                .any(|l| l.contains("output_norm.weight: in the file, not in the manifest"))
        );
        assert!(
            mismatches.iter().any(|l| l.contains("ghost.weight: in the manifest, not in the file"))
        );
        // It ends with the failure, never "verified" (issue 30 item 12).
        assert!(!run.stdout.contains("verified"), "{}", run.stdout);
        assert_eq!(
            run.stdout.lines().last(),
            Some("FAILED: 4 differences against edited.txt (the MISMATCH lines above)"),
            "{}",
            run.stdout
        );
    }
}

#[test]
fn read_writes_the_stored_bytes() {
    let dir = temp_dir("read");
    let file = write(&dir, "model.gguf", &valid());
    // The builder fills tensor i with `pattern(i, nbytes)`.
    let q = pattern(1, 1088);
    let run = sipllm(&dir, &["read", &file, "blk.0.attn_q.weight", "-o", "q.bin"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(std::fs::read(dir.join("q.bin")).unwrap(), q);
    // To a pipe, and a range of it.
    let run = sipllm(&dir, &["read", &file, "blk.0.attn_q.weight", "--range", "34..0x50"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout_bytes, q[34..80]);
    let run = sipllm(&dir, &["read", &file, "blk.0.attn_q.weight", "--range", "1000.."]);
    assert_eq!(run.stdout_bytes, q[1000..]);
    // A range past the tensor is a usage error.
    let run = sipllm(&dir, &["read", &file, "blk.0.attn_q.weight", "--range", "0..1089"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("not inside the tensor's 1088 bytes"), "{}", run.stderr);
    let run = sipllm(&dir, &["read", &file, "nope", "-o", "x.bin"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("no tensor named \"nope\""), "{}", run.stderr);
}

fn llmw_file() -> Vec<u8> {
    let data = pattern(0, 4 * 3 * 4);
    let mut w = LlmwWriter::new();
    w.add_meta_str("general.architecture", "llama")
        .unwrap()
        .add_meta_str("general.name", "tiny-llmw")
        .unwrap()
        .add_meta_i64("llama.block_count", 2)
        .unwrap()
        .add_meta_f64("llama.rope.freq_base", 10000.0)
        .unwrap()
        .add_meta_strs("tokenizer.ggml.tokens", ["<s>", "</s>", "hi"])
        .unwrap()
        .add_meta_i64s("tokenizer.ggml.token_type", [3, 3, 1])
        .unwrap()
        .add_meta_f64s("tokenizer.ggml.scores", [0.0, -1.5, f64::NAN])
        .unwrap()
        .add_tensor("token_embd.weight", GgmlType::F32, &[3, 4], &data)
        .unwrap();
    w.to_vec().unwrap()
}

#[test]
fn llmw_files_work_with_every_command() {
    let dir = temp_dir("llmw");
    let file = write(&dir, "tiny.llmw", &llmw_file());
    let run = sipllm(&dir, &["inspect", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    golden("inspect/llmw.txt", &run.transcript());
    let run = sipllm(&dir, &["inspect", "--json", &file]);
    assert_eq!(run.code, Some(0));
    golden("inspect/llmw.json", &run.stdout);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["format"], "llmw");
    assert_eq!(doc["alignment"], 64);
    assert_eq!(doc["tensors"][0]["shape"], serde_json::json!([3, 4]));
    assert_eq!(doc["tensors"][0]["ne"], serde_json::json!([4, 3]));

    assert_eq!(sipllm(&dir, &["validate", &file]).code, Some(0));
    let run = sipllm(&dir, &["read", &file, "token_embd.weight"]);
    assert_eq!(run.stdout_bytes, pattern(0, 48));
    let run = sipllm(&dir, &["verify", "--manifest", "-", &file]);
    assert_eq!(run.code, Some(0));
    assert_eq!(
        run.stdout,
        format!("{}  48  token_embd.weight\n", hex(&Sha256::digest(pattern(0, 48))))
    );

    // A corrupt .llmw file: the dtype of the only tensor set to a removed ggml type.
    let mut bytes = llmw_file();
    let name = b"token_embd.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    bytes[at..at + 4].copy_from_slice(&4u32.to_le_bytes());
    let bad = write(&dir, "bad.llmw", &bytes);
    let run = sipllm(&dir, &["validate", &bad]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    golden("validate/llmw-removed-dtype.txt", &run.transcript());
}

#[test]
fn completions_are_generated() {
    let dir = temp_dir("completions");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = sipllm(&dir, &["completions", shell]);
        assert_eq!(run.code, Some(0), "{shell}");
        assert!(run.stdout.contains("validate") && run.stdout.contains("profile"), "{shell}");
    }
}

/// `--manifest-format gguf-hash` writes llama-gguf-hash's output; `--check` reads it (and
/// sipllm's), matching tensors by name whatever path the manifest was made with.
#[test]
fn verify_writes_and_checks_llama_gguf_hash_manifests() {
    let dir = temp_dir("verify-gguf-hash");
    let file = write(&dir, "model.gguf", &valid());
    let run = sipllm(
        &dir,
        &[
            "verify",
            "--hash",
            "sha256,xxh64",
            "--manifest",
            "m.txt",
            "--manifest-format",
            "gguf-hash",
            &file,
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let text = std::fs::read_to_string(dir.join("m.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Per tensor xxh64 then sha256 (llama-gguf-hash's order), then the model's.
    assert_eq!(lines.len(), 3 * 2 + 2, "{text}");
    let shape = |l: &str| {
        let (kind, rest) = l.split_at(8);
        let (sep, rest) = rest.split_at(2);
        let (hash, name) = rest.split_once("  ").unwrap();
        (kind.trim_end().to_owned(), sep.to_owned(), hash.len(), name.to_owned())
    };
    assert_eq!(
        shape(lines[0]),
        ("xxh64".into(), "  ".into(), 16, "model.gguf:token_embd.weight".into())
    );
    assert_eq!(
        shape(lines[1]),
        ("sha256".into(), "  ".into(), 64, "model.gguf:token_embd.weight".into())
    );
    assert_eq!(shape(lines[6]), ("xxh64".into(), "  ".into(), 16, "model.gguf".into()));
    assert_eq!(shape(lines[7]), ("sha256".into(), "  ".into(), 64, "model.gguf".into()));
    // The per-tensor sha256 equals the sipllm manifest's.
    let ours = sipllm(&dir, &["verify", "--manifest", "-", &file]).stdout;
    let first_sha = ours.lines().next().unwrap().split("  ").next().unwrap();
    assert!(lines[1].contains(first_sha));

    // Checked from another path: the strongest hash (sha256) is chosen, everything matches.
    std::fs::create_dir_all(dir.join("copy")).unwrap();
    std::fs::copy(dir.join(&file), dir.join("copy/renamed.gguf")).unwrap();
    let run = sipllm(&dir, &["verify", "--check", "m.txt", "copy/renamed.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stdout.contains("check: sha256: all 3 tensors match; the model matches"),
        "{}",
        run.stdout
    );
    let run = sipllm(&dir, &["verify", "--check", "m.txt", "--hash", "xxh64,sha256", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("check: xxh64: all 3 tensors match; the model matches"));

    // One tensor hash and the model hash tampered with: both reported, exit 1.
    let flip = |l: &str| {
        let at = 10;
        let c = if l.as_bytes()[at] == b'0' { "1" } else { "0" };
        format!("{}{c}{}", &l[..at], &l[at + 1..])
    };
    let mut tampered: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    tampered[3] = flip(&tampered[3]); // sha256 of blk.0.attn_q.weight
    tampered[7] = flip(&tampered[7]); // the model's sha256
    std::fs::write(dir.join("bad.txt"), tampered.join("\n")).unwrap();
    let run = sipllm(&dir, &["verify", "--check", "bad.txt", &file]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    let mismatches: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("MISMATCH")).collect();
    assert_eq!(mismatches.len(), 2, "{}", run.stdout);
    assert!(mismatches[0].contains("blk.0.attn_q.weight: hash"));
    assert!(mismatches[1].starts_with("MISMATCH  model: sha256 "));

    // A model-only manifest (llama-gguf-hash --no-layer) checks the model line alone.
    std::fs::write(dir.join("model-only.txt"), format!("{}\n", lines[7])).unwrap();
    let run = sipllm(&dir, &["verify", "--check", "model-only.txt", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(run.stdout.contains("check: sha256: the model matches"));

    // A sipllm manifest holds one hash; uuid has no per-tensor hash.
    for hash in ["sha256,xxh64", "uuid"] {
        let run = sipllm(&dir, &["verify", "--hash", hash, "--manifest", "x.txt", &file]);
        assert_eq!(run.code, Some(2), "{}", run.transcript());
    }
}

/// A vocabulary with special tokens and a chat template holding every awkward byte.
fn tokens_file(template: &str) -> Vec<u8> {
    use sipllm_testkit::{GgufBuilder, Value};
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["<unk>", "<s>", "</s>", "<\x1b[31m>"]))
        .kv("tokenizer.ggml.bos_token_id", Value::Uint32(1))
        .kv("tokenizer.ggml.eos_token_id", Value::Uint32(2))
        .kv("tokenizer.ggml.eot_token_id", Value::Uint32(3))
        .kv("tokenizer.ggml.padding_token_id", Value::Uint32(99))
        .kv("tokenizer.chat_template", Value::str(template))
        .kv("llama.context_length", Value::Uint32(4096))
        .build()
}

/// Issue 30 item 9: `inspect` names the special tokens (escaped), and `--key KEY [--raw]`
/// prints one value: escaped and quoted, or exactly the stored bytes with nothing added.
#[test]
fn inspect_names_special_tokens_and_prints_one_key() {
    let dir = temp_dir("inspect-key");
    let template = "{{ bos_token }}\r\n\t{% if x %}\"quoted\" \\ back{% endif %}\n\n";
    let file = write(&dir, "tokens.gguf", &tokens_file(template));
    let run = sipllm(&dir, &["inspect", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let block: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| *l != "special tokens")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        block,
        [
            "  bos       1  \"<s>\"",
            "  eos       2  \"</s>\"",
            "  eot       3  \"<\\u{1b}[31m>\"",
            "  padding  99  (not in the vocabulary)"
        ],
        "{}",
        run.stdout
    );
    // --raw: the exact bytes, no newline added.
    let run = sipllm(&dir, &["inspect", &file, "--key", "tokenizer.chat_template", "--raw"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(run.stdout_bytes, template.as_bytes());
    let run = sipllm(&dir, &["inspect", &file, "--key", "llama.context_length", "--raw"]);
    assert_eq!(run.stdout_bytes, b"4096");
    // Without: escaped, quoted, one line.
    let run = sipllm(&dir, &["inspect", &file, "--key", "tokenizer.chat_template"]);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(run.stdout.starts_with("\"{{ bos_token }}\\r\\n\\t"), "{}", run.stdout);
    let run = sipllm(&dir, &["inspect", &file, "--key", "tokenizer.ggml.tokens"]);
    assert_eq!(run.stdout, "[4 × STRING] \"<unk>\", \"<s>\", \"</s>\", \"<\\u{1b}[31m>\"\n");
    // A key the file lacks: exit 2, the nearest key named; --raw of an array: exit 2.
    let run = sipllm(&dir, &["inspect", &file, "--key", "tokenizer.chat_templat"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("did you mean \"tokenizer.chat_template\"?"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    let run = sipllm(&dir, &["inspect", &file, "--key", "tokenizer.ggml.tokens", "--raw"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("is an array of 4 STRING"), "{}", run.stderr);
    // --raw needs --key; --key and --json conflict.
    assert_eq!(sipllm(&dir, &["inspect", &file, "--raw"]).code, Some(2));
    assert_eq!(sipllm(&dir, &["inspect", &file, "--key", "x", "--json"]).code, Some(2));
}

/// Issue 30 item 5: every reading command's help says its FILE may be a URL, and the main
/// help names the online documentation (not a path that means nothing after `cargo install`).
#[test]
fn help_names_urls_and_the_online_documentation() {
    let dir = temp_dir("help-urls");
    let run = sipllm(&dir, &["--help"]);
    assert_eq!(run.code, Some(0));
    assert!(
        run.stdout.contains("https://github.com/sipllm/sipllm-gguf/tree/main/docs"),
        "{}",
        run.stdout
    );
    let readers: [&[&str]; 11] = [
        &["inspect"],
        &["validate"],
        &["tensors"],
        &["read"],
        &["verify"],
        &["diff"],
        &["fit"],
        &["edit"],
        &["convert"],
        &["template", "show"],
        &["template", "render"],
    ];
    for command in readers {
        let args: Vec<&str> = command.iter().copied().chain(["--help"]).collect();
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(0), "{command:?}");
        let text = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains(
                "path or URL (http://, https://, hf://; s3:// with the object-store feature)"
            ),
            "{command:?} --help does not name URLs:\n{}",
            run.stdout
        );
    }
}

/// Issue 30 item 12: a filter that matches nothing says so (exit code 0, `[]` with --json),
/// and a mistyped tensor name gets the nearest one.
#[test]
fn no_match_and_mistyped_names_are_answered() {
    let dir = temp_dir("no-match");
    let file = write(&dir, "model.gguf", &valid());
    for stats in [false, true] {
        let mut args = vec!["tensors", &file, "--filter", "nomatch*"];
        if stats {
            args.push("--stats");
        }
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        assert_eq!(run.stdout, "0 of 3 tensors match \"nomatch*\"\n", "{args:?}");
        args.push("--json");
        let run = sipllm(&dir, &args);
        assert_eq!((run.code, run.stdout.as_str()), (Some(0), "[]\n"), "{args:?}");
    }
    let run = sipllm(&dir, &["read", &file, "blk.0.atn_q.weight", "-o", "out.bin"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("did you mean \"blk.0.attn_q.weight\"?"), "{}", run.stderr);
    let run = sipllm(&dir, &["read", &file, "something.else.entirely", "-o", "out.bin"]);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
}
