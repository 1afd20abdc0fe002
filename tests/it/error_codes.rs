//! Every stable code of the workspace is well formed, unique, documented, raised where it is
//! named, and seen by a test.
//!
//! A code is `crate::area::name`, the crate being the directory under `crates/` whose source
//! raises it: in an error kind's `code()` arm (`Variant { .. } => "edit::write::create"`) or,
//! for findings that are not error kinds (the template audit and lint), as a literal in the
//! crate's non-test source. `scripts/error_codes.py` reads the same way to write
//! `docs/errors.md`. Codes are an API (scripts match on them): a duplicate would make two
//! failures indistinguishable, an unlisted one is undocumented, a name that no crate raises
//! (in a help table, a chapter, the Python package) is a promise nothing keeps, and a code no
//! test sees may not be reachable at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `crate::area::name`: three parts of lowercase ASCII, digits and `_`.
fn is_code(s: &str) -> bool {
    let parts: Vec<&str> = s.split("::").collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// The code of a `code()` arm on this line: a pattern starting with a variant (an optional
/// `Enum::` path, then a capitalised name), no string before the `=>`, a code string after it.
fn arm_code(line: &str) -> Option<&str> {
    let (pattern, rest) = line.split_once("=>")?;
    let pattern = pattern.trim_start();
    if pattern.contains('"') {
        return None;
    }
    let head: String =
        pattern.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let variant = head.rsplit("::").next()?;
    if !variant.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('"')?;
    let code = &rest[..rest.find('"')?];
    is_code(code).then_some(code)
}

/// Every code-shaped string between double quotes or backticks on this line.
fn quoted_codes(line: &str) -> impl Iterator<Item = &str> {
    ['"', '`']
        .into_iter()
        .flat_map(move |q| line.split(q).skip(1).step_by(2).filter(|s| is_code(s)))
}

/// The part of a source file that is not a test: nothing of a `tests.rs` file or one under a
/// `tests/` directory, and a file up to its `#[cfg(test)] mod … {` (test modules close a file,
/// by the workspace's style).
fn non_test_source<'a>(path: &Path, text: &'a str) -> &'a str {
    // `path` is relative to the workspace (a checkout may itself sit under a `tests/`).
    let in_tests_dir =
        path.parent().is_some_and(|d| d.components().any(|c| c.as_os_str() == "tests"));
    if in_tests_dir || path.file_name().is_some_and(|n| n == "tests.rs") {
        return "";
    }
    let mut at = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_end() == "#[cfg(test)]" {
            let next = lines[i + 1..].iter().take(3).find(|l| !l.starts_with("#["));
            let opens_module = next.is_some_and(|l| {
                let l = l.trim_start_matches("pub ").trim_start_matches("pub(crate) ");
                l.starts_with("mod ") && l.trim_end().ends_with('{')
            });
            if opens_module {
                return &text[..at];
            }
        }
        at += line.len();
    }
    text
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            // Build output and virtual environments hold copies, not the project's text.
            if !matches!(name, "target" | ".venv" | "node_modules" | "pkg") {
                files(&p, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(p);
        }
    }
}

/// The workspace's codes: code → where it is raised, with the arms raising a code twice.
struct Raised {
    codes: BTreeMap<String, String>,
    duplicates: Vec<String>,
    crates: BTreeSet<String>,
}

fn raised(root: &Path) -> Raised {
    let mut codes = BTreeMap::new();
    let mut duplicates = Vec::new();
    let mut literals = Vec::new();
    let mut crates = BTreeSet::new();
    let mut sources = Vec::new();
    files(&root.join("crates"), &[".rs"], &mut sources);
    for file in sources {
        let rel = file.strip_prefix(root).unwrap_or(&file);
        let Some(krate) = rel.iter().nth(1).and_then(|c| c.to_str()) else { continue };
        if rel.iter().nth(2).is_none_or(|c| c != "src") {
            continue;
        }
        crates.insert(krate.to_owned());
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in non_test_source(rel, &text).lines().enumerate() {
            let at = format!("{}:{}", rel.display(), n + 1);
            if let Some(code) = arm_code(line) {
                if let Some(first) = codes.insert(code.to_owned(), at.clone()) {
                    duplicates.push(format!("{code}: {first} and {at}"));
                }
                continue;
            }
            for code in quoted_codes(line) {
                if code.split("::").next() == Some(krate) {
                    literals.push((code.to_owned(), at.clone()));
                }
            }
        }
    }
    for (code, at) in literals {
        codes.entry(code).or_insert(at);
    }
    Raised { codes, duplicates, crates }
}

fn root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().ok()?;
    // The packaged copy of this crate (`cargo package`) has no workspace beside it.
    root.join("crates").is_dir().then_some(root)
}

