//! URLs wherever a FILE is read (the `sipllm` command over `sipllm-remote`): every reading
//! command over the loopback range server gives what it gives for the local file — on every
//! corpus file too — and errors name the URL with their `remote::` code.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sipllm_gguf::GgmlType;
use sipllm_remote::test_server::{Body, Fault, ServerOptions, TestServer};
use sipllm_testkit::{GgufBuilder, Value as Kv};

use crate::support::{sample_path, sipllm, temp_dir};

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

/// A model with a 10 MiB tensor between two small ones.
fn model_with_a_big_tensor(dir: &Path) -> PathBuf {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Kv::str("llama"))
        .tensor("small", GgmlType::F32, &[16])
        .tensor("big", GgmlType::F32, &[1024, 2560])
        .tensor("tail", GgmlType::F32, &[16])
        .build();
    let p = dir.join("big.gguf");
    fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn read_of_one_tensor_or_range_is_one_request() {
    let dir = temp_dir("remote-read");
    let model = model_with_a_big_tensor(&dir);
    let server = serve(&[("big.gguf", &model)], 3);
    let url = server.url("big.gguf");
    let local = model.to_str().unwrap();
    same_output(&dir, &["read", "FILE", "big"], local, &url);
    // Opening is one request; the 10 MiB tensor, read in 4 MiB pieces, one more.
    assert_eq!(server.requests(), 2, "{:?}", server.log());
    let before = server.requests();
    same_output(&dir, &["read", "FILE", "big", "--range", "4096..8392704"], local, &url);
    assert_eq!(server.requests() - before, 2, "{:?}", server.log());
    same_output(&dir, &["tensors", "FILE"], local, &url);
}

