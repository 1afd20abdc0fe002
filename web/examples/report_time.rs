//! Times `report` natively (what the wasm computes, without the browser) on a file read by
//! `pread` through the same read-ahead.
use std::sync::Arc;
use std::time::Instant;

use sipllm_streaming::{Backend, FileBacking, ReadAt};

fn main() {
    let path = std::env::args().nth(1).expect("usage: report_time FILE");
    for _ in 0..5 {
        let src: Arc<dyn ReadAt> = Arc::new(FileBacking::open(&path, Backend::Pread).unwrap());
        let t = Instant::now();
        let r = sipllm_web::report(src, &path, 8);
        println!("report: {:?} ({} bytes of JSON)", t.elapsed(), r.len());
    }
}
