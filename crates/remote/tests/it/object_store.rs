//! `s3://` through `object_store` against a local moto server (`pip install 'moto[server]'`),
//! started here on 127.0.0.1 and killed at the end. Without moto the test says so and skips,
//! unless `SIPLLM_REQUIRE_MOTO` is set (CI's object-store step sets it).
#![cfg(feature = "object-store")]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sipllm_gguf::GgmlType;
use sipllm_remote::{Kind, ObjectSource, RemoteError, RemoteUrl};
use sipllm_streaming::{Model, OpenOptions, ReadAt, WeightSource};
use sipllm_testkit::{GgufBuilder, Value};

/// A moto server on 127.0.0.1; killed when dropped.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_moto() -> Option<Moto> {
    let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let spawn = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    };
    let child = spawn("moto_server", &[]).or_else(|| spawn("python3", &["-m", "moto.server"]));
    let Some(child) = child else {
        return skip("neither moto_server nor python3 -m moto.server could be started");
    };
    let mut moto = Moto { child, port };
    // Bounded wait for it to listen.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if let Ok(Some(_)) = moto.child.try_wait() {
            return skip("moto exited at once (is moto[server] installed?)");
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(moto);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = moto.child.kill();
    skip("moto did not listen within 30 s")
}

fn skip<T>(why: &str) -> Option<T> {
    if std::env::var_os("SIPLLM_REQUIRE_MOTO").is_some() {
        panic!("SIPLLM_REQUIRE_MOTO is set, but {why}");
    }
    eprintln!("SKIPPED: object store tests: {why}; nothing was compared");
    None
}

fn model_bytes(name: &str) -> Vec<u8> {
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("general.name", Value::str(name))
        .tensor("a", GgmlType::F32, &[64, 8])
        .tensor("b", GgmlType::F16, &[32])
        .build()
}

#[test]
fn s3_objects_read_like_files_and_a_change_is_refused() {
    let Some(moto) = start_moto() else { return };
    let base = format!("http://127.0.0.1:{}", moto.port);
    // moto takes unsigned requests: make the bucket and the object directly.
    ureq::put(&format!("{base}/models")).send_empty().unwrap();
    let bytes = model_bytes("on s3");

    let config = [
        ("aws_endpoint", base.as_str()),
        ("allow_http", "true"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
        ("aws_virtual_hosted_style_request", "false"),
        // Credentials are given, so the instance metadata service is never asked; should a
        // fallback ever happen, it goes to a closed loopback port, not off the machine.
        ("aws_metadata_endpoint", "http://127.0.0.1:9"),
    ];
    let put = |bytes: Vec<u8>| {
        use object_store::ObjectStore;
        let mut b = object_store::aws::AmazonS3Builder::new().with_url("s3://models");
        for (k, v) in config {
            b = b.with_config(k.parse().unwrap(), v);
        }
        let store = b.build().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let path = object_store::path::Path::from("dir/m.gguf");
        rt.block_on(store.put(&path, bytes.into())).unwrap();
    };
    put(bytes.clone());
    let url = RemoteUrl::parse("s3://models/dir/m.gguf", None).unwrap();
    let src = ObjectSource::open_with(&url, &config).unwrap();
    assert_eq!(src.len(), bytes.len() as u64);
    assert!(src.e_tag().is_some());
    let model = Model::from_source(src, &OpenOptions::default()).unwrap();
    assert_eq!(model.meta_str("general.name").unwrap(), "on s3");
    for t in model.tensors() {
        let mut buf = vec![0u8; t.byte_len().unwrap()];
        model.read_raw(t, &mut buf).unwrap();
        let at = t.abs_offset as usize;
        assert_eq!(&buf[..], &bytes[at..at + buf.len()], "{}", t.name);
    }

    // Many small reads in order (served from the fetched range) give the object's bytes.
    let src = ObjectSource::open_with(&url, &config).unwrap();
    let mut all = vec![0u8; bytes.len()];
    for (i, chunk) in all.chunks_mut(64).enumerate() {
        src.read_exact_at(i as u64 * 64, chunk).unwrap();
    }
    assert_eq!(all, bytes);

    // Replaced while open: the next read is refused, not spliced.
    let src = ObjectSource::open_with(&url, &config).unwrap();
    put(model_bytes("replaced"));
    let e = src.read_exact_at(0, &mut [0u8; 16]).unwrap_err();
    let r = RemoteError::from_io(&e).unwrap_or_else(|| panic!("{e}"));
    assert_eq!(r.code(), "remote::http::changed", "{r}");

    // A missing key is a 404.
    let missing = RemoteUrl::parse("s3://models/dir/none.gguf", None).unwrap();
    let e = ObjectSource::open_with(&missing, &config).unwrap_err();
    assert_eq!((e.code(), e.status), ("remote::store::object_store", Some(404)), "{e}");
}

/// A plain-HTTP endpoint without `allow_http` (`AWS_ALLOW_HTTP`) is refused before any
/// request, naming the variable, where `object_store` alone says "HTTP error: builder
/// error". Needs no server: nothing is sent.
#[test]
fn a_plain_http_endpoint_without_allow_http_names_the_variable() {
    let url = RemoteUrl::parse("s3://models/dir/m.gguf", None).unwrap();
    let config = |allow: &'static str| {
        [
            // A closed port: were anything sent, the error would be a connection's.
            ("aws_endpoint_url", "http://127.0.0.1:9"),
            ("allow_http", allow),
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
            ("aws_region", "us-east-1"),
            ("aws_metadata_endpoint", "http://127.0.0.1:9"),
        ]
    };
    // (`allow_http` given as false overrides an AWS_ALLOW_HTTP the environment may set.)
    let e = ObjectSource::open_with(&url, &config("false")).unwrap_err();
    assert_eq!(e.code(), "remote::store::http_not_allowed", "{e}");
    let shown = e.to_string();
    assert!(shown.contains("AWS_ALLOW_HTTP") && shown.contains("http://127.0.0.1:9"), "{shown}");
    assert!(shown.contains("s3://models/dir/m.gguf"), "{shown}");
    assert!(e.help().contains("AWS_ALLOW_HTTP=true"), "{}", e.help());
    assert!(!shown.contains("builder error"), "{shown}");
    // Through the streaming layer's error, as the CLI shows it.
    let io = e.clone().into_io();
    assert_eq!(
        RemoteError::find_in(&io).map(|r| r.code()),
        Some("remote::store::http_not_allowed")
    );
}
