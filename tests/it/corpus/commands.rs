//! The commands that read tensor bytes, against the corpus's reference hashes: `sipllm verify`
//! against `.tensors.sha256`, `sipllm read --as f32` against gguf-py's dequantized values.

use crate::support::{sipllm, temp_dir};

/// gguf-py's value hashes (`scripts/quants_expect.py`).
const EXPECT: &str = include_str!("../../../crates/quants/tests/expect.tsv");

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn verify_manifest_equals_the_corpus_tensor_hashes() {
    let dir = temp_dir("verify-corpus");
    for endian in ["le", "be"] {
        let file = sipllm_tests::path(&format!("generated/tiny-llama.{endian}.gguf"));
        let expected_path =
            sipllm_tests::path(&format!("generated/tiny-llama.{endian}.tensors.sha256"));
        let out = dir.join(format!("{endian}.sha256"));
        let run = sipllm(
            &dir,
            &[
                "verify",
                "--hash",
                "sha256",
                "--manifest",
                out.to_str().unwrap(),
                file.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        assert!(run.stdout.contains("verified 8 tensors"), "{}", run.stdout);
        assert!(run.stdout.contains("/s"), "the throughput is printed: {}", run.stdout);
        let got = std::fs::read_to_string(&out).unwrap();
        let want = std::fs::read_to_string(&expected_path).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), want.lines().collect::<Vec<_>>(), "{endian}");

        // --check against the reference manifest: every tensor matches.
        let run = sipllm(
            &dir,
            &["verify", "--check", expected_path.to_str().unwrap(), file.to_str().unwrap()],
        );
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        assert!(run.stdout.contains("check: all 8 tensors match"));
    }
}

#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn read_as_f32_equals_gguf_py_on_every_corpus_tensor() {
    let dir = temp_dir("values-corpus");
    let mut checked = 0;
    for row in EXPECT.lines().filter(|l| l.starts_with("tensor\t")) {
        let f: Vec<&str> = row.split('\t').collect();
        let file = sipllm_tests::path(&format!("generated/{}", f[1]));
        let file = file.to_str().unwrap();
        let out = dir.join("values.f32");
        let run = sipllm(&dir, &["read", file, f[2], "--as", "f32", "-o", out.to_str().unwrap()]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        let raw = std::fs::read(&out).unwrap();
        assert_eq!(sipllm_tests::sha256_hex(&raw), f[4], "{} {}", f[1], f[2]);

        // The same values after an npy header that numpy can parse.
        let npy = dir.join("values.npy");
        let run = sipllm(
            &dir,
            &["read", file, f[2], "--as", "f32", "--format", "npy", "-o", npy.to_str().unwrap()],
        );
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        let npy = std::fs::read(&npy).unwrap();
        let header = usize::from(u16::from_le_bytes([npy[8], npy[9]])) + 10;
        assert_eq!(header % 64, 0);
        assert_eq!(&npy[header..], &raw[..]);
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
}
