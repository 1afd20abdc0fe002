//! `sipllm edit FILE (-o OUT | --in-place | --recover) [--set …] [--set-array …]
//! [--set-file …] [--delete …] [--rename-tensor …]`: metadata edits and tensor renames on a
//! GGUF file, without touching tensor data.
//!
//! The command parses the edits (the value syntax is in [`crate::values`]), makes one call to
//! the write side ([`header::edit_out_of_place`] or [`header::edit_in_place`]), which owns the
//! whole protocol (the lock, the backup refusal, planning, the checked write or the in-place
//! fit and crash-safe rewrite), and renders what it reports ([`crate::render::edit`]). Every
//! bad argument is reported in one run: when some do not parse, the same call plans the rest
//! against the model ([`EditOptions::plan_only`]) and reports what the model refuses too.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ArgMatches;
use sipllm_edit::header::{
    self, Edit, EditError, EditErrors, EditOptions, InPlace, Input, OutOfPlace, Rewritten,
};
use sipllm_edit::{HeaderBackup, InPlaceError, InPlaceErrorKind, in_place};

use crate::cli::EditArgs;
use crate::commands::{UrlRefusal, refuse_url, report_open_error, usage_error};
use crate::open::{fetch, remote_name, shown_name};
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
    let (edits, bad) = parse_edits(args, matches);
    for b in &bad {
        match b {
            Bad::Syntax(msg) => drop(usage_error(msg)),
            Bad::Edit(e) => edit_error(e, &name),
        }
    }
    if !bad.is_empty() && remote_name(&args.file).is_some() {
        // Not a whole download only to plan the rest.
        return Ok(Exit::Trouble);
    }
    if bad.is_empty() {
        if args.in_place && edits.is_empty() {
            return Ok(usage_error(
                "nothing to edit: give --set, --set-array, --set-file, --delete or \
                 --rename-tensor",
            ));
        }
        if let Some(out) = args.output.as_deref().filter(|out| out.is_dir()) {
            let out = display(out);
            return Ok(usage_error(&format!("-o {out}: is a directory; give a file name")));
        }
    }
    let options = EditOptions::default().plan_only(!bad.is_empty());
    let exit = match (&args.output, args.in_place) {
        (Some(out), _) => out_of_place(args, edits, out, &options, ctx)?,
        (None, true) => run_in_place(args, edits, &options, ctx)?,
        (None, false) => usage_error("give -o OUT or --in-place"),
    };
    Ok(if bad.is_empty() { exit } else { Exit::Trouble })
}

/// The interrupted in-place edit `model` has a header backup of, if any.
pub fn pending(model: &Path) -> Option<InPlaceError> {
    let backup = HeaderBackup::pending(model)?;
    Some(InPlaceError::with_backup(model.to_path_buf(), backup, InPlaceErrorKind::Pending))
}

/// The edits that parse, in command-line order, and every argument that is wrong (in that
/// order).
pub fn parse_edits(args: &EditArgs, matches: Option<&ArgMatches>) -> (Vec<Edit>, Vec<Bad>) {
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
    (edits, errors)
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

/// Renders every error: exit code 2, or the read side's for a model that cannot be opened.
fn report(errors: &EditErrors, path: &Path, ctx: &Ctx) -> Exit {
    let name = display(path);
    let mut exit = Exit::Trouble;
    for e in errors.iter() {
        match e {
            EditError::Open(e) => exit = report_open_error(path, e, ctx),
            // The output's backup, too, is about the output (its help names it).
            EditError::InPlace(e) => match (e.kind(), e.path()) {
                (InPlaceErrorKind::Pending, Some(path)) => in_place_error(e, &display(path)),
                _ => in_place_error(e, &name),
            },
            e => edit_error(e, &name),
        }
    }
    exit
}

/// The out-of-place edit: one call, then its report.
fn out_of_place(
    args: &EditArgs,
    edits: Vec<Edit>,
    out: &Path,
    options: &EditOptions,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let path = args.file.as_path();
    let (name, out_name) = (display(path), display(out));
    // A URL is fetched whole into a private temporary file first (it is all copied anyway).
    let shown = PathBuf::from(shown_name(path));
    let input = match remote_name(path) {
        Some(url) => match fetch(url) {
            Ok(file) => Input::Private { file, name: &shown },
            Err(e) => return Ok(report_open_error(path, &e, ctx)),
        },
        None => Input::Path(path),
    };
    let bar = crate::progress::bar(ctx, 0);
    let mut feed = crate::progress::feed_total(&bar);
    let done = header::edit_out_of_place(input, out, edits, options, &mut feed);
    bar.finish_and_clear();
    let (report_, stats) = match done {
        Ok(OutOfPlace::Written { report, stats }) => (report, stats),
        Ok(_) => return Ok(Exit::Trouble),
        Err(errors) => return Ok(report(&errors, path, ctx)),
    };
    let mut o = io::stdout().lock();
    changes(&mut o, &format!("edited {name} -> {out_name}"), &report_, &name)?;
    crate::render::edit::summary_lines(&mut o, &report_, &stats)?;
    writeln!(
        o,
        "checked {out_name}: re-opened (strict profile); header as planned; {} tensors at their \
         planned offsets, the first and last {} bytes of each equal to {name}'s",
        report_.planned.len(),
        header::SAMPLE
    )?;
    o.flush()?;
    notes(&report_);
    Ok(Exit::Ok)
}

/// The in-place edit: one call, then its report.
fn run_in_place(
    args: &EditArgs,
    edits: Vec<Edit>,
    options: &EditOptions,
    ctx: &Ctx,
) -> io::Result<Exit> {
    let name = display(&args.file);
    let done = match header::edit_in_place(&args.file, edits, options) {
        Ok(InPlace::Rewritten(done)) => done,
        Ok(InPlace::Unchanged) => {
            let mut o = io::stdout().lock();
            writeln!(o, "{name} already has these values: nothing written")?;
            o.flush()?;
            return Ok(Exit::Ok);
        }
        Ok(_) => return Ok(Exit::Trouble),
        Err(errors) => {
            // Rewritten but not as written: what was written, then why it does not check out.
            if let [EditError::InPlaceCheck { written, .. }] = &errors.0[..] {
                rewritten(&mut io::stdout().lock(), written, &name)?;
            }
            return Ok(report(&errors, &args.file, ctx));
        }
    };
    let r = &done.report;
    let mut o = io::stdout().lock();
    rewritten(&mut o, &done, &name)?;
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

/// `edited FILE in place`, the changes and what was rewritten.
fn rewritten(o: &mut dyn Write, done: &Rewritten, name: &str) -> io::Result<()> {
    changes(o, &format!("edited {name} in place"), &done.report, name)?;
    writeln!(o, "{}", in_place_line(done))?;
    o.flush()
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
