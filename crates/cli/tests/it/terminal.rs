//! Behaviour on a terminal, through `script(1)` (util-linux) which gives the program a
//! pseudo-terminal: colors only there and only without `NO_COLOR`; binary data never written
//! to it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::files::{cases, valid, write};
use crate::support::temp_dir;

/// Runs `sipllm args…` on a pseudo-terminal; `None` when `script` is not installed.
fn on_tty(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Option<(Option<i32>, String)> {
    script(dir, "", env, args)
}

/// Runs `shell_prefix sipllm args…` (arguments quoted) under `script(1)`, standard input
/// null, with `NO_COLOR` and `COLUMNS` unset unless `env` sets them; the transcript with
/// carriage returns as the terminal sent them.
fn script(
    dir: &Path,
    shell_prefix: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> Option<(Option<i32>, String)> {
    let mut line = format!("{shell_prefix}{}", env!("CARGO_BIN_EXE_sipllm"));
    for a in args {
        line.push_str(" '");
        line.push_str(&a.replace('\'', r"'\''"));
        line.push('\'');
    }
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!text.contains("panicked"), "{text}");
    Some((out.status.code(), text))
}

fn skipped(test: &str) {
    eprintln!("SKIPPED: {test}: `script` (util-linux) is not installed; nothing was checked");
}

#[test]
fn colors_only_on_a_terminal_and_without_no_color() {
    let dir = temp_dir("tty-colors");
    let bad = write(&dir, "bad.gguf", &cases()[0].bytes);
    let Some((code, text)) = on_tty(&dir, &[], &["validate", &bad]) else {
        return skipped("colors_only_on_a_terminal_and_without_no_color");
    };
    assert_eq!(code, Some(1));
    assert!(text.contains("\x1b["), "no color on a terminal:\n{text}");
    let (_, text) = on_tty(&dir, &[("NO_COLOR", "1")], &["validate", &bad]).unwrap();
    assert!(!text.contains("\x1b["), "color despite NO_COLOR:\n{text}");
    let (_, text) = on_tty(&dir, &[], &["--color", "never", "validate", &bad]).unwrap();
    assert!(!text.contains("\x1b["), "color despite --color never:\n{text}");
    // Off a terminal: none (the golden tests run that way, with NO_COLOR unset here).
    let out = Command::new(env!("CARGO_BIN_EXE_sipllm"))
        .args(["validate", &bad])
        .current_dir(&dir)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\x1b["));
}

#[test]
fn binary_data_is_never_written_to_a_terminal() {
    let dir = temp_dir("tty-read");
    let file = write(&dir, "model.gguf", &valid());
    let Some((code, text)) = on_tty(&dir, &[], &["read", &file, "output_norm.weight"]) else {
        return skipped("binary_data_is_never_written_to_a_terminal");
    };
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("refusing to write binary tensor data to a terminal"), "{text}");
    // With -o the bytes go to the file.
    let (code, _) =
        on_tty(&dir, &[], &["read", &file, "output_norm.weight", "-o", "out.bin"]).unwrap();
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read(dir.join("out.bin")).unwrap().len(), 128);
}

/// Runs `sipllm args…` on a pseudo-terminal of `cols` columns (set with `stty`, as a
/// terminal emulator sets it; `COLUMNS` unset), without color; `None` when `script` is not
/// installed.
fn on_tty_of(dir: &Path, cols: usize, args: &[&str]) -> Option<(Option<i32>, String)> {
    let prefix = format!("stty rows 40 cols {cols}; ");
    let (code, text) = script(dir, &prefix, &[("NO_COLOR", "1")], args)?;
    Some((code, text.replace('\r', "")))
}

/// The columns a line takes on a terminal: East Asian wide characters take two (the
/// vocabularies hold CJK tokens). A coarse table of its own, not the CLI's `text_width`, so
/// the test does not measure the output with the code that cut it.
fn columns(line: &str) -> usize {
    line.chars()
        .map(|c| match u32::from(c) {
            0x1100..=0x115f | 0x2e80..=0xa4cf | 0xac00..=0xd7a3 | 0xf900..=0xfaff => 2,
            0xfe30..=0xfe4f | 0xff00..=0xff60 | 0xffe0..=0xffe6 | 0x20000..=0x3fffd => 2,
            _ => 1,
        })
        .sum()
}

fn widest(text: &str) -> (usize, String) {
    text.lines().map(|l| (columns(l), l.to_owned())).max().unwrap_or_default()
}

/// A Gemma-3-shaped tensor table: long names (`blk.17.post_attention_norm.weight`), a wide
/// token embedding.
fn long_names() -> Vec<u8> {
    use sipllm_gguf::GgmlType;
    let mut b = sipllm_testkit::GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("gemma3"))
        .kv("tokenizer.ggml.tokens", sipllm_testkit::Value::strings(["<pad>", "<eos>", "<bos>"]))
        .tensor("token_embd.weight", GgmlType::F32, &[64, 3]);
    for i in 0..18 {
        for role in ["post_attention_norm", "post_ffw_norm", "attn_k_norm"] {
            b = b.tensor(&format!("blk.{i}.{role}.weight"), GgmlType::F32, &[64]);
        }
    }
    b.build()
}