#[test]
fn every_code_is_well_formed_unique_and_listed_in_docs_errors_md() {
    let Some(root) = root() else { return eprintln!("skipped: no workspace") };
    let Raised { codes, duplicates, crates } = raised(&root);
    assert!(codes.len() > 250, "only {} codes found: is the scan broken?", codes.len());
    assert!(duplicates.is_empty(), "codes raised by two kinds:\n{}", duplicates.join("\n"));
    let foreign: Vec<_> = codes
        .iter()
        .filter(|(c, at)| {
            let krate = c.split("::").next().unwrap_or("");
            !crates.contains(krate) || !at.starts_with(&format!("crates/{krate}/"))
        })
        .collect();
    assert!(foreign.is_empty(), "codes not named crate::area::name by their crate: {foreign:?}");

    let docs = std::fs::read_to_string(root.join("docs/errors.md")).unwrap();
    let listed: BTreeSet<String> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split_once('`').map(|(c, _)| c.to_owned()))
        .filter(|c| is_code(c))
        .collect();
    let unlisted: Vec<_> = codes.keys().filter(|c| !listed.contains(*c)).collect();
    let stale: Vec<_> = listed.iter().filter(|c| !codes.contains_key(*c)).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "docs/errors.md is stale (run `python3 scripts/error_codes.py`): not listed {unlisted:?}, \
         listed but raised nowhere {stale:?}"
    );
}

/// What the project promises by name — the libraries' and CLI's source, the Python package,
/// the page, the book — names only codes some crate raises (a renamed code leaves no stale
/// reference behind).
#[test]
fn every_code_named_in_source_or_docs_is_raised() {
    let Some(root) = root() else { return eprintln!("skipped: no workspace") };
    let Raised { codes, crates, .. } = raised(&root);
    let mut texts = Vec::new();
    files(&root.join("crates"), &[".rs"], &mut texts);
    for dir in ["python/src", "python/sipllm_gguf", "web/src", "web/static", "docs"] {
        files(&root.join(dir), &[".rs", ".py", ".js", ".html", ".md"], &mut texts);
    }
    texts.push(root.join("README.md"));
    let mut unknown = Vec::new();
    for file in texts {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let rel = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
        let relative = file.strip_prefix(&root).unwrap_or(&file);
        let text = if rel.ends_with(".rs") { non_test_source(relative, &text) } else { &text };
        for (n, line) in text.lines().enumerate() {
            for code in quoted_codes(line) {
                let ours = code.split("::").next().is_some_and(|k| crates.contains(k));
                if ours && !codes.contains_key(code) {
                    unknown.push(format!("{rel}:{}: {code}", n + 1));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "codes named but raised by no crate:\n{}", unknown.join("\n"));
}

/// Every code is seen by some test: asserted by a Rust test (a crate's `tests/`, a test module,
/// this crate), a CLI golden file, or a Python or browser test. A code no test names may be
/// unreachable, or reachable with a message nobody has read.
#[test]
fn every_code_is_seen_by_a_test() {
    let Some(root) = root() else { return eprintln!("skipped: no workspace") };
    let Raised { codes, .. } = raised(&root);
    let mut tests = Vec::new();
    let exts = [".rs", ".py", ".txt", ".json", ".js", ".stderr", ".stdout"];
    files(&root.join("crates"), &exts, &mut tests);
    for dir in ["tests", "python/tests", "web/tests"] {
        files(&root.join(dir), &exts, &mut tests);
    }
    let this = Path::new(file!()).file_name().unwrap();
    let mut seen = BTreeSet::new();
    for file in tests {
        let rel = file.strip_prefix(&root).unwrap_or(&file);
        let in_tests = rel.iter().any(|c| c == "tests");
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let test_text = if file.file_name() == Some(this) {
            ""
        } else if in_tests {
            &text[..]
        } else if rel.extension().is_some_and(|e| e == "rs") {
            let source = non_test_source(rel, &text);
            &text[source.len()..]
        } else {
            ""
        };
        for code in codes.keys() {
            if !seen.contains(code) && test_text.contains(code.as_str()) {
                seen.insert(code.clone());
            }
        }
    }
    let unseen: Vec<_> = codes.iter().filter(|(c, _)| !seen.contains(*c)).collect();
    assert!(unseen.is_empty(), "codes no test names ({}):\n{unseen:#?}", unseen.len());
}

#[test]
fn the_scan_reads_codes_and_nothing_else() {
    assert_eq!(
        arm_code(r#"            BadMagic { .. } => "gguf::header::bad_magic","#),
        Some("gguf::header::bad_magic")
    );
    assert_eq!(
        arm_code(r#"    Self::Io(_) => "streaming::io::read","#),
        Some("streaming::io::read")
    );
    assert_eq!(arm_code(r#"    Tolerated(kind) => kind.code(),"#), None);
    assert_eq!(arm_code(r#"    assert_eq!(e.code(), "x::y::z") => "a::b::c""#), None);
    assert_eq!(arm_code(r#"    "a" => "b::c::d","#), None);
    assert_eq!(arm_code(r#"    Foo => "Not::A_code::x","#), None);
    assert_eq!(arm_code(r#"    Foo => "area::name","#), None, "two parts name no crate");
    let line = r#"finding("model::audit::dunder", "x::y", `edit::write::io`, "a::b::c::d")"#;
    assert_eq!(quoted_codes(line).collect::<Vec<_>>(), ["model::audit::dunder", "edit::write::io"]);
    let text =
        "fn a() {}\n#[cfg(test)]\nfn helper() {}\n#[cfg(test)]\nmod tests {\n\"x::y::z\"\n}\n";
    assert_eq!(
        non_test_source(Path::new("crates/a/src/lib.rs"), text),
        "fn a() {}\n#[cfg(test)]\nfn helper() {}\n"
    );
    assert_eq!(non_test_source(Path::new("crates/a/src/error/tests.rs"), text), "");
}
