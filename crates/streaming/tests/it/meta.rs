//! The collapsed metadata view: typed accessors and their errors, lazy lists, and a second
//! (non-GGUF) source built from the shared pieces, indistinguishable through the seam.

use sipllm_gguf::{GgmlType, Profile, ValueType};
use sipllm_streaming::{
    FloatList, GgufFile, IntList, MemSource, Meta, MetaKind, MetaStr, OpenOptions, SourceTensor,
    StrList, StreamError, TensorStore, WeightSource,
};
use sipllm_testkit::{GgufBuilder, Value};
use smallvec::smallvec;

fn file() -> GgufFile {
    let bytes = GgufBuilder::new()
        .kv("u8", Value::Uint8(200))
        .kv("i32.neg", Value::Int32(-5))
        .kv("u64.big", Value::Uint64(u64::MAX))
        .kv("f32", Value::Float32(1e-5))
        .kv("f64", Value::Float64(0.25))
        .kv("flag", Value::Bool(true))
        .kv("name", Value::str("tiny"))
        .kv("ints", Value::array(ValueType::Int32, vec![Value::Int32(1), Value::Int32(-1)]))
        .kv("u16s", Value::array(ValueType::Uint16, vec![Value::Uint16(7), Value::Uint16(300)]))
        .kv("floats", Value::array(ValueType::Float32, vec![Value::Float32(0.5)]))
        .kv("strs", Value::strings(["a", "bé", "c"]))
        .kv("empty", Value::strings(Vec::<String>::new()))
        .kv("bools", Value::array(ValueType::Bool, vec![Value::Bool(true)]))
        .kv(
            "nested",
            Value::Array(
                ValueType::Array.code(),
                vec![Value::strings(["x"]), Value::strings(Vec::<String>::new())],
            ),
        )
        .tensor("t", GgmlType::F32, &[4])
        .build();
    GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap()
}

#[test]
fn scalars_collapse_to_int_float_bool_str() {
    let f = file();
    assert_eq!(f.meta("u8"), Some(Meta::Int(200)));
    assert_eq!(f.meta("i32.neg"), Some(Meta::Int(-5)));
    assert_eq!(f.meta("u64.big"), Some(Meta::Int(u64::MAX.into())));
    assert_eq!(f.meta("f32"), Some(Meta::Float(f64::from(1e-5f32))));
    assert_eq!(f.meta("flag"), Some(Meta::Bool(true)));
    assert_eq!(f.meta("name"), Some(Meta::Str(MetaStr::from("tiny"))));
    assert_eq!(f.meta("absent"), None);

    assert_eq!(f.meta_int("i32.neg").unwrap(), -5);
    assert_eq!(f.meta_uint("u8").unwrap(), 200);
    assert_eq!(f.meta_uint("u64.big").unwrap(), u64::MAX);
    assert_eq!(f.meta_float("f64").unwrap(), 0.25);
    assert!(f.meta_bool("flag").unwrap());
    assert_eq!(f.meta_str("name").unwrap(), "tiny");
}

#[test]
fn typed_accessors_name_key_expected_and_actual_type() {
    let f = file();
    let cases: [(StreamError, &str, &str); 8] = [
        (
            f.meta_int("absent").unwrap_err(),
            "streaming::meta::missing",
            "metadata key \"absent\" is missing",
        ),
        (
            f.meta_float("u8").unwrap_err(),
            "streaming::meta::type_mismatch",
            "metadata key \"u8\": expected float, found integer",
        ),
        (
            f.meta_str("ints").unwrap_err(),
            "streaming::meta::type_mismatch",
            "metadata key \"ints\": expected string, found integer array",
        ),
        (
            f.meta_ints("strs").unwrap_err(),
            "streaming::meta::type_mismatch",
            "metadata key \"strs\": expected integer array, found string array",
        ),
        (
            f.meta_strs("bools").unwrap_err(),
            "streaming::meta::type_mismatch",
            "metadata key \"bools\": expected string array, found array of bools or arrays",
        ),
        (
            f.meta_bool("name").unwrap_err(),
            "streaming::meta::type_mismatch",
            "metadata key \"name\": expected bool, found string",
        ),
        (
            f.meta_int("u64.big").unwrap_err(),
            "streaming::meta::out_of_range",
            "metadata key \"u64.big\": value 18446744073709551615 does not fit i64",
        ),
        (
            f.meta_uint("i32.neg").unwrap_err(),
            "streaming::meta::out_of_range",
            "metadata key \"i32.neg\": value -5 does not fit u64",
        ),
    ];
    for (err, code, msg) in cases {
        assert_eq!(err.code(), code);
        assert_eq!(err.to_string(), msg);
        assert!(!err.help().is_empty());
    }
}

