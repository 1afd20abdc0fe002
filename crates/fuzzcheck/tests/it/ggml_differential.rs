//! The llama-cpp profile against ggml's own reader: a differential run.
//!
//! Every input (hand-made edge files, the `../shared` corpus, the fuzz seeds and regression
//! inputs, toy models in both formats, and byte- and field-level mutants of them all; see
//! `sipllm_fuzzcheck::mutants`) is written to a file and judged twice:
//!
//! - by ggml, through a **dumper** given by path in `SIPLLM_GGML_DUMPER`: a small program
//!   around `gguf_init_from_file(path, {no_alloc = true, ctx = NULL})`, built by hand from a
//!   ggml-org/ggml snapshot outside this repository (nothing of ggml is committed here; see
//!   `docs/parser.md`, "The llama-cpp profile against ggml", for its protocol and how to build
//!   one). It takes paths as arguments and prints one JSON line per path;
//! - by sipllm, exactly as `sipllm validate --profile llama-cpp` does (its `check`), and, when
//!   that accepts, as `sipllm inspect --json --profile llama-cpp` reads it (`open_file`).
//!
//! Both must accept or both refuse; when both accept, the version, alignment, data offset,
//! every key (as the C string ggml returns), type and scalar value, and every tensor's name,
//! type, `ne`, offset and size must be equal. The only disagreements allowed are the
//! deliberate differences of `docs/parser.md` (ggml accepts, the file cannot be used), each
//! recognised from ggml's own answer: D1 tensor data past the end of the file, D2 an element
//! count that overflows ggml's `int64_t` (D3: and a byte size ggml wraps to 0), D4 a tensor
//! size that `GGML_PAD` wraps past 2^64; and one where both accept: D5 a tensor name with a
//! NUL byte, which ggml cuts there and the llama-cpp profile keeps whole (with the warning
//! `gguf::tensor::nul_in_name`). sipllm's names are compared whole, so D5 is seen, not
//! hidden by cutting both sides.
//!
//! Without `SIPLLM_GGML_DUMPER` the run is skipped, loudly. Run it with
//! `SIPLLM_GGML_DUMPER=/path/to/gguf-dump cargo test --release -p sipllm-fuzzcheck --test
//! ggml_differential -- --nocapture`; `SIPLLM_GGML_REPORT=FILE` writes every disagreement
//! and deliberate difference there as JSON lines.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value as Json, json};
use sipllm_cli::Exit;
use sipllm_cli::commands::validate;
use sipllm_cli::open::{OpenSettings, open_file};
use sipllm_fuzzcheck::mutants::{Mutant, byte_mutants, crafted, field_mutants};
use sipllm_gguf::{GgmlType, MetaValue, Profile};

const DUMPER: &str = "SIPLLM_GGML_DUMPER";
const REPORT: &str = "SIPLLM_GGML_REPORT";
/// Paths per dumper process.
const BATCH: usize = 200;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn c_str(bytes: &[u8]) -> &[u8] {
    bytes.split(|&b| b == 0).next().unwrap_or_default()
}

/// Where the header and directory end (the bytes readers decide on), for byte mutants.
fn hot_len(bytes: &[u8]) -> usize {
    let opts = sipllm_gguf::ParseOptions::new(Profile::Lenient);
    sipllm_gguf::parse_with(bytes, &opts)
        .map(|g| g.directory().directory_end() as usize + 64)
        .unwrap_or(bytes.len())
        .min(4096)
}

