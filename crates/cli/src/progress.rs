//! The progress bars of long jobs: one style for every command, on standard error, drawn only
//! when it is a terminal and `--quiet` was not given ([`Ctx::progress`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Ctx;

/// A byte-count bar of a job of `total` bytes (0 when unknown yet: grow it with
/// [`ProgressBar::set_length`]); hidden unless [`Ctx::progress`].
pub fn bar(ctx: &Ctx, total: u64) -> ProgressBar {
    if !ctx.progress {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = if ctx.color_stderr {
        "{bar:40.cyan/blue} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
    } else {
        "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A callback for the write side's `progress: &mut dyn FnMut(u64)` (bytes done so far, of a
/// total it may learn as it goes) that moves `bar`.
pub fn feed(bar: &ProgressBar) -> impl FnMut(u64) + '_ {
    move |done| {
        if bar.length().unwrap_or(0) < done {
            bar.set_length(done);
        }
        bar.set_position(done);
    }
}

/// A callback for the write side's `progress: &mut dyn FnMut(done, total)` (bytes of tensor
/// data written so far, of the job's total) that moves `bar`.
pub fn feed_total(bar: &ProgressBar) -> impl FnMut(u64, u64) + '_ {
    move |done, total| {
        if bar.length() != Some(total) {
            bar.set_length(total);
        }
        bar.set_position(done);
    }
}
