//! `sipllm edit FILE (-o OUT | --in-place | --recover) [--set …] [--set-array …]
//! [--set-file …] [--delete …] [--rename-tensor …]`: metadata edits and tensor renames on a
//! GGUF file, without touching tensor data.
//!
//! 1. **Parse every edit** (the value syntax is in [`crate::values`]), reading `--set-file`
//!    files, before anything is opened for writing.
//! 2. **Open FILE** (strict profile) through one file descriptor, locked first ([`open_locked`]); a
//!    `.llmw` file is refused with a pointer to `convert`.
//! 3. **Plan**: [`GgufWriter::from_gguf`] over FILE's whole header, then each edit in the order
//!    given on the command line ([`apply`]): `--set`/`--set-array`/`--set-file` replace a
//!    value in place or append the key; `--delete` of a missing key, `--rename-tensor` of a
//!    missing tensor or onto an existing name are errors; `general.alignment` must stay a
//!    `u32` power of two (and unchanged in place); `sipllm.header_padding` is reserved.
//!    Validation ends with the writer's layout: nothing has been created yet.
//! 4. **Out of place** (`-o OUT`; OUT may be FILE): the padding pair of an earlier in-place
//!    edit is removed (the output is canonical), and the streaming crate's
//!    [`GgufFileBuilder`] writes the new header and copies every tensor's bytes from FILE
//!    (`copy_file_range`, holes kept) into a temporary file beside OUT. The temporary is
//!    re-opened and checked ([`check_written`]) and only then renamed over OUT: OUT is the old
//!    file (or absent) until the new one is complete, checked and synced.
//! 5. **In place** (`--in-place`): [`GgufWriter::pad_to`] makes the new header end exactly at
//!    FILE's data offset (adding a padding pair if it shrank) or says how many bytes are
//!    missing; the tensors must already lie where the new header puts them. The padding pair
//!    goes right after the last edited pair, so only the blocks between the first edit and the
//!    padding change. Then the streaming crate's crash-safe rewrite
//!    ([`rewrite_header_locked`], under an exclusive lock on FILE held from before the plan to
//!    after the check: a second editor is refused, readers wait): the old bytes of the changed
//!    4 KiB blocks are saved to a sidecar (`.NAME.header-backup`, synced, linked into place
//!    only if none exists), the new bytes are written
//!    over them and synced, the sidecar is removed. A crash in between leaves the sidecar;
//!    every later `edit` of FILE refuses ([`pending_refusal`]) until `sipllm edit --recover
//!    FILE` ([`in_place::recover`]) puts the old bytes back.
//!
//! Every byte of a model file is read and written by the streaming crate; this module plans,
//! decides and reports.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use sipllm_gguf::writer::Value;
use sipllm_gguf::{
    GgmlType, Gguf, Limits, ValueType, writer::GgufWriter, writer::PADDING_KEY, writer::WriteError,
};
use sipllm_streaming::HeaderBytes;
use sipllm_streaming::identity;
use sipllm_streaming::in_place::{self, BackupDefect, HeaderBackup, rewrite_header_locked};
use sipllm_streaming::lock::ExclusiveLock;
use sipllm_streaming::write::{AtomicFile, BuildStats, GgufFileBuilder, TensorData};
use sipllm_streaming::{
    Backend, FileBacking, GgufFile, Model, OpenOptions, ReadAt, StreamError, WeightSource,
};

use crate::cli::EditArgs;
use crate::commands::{report_open_error, usage_error};
use crate::open::{model_of, open_locked};
use crate::render::escape::{self, Style};
use crate::render::value::{group, type_name};
use crate::{Ctx, Exit, keys, values};

/// GGUF tensor names must be shorter than this (llama.cpp's `GGML_MAX_NAME`, NUL included).
const MAX_NAME: usize = 64;

/// Bytes compared at each end of every tensor when checking a written file.
pub const SAMPLE: u64 = 4096;

/// One edit, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// `--set`, `--set-array`, `--set-file`: replace or append a pair.
    Set {
        /// The key.
        key: String,
        /// The new value.
        value: Value<'static>,
        /// The file a `--set-file` value was read from.
        from: Option<PathBuf>,
    },
    /// `--delete KEY`.
    Delete {
        /// The key.
        key: String,
    },
    /// `--rename-tensor OLD=NEW`.
    RenameTensor {
        /// The current name.
        old: String,
        /// The new name.
        new: String,
    },
}

