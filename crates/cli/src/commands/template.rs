//! `sipllm template show|render|lint|audit`: a model's chat templates, seen, rendered as
//! transformers renders them, linted over the built-in conversation shapes and audited,
//! through `sipllm_model::template`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::json;
use sipllm_model::template::{
    self, AuditFinding, BatchCase, CaseTemplate, ChatTemplate, Moment, NamedTemplate, Options,
    RenderInput, TemplateError, TemplateValue,
};

use crate::cli::{
    AuditFormat, TemplateArgs, TemplateAuditArgs, TemplateCommand, TemplateFrom, TemplateLintArgs,
    TemplateRenderArgs, TemplateShowArgs,
};
use crate::commands::{open_or_report, usage_error};
use crate::render::escape;
use crate::{Ctx, Exit};

/// Runs `template`.
pub fn run(args: &TemplateArgs, ctx: &Ctx) -> io::Result<Exit> {
    match &args.command {
        TemplateCommand::Show(a) => show(a, ctx),
        TemplateCommand::Render(a) => render(a, ctx),
        TemplateCommand::Lint(a) => lint(a, ctx),
        TemplateCommand::Audit(a) => audit(a, ctx),
    }
}

/// What a model (or a template file) gives a render.
struct Loaded {
    /// Every template (a file: one).
    templates: Vec<NamedTemplate>,
    bos_token: Option<String>,
    eos_token: Option<String>,
}

impl Loaded {
    /// The template `--name` selects (none: the default), or the usage error naming the
    /// templates there are.
    fn select(&self, name: Option<&str>) -> Result<&NamedTemplate, Exit> {
        if let Some(t) = self.templates.iter().find(|t| t.name.as_deref() == name) {
            return Ok(t);
        }
        let have: Vec<String> = self.templates.iter().map(NamedTemplate::key).collect();
        let wanted = match name {
            Some(n) => format!("{}.{}", template::DEFAULT_KEY, escape::str(n)),
            None => template::DEFAULT_KEY.to_owned(),
        };
        Err(usage_error(&if have.is_empty() {
            format!("the model has no chat template ({wanted} is absent)")
        } else {
            format!("the model has no {wanted}; it has: {}", have.join(", "))
        }))
    }
}

fn load_model(path: &Path, parse: &crate::cli::ParseArgs, ctx: &Ctx) -> Result<Loaded, Exit> {
    let opened = open_or_report(path, &parse.settings(), ctx)?;
    let Some(source) = opened.source() else {
        return Err(usage_error("this file has no metadata to read templates from"));
    };
    let t = template::templates_of(source);
    Ok(Loaded { templates: t.templates, bos_token: t.bos_token, eos_token: t.eos_token })
}

fn load(from: &TemplateFrom, ctx: &Ctx) -> Result<Loaded, Exit> {
    match (&from.model, &from.template) {
        (Some(model), _) => load_model(model, &from.parse, ctx),
        (None, Some(file)) => {
            let bytes = read_file(file)?;
            Ok(Loaded {
                templates: vec![NamedTemplate::from_bytes(None, &bytes)],
                bos_token: None,
                eos_token: None,
            })
        }
        (None, None) => Err(usage_error("give a MODEL or --template FILE")),
    }
}

/// The most a template or JSON input file may hold (a template over 1 MiB is refused by the
/// renderer with its own error; this cap only keeps memory bounded before that).
const MAX_INPUT: u64 = 64 << 20;

/// The most a `--batch` file may hold (the 69,776 corpus cases take 70 MB).
const MAX_BATCH: u64 = 1 << 30;

/// Reads an auxiliary input (`-`: standard input) through the write side's capped reader.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let path = if path == Path::new("-") { Path::new("/dev/stdin") } else { path };
    sipllm_edit::read_capped(path, max)
        .map_err(|e| format!("cannot read {}: {e}", escape::str(&path.display().to_string())))
}

fn read_file(path: &Path) -> Result<Vec<u8>, Exit> {
    read_capped(path, MAX_INPUT).map_err(|m| usage_error(&m))
}

fn read_json(path: &Path, what: &str) -> Result<TemplateValue, Exit> {
    let bytes = read_file(path)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| usage_error(&format!("{what}: {} is not UTF-8", path.display())))?;
    TemplateValue::from_json(&text).map_err(|e| {
        usage_error(&format!("{what}: {}: {}", escape::str(&path.display().to_string()), e))
    })
}

