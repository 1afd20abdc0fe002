//! Tensor values over HTTP (`WeightSource::read_f32`, `read_f32_at`, what `sipllm read --as
//! f32` and Python's `Model.values` read through): the server's request log shows exactly
//! the tensor's bytes fetched — no request reaching past the tensor, none for bytes already
//! held.

use std::sync::Arc;

use sipllm_gguf::GgmlType;
use sipllm_remote::test_server::{Body, ServerOptions, TestServer};
use sipllm_remote::{HttpOptions, RemoteModel, RemoteUrl, open_model, open_url};
use sipllm_streaming::{Kind, MemSource, Model, OpenOptions, StreamErrorKind, WeightSource};
use sipllm_testkit::{GgufBuilder, Value};

/// A model whose tensors lie past the 2 MiB first block: a 4 MiB pad, two adjacent 1 MiB
/// F32 tensors (`a`, `b`), a Q8_0 tensor of 4 Mi values (4,456,448 bytes) and a 4 MiB tail
/// that an over-long request would reach into.
fn model_bytes() -> Arc<[u8]> {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", Value::str("llama"))
        .tensor("pad", GgmlType::F32, &[1 << 20])
        .tensor("a", GgmlType::F32, &[1024, 256])
        .tensor("b", GgmlType::F32, &[1024, 256])
        .tensor("q", GgmlType::Q8_0, &[4096, 1024])
        .tensor("tail", GgmlType::F32, &[1 << 20])
        .build();
    Arc::from(bytes)
}

struct Served {
    server: TestServer,
    remote: RemoteModel,
    local: Model,
}

fn serve() -> Served {
    let file = model_bytes();
    let server = TestServer::start(
        vec![("/m.gguf".into(), Body::Mem(file.clone()))],
        ServerOptions::default(),
    )
    .unwrap();
    let url = RemoteUrl::parse(&server.url("m.gguf"), None).unwrap();
    let remote = open_model(&url, &HttpOptions::default(), &OpenOptions::default()).unwrap();
    let local = Model::from_source(MemSource::new(file), &OpenOptions::default()).unwrap();
    Served { server, remote, local }
}

/// Requests and the bytes they asked for, from the log's `Range` headers since `from`.
fn asked(server: &TestServer, from: usize) -> (usize, u64) {
    let log = server.log();
    let ranges: Vec<u64> = log[from..]
        .iter()
        .map(|l| {
            let r = l.range.as_deref().unwrap().strip_prefix("bytes=").unwrap();
            let (a, b) = r.split_once('-').unwrap();
            b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1
        })
        .collect();
    (ranges.len(), ranges.iter().sum())
}

