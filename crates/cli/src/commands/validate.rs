//! `sipllm validate FILE...`: every problem as a diagnostic over a hex view (or as JSON
//! lines), a verdict per file, and the exit code contract: 0 valid, 1 invalid, 2 unreadable.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sipllm_streaming::{Backend, FileBacking, ReadAt};

use crate::cli::{ReportFormat, ValidateArgs};
use crate::diagnostic::{FileDiagnostic, Finding, Renderer, Severity};
use crate::open::{Format, OpenSettings, Opened, is_invalid_file, open_file};
use crate::render::escape;
use crate::render::json::write_line;
use crate::{Ctx, Exit};

/// The outcome for one file (for a shard of a split set: for the whole set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What was found, in file order (the fatal error, if any, last).
    pub findings: Vec<Finding>,
    /// Per finding, the file its offset is in when that is not the file validated (another
    /// shard of a split set); `None` for the file validated.
    pub files: Vec<Option<PathBuf>>,
    /// The exit code this file implies.
    pub exit: Exit,
    /// How the file was read (`GGUF v3, strict profile`), when it could be parsed.
    pub read_as: Option<String>,
}

/// Validates one file.
pub fn check(path: &Path, settings: &OpenSettings, deny_warnings: bool) -> Outcome {
    check_container(path, settings, deny_warnings).0
}

/// Validates one file, then (`model`) checks it as llama.cpp's loader does: `validate
/// --model`. A file whose container is invalid is not checked further (llama.cpp stops there
/// too).
pub fn check_with(
    path: &Path,
    settings: &OpenSettings,
    deny_warnings: bool,
    model: bool,
) -> Outcome {
    let (mut outcome, opened) = check_container(path, settings, deny_warnings);
    if let (true, Some(opened)) = (model, opened.as_ref()) {
        match opened.model() {
            Some(m) => {
                let report = sipllm_model::load::check(m);
                let found = report.findings.iter().map(Finding::from_model_issue);
                outcome.files.extend(found.clone().map(|_| None));
                outcome.findings.extend(found);
                let denied = deny_warnings && !outcome.findings.is_empty();
                if !report.loads() || denied {
                    outcome.exit = outcome.exit.max(Exit::Invalid);
                }
                if let Some(how) = outcome.read_as.as_mut() {
                    let verdict = report.verdict();
                    how.push_str(&format!("; llama.cpp {verdict}"));
                }
            }
            None => outcome.exit = outcome.exit.max(Exit::Invalid),
        }
    }
    outcome
}

fn check_container(
    path: &Path,
    settings: &OpenSettings,
    deny_warnings: bool,
) -> (Outcome, Option<Opened>) {
    match open_file(path, settings) {
        Ok(opened) => {
            let (findings, files): (Vec<Finding>, Vec<Option<PathBuf>>) = match opened.split() {
                Some(set) => set
                    .shards()
                    .flat_map(|shard| {
                        let file = shard.path().filter(|p| *p != path).map(Path::to_path_buf);
                        let warnings = shard.gguf().warnings().iter();
                        warnings.map(move |w| (Finding::from_gguf_warning(w), file.clone()))
                    })
                    .unzip(),
                None => opened
                    .gguf()
                    .map(|g| g.warnings().iter().map(|w| (Finding::from_gguf_warning(w), None)))
                    .into_iter()
                    .flatten()
                    .unzip(),
            };
            let (mut findings, mut files) = (findings, files);
            for (file, backup) in crate::commands::pending_backups(path, &opened) {
                findings.push(crate::commands::pending_backup_finding(&file, &backup));
                files.push((file != path).then_some(file));
            }
            let exit = if deny_warnings && !findings.is_empty() { Exit::Invalid } else { Exit::Ok };
            let read_as = Some(read_as(&opened, settings));
            (Outcome { findings, files, exit, read_as }, Some(opened))
        }
        Err(e) => {
            let exit = if is_invalid_file(&e) { Exit::Invalid } else { Exit::Trouble };
            let file = e.path().filter(|p| *p != path).map(Path::to_path_buf);
            let outcome = Outcome {
                findings: vec![Finding::from_stream_error(&e)],
                files: vec![file],
                exit,
                read_as: None,
            };
            (outcome, None)
        }
    }
}