/// In an 80-column terminal every line of `inspect` (the real corpus, and a model with
/// Gemma 3's long tensor names), `tensors` and `tensors --stats` fits 80 columns, previews
/// cut with `…`; the same commands into a pipe keep their full width.
#[test]
fn output_fits_an_80_column_terminal_and_pipes_keep_full_width() {
    let dir = temp_dir("tty-width");
    let model = write(&dir, "gemma-like.gguf", &long_names());
    let mut runs: Vec<Vec<String>> = vec![
        vec!["inspect".into(), model.clone()],
        vec!["tensors".into(), model.clone()],
        // (--quiet: no progress bar drawn over the lines.)
        vec!["-q".into(), "tensors".into(), "--stats".into(), model.clone()],
    ];
    if let Some(shared) = crate::support::shared("output_fits_an_80_column_terminal") {
        for entry in std::fs::read_dir(shared.join("corpus/real")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "gguf") {
                runs.push(vec!["inspect".into(), path.to_string_lossy().into_owned()]);
            }
        }
        assert!(runs.len() > 12, "the real corpus has 12 files");
    }
    let mut cut = false;
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let Some((code, text)) = on_tty_of(&dir, 80, &args) else {
            return skipped("output_fits_an_80_column_terminal_and_pipes_keep_full_width");
        };
        assert_eq!(code, Some(0), "{args:?}\n{text}");
        let (width, line) = widest(&text);
        assert!(width <= 80, "{args:?}: a line of {width} columns:\n{line}");
        cut |= text.contains("…");
    }
    assert!(cut, "nothing was cut to fit");
    // A wider terminal shows more; a pipe shows everything.
    let (_, wide) = on_tty_of(&dir, 132, &["-q", "tensors", "--stats", &model]).unwrap();
    assert!(wide.contains("post_attention_norm") && wide.contains("shape"), "{wide}");
    for args in [&["inspect", model.as_str()][..], &["tensors", "--stats", model.as_str()]] {
        let run = crate::support::sipllm(&dir, args);
        let (width, _) = widest(&run.stdout);
        assert!(width > 80, "{args:?} into a pipe was cut:\n{}", run.stdout);
        assert!(!run.stdout.contains("…"), "{args:?} into a pipe was cut:\n{}", run.stdout);
    }
}

/// `inspect --key KEY --raw` writes a string's exact bytes into a pipe (the commands test)
/// but never a control character to a terminal: there each line is escaped.
#[test]
fn raw_values_are_escaped_on_a_terminal() {
    let dir = temp_dir("tty-raw");
    let file = sipllm_testkit::GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("llama"))
        .kv("tokenizer.chat_template", sipllm_testkit::Value::str("a\x1b[2Jb\nline two\n"))
        .build();
    let file = write(&dir, "t.gguf", &file);
    let Some((code, text)) =
        on_tty_of(&dir, 80, &["inspect", &file, "--key", "tokenizer.chat_template", "--raw"])
    else {
        return skipped("raw_values_are_escaped_on_a_terminal");
    };
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains('\x1b'), "{text:?}");
    assert!(text.starts_with("a\\u{1b}[2Jb\nline two\n"), "{text:?}");
}

/// Issue 30 items 1 and 4: the long write jobs draw a progress bar on a terminal's standard
/// error (`split`, `merge`, `convert`, `edit -o`, `read`), none with `--quiet`, and none when
/// standard error is not a terminal.
#[test]
fn long_jobs_draw_a_progress_bar_only_on_a_terminal() {
    use sipllm_gguf::GgmlType;
    let dir = temp_dir("tty-progress");
    // 16 MiB of tensor data in two tensors.
    let model = sipllm_testkit::GgufBuilder::new()
        .kv("general.architecture", sipllm_testkit::Value::str("llama"))
        .tensor("a.weight", GgmlType::F32, &[1 << 21])
        .tensor("b.weight", GgmlType::F32, &[1 << 21])
        .build();
    let model = write(&dir, "big.gguf", &model);
    let jobs: [&[&str]; 5] = [
        &["split", "big.gguf", "--max-tensors", "1", "--out-dir", "parts"],
        &["merge", "parts/big-00001-of-00002.gguf", "merged.gguf"],
        &["convert", "big.gguf", "big.llmw"],
        &["edit", "big.gguf", "-o", "edited.gguf", "--set", "general.name=str:x"],
        &["read", "big.gguf", "a.weight", "-o", "a.bin"],
    ];
    for job in jobs {
        let Some((code, text)) = on_tty_of(&dir, 100, job) else {
            return skipped("long_jobs_draw_a_progress_bar_only_on_a_terminal");
        };
        assert_eq!(code, Some(0), "{job:?}\n{text}");
        // The bar: `=====>   6.00 MiB/16.00 MiB 1.2 GiB/s eta 0s`, then cleared.
        assert!(text.contains(" eta ") && text.contains("MiB/"), "{job:?}: no bar\n{text}");
        let quiet: Vec<&str> = ["--quiet"].into_iter().chain(job.iter().copied()).collect();
        let (code, text) = on_tty_of(&dir, 100, &quiet).unwrap();
        assert_eq!(code, Some(0), "{quiet:?}\n{text}");
        assert!(!text.contains(" eta "), "{quiet:?}: a bar\n{text}");
        // Standard error a pipe: no bar.
        let run = crate::support::sipllm(&dir, job);
        assert_eq!(run.code, Some(0), "{job:?}\n{}", run.transcript());
        assert!(!run.stderr.contains(" eta ") && !run.stderr.contains('\r'), "{}", run.stderr);
    }
    assert_eq!(model, "big.gguf");
}
