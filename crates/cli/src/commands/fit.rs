//! `sipllm fit FILE`: the memory llama.cpp would allocate (`sipllm_model::fit`), as an
//! 80-column table or JSON; `--memory SIZE` answers the largest context that fits.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};

use serde_json::json;
use sipllm_gguf::{GgmlType, Profile};
use sipllm_model::config::ModelConfig;
use sipllm_model::fit::{self, Device, Fit, FitError, FitParams, FlashAttn, LayerKind, Weight};
use sipllm_streaming::{StreamError, StreamErrorKind};

use crate::cli::{FitArgs, FitProfile, FlashAttnArg};
use crate::commands::{report_open_error, usage_error};
use crate::open::{OpenSettings, Opened, open_file};
use crate::render::escape;
use crate::render::json::write_line;
use crate::render::value::{group, human_bytes};
use crate::values::parse_size;
use crate::{Ctx, Exit};

/// llama-server's multi-letter short flags, and the long flags `sipllm fit` spells them as.
const SHORT_FLAGS: &[(&str, &str)] = &[
    ("-ub", "--ubatch-size"),
    ("-np", "--parallel"),
    ("-ctk", "--cache-type-k"),
    ("-ctv", "--cache-type-v"),
    ("-fa", "--flash-attn"),
    ("-ngl", "--n-gpu-layers"),
];

/// Rewrites llama-server's multi-letter short flags (`-ngl 99`, `-ctk q8_0`) after a `fit`
/// subcommand into their long spelling, which clap parses; every other command line is
/// returned unchanged.
pub fn long_flags(mut args: Vec<OsString>) -> Vec<OsString> {
    // The subcommand is the first word after the program name that is neither an option nor
    // the value of `--color`.
    let mut i = 1;
    while let Some(a) = args.get(i) {
        if a == "--color" {
            i += 2;
        } else if a.to_str().is_some_and(|s| s.starts_with('-')) {
            i += 1;
        } else {
            break;
        }
    }
    if args.get(i).is_none_or(|a| a != "fit") {
        return args;
    }
    for a in args.iter_mut().skip(i + 1) {
        if a == "--" {
            break;
        }
        if let Some((_, long)) = SHORT_FLAGS.iter().find(|(short, _)| a == short) {
            *a = OsString::from(long);
        }
    }
    args
}