/// Every input of the run, with its origin in its name.
fn inputs() -> (Vec<Mutant>, bool) {
    let root = repo();
    let mut out = Vec::new();
    let mut bases = Vec::new();
    // Valid small models: the bundled sample and toy models (both formats).
    let sample = fs::read(root.join("samples/tiny-llama.gguf")).expect("samples/tiny-llama.gguf");
    bases.push(("sample".to_string(), sample));
    for seed in [1u64, 2, 3] {
        let toy = sipllm_edit::toy::ToyConfig::new(seed).build().unwrap();
        bases.push((format!("toy{seed}.gguf"), toy.gguf_bytes().unwrap()));
        out.push(Mutant { name: format!("toy{seed}.llmw"), bytes: toy.llmw_bytes().unwrap() });
    }
    // The shared corpus: real files (vocab-only, MBs), historic ones, gguf-py's outputs.
    let shared = root.join("../shared/corpus");
    let mut corpus = Vec::new();
    files_under(&shared, &mut corpus);
    corpus.retain(|p| p.extension().is_some_and(|e| e == "gguf"));
    let have_shared = !corpus.is_empty();
    if !have_shared {
        eprintln!("ggml_differential: ../shared/corpus is MISSING: the run lacks the real files");
    }
    for (k, path) in corpus.iter().enumerate() {
        let bytes = fs::read(path).unwrap();
        let name = path.strip_prefix(&shared).unwrap().display().to_string();
        let small = bytes.len() < 64 << 10;
        if small {
            bases.push((name.clone(), bytes.clone()));
        } else {
            out.extend(field_mutants(&name, &bytes, 30, k as u64));
            out.extend(byte_mutants(&name, &bytes, hot_len(&bytes), 10, k as u64));
        }
        out.push(Mutant { name, bytes });
    }
    // Small bases: many mutants each.
    for (k, (name, bytes)) in bases.iter().enumerate() {
        out.extend(field_mutants(name, bytes, 700, k as u64));
        out.extend(byte_mutants(name, bytes, hot_len(bytes), 400, 1000 + k as u64));
        out.push(Mutant { name: name.clone(), bytes: bytes.clone() });
    }
    // Hand-made edge files, and a few mutants of each.
    for (k, m) in crafted().into_iter().enumerate() {
        out.extend(field_mutants(&m.name, &m.bytes, 12, k as u64));
        out.extend(byte_mutants(&m.name, &m.bytes, m.bytes.len(), 4, k as u64));
        out.push(m);
    }
    // The fuzz seeds and regression inputs (raw fuzz inputs: some carry a prefix).
    let mut seeds = Vec::new();
    files_under(&root.join("fuzz/seeds"), &mut seeds);
    files_under(&root.join("fuzz/regressions"), &mut seeds);
    seeds.retain(|p| p.extension().is_none_or(|e| e != "md"));
    for (k, path) in seeds.iter().enumerate() {
        let bytes = fs::read(path).unwrap();
        let name = path.strip_prefix(root.join("fuzz")).unwrap().display().to_string();
        out.extend(byte_mutants(&name, &bytes, hot_len(&bytes), 8, 5000 + k as u64));
        out.push(Mutant { name, bytes });
    }
    (out, have_shared)
}

/// sipllm's answer, in the dumper's JSON shape (C-string keys, as ggml returns them; tensor
/// names whole, as sipllm reads them: see D5), or the code of the error `validate` reported.
fn sipllm(path: &Path) -> Result<Json, String> {
    let settings = OpenSettings { profile: Profile::LlamaCpp, ..OpenSettings::default() };
    let outcome = validate::check(path, &settings, false);
    if outcome.exit != Exit::Ok {
        return Err(outcome.findings.last().map_or("?", |f| f.code).to_string());
    }
    let opened = open_file(path, &settings).map_err(|e| format!("open after validate: {e}"))?;
    let Some(g) = opened.gguf() else {
        // Accepted, but not as GGUF (a `.llmw` file): ggml can only refuse it.
        return Ok(json!({"ok": true, "format": opened.format().label()}));
    };
    let kv: Vec<Json> = g
        .metadata()
        .map(|e| {
            let key = hex(c_str(e.key.as_bytes()));
            let ty = e.value.value_type().code();
            let value = match e.value {
                MetaValue::Array(a) => {
                    return json!({"key": key, "type": ty, "elem": a.elem_type().code(), "n": a.len()});
                }
                MetaValue::Uint8(v) => json!(v),
                MetaValue::Int8(v) => json!(v),
                MetaValue::Uint16(v) => json!(v),
                MetaValue::Int16(v) => json!(v),
                MetaValue::Uint32(v) => json!(v),
                MetaValue::Int32(v) => json!(v),
                MetaValue::Uint64(v) => json!(v),
                MetaValue::Int64(v) => json!(v),
                MetaValue::Bool(v) => json!(v),
                MetaValue::Float32(v) => json!(format!("f32:{:08x}", v.to_bits())),
                MetaValue::Float64(v) => json!(format!("f64:{:016x}", v.to_bits())),
                MetaValue::String(s) => json!(hex(c_str(s.as_bytes()))),
            };
            json!({"key": key, "type": ty, "value": value})
        })
        .collect();
    let tensors: Vec<Json> = g
        .tensors()
        .map(|t| {
            let mut ne = [1u64; 4];
            ne.iter_mut().zip(t.info.dims()).for_each(|(n, &d)| *n = d);
            json!({
                "name": hex(t.name.as_bytes()),
                "type": t.info.ggml_type().code(),
                "ne": ne,
                "offset": t.info.offset(),
                "size": t.info.nbytes(),
            })
        })
        .collect();
    Ok(json!({
        "ok": true,
        "version": g.version(),
        "alignment": g.alignment(),
        "data_offset": g.data_offset(),
        "n_kv": g.kv_len(),
        "kv": kv,
        "n_tensors": tensors.len(),
        "tensors": tensors,
    }))
}

