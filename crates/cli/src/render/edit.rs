//! How `edit` shows what it did and what it refused: the write side's [`Change`]s as summary
//! lines, its [`Report`] as byte counts, and its errors as `sipllm: …` lines with the library's
//! message, the command-line argument they concern, and the library's help.

use std::fmt::Write as _;
use std::io::{self, Write};

use sipllm_edit::header::{Change, EditError, Report, Rewritten, ValueSummary};
use sipllm_edit::write::BuildStats;
use sipllm_edit::{InPlaceError, InputError};
use sipllm_gguf::writer::PADDING_KEY;
use sipllm_gguf::writer::Value;
use sipllm_streaming::StreamErrorKind;

use crate::render::escape::{self, Style};
use crate::render::value::group;
use sipllm_model::keys;

/// `"text"`, escaped.
pub fn quoted(s: &str) -> String {
    escape::quoted(s.as_bytes())
}

/// One line per change: `set KEY = VALUE (TYPE; was …)`, `deleted KEY`, `renamed tensor …`.
pub fn change_line(change: &Change, file: &str) -> String {
    match change {
        Change::Set { key, value, value_type, elem_type, was, from } => {
            let mut line = format!(
                "set {} = {} ({}",
                quoted(key),
                summary(value),
                sipllm_edit::header::type_label(*value_type, *elem_type)
            );
            if let Some(path) = from {
                let _ = write!(line, ", from {}", escape::str(&path.display().to_string()));
            }
            match was {
                Some(old) => {
                    let _ = write!(line, "; was {})", summary(old));
                }
                None => line.push_str("; new key)"),
            }
            line
        }
        Change::Deleted { key } => format!("deleted {}", quoted(key)),
        Change::Renamed { old, new } => {
            format!("renamed tensor {} -> {}", quoted(old), quoted(new))
        }
        Change::RemovedPadding => format!(
            "removed {} (the padding of an earlier in-place edit; the output is canonical)",
            quoted(PADDING_KEY)
        ),
        _ => format!("{change:?} ({file})"),
    }
}

/// Notes for standard error: a key set to a type llama.cpp does not read it as.
pub fn type_notes(report: &Report) -> Vec<String> {
    let arch = report.applied.architecture.as_deref();
    let mut notes = Vec::new();
    for change in &report.applied.changes {
        let Change::Set { key, value_type, elem_type, .. } = change else { continue };
        let Some(expected) = keys::expected(key, arch) else { continue };
        if !expected.accepts(*value_type, *elem_type) {
            notes.push(format!(
                "llama.cpp reads {} as {}, not {}: the file will not load there",
                quoted(key),
                expected.describe(),
                sipllm_edit::header::type_label(*value_type, *elem_type)
            ));
        }
    }
    notes
}

/// A value on one line: scalars exact, strings escaped and cut after 48 characters, arrays
/// as their length and element type and as many elements as fit in about 64 characters.
pub fn summary(v: &ValueSummary) -> String {
    match v {
        ValueSummary::Scalar(s) => match s {
            Value::Uint8(x) => x.to_string(),
            Value::Int8(x) => x.to_string(),
            Value::Uint16(x) => x.to_string(),
            Value::Int16(x) => x.to_string(),
            Value::Uint32(x) => x.to_string(),
            Value::Int32(x) => x.to_string(),
            Value::Uint64(x) => x.to_string(),
            Value::Int64(x) => x.to_string(),
            Value::Float32(x) => format!("{x:?}"),
            Value::Float64(x) => format!("{x:?}"),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        },
        ValueSummary::String { head, len } => {
            let mut out = String::from("\"");
            if escape::push(&mut out, head, Style::Quoted, 48) || *len > head.len() as u64 {
                let _ = write!(out, "…\" ({} bytes)", group(*len));
            } else {
                out.push('"');
            }
            out
        }
        ValueSummary::Array { elem_type, head, len } => {
            let mut out = format!("[{} × {}]", group(*len), elem_type.name());
            for (i, e) in head.iter().enumerate() {
                let piece = summary(e);
                if out.chars().count() + piece.chars().count() > 64 {
                    out.push_str(", …");
                    break;
                }
                out.push_str(if i == 0 { " " } else { ", " });
                out.push_str(&piece);
            }
            out
        }
        ValueSummary::Stored { elem_type, len } => {
            format!("[{} × {}]", group(*len), elem_type.name())
        }
        _ => String::new(),
    }
}

/// `header: …; file: …` and `tensor data: …` of an out-of-place edit.
pub fn summary_lines(o: &mut dyn Write, report: &Report, stats: &BuildStats) -> io::Result<()> {
    let ((hb, ha), (kb, ka)) = (report.header, report.keys);
    writeln!(
        o,
        "header: {} -> {} bytes ({kb} -> {ka} keys); file: {} bytes",
        group(hb),
        group(ha),
        group(stats.file_size)
    )?;
    let c = stats.copy;
    let mut line = format!(
        "tensor data: {} tensors, {} bytes copied",
        report.planned.len(),
        group(c.data_bytes + c.hole_bytes)
    );
    if c.hole_bytes > 0 {
        let _ =
            write!(line, " ({} of them holes in the source, kept as holes)", group(c.hole_bytes));
    }
    if c.buffered_bytes > 0 {
        let _ = write!(
            line,
            "; {} bytes through a buffer (the kernel could not copy them)",
            group(c.buffered_bytes)
        );
    }
    writeln!(o, "{line}")
}