/// Runs `edit`. `matches` (the subcommand's) gives the order of the edit options; without it
/// they apply grouped by option.
pub fn run(args: &EditArgs, matches: Option<&ArgMatches>, ctx: &Ctx) -> io::Result<Exit> {
    if args.recover {
        return recover(&args.file);
    }
    // An output with an interrupted edit's backup (an output that is FILE is checked with
    // FILE, under its lock, below).
    if let Some(out) = &args.output
        && !identity::same_file(out, &args.file)
        && let Some(msg) = pending_refusal(out, "the output ")
    {
        return Ok(usage_error(&msg));
    }
    let edits = match parse_edits(args, matches) {
        Ok(edits) => edits,
        Err(errors) => {
            for e in &errors {
                usage_error(e);
            }
            return Ok(Exit::Trouble);
        }
    };
    if args.in_place && edits.is_empty() {
        return Ok(usage_error(
            "nothing to edit: give --set, --set-array, --set-file, --delete or --rename-tensor",
        ));
    }
    // Locked before a byte is read (docs/writer.md, "Who may read or write while an edit
    // runs"): the in-place writer holds the file exclusively from here to its check, so a
    // second editor is refused and readers wait; an out-of-place edit reads under a shared
    // lock, so it never parses a header an in-place edit is rewriting.
    let file = match open_locked(&args.file, args.in_place) {
        Ok(file) => file,
        Err(e @ StreamError::Locked { .. }) => return Ok(usage_error(&in_place_message(&e))),
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let lock = if args.in_place {
        match ExclusiveLock::try_new(&file, &args.file) {
            Ok(lock) => Some(lock),
            Err(e) => return Ok(usage_error(&in_place_message(&e))),
        }
    } else {
        None
    };
    // Under the lock, a backup is an interrupted edit's, never a running one's.
    if let Some(msg) = pending_refusal(&args.file, "") {
        return Ok(usage_error(&msg));
    }

    let model = match model_of(&file, &args.file) {
        Ok(model) => model,
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let name = display(&args.file);
    if model.gguf().is_none() {
        return Ok(usage_error(&format!(
            "{name} is a .llmw file; `edit` edits GGUF files. Convert it first \
             (`sipllm convert {name} model.gguf`), edit that, and convert back if needed"
        )));
    }
    match (&args.output, &lock) {
        (Some(out), _) => out_of_place(&args.file, model, &file, edits, out),
        (None, Some(lock)) => in_place(lock, model, edits),
        (None, None) => Ok(usage_error("give -o OUT or --in-place")),
    }
}

/// A refusal message when `model` has a header backup (an interrupted in-place edit:
/// [`HeaderBackup::pending`]); `what` goes before its name (`""`, `"the output "`).
pub fn pending_refusal(model: &Path, what: &str) -> Option<String> {
    let backup = HeaderBackup::pending(model)?;
    let name = display(model);
    Some(format!(
        "{what}{name} has a header backup, {}, left by an interrupted `sipllm edit --in-place`: \
         its header may be half-written. Run `sipllm edit --recover {name}` to restore the \
         header from the backup (the tensor data was never touched), then edit again",
        display(&backup)
    ))
}

/// An error of the in-place rewrite or of `--recover` as a sentence: the streaming crate's
/// message, with what to run where the command line has the answer.
fn in_place_message(e: &StreamError) -> String {
    let msg = escape::message(&e.to_string()).into_owned();
    match e {
        StreamError::InPlaceTorn { path, backup, source, .. } => format!(
            "writing the new header failed: {}; the header may be damaged. Run `sipllm edit \
             --recover {}` to restore it from {}",
            escape::message(&source.to_string()),
            display(path),
            display(backup)
        ),
        StreamError::InPlaceBadBackup { path, defect: BackupDefect::NotARecord, .. } => {
            let name = display(path);
            format!("{msg}. If {name} is intact (`sipllm validate {name}`), delete the backup")
        }
        StreamError::InPlaceWrongModel { path, backup, len, recorded_len } => format!(
            "{} is {} bytes, but it was {} when {} was made: it is not the file the backup \
             belongs to, so it was not changed",
            display(path),
            group(*len),
            group(*recorded_len),
            display(backup)
        ),
        _ => msg,
    }
}

/// The edits in command-line order, or every argument that is wrong.
pub fn parse_edits(
    args: &EditArgs,
    matches: Option<&ArgMatches>,
) -> Result<Vec<Edit>, Vec<String>> {
    type Parser = fn(&str) -> Result<Edit, String>;
    let groups: [(&str, &str, &[String], Parser); 5] = [
        ("set", "--set", &args.set, |s| {
            values::parse_set(s).map(|(key, value)| Edit::Set { key, value, from: None })
        }),
        ("set_array", "--set-array", &args.set_array, |s| {
            values::parse_set_array(s).map(|(key, value)| Edit::Set { key, value, from: None })
        }),
        ("set_file", "--set-file", &args.set_file, parse_set_file),
        ("delete", "--delete", &args.delete, |s| {
            if s.is_empty() {
                Err("\"\": the key is empty".to_owned())
            } else {
                Ok(Edit::Delete { key: s.to_owned() })
            }
        }),
        ("rename_tensor", "--rename-tensor", &args.rename_tensor, parse_rename),
    ];
    let mut all: Vec<(usize, Result<Edit, String>)> = Vec::new();
    for (rank, (id, flag, items, parse)) in groups.into_iter().enumerate() {
        let indices: Vec<usize> =
            matches.and_then(|m| m.indices_of(id)).map(|i| i.collect()).unwrap_or_default();
        for (n, item) in items.iter().enumerate() {
            let at = indices.get(n).copied().unwrap_or(rank * 1_000_000 + n);
            all.push((at, parse(item).map_err(|e| format!("{flag} {e}"))));
        }
    }
    all.sort_by_key(|(at, _)| *at);
    let mut edits = Vec::with_capacity(all.len());
    let mut errors = Vec::new();
    for (_, r) in all {
        match r {
            Ok(e) => edits.push(e),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(edits) } else { Err(errors) }
}

fn quoted(s: &str) -> String {
    escape::quoted(s.as_bytes())
}

fn display(p: &Path) -> String {
    escape::str(&p.display().to_string()).into_owned()
}

/// `--set-file KEY=PATH`: the file's bytes as a string value; they must be UTF-8 and within
/// the parser's string limit (or the edited file would not re-open).
///
/// PATH may be a regular file or a stream (`/dev/stdin`, a shell's `<(…)`, a FIFO): it is
/// opened without blocking and at most the limit + 1 bytes are read from it, whatever it is
/// ([`sipllm_streaming::read_capped`]), so `/dev/zero` or an endless pipe is refused once past
/// the limit; a stream that delivers nothing (a FIFO without a writer) is refused, not read as
/// an empty value.
fn parse_set_file(spec: &str) -> Result<Edit, String> {
    let (key, path) = values::split_key(spec, "KEY=PATH, e.g. tokenizer.chat_template=t.jinja")?;
    let path = PathBuf::from(path);
    let what = || format!("{}: {}", quoted(spec), display(&path));
    let max = Limits::default().max_string_len;
    let bytes = sipllm_streaming::read_capped(&path, max).map_err(|e| match e {
        StreamError::InputTooLarge { max, .. } => format!(
            "{}: more than {} bytes (reading stopped there); a GGUF string may hold at most {} \
             bytes",
            what(),
            group(max),
            group(max)
        ),
        StreamError::InputEmptyStream { kind, .. } => format!(
            "{}: {kind} that delivered no bytes (a FIFO with no writer?); start its writer \
             first, or give a file",
            what()
        ),
        StreamError::Open { source, .. } if source.kind() == std::io::ErrorKind::IsADirectory => {
            format!("{}: is a directory, not a file", what())
        }
        StreamError::Open { source, .. } | StreamError::Io { source, .. } => {
            format!("{}: cannot read it: {source}", what())
        }
        e => format!("{}: {}", what(), escape::message(&e.to_string())),
    })?;
    if let Err(e) = std::str::from_utf8(&bytes) {
        return Err(format!(
            "{}: not UTF-8 text (invalid byte at offset {}); GGUF strings are UTF-8",
            what(),
            e.valid_up_to()
        ));
    }
    Ok(Edit::Set { key: key.to_owned(), value: Value::String(Cow::Owned(bytes)), from: Some(path) })
}

/// `--rename-tensor OLD=NEW`.
fn parse_rename(spec: &str) -> Result<Edit, String> {
    let (old, new) = values::split_key(spec, "OLD=NEW, e.g. output.weight=lm_head.weight")?;
    if new.is_empty() {
        return Err(format!("{}: the new name is empty", quoted(spec)));
    }
    if new.len() >= MAX_NAME {
        return Err(format!(
            "{}: the new name is {} bytes; GGUF tensor names are at most {} bytes (llama.cpp's \
             limit)",
            quoted(spec),
            new.len(),
            MAX_NAME - 1
        ));
    }
    if new.contains('\0') {
        return Err(format!("{}: the new name contains a NUL byte", quoted(spec)));
    }
    Ok(Edit::RenameTensor { old: old.to_owned(), new: new.to_owned() })
}

/// Where the edited header goes: a new file, or over the old header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A new file: anything goes, the data moves with the header.
    OutOfPlace,
    /// The header is rewritten in place: the alignment (so every tensor's offset) must stay.
    InPlace {
        /// The file's alignment.
        alignment: u32,
    },
}

/// What applying the edits did: one summary line per edit, and notes for standard error.
#[derive(Debug, Default)]
pub struct Applied {
    /// `set KEY = VALUE (TYPE; was …)`, `deleted KEY`, `renamed tensor …`.
    pub lines: Vec<String>,
    /// Warnings (a well-known key given a type llama.cpp does not read it as).
    pub notes: Vec<String>,
}

/// Applies `edits` to `writer` in order. The first edit that cannot apply is the error.
pub fn apply(
    writer: &mut GgufWriter<'_>,
    edits: Vec<Edit>,
    mode: Mode,
    file: &str,
) -> Result<Applied, String> {
    let mut applied = Applied::default();
    let mut set_keys: Vec<String> = Vec::new();
    for edit in edits {
        match edit {
            Edit::Set { key, value, from } => {
                if key == PADDING_KEY {
                    return Err(format!(
                        "the key {} is reserved: sipllm uses it to pad headers edited in place",
                        quoted(&key)
                    ));
                }
                if key == "general.alignment" {
                    check_alignment(&value, mode)?;
                }
                let was = writer.get(key.as_bytes()).map(render);
                let mut line =
                    format!("set {} = {} ({}", quoted(&key), render(&value), type_label(&value));
                if let Some(path) = &from {
                    let _ = write!(line, ", from {}", display(path));
                }
                match was {
                    Some(old) => {
                        let _ = write!(line, "; was {old})");
                    }
                    None => line.push_str("; new key)"),
                }
                applied.lines.push(line);
                set_keys.push(key.clone());
                writer.set(key.into_bytes(), value);
            }
            Edit::Delete { key } => {
                if key == "general.alignment"
                    && let Mode::InPlace { alignment } = mode
                    && alignment != sipllm_gguf::decoder::DEFAULT_ALIGNMENT
                {
                    return Err(format!(
                        "deleting general.alignment would change the alignment from {alignment} \
                         to {}, which moves every tensor's data; in place only the header is \
                         rewritten. Use -o OUT to write a new file",
                        sipllm_gguf::decoder::DEFAULT_ALIGNMENT
                    ));
                }
                if !writer.remove(key.as_bytes()) {
                    return Err(format!(
                        "--delete {}: {file} has no such key (`sipllm inspect --no-tensors {file}` \
                         lists its keys)",
                        quoted(&key)
                    ));
                }
                applied.lines.push(format!("deleted {}", quoted(&key)));
            }
            Edit::RenameTensor { old, new } => {
                let tensors = writer.tensors_mut();
                if tensors.iter().any(|t| t.name.as_ref() == new.as_bytes()) {
                    return Err(format!(
                        "--rename-tensor {}: a tensor named {} already exists",
                        quoted(&format!("{old}={new}")),
                        quoted(&new)
                    ));
                }
                let Some(t) = tensors.iter_mut().find(|t| t.name.as_ref() == old.as_bytes()) else {
                    return Err(format!(
                        "--rename-tensor {}: {file} has no tensor named {} (`sipllm tensors \
                         {file}` lists them)",
                        quoted(&format!("{old}={new}")),
                        quoted(&old)
                    ));
                };
                t.name = Cow::Owned(new.clone().into_bytes());
                applied.lines.push(format!("renamed tensor {} -> {}", quoted(&old), quoted(&new)));
            }
        }
    }
    // Type notes, against the architecture after the edits.
    let arch = match writer.get(b"general.architecture") {
        Some(Value::String(s)) => std::str::from_utf8(s).ok().map(str::to_owned),
        _ => None,
    };
    for (key, value) in writer.kvs() {
        let Ok(key) = std::str::from_utf8(key) else { continue };
        if !set_keys.iter().any(|k| k == key) {
            continue;
        }
        let Some(expected) = keys::expected(key, arch.as_deref()) else { continue };
        if !expected.accepts(value.value_type(), elem_type(value)) {
            applied.notes.push(format!(
                "llama.cpp reads {} as {}, not {}: the file will not load there",
                quoted(key),
                expected.describe(),
                type_label(value)
            ));
        }
    }
    Ok(applied)
}

fn check_alignment(value: &Value<'_>, mode: Mode) -> Result<(), String> {
    let Value::Uint32(a) = value else {
        return Err(format!(
            "general.alignment must be a u32 power of two (e.g. general.alignment=u32:64), not \
             {}",
            type_label(value)
        ));
    };
    if !a.is_power_of_two() {
        return Err(format!("general.alignment must be a power of two, not {a}"));
    }
    if let Mode::InPlace { alignment } = mode
        && *a != alignment
    {
        return Err(format!(
            "changing general.alignment from {alignment} to {a} moves every tensor's data; in \
             place only the header is rewritten. Use -o OUT to write a new file"
        ));
    }
    Ok(())
}

fn elem_type(v: &Value<'_>) -> Option<ValueType> {
    match v {
        Value::Array { elem_type, .. } => Some(*elem_type),
        Value::View(a) => Some(a.elem_type()),
        _ => None,
    }
}

/// `UINT32`, `ARRAY of STRING`.
fn type_label(v: &Value<'_>) -> String {
    match elem_type(v) {
        Some(e) => format!("ARRAY of {}", e.name()),
        None => v.value_type().name().to_owned(),
    }
}

/// A value on one line: scalars exact, strings escaped and cut after 48 characters, arrays
/// as their length and element type and as many elements as fit in about 64 characters.
fn render(v: &Value<'_>) -> String {
    match v {
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
        Value::String(s) => {
            let mut out = String::from("\"");
            if escape::push(&mut out, s, Style::Quoted, 48) {
                let _ = write!(out, "…\" ({} bytes)", group(s.len() as u64));
            } else {
                out.push('"');
            }
            out
        }
        Value::Array { elem_type, elems } => {
            let mut out = format!("[{} × {}]", group(elems.len() as u64), elem_type.name());
            for (i, e) in elems.iter().enumerate() {
                let piece = render(e);
                if out.chars().count() + piece.chars().count() > 64 {
                    out.push_str(", …");
                    break;
                }
                out.push_str(if i == 0 { " " } else { ", " });
                out.push_str(&piece);
            }
            out
        }
        Value::View(a) => format!("[{} × {}]", group(a.len()), a.elem_type().name()),
    }
}

/// A writer error as a sentence.
fn writer_error(e: &WriteError) -> String {
    escape::message(&e.to_string()).into_owned()
}

/// One tensor of the plan: where its bytes come from and where they must end up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Name in the output.
    pub name: String,
    /// Type.
    pub ggml_type: GgmlType,
    /// Row-major shape.
    pub shape: Vec<u64>,
    /// Byte size.
    pub nbytes: u64,
    /// Absolute offset in the source.
    pub from: u64,
    /// Absolute offset in the output.
    pub to: u64,
}

fn plan_tensors(
    writer: &GgufWriter<'_>,
    source: &Gguf<HeaderBytes>,
    layout: &sipllm_gguf::writer::Layout,
) -> Vec<Planned> {
    writer
        .tensors()
        .iter()
        .zip(source.tensor_infos())
        .zip(&layout.tensors)
        .map(|((t, src), &(to, nbytes))| Planned {
            name: String::from_utf8_lossy(&t.name).into_owned(),
            ggml_type: t.ggml_type,
            shape: t.dims.iter().rev().copied().collect(),
            nbytes,
            from: src.abs_offset(),
            to,
        })
        .collect()
}

/// What the out-of-place write produced, before its check.
struct Written {
    tmp: AtomicFile,
    planned: Vec<Planned>,
    /// Header length and XXH3 of the header as the writer produced it.
    header: (u64, u64),
    applied: Applied,
    /// Header length and key count before and after.
    before: (u64, usize),
    after: (u64, usize),
    stats: BuildStats,
}

/// The out-of-place edit: plan, write a temporary beside `out`, drop the source header,
/// check the temporary, rename it over `out`.
fn out_of_place(
    path: &Path,
    model: Model,
    file: &File,
    edits: Vec<Edit>,
    out: &Path,
) -> io::Result<Exit> {
    let name = display(path);
    let out_name = display(out);
    if out.is_dir() {
        return Ok(usage_error(&format!("-o {out_name}: is a directory; give a file name")));
    }
    let written = match write_edited(&name, &model, file, edits, out) {
        Ok(w) => w,
        Err(exit) => return Ok(exit),
    };
    // The source's header is not needed any more: the check's re-open must not hold a second
    // copy beside it (peak memory stays about one header).
    drop(model);
    let Written { tmp, planned, header, applied, before, after, stats } = written;
    let checked = source_reader(file, path)
        .and_then(|source| check_written(&tmp, out, header, &planned, &source));
    if let Err(msg) = checked {
        return Ok(usage_error(&format!(
            "the written file failed its check, so {out_name} was not replaced: {msg}"
        )));
    }
    if let Err(e) = tmp.commit() {
        return Ok(usage_error(&format!("cannot move the new file into place at {out_name}: {e}")));
    }

    let mut o = io::stdout().lock();
    writeln!(o, "edited {name} -> {out_name}")?;
    for line in &applied.lines {
        writeln!(o, "  {line}")?;
    }
    summary(&mut o, before, after, planned.len(), &stats)?;
    writeln!(
        o,
        "checked {out_name}: re-opened (strict profile); header as planned; {} tensors at their \
         planned offsets, the first and last {} bytes of each equal to {name}'s",
        planned.len(),
        SAMPLE
    )?;
    o.flush()?;
    for note in &applied.notes {
        usage_error(&format!("note: {note}"));
    }
    Ok(Exit::Ok)
}

/// Plans the edits on `model`'s header and writes the result into a temporary beside `out`.
fn write_edited(
    name: &str,
    model: &Model,
    file: &File,
    edits: Vec<Edit>,
    out: &Path,
) -> Result<Written, Exit> {
    let Some(src) = model.gguf() else {
        return Err(usage_error("only GGUF files can be edited"));
    };
    let gguf = src.gguf();
    let file_size = src.store().file_size();
    let mut writer = GgufWriter::from_gguf(gguf).pad_tensorless(file_size >= gguf.data_offset());
    let mut applied =
        apply(&mut writer, edits, Mode::OutOfPlace, name).map_err(|m| usage_error(&m))?;
    if writer.remove(PADDING_KEY.as_bytes()) {
        applied.lines.push(format!(
            "removed {} (the padding of an earlier in-place edit; the output is canonical)",
            quoted(PADDING_KEY)
        ));
    }
    let layout = writer
        .layout()
        .map_err(|e| usage_error(&format!("the edited header is invalid: {}", writer_error(&e))))?;
    let planned = plan_tensors(&writer, gguf, &layout);
    let mut hasher = HashWriter::default();
    writer
        .write_header(&mut hasher)
        .map_err(|e| usage_error(&format!("the edited header is invalid: {e}")))?;
    let header = (layout.header_len, hasher.0.digest());
    let before = (gguf.data_offset(), gguf.kv_len());
    let after = (layout.header_len, writer.kvs().len());

    // Nothing has been created so far; from here on, only a temporary beside OUT.
    let out_name = display(out);
    let tmp = AtomicFile::create(out)
        .map_err(|e| usage_error(&format!("cannot create a file beside {out_name}: {e}")))?;
    let mut builder = GgufFileBuilder::new(writer);
    for (i, t) in gguf.tensor_infos().iter().enumerate() {
        builder.set_data(i, TensorData::File { file, offset: t.abs_offset() });
    }
    let stats = builder.write_into(&tmp).map_err(|e| stream_failure(out, &e))?;
    Ok(Written { tmp, planned, header, applied, before, after, stats })
}

fn summary(
    o: &mut dyn Write,
    (header_before, keys_before): (u64, usize),
    (header_after, keys_after): (u64, usize),
    n_tensors: usize,
    stats: &BuildStats,
) -> io::Result<()> {
    writeln!(
        o,
        "header: {} -> {} bytes ({keys_before} -> {keys_after} keys); file: {} bytes",
        group(header_before),
        group(header_after),
        group(stats.file_size)
    )?;
    let c = stats.copy;
    let mut line = format!(
        "tensor data: {n_tensors} tensors, {} bytes copied",
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

/// A write that failed: the temporary is gone, the destination untouched.
fn stream_failure(out: &Path, e: &StreamError) -> Exit {
    usage_error(&format!(
        "writing {} failed: {}; {} was not changed",
        display(out),
        escape::message(&e.to_string()),
        display(out)
    ))
}

/// A positional reader (the streaming crate's pread backing) over a duplicate of `file`, the
/// model opened at `path`: the source bytes a check compares with, after the parsed model
/// (and its copy of the header) has been dropped.
pub fn source_reader(file: &File, path: &Path) -> Result<FileBacking, String> {
    let clone = file.try_clone().map_err(|e| format!("cannot reopen the source: {e}"))?;
    FileBacking::from_file(clone, path, Backend::Pread)
        .map_err(|e| format!("cannot reopen the source: {}", escape::message(&e.to_string())))
}

/// Re-opens what was written (still the temporary) under the strict profile and checks it
/// against the plan: the header bytes hash to what the writer produced, every tensor has its
/// planned name, type, shape, size and offset, and the first and last [`SAMPLE`] bytes of
/// each equal the source's (a sampled data check: full hashes are `sipllm verify`'s job).
pub fn check_written(
    tmp: &AtomicFile,
    out: &Path,
    (header_len, header_hash): (u64, u64),
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), String> {
    let file = tmp.file().try_clone().map_err(|e| e.to_string())?;
    let backing = FileBacking::from_file(file, out, Backend::Pread).map_err(|e| e.to_string())?;
    let written = GgufFile::from_backing(backing, &OpenOptions::default())
        .map_err(|e| format!("it does not re-open: {}", escape::message(&e.to_string())))?;
    let gguf = written.gguf();
    let header = gguf.bytes().get(..usize::try_from(header_len).unwrap_or(usize::MAX));
    let got = header.map(xxhash_rust::xxh3::xxh3_64);
    if got != Some(header_hash) || (gguf.data_offset() != header_len && !planned.is_empty()) {
        return Err("its header differs from the planned one".to_owned());
    }
    check_tensors(&written, planned, source)
}

/// Checks `written`'s tensors against the plan: names, types, shapes, sizes and offsets
/// exactly; data sampled ([`SAMPLE`] bytes at each end of each tensor, compared with `source`).
pub fn check_tensors(
    written: &dyn WeightSource,
    planned: &[Planned],
    source: &dyn ReadAt,
) -> Result<(), String> {
    let tensors = written.tensors();
    if tensors.len() != planned.len() {
        return Err(format!("{} tensors instead of {}", tensors.len(), planned.len()));
    }
    let mut a = vec![0u8; SAMPLE as usize];
    let mut b = vec![0u8; SAMPLE as usize];
    for (t, p) in tensors.iter().zip(planned) {
        let same = t.name == p.name
            && t.ggml_type == p.ggml_type
            && t.shape.as_slice() == p.shape.as_slice()
            && t.nbytes == Some(p.nbytes)
            && t.abs_offset == p.to;
        if !same {
            return Err(format!(
                "tensor {} is {} {:?} at {} ({:?} bytes); planned: {} {} {:?} at {} ({} bytes)",
                quoted(&t.name),
                type_name(t.ggml_type),
                t.shape.as_slice(),
                t.abs_offset,
                t.nbytes,
                quoted(&p.name),
                type_name(p.ggml_type),
                p.shape,
                p.to,
                p.nbytes
            ));
        }
        let n = p.nbytes.min(SAMPLE);
        let k = usize::try_from(n).unwrap_or(0);
        for rel in [0, p.nbytes.saturating_sub(n)] {
            let (x, y) = (a.get_mut(..k).unwrap_or_default(), b.get_mut(..k).unwrap_or_default());
            let (Some(from), Some(to)) = (p.from.checked_add(rel), p.to.checked_add(rel)) else {
                return Err(format!("tensor {}: its offset overflows", quoted(&p.name)));
            };
            source
                .read_exact_at(from, x)
                .map_err(|e| format!("reading the source: {}", escape::message(&e.to_string())))?;
            written
                .read_raw_at(to, y)
                .map_err(|e| format!("reading it back: {}", escape::message(&e.to_string())))?;
            if x != y {
                return Err(format!(
                    "tensor {}: the bytes at +{rel} differ from the source's",
                    quoted(&p.name)
                ));
            }
        }
    }
    Ok(())
}

/// An `io::Write` that hashes (XXH3-64) what it is given.
#[derive(Default)]
struct HashWriter(xxhash_rust::xxh3::Xxh3);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What an in-place rewrite did, for the check and the report.
struct Rewritten {
    planned: Vec<Planned>,
    /// Header length and XXH3 of the header written.
    header: (u64, u64),
    /// Bytes actually rewritten (the changed 4 KiB blocks).
    rewritten: u64,
    applied: Applied,
    keys: (usize, usize),
    padding: u64,
}

/// The in-place edit: plan a header of exactly the old length, then the crash-safe rewrite;
/// the source header is dropped before the check re-opens the file.
fn in_place(lock: &ExclusiveLock<'_>, model: Model, edits: Vec<Edit>) -> io::Result<Exit> {
    let (path, file) = (lock.path(), lock.file());
    let name = display(path);
    let done = match rewrite_header(lock, &name, &model, edits) {
        Ok(Some(done)) => done,
        Ok(None) => {
            let mut o = io::stdout().lock();
            writeln!(o, "{name} already has these values: nothing written")?;
            o.flush()?;
            return Ok(Exit::Ok);
        }
        Err(exit) => return Ok(exit),
    };
    drop(model);
    let Rewritten { planned, header, rewritten, applied, keys, padding } = done;
    let mut o = io::stdout().lock();
    writeln!(o, "edited {name} in place")?;
    for line in &applied.lines {
        writeln!(o, "  {line}")?;
    }
    let mut line = format!(
        "header: {} of its {} bytes rewritten ({} -> {} keys); data offset unchanged",
        group(rewritten),
        group(header.0),
        keys.0,
        keys.1
    );
    if padding > 0 {
        let _ = write!(line, "; {} bytes of padding in {}", group(padding), quoted(PADDING_KEY));
    }
    writeln!(o, "{line}")?;
    o.flush()?;
    drop(o);
    if let Err(msg) = check_in_place(path, header, &planned, file) {
        return Ok(usage_error(&format!("{name} failed its check after the edit: {msg}")));
    }
    let mut o = io::stdout().lock();
    writeln!(
        o,
        "checked {name}: re-opened (strict profile); header as written; {} tensors where they \
         were",
        planned.len()
    )?;
    o.flush()?;
    for note in &applied.notes {
        usage_error(&format!("note: {note}"));
    }
    Ok(Exit::Ok)
}

/// Plans the new header (same length as the old) and has the streaming crate rewrite it
/// crash-safely ([`rewrite_header_locked`]). `Ok(None)`: the edits change nothing.
fn rewrite_header(
    lock: &ExclusiveLock<'_>,
    name: &str,
    model: &Model,
    edits: Vec<Edit>,
) -> Result<Option<Rewritten>, Exit> {
    let Some(src) = model.gguf() else {
        return Err(usage_error("only GGUF files can be edited"));
    };
    let gguf = src.gguf();
    let data_offset = gguf.data_offset();
    if gguf.tensor_infos().is_empty() {
        return Err(usage_error(&format!(
            "{name} has no tensors: it is all header, so there is nothing to keep in place; use \
             -o OUT (cheap: there is no tensor data to copy)"
        )));
    }
    let invalid =
        |e: &WriteError| usage_error(&format!("the edited header is invalid: {}", writer_error(e)));
    let mut writer = GgufWriter::from_gguf(gguf);
    let applied = apply(&mut writer, edits, Mode::InPlace { alignment: gguf.alignment() }, name)
        .map_err(|m| usage_error(&m))?;
    let padding = match fit_in_place(&mut writer, gguf) {
        Ok(p) => p,
        Err(WriteError::HeaderTooLarge { missing }) => {
            return Err(usage_error(&format!(
                "the edited header does not fit in place: it needs {} more bytes than the {} \
                 before {name}'s data section; use -o OUT to write a new file",
                group(missing),
                group(data_offset)
            )));
        }
        Err(WriteError::NoRoomForPadding { slack, min }) => {
            return Err(usage_error(&format!(
                "the edited header ends {slack} bytes before {name}'s data section: too many for \
                 the alignment to absorb and too few for a padding pair ({min} bytes at least) \
                 to keep the data in place; use -o OUT to write a new file, or make the new \
                 value a few bytes longer or shorter"
            )));
        }
        Err(WriteError::PaddingTooLarge { len, max }) => {
            return Err(usage_error(&format!(
                "the edited header would need a padding string of {} bytes to keep {name}'s \
                 data in place, more than the {} a GGUF string may hold; use -o OUT to write a \
                 new file",
                group(len),
                group(max)
            )));
        }
        Err(e) => return Err(invalid(&e)),
    };
    place_padding(&mut writer, gguf);
    let layout = writer.layout().map_err(|e| invalid(&e))?;
    // The new header describes the data where the canonical layout puts it: that must be where
    // it already is (true for every file written by ggml, gguf-py or this writer).
    for (i, (t, &(abs, _))) in gguf.tensors().zip(&layout.tensors).enumerate() {
        if t.info.abs_offset() != abs || layout.header_len != data_offset {
            return Err(usage_error(&format!(
                "{name}'s tensor data is not in canonical layout (tensor {i} {} is at byte {}; \
                 the canonical place is {}), so a rewritten header cannot describe it in place; \
                 use -o OUT to write a new, canonical file",
                escape::quoted(t.name.as_bytes()),
                group(t.info.abs_offset()),
                group(abs)
            )));
        }
    }
    let planned = plan_tensors(&writer, gguf, &layout);
    let new_header = writer.header_bytes().map_err(|e| invalid(&e))?;
    let Some(old_header) = gguf.bytes().get(..new_header.len()) else {
        return Err(usage_error("the file's header could not be read whole"));
    };
    let stats = rewrite_header_locked(lock, old_header, &new_header)
        .map_err(|e| usage_error(&in_place_message(&e)))?;
    if stats.runs.is_empty() {
        return Ok(None);
    }
    Ok(Some(Rewritten {
        planned,
        header: (new_header.len() as u64, xxhash_rust::xxh3::xxh3_64(&new_header)),
        rewritten: stats.rewritten,
        applied,
        keys: (gguf.kv_len(), writer.kvs().len()),
        padding,
    }))
}

/// [`GgufWriter::pad_to`] for an in-place edit: the header is made to end where the source's
/// directory ended (so, with [`place_padding`], every byte after the edits stays where it was)
/// when a padding pair can do that; otherwise at the source's data offset (absorbing its
/// alignment padding). Returns the padding pair's size (0: none).
fn fit_in_place(
    writer: &mut GgufWriter<'_>,
    source: &Gguf<impl AsRef<[u8]>>,
) -> Result<u64, WriteError> {
    let dir_end = source.directory().directory_end();
    let data_offset = source.data_offset();
    if dir_end < data_offset {
        let mut exact = writer.clone();
        if let Ok(p) = exact.pad_to(dir_end)
            && p > 0
            && exact.layout().map(|l| l.header_len) == Ok(data_offset)
        {
            *writer = exact;
            return Ok(p);
        }
    }
    writer.pad_to(data_offset)
}

/// Moves the padding pair [`GgufWriter::pad_to`] appended to just before the pairs the edits
/// left as they were at the end (the longest common suffix with the source's pairs), or to
/// where an earlier padding pair was if that lies in the suffix, so the bytes that change —
/// and must be backed up and rewritten — are only those between the first edit and the
/// padding, not the whole vocabulary after it. (Where it goes does not change the header's
/// length.)
fn place_padding(writer: &mut GgufWriter<'_>, source: &Gguf<impl AsRef<[u8]>>) {
    let pad = PADDING_KEY.as_bytes();
    let old: Vec<(&[u8], Value<'_>)> = source
        .metadata()
        .filter(|e| e.key.as_bytes() != pad)
        .map(|e| (e.key.as_bytes(), Value::from(e.value)))
        .collect();
    let kvs = writer.kvs_mut();
    let Some(at) = kvs.iter().position(|(k, _)| k.as_ref() == pad) else { return };
    let pair = kvs.remove(at);
    let same = old
        .iter()
        .rev()
        .zip(kvs.iter().rev())
        .take_while(|((ok, ov), (nk, nv))| *ok == nk.as_ref() && ov == nv)
        .count();
    let mut to = kvs.len().saturating_sub(same);
    // An earlier padding pair inside the unchanged suffix: keep the new one in its place.
    if let Some(q) = source.metadata().position(|e| e.key.as_bytes() == pad) {
        let tail = old.len().saturating_sub(q);
        if same >= tail {
            to = kvs.len().saturating_sub(tail);
        }
    }
    kvs.insert(to, pair);
}

fn check_in_place(
    path: &Path,
    (len, hash): (u64, u64),
    planned: &[Planned],
    file: &File,
) -> Result<(), String> {
    // Through the descriptor the edit wrote to: the file, whatever its path names now.
    let reopen = || {
        let clone = file
            .try_clone()
            .map_err(|source| StreamError::Open { path: path.to_path_buf(), source })?;
        GgufFile::from_backing(
            FileBacking::from_file(clone, path, Backend::Pread)?,
            &OpenOptions::default(),
        )
    };
    let written = reopen()
        .map_err(|e| format!("it does not re-open: {}", escape::message(&e.to_string())))?;
    let header = written.gguf().bytes().get(..usize::try_from(len).unwrap_or(usize::MAX));
    if header.map(xxhash_rust::xxh3::xxh3_64) != Some(hash) {
        return Err("its header differs from the one written".to_owned());
    }
    // The source is the file itself: its tensor bytes must not have moved.
    check_tensors(&written, planned, written.store().source())
}

/// `--recover`: put the header backup back ([`in_place::recover`]).
fn recover(path: &Path) -> io::Result<Exit> {
    match in_place::recover(path) {
        Ok(stats) => {
            let mut o = io::stdout().lock();
            writeln!(
                o,
                "restored {} bytes of the header of {} from {}; the header checks out; removed \
                 the backup",
                group(stats.restored),
                display(path),
                display(&stats.backup)
            )?;
            o.flush()?;
            Ok(Exit::Ok)
        }
        Err(e) => Ok(usage_error(&in_place_message(&e))),
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // runs of bytes, one on purpose
mod tests {
    use super::*;
    use sipllm_streaming::in_place::{BLOCK, changed_runs};
    use sipllm_testkit::{GgufBuilder, Value as B};

    /// An edit near the start of a large header touches a block or two: the padding pair goes
    /// right after the edited pair, not after the vocabulary.
    #[test]
    fn an_in_place_edit_near_the_start_changes_a_few_blocks() {
        let tokens: Vec<String> = (0..20_000).map(|i| format!("token{i}")).collect();
        let bytes = GgufBuilder::new()
            .kv("general.architecture", B::str("llama"))
            .kv("general.name", B::str("a name long enough to shrink by more than 41 bytes!!"))
            .kv("tokenizer.ggml.tokens", B::strings(&tokens))
            .kv(
                "tokenizer.chat_template",
                B::str("{{ x }} and a tail long enough to cut: 41+ bytes"),
            )
            .tensor("t", GgmlType::F32, &[8])
            .build();
        let g =
            sipllm_gguf::parse_with(bytes.clone(), &sipllm_gguf::ParseOptions::default()).unwrap();
        let header = &bytes[..g.data_offset() as usize];
        assert!(header.len() > 50 * BLOCK);
        let edit = |key: &str, value: &'static str| {
            let mut w = GgufWriter::from_gguf(&g);
            w.set(key.as_bytes().to_vec(), Value::str(value));
            assert!(fit_in_place(&mut w, &g).unwrap() > 0);
            place_padding(&mut w, &g);
            w.header_bytes().unwrap()
        };
        let new = edit("general.name", "x");
        assert_eq!(new.len(), header.len());
        assert_eq!(changed_runs(header, &new), [0..BLOCK]);
        let parsed = sipllm_gguf::parse_with(&new[..], &Default::default()).unwrap();
        let keys: Vec<&[u8]> = parsed.metadata().map(|e| e.key.as_bytes()).collect();
        assert_eq!(keys[2], PADDING_KEY.as_bytes(), "right after the edited pair");
        // Editing a pair after the vocabulary changes the count field and the tail only.
        let new = edit("tokenizer.chat_template", "{{ y }}");
        let runs = changed_runs(header, &new);
        assert_eq!(runs.first(), Some(&(0..BLOCK)));
        assert!(runs.iter().map(|r| r.len()).sum::<usize>() <= 3 * BLOCK, "{runs:?}");
    }
}