/// The first place two answers differ, as a JSON path.
fn first_difference(a: &Json, b: &Json, at: &str) -> Option<String> {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (p, q) = (x.get(k).unwrap_or(&Json::Null), y.get(k).unwrap_or(&Json::Null));
                first_difference(p, q, &format!("{at}.{k}"))
            })
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: ggml {a}, sipllm {b}")),
    }
}

/// A deliberate difference of `docs/parser.md`, recognised from ggml's own answer (ggml
/// accepted) and the code sipllm refused with.
fn deliberate(ggml: &Json, code: &str, file_len: u64) -> Option<&'static str> {
    let data_offset = u128::from(ggml["data_offset"].as_u64()?);
    for t in ggml["tensors"].as_array()? {
        let ne: Vec<i64> = t["ne"].as_array()?.iter().filter_map(Json::as_i64).collect();
        let ty = GgmlType::from_code(u32::try_from(t["type"].as_u64()?).ok()?);
        let (block, size) = (u128::from(ty.block_size()?), u128::from(ty.type_size()?));
        // Four dims below 2^63 can multiply past u128: saturate (it only has to exceed 2^64).
        let count = ne.iter().fold(1u128, |acc, &n| acc.saturating_mul(n as u128));
        let wrapped = ne.iter().fold(1i64, |acc, &n| acc.wrapping_mul(n));
        let nbytes = (count / block).saturating_mul(size);
        let end = (data_offset + u128::from(t["offset"].as_u64()?)).saturating_add(nbytes);
        let overflow = ["gguf::tensor::element_count_overflow", "gguf::tensor::byte_size_overflow"];
        if count > i64::MAX as u128 && wrapped <= 0 && overflow.contains(&code) {
            return Some(if t["size"].as_u64() == Some(0) {
                "D3 byte size wrapped to 0"
            } else {
                "D2 element count past int64"
            });
        }
        if end > u128::from(file_len) && code.ends_with("out_of_bounds") {
            return Some("D1 data past the end of the file");
        }
        let alignment = u128::from(ggml["alignment"].as_u64().unwrap_or(32));
        let padded = nbytes.div_ceil(alignment).saturating_mul(alignment);
        if padded > u128::from(u64::MAX) && code == "gguf::layout::offset_overflow" {
            return Some("D4 padded size wrapped past 2^64");
        }
    }
    None
}

/// D5: both accept and read the same, except that tensor names ggml cut at a NUL byte are
/// whole in sipllm's reading (hex-encoded, as `sipllm` answers).
fn names_kept_past_nul(ggml: &Json, ours: &Json) -> bool {
    let Some(tensors) = ours["tensors"].as_array() else { return false };
    let mut cut = ours.clone();
    let mut any = false;
    for (i, t) in tensors.iter().enumerate() {
        let Some(name) = t["name"].as_str() else { return false };
        // Whole bytes of a hex name: NUL is a `00` at an even position.
        let nul = (0..name.len()).step_by(2).find(|&k| name.get(k..k + 2) == Some("00"));
        if let Some(k) = nul {
            any = true;
            cut["tensors"][i]["name"] = json!(name.get(..k).unwrap_or_default());
        }
    }
    any && first_difference(ggml, &cut, "$").is_none()
}

