//! `sipllm validate FILE...`: every problem as a diagnostic over a hex view (or as JSON
//! lines), a verdict per file, and the exit code contract: 0 valid, 1 invalid, 2 unreadable.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::Serialize;
use sipllm_streaming::{Backend, FileBacking, ReadAt};

use crate::cli::{ReportFormat, ValidateArgs};
use crate::diagnostic::{FileDiagnostic, Finding, Renderer, Severity};
use crate::open::{Format, OpenSettings, Opened, is_invalid_file, open_file};
use crate::render::escape;
use crate::render::json::write_line;
use crate::{Ctx, Exit};

/// The outcome for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What was found, in file order (the fatal error, if any, last).
    pub findings: Vec<Finding>,
    /// The exit code this file implies.
    pub exit: Exit,
    /// How the file was read (`GGUF v3, strict profile`), when it could be parsed.
    pub read_as: Option<String>,
}

/// Validates one file.
pub fn check(path: &Path, settings: &OpenSettings, deny_warnings: bool) -> Outcome {
    match open_file(path, settings) {
        Ok(opened) => {
            let findings: Vec<Finding> = opened
                .gguf()
                .map(|g| g.warnings().iter().map(Finding::from_gguf_warning).collect())
                .unwrap_or_default();
            let exit = if deny_warnings && !findings.is_empty() { Exit::Invalid } else { Exit::Ok };
            Outcome { findings, exit, read_as: Some(read_as(&opened, settings)) }
        }
        Err(e) => {
            let exit = if is_invalid_file(&e) { Exit::Invalid } else { Exit::Trouble };
            Outcome { findings: vec![Finding::from_stream_error(&e)], exit, read_as: None }
        }
    }
}

fn read_as(opened: &Opened, settings: &OpenSettings) -> String {
    match (opened.format(), opened.gguf(), opened.llmw()) {
        (Format::Gguf, Some(g), _) => {
            format!("GGUF v{}, {} profile", g.version(), settings.profile.name())
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
        let name = path.display().to_string();
        let outcome = check(path, &settings, args.deny_warnings);
        match args.format {
            ReportFormat::Json => {
                for f in &outcome.findings {
                    write_line(
                        &mut out,
                        &JsonFinding {
                            file: &name,
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
                let file = backing.as_ref().map(|b| b as &dyn ReadAt);
                for f in &outcome.findings {
                    let diag = FileDiagnostic::new(f.clone(), &name, file);
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
