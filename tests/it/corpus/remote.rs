//! `sipllm` over HTTP on every corpus file: through the loopback range server (responses
//! split at random sizes), `inspect --json`, `validate --format json` and the per-tensor
//! manifest give what they give for the local file, in a bounded number of requests.

use std::path::{Path, PathBuf};

use sipllm_remote::test_server::{Body, ServerOptions, TestServer};

use crate::support::{sipllm, temp_dir};

/// Serves `files` (name → path) with responses split at random sizes.
fn serve(files: &[(&str, &Path)], seed: u64) -> TestServer {
    let served =
        files.iter().map(|(name, path)| (format!("/{name}"), Body::file(path).unwrap())).collect();
    let opts = ServerOptions { split_seed: Some(seed), ..ServerOptions::default() };
    TestServer::start(served, opts).unwrap()
}

fn same_output(dir: &Path, args: &[&str], local: &str, url: &str) -> String {
    let with = |file: &str| -> Vec<String> {
        args.iter().map(|a| if *a == "FILE" { file.to_owned() } else { (*a).to_owned() }).collect()
    };
    let l = with(local);
    let r = with(url);
    let lrun = sipllm(dir, &l.iter().map(String::as_str).collect::<Vec<_>>());
    let rrun = sipllm(dir, &r.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        rrun.code,
        lrun.code,
        "{args:?} {url}:\n{}\n{}",
        lrun.transcript(),
        rrun.transcript()
    );
    // Names differ (the path, the URL; a split set's shard paths, its shard URLs); nothing else.
    let (dir_l, dir_r) = (parent(local), parent(url));
    let lout = lrun.stdout.replace(local, "FILE").replace(&dir_l, "DIR");
    let rout = rrun.stdout.replace(url, "FILE").replace(&dir_r, "DIR");
    assert_eq!(rout, lout, "{args:?} on {url}");
    if lrun.stdout == lout {
        assert_eq!(rrun.stdout_bytes, lrun.stdout_bytes, "{args:?} on {url}");
    }
    lrun.stdout
}

fn parent(name: &str) -> String {
    name.rsplit_once('/').map_or(String::new(), |(d, _)| format!("{d}/"))
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn every_corpus_file_reads_the_same_over_http() {
    let files: Vec<PathBuf> = sipllm_tests::all().iter().map(|f| f.path.clone()).collect();
    assert!(files.len() >= 15, "only {} corpus files", files.len());
    let named: Vec<(String, PathBuf)> = files
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("{i}-{}", p.file_name().unwrap().to_string_lossy()), p.clone()))
        .collect();
    let refs: Vec<(&str, &Path)> = named.iter().map(|(n, p)| (n.as_str(), p.as_path())).collect();
    let server = serve(&refs, 42);
    let dir = temp_dir("remote-corpus");
    for (name, path) in &named {
        let url = server.url(name);
        let local = path.to_str().unwrap();
        // The same view of the header, and the same verdict, for files that open.
        same_output(&dir, &["inspect", "--json", "FILE"], local, &url);
        same_output(&dir, &["validate", "--format", "json", "FILE"], local, &url);
        // The same tensor bytes: the per-tensor manifest (readable files only).
        same_output(&dir, &["verify", "--hash", "sha256", "--manifest", "-", "FILE"], local, &url);
    }
    // One request per small file to open it, a few for the rest; never one per field.
    assert!(server.requests() <= 4 * named.len() as u64, "{} requests", server.requests());
}