#[test]
fn lists_are_lazy_views_into_the_header() {
    let f = file();
    let header = f.gguf().bytes().as_ptr_range();

    let ints = f.meta_ints("ints").unwrap();
    assert_eq!(ints.key(), "ints");
    assert_eq!(ints.iter().collect::<Vec<_>>(), [1, -1]);
    assert_eq!(ints.to_vec::<i8>().unwrap(), [1, -1]);
    let err = ints.to_vec::<u32>().unwrap_err();
    assert_eq!(err.to_string(), "metadata key \"ints\"[1]: value -1 does not fit u32");
    assert!(header.contains(&ints.as_gguf().unwrap().payload().as_ptr()));
    // Typed, zero-copy access through the parser's view stays available.
    assert_eq!(ints.as_gguf().unwrap().to_vec::<i32>(), Some(vec![1, -1]));

    let u16s = f.meta_ints("u16s").unwrap();
    assert_eq!(u16s.get(1), Some(300));
    assert_eq!(u16s.to_vec::<u8>().unwrap_err().code(), "streaming::meta::out_of_range");

    let floats = f.meta_floats("floats").unwrap();
    assert_eq!(floats.to_vec(), [0.5]);
    assert_eq!(floats.to_vec_f32(), [0.5f32]);

    let strs = f.meta_strs("strs").unwrap();
    assert_eq!(strs.len(), 3);
    assert_eq!(strs.to_vec().unwrap(), ["a", "bé", "c"]);
    let second = strs.iter().nth(1).unwrap();
    assert_eq!(second, "bé");
    assert!(header.contains(&second.as_bytes().as_ptr()), "strings borrow the header bytes");
    assert!(f.meta_strs("empty").unwrap().is_empty());

    assert!(matches!(f.meta("bools"), Some(Meta::Array(a)) if a.elem_type() == ValueType::Bool));
    assert!(matches!(f.meta("nested"), Some(Meta::Array(a)) if a.len() == 2));
}

#[test]
fn every_key_is_listed_in_file_order() {
    let f = file();
    let keys: Vec<String> = f.meta_keys().map(|k| k.to_string()).collect();
    assert_eq!(
        keys,
        [
            "u8", "i32.neg", "u64.big", "f32", "f64", "flag", "name", "ints", "u16s", "floats",
            "strs", "empty", "bools", "nested"
        ]
    );
    let kinds: Vec<MetaKind> = f.metadata().map(|(_, v)| v.kind()).collect();
    assert_eq!(kinds[7..11], [MetaKind::Ints, MetaKind::Ints, MetaKind::Floats, MetaKind::Strs]);
}

