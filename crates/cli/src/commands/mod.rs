//! One module per command, and what they share: opening a file (or reporting why it cannot be
//! opened) and compiling `--filter`.

use std::io::{self, Write};
use std::path::Path;

use sipllm_edit::{SplitError, WriteError, identity};
use sipllm_streaming::{Backend, FileBacking, ReadAt, StreamError, StreamErrorKind};

use crate::diagnostic::{FileDiagnostic, Finding, Renderer};
use crate::glob::Glob;
use crate::open::{OpenSettings, Opened, is_invalid_file, open_file};
use crate::render::escape;
use crate::{Ctx, Exit};

pub mod completions;
pub mod convert;
pub mod diff;
pub mod edit;
pub mod fit;
pub mod inspect;
pub mod make_toy;
pub mod merge;
pub mod range;
pub mod read;
pub mod safetensors;
pub mod split;
pub mod template;
pub mod tensors;
pub mod validate;
pub mod values;
pub mod verify;
pub mod web;

/// Opens `path`, or renders why it cannot be opened to standard error and returns the exit
/// code (1 for an invalid file, 2 for an I/O error).
pub fn open_or_report(path: &Path, settings: &OpenSettings, ctx: &Ctx) -> Result<Opened, Exit> {
    open_file(path, settings).map_err(|e| report_open_error(path, &e, ctx))
}

/// Renders an open error as a diagnostic (with a hex window when the file can be read) on
/// standard error; returns the exit code it implies.
pub fn report_open_error(path: &Path, e: &StreamError, ctx: &Ctx) -> Exit {
    let diag = diagnose_open_error(path, e);
    let renderer = Renderer { color: ctx.color_stderr, width: ctx.width };
    let _ = io::stderr().write_all(renderer.render(&diag).as_bytes());
    if is_invalid_file(e) { Exit::Invalid } else { Exit::Trouble }
}

/// The diagnostic for an open error, with the bytes around the offending offset. The error's
/// own file is shown when it names one (another shard of a split set, say), else `path`.
pub fn diagnose_open_error(path: &Path, e: &StreamError) -> FileDiagnostic {
    let path = e.path().unwrap_or(path);
    let name = crate::open::shown_name(path);
    let finding = Finding::from_stream_error(e);
    // A file another process holds locked is not opened again for the hex view: that would
    // wait for the lock a second time.
    let backing = match e.kind() {
        StreamErrorKind::Locked { .. } => None,
        _ => FileBacking::open(path, Backend::Pread).ok(),
    };
    FileDiagnostic::new(finding, &name, backing.as_ref().map(|b| b as &dyn ReadAt))
}

/// Renders a write-side error as a diagnostic about the file it concerns (its own, else
/// `path`); returns exit code 2 (a read error inside it keeps the read side's exit code).
pub fn report_write_error(path: &Path, e: &WriteError, ctx: &Ctx) -> Exit {
    match e.read_error() {
        Some(r) => report_open_error(path, r, ctx),
        None => report_finding(e.path().unwrap_or(path), Finding::from_error(e), ctx),
    }
}

/// Renders a split or merge error (as [`report_write_error`]).
pub fn report_split_error(path: &Path, e: &SplitError, ctx: &Ctx) -> Exit {
    match (e.read_error(), e.write_error()) {
        (Some(r), _) => report_open_error(path, r, ctx),
        (_, Some(w)) => report_write_error(path, w, ctx),
        _ => report_finding(e.path().unwrap_or(path), Finding::from_error(e), ctx),
    }
}

