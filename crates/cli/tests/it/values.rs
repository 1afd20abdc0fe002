//! `sipllm read --as f32` and `sipllm tensors --stats`.

use sipllm_gguf::GgmlType;
use sipllm_testkit::{GgufBuilder, Tensor};

use crate::files::{self, write};
use crate::support::{golden, sample_path, sipllm, temp_dir};

fn q8_file() -> Vec<u8> {
    // Two Q8_0 rows: scale 0.5 (f16 0x3800), values -16..16 and 0..32.
    let mut data = Vec::new();
    for row in 0..2i32 {
        data.extend_from_slice(&[0x00, 0x38]);
        data.extend((0..32).map(|i| (i - 16 + 16 * row) as i8 as u8));
    }
    GgufBuilder::new()
        .tensor_info(Tensor {
            name: b"w".to_vec(),
            dims: vec![32, 2],
            type_code: GgmlType::Q8_0.code(),
            offset: None,
            n_dims: None,
            data: Some(data),
        })
        .tensor_info(Tensor {
            name: b"ids".to_vec(),
            dims: vec![4],
            type_code: GgmlType::I32.code(),
            offset: None,
            n_dims: None,
            data: Some(vec![1; 16]),
        })
        .build()
}

#[test]
fn read_as_f32_values_ranges_and_refusals() {
    let dir = temp_dir("values-read");
    let file = write(&dir, "q8.gguf", &q8_file());
    let out = dir.join("o.f32");
    let o = out.to_str().unwrap();
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    };
    let run = sipllm(&dir, &["read", &file, "w", "--as", "f32", "-o", o]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let v = floats(&std::fs::read(&out).unwrap());
    let expect: Vec<f32> =
        (0..64).map(|k| if k < 32 { k - 16 } else { k - 32 } as f32 * 0.5).collect();
    assert_eq!(v, expect);

    // --range is in elements with --as, and may cut blocks.
    let run = sipllm(&dir, &["read", &file, "w", "--as", "f32", "--range", "30..35", "-o", o]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(floats(&std::fs::read(&out).unwrap()), &expect[30..35]);
    let run = sipllm(&dir, &["read", &file, "w", "--as", "f32", "--range", "60..65", "-o", o]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("element indices"), "{}", run.stderr);

    // npy of the whole tensor carries the row-major shape.
    let run = sipllm(&dir, &["read", &file, "w", "--as", "f32", "--format", "npy", "-o", o]);
    assert_eq!(run.code, Some(0));
    let npy = std::fs::read(&out).unwrap();
    let header = String::from_utf8_lossy(&npy[10..128]).into_owned();
    assert!(header.contains("'shape': (2, 32), }"), "{header}");
    assert_eq!(floats(&npy[128..]), expect);

    // A type without values: a typed error, nothing written to the output.
    let run = sipllm(&dir, &["read", &file, "ids", "--as", "f32", "-o", o]);
    assert_eq!(run.code, Some(1), "{}", run.transcript());
    assert!(run.stderr.contains("quants::dequant::unsupported_type"), "{}", run.stderr);
    // Nor to standard output: no `.npy` header for values that never come, even for none.
    for range in [None, Some("0..0")] {
        let mut argv = vec!["read", &file, "ids", "--as", "f32", "--format", "npy"];
        argv.extend(range.iter().flat_map(|r| ["--range", r]));
        let run = sipllm(&dir, &argv);
        assert_eq!(run.code, Some(1), "{}", run.transcript());
        assert!(run.stderr.contains("quants::dequant::unsupported_type"), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.transcript());
    }
    // --format needs --as.
    let run = sipllm(&dir, &["read", &file, "w", "--format", "npy", "-o", o]);
    assert_eq!(run.code, Some(2));
}

#[test]
fn tensors_stats() {
    let dir = temp_dir("values-stats");
    let file = write(&dir, "q8.gguf", &q8_file());
    let run = sipllm(&dir, &["tensors", "--stats", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    golden("tensors/stats-q8.txt", &run.transcript());

    let file = write(&dir, "valid.gguf", &files::valid());
    let run = sipllm(&dir, &["tensors", "--stats", "--filter", "*.weight", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    golden("tensors/stats-valid.txt", &run.transcript());

    let sample = sample_path();
    let run = sipllm(&dir, &["tensors", "--stats", sample.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    golden("tensors/stats-sample.txt", &run.transcript());

    // Plain decimals, never `3.750000e0`.
    let q8 = write(&dir, "q8.gguf", &q8_file());
    let run = sipllm(&dir, &["tensors", "--stats", &q8]);
    assert!(!run.stdout.contains("e0"), "{}", run.stdout);
}

/// `tensors --stats --json` parses: one record per listed tensor, in order, with the values'
/// statistics (equal to those of the values `read --as f32` writes), and a type without
/// values marked `"decoded": false`.
#[test]
fn tensors_stats_json_is_one_record_per_tensor() {
    let dir = temp_dir("values-stats-json");
    let file = write(&dir, "q8.gguf", &q8_file());
    let run = sipllm(&dir, &["tensors", "--stats", "--json", &file]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect(&run.stdout);
    let records = doc.as_array().expect("an array");
    assert_eq!(records.len(), 2);
    let w = &records[0];
    assert_eq!((w["index"].as_u64(), w["name"].as_str()), (Some(0), Some("w")));
    assert_eq!(w["ggml_type"], "Q8_0");
    assert_eq!(w["shape"], serde_json::json!([2, 32]));
    assert_eq!((w["decoded"].as_bool(), w["finite"].as_u64()), (Some(true), Some(64)));
    assert_eq!((w["nan"].as_u64(), w["inf"].as_u64()), (Some(0), Some(0)));
    let out = dir.join("w.f32");
    let run = sipllm(&dir, &["read", &file, "w", "--as", "f32", "-o", out.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let values: Vec<f64> = std::fs::read(&out)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!((w["min"].as_f64(), w["max"].as_f64()), (Some(min), Some(max)));
    assert!((w["mean"].as_f64().unwrap() - mean).abs() < 1e-12, "{w}");
    assert!((w["std"].as_f64().unwrap() - std).abs() < 1e-12, "{w}");
    let ids = &records[1];
    assert_eq!((ids["name"].as_str(), ids["decoded"].as_bool()), (Some("ids"), Some(false)));
    assert!(ids["mean"].is_null() && ids.get("finite").is_none(), "{ids}");
    // --filter applies; no match is an empty array.
    let run = sipllm(&dir, &["tensors", "--stats", "--json", "--filter", "nomatch*", &file]);
    assert_eq!(run.stdout.trim(), "[]", "{}", run.transcript());
}

/// A big-endian GGUF reads to exactly its little-endian twin's values: every tensor through
/// `read --as f32` (raw and npy), and `tensors --stats` prints the same table.
#[test]
fn big_endian_values_equal_the_little_endian_twin() {
    let Some(shared) = crate::support::shared("big_endian_values_equal_the_little_endian_twin")
    else {
        return;
    };
    let dir = temp_dir("values-big-endian");
    let generated = shared.join("corpus/generated");
    let (be, le) = (generated.join("tiny-llama.be.gguf"), generated.join("tiny-llama.le.gguf"));
    let (be, le) = (be.to_str().unwrap(), le.to_str().unwrap());
    use sipllm_streaming::WeightSource as _;
    let opened =
        sipllm_streaming::GgufFile::open(le, &sipllm_streaming::OpenOptions::default()).unwrap();
    let names: Vec<String> = opened.tensors().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names.len(), 8);
    for name in &names {
        for format in ["raw", "npy"] {
            let values = |file: &str, out: &str| {
                let o = dir.join(out);
                let run = sipllm(
                    &dir,
                    &["read", file, name, "--as", "f32", "--format", format, "-o"]
                        .into_iter()
                        .chain([o.to_str().unwrap()])
                        .collect::<Vec<_>>(),
                );
                assert_eq!(run.code, Some(0), "{}", run.transcript());
                std::fs::read(&o).unwrap()
            };
            let (b, l) = (values(be, "be.out"), values(le, "le.out"));
            assert!(!l.is_empty());
            assert!(b == l, "{name} --format {format}: the big-endian file's values differ");
        }
    }
    let stats = |file: &str| {
        let run = sipllm(&dir, &["tensors", "--stats", file]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        run.stdout
    };
    let (b, l) = (stats(be), stats(le));
    assert!(l.contains("token_embd.weight"), "{l}");
    assert_eq!(b, l);
}
