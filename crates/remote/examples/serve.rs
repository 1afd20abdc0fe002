//! Serves files over loopback HTTP with range support, for measurements:
//! `cargo run --release -p sipllm-remote --features test-server --example serve -- FILE...`
//! prints one URL per file and serves until killed (at most 100,000 requests); `GET /__stats`
//! tells the requests and body bytes served so far, and with `SERVE_LOG=1` every request's
//! range is printed to standard error.

use std::path::PathBuf;

use sipllm_remote::test_server::{Body, ServerOptions, TestServer};

fn main() -> std::io::Result<()> {
    let files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let mut served = Vec::new();
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("file").to_owned();
        served.push((format!("/{name}"), Body::file(f)?));
    }
    let names: Vec<String> = served.iter().map(|(p, _)| p.clone()).collect();
    let server = TestServer::start(served, ServerOptions::default())?;
    for n in names {
        println!("{}", server.url(&n));
    }
    // With SERVE_LOG set, every request's path and range goes to standard error.
    let log = std::env::var_os("SERVE_LOG").is_some();
    let mut shown = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if log {
            let all = server.log();
            for l in all.get(shown..).unwrap_or_default() {
                eprintln!("{} {}", l.path, l.range.as_deref().unwrap_or("-"));
            }
            shown = all.len();
        }
    }
}
