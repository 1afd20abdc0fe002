//! The fault model against the loopback test server: every mode ends in a bounded number of
//! requests, well inside 30 s, with a typed error or the right bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sipllm_gguf::GgmlType;
use sipllm_remote::test_server::{Body, Fault, ServerOptions, TestServer};
use sipllm_remote::{HttpOptions, HttpSource, HttpUrl, Kind, RemoteError, RemoteUrl, open_model};
use sipllm_streaming::{OpenOptions, ReadAt, WeightSource};
use sipllm_testkit::{GgufBuilder, Value};

/// Fast retries; a short deadline.
fn opts() -> HttpOptions {
    HttpOptions {
        backoff: Duration::from_millis(5),
        deadline: Duration::from_secs(10),
        read_timeout: Duration::from_secs(5),
        ..HttpOptions::default()
    }
}

fn bytes(n: usize, seed: u64) -> Arc<[u8]> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn serve(data: &Arc<[u8]>, fault: Fault) -> TestServer {
    let opts = ServerOptions { fault, split_seed: Some(7), ..ServerOptions::default() };
    TestServer::start(vec![("/obj".into(), Body::Mem(data.clone()))], opts).unwrap()
}

fn url(server: &TestServer) -> HttpUrl {
    HttpUrl::parse(&server.url("obj")).unwrap()
}

/// Runs `f`, checking the request and time budgets of the fault model.
fn bounded<T>(server: &TestServer, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert!(server.requests() <= 10, "{} requests", server.requests());
    out
}

fn code_of(e: &RemoteError) -> &'static str {
    e.code()
}

fn read_err(src: &HttpSource, offset: u64, len: usize) -> RemoteError {
    let mut buf = vec![0u8; len];
    let e = src.read_exact_at(offset, &mut buf).unwrap_err();
    RemoteError::from_io(&e).cloned().unwrap_or_else(|| panic!("not a remote error: {e}"))
}

#[test]
fn correct_206_serves_exact_bytes() {
    let data = bytes(5 << 20, 1);
    let server = serve(&data, Fault::None);
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    assert_eq!(src.len(), data.len() as u64);
    // Header-like small reads from 0 come from the first block: no new request.
    let mut buf = vec![0u8; 64 << 10];
    src.read_exact_at(1000, &mut buf).unwrap();
    assert_eq!(&buf[..], &data[1000..1000 + buf.len()]);
    assert_eq!(src.stats().requests, 1);
    // A large read elsewhere is one request for exactly it.
    let mut big = vec![0u8; 3 << 20];
    src.read_exact_at(2 << 20, &mut big).unwrap();
    assert_eq!(&big[..], &data[2 << 20..5 << 20]);
    // Past the end: a ShortRead, no request.
    let before = src.stats().requests;
    let e = src.read_exact_at(data.len() as u64 - 2, &mut [0u8; 4]).unwrap_err();
    assert_eq!(sipllm_streaming::ShortRead::from_io(&e).map(|s| s.missing), Some(2));
    assert_eq!(src.stats().requests, before);
    assert!(server.log().iter().all(|l| l.accept_encoding.as_deref() == Some("identity")));
    assert!(server.requests() <= 3);
}

#[test]
fn sequential_reads_continue_one_stream() {
    let data = bytes(20 << 20, 2);
    let server = serve(&data, Fault::None);
    let src = HttpSource::open(url(&server), opts()).unwrap();
    // 4 MiB pieces from 2 MiB on, with 32-byte gaps (alignment padding): streams of 4, 8
    // and 16 MiB after the open's first block, each read continuing the current one.
    let mut pos = 2u64 << 20;
    while pos + (4 << 20) <= data.len() as u64 {
        let mut buf = vec![0u8; 4 << 20];
        src.read_exact_at(pos, &mut buf).unwrap();
        assert_eq!(&buf[..], &data[pos as usize..pos as usize + buf.len()]);
        pos += (4 << 20) + 32;
    }
    assert_eq!(src.stats().requests, 4, "{:?}", src.stats());
    let ranges: Vec<_> = server.log().into_iter().filter_map(|l| l.range).collect();
    assert_eq!(
        ranges[1..],
        ["bytes=2097152-6291455", "bytes=6291488-14680095", "bytes=14680096-20971519"]
    );
    // An announced range is one request however it is read.
    let before = src.stats().requests;
    src.prefetch(5 << 20, 8 << 20).unwrap();
    for i in 0..8u64 {
        let mut buf = vec![0u8; 1 << 20];
        let at = (5 << 20) + (i << 20);
        src.read_exact_at(at, &mut buf).unwrap();
        assert_eq!(&buf[..], &data[at as usize..at as usize + buf.len()]);
    }
    assert_eq!(src.stats().requests - before, 1);
}

