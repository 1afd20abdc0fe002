//! `sipllm inspect [FILE]`: the summary, the metadata table and the tensor table, or the
//! `--json` document.

use std::io::{self, BufWriter, Write};

use sipllm_model::config::{ConfigError, ModelConfig, PerLayer, SlidingWindowPattern};
use sipllm_model::ftype::Quantization;

use crate::cli::InspectArgs;
use crate::commands::{compile_filter, keep, open_or_report, report_open_error};
use crate::diagnostic::{FileDiagnostic, Renderer};
use crate::glob::Glob;
use crate::open::{Format, SAMPLE_NAME, open_sample};
use crate::render::escape;
use crate::render::json::{ArrayMode, InspectDoc, write_line};
use crate::render::table::{Align, Cut, Table, cut, fit_line, text_width};
use crate::render::value::{Budget, group, human_bytes, human_count, one_line, type_name};
use crate::view::{SetView, TensorRow, Val, View, Weights, weights};
use crate::{Ctx, Exit};

/// Runs `inspect`.
pub fn run(args: &InspectArgs, ctx: &Ctx) -> io::Result<Exit> {
    let filter = match compile_filter(args.filter.as_deref()) {
        Ok(f) => f,
        Err(exit) => return Ok(exit),
    };
    let settings = args.parse.settings();
    let opened = match &args.file {
        Some(path) => match open_or_report(path, &settings, ctx) {
            Ok(o) => o,
            Err(exit) => return Ok(exit),
        },
        None => match open_sample(&settings) {
            Ok(o) => o,
            // Only a strict-er profile than the sample satisfies can get here.
            Err(e) => return Ok(report_open_error(SAMPLE_NAME.as_ref(), &e, ctx)),
        },
    };
    // On standard error, so `--json` stays pure JSON and the report itself is the file's.
    if let Some(path) = &args.file {
        let renderer = Renderer { color: ctx.color_stderr, width: ctx.width };
        for (file, backup) in crate::commands::pending_backups(path, &opened) {
            let finding = crate::commands::pending_backup_finding(&file, &backup);
            let diag = FileDiagnostic::new(finding, &crate::open::shown_name(&file), None);
            let _ = io::stderr().write_all(renderer.render(&diag).as_bytes());
        }
    }
    let view = crate::view::of(&opened);
    if let Some(key) = &args.key {
        return one_key(&view, opened.name(), key, args.raw, ctx);
    }
    let config = crate::view::config(&opened);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.file.is_none() {
        let note = format!(
            "(no FILE given: inspecting {SAMPLE_NAME}, the sample bundled with sipllm; \
             try `sipllm inspect MODEL.gguf`)"
        );
        if args.json {
            // Keep standard output pure JSON.
            let _ = writeln!(io::stderr(), "{note}");
        } else {
            writeln!(out, "{note}")?;
        }
    }
    let entries: Vec<_> = view.entries.iter().filter(|e| keep(filter.as_ref(), e.key)).collect();
    let tensors: Vec<_> = view.tensors.iter().filter(|t| keep(filter.as_ref(), t.name)).collect();
    if args.json {
        let arrays = match (args.no_arrays, args.array_limit) {
            (true, _) => ArrayMode::Limit(0),
            (false, Some(n)) => ArrayMode::Limit(n),
            (false, None) => ArrayMode::Full,
        };
        let tensors = (!args.no_tensors).then_some(tensors);
        let doc = InspectDoc::new(&view, &config, entries, tensors, arrays);
        write_line(&mut out, &doc)?;
    } else {
        let budget = if args.full { Budget::FULL } else { Budget::SHORT };
        // On a terminal, every line fits its width; `--full` and pipes keep every character.
        let fit = if args.full { None } else { ctx.fit };
        summary(&mut out, opened.name(), &view, &config, budget, fit)?;
        metadata(&mut out, &view, &entries, filter.as_ref(), budget, fit)?;
        if !args.no_tensors {
            tensor_section(&mut out, &view, &tensors, filter.as_ref(), fit)?;
        }
        warnings(&mut out, &view, fit)?;
        llama_cpp(&mut out, &opened, fit)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// `inspect --key KEY [--raw]`: one value alone. A key the file lacks is a usage error (exit
/// code 2) naming the nearest key there is.
fn one_key(view: &View<'_>, name: &str, key: &str, raw: bool, ctx: &Ctx) -> io::Result<Exit> {
    let Some(value) = view.get(key) else {
        let keys = view.entries.iter().map(|e| e.key);
        let hint = crate::commands::did_you_mean(key.as_bytes(), keys);
        return Ok(crate::commands::usage_error(&format!(
            "{} has no metadata key {}{hint} (`sipllm inspect {}` lists them)",
            escape::str(name),
            escape::quoted(key.as_bytes()),
            escape::str(name),
        )));
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if !raw {
        writeln!(out, "{}", one_line(value, Budget::FULL))?;
        return Ok(Exit::Ok);
    }
    let bytes: Vec<u8> = match value {
        Val::Str(s) => s.to_vec(),
        Val::Array(a) => {
            return Ok(crate::commands::usage_error(&format!(
                "--raw prints one string or number, and {} is an array of {} {} (without \
                 --raw: every element, escaped; --json --filter KEY: as JSON)",
                escape::quoted(key.as_bytes()),
                group(a.len),
                a.elem_type
            )));
        }
        scalar => one_line(scalar, Budget::FULL).into_bytes(),
    };
    if ctx.stdout_is_tty {
        // Exact bytes are for pipes and files: a terminal gets each line escaped.
        let lines: Vec<String> =
            bytes.split(|&b| b == b'\n').map(|l| escape::text(l).into_owned()).collect();
        out.write_all(lines.join("\n").as_bytes())?;
    } else {
        out.write_all(&bytes)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

fn summary(
    out: &mut dyn Write,
    name: &str,
    view: &View<'_>,
    (config, problems): &(ModelConfig, Vec<ConfigError>),
    budget: Budget,
    fit: Option<usize>,
) -> io::Result<()> {
    let s = &view.summary;
    let format = match s.format {
        Format::Gguf => "GGUF",
        Format::Llmw => "LLMW",
        other => other.label(),
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("file", escape::str(name).into_owned()),
        ("format", format!("{format} v{}, {}-endian", s.version, s.endian)),
        ("file size", bytes_for_people(s.file_size)),
        ("alignment", s.alignment.to_string()),
        ("data offset", format!("{} (0x{:x})", group(s.data_offset), s.data_offset)),
        ("metadata", format!("{} key/value pairs", group(s.kv_count))),
        ("tensors", group(s.tensor_count)),
    ];
    if let Some(set) = &view.split {
        // The header facts are the first shard's; sizes and counts are the whole set's.
        let n = set.files.len();
        rows.insert(1, ("split", format!("set of {n} files (file 1 holds the metadata)")));
        if let Some(row) = rows.iter_mut().find(|(label, _)| *label == "file size") {
            row.1 = format!("{} in {n} files", bytes_for_people(s.file_size));
        }
        if let Some(row) = rows.iter_mut().find(|(label, _)| *label == "tensors") {
            row.1 = format!("{} in {n} files", group(s.tensor_count));
        }
    }
    for (label, key) in [("architecture", "general.architecture"), ("name", "general.name")] {
        if let Some(v) = view.get(key) {
            rows.push((label, short(v)));
        }
    }
    if let Some(label) = file_type_label(config.quantization) {
        rows.push(("file type", label));
    }
    write_pairs(out, &rows, "", fit)?;
    if let Some(set) = &view.split {
        set_files(out, set, fit)?;
    }

    let mut hyper = hyperparameters(config, budget);
    // What llama.cpp would refuse the file for: the required keys missing, in one row.
    let missing: Vec<String> = problems
        .iter()
        .filter(|e| matches!(e, ConfigError::Missing { .. }))
        .map(|e| escape::name(e.key().as_bytes()).into_owned())
        .collect();
    if !missing.is_empty() {
        hyper.push(("missing", format!("{} (llama.cpp requires them)", missing.join(", "))));
    }
    if !hyper.is_empty() || !problems.is_empty() {
        writeln!(out, "\nhyperparameters")?;
        write_pairs(out, &hyper, "  ", fit)?;
        // A value of the wrong type or range: its field is left out above.
        for e in problems.iter().filter(|e| !matches!(e, ConfigError::Missing { .. })) {
            let message = escape::message(&e.to_string()).into_owned();
            writeln!(out, "{}", fit_line(&format!("  note: {message} ({})", e.code()), fit))?;
        }
    }

    special_tokens(out, view, fit)?;
    if !view.tensors.is_empty() {
        parameters(out, &view.tensors, fit)?;
    }
    Ok(())
}

/// The special tokens by role, id and text (`bos  2  "<bos>"`), escaped.
fn special_tokens(out: &mut dyn Write, view: &View<'_>, fit: Option<usize>) -> io::Result<()> {
    let tokens = view.special_tokens();
    if tokens.is_empty() {
        return Ok(());
    }
    let vocabulary = view.get("tokenizer.ggml.tokens").is_some();
    writeln!(out, "\nspecial tokens")?;
    let mut table =
        Table::new(&[("role", Align::Left), ("id", Align::Right), ("text", Align::Left)]);
    for t in &tokens {
        let text = match t.text {
            Some(text) => escape::quoted(text),
            None if vocabulary => "(not in the vocabulary)".to_owned(),
            None => "(no vocabulary)".to_owned(),
        };
        table.row(vec![escape::name(t.role).into_owned(), t.id.to_string(), text]);
    }
    // No header row: the block's title says what the columns are.
    table.shrinkable("text", 16, Cut::End).shrinkable("role", 12, Cut::Middle).headless();
    table.write_fit(out, "  ", fit).map(drop)
}

/// What llama.cpp's loader makes of the file: `validate --model`'s findings, one line each.
fn llama_cpp(
    out: &mut dyn Write,
    opened: &crate::open::Opened,
    fit: Option<usize>,
) -> io::Result<()> {
    let Some(model) = opened.model() else {
        return writeln!(out, "\nllama.cpp: not checked (the tensor data is not all in the file)");
    };
    let report = sipllm_model::load::check(model);
    let arch = match (&report.arch, report.known_arch) {
        (Some(a), true) => escape::str(a).into_owned(),
        (Some(a), false) => format!("{} (unknown to llama.cpp)", escape::str(a)),
        (None, _) => String::new(),
    };
    match &report.arch {
        Some(_) => {
            let line = format!("llama.cpp 0c1e570 {} (architecture {arch})", report.verdict());
            writeln!(out, "\n{}", fit_line(&line, fit))?
        }
        None => writeln!(out, "\nllama.cpp 0c1e570 {}", report.verdict())?,
    }
    // The first few; `validate --model` explains each over the file's bytes.
    const SHOWN: usize = 5;
    for f in report.findings.iter().take(SHOWN) {
        let message = escape::message(&f.message()).into_owned();
        let line = match f.path().is_empty() {
            true => format!("  {}: {message}", f.code()),
            false => {
                format!("  {}: {}: {message}", f.code(), escape::message(&f.path().to_string()))
            }
        };
        writeln!(out, "{}", fit_line(&line, fit))?;
    }
    if report.findings.len() > SHOWN {
        let more = report.findings.len() - SHOWN;
        writeln!(out, "  … {more} more: sipllm validate --model FILE")?;
    }
    Ok(())
}

/// The files of a split set: number (as in the names), path, tensors, size.
fn set_files(out: &mut dyn Write, set: &SetView, fit: Option<usize>) -> io::Result<()> {
    writeln!(out, "\nfiles ({})", set.files.len())?;
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("file", Align::Left),
        ("tensors", Align::Right),
        ("bytes", Align::Right),
    ]);
    for (i, f) in set.files.iter().enumerate() {
        table.row(vec![
            (i + 1).to_string(),
            escape::str(&f.name).into_owned(),
            group(f.tensors as u64),
            group(f.file_size),
        ]);
    }
    table.shrinkable("file", 20, Cut::Middle);
    table.write_fit(out, "  ", fit).map(drop)
}

/// `7,296 bytes (7.12 KiB)`, or `269 bytes` when the unit adds nothing.
fn bytes_for_people(n: u64) -> String {
    if n < 1024 {
        format!("{} bytes", group(n))
    } else {
        format!("{} bytes ({})", group(n), human_bytes(n))
    }
}

/// A value for the summary: one short line, escaped.
fn short(v: &Val<'_>) -> String {
    match v {
        // Plain text reads better without quotes here (it is escaped all the same).
        Val::Str(s) => {
            let mut text = String::new();
            let cut = escape::push(&mut text, s, escape::Style::Bare, 64);
            if cut {
                text.push('…');
            }
            text
        }
        other => one_line(other, Budget::SHORT),
    }
}

/// `label  value` lines, the labels padded alike; on a terminal (`fit`) each value is cut
/// with `…` to the width (a file name in the middle, keeping its end).
fn write_pairs(
    out: &mut dyn Write,
    rows: &[(&str, String)],
    indent: &str,
    fit: Option<usize>,
) -> io::Result<()> {
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    for (label, value) in rows {
        let value = match fit {
            Some(w) => {
                let room = w.saturating_sub(indent.len() + width + 2).max(16);
                cut(value, room, if *label == "file" { Cut::Middle } else { Cut::End })
            }
            None => value.clone(),
        };
        writeln!(out, "{indent}{label:<width$}  {value}")?;
    }
    Ok(())
}

/// Total parameters, bytes per ggml type and bits per weight.
fn parameters(
    out: &mut dyn Write,
    tensors: &[TensorRow<'_>],
    fit: Option<usize>,
) -> io::Result<()> {
    let (total, by_type) = weights(tensors);
    let bpw =
        |w: &Weights| w.bits_per_weight().map_or_else(|| "-".to_owned(), |b| format!("{b:.2}"));
    let mut pairs = vec![("parameters", group(total.params))];
    if total.params >= 100_000 {
        pairs[0].1 = format!("{} ({})", group(total.params), human_count(total.params));
    }
    if total.unknown_size == 0 {
        pairs.push(("bytes", bytes_for_people(total.bytes)));
    }
    pairs.push(("bits/weight", bpw(&total)));
    writeln!(out, "\nweights")?;
    write_pairs(out, &pairs, "  ", fit)?;
    let mut table = Table::new(&[
        ("type", Align::Left),
        ("tensors", Align::Right),
        ("parameters", Align::Right),
        ("bytes", Align::Right),
        ("size", Align::Right),
        ("bits/weight", Align::Right),
    ]);
    for (ty, w) in &by_type {
        let bytes = if w.unknown_size > 0 { "unknown".to_owned() } else { group(w.bytes) };
        table.row(vec![
            type_name(*ty),
            group(w.tensors),
            group(w.params),
            bytes,
            human_bytes(w.bytes),
            bpw(w),
        ]);
    }
    table.optional("bits/weight", 0);
    table.write_fit(out, "  ", fit).map(drop)
}

/// `Q4_K_M (general.file_type 15)`, `Q8_0 (guessed from the tensor types: …)`, or nothing.
fn file_type_label(q: Quantization) -> Option<String> {
    Some(match q {
        Quantization::Declared { code, file_type: Some(row) } if row.removed => {
            format!("{}, retired by llama.cpp (general.file_type {code})", row.name)
        }
        Quantization::Declared { code, file_type: Some(row) } => {
            format!("{} (general.file_type {code})", row.name)
        }
        Quantization::Declared { code, file_type: None } => {
            format!("unknown (general.file_type {code})")
        }
        Quantization::Guessed(row) => {
            format!("{} (guessed from the tensor types: no general.file_type)", row.name)
        }
        Quantization::Unknown => return None,
    })
}

/// The hyperparameters block: label and text, in a fixed order, the present ones only.
fn hyperparameters(c: &ModelConfig, budget: Budget) -> Vec<(&'static str, String)> {
    let int = |v: Option<u64>| v.map(|v| v.to_string());
    let layered = |v: &Option<PerLayer<u64>>| v.as_ref().map(|v| per_layer_text(v, budget));
    let scaling = match (&c.rope.scaling_type, c.rope.scaling_factor) {
        (Some(t), Some(f)) => Some(format!("{}, factor {}", escape::str(t), float_text(f))),
        (Some(t), None) => Some(escape::str(t).into_owned()),
        (None, Some(f)) => Some(format!("factor {}", float_text(f))),
        (None, None) => None,
    };
    let rows = [
        ("context length", int(c.context_length)),
        ("embedding length", int(c.embedding_length)),
        ("feed-forward length", layered(&c.feed_forward_length)),
        ("blocks", int(c.block_count)),
        ("attention heads", layered(&c.head_count)),
        ("KV heads", layered(&c.head_count_kv)),
        ("key length", int(c.key_length)),
        ("value length", int(c.value_length)),
        ("rope dimensions", int(c.rope.dimension_count)),
        ("rope frequency base", c.rope.freq_base.map(float_text)),
        ("rope scaling", scaling),
        ("rope original context", int(c.rope.original_context_length)),
        ("RMS norm epsilon", c.layer_norm_rms_epsilon.map(float_text)),
        ("norm epsilon", c.layer_norm_epsilon.map(float_text)),
        ("sliding window", int(c.sliding_window)),
        (
            "sliding-window layers",
            c.sliding_window_pattern.as_ref().map(|p| pattern_text(p, budget)),
        ),
        ("experts", int(c.expert_count)),
        ("experts used", int(c.expert_used_count)),
        ("vocabulary size", c.vocab_size.map(group)),
        ("tokenizer", c.tokenizer.as_deref().map(|t| escape::str(t).into_owned())),
    ];
    rows.into_iter().filter_map(|(label, v)| Some((label, v?))).collect()
}

/// Values per layer shown before `…` without `--full`.
const LAYERS_SHOWN: usize = 16;

/// `8`, or `1–4 per layer: 1, 1, 4, …`.
fn per_layer_text(v: &PerLayer<u64>, budget: Budget) -> String {
    let Some(layers) = v.layers() else { return v.max().to_string() };
    if let Some(u) = v.uniform() {
        return format!("{u} in every layer");
    }
    let min = layers.iter().min().copied().unwrap_or_default();
    let shown = if budget == Budget::FULL { layers.len() } else { LAYERS_SHOWN };
    let mut list: Vec<String> = layers.iter().take(shown).map(u64::to_string).collect();
    if layers.len() > shown {
        list.push("…".to_owned());
    }
    format!("{min}–{} per layer: {}", v.max(), list.join(", "))
}

/// `5 of every 6 (the 6th full attention)`, or the per-layer flags `SSSSSF…`.
fn pattern_text(p: &SlidingWindowPattern, budget: Budget) -> String {
    match p {
        SlidingWindowPattern::Period(0) => "every layer".to_owned(),
        SlidingWindowPattern::Period(1) => "none".to_owned(),
        SlidingWindowPattern::Period(n) => {
            format!("{} of every {n} (pattern {}F)", n - 1, "S".repeat((n - 1).min(64) as usize))
        }
        SlidingWindowPattern::Layers(flags) => {
            let sliding = flags.iter().filter(|&&f| f).count();
            let shown = if budget == Budget::FULL { flags.len() } else { 4 * LAYERS_SHOWN };
            let mut text: String =
                flags.iter().take(shown).map(|&f| if f { 'S' } else { 'F' }).collect();
            if flags.len() > shown {
                text.push('…');
            }
            format!("{sliding} of {} ({text}; S sliding, F full)", flags.len())
        }
    }
}

/// A float as stored: a `FLOAT32` (widened exactly) in its own shortest form (`1e-5`, not
/// `9.999999747378752e-6`).
fn float_text(x: f64) -> String {
    let narrow = x as f32;
    if f64::from(narrow) == x || x.is_nan() { format!("{narrow:?}") } else { format!("{x:?}") }
}

fn heading(
    out: &mut dyn Write,
    title: &str,
    shown: usize,
    total: usize,
    filter: Option<&Glob>,
) -> io::Result<()> {
    match filter {
        Some(g) => writeln!(
            out,
            "\n{title} ({shown} of {total} match {})",
            escape::quoted(g.as_str().as_bytes())
        ),
        None => writeln!(out, "\n{title} ({total})"),
    }
}

fn metadata(
    out: &mut dyn Write,
    view: &View<'_>,
    entries: &[&crate::view::Entry<'_>],
    filter: Option<&Glob>,
    budget: Budget,
    fit: Option<usize>,
) -> io::Result<()> {
    heading(out, "metadata", entries.len(), view.entries.len(), filter)?;
    if entries.is_empty() {
        return Ok(());
    }
    // On a terminal, previews are made to fit what the other columns leave of its width,
    // as the table will share it: keys cut to 40 columns, then values to 32, keys to 28,
    // values to 16, keys to 24 (the table cuts what still does not fit).
    let budget = match fit {
        Some(w) => {
            let index = entries.iter().map(|e| e.index.to_string().len()).max().unwrap_or(1);
            let key = entries.iter().map(|e| text_width(&escape::name(e.key))).max().unwrap_or(0);
            let ty = entries.iter().map(|e| e.value.type_name().len()).max().unwrap_or(0);
            // Indent 2, three separators of 2.
            let fixed = 2 + index.max(1) + ty.max(4) + 6;
            let mut key = key.min(40);
            let value = |key: usize| w.saturating_sub(fixed + key);
            if value(key) < 32 {
                key = key.saturating_sub(32 - value(key)).max(28.min(key));
            }
            budget.within(value(key))
        }
        None => budget,
    };
    let mut table = Table::new(&[
        ("#", Align::Right),
        ("key", Align::Left),
        ("type", Align::Left),
        ("value", Align::Left),
    ]);
    for e in entries {
        table.row(vec![
            e.index.to_string(),
            escape::name(e.key).into_owned(),
            e.value.type_name().to_owned(),
            chat_template_line(e).unwrap_or_else(|| one_line(&e.value, budget)),
        ]);
    }
    table
        .shrinkable("key", 40, Cut::Middle)
        .shrinkable("value", 32, Cut::End)
        .shrinkable("key", 28, Cut::Middle)
        .shrinkable("value", 16, Cut::End)
        .shrinkable("key", 24, Cut::Middle);
    table.write_fit(out, "  ", fit).map(drop)
}

/// A chat template (`tokenizer.chat_template`, `tokenizer.chat_template.NAME`) as its size
/// and sha256: its escaped text says nothing in one line (`sipllm template show` prints it).
fn chat_template_line(e: &crate::view::Entry<'_>) -> Option<String> {
    let key = e.key.strip_prefix(sipllm_model::template::DEFAULT_KEY.as_bytes())?;
    if !(key.is_empty() || key.starts_with(b".")) {
        return None;
    }
    let crate::view::Val::Str(text) = e.value else { return None };
    Some(format!("{} bytes, sha256 {}", text.len(), sipllm_model::template::sha256_hex(text)))
}

fn tensor_section(
    out: &mut dyn Write,
    view: &View<'_>,
    tensors: &[&TensorRow<'_>],
    filter: Option<&Glob>,
    fit: Option<usize>,
) -> io::Result<()> {
    heading(out, "tensors", tensors.len(), view.tensors.len(), filter)?;
    if tensors.is_empty() {
        return Ok(());
    }
    tensor_table(out, tensors, fit)
}

/// The tensor table (also `sipllm tensors`). For a split set, a `file` column gives the
/// shard holding each tensor (numbered from 1, as in the file names), and the offset is in
/// that file. On a terminal (`fit`), names over 40 columns are cut in the middle, then the
/// offset column is left out (a note says so), then names cut further.
pub fn tensor_table(
    out: &mut dyn Write,
    tensors: &[&TensorRow<'_>],
    fit: Option<usize>,
) -> io::Result<()> {
    let set = tensors.iter().any(|t| t.shard.is_some());
    let mut columns = vec![
        ("#", Align::Right),
        ("name", Align::Left),
        ("type", Align::Left),
        ("shape", Align::Left),
    ];
    if set {
        columns.push(("file", Align::Right));
    }
    columns.extend([("offset", Align::Right), ("bytes", Align::Right)]);
    let mut table = Table::new(&columns);
    for t in tensors {
        let shape: Vec<String> = t.shape().iter().map(u64::to_string).collect();
        let mut row = vec![
            t.index.to_string(),
            escape::name(t.name).into_owned(),
            type_name(t.ggml_type),
            format!("[{}]", shape.join(", ")),
        ];
        if set {
            row.push(t.shard.map_or_else(String::new, |s| (s + 1).to_string()));
        }
        row.extend([
            format!("0x{:x}", t.abs_offset),
            t.nbytes.map_or_else(|| "unknown".to_owned(), group),
        ]);
        table.row(row);
    }
    table
        .shrinkable("name", 40, Cut::Middle)
        .shrinkable("shape", 16, Cut::End)
        .optional("offset", 0);
    let left_out = table.write_fit(out, "  ", fit)?;
    if !left_out.is_empty() {
        writeln!(out, "  ({} left out to fit; --json has them)", left_out.join(" and "))?;
    }
    Ok(())
}

fn warnings(out: &mut dyn Write, view: &View<'_>, fit: Option<usize>) -> io::Result<()> {
    if view.warnings.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nwarnings ({})", view.warnings.len())?;
    for w in &view.warnings {
        let file = w.shard.map(|s| format!(" in file {}", s + 1)).unwrap_or_default();
        let message = escape::message(&w.located_message()).into_owned();
        let line = format!("  {}{file} at 0x{:x}: {message}", w.code, w.offset);
        writeln!(out, "{}", fit_line(&line, fit))?;
    }
    writeln!(out, "  (`sipllm validate` shows each with the bytes concerned)")
}
