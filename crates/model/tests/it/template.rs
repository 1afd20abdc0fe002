//! Chat templates: the profile's Python behaviour, the bounds on hostile templates (by error
//! kind and memory, never by time), the audit and the lint, and a model's templates.

use std::time::Duration;

use sipllm_model::template::{
    ChatTemplate, Limits, Moment, Options, RenderInput, TemplateError, TemplateValue, audit, lint,
    templates_of,
};
use sipllm_streaming::{MemSource, Model, OpenOptions};
use sipllm_testkit::{GgufBuilder, Value};

use crate::alloc::peak_during;
use crate::common::shared_dir;

/// The memory a hostile template may take.
const MIB_64: usize = 64 << 20;

fn render_with(source: &str, messages: &str, options: &Options) -> Result<String, TemplateError> {
    let t = ChatTemplate::new(source, options)?;
    let mut input = RenderInput::new(TemplateValue::from_json(messages)?);
    input.now = Moment::parse("2026-12-04T12:00:00").unwrap();
    t.render(&input)
}

fn render(source: &str, messages: &str) -> Result<String, TemplateError> {
    render_with(source, messages, &Options::default())
}

const HELLO: &str = r#"[{"role": "user", "content": "Hi"}]"#;

#[test]
fn prints_values_as_python_does() {
    let msgs = r#"[{"role": "assistant", "content": null, "args": {"a": true, "b": null, "c": [1.0, "x"]}}]"#;
    let out = render("{% for m in messages %}{{ m.content }}|{{ m.args }}|{{ m.args.a }}|{{ m.args|string }}{% endfor %}", msgs).unwrap();
    assert_eq!(
        out,
        "None|{'a': True, 'b': None, 'c': [1.0, 'x']}|True|{'a': True, 'b': None, 'c': [1.0, 'x']}"
    );
}

