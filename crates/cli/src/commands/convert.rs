//! `sipllm convert IN OUT [--drop-unsupported]`: GGUF → `.llmw` or `.llmw` → GGUF, whichever
//! IN is not (the format is read from IN's magic).
//!
//! The command opens IN under a shared lock, refuses an output that is IN (by identity), a
//! directory, or one named for the input's own format, and hands the rest to the write side
//! ([`sipllm_edit::convert`]: the type mapping, the checked temporary, the commit); it renders
//! what the library reports.

use std::io::{self, Write};
use std::path::Path;

use sipllm_edit::convert::{self, ConvertError, ConvertOptions};
use sipllm_edit::header::SAMPLE;
use sipllm_edit::identity;
use sipllm_streaming::Format;

use crate::cli::{ConvertArgs, ConvertTo, ExportDtype, ExportNames};
use crate::commands::edit::pending;
use crate::commands::{report_open_error, report_write_error, usage_error};
use crate::open::{model_of, open_locked};
use crate::render::escape;
use crate::render::value::group;
use crate::{Ctx, Exit};

/// Runs `convert`.
pub fn run(args: &ConvertArgs, ctx: &Ctx) -> io::Result<Exit> {
    let safetensors_ext = args
        .output
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    if args.to == Some(ConvertTo::Safetensors) || (args.to.is_none() && safetensors_ext) {
        return super::safetensors::run(args, ctx);
    }
    if args.dtype != ExportDtype::F32 || args.names != ExportNames::Gguf {
        return Ok(usage_error(
            "--dtype and --names are for safetensors exports (an OUT ending in .safetensors, \
             or --to safetensors)",
        ));
    }
    // Read under a shared lock (an in-place edit running finishes first), so a backup found
    // then is an interrupted edit's.
    let file = match open_locked(&args.input, false) {
        Ok(file) => file,
        Err(e) => return Ok(report_open_error(&args.input, &e, ctx)),
    };
    if let Some(e) = pending(&args.input) {
        crate::render::edit::in_place_error(&e, &display(&args.input));
        return Ok(Exit::Trouble);
    }
    let model = match model_of(&file, &args.input) {
        Ok(model) => model,
        Err(e) => return Ok(report_open_error(&args.input, &e, ctx)),
    };
    let to = match model.format() {
        Format::Gguf => Format::Llmw,
        _ => Format::Gguf,
    };
    let asked = args.to.map(|t| if t == ConvertTo::Gguf { Format::Gguf } else { Format::Llmw });
    if asked.is_some_and(|a| a != to) {
        return Ok(usage_error(&format!(
            "the input is {}: it converts to {} (or --to safetensors)",
            model.format().label(),
            to.label()
        )));
    }
    if let Err(e) =
        identity::refuse_output_is_open_file(&file, &args.input, &args.output, "the output")
    {
        return Ok(report_write_error(&args.input, &e, ctx));
    }
    let out_name = display(&args.output);
    if args.output.is_dir() {
        return Ok(usage_error(&format!("{out_name} is a directory; give a file name")));
    }
    if let Some(ext) = args.output.extension().and_then(|e| e.to_str())
        && ext.eq_ignore_ascii_case(model.format().name())
    {
        return Ok(usage_error(&format!(
            "{out_name} ends in .{ext}, but a {} input converts to {}; name the output e.g. \
             model.{}",
            model.format().label(),
            to.label(),
            to.name()
        )));
    }
    let options = ConvertOptions { drop_unsupported: args.drop_unsupported };
    let bar = crate::progress::bar(ctx, 0);
    let mut feed = crate::progress::feed_total(&bar);
    let done = convert::convert_with(&model, &file, &args.output, &options, &mut feed);
    bar.finish_and_clear();
    let done = match done {
        Ok(done) => done,
        Err(e) => return Ok(refused(&e, &args.input, &out_name, ctx)),
    };
    let mut o = io::stdout().lock();
    writeln!(
        o,
        "converted {} ({}) -> {out_name} ({}): {} keys, {} tensors, {} bytes of tensor data",
        display(&args.input),
        done.from.label(),
        done.to.label(),
        done.keys,
        done.tensors,
        group(done.data_bytes)
    )?;
    for d in &done.dropped {
        writeln!(o, "  left out {}: {}", quoted(&d.key), escape::message(&d.why.to_string()))?;
    }
    let restore: Vec<[String; 2]> = done.dropped.iter().filter_map(|d| d.restore()).collect();
    if !restore.is_empty() {
        writeln!(o, "  the booleans go back into a GGUF converted from {out_name} with:")?;
        writeln!(o, "    sipllm edit BACK.gguf -o FIXED.gguf \\")?;
        for (i, [flag, value]) in restore.iter().enumerate() {
            let end = if i + 1 < restore.len() { " \\" } else { "" };
            writeln!(o, "      {flag} {}{end}", shell_word(value))?;
        }
    }
    writeln!(
        o,
        "checked {out_name}: re-opened; every key has its value and every tensor its name, \
         type, shape and size; the first and last {SAMPLE} bytes of each tensor equal {}'s",
        display(&args.input)
    )?;
    o.flush()?;
    Ok(Exit::Ok)
}

/// `s` as one shell word: as it is when it has only characters no shell treats specially,
/// else single-quoted (a `'` inside as `'\\''`); escaped for the terminal either way.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._:=,+-/@%".contains(c);
    let word = if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    };
    escape::message(&word).into_owned()
}

/// Renders why the conversion was refused or failed (exit code 2, or the read side's).
fn refused(e: &ConvertError, input: &Path, out_name: &str, ctx: &Ctx) -> Exit {
    let name = display(input);
    let msg = match e {
        ConvertError::Read(r) => return report_open_error(input, r, ctx),
        ConvertError::Write(w) => {
            format!(
                "writing {out_name} failed: {}; {out_name} was not changed",
                escape::message(&w.to_string())
            )
        }
        ConvertError::Unsupported { to, keys } => {
            let n = keys.len();
            let mut msg = format!(
                "{name} has metadata {} cannot hold ({n} key{}), so nothing was written; pass \
                 --drop-unsupported to convert without {}:",
                to.label(),
                if n == 1 { "" } else { "s" },
                if n == 1 { "it" } else { "them" }
            );
            for d in keys {
                msg.push_str(&format!(
                    "\n  {}: {}",
                    quoted(&d.key),
                    escape::message(&d.why.to_string())
                ));
            }
            msg
        }
        ConvertError::Tensors { tensors } => {
            let mut msg = format!("{name} has tensors .llmw cannot hold, so nothing was written:");
            for t in tensors {
                msg.push_str(&format!("\n  {}", escape::message(&t.to_string())));
            }
            msg
        }
        ConvertError::Check(c) => format!(
            "the written file failed its check, so {out_name} was not replaced: {}",
            escape::message(&c.to_string())
        ),
        other => format!("{name}: {}", escape::message(&other.to_string())),
    };
    usage_error(&msg)
}

fn display(p: &Path) -> String {
    escape::str(&p.display().to_string()).into_owned()
}

fn quoted(s: &str) -> String {
    escape::quoted(s.as_bytes())
}
