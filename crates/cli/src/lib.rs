//! The `sipllm` command-line tool: inspect, validate, list, read, verify, edit and convert
//! GGUF and `.llmw` model files. See `docs/cli.md` for every command, the JSON schema and the
//! exit codes, and `docs/writer.md` for `edit` and `convert`.
//!
//! The binary (`src/main.rs`) only calls [`run`]. The modules:
//!
//! | module | what |
//! |---|---|
//! | [`cli`] | the clap definitions (every command and option, the `--help` texts) |
//! | [`open`] | the one function every command opens files through, and the bundled sample |
//! | [`view`] | a format-neutral view of a parsed header (GGUF or `.llmw`) |
//! | [`diagnostic`] | findings as miette diagnostics over a hex view of the file |
//! | [`render`] | escaping, value abbreviation, tables, JSON (the hex window: `sipllm-hexview`) |
//! | [`commands`] | one module per command |
//! | [`glob`] | the `--filter` matcher |
//! | [`help`] | help texts naming CLI flags for the codes whose library help names an API |
//! | [`values`] | the `edit` value syntax (`KEY=TYPE:VALUE`, arrays) |
//! | [`progress`] | the progress bars of long jobs (standard error, a terminal only) |
//!
//! Invariants: nothing read from a file reaches the terminal unescaped
//! ([`render::escape`]); no input makes the program panic (a panic would exit with 101, which
//! the tests treat as a bug); output errors (a closed pipe) end the program quietly.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

pub mod cli;
pub mod commands;
pub mod diagnostic;
pub mod glob;
pub mod help;
pub mod open;
pub mod progress;
pub mod render;
pub mod values;
pub mod view;

use cli::{Cli, ColorChoice, Command};

/// The exit codes (see `docs/cli.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// 0: success; every file valid.
    Ok = 0,
    /// 1: a file is invalid, or a verification found a mismatch.
    Invalid = 1,
    /// 2: a usage or I/O error (missing file, permission, unwritable output).
    Trouble = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

/// What the commands need to know about the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    /// Color what goes to standard output.
    pub color_stdout: bool,
    /// Color what goes to standard error.
    pub color_stderr: bool,
    /// Standard error is a terminal (progress bars are drawn there).
    pub stderr_is_tty: bool,
    /// Standard output is a terminal (binary output is refused there).
    pub stdout_is_tty: bool,
    /// Column width for wrapping diagnostics.
    pub width: usize,
    /// The width human-readable output is fitted to (tables, previews): the terminal's
    /// (`COLUMNS` when set) when standard output is a terminal; `None` when it is a pipe or
    /// a file, which keep their full width for scripts.
    pub fit: Option<usize>,
    /// Draw progress bars: standard error is a terminal and `--quiet` was not given.
    pub progress: bool,
}

/// The width used when not writing to a terminal: fixed, so output is reproducible.
pub const DEFAULT_WIDTH: usize = 100;

impl Ctx {
    /// Decides colors and width from the terminal, `NO_COLOR` and `--color`.
    pub fn detect(choice: ColorChoice) -> Ctx {
        Ctx::detect_with(choice, false)
    }

    /// [`Ctx::detect`], with `--quiet` (no progress bars).
    pub fn detect_with(choice: ColorChoice, quiet: bool) -> Ctx {
        let stdout_is_tty = io::stdout().is_terminal();
        let stderr_is_tty = io::stderr().is_terminal();
        // https://no-color.org: any non-empty value disables color.
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let decide = |tty: bool| match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => tty && !no_color,
        };
        // `COLUMNS` (when set to a number) wins, as in most tools that wrap: it is how a user
        // or a test asks for another width.
        let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok());
        let width = match columns {
            Some(w) if w > 0 => w,
            _ if stdout_is_tty || stderr_is_tty => terminal_size::terminal_size()
                .map(|(w, _)| usize::from(w.0))
                .filter(|&w| w > 0)
                .unwrap_or(DEFAULT_WIDTH),
            _ => DEFAULT_WIDTH,
        };
        let width = width.clamp(40, 200);
        Ctx {
            color_stdout: decide(stdout_is_tty),
            color_stderr: decide(stderr_is_tty),
            stderr_is_tty,
            stdout_is_tty,
            width,
            fit: stdout_is_tty.then_some(width),
            progress: stderr_is_tty && !quiet,
        }
    }
}