fn read_as(opened: &Opened, settings: &OpenSettings) -> String {
    if let Some(set) = opened.split() {
        let version = set.first().gguf().version();
        let profile = settings.profile.name();
        return format!("GGUF v{version}, a set of {} files, {profile} profile", set.shard_count());
    }
    match (opened.format(), opened.gguf(), opened.llmw()) {
        (Format::Gguf, Some(g), _) => {
            let alone = match (g.get_u64("split.no"), g.get_u64("split.count")) {
                (Some(no), Some(count)) if settings.shard_only && count > 1 => {
                    format!(", shard {} of {count} read alone", no.saturating_add(1))
                }
                _ => String::new(),
            };
            format!("GGUF v{}, {} profile{alone}", g.version(), settings.profile.name())
        }
        (Format::Llmw, _, Some(l)) => format!("LLMW v{}", l.version()),
        (format, _, _) => format.label().to_owned(),
    }
}

/// One line of `--format json`.
#[derive(Serialize)]
struct JsonFinding<'a> {
    file: &'a str,
    severity: &'static str,
    code: &'static str,
    offset: Option<u64>,
    length: Option<u64>,
    path: &'a str,
    message: &'a str,
    help: &'a str,
}

/// Runs `validate`.
pub fn run(args: &ValidateArgs, ctx: &Ctx) -> io::Result<Exit> {
    let settings = args.parse.settings();
    let renderer = Renderer { color: ctx.color_stdout, width: ctx.width };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut worst = Exit::Ok;
    let mut counts = [0usize; 3];
    for path in &args.files {
        let name = crate::open::shown_name(path);
        let outcome = check_with(path, &settings, args.deny_warnings, args.model);
        match args.format {
            ReportFormat::Json => {
                for (f, file) in outcome.findings.iter().zip(&outcome.files) {
                    let shown = file.as_deref().map(|p| p.display().to_string());
                    write_line(
                        &mut out,
                        &JsonFinding {
                            file: shown.as_deref().unwrap_or(&name),
                            severity: f.severity.name(),
                            code: f.code,
                            offset: f.offset,
                            length: f.offset.map(|_| f.len),
                            path: &f.path,
                            message: &f.message,
                            help: &f.help,
                        },
                    )?;
                }
            }
            ReportFormat::Human => {
                let backing = FileBacking::open(path, Backend::Pread).ok();
                for (f, file) in outcome.findings.iter().zip(&outcome.files) {
                    // A finding in another shard of a set is shown over that shard's bytes.
                    let other;
                    let (shown, bytes) = match file {
                        Some(p) => {
                            other = FileBacking::open(p, Backend::Pread).ok();
                            (p.display().to_string(), other.as_ref())
                        }
                        None => (name.clone(), backing.as_ref()),
                    };
                    let diag =
                        FileDiagnostic::new(f.clone(), &shown, bytes.map(|b| b as &dyn ReadAt));
                    out.write_all(renderer.render(&diag).as_bytes())?;
                }
                writeln!(out, "{}", verdict(&name, &outcome, &settings, args.deny_warnings))?;
            }
        }
        counts[outcome.exit as usize] += 1;
        worst = worst.max(outcome.exit);
    }
    if args.format == ReportFormat::Human && args.files.len() > 1 {
        writeln!(
            out,
            "\n{} files: {} valid, {} invalid, {} unreadable",
            args.files.len(),
            counts[0],
            counts[1],
            counts[2]
        )?;
    }
    out.flush()?;
    Ok(worst)
}

/// The one-line verdict for a file.
fn verdict(name: &str, outcome: &Outcome, settings: &OpenSettings, deny_warnings: bool) -> String {
    let name = escape::str(name);
    let warnings = outcome.findings.iter().filter(|f| f.severity == Severity::Warning).count();
    let plural = if warnings == 1 { "" } else { "s" };
    match (outcome.exit, &outcome.read_as) {
        (Exit::Ok, Some(how)) if warnings == 0 => format!("✓ {name}: valid ({how})"),
        (Exit::Ok, Some(how)) => format!("✓ {name}: valid, {warnings} warning{plural} ({how})"),
        (Exit::Invalid, Some(how)) if deny_warnings => {
            format!("✗ {name}: invalid: {warnings} warning{plural} denied ({how})")
        }
        (Exit::Trouble, _) => format!("✗ {name}: not checked: the file cannot be read"),
        (_, Some(how)) => format!("✗ {name}: invalid ({how})"),
        (_, None) => {
            // The parse failed, so say which rules rejected it: the `.llmw` format's own, or the
            // GGUF profile's.
            let llmw = outcome.findings.iter().any(|f| f.code.starts_with("llmw::"));
            let how = if llmw {
                "LLMW".to_owned()
            } else {
                format!("{} profile", settings.profile.name())
            };
            format!("✗ {name}: invalid ({how})")
        }
    }
}
