//! `sipllm edit FILE (-o OUT | --in-place | --recover) [--set …] [--set-array …]
//! [--set-file …] [--delete …] [--rename-tensor …]`: metadata edits and tensor renames on a
//! GGUF file, without touching tensor data.
//!
//! The command parses the edits (the value syntax is in [`crate::values`]; every bad argument
//! is reported, not only the first), opens FILE locked ([`open_locked`]: exclusively for
//! `--in-place`, so a second editor is refused and readers wait), and hands the rest to the
//! write side ([`sipllm_edit::edit`]): planning, the out-of-place write into a checked
//! temporary, or the in-place fit and crash-safe rewrite. It renders what the library
//! reports ([`crate::render::edit`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use sipllm_edit::edit::{self, Edit, EditError, EditErrors};
use sipllm_edit::{HeaderBackup, InPlaceError, identity, in_place};
use sipllm_streaming::lock::ExclusiveLock;
use sipllm_streaming::{GgufFile, Model};

use crate::cli::EditArgs;
use crate::commands::{UrlRefusal, refuse_url, report_open_error, usage_error};
use crate::open::{model_of, open_locked};
use crate::render::edit::{changes, edit_error, in_place_error, in_place_line, notes};
use crate::render::escape;
use crate::render::value::group;
use crate::{Ctx, Exit, values};