/// The values of `name` read as `sipllm read --as f32` reads them, 1 Mi values a call, as
/// bits (the pattern data has NaNs).
fn read_like_the_cli(m: &dyn WeightSource, name: &str) -> Vec<u32> {
    let t = m.find(name).unwrap();
    let count = t.element_count().unwrap();
    let mut out = vec![0f32; count as usize];
    let mut at = 0u64;
    while at < count {
        let end = (at + (1 << 20)).min(count);
        m.read_f32_at(t, at..end, &mut out[at as usize..end as usize]).unwrap();
        at = end;
    }
    out.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn read_f32_fetches_exactly_the_tensors_bytes() {
    let s = serve();
    let m = &s.remote.model;
    for name in ["a", "b", "q"] {
        let t = m.find(name).unwrap().clone();
        let (log, sent) = (s.server.log().len(), s.server.body_bytes());
        let values = m.read_f32(&t).unwrap();
        let want = s.local.read_f32(s.local.find(name).unwrap()).unwrap();
        assert_eq!(
            values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{name}"
        );
        // `b` follows `a` on: before, that read was a doubled guess (4 MiB) past its end.
        assert_eq!(asked(&s.server, log), (1, t.nbytes.unwrap()), "{name}");
        assert_eq!(s.server.body_bytes() - sent, t.nbytes.unwrap(), "{name}");
    }
}

#[test]
fn chunked_values_reads_fetch_exactly_the_tensors_bytes() {
    let s = serve();
    let m = &s.remote.model;
    let t = m.find("q").unwrap().clone();
    let nbytes = t.nbytes.unwrap();
    // One call per 1 Mi values, as the CLI reads: a request per call for exactly its blocks.
    let (log, sent) = (s.server.log().len(), s.server.body_bytes());
    let values = read_like_the_cli(m, "q");
    assert_eq!(values, read_like_the_cli(&s.local, "q"));
    assert_eq!(asked(&s.server, log), (4, nbytes));
    assert_eq!(s.server.body_bytes() - sent, nbytes);
    // The tensor announced first (the caller knows it reads all of it): one request, the
    // calls' own narrower announcements inside it keeping it.
    let (log, sent) = (s.server.log().len(), s.server.body_bytes());
    m.prefetch(&t).unwrap();
    assert_eq!(read_like_the_cli(m, "q"), values);
    assert_eq!(asked(&s.server, log), (1, nbytes));
    assert_eq!(s.server.body_bytes() - sent, nbytes);
    // The values announced first (what `sipllm read --as f32` and `Model.values` do): the
    // same one request.
    let (log, sent) = (s.server.log().len(), s.server.body_bytes());
    m.prefetch_values(&t, 0..t.element_count().unwrap());
    assert_eq!(read_like_the_cli(m, "q"), values);
    assert_eq!(asked(&s.server, log), (1, nbytes));
    assert_eq!(s.server.body_bytes() - sent, nbytes);
    // A part announced: its blocks only (elements 40..70 of Q8_0: blocks 1, 2).
    let (log, sent) = (s.server.log().len(), s.server.body_bytes());
    let mut part = [0f32; 30];
    m.prefetch_values(&t, 40..70);
    m.read_f32_at(&t, 40..70, &mut part).unwrap();
    assert_eq!(asked(&s.server, log), (1, 2 * 34));
    assert_eq!(s.server.body_bytes() - sent, 2 * 34);
    // A part of a tensor: only the blocks it touches (elements 40..70 of Q8_0: blocks 1, 2).
    let (log, sent) = (s.server.log().len(), s.server.body_bytes());
    let mut part = [0f32; 30];
    m.read_f32_at(&t, 40..70, &mut part).unwrap();
    assert_eq!(part.map(f32::to_bits)[..], values[40..70]);
    assert_eq!(asked(&s.server, log), (1, 2 * 34));
    assert_eq!(s.server.body_bytes() - sent, 2 * 34);
}

#[test]
fn open_url_opens_what_open_model_opens_and_names_a_bad_url() {
    let file = model_bytes();
    let server =
        TestServer::start(vec![("/m.gguf".into(), Body::Mem(file))], ServerOptions::default())
            .unwrap();
    let m =
        open_url(&server.url("m.gguf"), &HttpOptions::default(), &OpenOptions::default()).unwrap();
    assert_eq!(m.model.tensors().len(), 5);
    let e =
        open_url("hf://owner-only?token=secret", &HttpOptions::default(), &OpenOptions::default())
            .unwrap_err();
    assert!(matches!(e.kind(), StreamErrorKind::Open { .. }), "{e:?}");
    let r = sipllm_remote::RemoteError::find_in(&e).unwrap();
    assert_eq!(r.code(), "remote::url::bad_url");
    assert!(!format!("{e} {r}").contains("secret"), "{e} {r}");
}

/// A split set announces each shard's part of a range in that shard's offsets.
#[test]
fn values_of_a_split_set_fetch_no_more_than_the_tensors_bytes() {
    let dir = std::env::temp_dir().join(format!("sipllm-remote-values-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("m.gguf");
    std::fs::write(&src, &*model_bytes()).unwrap();
    let opts = sipllm_edit::split::SplitOptions::new(sipllm_edit::split::SplitLimit::Tensors(2))
        .with_out_dir(&dir);
    let written = sipllm_edit::split::split_file(&src, &opts).unwrap();
    let files = written
        .iter()
        .map(|w| {
            let name = w.path.file_name().unwrap().to_str().unwrap().to_owned();
            (format!("/{name}"), Body::file(&w.path).unwrap())
        })
        .collect();
    let first = format!("/{}", written[0].path.file_name().unwrap().to_str().unwrap());
    let server = TestServer::start(files, ServerOptions::default()).unwrap();
    let url = RemoteUrl::parse(&server.url(&first), None).unwrap();
    let remote = open_model(&url, &HttpOptions::default(), &OpenOptions::default()).unwrap();
    let m = &remote.model;
    assert!(m.split().is_some());
    let local = Model::from_source(MemSource::new(model_bytes()), &OpenOptions::default()).unwrap();
    for name in ["b", "q"] {
        let t = m.find(name).unwrap().clone();
        let (log, sent) = (server.log().len(), server.body_bytes());
        assert_eq!(read_like_the_cli(m, name), read_like_the_cli(&local, name), "{name}");
        // A shard's first 2 MiB came with its open: at most the rest of the tensor is asked.
        let (requests, bytes) = asked(&server, log);
        assert!(bytes <= t.nbytes.unwrap(), "{name}: {bytes}");
        assert_eq!(server.body_bytes() - sent, bytes, "{name}");
        assert!(requests <= 4, "{name}: {requests}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
