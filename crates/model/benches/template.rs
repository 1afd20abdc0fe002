//! One chat-template render: Llama 3's template (testkit's copy, 4 KB of Jinja) over a
//! six-message conversation, and the same with a tool call; compiling the template apart.
//!
//! `cargo bench -p sipllm-model --bench template` (figures in docs/benchmarks.md).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sipllm_model::template::{ChatTemplate, Moment, Options, RenderInput, TemplateValue};

const PLAIN: &str = r#"[
  {"role": "system", "content": "You are a careful assistant."},
  {"role": "user", "content": "Hello."},
  {"role": "assistant", "content": "Hi. How can I help?"},
  {"role": "user", "content": "What is 2+2?"},
  {"role": "assistant", "content": "Four."},
  {"role": "user", "content": "And 3+3?"}]"#;

fn bench(c: &mut Criterion) {
    let source = sipllm_testkit::llama3::chat_template();
    let options = Options::default();
    c.bench_function("template/compile_llama3", |b| {
        b.iter(|| ChatTemplate::new(black_box(&source), &options).expect("compiles"))
    });
    let template = ChatTemplate::new(&source, &options).expect("compiles");
    let mut input = RenderInput::new(TemplateValue::from_json(PLAIN).expect("JSON"));
    input.add_generation_prompt = true;
    input.now = Moment::parse("2026-12-04T12:00:00").expect("a time");
    c.bench_function("template/render_llama3_6_messages", |b| {
        b.iter(|| template.render(black_box(&input)).expect("renders"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
