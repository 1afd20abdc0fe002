//! Tells the tests whether the shared corpus (`../shared/corpus` beside the checkout) is there.
//!
//! Present: `cfg(has_corpus)` is set and `SIPLLM_CORPUS_DIR` names the directory, so the corpus
//! tests run. Absent: they are compiled but `#[ignore]`d with the reason, which `cargo test`
//! prints on every one of them. With `SIPLLM_REQUIRE_CORPUS=1` (CI sets it) an absent corpus
//! fails the build instead, so that CI can never pass without the comparison having run.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_corpus)");
    println!("cargo::rerun-if-env-changed=SIPLLM_REQUIRE_CORPUS");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let corpus = Path::new(&manifest).join("../../shared/corpus");
    // A directory is re-checked when anything in it changes; a missing path on every build
    // (cheap: this script only), so that a corpus put in place later is noticed.
    println!("cargo::rerun-if-changed={}", corpus.display());
    let required = std::env::var("SIPLLM_REQUIRE_CORPUS").is_ok_and(|v| !v.is_empty() && v != "0");
    match corpus.canonicalize() {
        Ok(dir) if dir.is_dir() => {
            println!("cargo::rustc-cfg=has_corpus");
            println!("cargo::rustc-env=SIPLLM_CORPUS_DIR={}", dir.display());
        }
        _ if required => {
            eprintln!(
                "error: SIPLLM_REQUIRE_CORPUS is set but {} is not a directory: the conformance \
                 tests against the reference reader cannot run",
                corpus.display()
            );
            std::process::exit(1);
        }
        _ => println!(
            "cargo::warning=../shared/corpus not found beside the checkout: the corpus tests of \
             sipllm-tests are ignored"
        ),
    }
}
