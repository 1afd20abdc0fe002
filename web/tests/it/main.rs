//! The wasm's logic, natively: the read-ahead's cost and the report's contents (the browser
//! tests, web/tests/test_browser.py, check the same through Chromium).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sipllm_streaming::{ReadAt, ShortRead};
use sipllm_testkit::llama3;
use sipllm_web::{FIRST_BLOCK, Readahead, report};

/// A file of `len` bytes whose first bytes are `header` and the rest a hole of zeros (what
/// a sparse file reads as), counting the reads and bytes asked of it.
struct Sparse {
    header: Vec<u8>,
    len: u64,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl Sparse {
    fn new(header: Vec<u8>, len: u64) -> Arc<Sparse> {
        Arc::new(Sparse { header, len, reads: AtomicU64::new(0), bytes: AtomicU64::new(0) })
    }
}

impl ReadAt for Sparse {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        ShortRead::check(offset, dst.len() as u64, self.len).map_err(ShortRead::into_io)?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(dst.len() as u64, Ordering::Relaxed);
        for (i, b) in dst.iter_mut().enumerate() {
            let at = usize::try_from(offset).unwrap() + i;
            *b = self.header.get(at).copied().unwrap_or(0);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

fn json(report: &str) -> serde_json::Value {
    serde_json::from_str(report).expect("the report is JSON")
}

#[test]
fn a_multi_gb_model_is_read_header_only_in_few_reads() {
    let header = llama3::builder(8).build_header();
    let header_len = header.len() as u64;
    let source = Sparse::new(header, 5 << 30);
    let r = json(&report(source.clone(), "llama3-small.gguf", 8));
    let inspect = &r["inspect"];
    assert_eq!(inspect["tensor_count"], 291);
    assert_eq!(inspect["summary"]["architecture"], "llama");
    let data_offset = inspect["data_offset"].as_u64().unwrap();
    assert!(data_offset >= header_len - 32, "{data_offset} {header_len}");
    let (reads, bytes) =
        (source.reads.load(Ordering::Relaxed), source.bytes.load(Ordering::Relaxed));
    assert!(bytes >= data_offset && bytes <= 2 * data_offset, "{bytes} bytes for {data_offset}");
    // The bytes read double from 64 KiB: log2(header / 64 KiB) + 2 reads.
    let doublings = u64::from((data_offset / FIRST_BLOCK + 1).ilog2()) + 2;
    assert!(reads <= doublings, "{reads} reads, expected at most {doublings}");
    assert_eq!(r["header"]["data_offset"], data_offset);
    assert_eq!(r["validate"]["valid"], true);
    // Arrays are cut to the limit, with their length.
    let tokens = inspect["metadata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "tokenizer.ggml.tokens")
        .unwrap();
    assert_eq!(tokens["value"].as_array().unwrap().len(), 8);
    assert_eq!(tokens["truncated"], true);
}

#[test]
fn reads_outside_the_block_start_a_new_run() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
    let source = Sparse::new(bytes.clone(), 1 << 20);
    let r = Readahead::new(source.clone());
    let mut buf = [0u8; 10];
    r.read_exact_at(500_000, &mut buf).unwrap();
    assert_eq!(buf[..], bytes[500_000..500_010]);
    r.read_exact_at(500_100, &mut buf).unwrap();
    assert_eq!(source.reads.load(Ordering::Relaxed), 1, "served from the block");
    r.read_exact_at(3, &mut buf).unwrap();
    assert_eq!(buf[..], bytes[3..13]);
    assert_eq!(source.reads.load(Ordering::Relaxed), 2);
    // A read running past the block's end takes the rest from the next block of the run.
    let r = Readahead::new(source.clone());
    let mut long = vec![0u8; 100_000];
    r.read_exact_at(10, &mut long[..100]).unwrap();
    let before = source.bytes.load(Ordering::Relaxed);
    r.read_exact_at(60_000, &mut long).unwrap();
    assert_eq!(long[..], bytes[60_000..160_000]);
    let fetched = source.bytes.load(Ordering::Relaxed) - before;
    assert_eq!(fetched, 160_000 - (10 + FIRST_BLOCK), "only the bytes past the block, once");
    // The end of the source clamps the block; past it is a short read.
    let mut tail = [0u8; 4];
    r.read_exact_at((1 << 20) - 4, &mut tail).unwrap();
    let err = r.read_exact_at((1 << 20) - 2, &mut tail).unwrap_err();
    assert!(ShortRead::from_io(&err).is_some(), "{err}");
}

#[test]
fn a_malformed_file_reports_its_finding_over_its_bytes() {
    let mut header = llama3::builder(8).build_header();
    header[4..8].copy_from_slice(&9u32.to_le_bytes());
    let len = header.len() as u64;
    let r = json(&report(Sparse::new(header, len), "bad.gguf", 8));
    assert_eq!(r["inspect"], serde_json::Value::Null);
    assert_eq!(r["validate"]["valid"], false);
    let f = &r["validate"]["findings"][0];
    assert_eq!(f["code"], "gguf::header::unsupported_version");
    assert_eq!((f["offset"].as_u64(), f["length"].as_u64()), (Some(4), Some(4)));
    let rendered = f["rendered"].as_str().unwrap();
    assert!(rendered.contains("0x00000000  47 47 55 46 09 00 00 00"), "{rendered}");
}

#[test]
fn what_is_not_a_model_says_why() {
    let r = json(&report(Sparse::new(b"PK\x03\x04 a zip file".to_vec(), 18), "x.zip", 8));
    assert_eq!(r["validate"]["valid"], false);
    assert_eq!(r["validate"]["findings"][0]["code"], "streaming::open::unknown_magic");
    assert_eq!(r["header"], serde_json::Value::Null);
}

#[test]
fn the_page_files_are_served_by_path() {
    use sipllm_web::assets::asset;
    let root = asset("/?url=http://x/y.gguf").unwrap();
    assert_eq!(root.path, "/index.html");
    assert!(std::str::from_utf8(root.bytes).unwrap().contains("app.js"));
    let wasm = asset("/pkg/sipllm_web_bg.wasm").unwrap();
    assert_eq!(wasm.content_type, "application/wasm");
    assert_eq!(wasm.bytes.get(..4), Some(&b"\0asm"[..]));
    assert!(asset("/../Cargo.toml").is_none());
}
