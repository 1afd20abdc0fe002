//! Serves files over loopback HTTP with range support, for measurements:
//! `cargo run --release -p sipllm-remote --features test-server --example serve -- FILE...`
//! prints one URL per file and serves until killed (at most 100,000 requests).

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
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