/// Parses `args` (program name first) and runs the command.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // The matches are kept beside the typed arguments: `edit` needs the order of its
    // repeated options across option names (`ArgMatches::indices_of`).
    // `fit` takes llama-server's multi-letter short flags (`-ngl 99`), which clap cannot.
    let args = commands::fit::long_flags(args.into_iter().map(Into::into).collect());
    let parsed = Cli::command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (mut cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            // `--help` and `--version` exit 0; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let ctx = Ctx::detect_with(cli.color, cli.quiet);
    open::set_quiet(cli.quiet);
    cli.command.apply_shard_only();
    let result = match &cli.command {
        Command::Inspect(args) => commands::inspect::run(args, &ctx),
        Command::Validate(args) => commands::validate::run(args, &ctx),
        Command::Tensors(args) => commands::tensors::run(args, &ctx),
        Command::Read(args) => commands::read::run(args, &ctx),
        Command::Verify(args) => commands::verify::run(args, &ctx),
        Command::Completions(args) => commands::completions::run(args),
        Command::Edit(args) => commands::edit::run(args, matches.subcommand_matches("edit"), &ctx),
        Command::Convert(args) => commands::convert::run(args, &ctx),
        Command::MakeToy(args) => commands::make_toy::run(args),
        Command::Split(args) => commands::split::run(args, &ctx),
        Command::Merge(args) => commands::merge::run(args, &ctx),
        Command::Diff(args) => commands::diff::run(args, &ctx),
        Command::Fit(args) => commands::fit::run(args, &ctx),
        Command::Template(args) => commands::template::run(args, &ctx),
        Command::Web(args) => commands::web::run(args, &ctx),
    };
    match result {
        Ok(exit) => exit.into(),
        // The reader of our output went away (`sipllm inspect big.gguf | head`): not an error.
        Err(e) if is_broken_pipe(&e) => Exit::Ok.into(),
        Err(e) => {
            let _ = writeln!(io::stderr(), "sipllm: cannot write the output: {e}");
            Exit::Trouble.into()
        }
    }
}

/// True when `e` is, or wraps (a serializer's error carried in an `io::Error`), a write to a
/// pipe whose reader went away: every command's output errors reach [`run`], which ends such a
/// run quietly with exit 0 whatever wrapped the error on the way.
pub fn is_broken_pipe(e: &io::Error) -> bool {
    let mut current: &(dyn std::error::Error + 'static) = e;
    loop {
        if let Some(io) = current.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
            // `io::Error::other(inner)`: look at what it carries.
            if let Some(inner) = io.get_ref() {
                current = inner;
                continue;
            }
        }
        if current.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind)
            == Some(io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        match current.source() {
            Some(next) => current = next,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// True when `code` names `pattern` as a whole path (`AtomicFile::create(` is not
    /// `File::create(`).
    fn names(code: &str, pattern: &str) -> bool {
        code.match_indices(pattern).any(|(at, _)| {
            !code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    }

    /// Only the streaming crate reads or writes model files: the CLI's code (tests aside)
    /// names none of the means of doing so — positional I/O, opening a file for writing,
    /// syncing, renaming, removing — and opens, reads or stats a file only for the auxiliary
    /// files listed here.
    #[test]
    fn the_cli_does_no_model_file_io() {
        let forbidden = [
            "FileExt",
            "File::open(",
            "File::options",
            "OpenOptions::new",
            "set_len(",
            "sync_data",
            "sync_all",
            "remove_file",
            "fs::rename",
            "fs::write",
            "fs::copy",
            "copy_file_range",
            // Outputs, auxiliary ones too (`read -o`, `verify --manifest`), are written
            // through `sipllm_edit`'s `AtomicFile` (`commands::write_output`).
            "File::create(",
            // Nothing reads a whole file unbounded (or blocks on a FIFO): `verify --check`
            // reads its manifest through `sipllm_edit::read_file_capped`.
            "fs::read(",
            "fs::read_to_string(",
            "read_to_end(",
            "read_to_string(",
        ];
        // (pattern, the files that may use it, for what)
        let auxiliary: [(&str, &[&str]); 1] = [
            // The sizes `make-toy` reports of what it wrote.
            ("fs::metadata(", &["commands/make_toy.rs"]),
        ];
        // (`edit --set-file` reads its input through `sipllm_edit::read_capped`, `verify
        // --check` its manifest through `sipllm_edit::read_file_capped`.)
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&root, &mut files);
        assert!(files.len() > 20, "{} sources found under {}", files.len(), root.display());
        for path in files {
            let name = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            // The code before the tests, comments (which may name what they describe) left out.
            let before_tests = text.split("#[cfg(test)]").next().unwrap_or(&text);
            let code: String = before_tests
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            for pattern in forbidden {
                assert!(!names(&code, pattern), "{name} uses {pattern}");
            }
            for (pattern, allowed) in auxiliary {
                if names(&code, pattern) {
                    assert!(allowed.contains(&name.as_str()), "{name} uses {pattern}");
                }
            }
        }
    }
}