/// Refuses (exit code 2, a coded diagnostic naming the URL, credentials redacted) a URL where
/// a command needs a local file: `edit --in-place` and `--recover` (the file itself is
/// rewritten), `split` and `merge` (they copy file to file). `None` for a local path.
pub fn refuse_url(path: &Path, command: UrlRefusal, ctx: &Ctx) -> Option<Exit> {
    crate::open::remote_name(path)?;
    let (code, message, help) = match command {
        UrlRefusal::InPlace => (
            "edit::url_in_place",
            "a URL cannot be edited in place: there is no file here to rewrite",
            "download the file first (`curl -LO URL`) and edit that copy in place, or write an \
             edited copy with `-o OUT` (the URL is then fetched once into a temporary file)",
        ),
        UrlRefusal::Recover => (
            "edit::url_in_place",
            "a URL has no header backup to recover from: only a local file edited in place has",
            "give the path of the local file whose in-place edit was interrupted",
        ),
        UrlRefusal::Split => (
            "split::url_input",
            "split and merge read local files only (they copy tensor data file to file)",
            "download the file (or every shard) first, e.g. `curl -LO URL`, and give the local \
             path",
        ),
    };
    let finding = Finding {
        severity: crate::diagnostic::Severity::Error,
        code,
        message: message.to_owned(),
        path: String::new(),
        offset: None,
        len: 0,
        help: help.to_owned(),
    };
    Some(report_finding(path, finding, ctx))
}

/// What [`refuse_url`] refuses a URL for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlRefusal {
    /// `edit --in-place`.
    InPlace,
    /// `edit --recover`.
    Recover,
    /// `split`, `merge`.
    Split,
}

/// Renders `finding` about the file at `path` (no hex window: it is no byte range's);
/// returns exit code 2.
fn report_finding(path: &Path, finding: Finding, ctx: &Ctx) -> Exit {
    let diag = FileDiagnostic::new(finding, &crate::open::shown_name(path), None);
    let renderer = Renderer { color: ctx.color_stderr, width: ctx.width };
    let _ = io::stderr().write_all(renderer.render(&diag).as_bytes());
    Exit::Trouble
}

/// Refuses (exit code 2, the coded diagnostic) to write `output` when it is one of the files
/// `opened` holds — `file`, or every shard of the set it opened — by file identity: a symlink
/// or hard link to an input is that input. `-` (standard output) is never a file here.
pub fn refuse_input_as_output(
    file: &Path,
    opened: &Opened,
    output: &Path,
    what: &'static str,
    ctx: &Ctx,
) -> Result<(), Exit> {
    if output == Path::new("-") {
        return Ok(());
    }
    let shards: Vec<&Path> = match opened.split() {
        Some(set) => set.paths().flatten().collect(),
        None => vec![file],
    };
    for input in shards {
        if let Err(e) = identity::refuse_output_is_input(input, output, what) {
            return Err(report_write_error(file, &e, ctx));
        }
    }
    Ok(())
}

/// Writes an auxiliary output (`read -o`: raw bytes or values; `verify --manifest`) as model
/// files are written ([`AtomicFile`](sipllm_edit::write::AtomicFile)): `write` fills a
/// temporary beside `path`, which replaces `path` only once complete and synced, and only if
/// `write` returns [`Exit::Ok`]. A kill, a full file system or a failed read leaves the
/// previous file as it was (and no half-written one). An existing `path` that is not a
/// regular file — a FIFO, which would block the write forever, or a device — is refused (exit
/// code 2): it cannot be replaced atomically, and standard output (`-o -`) is the stream
/// path. The caller has refused an output that is its input first.
pub fn write_output(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<Exit>) -> Exit {
    let shown = escape::str(&path.display().to_string()).into_owned();
    let out = match sipllm_edit::write::AtomicFile::create(path) {
        Ok(out) => out,
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            return usage_error(&format!(
                "cannot write {shown}: {e} (`-o -` writes to standard output)"
            ));
        }
        Err(e) => return usage_error(&format!("cannot create {shown}: {e}")),
    };
    let mut buffered = io::BufWriter::with_capacity(1 << 20, out.file());
    let exit = match write(&mut buffered) {
        Ok(Exit::Ok) => Exit::Ok,
        // Not committed: the temporary is removed and `path` keeps what it held.
        Ok(exit) => return exit,
        Err(e) => return usage_error(&format!("cannot write {shown}: {e}")),
    };
    if let Err(e) = buffered.into_inner().map_err(io::IntoInnerError::into_error) {
        return usage_error(&format!("cannot write {shown}: {e}"));
    }
    match out.commit() {
        Ok(()) => exit,
        Err(e) => usage_error(&format!("cannot write {shown}: {e}")),
    }
}