/// Runs the dumper on `paths`: one JSON line per path; a path whose line is missing (the
/// dumper crashed) is run alone, and a crash there is recorded as such.
fn ggml(dumper: &Path, paths: &[PathBuf]) -> Vec<Json> {
    let run = |paths: &[PathBuf]| -> (Vec<Json>, bool) {
        let out = Command::new(dumper).args(paths).output().expect("run the dumper");
        let lines = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line from the dumper"))
            .collect();
        (lines, out.status.success())
    };
    let (mut lines, _) = run(paths);
    while lines.len() < paths.len() {
        let (one, ok) = run(&paths[lines.len()..=lines.len()]);
        match one.into_iter().next() {
            Some(line) if ok => lines.push(line),
            _ => lines.push(json!({"ok": false, "crashed": true})),
        }
        if lines.len() < paths.len() {
            let (rest, _) = run(&paths[lines.len()..]);
            // Keep only what the rest produced before any new crash; the loop handles it.
            lines.extend(rest);
        }
    }
    lines
}

#[test]
fn llama_cpp_profile_agrees_with_ggml() {
    let Some(dumper) = std::env::var_os(DUMPER).map(PathBuf::from) else {
        eprintln!(
            "ggml_differential: SKIPPED: set {DUMPER} to a ggml gguf dumper (docs/parser.md, \
             \"The llama-cpp profile against ggml\") to run the differential"
        );
        return;
    };
    let (inputs, have_shared) = inputs();
    let dir = std::env::temp_dir().join(format!("sipllm-ggml-diff-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut report = Vec::new();
    let mut disagreements = Vec::new();
    for (b, batch) in inputs.chunks(BATCH).enumerate() {
        let paths: Vec<PathBuf> = (0..batch.len())
            .map(|i| {
                let path = dir.join(format!("{}.gguf", b * BATCH + i));
                fs::write(&path, &batch[i].bytes).unwrap();
                path
            })
            .collect();
        let answers = ggml(&dumper, &paths);
        for ((m, path), theirs) in batch.iter().zip(&paths).zip(answers) {
            let ours = sipllm(path);
            let file_len = m.bytes.len() as u64;
            let verdict = match (theirs["ok"].as_bool() == Some(true), &ours) {
                (true, Ok(view)) => match first_difference(&theirs, view, "$") {
                    None => "both accept, same reading".to_string(),
                    Some(_) if names_kept_past_nul(&theirs, view) => {
                        let d = "D5 tensor name kept past a NUL";
                        report.push(json!({"input": m.name, "deliberate": d}));
                        format!("deliberate {d}")
                    }
                    Some(diff) => {
                        disagreements.push(format!("{}: {diff}", m.name));
                        "DISAGREE: both accept, different reading".to_string()
                    }
                },
                (false, Err(_)) => "both refuse".to_string(),
                (true, Err(code)) => match deliberate(&theirs, code, file_len) {
                    Some(d) => {
                        report.push(json!({"input": m.name, "deliberate": d, "sipllm": code}));
                        format!("deliberate {d}")
                    }
                    None => {
                        disagreements
                            .push(format!("{}: ggml accepts, sipllm refuses: {code}", m.name));
                        "DISAGREE: ggml accepts, sipllm refuses".to_string()
                    }
                },
                (false, Ok(_)) => {
                    let why = if theirs["crashed"] == true { "crashed" } else { "refuses" };
                    disagreements.push(format!(
                        "{}: ggml {why} ({}), sipllm accepts",
                        m.name, theirs["error"]
                    ));
                    format!("DISAGREE: ggml {why}, sipllm accepts")
                }
            };
            *tally.entry(verdict).or_default() += 1;
            let _ = fs::remove_file(path);
        }
    }
    let _ = fs::remove_dir_all(&dir);
    eprintln!("ggml_differential: {} inputs", inputs.len());
    for (verdict, n) in &tally {
        eprintln!("  {n:>6}  {verdict}");
    }
    for d in disagreements.iter().take(40) {
        eprintln!("  {d}");
    }
    if let Some(path) = std::env::var_os(REPORT) {
        let mut f = fs::File::create(path).unwrap();
        for r in &report {
            writeln!(f, "{r}").unwrap();
        }
        for d in &disagreements {
            writeln!(f, "{}", json!({"disagreement": d})).unwrap();
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements outside the documented list",
        disagreements.len()
    );
    if have_shared {
        assert!(inputs.len() >= 8_500, "only {} inputs", inputs.len());
    }
}

/// The harness's own logic, without a dumper: answers compared field by field, and each
/// deliberate difference recognised only with the code that matches it.
#[test]
fn answers_are_compared_and_deliberate_differences_recognised() {
    let ggml = |ne: [i64; 4], size: u64, offset: u64| {
        json!({"ok": true, "data_offset": 64, "tensors": [
            {"name": "7430", "type": 0, "ne": ne, "offset": offset, "size": size}
        ]})
    };
    // [2^32, 2^32] F32: ggml's count and size wrap to 0.
    let wrapped = ggml([1 << 32, 1 << 32, 1, 1], 0, 0);
    assert_eq!(
        deliberate(&wrapped, "gguf::tensor::element_count_overflow", 80),
        Some("D3 byte size wrapped to 0")
    );
    assert_eq!(deliberate(&wrapped, "gguf::layout::not_contiguous", 80), None);
    let negative = ggml([3, (1 << 62) + 1, 1, 1], 12, 0);
    assert_eq!(
        deliberate(&negative, "gguf::tensor::element_count_overflow", 80),
        Some("D2 element count past int64")
    );
    // 16 bytes at 64 + 0 end at 80: inside a file of 80 bytes, past one of 79.
    let small = ggml([4, 1, 1, 1], 16, 0);
    assert_eq!(deliberate(&small, "gguf::layout::out_of_bounds", 80), None);
    assert_eq!(
        deliberate(&small, "gguf::layout::out_of_bounds", 79),
        Some("D1 data past the end of the file")
    );
    assert_eq!(deliberate(&small, "gguf::tensor::element_count_overflow", 79), None);
    // A count past u128 (I8 [2^62, 2^40, 2^40], wrapped to 0) is still recognised.
    let huge = json!({"data_offset": 64, "tensors": [{"type": 24, "ne": [1u64 << 62, 1u64 << 40, 1u64 << 40, 1], "offset": 0, "size": 0}]});
    assert_eq!(
        deliberate(&huge, "gguf::tensor::element_count_overflow", 80),
        Some("D3 byte size wrapped to 0")
    );
    // I64 [2^61 - 1] is 2^64 - 8 bytes: GGML_PAD wraps it to 0.
    let pad = ggml([(1 << 61) - 1, 1, 1, 1], u64::MAX - 7, 0);
    let pad = json!({"alignment": 32, "data_offset": 64, "tensors": [{"type": 27, "ne": pad["tensors"][0]["ne"], "offset": 0, "size": u64::MAX - 7}]});
    assert_eq!(
        deliberate(&pad, "gguf::layout::offset_overflow", 80),
        Some("D4 padded size wrapped past 2^64")
    );
    assert_eq!(deliberate(&small, "gguf::layout::offset_overflow", 80), None);
    // D5: a name ggml cut at a NUL that sipllm keeps whole; any other difference is not it.
    let ours = |name: &str| json!({"ok": true, "tensors": [{"name": name, "offset": 0}]});
    let theirs = ours("7430");
    assert!(names_kept_past_nul(&theirs, &ours("7430007a")));
    assert!(!names_kept_past_nul(&theirs, &ours("7430")));
    assert!(!names_kept_past_nul(&theirs, &ours("7431007a")));
    // `00` straddling two bytes (0x70, 0x0a) is no NUL.
    assert!(!names_kept_past_nul(&ours("7"), &ours("700a")));
    let mut moved = ours("7430007a");
    moved["tensors"][0]["offset"] = json!(32);
    assert!(!names_kept_past_nul(&theirs, &moved));
    // Field by field, with the path of the first difference.
    let mut other = small.clone();
    other["tensors"][0]["offset"] = json!(32);
    assert_eq!(first_difference(&small, &small, "$"), None);
    assert_eq!(
        first_difference(&small, &other, "$").as_deref(),
        Some("$.tensors[0].offset: ggml 0, sipllm 32")
    );
}
