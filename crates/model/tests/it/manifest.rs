//! Hash manifests: parsing both formats (typed errors by line), hashing a model, writing and
//! checking (moved with the code from the CLI's `verify`).

use sha2::Digest as _;
use sipllm_format::Kind as _;
use sipllm_gguf::GgmlType;
use sipllm_model::manifest::{
    Difference, HashKind, HashLine, Manifest, ManifestErrorKind, ManifestLine, ModelHashes,
    TensorHashes, check, check_gguf_hash, choose_kinds, compare, hash_model, parse_gguf_hash,
    parse_sipllm,
};
use sipllm_streaming::{MemSource, Model, OpenOptions};
use sipllm_testkit::{GgufBuilder, Tensor, pattern};

fn line(hash: &str, size: u64, name: &str) -> ManifestLine {
    ManifestLine { hash: hash.into(), size: Some(size), name: name.into() }
}

fn model() -> Model {
    let bytes = GgufBuilder::new()
        .tensor("a", GgmlType::F32, &[4])
        .tensor("b:c", GgmlType::F32, &[8])
        .build();
    Model::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap()
}

#[test]
fn manifests_parse() {
    let m = parse_sipllm("ab01  64  blk.0.w\n\nCD  0  a name  with spaces\n").unwrap();
    assert_eq!(m, vec![line("ab01", 64, "blk.0.w"), line("cd", 0, "a name  with spaces")]);
    for bad in ["zz  1  x", "ab 1 x", "ab  -1  x"] {
        let e = parse_sipllm(&format!("ab  1  ok\n{bad}\n")).unwrap_err();
        assert_eq!((e.line(), e.code()), (Some(2), "model::manifest::sipllm_line"), "{bad}");
        assert!(matches!(e.kind(), ManifestErrorKind::SipllmLine { found } if found == bad));
    }
    let e = parse_sipllm("ab 1 x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1: expected `<hex hash>  <byte size>  <tensor name>`, found \"ab 1 x\""
    );
}

/// The manifest of llama.cpp's README (`llama-gguf-hash --all test.gguf`), and its
/// `--check` output, read as manifests; malformed lines are typed errors at their line.
#[test]
fn llama_gguf_hash_manifests_parse() {
    let text = "xxh64     f66e9cd66a4396a0  test.gguf:tensor_0\n\
        sha1      59f79ecefd8125a996fdf419239051a7e99e5f20  test.gguf:tensor_0\n\
        sha256    c0510d38fa060c46265e0160a85c7243096b01dd31c2f355bdbb5516b20de1bd  test.gguf:tensor_0\n\
        xxh64     5a54d3aad816f302  test.gguf\n";
    let m = Manifest::parse(text).unwrap();
    let Manifest::GgufHash(lines) = &m else { panic!("{m:?}") };
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[1].kind, HashKind::Sha1);
    assert_eq!(lines[1].name, "test.gguf:tensor_0");
    assert_eq!(
        lines[3],
        HashLine {
            kind: HashKind::Xxh64,
            hash: "5a54d3aad816f302".into(),
            name: "test.gguf".into()
        }
    );
    // The strongest hash it holds is the one checked.
    assert_eq!(m.default_kind(), HashKind::Sha256);
    assert_eq!(choose_kinds(&[], Some(&m)), [HashKind::Sha256]);
    let check_output = "manifest  test.gguf.manifest  sha256  sha1  xxh64\n\
        sha256    c0510d38fa060c46265e0160a85c7243096b01dd31c2f355bdbb5516b20de1bd  test.gguf:tensor_0  -  Ok\n\
        \n\
        Verification results for test.gguf.manifest - Success\n";
    let Manifest::GgufHash(lines) = Manifest::parse(check_output).unwrap() else { panic!() };
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].name, "test.gguf:tensor_0");
    let e = parse_gguf_hash("xxh64  00  f\nsha256  zz  x").unwrap_err();
    assert_eq!((e.line(), e.code()), (Some(2), "model::manifest::not_hex"));
    assert_eq!(e.to_string(), "line 2: \"zz\" is not a hex hash");
    let e = parse_gguf_hash("sha256  ab").unwrap_err();
    assert_eq!((e.line(), e.code()), (Some(1), "model::manifest::gguf_hash_line"));
    let e = parse_gguf_hash("nothing here\n").unwrap_err();
    assert_eq!((e.line(), e.code()), (None, "model::manifest::no_hash_lines"));
    assert!(!e.help().is_empty());
    // A sipllm manifest starts with hex digits; its hash length picks the hash.
    let m = Manifest::parse("ab01  64  w\n").unwrap();
    assert!(matches!(m, Manifest::Sipllm(_)));
    assert_eq!(m.default_kind(), HashKind::Sha256);
    assert_eq!(Manifest::parse("0123456789abcdef  1  w").unwrap().default_kind(), HashKind::Xxh3);
    // Asked kinds: each once, in llama-gguf-hash's order.
    assert_eq!(
        choose_kinds(&[HashKind::Uuid, HashKind::Sha256, HashKind::Xxh64, HashKind::Sha256], None),
        [HashKind::Xxh64, HashKind::Sha256, HashKind::Uuid]
    );
}