/// `edited …`, one line per change.
pub fn changes(o: &mut dyn Write, head: &str, r: &Report, name: &str) -> io::Result<()> {
    writeln!(o, "{head}")?;
    for change in &r.applied.changes {
        writeln!(o, "  {}", change_line(change, name))?;
    }
    Ok(())
}

/// Notes on standard error after the report.
pub fn notes(r: &Report) {
    for note in type_notes(r) {
        crate::commands::usage_error(&format!("note: {note}"));
    }
}

/// `header: N of its M bytes rewritten (…)` of an in-place edit.
pub fn in_place_line(done: &Rewritten) -> String {
    let r = &done.report;
    let mut line = format!(
        "header: {} of its {} bytes rewritten ({} -> {} keys); data offset unchanged",
        group(done.rewritten),
        group(r.header.1),
        r.keys.0,
        r.keys.1
    );
    if done.padding > 0 {
        let _ =
            write!(line, "; {} bytes of padding in {}", group(done.padding), quoted(PADDING_KEY));
    }
    line
}

/// The command-line argument an edit error is about (`--delete "KEY"`), when it is one.
fn argument(e: &EditError) -> Option<String> {
    let pair = |a: &str, b: &str| quoted(&format!("{a}={b}"));
    let path = |p: &std::path::Path| p.display().to_string();
    Some(match e {
        EditError::BadName { old, new, .. }
        | EditError::NoSuchTensor { old, new }
        | EditError::TensorExists { old, new } => format!("--rename-tensor {}", pair(old, new)),
        EditError::NoSuchKey { key } => format!("--delete {}", quoted(key)),
        EditError::ValueFile { key, source } => {
            format!("--set-file {}", pair(key, &path(source.path()?)))
        }
        EditError::ValueFileNotUtf8 { key, path: p, .. } => {
            format!("--set-file {}", pair(key, &path(p)))
        }
        _ => return None,
    })
}

/// An edit error as `sipllm: [FILE: ][ARGUMENT: ]MESSAGE`, then `  help: …` (the help's `FILE`
/// is the file's name).
pub fn edit_error(e: &EditError, file: &str) {
    let mut line = String::new();
    let about_file = !matches!(
        e,
        EditError::BadName { .. }
            | EditError::ValueFile { .. }
            | EditError::ValueFileNotUtf8 { .. }
            | EditError::ReservedKey { .. }
            | EditError::AlignmentType { .. }
            | EditError::AlignmentNotPowerOfTwo { .. }
    );
    if about_file {
        let _ = write!(line, "{file}: ");
    }
    if let Some(arg) = argument(e) {
        let _ = write!(line, "{arg}: ");
    }
    let message = match e {
        // The file's own path is context; the reason is the input's.
        EditError::ValueFile { source, .. } => match source.path() {
            Some(path) => input_message(path, source),
            None => source.to_string(),
        },
        EditError::InPlace(ip) => return in_place_error(ip, file),
        EditError::Write(w) => {
            let dest = w.path().map_or_else(
                || file.to_owned(),
                |p| escape::str(&p.display().to_string()).into_owned(),
            );
            line.clear();
            format!("writing {dest} failed: {w}; {dest} was not changed")
        }
        EditError::Read(r) => r.to_string(),
        // The library's text with the counts grouped (`6,525,120`), as every other count the
        // CLI prints.
        EditError::DoesNotFit { missing, data_offset } => format!(
            "the edited header does not fit in place: it needs {} more bytes than the {} \
             before the data section",
            group(*missing),
            group(*data_offset)
        ),
        EditError::NoRoomForPadding { slack, min } => format!(
            "the edited header ends {} bytes before the data section: too many for the \
             alignment to absorb and too few for a padding pair ({} bytes at least) to keep the \
             data in place",
            group(*slack),
            group(*min)
        ),
        EditError::PaddingTooLarge { len, max } => format!(
            "the edited header would need a padding string of {} bytes to keep the data in \
             place, more than the {} a GGUF string may hold",
            group(*len),
            group(*max)
        ),
        other => other.to_string(),
    };
    line.push_str(&escape::message(&message));
    print_error(&line, e.help(), file);
}

/// An in-place rewrite or recovery error.
pub fn in_place_error(e: &InPlaceError, file: &str) {
    let message = match e.read_error() {
        Some(r) if matches!(r.kind(), StreamErrorKind::Locked { .. }) => format!("{file}: {r}"),
        _ => e.to_string(),
    };
    print_error(&escape::message(&message), e.help(), file);
}

fn input_message(path: &std::path::Path, e: &InputError) -> String {
    let name = escape::str(&path.display().to_string()).into_owned();
    match e {
        InputError::Read(r) => match r.kind() {
            StreamErrorKind::Open { source } if source.kind() == io::ErrorKind::IsADirectory => {
                format!("{name}: is a directory, not a file")
            }
            StreamErrorKind::Open { source } | StreamErrorKind::Io { source, .. } => {
                format!("{name}: cannot read it: {source}")
            }
            _ => e.to_string(),
        },
        InputError::TooLarge { max, .. } => format!(
            "{name}: more than {} bytes (reading stopped there); a GGUF string may hold at most \
             {} bytes",
            group(*max),
            group(*max)
        ),
        InputError::EmptyStream { kind, .. } => format!(
            "{name}: {kind} that delivered no bytes (a FIFO with no writer?); start its writer \
             first, or give a file"
        ),
        other => other.to_string(),
    }
}

fn print_error(line: &str, help: &str, file: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "sipllm: {line}");
    let _ = writeln!(err, "  help: {}", help.replace("FILE", file));
}