/// Runs `fit`.
pub fn run(args: &FitArgs, ctx: &Ctx) -> io::Result<Exit> {
    let params = match params(args) {
        Ok(p) => p,
        Err(msg) => return Ok(usage_error(&msg)),
    };
    let budget = match args.memory.as_deref().map(parse_size).transpose() {
        Ok(b) => b,
        Err(e) => return Ok(usage_error(&format!("invalid --memory: {e}"))),
    };
    // Strict first; a header whose tensor data lies elsewhere (a header-only copy) is read
    // leniently, as `inspect` does: fit needs the header only.
    let strict = OpenSettings::default();
    let opened = match open_file(&args.file, &strict) {
        Err(e) if data_elsewhere(&e) => {
            open_file(&args.file, &OpenSettings { profile: Profile::Lenient, ..strict })
        }
        other => other,
    };
    let opened = match opened {
        Ok(o) => o,
        Err(e) => return Ok(report_open_error(&args.file, &e, ctx)),
    };
    let (config, names) = match model_of(&opened) {
        Ok(x) => x,
        Err(e) => {
            let text = format!("error[{}]: {}: {e}", e.code(), escape::str(opened.name()));
            let _ = write!(io::stderr(), "{}{}", wrap(&text, ""), wrap(e.help(), "  help: "));
            return Ok(Exit::Invalid);
        }
    };
    let weights: Vec<Weight<'_>> =
        names.iter().map(|(n, b)| Weight { name: n, nbytes: *b }).collect();
    let result = match budget {
        None => fit::fit(&config, &weights, &params).map(Some),
        Some(b) => fit::max_context(&config, &weights, &params, b),
    };
    let fit = match result {
        Ok(Some(f)) => f,
        Ok(None) => {
            let b = budget.unwrap_or(0);
            let _ = writeln!(
                io::stderr(),
                "sipllm: not even a 256-token context fits in {} ({} bytes)",
                human_bytes(b),
                group(b)
            );
            return Ok(Exit::Invalid);
        }
        Err(e) => return Ok(report_fit_error(opened.name(), &e)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        write_line(&mut out, &document(&fit, &params, args.profile, budget))?;
    } else {
        table(&mut out, opened.name(), &fit, &params, args.profile, budget)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// True when the only trouble is tensor data past the end of the file.
fn data_elsewhere(e: &StreamError) -> bool {
    matches!(e.kind(), StreamErrorKind::TensorOutOfBounds { .. })
        || sipllm_streaming::Kind::code(e) == "gguf::layout::out_of_bounds"
}

fn report_fit_error(name: &str, e: &FitError) -> Exit {
    let text = format!("error[{}]: {}: {e}", e.code(), escape::str(name));
    let _ = write!(io::stderr(), "{}{}", wrap(&text, ""), wrap(e.help(), "  help: "));
    Exit::Trouble
}

/// `text` in lines of at most 80 columns (words longer than a line stay whole), the first
/// line after `lead` and the others indented under it.
fn wrap(text: &str, lead: &str) -> String {
    let indent = " ".repeat(lead.chars().count());
    let mut out = String::from(lead);
    let mut column = lead.chars().count();
    for (i, word) in text.split_whitespace().enumerate() {
        let len = word.chars().count();
        if i > 0 && column + 1 + len > 80 {
            out.push('\n');
            out.push_str(&indent);
            column = indent.len();
        } else if i > 0 {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
    }
    out.push('\n');
    out
}

/// The configuration and the tensors' sizes, through the weight source or from a header
/// read without one.
fn model_of(
    opened: &Opened,
) -> Result<(ModelConfig, Vec<(String, u64)>), sipllm_model::config::ConfigError> {
    if let Some(source) = opened.source() {
        let config = ModelConfig::from_source(source)?;
        let names =
            source.tensors().iter().map(|t| (t.name.clone(), t.nbytes.unwrap_or(0))).collect();
        return Ok((config, names));
    }
    match opened.gguf() {
        Some(g) => fit::from_gguf_header(g),
        None => Ok((ModelConfig::from_metadata(|_| None, [])?, Vec::new())),
    }
}

fn cache_type(flag: &str, name: &str) -> Result<GgmlType, String> {
    fit::cache_type(name).map_err(|e| format!("{flag}: {e}"))
}

/// The parameters: the profile's defaults, then the flags.
fn params(args: &FitArgs) -> Result<FitParams, String> {
    let mut p = match args.profile {
        FitProfile::Server => FitParams::server(),
        FitProfile::Libllama => FitParams::libllama(),
    };
    if let Some(c) = args.ctx_size {
        p.n_ctx = c;
    }
    if let Some(b) = args.batch_size {
        p.n_batch = b;
    }
    if let Some(u) = args.ubatch_size {
        p.n_ubatch = u;
    }
    if let Some(n) = args.parallel {
        p.n_seq_max = n;
    }
    if let Some(t) = &args.cache_type_k {
        p.type_k = cache_type("--cache-type-k", t)?;
    }
    if let Some(t) = &args.cache_type_v {
        p.type_v = cache_type("--cache-type-v", t)?;
    }
    if let Some(fa) = args.flash_attn {
        p.flash_attn = match fa {
            FlashAttnArg::On => FlashAttn::On,
            FlashAttnArg::Off => FlashAttn::Off,
            FlashAttnArg::Auto => FlashAttn::Auto,
        };
    }
    if args.kv_unified {
        p.kv_unified = true;
    }
    if args.no_kv_unified {
        p.kv_unified = false;
    }
    if args.swa_full {
        p.swa_full = true;
    }
    if args.no_swa_full {
        p.swa_full = false;
    }
    if let Some(n) = &args.n_gpu_layers {
        p.n_gpu_layers = match n.as_str() {
            "all" => u32::MAX,
            n => {
                n.parse().map_err(|_| format!("--n-gpu-layers: {n:?} is not a number or `all`"))?
            }
        };
    }
    Ok(p)
}

fn profile_name(p: FitProfile) -> &'static str {
    match p {
        FitProfile::Server => "server",
        FitProfile::Libllama => "libllama",
    }
}

fn document(
    fit: &Fit,
    p: &FitParams,
    profile: FitProfile,
    budget: Option<u64>,
) -> serde_json::Value {
    let r = &fit.resolved;
    let compute: serde_json::Map<String, serde_json::Value> =
        fit.devices.iter().map(|d| (d.device.name().to_owned(), json!(d.compute_bytes))).collect();
    let devices: Vec<_> = fit
        .devices
        .iter()
        .map(|d| {
            json!({
                "device": d.device.name(),
                "model_bytes": d.model_bytes,
                "kv_bytes": d.kv_bytes,
                "recurrent_bytes": d.recurrent_bytes,
                "compute_bytes": d.compute_bytes,
                "compute_estimated": d.compute_estimated,
                "output_bytes": d.output_bytes,
                "total_bytes": d.total(),
            })
        })
        .collect();
    json!({
        "architecture": fit.architecture,
        "profile": profile_name(profile),
        "memory_budget": budget,
        "n_ctx": r.n_ctx,
        "n_ctx_seq": r.n_ctx_seq,
        "n_batch": r.n_batch,
        "n_ubatch": r.n_ubatch,
        "n_seq_max": r.n_seq_max,
        "n_stream": r.n_stream,
        "n_swa_cells": r.swa_cells,
        "type_k": p.type_k.name().to_ascii_lowercase(),
        "type_v": p.type_v.name().to_ascii_lowercase(),
        "flash_attn": r.flash_attn,
        "kv_unified": p.kv_unified,
        "swa_full": p.swa_full,
        "n_gpu_layers": p.n_gpu_layers,
        "kv_bytes": fit.kv_bytes,
        "recurrent_bytes": fit.recurrent_bytes,
        "output_bytes": fit.output_bytes,
        "model_bytes": fit.model_bytes,
        "compute_bytes": compute,
        "devices": devices,
        "total_bytes": fit.total_bytes(),
    })
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn table(
    out: &mut dyn Write,
    name: &str,
    fit: &Fit,
    p: &FitParams,
    profile: FitProfile,
    budget: Option<u64>,
) -> io::Result<()> {
    let r = &fit.resolved;
    writeln!(out, "{}", escape::str(name))?;
    if let Some(b) = budget {
        writeln!(
            out,
            "largest context in {}: n_ctx {}",
            human_bytes(b),
            group(u64::from(r.n_ctx))
        )?;
    }
    writeln!(
        out,
        "{}, n_ctx {} ({} per stream, {} stream{}), {} sequence{}, n_ubatch {}",
        fit.architecture,
        group(u64::from(r.n_ctx)),
        group(u64::from(r.n_ctx_seq)),
        r.n_stream,
        if r.n_stream == 1 { "" } else { "s" },
        r.n_seq_max,
        if r.n_seq_max == 1 { "" } else { "s" },
        r.n_ubatch
    )?;
    let ngl =
        if p.n_gpu_layers == u32::MAX { "all".to_owned() } else { p.n_gpu_layers.to_string() };
    writeln!(
        out,
        "{} defaults: K {}, V {}, flash attn {}, unified {}, swa_full {}, ngl {}",
        profile_name(profile),
        p.type_k.name().to_ascii_lowercase(),
        p.type_v.name().to_ascii_lowercase(),
        on_off(r.flash_attn),
        on_off(p.kv_unified),
        on_off(p.swa_full),
        ngl
    )?;
    writeln!(out)?;
    writeln!(out, "  {:<18} {:<6} {:>20} {:>12}", "buffer", "device", "bytes", "size")?;
    let mut row = |what: &str, d: Device, bytes: u64, note: &str| {
        writeln!(
            out,
            "  {what:<18} {:<6} {:>20} {:>12}{note}",
            d.name(),
            group(bytes),
            human_bytes(bytes)
        )
    };
    for d in &fit.devices {
        row("weights", d.device, d.model_bytes, "")?;
        if d.kv_bytes > 0 || fit.recurrent_bytes == 0 {
            row("KV cache", d.device, d.kv_bytes, "")?;
        }
        if d.recurrent_bytes > 0 {
            row("recurrent state", d.device, d.recurrent_bytes, "")?;
        }
        row(
            "compute",
            d.device,
            d.compute_bytes,
            if d.compute_estimated { "  estimate" } else { "" },
        )?;
        if d.output_bytes > 0 {
            row("output (logits)", d.device, d.output_bytes, "")?;
        }
    }
    let total = fit.total_bytes();
    writeln!(out, "  {:<18} {:<6} {:>20} {:>12}", "total", "", group(total), human_bytes(total))?;
    // The cache's layers by kind.
    let mut kinds: Vec<(LayerKind, u32, u32, u64)> = Vec::new();
    for l in &fit.layers {
        let bytes = l.k_bytes + l.v_bytes + l.recurrent_bytes;
        match kinds.iter_mut().find(|k| k.0 == l.kind && k.1 == l.cells) {
            Some(k) => {
                k.2 += 1;
                k.3 += bytes;
            }
            None => kinds.push((l.kind, l.cells, 1, bytes)),
        }
    }
    writeln!(out)?;
    for (kind, cells, n, bytes) in kinds {
        let what = match kind {
            LayerKind::Full => format!("full attention, {} cells", group(u64::from(cells))),
            LayerKind::Sliding => format!("sliding window, {} cells", group(u64::from(cells))),
            LayerKind::Recurrent => "recurrent state".to_owned(),
            LayerKind::None => "no cache".to_owned(),
        };
        writeln!(
            out,
            "  {n:>3} layer{} {what:<32} {:>12}",
            if n == 1 { " " } else { "s" },
            human_bytes(bytes)
        )?;
    }
    writeln!(
        out,
        "\ncompute: modelled on llama.cpp's CPU graph allocator (exact on Llama-3-8B's\nshape), an estimate elsewhere; the output buffer is not in llama.cpp's breakdown"
    )?;
    Ok(())
}