#[test]
fn every_difference_is_listed() {
    let expected = [line("aa", 1, "a"), line("bb", 2, "b"), line("cc", 3, "c"), line("aa", 1, "a")];
    let actual = [line("aa", 1, "a"), line("bx", 2, "b"), line("cc", 4, "c"), line("dd", 1, "d")];
    let shown: Vec<String> = compare(&expected, &actual).iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "a: listed more than once in the manifest",
            "b: hash bx in the file, bb in the manifest",
            "c: size 4 in the file, 3 in the manifest",
            "d: in the file, not in the manifest",
        ]
    );
    assert_eq!(compare(&actual[..1], &[]), [Difference::Missing { name: "a".into() }]);
    assert!(compare(&expected[..3], &expected[..3]).is_empty());
}

fn hashes(a: &str, bc: &str, model: &str) -> ModelHashes {
    let t =
        |name: &str, h: &str| TensorHashes { name: name.into(), size: 1, hashes: vec![h.into()] };
    ModelHashes {
        kinds: vec![HashKind::Sha1],
        tensors: vec![t("a", a), t("b:c", bc)],
        model: vec![(HashKind::Sha1, model.into())],
        bytes_read: 2,
    }
}

/// Tensor lines are matched by tensor name whatever path the manifest was made with; a
/// model-only manifest (`--no-layer`) checks the model hash alone.
#[test]
fn gguf_hash_checks_match_by_tensor_name() {
    let hl = |kind, hash: &str, name: &str| HashLine { kind, hash: hash.into(), name: name.into() };
    let manifest = [
        hl(HashKind::Sha1, "11", "/elsewhere/m:x.gguf:a"),
        hl(HashKind::Sha1, "22", "/elsewhere/m:x.gguf:b:c"),
        hl(HashKind::Sha1, "ff", "/elsewhere/m:x.gguf"),
        hl(HashKind::Xxh64, "99", "/elsewhere/m:x.gguf:a"),
    ];
    let c = check_gguf_hash(&manifest, HashKind::Sha1, &hashes("11", "22", "ff"));
    assert_eq!((c.differences.len(), c.tensors_match, c.model_match), (0, Some(2), Some(true)));
    assert_eq!(c.verdict(), "all 2 tensors match; the model matches");
    let c = check_gguf_hash(&manifest, HashKind::Sha1, &hashes("11", "22", "fe"));
    assert_eq!(
        c.differences,
        [Difference::Model { kind: HashKind::Sha1, file: "fe".into(), manifest: "ff".into() }]
    );
    assert_eq!(c.differences[0].to_string(), "model: sha1 fe in the file, ff in the manifest");
    assert_eq!(c.verdict(), "1 difference(s)");
    let c = check_gguf_hash(&manifest, HashKind::Sha1, &hashes("11", "23", "ff"));
    assert_eq!(c.differences[0].to_string(), "b:c: hash 23 in the file, 22 in the manifest");
    // Only an xxh64 line for `a`: `b:c` is missing from the manifest (the model has no xxh64).
    let mut xxh = hashes("99", "98", "00");
    xxh.kinds = vec![HashKind::Xxh64];
    xxh.model = vec![(HashKind::Xxh64, "00".into())];
    let c = check_gguf_hash(&manifest, HashKind::Xxh64, &xxh);
    assert_eq!(c.differences, [Difference::Extra { name: "b:c".into() }], "{c:?}");
    // Model only.
    let model_only = [hl(HashKind::Sha1, "aa", "m.gguf")];
    let c = check_gguf_hash(&model_only, HashKind::Sha1, &hashes("11", "22", "aa"));
    assert_eq!((c.differences.len(), c.verdict().as_str()), (0, "the model matches"));
    let c = check_gguf_hash(&model_only, HashKind::Sha256, &hashes("11", "22", "aa"));
    assert_eq!(c.differences, [Difference::NoLines { kind: HashKind::Sha256 }]);
    assert_eq!(c.differences[0].to_string(), "the manifest has no sha256 lines");
}