/// Reports a template error on standard error (code, message, help); exit code 1.
fn report(e: &TemplateError) -> Exit {
    let _ = writeln!(
        io::stderr(),
        "sipllm: error[{}]: {}\n  help: {}",
        e.code(),
        escape::message(&e.to_string()),
        e.help()
    );
    Exit::Invalid
}

/// Writes `text` to standard output: exactly, unless standard output is a terminal, where
/// control and bidi characters other than newline and tab are escaped (a template can hold
/// terminal escape sequences).
fn write_text(out: &mut dyn Write, text: &str, ctx: &Ctx) -> io::Result<()> {
    if !ctx.stdout_is_tty {
        return out.write_all(text.as_bytes());
    }
    let mut safe = String::with_capacity(text.len());
    for c in text.chars() {
        if escape::is_unsafe_char(c) && c != '\n' && c != '\t' {
            let _ = write!(safe, "\\u{{{:x}}}", u32::from(c));
        } else {
            safe.push(c);
        }
    }
    out.write_all(safe.as_bytes())
}

fn show(args: &TemplateShowArgs, ctx: &Ctx) -> io::Result<Exit> {
    let loaded = match load_model(&args.model, &args.parse, ctx) {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        let templates: Vec<_> = loaded
            .templates
            .iter()
            .map(|t| {
                json!({"name": t.name, "key": t.key(), "bytes": t.len, "sha256": t.sha256, "text": t.text})
            })
            .collect();
        let doc = json!({"templates": templates, "bos_token": loaded.bos_token, "eos_token": loaded.eos_token});
        serde_json::to_writer(&mut out, &doc)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(Exit::Ok);
    }
    let selected = match loaded.select(args.name.as_deref()) {
        Ok(t) => t,
        Err(exit) => return Ok(exit),
    };
    // The listing goes to standard error, so that standard output is the text alone
    // (`sipllm template show m.gguf > t.jinja`).
    let mut listing = String::new();
    for t in &loaded.templates {
        let mark = if std::ptr::eq(t, selected) { " (shown)" } else { "" };
        let label = t.name.as_deref().map_or("default".to_owned(), |n| escape::str(n).into_owned());
        let _ = writeln!(
            listing,
            "{}: {label}, {} bytes{mark}\n  sha256 {}",
            escape::str(&t.key()),
            t.len,
            t.sha256
        );
    }
    io::stderr().write_all(listing.as_bytes())?;
    write_text(&mut out, &selected.text, ctx)?;
    out.flush()?;
    Ok(Exit::Ok)
}

/// The input every render of `args` starts from: the model's tokens, the options' clock.
fn defaults(args: &TemplateRenderArgs, loaded: Option<&Loaded>) -> Result<RenderInput, Exit> {
    let mut input = RenderInput::new(
        TemplateValue::from_json("[]").unwrap_or_else(|_| TemplateValue::string("")),
    );
    if let Some(b) = args.bos_token.clone().or_else(|| loaded.and_then(|l| l.bos_token.clone())) {
        input.bos_token = b;
    }
    if let Some(e) = args.eos_token.clone().or_else(|| loaded.and_then(|l| l.eos_token.clone())) {
        input.eos_token = e;
    }
    if let Some(now) = &args.now {
        input.now = Moment::parse(now).ok_or_else(|| {
            usage_error(&format!("--now {}: expected YYYY-MM-DDTHH:MM:SS", escape::str(now)))
        })?;
    }
    input.add_generation_prompt = args.add_generation_prompt;
    for var in &args.vars {
        let Some((key, value)) = var.split_once('=') else {
            return Err(usage_error(&format!("--var {}: expected KEY=JSON", escape::str(var))));
        };
        let value = TemplateValue::from_json(value).map_err(|e| {
            usage_error(&format!("--var {}: the value is not JSON: {e}", escape::str(key)))
        })?;
        input.vars.push((key.to_owned(), value));
    }
    Ok(input)
}

