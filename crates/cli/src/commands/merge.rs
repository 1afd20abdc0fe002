//! `sipllm merge SHARD OUT`: join a split set into one GGUF file (see `docs/split.md`).

use std::io::{self, Write};

use sipllm_edit::split::merge_with;

use crate::cli::MergeArgs;
use crate::commands::split::{open_options, show};
use crate::commands::{UrlRefusal, refuse_url, report_split_error};
use crate::render::value::{group, human_bytes};
use crate::{Ctx, Exit};

/// Runs `merge`.
pub fn run(args: &MergeArgs, ctx: &Ctx) -> io::Result<Exit> {
    if let Some(exit) = refuse_url(&args.shard, UrlRefusal::Split, ctx) {
        return Ok(exit);
    }
    let bar = crate::progress::bar(ctx, 0);
    let mut feed = crate::progress::feed_total(&bar);
    let written = merge_with(&args.shard, &args.out, &open_options(&args.parse), &mut feed);
    bar.finish_and_clear();
    let written = match written {
        Ok(w) => w,
        Err(e) => return Ok(report_split_error(&args.shard, &e, ctx)),
    };
    writeln!(
        io::stdout(),
        "merged the set of {} into {}: {} tensors, {} bytes ({})",
        show(&args.shard),
        show(&written.path),
        group(written.tensors as u64),
        group(written.file_size),
        human_bytes(written.file_size)
    )?;
    Ok(Exit::Ok)
}