/// Runs `edit`. `matches` (the subcommand's) gives the order of the edit options; without it
/// they apply grouped by option.
pub fn run(args: &EditArgs, matches: Option<&ArgMatches>, ctx: &Ctx) -> io::Result<Exit> {
    let name = display(&args.file);
    // A URL has no local file to rewrite (`-o` fetches it into a temporary instead).
    let refusal = match (args.recover, args.in_place) {
        (true, _) => Some(UrlRefusal::Recover),
        (false, true) => Some(UrlRefusal::InPlace),
        (false, false) => None,
    };
    if let Some(exit) = refusal.and_then(|r| refuse_url(&args.file, r, ctx)) {
        return Ok(exit);
    }
    if args.recover {
        return recover(&args.file, &name);
    }
    // An output with an interrupted edit's backup (an output that is FILE is checked with
    // FILE, under its lock, below).
    if let Some(out) = &args.output
        && !identity::same_file(out, &args.file)
        && let Some(e) = pending(out)
    {
        in_place_error(&e, &display(out));
        return Ok(Exit::Trouble);
    }
    let edits = match parse_edits(args, matches) {
        Ok(edits) => edits,
        Err(bad) => {
            for b in bad {
                match b {
                    Bad::Syntax(msg) => drop(usage_error(&msg)),
                    Bad::Edit(e) => edit_error(&e, &name),
                }
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
    // runs"); an out-of-place edit reads under a shared lock.
    let file = match open_locked(&args.file, args.in_place) {
        Ok(file) => file,
        Err(e @ sipllm_streaming::StreamError::Locked { .. }) => {
            in_place_error(&InPlaceError::Read(e), &name);
            return Ok(Exit::Trouble);
        }
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let lock = if args.in_place {
        match ExclusiveLock::try_new(&file, &args.file) {
            Ok(lock) => Some(lock),
            Err(e) => {
                in_place_error(&InPlaceError::Read(e), &name);
                return Ok(Exit::Trouble);
            }
        }
    } else {
        None
    };
    // Under the lock, a backup is an interrupted edit's, never a running one's.
    if let Some(e) = pending(&args.file) {
        in_place_error(&e, &name);
        return Ok(Exit::Trouble);
    }
    let model = match model_of(&file, &args.file) {
        Ok(model) => model,
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    if model.gguf().is_none() {
        return Ok(report(&EditError::NotGguf.into(), &name));
    }
    match (&args.output, &lock) {
        (Some(out), _) => out_of_place(&args.file, model, &file, edits, out, ctx),
        (None, Some(lock)) => run_in_place(lock, model, edits),
        (None, None) => Ok(usage_error("give -o OUT or --in-place")),
    }
}

/// The interrupted in-place edit `model` has a header backup of, if any.
pub fn pending(model: &Path) -> Option<InPlaceError> {
    let backup = HeaderBackup::pending(model)?;
    Some(InPlaceError::Pending { path: model.to_path_buf(), backup })
}

/// The edits in command-line order, or every argument that is wrong (in that order).
pub fn parse_edits(args: &EditArgs, matches: Option<&ArgMatches>) -> Result<Vec<Edit>, Vec<Bad>> {
    type Parser = fn(&str) -> Result<Edit, Bad>;
    let groups: [(&str, &str, &[String], Parser); 5] = [
        ("set", "--set", &args.set, |s| {
            let (key, value) = values::parse_set(s)?;
            Ok(Edit::Set { key, value, from: None })
        }),
        ("set_array", "--set-array", &args.set_array, |s| {
            let (key, value) = values::parse_set_array(s)?;
            Ok(Edit::Set { key, value, from: None })
        }),
        ("set_file", "--set-file", &args.set_file, |s| {
            let (key, path) =
                values::split_key(s, "KEY=PATH, e.g. tokenizer.chat_template=t.jinja")?;
            Ok(Edit::set_file(key, &PathBuf::from(path))?)
        }),
        ("delete", "--delete", &args.delete, |s| match s.is_empty() {
            true => Err(Bad::Syntax("\"\": the key is empty".to_owned())),
            false => Ok(Edit::Delete { key: s.to_owned() }),
        }),
        ("rename_tensor", "--rename-tensor", &args.rename_tensor, |s| {
            let (old, new) = values::split_key(s, "OLD=NEW, e.g. output.weight=lm_head.weight")?;
            Ok(Edit::rename(old, new)?)
        }),
    ];
    let mut all: Vec<(usize, Result<Edit, Bad>)> = Vec::new();
    for (rank, (id, flag, items, parse)) in groups.into_iter().enumerate() {
        let indices: Vec<usize> =
            matches.and_then(|m| m.indices_of(id)).map(|i| i.collect()).unwrap_or_default();
        for (n, item) in items.iter().enumerate() {
            let at = indices.get(n).copied().unwrap_or(rank * 1_000_000 + n);
            let parsed = parse(item).map_err(|e| match e {
                Bad::Syntax(msg) => Bad::Syntax(format!("{flag} {msg}")),
                e => e,
            });
            all.push((at, parsed));
        }
    }
    all.sort_by_key(|(at, _)| *at);
    let (mut edits, mut errors) = (Vec::with_capacity(all.len()), Vec::new());
    for (_, r) in all {
        match r {
            Ok(e) => edits.push(e),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(edits) } else { Err(errors) }
}

/// A bad argument: the CLI's value syntax (`--set KEY=TYPE:VALUE`, its message naming the
/// argument), or an edit the library refused.
#[derive(Debug)]
pub enum Bad {
    /// A value-syntax error.
    Syntax(String),
    /// The library's refusal.
    Edit(Box<EditError>),
}

impl From<String> for Bad {
    fn from(s: String) -> Bad {
        Bad::Syntax(s)
    }
}

impl From<EditError> for Bad {
    fn from(e: EditError) -> Bad {
        Bad::Edit(Box::new(e))
    }
}

fn display(p: &Path) -> String {
    escape::str(&p.display().to_string()).into_owned()
}

/// Renders every error (exit code 2).
fn report(errors: &EditErrors, name: &str) -> Exit {
    for e in errors.iter() {
        edit_error(e, name);
    }
    Exit::Trouble
}

/// The out-of-place edit: a checked temporary beside `out`, renamed over it.
fn out_of_place(
    path: &Path,
    model: Model,
    file: &std::fs::File,
    edits: Vec<Edit>,
    out: &Path,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let (name, out_name) = (display(path), display(out));
    if out.is_dir() {
        return Ok(usage_error(&format!("-o {out_name}: is a directory; give a file name")));
    }
    let bar = crate::progress::bar(ctx, 0);
    let mut feed = crate::progress::feed_total(&bar);
    let pending = edit::write_edited_with(gguf(&model), file, edits, out, &mut feed);
    bar.finish_and_clear();
    let pending = match pending {
        Ok(p) => p,
        Err(errors) => return Ok(report(&errors, &name)),
    };
    // The source's header is not needed any more: the check's re-open must not hold a second
    // copy beside it (peak memory stays about one header).
    drop(model);
    let stats = pending.stats;
    let checked = match edit::source_reader(file, path) {
        Ok(source) => pending.check_and_commit(&source),
        Err(e) => Err(e.into()),
    };
    let report_ = match checked {
        Ok(r) => r,
        Err(e) => return Ok(report(&e.into(), &name)),
    };
    let mut o = io::stdout().lock();
    changes(&mut o, &format!("edited {name} -> {out_name}"), &report_, &name)?;
    crate::render::edit::summary_lines(&mut o, &report_, &stats)?;
    writeln!(
        o,
        "checked {out_name}: re-opened (strict profile); header as planned; {} tensors at their \
         planned offsets, the first and last {} bytes of each equal to {name}'s",
        report_.planned.len(),
        edit::SAMPLE
    )?;
    o.flush()?;
    notes(&report_);
    Ok(Exit::Ok)
}

fn gguf(model: &Model) -> &GgufFile {
    model.gguf().expect("checked by run")
}

/// The in-place edit: the fit and crash-safe rewrite, then the check.
fn run_in_place(lock: &ExclusiveLock<'_>, model: Model, edits: Vec<Edit>) -> io::Result<Exit> {
    let (path, file) = (lock.path(), lock.file());
    let name = display(path);
    let done = match edit::rewrite_in_place(lock, gguf(&model), edits) {
        Ok(Some(done)) => done,
        Ok(None) => {
            let mut o = io::stdout().lock();
            writeln!(o, "{name} already has these values: nothing written")?;
            o.flush()?;
            return Ok(Exit::Ok);
        }
        Err(errors) => return Ok(report(&errors, &name)),
    };
    drop(model);
    let r = &done.report;
    let mut o = io::stdout().lock();
    changes(&mut o, &format!("edited {name} in place"), r, &name)?;
    writeln!(o, "{}", in_place_line(&done))?;
    o.flush()?;
    drop(o);
    if let Err(e) = done.check(path, file) {
        return Ok(report(&e.into(), &name));
    }
    let mut o = io::stdout().lock();
    writeln!(
        o,
        "checked {name}: re-opened (strict profile); header as written; {} tensors where they \
         were",
        r.planned.len()
    )?;
    o.flush()?;
    notes(r);
    Ok(Exit::Ok)
}

/// `--recover`: put the header backup back ([`in_place::recover`]).
fn recover(path: &Path, name: &str) -> io::Result<Exit> {
    match in_place::recover(path) {
        Ok(stats) => {
            let mut o = io::stdout().lock();
            writeln!(
                o,
                "restored {} bytes of the header of {name} from {}; the header checks out; \
                 removed the backup",
                group(stats.restored),
                display(&stats.backup)
            )?;
            o.flush()?;
            Ok(Exit::Ok)
        }
        Err(e) => {
            in_place_error(&e, name);
            Ok(Exit::Trouble)
        }
    }
}