#[test]
fn tojson_takes_transformers_keyword_arguments() {
    let msgs = r#"[{"b": 1, "a": "<é>"}]"#;
    assert_eq!(render("{{ messages[0]|tojson }}", msgs).unwrap(), r#"{"b": 1, "a": "<é>"}"#);
    assert_eq!(
        render("{{ messages[0]|tojson(sort_keys=true, ensure_ascii=true) }}", msgs).unwrap(),
        r#"{"a": "<\u00e9>", "b": 1}"#
    );
    assert_eq!(
        render("{{ messages[0]|tojson(indent=1, separators=(',', ':')) }}", msgs).unwrap(),
        "{\n \"b\":1,\n \"a\":\"<é>\"\n}"
    );
}

#[test]
fn generation_blocks_render_their_body() {
    let src =
        "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}";
    assert_eq!(render(src, HELLO).unwrap(), "[Hi]");
}

#[test]
fn iterable_test_and_length_follow_python() {
    let src =
        "{{ 'ab' is iterable }} {{ 3 is iterable }} {{ none is iterable }} {{ nothing|length }}";
    assert_eq!(render(src, HELLO).unwrap(), "True False False 0");
}

#[test]
fn the_render_gets_transformers_variables() {
    let src = "{{ bos_token }}{{ messages[0].content }}{% if add_generation_prompt %}>{% endif %}{{ eos_token }}\
               {{ strftime_now('%d %b %Y') }}{{ tools is defined }}{{ enable_thinking }}";
    let t = ChatTemplate::new(src, &Options::default()).unwrap();
    let mut input = RenderInput::new(TemplateValue::from_json(HELLO).unwrap());
    input.add_generation_prompt = true;
    input.bos_token = "<B>".into();
    input.eos_token = "<E>".into();
    input.now = Moment::parse("2026-12-04T12:00:00").unwrap();
    input.vars.push(("enable_thinking".into(), TemplateValue::from(false)));
    assert_eq!(t.render(&input).unwrap(), "<B>Hi><E>04 Dec 2026FalseFalse");
    // Trailing newline dropped, trim_blocks and lstrip_blocks on: Jinja2 as transformers sets it.
    assert_eq!(render("  {% if true %}\nx\n  {% endif %}\n", HELLO).unwrap(), "x\n");
}

#[test]
fn raise_exception_is_its_own_error() {
    let e = render("{{ raise_exception('roles must alternate') }}", HELLO).unwrap_err();
    assert_eq!(e.code(), "model::template::raised");
    assert!(
        matches!(&e, TemplateError::Raised { message, line: Some(1) } if message == "roles must alternate"),
        "{e:?}"
    );
}

#[test]
fn strict_raises_where_python_raises() {
    let src = "{% for c in messages[0].content %}{{ c }}{% endfor %}{{ nothing|tojson }}";
    let msgs = r#"[{"role": "assistant", "content": null}]"#;
    assert_eq!(render(src, msgs).unwrap(), "null");
    let strict = Options { strict: true, ..Options::default() };
    let e = render_with(src, msgs, &strict).unwrap_err();
    assert_eq!(e.code(), "model::template::strict");
    let e = render_with("{{ nothing|tojson }}", msgs, &strict).unwrap_err();
    assert!(
        matches!(&e, TemplateError::Strict { message, .. } if message.contains("Undefined")),
        "{e:?}"
    );
}

#[test]
fn bad_syntax_and_bad_input_are_typed() {
    let e = ChatTemplate::new("{% for %}", &Options::default()).unwrap_err();
    assert_eq!(e.code(), "model::template::syntax");
    assert!(matches!(e, TemplateError::Syntax { line: Some(1), .. }));
    assert_eq!(TemplateValue::from_json("[1,").unwrap_err().code(), "model::template::input");
}

// The hostile templates of the issue: each ends in its typed error, within 64 MiB.

fn hostile(source: &str) -> (TemplateError, usize) {
    let (result, peak) = peak_during(|| render(source, HELLO));
    (result.expect_err("a hostile template must fail"), peak)
}

#[test]
fn nested_loops_of_a_trillion_iterations_run_out_of_fuel() {
    let src = "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}";
    let (e, peak) = hostile(src);
    assert!(
        matches!(e, TemplateError::OutOfFuel { fuel, .. } if fuel == Limits::default().fuel),
        "{e:?}"
    );
    assert!(peak < MIB_64, "{peak} bytes");
}

#[test]
fn a_self_recursive_macro_hits_the_recursion_limit() {
    let (e, peak) = hostile("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    assert_eq!(e.code(), "model::template::recursion", "{e:?}");
    assert!(peak < MIB_64, "{peak} bytes");
}

#[test]
fn a_gigabyte_string_is_refused_before_it_is_built() {
    let (e, peak) = hostile("{{ 'x' * 10**9 }}");
    assert_eq!(e.code(), "model::template::render", "{e:?}");
    assert!(e.to_string().contains("too large"), "{e}");
    assert!(peak < MIB_64, "{peak} bytes");
}

#[test]
fn a_ten_megabyte_template_is_refused_unparsed() {
    let src = "x".repeat(10 << 20);
    let (result, peak) = peak_during(|| ChatTemplate::new(&src, &Options::default()));
    let e = result.unwrap_err();
    assert!(matches!(e, TemplateError::TooLarge { len, .. } if len == 10 << 20), "{e:?}");
    assert_eq!(e.code(), "model::template::too_large");
    assert_eq!(
        e.to_string(),
        format!("the template is {} bytes, more than the limit of {} bytes", 10 << 20, 1 << 20)
    );
    assert!(peak < MIB_64, "{peak} bytes");
    // One byte under the limit is compiled; at the limit plus one, refused.
    let limits = Limits { max_source: 16, ..Limits::default() };
    let options = Options { limits, strict: false };
    assert!(ChatTemplate::new(&"x".repeat(16), &options).is_ok());
    let e = ChatTemplate::new(&"x".repeat(17), &options).unwrap_err();
    assert_eq!(e, TemplateError::TooLarge { len: 17, limit: 16 });
}

#[test]
fn fifty_thousand_nested_ifs_are_refused_by_the_parser() {
    let src = format!("{}x{}", "{%if 1%}".repeat(50_000), "{%endif%}".repeat(50_000));
    let (result, peak) = peak_during(|| ChatTemplate::new(&src, &Options::default()));
    let e = result.unwrap_err();
    assert_eq!(e.code(), "model::template::recursion", "{e:?}");
    assert!(peak < MIB_64, "{peak} bytes");
}

#[test]
fn dunder_chains_reach_nothing() {
    let (e, peak) = hostile("{{ ''.__class__.__mro__[1].__subclasses__() }}");
    assert_eq!(e.code(), "model::template::render", "{e:?}");
    assert!(peak < MIB_64, "{peak} bytes");
    // One level prints nothing: minijinja has no Python object behind a value.
    assert_eq!(render("{{ ''.__class__ }}{{ messages.__len__ }}", HELLO).unwrap(), "");
}

#[test]
fn output_is_capped() {
    let (e, peak) = hostile("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}");
    assert!(matches!(e, TemplateError::OutputTooLarge { limit } if limit == 1 << 20), "{e:?}");
    assert_eq!(e.code(), "model::template::output_too_large");
    assert!(e.to_string().contains("larger than the limit of 1048576 bytes"), "{e}");
    assert!(peak < MIB_64, "{peak} bytes");
    // The cap is the option's: 10 bytes fit a limit of 10, 11 do not.
    let options = Options { limits: Limits { max_output: 10, ..Limits::default() }, strict: false };
    assert_eq!(render_with("{{ 'x' * 10 }}", HELLO, &options).unwrap(), "x".repeat(10));
    let e = render_with("{{ 'x' * 11 }}", HELLO, &options).unwrap_err();
    assert_eq!(
        (e.code(), e),
        ("model::template::output_too_large", TemplateError::OutputTooLarge { limit: 10 })
    );
}

#[test]
fn the_time_limit_is_a_typed_error() {
    // A one-nanosecond limit, and a loop of 100 000 prints (each print reads the clock) that
    // no other bound stops: the fuel is ample and the output (200 KB) under its cap. The
    // clock advances across the prints however fast or loaded the machine is, so the render
    // ends in the time limit, never in a race.
    let limits = Limits { time: Duration::from_nanos(1), fuel: 1_000_000_000, ..Limits::default() };
    let options = Options { limits, strict: false };
    let src = "{% for i in range(100000) %}{{ messages[0].content }}{% endfor %}";
    let e = render_with(src, HELLO, &options).unwrap_err();
    assert!(matches!(e, TemplateError::Timeout { .. }), "{e:?}");
    assert_eq!(e.code(), "model::template::timeout");
    assert_eq!(e, TemplateError::Timeout { limit: Duration::from_nanos(1) });
    assert_eq!(e.to_string(), "the render took longer than 1ns");
    // The same render with a minute to run finishes: the limit alone stopped it.
    let options =
        Options { limits: Limits { time: Duration::from_secs(60), ..limits }, strict: false };
    assert_eq!(render_with(src, HELLO, &options).unwrap().len(), 200_000);
}

#[test]
fn the_audit_finds_every_hostile_probe() {
    let probes = [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "model::audit::unbounded_loop",
        ),
        (
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "model::audit::unbounded_recursion",
        ),
        ("{{ 'x' * 10**9 }}", "model::audit::huge_repetition"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "model::audit::dunder"),
        ("{% include 'secrets.txt' %}", "model::audit::include"),
        ("{{ cycler.__init__.__globals__.os.popen('id').read() }}", "model::audit::code_execution"),
    ];
    for (src, code) in probes {
        assert!(audit(src).iter().any(|f| f.code == code), "{code} not found in {src}");
    }
    // A frame attribute, without a dunder: the introspection chain, where it is.
    let findings = audit("Hello\n  {{ loop.gi_frame.f_back }}");
    let at: Vec<_> =
        findings.iter().map(|f| (f.code, f.line, f.column, f.message.as_str())).collect();
    assert_eq!(
        at,
        [
            (
                "model::audit::introspection",
                2,
                11,
                "attribute `gi_frame` reaches Python's internals"
            ),
            ("model::audit::introspection", 2, 20, "attribute `f_back` reaches Python's internals"),
        ]
    );
    assert!(findings.iter().all(|f| f.severity == sipllm_model::template::Severity::Error));
    // The same names as variables, or as text, are no attribute access.
    assert!(audit("{% set f_back = 1 %}{{ f_back }} mro gi_frame").is_empty());
    assert!(audit(&"x".repeat(10 << 20)).iter().any(|f| f.code == "model::audit::too_large"));
    let deep = format!("{}x{}", "{%if 1%}".repeat(50_000), "{%endif%}".repeat(50_000));
    assert!(audit(&deep).iter().any(|f| f.code == "model::audit::deep_nesting"));
}

#[test]
fn the_audit_finds_nothing_in_real_templates() {
    let Some(shared) = shared_dir("the_audit_finds_nothing_in_real_templates") else { return };
    let mut n = 0;
    for entry in std::fs::read_dir(shared.join("templates/templates")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let findings = audit(&text);
        assert!(findings.is_empty(), "{}: {findings:?}", path.display());
        n += 1;
    }
    assert_eq!(n, 712);
}

#[test]
fn lint_reports_what_renders_oddly() {
    let now = Moment::parse("2026-12-04T12:00:00").unwrap();
    // Llama 3's template (testkit's copy) is clean on the built-in shapes but for the tool
    // shapes, where it prints a null `content`.
    let good = sipllm_testkit::llama3::chat_template();
    let issues = lint(&good, &Options::default(), now).unwrap();
    assert!(issues.iter().all(|i| i.code != "model::lint::error"), "{issues:?}");
    // Ignores add_generation_prompt, drops the user's text, iterates a null content.
    let bad = "{% for m in messages %}{% for c in m.content %}{% endfor %}{{ m.role }}{% endfor %}";
    let issues = lint(bad, &Options::default(), now).unwrap();
    let codes: Vec<&str> = issues.iter().map(|i| i.code).collect();
    for code in [
        "model::lint::generation_prompt_ignored",
        "model::lint::missing_content",
        "model::lint::strict",
    ] {
        assert!(codes.contains(&code), "{code} not in {codes:?}");
    }
}

#[test]
fn lint_reports_empty_refused_and_none_prompts() {
    let now = Moment::parse("2026-12-04T12:00:00").unwrap();
    let names: Vec<String> = sipllm_model::template::shapes().into_iter().map(|s| s.name).collect();
    assert!(names.len() >= 9, "{names:?}");
    let of = |issues: &[sipllm_model::template::LintIssue], code: &str| -> Vec<(String, bool)> {
        issues
            .iter()
            .filter(|i| i.code == code)
            .map(|i| (i.shape.clone(), i.add_generation_prompt))
            .collect()
    };
    // A template that prints nothing: every shape, both ways, renders an empty prompt.
    let issues = lint("{% if false %}x{% endif %}", &Options::default(), now).unwrap();
    let empty = of(&issues, "model::lint::empty");
    let every: Vec<(String, bool)> =
        names.iter().flat_map(|n| [(n.clone(), false), (n.clone(), true)]).collect();
    assert_eq!(empty, every, "{issues:?}");
    assert!(
        issues
            .iter()
            .filter(|i| i.code == "model::lint::empty")
            .all(|i| i.message == "the prompt is empty")
    );
    // An empty prompt is not also reported for missing the user's text.
    assert!(of(&issues, "model::lint::missing_content").is_empty(), "{issues:?}");

    // A template that refuses conversations of more than one message.
    let refusing = "{% if messages|length > 1 %}{{ raise_exception('one message only') }}{% endif %}\
                    {% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";
    let issues = lint(refusing, &Options::default(), now).unwrap();
    let refused = of(&issues, "model::lint::refused");
    assert!(
        refused.contains(&("plain".into(), false)) && refused.contains(&("plain".into(), true)),
        "{refused:?}"
    );
    assert!(!refused.iter().any(|(s, _)| s == "no_system"), "{refused:?}");
    for i in issues.iter().filter(|i| i.code == "model::lint::refused") {
        assert!(i.message.contains("one message only"), "{i:?}");
    }
    // A refusal is not an engine error.
    assert!(of(&issues, "model::lint::error").is_empty(), "{issues:?}");

    // A template printing every message's content prints the tool call's null as `None`.
    let issues = lint(
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
        &Options::default(),
        now,
    )
    .unwrap();
    let none = of(&issues, "model::lint::prints_none");
    assert!(
        none.contains(&("tool_call".into(), false)) && none.contains(&("tool_call".into(), true)),
        "{issues:?}"
    );
    assert!(!none.iter().any(|(s, _)| s == "plain" || s == "no_system"), "{none:?}");
    // Printing the content only when there is one prints no `None`.
    let guarded = "{% for m in messages %}{{ m.role }}: {% if m.content is not none %}{{ m.content }}{% endif %}\n{% endfor %}";
    let issues = lint(guarded, &Options::default(), now).unwrap();
    assert!(of(&issues, "model::lint::prints_none").is_empty(), "{issues:?}");
}

#[test]
fn a_models_templates_and_special_tokens_come_from_its_metadata() {
    let b = GgufBuilder::new()
        .kv("tokenizer.ggml.tokens", Value::strings(["<unk>", "<|begin|>", "<|end|>"]))
        .kv("tokenizer.ggml.bos_token_id", Value::Uint32(1))
        .kv("tokenizer.ggml.eos_token_id", Value::Uint32(2))
        .kv("tokenizer.chat_template", Value::str("{{ bos_token }}x"))
        .kv("tokenizer.chat_template.tool_use", Value::str("{{ tools }}"));
    let model = Model::from_source(MemSource::new(b.build()), &OpenOptions::default()).unwrap();
    let t = templates_of(&model);
    assert_eq!(t.bos_token.as_deref(), Some("<|begin|>"));
    assert_eq!(t.eos_token.as_deref(), Some("<|end|>"));
    let names: Vec<Option<&str>> = t.templates.iter().map(|t| t.name.as_deref()).collect();
    assert_eq!(names, [None, Some("tool_use")]);
    let default = t.get(None).unwrap();
    assert_eq!(default.text, "{{ bos_token }}x");
    assert_eq!(default.len, 16);
    // sha256 of the stored bytes (Python: hashlib.sha256(b"{{ bos_token }}x").hexdigest()).
    assert_eq!(default.sha256, "11af709206b5aaf5a13a40b671ca2fbe26925b46c5c7d2401d46a6057e1377ef");
}
