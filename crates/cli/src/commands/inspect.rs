//! `sipllm inspect [FILE]`: the summary, the metadata table and the tensor table, or the
//! `--json` document.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

use sipllm_gguf::GgmlType;

use crate::cli::InspectArgs;
use crate::commands::{compile_filter, keep, open_or_report, report_open_error};
use crate::glob::Glob;
use crate::open::{Format, SAMPLE_NAME, open_sample};
use crate::render::escape;
use crate::render::json::{InspectDoc, write_line};
use crate::render::table::{Align, Table};
use crate::render::value::{Budget, group, human_bytes, human_count, one_line, type_name};
use crate::view::{SetView, TensorRow, Val, View};
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
    let view = View::of(&opened);
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
        let doc = InspectDoc::new(&view, entries, (!args.no_tensors).then_some(tensors));
        write_line(&mut out, &doc)?;
    } else {
        let budget = if args.full { Budget::FULL } else { Budget::SHORT };
        summary(&mut out, opened.name(), &view)?;
        metadata(&mut out, &view, &entries, filter.as_ref(), budget)?;
        if !args.no_tensors {
            tensor_section(&mut out, &view, &tensors, filter.as_ref())?;
        }
        warnings(&mut out, &view)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// The well-known hyperparameters: label and key (`{arch}` is the architecture).
const HYPERPARAMETERS: [(&str, &str); 13] = [
    ("context length", "{arch}.context_length"),
    ("embedding length", "{arch}.embedding_length"),
    ("feed-forward length", "{arch}.feed_forward_length"),
    ("blocks", "{arch}.block_count"),
    ("attention heads", "{arch}.attention.head_count"),
    ("KV heads", "{arch}.attention.head_count_kv"),
    ("key length", "{arch}.attention.key_length"),
    ("rope dimensions", "{arch}.rope.dimension_count"),
    ("rope frequency base", "{arch}.rope.freq_base"),
    ("RMS norm epsilon", "{arch}.attention.layer_norm_rms_epsilon"),
    ("norm epsilon", "{arch}.attention.layer_norm_epsilon"),
    ("experts", "{arch}.expert_count"),
    ("experts used", "{arch}.expert_used_count"),
];

fn summary(out: &mut dyn Write, name: &str, view: &View<'_>) -> io::Result<()> {
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
    let arch = view.get("general.architecture").and_then(Val::as_str);
    for (label, key) in [("architecture", "general.architecture"), ("name", "general.name")] {
        if let Some(v) = view.get(key) {
            rows.push((label, short(v)));
        }
    }
    write_pairs(out, &rows, "")?;
    if let Some(set) = &view.split {
        set_files(out, set)?;
    }

    let mut hyper: Vec<(&str, String)> = Vec::new();
    if let Some(arch) = arch {
        for (label, key) in HYPERPARAMETERS {
            if let Some(v) = view.get(&key.replace("{arch}", arch)) {
                hyper.push((label, short(v)));
            }
        }
    }
    let vocab = match view.get("tokenizer.ggml.tokens") {
        Some(Val::Array(a)) => Some(a.len),
        _ => arch.and_then(|a| view.get(&format!("{a}.vocab_size"))).and_then(Val::as_u64),
    };
    if let Some(n) = vocab {
        hyper.push(("vocabulary size", group(n)));
    }
    if let Some(v) = view.get("tokenizer.ggml.model") {
        hyper.push(("tokenizer", short(v)));
    }
    if !hyper.is_empty() {
        writeln!(out, "\nhyperparameters")?;
        write_pairs(out, &hyper, "  ")?;
    }

    if !view.tensors.is_empty() {
        parameters(out, &view.tensors)?;
    }
    Ok(())
}

/// The files of a split set: number (as in the names), path, tensors, size.
fn set_files(out: &mut dyn Write, set: &SetView) -> io::Result<()> {
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
    table.write(out, "  ")
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

fn write_pairs(out: &mut dyn Write, rows: &[(&str, String)], indent: &str) -> io::Result<()> {
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    for (label, value) in rows {
        writeln!(out, "{indent}{label:<width$}  {value}")?;
    }
    Ok(())
}

/// Total parameters, bytes per ggml type and bits per weight.
fn parameters(out: &mut dyn Write, tensors: &[TensorRow<'_>]) -> io::Result<()> {
    #[derive(Default)]
    struct Acc {
        tensors: u64,
        params: u64,
        bytes: u64,
        unknown_size: u64,
    }
    let mut by_type: BTreeMap<u32, (GgmlType, Acc)> = BTreeMap::new();
    let mut total = Acc::default();
    for t in tensors {
        let elements = t.elements().unwrap_or(0);
        let slot =
            &mut by_type.entry(t.ggml_type.code()).or_insert((t.ggml_type, Acc::default())).1;
        for acc in [slot, &mut total] {
            acc.tensors += 1;
            acc.params = acc.params.saturating_add(elements);
            match t.nbytes {
                Some(n) => acc.bytes = acc.bytes.saturating_add(n),
                None => acc.unknown_size += 1,
            }
        }
    }
    let bpw = |a: &Acc| {
        if a.params == 0 || a.unknown_size > 0 {
            "-".to_owned()
        } else {
            format!("{:.2}", a.bytes as f64 * 8.0 / a.params as f64)
        }
    };
    let mut pairs = vec![("parameters", group(total.params))];
    if total.params >= 100_000 {
        pairs[0].1 = format!("{} ({})", group(total.params), human_count(total.params));
    }
    if total.unknown_size == 0 {
        pairs.push(("bytes", bytes_for_people(total.bytes)));
    }
    pairs.push(("bits/weight", bpw(&total)));
    writeln!(out, "\nweights")?;
    write_pairs(out, &pairs, "  ")?;
    let mut table = Table::new(&[
        ("type", Align::Left),
        ("tensors", Align::Right),
        ("parameters", Align::Right),
        ("bytes", Align::Right),
        ("size", Align::Right),
        ("bits/weight", Align::Right),
    ]);
    for (ty, acc) in by_type.values() {
        let bytes = if acc.unknown_size > 0 { "unknown".to_owned() } else { group(acc.bytes) };
        table.row(vec![
            type_name(*ty),
            group(acc.tensors),
            group(acc.params),
            bytes,
            human_bytes(acc.bytes),
            bpw(acc),
        ]);
    }
    table.write(out, "  ")
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
) -> io::Result<()> {
    heading(out, "metadata", entries.len(), view.entries.len(), filter)?;
    if entries.is_empty() {
        return Ok(());
    }
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
            one_line(&e.value, budget),
        ]);
    }
    table.write(out, "  ")
}

fn tensor_section(
    out: &mut dyn Write,
    view: &View<'_>,
    tensors: &[&TensorRow<'_>],
    filter: Option<&Glob>,
) -> io::Result<()> {
    heading(out, "tensors", tensors.len(), view.tensors.len(), filter)?;
    if tensors.is_empty() {
        return Ok(());
    }
    tensor_table(out, tensors)
}

/// The tensor table (also `sipllm tensors`). For a split set, a `file` column gives the
/// shard holding each tensor (numbered from 1, as in the file names), and the offset is in
/// that file.
pub fn tensor_table(out: &mut dyn Write, tensors: &[&TensorRow<'_>]) -> io::Result<()> {
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
    table.write(out, "  ")
}

fn warnings(out: &mut dyn Write, view: &View<'_>) -> io::Result<()> {
    if view.warnings.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nwarnings ({})", view.warnings.len())?;
    for w in &view.warnings {
        let file = w.shard.map(|s| format!(" in file {}", s + 1)).unwrap_or_default();
        let message = escape::message(&w.located_message()).into_owned();
        writeln!(out, "  {}{file} at 0x{:x}: {message}", w.code, w.offset)?;
    }
    writeln!(out, "  (`sipllm validate` shows each with the bytes concerned)")
}