#[test]
fn non_utf8_strings_from_lenient_files_are_errors_only_when_asked_as_str() {
    let bytes = GgufBuilder::new()
        .kv("bad", Value::String(vec![b'a', 0xff]))
        .kv(
            "list",
            Value::Array(
                ValueType::String.code(),
                vec![Value::str("ok"), Value::String(vec![0xfe])],
            ),
        )
        .build();
    let strict = GgufFile::from_source(MemSource::new(bytes.clone()), &OpenOptions::default());
    assert_eq!(strict.unwrap_err().code(), "gguf::metadata::invalid_utf8_value");
    let opts = OpenOptions::default().with_profile(Profile::Lenient);
    let f = GgufFile::from_source(MemSource::new(bytes), &opts).unwrap();
    let err = f.meta_str("bad").unwrap_err();
    assert_eq!(err.code(), "streaming::meta::invalid_utf8");
    assert_eq!(f.meta("bad").unwrap().as_text().unwrap().as_bytes(), b"a\xff");
    let list = f.meta_strs("list").unwrap();
    assert_eq!(
        list.iter().map(|t| t.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        ["ok", "\u{fffd}"]
    );
    let err = list.to_vec().unwrap_err();
    assert_eq!(err.to_string(), "metadata key \"list\"[1]: the string is not valid UTF-8");
}

/// A second format: metadata as i64 / f64 / strings and their lists, tensors in a
/// `TensorStore`. This is the shape a `.llmw` reader takes.
struct ToySource {
    store: TensorStore,
    layers: i64,
    eps: f64,
    arch: String,
    token_types: Vec<i64>,
    scores: Vec<f64>,
    tokens: Vec<String>,
}

impl WeightSource for ToySource {
    fn tensors(&self) -> &[SourceTensor] {
        self.store.tensors()
    }
    fn find(&self, name: &str) -> Option<&SourceTensor> {
        self.store.find(name)
    }
    fn read_raw(&self, t: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError> {
        self.store.read_raw(t, dst)
    }
    fn read_raw_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        self.store.read_raw_at(offset, dst)
    }
    fn endian(&self) -> sipllm_gguf::Endian {
        sipllm_gguf::Endian::Little
    }
    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        self.metadata().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        let k = |s: &'static str| MetaStr::from(s);
        Box::new(
            [
                (k("llama.block_count"), Meta::Int(self.layers.into())),
                (k("llama.attention.layer_norm_rms_epsilon"), Meta::Float(self.eps)),
                (k("general.architecture"), Meta::Str(MetaStr::from(self.arch.as_str()))),
                (
                    k("tokenizer.ggml.token_type"),
                    Meta::Ints(IntList::from_slice("tokenizer.ggml.token_type", &self.token_types)),
                ),
                (
                    k("tokenizer.ggml.scores"),
                    Meta::Floats(FloatList::from_slice("tokenizer.ggml.scores", &self.scores)),
                ),
                (
                    k("tokenizer.ggml.tokens"),
                    Meta::Strs(StrList::from_strings("tokenizer.ggml.tokens", &self.tokens)),
                ),
            ]
            .into_iter(),
        )
    }
    fn prefetch(&self, t: &SourceTensor) -> Result<(), StreamError> {
        self.store.prefetch(t)
    }
    fn file_size(&self) -> u64 {
        self.store.file_size()
    }
}

