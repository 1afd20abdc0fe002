//! `sipllm completions SHELL`: a completion script generated from the clap definitions.

use std::io::{self, Write};

use clap::CommandFactory;

use crate::Exit;
use crate::cli::{Cli, CompletionsArgs};

/// Writes the script for `args.shell` to standard output.
pub fn run(args: &CompletionsArgs) -> io::Result<Exit> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "sipllm", &mut out);
    io::stdout().lock().write_all(&out)?;
    Ok(Exit::Ok)
}
