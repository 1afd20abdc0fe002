//! `sipllm template show|render|lint|audit` on a model built with a template and special
//! tokens, and on template files.

use std::path::Path;

use sipllm_testkit::{GgufBuilder, Value};

use crate::support::{sipllm, temp_dir};

const TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}\
{% if add_generation_prompt %}<|assistant|>{% endif %}";

fn model(dir: &Path) {
    let b = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(["<unk>", "<|begin|>", "<|end|>"]))
        .kv("tokenizer.ggml.bos_token_id", Value::Uint32(1))
        .kv("tokenizer.ggml.eos_token_id", Value::Uint32(2))
        .kv("tokenizer.chat_template", Value::str(TEMPLATE))
        .kv("tokenizer.chat_template.evil", Value::str("{{ ''.__class__.__mro__ }}"));
    std::fs::write(dir.join("m.gguf"), b.build()).unwrap();
    std::fs::write(dir.join("msgs.json"), r#"[{"role": "user", "content": "Hi"}]"#).unwrap();
}

#[test]
fn show_writes_the_stored_text_and_lists_every_template() {
    let dir = temp_dir("template-show");
    model(&dir);
    let run = sipllm(&dir, &["template", "show", "m.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, TEMPLATE);
    assert!(run.stderr.contains("tokenizer.chat_template.evil: evil, 26 bytes"), "{}", run.stderr);
    let run = sipllm(&dir, &["template", "show", "m.gguf", "--name", "nope"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("it has: tokenizer.chat_template, tokenizer.chat_template.evil"),
        "{}",
        run.stderr
    );
    // inspect shows the size and the sha256, not the text.
    let run = sipllm(&dir, &["inspect", "m.gguf"]);
    assert!(run.stdout.contains(&format!("{} bytes, sha256 ", TEMPLATE.len())), "{}", run.stdout);
}

#[test]
fn render_writes_exactly_the_prompt_with_the_models_tokens() {
    let dir = temp_dir("template-render");
    model(&dir);
    let run = sipllm(
        &dir,
        &["template", "render", "m.gguf", "--messages", "msgs.json", "--add-generation-prompt"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, "<|begin|><|user|>Hi\n<|assistant|>");
    std::fs::write(
        dir.join("t.jinja"),
        "{{ bos_token }}{{ x }}{{ raise_exception('no') if messages|length > 1 }}",
    )
    .unwrap();
    let run = sipllm(
        &dir,
        &[
            "template",
            "render",
            "--template",
            "t.jinja",
            "--messages",
            "msgs.json",
            "--var",
            "x=[1, null]",
            "--bos-token",
            "B",
        ],
    );
    assert_eq!(run.stdout, "B[1, None]", "{}", run.stderr);
    std::fs::write(
        dir.join("two.json"),
        r#"[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]"#,
    )
    .unwrap();
    let run =
        sipllm(&dir, &["template", "render", "--template", "t.jinja", "--messages", "two.json"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("model::template::raised") && run.stdout.is_empty(),
        "{}",
        run.stderr
    );
}

#[test]
fn batch_answers_each_case_in_order() {
    let dir = temp_dir("template-batch");
    model(&dir);
    std::fs::write(dir.join("t.jinja"), "{{ messages[0].content }}!").unwrap();
    let cases = [
        r#"{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}"#,
        r#"{"template_file": "t.jinja", "messages": [{"role": "user", "content": "one"}]}"#,
        r#"{"template": "{% for %}", "messages": []}"#,
        r#"{"template": "{{ bos_token }}", "messages": [], "bos_token": "<x>"}"#,
        r#"not json"#,
    ];
    std::fs::write(dir.join("cases.jsonl"), cases.join("\n")).unwrap();
    let run = sipllm(&dir, &["template", "render", "m.gguf", "--batch", "cases.jsonl"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<serde_json::Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["ok"], "<|begin|><|user|>Hi\n<|assistant|>");
    assert_eq!(lines[1]["ok"], "one!");
    assert_eq!(lines[2]["err"]["code"], "model::template::syntax");
    assert_eq!(lines[3]["ok"], "<x>");
    assert_eq!(lines[4]["err"]["code"], "model::template::input");
}

#[test]
fn audit_exits_by_its_findings_in_every_format() {
    let dir = temp_dir("template-audit");
    model(&dir);
    let run = sipllm(&dir, &["template", "audit", "m.gguf", "--name", "evil"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.contains("error[model::audit::dunder]"), "{}", run.stdout);
    let run = sipllm(&dir, &["template", "audit", "m.gguf", "--format", "sarif"]);
    assert_eq!(run.code, Some(1));
    let sarif: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "model::audit::dunder");
    std::fs::write(dir.join("t.jinja"), TEMPLATE).unwrap();
    let run = sipllm(&dir, &["template", "audit", "--template", "t.jinja", "--format", "json"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sha = doc["templates"][0]["sha256"].as_str().unwrap().to_owned();
    let run =
        sipllm(&dir, &["template", "audit", "--template", "t.jinja", "--expect-sha256", &sha]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let run =
        sipllm(&dir, &["template", "audit", "--template", "t.jinja", "--expect-sha256", "00"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.contains("model::audit::sha256_mismatch"), "{}", run.stdout);
    let run = sipllm(&dir, &["template", "audit", "--template", "missing.jinja"]);
    assert_eq!(run.code, Some(2));
}

#[test]
fn lint_reports_and_exits_one() {
    let dir = temp_dir("template-lint");
    std::fs::write(dir.join("t.jinja"), "{% for m in messages %}{{ m.role }}{% endfor %}").unwrap();
    let run = sipllm(&dir, &["template", "lint", "--template", "t.jinja"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("model::lint::missing_content")
            && run.stdout.contains("model::lint::generation_prompt_ignored"),
        "{}",
        run.stdout
    );
}
