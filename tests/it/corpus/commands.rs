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

/// The corpus file's tensor data concatenated in directory order, located from the reference
/// reader's view (`.expect.json`), not by this project's parser.
fn reference_tensor_data(file: &std::path::Path) -> Vec<u8> {
    let expect: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file.with_extension("expect.json")).unwrap())
            .unwrap();
    let bytes = std::fs::read(file).unwrap();
    let base = expect["data_offset"].as_u64().unwrap() as usize;
    let mut data = Vec::new();
    for t in expect["tensors"].as_array().unwrap() {
        let start = base + t["offset"].as_u64().unwrap() as usize;
        data.extend_from_slice(&bytes[start..start + t["nbytes"].as_u64().unwrap() as usize]);
    }
    data
}

/// The whole-model hashes as llama-gguf-hash prints them (`%-8s  %s  %s`): of all tensor data
/// in directory order, checked against hashes of the reference reader's bytes; the uuid as
/// Python's `uuid` module makes a UUIDv5 in llama.cpp's namespace.
#[test]
#[cfg_attr(not(has_corpus), ignore = "../shared/corpus not found beside the checkout")]
fn verify_prints_whole_model_hashes_as_llama_gguf_hash() {
    use sha1::Sha1;
    use sha2::{Digest, Sha256};
    use sipllm_cli::render::json::hex;
    let dir = temp_dir("verify-model-hash");
    for endian in ["le", "be"] {
        let file = sipllm_tests::path(&format!("generated/tiny-llama.{endian}.gguf"));
        let f = file.to_str().unwrap();
        let data = reference_tensor_data(&file);
        let run = sipllm(&dir, &["verify", "--hash", "sha256,sha1,uuid", f]);
        assert_eq!(run.code, Some(0), "{}", run.transcript());
        let mut uuid_input = sipllm_cli::commands::verify::UUID_NAMESPACE.to_vec();
        uuid_input.extend_from_slice(&data);
        let mut u = Sha1::digest(&uuid_input)[..16].to_vec();
        u[6] = (u[6] & 0x0f) | 0x50;
        u[8] = (u[8] & 0x3f) | 0x80;
        let u = hex(&u);
        let want = format!(
            "sha1      {}  {f}\nsha256    {}  {f}\nuuid      {}-{}-{}-{}-{}  {f}\n",
            hex(&Sha1::digest(&data)),
            hex(&Sha256::digest(&data)),
            &u[0..8],
            &u[8..12],
            &u[12..16],
            &u[16..20],
            &u[20..32],
        );
        assert!(run.stdout.starts_with(&want), "{endian}:\n{}\nwanted:\n{want}", run.stdout);
        assert!(run.stdout.contains("verified 8 tensors"));
    }
}
