//! Tells the tests whether the chat-template oracle can run: Python 3 with `jinja2`
//! (`scripts/chat_template_oracle.py`, transformers' Jinja2 configuration).
//!
//! Present: `cfg(has_jinja2)` is set and the parity test against it runs. Absent: that test
//! is compiled but `#[ignore]`d with the reason. With `SIPLLM_REQUIRE_ORACLE=1` (`.ci/run`
//! sets it) an absent oracle fails the build instead, so that CI cannot pass without the
//! comparison having run.

use std::process::{Command, Stdio};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_jinja2)");
    println!("cargo::rerun-if-env-changed=SIPLLM_REQUIRE_ORACLE");
    println!("cargo::rerun-if-changed=build.rs");
    let found = Command::new("python3")
        .args(["-c", "import jinja2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let required = std::env::var("SIPLLM_REQUIRE_ORACLE").is_ok_and(|v| !v.is_empty() && v != "0");
    if found {
        println!("cargo::rustc-cfg=has_jinja2");
    } else if required {
        eprintln!(
            "error: SIPLLM_REQUIRE_ORACLE is set but `python3 -c \"import jinja2\"` fails: the \
             chat-template parity test cannot run (pip install jinja2==3.1.6)"
        );
        std::process::exit(1);
    } else {
        println!(
            "cargo::warning=python3 with jinja2 not found: the chat-template parity test of \
             sipllm-model is ignored (pip install jinja2==3.1.6)"
        );
    }
}
