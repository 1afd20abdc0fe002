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
    assert!(run.stderr.contains("quants::unsupported_type"), "{}", run.stderr);
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

    let run = sipllm(&dir, &["tensors", "--stats", "--json", &file]);
    assert_eq!(run.code, Some(2), "--stats and --json conflict");
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