#[test]
fn range_ignored_is_abandoned_unread() {
    // A 4.9 GB object: the server starts sending all of it.
    let server = TestServer::start(
        vec![("/obj".into(), Body::Zeros(4_900_000_000))],
        ServerOptions { fault: Fault::IgnoreRange, ..ServerOptions::default() },
    )
    .unwrap();
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::range_ignored");
    assert_eq!(e.status, Some(200));
    assert_eq!(server.requests(), 1);
    // Nothing of the body was read by the client; the server could push only what the
    // socket buffers took before the connection closed.
    std::thread::sleep(Duration::from_millis(300));
    assert!(server.body_bytes() < 64 << 20, "{} bytes went out", server.body_bytes());
}

#[test]
fn body_cut_short_is_retried_then_typed() {
    let data = bytes(3 << 20, 3);
    let server = serve(&data, Fault::CutShort(1000));
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::short_body", "{e}");
    // The first try and three resumptions.
    assert_eq!(server.requests(), 4);
    // Resumptions ask for what is missing only.
    let log = server.log();
    assert_eq!(log[1].range.as_deref(), Some("bytes=1000-2097151"));
}

#[test]
fn body_cut_short_once_resumes_to_the_right_bytes() {
    let data = bytes(3 << 20, 4);
    let server = serve(&data, Fault::CutShortFirst(1));
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    let mut buf = vec![0u8; 1 << 20];
    src.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf[..], &data[..1 << 20]);
    assert_eq!(src.stats().retries, 1);
    assert_eq!(server.requests(), 2);
}

#[test]
fn wrong_content_range_is_refused() {
    let data = bytes(100_000, 5);
    let server = serve(&data, Fault::WrongContentRange);
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::bad_content_range", "{e}");
    assert_eq!(server.requests(), 1);
}

#[test]
fn unknown_total_is_found_from_a_short_answer_or_a_suffix_range() {
    // Smaller than the first block: the clamped answer gives the size.
    let small = bytes(100_000, 6);
    let server = serve(&small, Fault::UnknownTotal);
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    assert_eq!(src.len(), small.len() as u64);
    assert_eq!(server.requests(), 1);
    // Larger: one suffix request (`bytes=-1`) finds the end.
    let big = bytes(3 << 20, 7);
    let server = serve(&big, Fault::UnknownTotal);
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    assert_eq!(src.len(), big.len() as u64);
    let mut buf = vec![0u8; 4096];
    src.read_exact_at((3 << 20) - 4096, &mut buf).unwrap();
    assert_eq!(&buf[..], &big[(3 << 20) - 4096..]);
    assert!(server.log().iter().any(|l| l.range.as_deref() == Some("bytes=-1")));
}