fn render(args: &TemplateRenderArgs, ctx: &Ctx) -> io::Result<Exit> {
    let loaded = match (&args.from.model, &args.from.template, &args.batch) {
        (None, None, Some(_)) => None,
        _ => match load(&args.from, ctx) {
            Ok(l) => Some(l),
            Err(exit) => return Ok(exit),
        },
    };
    let mut input = match defaults(args, loaded.as_ref()) {
        Ok(i) => i,
        Err(exit) => return Ok(exit),
    };
    let options = Options { strict: args.strict, ..Options::default() };
    let default_template = match &loaded {
        Some(l) => match l.select(args.from.name.as_deref()) {
            Ok(t) => Some(t.text.as_str()),
            Err(exit) => return Ok(exit),
        },
        None => None,
    };
    if let Some(batch) = &args.batch {
        return render_batch(batch, default_template, &input, &options);
    }
    let (Some(source), Some(messages)) = (default_template, &args.messages) else {
        return Ok(usage_error("render needs --messages FILE.json (or --batch)"));
    };
    input.messages = match read_json(messages, "--messages") {
        Ok(m) => m,
        Err(exit) => return Ok(exit),
    };
    if let Some(tools) = &args.tools {
        input.tools = match read_json(tools, "--tools") {
            Ok(t) => Some(t),
            Err(exit) => return Ok(exit),
        };
    }
    let rendered = ChatTemplate::new(source, &options).and_then(|t| t.render(&input));
    match rendered {
        Ok(text) => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            write_text(&mut out, &text, ctx)?;
            out.flush()?;
            Ok(Exit::Ok)
        }
        Err(e) => Ok(report(&e)),
    }
}

/// Cases rendered per block: the block's results are written, in order, before the next is
/// read, so that memory stays bounded whatever the file's length.
const BLOCK: usize = 4096;