/// A model hashed, written in both formats, read back and checked: everything matches; the
/// per-tensor hash is the tensor's bytes' and the model's the concatenation's; progress sees
/// every byte.
#[test]
fn hashes_write_parse_and_check_back() {
    let m = model();
    let kinds = [HashKind::Uuid, HashKind::Sha256, HashKind::Xxh64];
    let mut seen = 0u64;
    let names = ["a".to_owned()];
    let h = hash_model(&m, &kinds, &names, &mut |n| seen += n).unwrap();
    assert_eq!(h.kinds, [HashKind::Xxh64, HashKind::Sha256, HashKind::Uuid]);
    assert_eq!((seen, h.bytes_read), (48, 48));
    // Past `names`, the tensor's own name.
    assert_eq!(h.tensors[1].name, "b:c");
    // The builder fills tensor i with `pattern(i, nbytes)`.
    let data = [pattern(0, 16), pattern(1, 32)];
    let sha =
        |b: &[u8]| sha2::Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(h.tensors[0].hashes[1], sha(&data[0]));
    assert_eq!(h.model_hash(HashKind::Sha256), Some(sha(&data.concat()).as_str()));

    let sipllm = h.to_sipllm(HashKind::Sha256).unwrap();
    assert_eq!(sipllm, format!("{}  16  a\n{}  32  b:c\n", sha(&data[0]), sha(&data[1])));
    assert_eq!(h.to_sipllm(HashKind::Uuid), None);
    let report = check(&Manifest::parse(&sipllm).unwrap(), &h);
    assert!(report.is_match(), "{report:?}");
    assert_eq!(report.kinds[0].tensors_match, Some(2));
    assert_eq!(report.kinds[0].kind, HashKind::Sha256, "the manifest's, not the first hashed");

    let gguf_hash = h.to_gguf_hash("dir/m.gguf");
    let lines: Vec<&str> = gguf_hash.lines().collect();
    assert_eq!(lines.len(), 2 * 2 + 3, "{gguf_hash}");
    assert!(lines[0].starts_with("xxh64     ") && lines[0].ends_with("  dir/m.gguf:a"));
    assert!(lines[6].starts_with("uuid      ") && lines[6].ends_with("  dir/m.gguf"));
    let report = check(&Manifest::parse(&gguf_hash).unwrap(), &h);
    assert!(report.is_match(), "{report:?}");
    let verdicts: Vec<String> = report.kinds.iter().map(|k| k.verdict()).collect();
    assert_eq!(
        verdicts,
        [
            "all 2 tensors match; the model matches",
            "all 2 tensors match; the model matches",
            "the model matches"
        ]
    );

    // Other data in one tensor: the tensor's and the model's hashes differ.
    let other = Model::from_source(
        MemSource::new(
            GgufBuilder::new()
                .tensor("a", GgmlType::F32, &[4])
                .tensor_info(Tensor {
                    name: b"b:c".to_vec(),
                    dims: vec![8],
                    type_code: GgmlType::F32.code(),
                    offset: None,
                    n_dims: None,
                    data: Some(vec![0; 32]),
                })
                .build(),
        ),
        &OpenOptions::default(),
    )
    .unwrap();
    let h2 = hash_model(&other, &kinds, &[], &mut |_| {}).unwrap();
    let report = check(&Manifest::parse(&gguf_hash).unwrap(), &h2);
    let shown: Vec<String> = report.differences().map(ToString::to_string).collect();
    assert_eq!(shown.len(), 5, "{shown:?}");
    assert!(shown[0].starts_with("b:c: hash "), "{shown:?}");
    assert!(shown[4].starts_with("model: uuid "), "{shown:?}");
}