#[test]
fn no_total_and_no_suffix_range_is_an_unknown_size() {
    // The first block is full and its Content-Range has no total; the suffix request that
    // would find the end is answered as if the object were empty.
    let data = bytes(100_000, 16);
    let server = serve(&data, Fault::NoSuffixRange);
    let o = HttpOptions { first_block: 4096, ..opts() };
    let e = bounded(&server, || HttpSource::open(url(&server), o).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::unknown_size", "{e}");
    assert!(e.to_string().contains("the server gives no object size"), "{e}");
    assert_eq!(e.url.as_deref(), Some(server.url("obj").as_str()));
    let ranges: Vec<_> = server.log().into_iter().filter_map(|l| l.range).collect();
    assert_eq!(ranges, ["bytes=0-4095", "bytes=-1"]);
    // An object shorter than the first block needs no suffix request: its size is known.
    let o = HttpOptions { first_block: 200_000, ..opts() };
    let server = serve(&data, Fault::NoSuffixRange);
    let src = bounded(&server, || HttpSource::open(url(&server), o).unwrap());
    assert_eq!(src.len(), data.len() as u64);
    assert_eq!(server.requests(), 1);
}

#[test]
fn status_416_is_typed_and_an_empty_object_is_empty() {
    let data = bytes(1000, 8);
    let server = serve(&data, Fault::Always416);
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::range_not_satisfiable");
    assert_eq!(e.status, Some(416));
    // A real empty object answers 416 with `bytes */0`.
    let empty: Arc<[u8]> = Arc::from(Vec::new());
    let server = serve(&empty, Fault::None);
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    assert_eq!(src.len(), 0);
}

#[test]
fn slow_drip_hits_the_deadline() {
    let data = bytes(1 << 20, 9);
    let server = serve(&data, Fault::SlowDrip(Duration::from_millis(50)));
    let o = HttpOptions { deadline: Duration::from_secs(2), ..opts() };
    let t = Instant::now();
    let e = bounded(&server, || HttpSource::open(url(&server), o).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::timeout", "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn etag_change_is_an_error_not_spliced_bytes() {
    let data = bytes(6 << 20, 10);
    let server = serve(&data, Fault::EtagChangeAfter(1));
    let src = HttpSource::open(url(&server), opts()).unwrap();
    let e = bounded(&server, || read_err(&src, 4 << 20, 4096));
    assert_eq!(code_of(&e), "remote::http::changed", "{e}");
    assert!(e.to_string().contains("\\\"v1\\\"") || e.to_string().contains("v1"), "{e}");
    assert_eq!(server.requests(), 2);
}

#[test]
fn redirect_to_another_origin_drops_authorization() {
    let data = bytes(3 << 20, 11);
    let target = serve(&data, Fault::None);
    let redirector = serve(&data, Fault::RedirectTo(target.base_url()));
    let o = HttpOptions { bearer_token: Some("hf_secret".into()), ..opts() };
    let src = bounded(&redirector, || HttpSource::open(url(&redirector), o).unwrap());
    let mut buf = vec![0u8; 3 << 20];
    src.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf[..], &data[..]);
    let first = redirector.log();
    assert_eq!(first[0].authorization.as_deref(), Some("Bearer hf_secret"));
    let second = target.log();
    assert!(!second.is_empty());
    assert!(second.iter().all(|l| l.authorization.is_none()), "{second:?}");
    // The redirect target is remembered: the later reads went there directly.
    assert_eq!(first.len(), 1, "{first:?}");
}

#[test]
fn redirect_loops_end() {
    let data = bytes(1000, 12);
    // A server that redirects to itself.
    let server = TestServer::start(
        vec![("/obj".into(), Body::Mem(data))],
        ServerOptions { fault: Fault::RedirectTo(String::new()), ..ServerOptions::default() },
    )
    .unwrap();
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::too_many_redirects", "{e}");
    assert_eq!(e.hop, 5);
    assert_eq!(server.requests(), 6);
}

#[test]
fn a_redirect_to_a_url_not_fetched_is_not_followed() {
    let data = bytes(1000, 17);
    for (target, why) in [
        ("ftp://127.0.0.1", "only http:// and https:// are fetched directly"),
        ("http://user:secret@127.0.0.1", "credentials in the URL are refused"),
    ] {
        let server = serve(&data, Fault::RedirectTo(target.into()));
        let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
        assert_eq!(code_of(&e), "remote::http::bad_redirect", "{e}");
        let shown = e.to_string();
        assert!(shown.contains("redirect not followed") && shown.contains(why), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
        // The redirect's own hop and status; neither retried nor followed.
        assert_eq!((e.status, e.hop), (Some(302), 0));
        assert_eq!(e.url.as_deref(), Some(server.url("obj").as_str()));
        assert_eq!(server.requests(), 1);
    }
}

#[test]
fn gzip_encoded_body_is_refused() {
    let data = bytes(1000, 13);
    let server = serve(&data, Fault::Gzip);
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!(code_of(&e), "remote::http::encoded", "{e}");
}

#[test]
fn overload_is_retried_with_backoff_then_typed() {
    let data = bytes(1000, 14);
    let server = serve(&data, Fault::Status { code: 503, times: 2 });
    let src = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap());
    assert_eq!(src.len(), 1000);
    assert_eq!(server.requests(), 3);
    let server = serve(&data, Fault::Status { code: 429, times: u64::MAX });
    let e = bounded(&server, || HttpSource::open(url(&server), opts()).unwrap_err());
    assert_eq!((code_of(&e), e.status), ("remote::http::status", Some(429)));
    assert_eq!(server.requests(), 4);
    let server = serve(&data, Fault::None);
    let missing = HttpUrl::parse(&server.url("nothing")).unwrap();
    let e = HttpSource::open(missing, opts()).unwrap_err();
    assert_eq!((code_of(&e), e.status), ("remote::http::status", Some(404)));
    assert_eq!(server.requests(), 1);
}

#[test]
fn refused_connection_is_typed() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let u = HttpUrl::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
    let t = Instant::now();
    let e = HttpSource::open(u, opts()).unwrap_err();
    assert_eq!(code_of(&e), "remote::http::connect", "{e}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// A GGUF with a vocabulary large enough to make a header of `bytes`.
fn big_header_gguf(tokens: usize) -> Vec<u8> {
    let vocab: Vec<String> = (0..tokens).map(|i| format!("tok{i:08}")).collect();
    GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .kv("tokenizer.ggml.tokens", Value::strings(vocab.iter().map(String::as_str)))
        .tensor("a", GgmlType::F32, &[256, 16])
        .tensor("b", GgmlType::F32, &[64])
        .build()
}

#[test]
fn a_large_header_costs_few_requests() {
    // ~7.9 MB of header, like Llama-3-8B's.
    let file: Arc<[u8]> = Arc::from(big_header_gguf(420_000));
    let server = serve(&file, Fault::None);
    let u = RemoteUrl::parse(&server.url("obj"), None).unwrap();
    let m = open_model(&u, &opts(), &OpenOptions::default()).unwrap();
    let header = m.model.header_stats().data_offset;
    assert!(header > 7_000_000, "{header}");
    let stats = m.stats();
    assert!(stats.requests <= 4, "{stats:?}");
    assert!(stats.bytes <= 2 * header, "{stats:?} for {header}");
    // The tensor bytes are the file's.
    let t = m.model.find("a").unwrap().clone();
    let mut buf = vec![0u8; t.byte_len().unwrap()];
    m.model.read_raw(&t, &mut buf).unwrap();
    let at = t.abs_offset as usize;
    assert_eq!(&buf[..], &file[at..at + buf.len()]);
}

#[test]
fn hub_urls_resolve_against_the_endpoint() {
    let file: Arc<[u8]> = Arc::from(big_header_gguf(10));
    let server = TestServer::start(
        vec![("/org/repo/resolve/v2/sub/m.gguf".into(), Body::Mem(file))],
        ServerOptions::default(),
    )
    .unwrap();
    let u = RemoteUrl::parse("hf://org/repo/sub/m.gguf@v2", Some(&server.base_url())).unwrap();
    let o = HttpOptions { bearer_token: Some("hf_x".into()), ..opts() };
    let m = open_model(&u, &o, &OpenOptions::default()).unwrap();
    assert_eq!(m.model.tensors().len(), 2);
    assert_eq!(server.log()[0].authorization.as_deref(), Some("Bearer hf_x"));
}

#[test]
fn split_sets_open_from_the_first_shard_url() {
    let dir = std::env::temp_dir().join(format!("sipllm-remote-split-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("m.gguf");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("t0", GgmlType::F32, &[1024])
        .tensor("t1", GgmlType::F32, &[1024])
        .tensor("t2", GgmlType::F32, &[1024])
        .build();
    std::fs::write(&src, &bytes).unwrap();
    let split_opts =
        sipllm_edit::split::SplitOptions::new(sipllm_edit::split::SplitLimit::Tensors(1))
            .with_out_dir(&dir);
    let written = sipllm_edit::split::split_file(&src, &split_opts).unwrap();
    assert_eq!(written.len(), 3);
    let mut files = Vec::new();
    for w in &written {
        let name = w.path.file_name().unwrap().to_str().unwrap().to_owned();
        files.push((format!("/d/{name}"), Body::file(&w.path).unwrap()));
    }
    let first = files[0].0.clone();
    let server = TestServer::start(files, ServerOptions::default()).unwrap();
    let u = RemoteUrl::parse(&server.url(&first), None).unwrap();
    let m = open_model(&u, &opts(), &OpenOptions::default()).unwrap();
    assert!(m.model.split().is_some());
    assert_eq!(m.sources().len(), 3);
    let local = sipllm_streaming::open_model(&written[0].path, &OpenOptions::default()).unwrap();
    for t in local.tensors() {
        let r = m.model.find(&t.name).unwrap();
        let (mut a, mut b) = (vec![0u8; t.byte_len().unwrap()], vec![0u8; r.byte_len().unwrap()]);
        local.read_raw(t, &mut a).unwrap();
        m.model.read_raw(r, &mut b).unwrap();
        assert_eq!(a, b, "{}", t.name);
    }
    // A missing shard is named.
    let partial = TestServer::start(
        vec![(first.clone(), Body::file(&written[0].path).unwrap())],
        ServerOptions::default(),
    )
    .unwrap();
    let u = RemoteUrl::parse(&partial.url(&first), None).unwrap();
    let e = open_model(&u, &opts(), &OpenOptions::default()).unwrap_err();
    assert_eq!(e.code(), "streaming::split::missing_shard", "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn degenerate_options_still_read_the_right_bytes() {
    let data = bytes(100, 15);
    let server = serve(&data, Fault::None);
    let o = HttpOptions { first_block: 0, max_request: 0, retries: 0, ..opts() };
    let src = HttpSource::open(url(&server), o).unwrap();
    let mut buf = vec![0u8; 100];
    src.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf[..], &data[..]);
    // One byte per request: the first block and then 99 more.
    assert_eq!(server.requests(), 100);
}
