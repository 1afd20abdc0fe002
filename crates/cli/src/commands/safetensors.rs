//! `sipllm convert MODEL OUT.safetensors [--dtype f32|f16|bf16|keep] [--names gguf|hf]`:
//! a model (a GGUF file, a split set, a `.llmw` file, or a URL) exported as safetensors.
//!
//! The command opens MODEL as every reading command does, refuses an output that is one of
//! its files, and hands the rest to the write side ([`sipllm_edit::safetensors::export`]: the
//! layout, the values, the names, the atomic commit); it draws the progress bar on a terminal
//! and renders what the library reports.

use std::io::{self, Write};

use sipllm_edit::safetensors::{self, Dtype, ExportOptions, Names, SafetensorsError};

use crate::cli::{ConvertArgs, ExportDtype, ExportNames};
use crate::commands::{open_or_report, refuse_input_as_output, report_open_error, usage_error};
use crate::open::OpenSettings;
use crate::render::escape;
use crate::render::value::group;
use crate::{Ctx, Exit};

/// Runs `convert` to safetensors.
pub fn run(args: &ConvertArgs, ctx: &Ctx) -> io::Result<Exit> {
    let out_name = escape::str(&args.output.display().to_string()).into_owned();
    if args.output.is_dir() {
        return Ok(usage_error(&format!("{out_name} is a directory; give a file name")));
    }
    if args.drop_unsupported {
        return Ok(usage_error(
            "--drop-unsupported is for GGUF/.llmw conversions; a safetensors export keeps \
             every scalar key as a string and leaves arrays out",
        ));
    }
    let opened = match open_or_report(&args.input, &OpenSettings::default(), ctx) {
        Ok(o) => o,
        Err(exit) => return Ok(exit),
    };
    if let Err(exit) = refuse_input_as_output(&args.input, &opened, &args.output, "the output", ctx)
    {
        return Ok(exit);
    }
    let Some(model) = opened.model() else {
        return Ok(usage_error("the file's tensor data cannot be read"));
    };
    let options = ExportOptions {
        dtype: match args.dtype {
            ExportDtype::F32 => Dtype::F32,
            ExportDtype::F16 => Dtype::F16,
            ExportDtype::Bf16 => Dtype::Bf16,
            ExportDtype::Keep => Dtype::Keep,
        },
        names: match args.names {
            ExportNames::Gguf => Names::Gguf,
            ExportNames::Hf => Names::Hf,
        },
    };
    // The bar's total is the output's data size, which only the export knows; it grows the
    // bar's length as it learns it (the stored size is a first guess).
    let bar = crate::progress::bar(ctx, 0);
    let done = safetensors::export(model, &args.output, &options, &mut crate::progress::feed(&bar));
    bar.finish_and_clear();
    let done = match done {
        Ok(done) => done,
        Err(SafetensorsError::Read(e)) => return Ok(report_open_error(&args.input, &e, ctx)),
        Err(e) => {
            return Ok(usage_error(&format!(
                "{}: {}; {out_name} was not changed [{}]\n  help: {}",
                escape::str(opened.name()),
                escape::message(&e.to_string()),
                e.code(),
                e.help()
            )));
        }
    };
    let mut o = io::stdout().lock();
    writeln!(
        o,
        "exported {} ({}) -> {out_name} (safetensors, {}): {} tensors, {} bytes",
        escape::str(opened.name()),
        opened.format().label(),
        options.dtype.name(),
        done.tensors,
        group(done.file_bytes)
    )?;
    writeln!(
        o,
        "  {} tensors copied as stored, {} through their values",
        done.copied,
        done.tensors - done.copied
    )?;
    writeln!(
        o,
        "  {} metadata keys as strings, {} left out (arrays, split keys)",
        done.keys, done.keys_left_out
    )?;
    if let Some((path, model_type)) = &done.config {
        writeln!(
            o,
            "  transformers' names (model_type {}); config.json: {}",
            escape::str(model_type),
            escape::str(&path.display().to_string())
        )?;
    }
    for name in &done.left_out {
        writeln!(o, "  left out {} (transformers computes it)", escape::quoted(name.as_bytes()))?;
    }
    o.flush()?;
    Ok(Exit::Ok)
}