#[test]
fn another_format_is_indistinguishable_through_the_seam() {
    let data: Vec<u8> = (0..64u8).collect();
    let gguf_bytes = GgufBuilder::new()
        .kv("llama.block_count", Value::Uint32(2))
        .kv("llama.attention.layer_norm_rms_epsilon", Value::Float32(0.5))
        .kv("general.architecture", Value::str("llama"))
        .kv(
            "tokenizer.ggml.token_type",
            Value::array(ValueType::Int32, vec![Value::Int32(1), Value::Int32(3)]),
        )
        .kv(
            "tokenizer.ggml.scores",
            Value::array(ValueType::Float32, vec![Value::Float32(-1.0), Value::Float32(0.0)]),
        )
        .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "hi"]))
        .tensor_info(sipllm_testkit::Tensor {
            name: b"w".to_vec(),
            dims: vec![8, 2],
            type_code: GgmlType::F32.code(),
            offset: None,
            n_dims: None,
            data: Some(data.clone()),
        })
        .build();
    let gguf = GgufFile::from_source(MemSource::new(gguf_bytes), &OpenOptions::default()).unwrap();

    // The toy file: 16 bytes of its own header, then the same tensor bytes.
    let mut toy_bytes = vec![0u8; 16];
    toy_bytes.extend_from_slice(&data);
    let info = SourceTensor {
        name: "w".into(),
        ggml_type: GgmlType::F32,
        shape: smallvec![2, 8],
        abs_offset: 16,
        nbytes: Some(64),
    };
    let store = TensorStore::new(Box::new(MemSource::new(toy_bytes)), None, vec![info], 0).unwrap();
    let toy = ToySource {
        store,
        layers: 2,
        eps: 0.5,
        arch: "llama".into(),
        token_types: vec![1, 3],
        scores: vec![-1.0, 0.0],
        tokens: vec!["<s>".into(), "hi".into()],
    };

    let sources: [&dyn WeightSource; 2] = [&gguf, &toy];
    let views: Vec<_> = sources
        .iter()
        .map(|s| {
            let t = s.find("w").unwrap();
            let mut buf = vec![0u8; t.byte_len().unwrap()];
            s.read_raw(t, &mut buf).unwrap();
            (
                s.meta_uint("llama.block_count").unwrap(),
                s.meta_float("llama.attention.layer_norm_rms_epsilon").unwrap(),
                s.meta_str("general.architecture").unwrap().to_string(),
                s.meta_ints("tokenizer.ggml.token_type").unwrap().to_vec::<i32>().unwrap(),
                s.meta_floats("tokenizer.ggml.scores").unwrap().to_vec_f32(),
                s.meta_strs("tokenizer.ggml.tokens").unwrap().to_vec().unwrap().join(" "),
                t.shape.clone(),
                t.ggml_type,
                buf,
            )
        })
        .collect();
    assert_eq!(views[0], views[1]);
    let metas: Vec<Vec<(String, Meta<'_>)>> =
        sources.iter().map(|s| s.metadata().map(|(k, v)| (k.to_string(), v)).collect()).collect();
    assert_eq!(metas[0], metas[1], "the collapsed views compare equal across formats");
}

/// Float arrays and scalars read as `f32`: exact for FLOAT32 storage (values an `f64` view
/// would show as `9.999999747378752e-6` come back as `1e-5`), rounded for FLOAT64.
#[test]
fn floats_read_as_f32() {
    let scores = [1e-5f32, -0.1, f32::MAX, f32::MIN_POSITIVE / 2.0, f32::INFINITY];
    let bytes = GgufBuilder::new()
        .kv(
            "scores",
            Value::array(ValueType::Float32, scores.iter().map(|&v| Value::Float32(v)).collect()),
        )
        .kv(
            "wide",
            Value::array(ValueType::Float64, vec![Value::Float64(0.1), Value::Float64(1e300)]),
        )
        .kv("eps", Value::Float32(1e-5))
        .kv("base", Value::Float64(0.1))
        .build();
    let f = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default()).unwrap();
    let list = f.meta_floats("scores").unwrap();
    assert!(list.is_f32());
    let got: Vec<f32> = list.iter_f32().collect();
    assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), scores.map(f32::to_bits));
    assert_eq!(list.iter_f32().len(), 5);
    assert_eq!(list.get_f32(0), Some(1e-5));
    assert_eq!(list.get_f32(5), None);
    assert_eq!(list.to_vec_f32(), got);
    let wide = f.meta_floats("wide").unwrap();
    assert!(!wide.is_f32());
    assert_eq!(wide.iter_f32().collect::<Vec<_>>(), [0.1f32, f32::INFINITY]);
    assert_eq!(f.meta_f32("eps").unwrap(), 1e-5f32);
    assert_eq!(f.meta_f32("base").unwrap(), 0.1f32);
    assert_eq!(f.meta("eps").unwrap().as_f32(), Some(1e-5f32));
    assert_eq!(f.meta_f32("scores").unwrap_err().code(), "streaming::meta::type_mismatch");
    // Slices of f64 (other formats) read as f32 too.
    let slice = [0.5f64, 0.1];
    let fl = FloatList::from_slice("k", &slice);
    assert!(!fl.is_f32());
    assert_eq!(fl.iter_f32().collect::<Vec<_>>(), [0.5f32, 0.1]);
}
