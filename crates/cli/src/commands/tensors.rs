//! `sipllm tensors FILE`: the tensor table alone (or a JSON array of tensor records).

use std::io::{self, BufWriter, Write};

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use crate::cli::TensorsArgs;
use crate::commands::inspect::tensor_table;
use crate::commands::{compile_filter, keep, open_or_report};
use crate::render::escape;
use crate::render::json::{TensorDoc, write_line};
use crate::render::value::group;
use crate::view::TensorRow;
use crate::{Ctx, Exit};

/// Runs `tensors`.
pub fn run(args: &TensorsArgs, ctx: &Ctx) -> io::Result<Exit> {
    let filter = match compile_filter(args.filter.as_deref()) {
        Ok(f) => f,
        Err(exit) => return Ok(exit),
    };
    let opened = match open_or_report(&args.file, &args.parse.settings(), ctx) {
        Ok(o) => o,
        Err(exit) => return Ok(exit),
    };
    let view = crate::view::of(&opened);
    let tensors: Vec<&TensorRow<'_>> =
        view.tensors.iter().filter(|t| keep(filter.as_ref(), t.name)).collect();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    // A filter that matches nothing says so (not a bare header); still exit code 0: an empty
    // selection is an answer, as for `inspect --filter` (`--json` prints `[]`).
    if let Some(glob) = filter.as_ref().filter(|_| tensors.is_empty() && !args.json) {
        writeln!(
            out,
            "0 of {} tensors match {}",
            group(view.tensors.len() as u64),
            escape::quoted(glob.as_str().as_bytes())
        )?;
        out.flush()?;
        return Ok(Exit::Ok);
    }
    if args.stats {
        drop(out);
        return crate::commands::values::stats(args, filter.as_ref(), &opened, ctx);
    }
    if args.json {
        write_line(&mut out, &TensorList(&tensors))?;
    } else {
        tensor_table(&mut out, &tensors, ctx.fit)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

struct TensorList<'v, 'a>(&'v [&'v TensorRow<'a>]);

impl Serialize for TensorList<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for t in self.0 {
            seq.serialize_element(&TensorDoc(t))?;
        }
        seq.end()
    }
}