#[test]
fn split_sets_read_from_the_first_shard_url() {
    let dir = temp_dir("remote-split");
    let model = model_with_a_big_tensor(&dir);
    let run = sipllm(&dir, &["split", "--max-tensors", "1", "big.gguf"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let names: Vec<String> = (1..=3).map(|i| format!("big-{i:05}-of-00003.gguf")).collect();
    let paths: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let files: Vec<(&str, &Path)> =
        names.iter().zip(&paths).map(|(n, p)| (n.as_str(), p.as_path())).collect();
    let server = serve(&files, 5);
    let url = server.url(&names[0]);
    let first = paths[0].to_str().unwrap();
    same_output(&dir, &["inspect", "--json", "FILE"], first, &url);
    let manifest = same_output(&dir, &["verify", "--manifest", "-", "FILE"], first, &url);
    assert_eq!(manifest.lines().count(), 3);
    // The set's bytes are the unsplit model's.
    let whole = sipllm(&dir, &["verify", "--manifest", "-", model.to_str().unwrap()]);
    assert_eq!(whole.stdout, manifest);
}

#[test]
fn convert_and_edit_write_from_a_url() {
    let dir = temp_dir("remote-write");
    let server = serve(&[("tiny.gguf", &sample_path())], 9);
    let url = server.url("tiny.gguf");
    let local = sample_path();
    let local = local.to_str().unwrap();
    for (args, out) in [
        (vec!["convert", "FILE", "OUT"], "tiny.llmw"),
        (vec!["edit", "FILE", "-o", "OUT", "--set", "general.name=str:renamed"], "edited.gguf"),
    ] {
        let run_to = |file: &str, out: &str| {
            let a: Vec<&str> = args
                .iter()
                .map(|a| {
                    if *a == "FILE" {
                        file
                    } else if *a == "OUT" {
                        out
                    } else {
                        a
                    }
                })
                .collect();
            let run = sipllm(&dir, &a);
            assert_eq!(run.code, Some(0), "{a:?}: {}", run.transcript());
            fs::read(dir.join(out)).unwrap()
        };
        let from_file = run_to(local, &format!("local-{out}"));
        let from_url = run_to(&url, &format!("remote-{out}"));
        assert_eq!(from_url, from_file, "{args:?}");
    }
    // A URL cannot be edited in place.
    let run = sipllm(&dir, &["edit", &url, "--in-place", "--set", "general.name=str:x"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("in place"), "{}", run.stderr);
}

/// `edit -o` and `convert` of a URL fetch the whole object into TMPDIR: a server claiming a
/// petabyte filled the disk until the write failed (issue 26). The claimed size is checked
/// against the free space first, and nothing is fetched.
#[test]
fn a_claimed_size_past_the_free_space_is_refused_before_the_fetch() {
    let dir = temp_dir("remote-room");
    let huge = TestServer::start(
        vec![("/huge.gguf".to_owned(), Body::Zeros(1 << 50))],
        ServerOptions::default(),
    )
    .unwrap();
    let url = huge.url("huge.gguf");
    for args in [
        vec!["edit", url.as_str(), "-o", "out.gguf", "--set", "general.name=str:x"],
        vec!["convert", url.as_str(), "out.llmw"],
    ] {
        let before = huge.log().len();
        let run = sipllm(&dir, &args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.transcript());
        assert!(run.stderr.contains("streaming::io::spool"), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("1,125,899,906,842,624 bytes"), "{args:?}: {}", run.stderr);
        // The size probe only: no body was fetched.
        let requests = huge.log().len() - before;
        assert!(requests <= 2, "{args:?}: {requests} requests");
    }
    assert!(!dir.join("out.gguf").exists() && !dir.join("out.llmw").exists());
}

#[test]
fn remote_failures_have_codes_urls_and_exit_2() {
    let dir = temp_dir("remote-errors");
    let sample: Arc<[u8]> = Arc::from(fs::read(sample_path()).unwrap());
    let files = vec![("/m.gguf".to_owned(), Body::Mem(sample))];
    let ignoring = TestServer::start(
        files.clone(),
        ServerOptions { fault: Fault::IgnoreRange, ..ServerOptions::default() },
    )
    .unwrap();
    let run = sipllm(&dir, &["inspect", &ignoring.url("m.gguf")]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("remote::http::range_ignored"), "{}", run.stderr);
    assert!(run.stderr.contains(&ignoring.url("m.gguf")), "{}", run.stderr);
    assert!(run.stderr.contains("HTTP 200"), "{}", run.stderr);

    let ok = TestServer::start(files, ServerOptions::default()).unwrap();
    let missing = format!("{}?token=secret", ok.url("nothing.gguf"));
    let run = sipllm(&dir, &["validate", &missing]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(
        run.stdout.contains("remote::http::status") || run.stderr.contains("remote::http::status")
    );
    assert!(
        !run.stdout.contains("secret") && !run.stderr.contains("secret"),
        "{}",
        run.transcript()
    );

    // hf:// resolves against HF_ENDPOINT, and sends HF_TOKEN there.
    let hub = TestServer::start(
        vec![(
            "/org/repo/resolve/main/m.gguf".to_owned(),
            Body::Mem(Arc::from(fs::read(sample_path()).unwrap())),
        )],
        ServerOptions::default(),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sipllm-it"))
        .args(["inspect", "--json", "hf://org/repo/m.gguf"])
        .env("HF_ENDPOINT", hub.base_url())
        .env("HF_TOKEN", "hf_test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let local = sipllm(&dir, &["inspect", "--json", sample_path().to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), local.stdout);
    assert_eq!(hub.log()[0].authorization.as_deref(), Some("Bearer hf_test"));

    // Without the object-store feature, s3:// says how to get it.
    let run = sipllm(&dir, &["inspect", "s3://bucket/m.gguf"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
    assert!(run.stderr.contains("remote::url::unsupported_scheme"), "{}", run.stderr);
}

#[test]
fn a_truncated_remote_file_is_inspected_leniently_like_a_local_one() {
    let dir = temp_dir("remote-lenient");
    let sample = fs::read(sample_path()).unwrap();
    let cut = dir.join("cut.gguf");
    fs::write(&cut, &sample[..sample.len() - 100]).unwrap();
    let server = serve(&[("cut.gguf", &cut)], 11);
    let url = server.url("cut.gguf");
    let local = cut.to_str().unwrap();
    // Strict: the same refusal (tensor data outside the file), exit 1 both ways.
    let strict = sipllm(&dir, &["inspect", &url]);
    assert_eq!(strict.code, Some(1), "{}", strict.transcript());
    assert!(strict.stderr.contains("out_of_bounds"), "{}", strict.stderr);
    // Lenient: the header is shown, as for the local file.
    same_output(&dir, &["inspect", "--json", "--profile", "lenient", "FILE"], local, &url);
}
