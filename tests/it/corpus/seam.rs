//! The seam (`sipllm-streaming`) against the corpus: tensor bytes of the tiny Llama files (both
//! byte orders, both backends, with and without readahead, from 8 threads at once) match the
//! reference hashes, and the seam's metadata and tensor views match the reference reader's.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;
use sipllm_streaming::{Backend, GgufFile, Meta, OpenOptions, WeightSource};
use sipllm_tests::{TensorHash, sha256_hex, tensor_hashes};

fn all_options() -> Vec<OpenOptions> {
    let mut v = Vec::new();
    for backend in [Backend::Pread, Backend::Mmap] {
        for readahead in [0, 1, 3] {
            v.push(OpenOptions::default().with_backend(backend).with_readahead(readahead));
        }
    }
    v
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn tiny_llama_tensors_match_their_hashes() {
    let corpus = sipllm_tests::dir();
    for endian in ["le", "be"] {
        let dir = corpus.join("generated");
        let gguf = dir.join(format!("tiny-llama.{endian}.gguf"));
        let expected = tensor_hashes(&dir.join(format!("tiny-llama.{endian}.tensors.sha256")));
        assert_eq!(expected.len(), 8);
        for opts in all_options() {
            let file = GgufFile::open(&gguf, &opts).unwrap();
            assert_eq!(file.tensors().len(), expected.len());
            for TensorHash { sha256: hash, size, name } in &expected {
                let t = file.find(name).unwrap();
                assert_eq!(t.nbytes, Some(*size), "{name}");
                let mut buf = vec![0u8; t.byte_len().unwrap()];
                file.read_raw(t, &mut buf).unwrap();
                assert_eq!(&sha256_hex(&buf), hash, "{endian} {opts:?} {name}");
            }
        }
    }
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn read_raw_at_sub_ranges_match_the_file_bytes() {
    let corpus = sipllm_tests::dir();
    let path = corpus.join("generated/tiny-llama.le.gguf");
    let bytes = std::fs::read(&path).unwrap();
    for opts in all_options() {
        let file = GgufFile::open(&path, &opts).unwrap();
        for t in file.tensors() {
            // The second row of each tensor (the whole tensor if it has one row), and its
            // last 3 bytes.
            let nbytes = t.nbytes.unwrap();
            let rows = t.shape.first().copied().filter(|_| t.shape.len() > 1).unwrap_or(1);
            let row = nbytes / rows;
            let start = t.abs_offset + if rows > 1 { row } else { 0 };
            for (at, len) in [(start, row), (t.abs_offset + nbytes - 3, 3)] {
                let mut buf = vec![0u8; len as usize];
                file.read_raw_at(at, &mut buf).unwrap();
                assert_eq!(&buf[..], &bytes[at as usize..(at + len) as usize], "{}", t.name);
            }
        }
        // A range spanning two tensors and the padding between them is fine too.
        let mut buf = vec![0u8; 100];
        file.read_raw_at(1900, &mut buf).unwrap();
        assert_eq!(&buf[..], &bytes[1900..2000]);
    }
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn eight_threads_read_the_right_bytes() {
    let corpus = sipllm_tests::dir();
    let dir = corpus.join("generated");
    let expected = Arc::new(tensor_hashes(&dir.join("tiny-llama.le.tensors.sha256")));
    for backend in [Backend::Pread, Backend::Mmap] {
        let opts = OpenOptions::default().with_backend(backend).with_readahead(2);
        let file = Arc::new(GgufFile::open(dir.join("tiny-llama.le.gguf"), &opts).unwrap());
        let handles: Vec<_> = (0..8)
            .map(|thread| {
                let (file, expected) = (file.clone(), expected.clone());
                std::thread::spawn(move || {
                    let mut checked = 0;
                    for round in 0..50 {
                        // Each thread walks the tensors in its own rotating order.
                        for k in 0..expected.len() {
                            let TensorHash { sha256: hash, name, .. } =
                                &expected[(k + thread + round) % expected.len()];
                            let t = file.find(name).unwrap();
                            let mut buf = vec![0u8; t.byte_len().unwrap()];
                            file.read_raw(t, &mut buf).unwrap();
                            assert_eq!(&sha256_hex(&buf), hash, "thread {thread} {name}");
                            checked += 1;
                        }
                    }
                    checked
                })
            })
            .collect();
        let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, 8 * 50 * 8);
    }
}

/// Compares one collapsed value with the reference reader's JSON.
fn check_value(key: &str, ty: &str, meta: &Meta<'_>, want: &Json) {
    match ty {
        "STRING" => assert_eq!(meta.as_str(), want.as_str(), "{key}"),
        "BOOL" => assert_eq!(meta.as_bool(), want.as_bool(), "{key}"),
        "FLOAT32" | "FLOAT64" => assert_eq!(meta.as_float(), want.as_f64(), "{key}"),
        _ => {
            let want = want.as_i64().map(i128::from).or(want.as_u64().map(i128::from));
            assert_eq!(meta.as_int(), want, "{key}");
        }
    }
}

/// Compares element `i` of a collapsed list with the JSON element.
fn check_element(key: &str, elem_type: &str, meta: &Meta<'_>, i: usize, want: &Json) {
    let got = match meta {
        Meta::Ints(l) => Meta::Int(l.get(i).unwrap()),
        Meta::Floats(l) => Meta::Float(l.get(i).unwrap()),
        Meta::Strs(l) => Meta::Str(l.get(i).unwrap()),
        other => panic!("{key}: {other:?} is not a list"),
    };
    check_value(&format!("{key}[{i}]"), elem_type, &got, want);
}

fn check_against_expectation(gguf: &Path, expect: &Json) {
    let file = GgufFile::open(gguf, &OpenOptions::default()).unwrap();
    let name = gguf.display();

    let keys: Vec<String> = file.meta_keys().map(|k| k.to_string()).collect();
    let metadata = expect["metadata"].as_array().unwrap();
    let want_keys: Vec<&str> = metadata.iter().map(|m| m["key"].as_str().unwrap()).collect();
    assert_eq!(keys, want_keys, "{name}: keys in file order");

    for m in metadata {
        let key = m["key"].as_str().unwrap();
        let ty = m["type"].as_str().unwrap();
        let meta = file.meta(key).unwrap();
        if ty != "ARRAY" {
            check_value(key, ty, &meta, &m["value"]);
            continue;
        }
        let elem_type = m["array_type"].as_str().unwrap();
        let len = m["len"].as_u64().unwrap() as usize;
        let (len_got, payload) = match meta {
            Meta::Ints(l) => (l.len(), l.as_gguf().unwrap().payload()),
            Meta::Floats(l) => (l.len(), l.as_gguf().unwrap().payload()),
            Meta::Strs(l) => (l.len(), l.as_gguf().unwrap().payload()),
            Meta::Array(a) => (a.len() as usize, a.payload()),
            other => panic!("{name} {key}: {other:?}"),
        };
        assert_eq!(len_got, len, "{name} {key}");
        assert_eq!(sha256_hex(payload), m["payload_sha256"].as_str().unwrap(), "{name} {key}");
        // The list is a view into the header buffer: no copy was made.
        let header = file.gguf().bytes().as_ptr_range();
        assert!(header.contains(&payload.as_ptr()) || payload.is_empty(), "{name} {key}");
        if matches!(meta, Meta::Array(_)) {
            continue;
        }
        if let Some(values) = m["value"].as_array() {
            for (i, v) in values.iter().enumerate() {
                check_element(key, elem_type, &meta, i, v);
            }
        } else {
            for (i, v) in m["head"].as_array().unwrap().iter().enumerate() {
                check_element(key, elem_type, &meta, i, v);
            }
            let tail = m["tail"].as_array().unwrap();
            for (j, v) in tail.iter().enumerate() {
                check_element(key, elem_type, &meta, len - tail.len() + j, v);
            }
        }
        // Iteration and `to_vec` agree with `len` and with each other.
        match meta {
            Meta::Ints(l) => assert_eq!(l.to_vec::<i64>().unwrap().len(), len),
            Meta::Floats(l) => assert_eq!(l.iter().count(), len),
            Meta::Strs(l) => assert_eq!(l.to_vec().unwrap().len(), len),
            _ => {}
        }
    }

    let data_offset = expect["data_offset"].as_u64().unwrap();
    let tensors = expect["tensors"].as_array().unwrap();
    assert_eq!(file.tensors().len(), tensors.len(), "{name}");
    for (t, want) in file.tensors().iter().zip(tensors) {
        assert_eq!(t.name, want["name"].as_str().unwrap());
        assert_eq!(t.ggml_type.name(), want["ggml_type"].as_str().unwrap());
        // The reference lists GGUF ne order; the seam is row-major (reversed).
        let mut ne: Vec<u64> =
            want["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        ne.reverse();
        assert_eq!(t.shape.as_slice(), &ne[..], "{}", t.name);
        assert_eq!(t.abs_offset, data_offset + want["offset"].as_u64().unwrap());
        assert_eq!(t.nbytes, want["nbytes"].as_u64());
    }
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn metadata_and_tensors_match_the_reference_reader() {
    let mut checked = 0;
    for file in sipllm_tests::files_in(&["generated", "real"]) {
        check_against_expectation(&file.path, file.expect().expect("an .expect.json"));
        checked += 1;
    }
    assert_eq!(checked, 3 + 12, "every generated and real corpus file");
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn tensorless_file_with_padded_data_offset_past_eof_opens() {
    let corpus = sipllm_tests::dir();
    let path = corpus.join("real/ggml-vocab-llama-spm.gguf");
    for backend in [Backend::Pread, Backend::Mmap] {
        let file = GgufFile::open(&path, &OpenOptions::default().with_backend(backend)).unwrap();
        assert_eq!(file.file_size(), 723_869);
        assert_eq!(file.gguf().data_offset(), 723_872, "padded past the end of the file");
        assert!(file.tensors().is_empty());
        assert_eq!(file.header_stats().bytes_read, 723_869, "read to EOF, never past it");
        assert_eq!(file.meta_strs("tokenizer.ggml.tokens").unwrap().len(), 32_000);
        assert_eq!(
            file.meta_floats("tokenizer.ggml.scores").unwrap().to_vec_f32()[31_999],
            -31740.0
        );
    }
}