fn render_batch(
    path: &Path,
    default_template: Option<&str>,
    defaults: &RenderInput,
    options: &Options,
) -> io::Result<Exit> {
    let bytes = match read_capped(path, MAX_BATCH) {
        Ok(b) => b,
        Err(m) => return Ok(usage_error(&m)),
    };
    let workers = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 16);
    let mut caches: Vec<TemplateCache<'_>> = (0..workers)
        .map(|_| TemplateCache { default_template, options, compiled: HashMap::new() })
        .collect();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut lines = bytes.split(|b| *b == b'\n');
    loop {
        let mut block = Vec::with_capacity(BLOCK);
        for line in lines.by_ref() {
            let line = String::from_utf8_lossy(line).into_owned();
            if !line.trim().is_empty() {
                block.push(line);
            }
            if block.len() == BLOCK {
                break;
            }
        }
        if block.is_empty() {
            break;
        }
        let chunk = block.len().div_ceil(workers);
        let results: Vec<Vec<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = block
                .chunks(chunk)
                .zip(caches.iter_mut())
                .map(|(lines, cache)| {
                    s.spawn(move || {
                        lines.iter().map(|l| cache.case(l, defaults)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        for line in results.iter().flatten() {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// One worker's compiled templates, by where they came from.
struct TemplateCache<'a> {
    default_template: Option<&'a str>,
    options: &'a Options,
    compiled: HashMap<CaseTemplate, Result<ChatTemplate, TemplateError>>,
}

impl TemplateCache<'_> {
    /// One case's JSON result line.
    fn case(&mut self, line: &str, defaults: &RenderInput) -> String {
        let result = BatchCase::from_json_line(line, defaults).and_then(|case| {
            let options = self.options;
            let default_template = self.default_template;
            let template = self.compiled.entry(case.template.clone()).or_insert_with(|| {
                let text = match &case.template {
                    CaseTemplate::Text(t) => t.clone(),
                    CaseTemplate::File(path) => {
                        let bytes = read_capped(path, MAX_INPUT).map_err(|message| {
                            TemplateError::Input { what: "template_file".into(), message }
                        })?;
                        String::from_utf8(bytes).map_err(|_| TemplateError::Input {
                            what: "template_file".into(),
                            message: format!("{} is not UTF-8", path.display()),
                        })?
                    }
                    CaseTemplate::Default => {
                        default_template.map(str::to_owned).ok_or_else(|| TemplateError::Input {
                            what: "case".into(),
                            message: "no template or template_file, and no MODEL or --template"
                                .into(),
                        })?
                    }
                };
                ChatTemplate::new(&text, options)
            });
            match template {
                Ok(t) => t.render(&case.input),
                Err(e) => Err(e.clone()),
            }
        });
        let doc = match result {
            Ok(text) => json!({"ok": text}),
            Err(e) => json!({"err": {"code": e.code(), "message": e.to_string()}}),
        };
        doc.to_string()
    }
}

fn lint(args: &TemplateLintArgs, ctx: &Ctx) -> io::Result<Exit> {
    let loaded = match load(&args.from, ctx) {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let selected = match loaded.select(args.from.name.as_deref()) {
        Ok(t) => t,
        Err(exit) => return Ok(exit),
    };
    let options = Options { strict: args.strict, ..Options::default() };
    let now = Moment::parse("2026-12-04T12:00:00").unwrap_or_else(Moment::now);
    let issues = match template::lint(&selected.text, &options, now) {
        Ok(i) => i,
        Err(e) => return Ok(report(&e)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for i in &issues {
        let gen_flag = if i.add_generation_prompt { " +gen" } else { "" };
        writeln!(out, "{}: {}{gen_flag}\n  {}", i.code, i.shape, escape::message(&i.message))?;
    }
    let shapes = template::shapes().len();
    writeln!(out, "{} issue(s) over {shapes} shapes x add_generation_prompt off/on", issues.len())?;
    out.flush()?;
    Ok(if issues.is_empty() { Exit::Ok } else { Exit::Invalid })
}

fn audit(args: &TemplateAuditArgs, ctx: &Ctx) -> io::Result<Exit> {
    let loaded = match load(&args.from, ctx) {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    // A model's every template is audited, unless --name picks one.
    let targets: Vec<&NamedTemplate> = match &args.from.name {
        Some(_) => match loaded.select(args.from.name.as_deref()) {
            Ok(t) => vec![t],
            Err(exit) => return Ok(exit),
        },
        None if loaded.templates.is_empty() => {
            return Ok(loaded.select(None).err().unwrap_or(Exit::Trouble));
        }
        None => loaded.templates.iter().collect(),
    };
    let origin = match (&args.from.model, &args.from.template) {
        (Some(p), _) | (None, Some(p)) => p.display().to_string(),
        _ => String::new(),
    };
    let mut results: Vec<(&NamedTemplate, Vec<AuditFinding>)> = Vec::new();
    for t in targets {
        let mut findings = template::audit(&t.text);
        if let Some(want) = &args.expect_sha256
            && t.name.is_none()
            && !want.eq_ignore_ascii_case(&t.sha256)
        {
            findings.insert(0, template::sha256_mismatch(&t.sha256, &escape::str(want)));
        }
        results.push((t, findings));
    }
    let any = results.iter().any(|(_, f)| !f.is_empty());
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        AuditFormat::Text => audit_text(&mut out, &results)?,
        AuditFormat::Json => {
            let doc: Vec<_> = results
                .iter()
                .map(|(t, f)| json!({"key": t.key(), "sha256": t.sha256, "bytes": t.len, "findings": f.iter().map(finding_json).collect::<Vec<_>>()}))
                .collect();
            serde_json::to_writer(&mut out, &json!({"templates": doc}))?;
            writeln!(out)?;
        }
        AuditFormat::Sarif => {
            serde_json::to_writer(&mut out, &sarif(&origin, &results))?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(if any { Exit::Invalid } else { Exit::Ok })
}

fn finding_json(f: &AuditFinding) -> serde_json::Value {
    json!({"code": f.code, "severity": f.severity.name(), "line": f.line, "column": f.column, "message": f.message, "help": f.help})
}

fn audit_text(
    out: &mut dyn Write,
    results: &[(&NamedTemplate, Vec<AuditFinding>)],
) -> io::Result<()> {
    for (t, findings) in results {
        writeln!(
            out,
            "{}: {} finding(s), {} bytes\n  sha256 {}",
            escape::str(&t.key()),
            findings.len(),
            t.len,
            t.sha256
        )?;
        for f in findings {
            writeln!(
                out,
                "  {}:{}: {}[{}]: {}",
                f.line,
                f.column,
                f.severity.name(),
                f.code,
                escape::message(&f.message)
            )?;
            writeln!(out, "    help: {}", f.help)?;
        }
    }
    Ok(())
}

/// SARIF 2.1.0: one run of the `sipllm template audit` tool, a rule per code seen.
fn sarif(origin: &str, results: &[(&NamedTemplate, Vec<AuditFinding>)]) -> serde_json::Value {
    let mut rules: Vec<serde_json::Value> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (t, findings) in results {
        for f in findings {
            if !seen.contains(&f.code) {
                seen.push(f.code);
                rules.push(json!({"id": f.code, "shortDescription": {"text": f.code}, "help": {"text": f.help}}));
            }
            out.push(json!({
                "ruleId": f.code,
                "level": f.severity.name(),
                "message": {"text": f.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": origin},
                        "region": {"startLine": f.line, "startColumn": f.column}
                    },
                    "logicalLocations": [{"name": t.key(), "kind": "member"}]
                }],
                "partialFingerprints": {"templateSha256": t.sha256}
            }));
        }
    }
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {"name": "sipllm template audit", "informationUri": "https://docs.rs/sipllm-model", "rules": rules}},
            "results": out
        }]
    })
}