/// The header backups an interrupted `edit --in-place` left (`.NAME.header-backup`) beside
/// the file `path` opened as `opened` — beside each shard, for a split set: `(file, backup)`.
/// Readers parse such a file as it is, but its header may be half-rewritten until
/// `edit --recover` restores it, so `validate` and `inspect` say so. A URL has none.
pub fn pending_backups(
    path: &Path,
    opened: &Opened,
) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    if crate::open::remote_name(path).is_some() {
        return Vec::new();
    }
    let files: Vec<&Path> = match opened.split() {
        Some(set) => set.paths().flatten().collect(),
        None => vec![path],
    };
    files
        .into_iter()
        .filter_map(|f| {
            sipllm_edit::in_place::HeaderBackup::pending(f).map(|b| (f.to_path_buf(), b))
        })
        .collect()
}

/// The warning about a pending header backup ([`pending_backups`]) of `file`.
pub fn pending_backup_finding(file: &Path, backup: &Path) -> Finding {
    let show = |p: &Path| escape::str(&p.display().to_string()).into_owned();
    Finding {
        severity: crate::diagnostic::Severity::Warning,
        code: PENDING_BACKUP,
        message: format!(
            "an in-place edit of this file was interrupted: its header backup {} is still \
             there, so the header may be half-rewritten",
            show(backup)
        ),
        path: String::new(),
        offset: None,
        len: 0,
        help: format!(
            "run `sipllm edit --recover {}` to restore the header from the backup (a backup \
             that does not fit the file is refused, and the file left as it is).",
            show(file)
        ),
    }
}

/// The code of [`pending_backup_finding`]: the write side's, for the same state (an edit
/// refused while the backup exists).
const PENDING_BACKUP: &str = "edit::in_place::pending";

/// Compiles `--filter`, or reports the bad pattern on standard error (exit code 2).
pub fn compile_filter(pattern: Option<&str>) -> Result<Option<Glob>, Exit> {
    let Some(p) = pattern else { return Ok(None) };
    Glob::new(p).map(Some).map_err(|e| {
        usage_error(&format!("invalid --filter pattern {}: {e}", escape::quoted(p.as_bytes())))
    })
}

/// Reports a usage or I/O problem on standard error; returns exit code 2.
pub fn usage_error(msg: &str) -> Exit {
    let _ = writeln!(io::stderr(), "sipllm: {msg}");
    Exit::Trouble
}

/// True when `name` passes the filter (always, without one).
pub fn keep(filter: Option<&Glob>, name: &[u8]) -> bool {
    filter.is_none_or(|g| g.matches(&String::from_utf8_lossy(name)))
}

/// `; did you mean "NAME"?` naming the candidate nearest to `wanted` (edit distance at most a
/// third of its length, 2 at least), or nothing. For unknown keys and tensor names.
pub fn did_you_mean<'a>(wanted: &[u8], candidates: impl Iterator<Item = &'a [u8]>) -> String {
    let limit = (wanted.len() / 3).max(2);
    let mut best: Option<(usize, &[u8])> = None;
    for c in candidates {
        // Names far longer or shorter cannot be near: skip them without the distance.
        if c.len().abs_diff(wanted.len()) > limit {
            continue;
        }
        let d = edit_distance(wanted, c);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map_or_else(String::new, |(_, c)| format!("; did you mean {}?", escape::quoted(c)))
}

/// Levenshtein distance of two byte strings (one row of the table at a time).
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let next = (diagonal + usize::from(x != y)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_name_the_nearest_name() {
        let names: [&[u8]; 3] = [b"blk.0.attn_q.weight", b"blk.0.attn_k.weight", b"output.weight"];
        assert_eq!(
            did_you_mean(b"blk.0.atn_q.weight", names.into_iter()),
            "; did you mean \"blk.0.attn_q.weight\"?"
        );
        assert_eq!(
            did_you_mean(b"output.weigth", names.into_iter()),
            "; did you mean \"output.weight\"?"
        );
        assert_eq!(did_you_mean(b"nothing.like.it", names.into_iter()), "");
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
    }
}
