//! Property: any valid file the builder makes parses back to exactly what was built, in both
//! byte orders, v2 and v3, with nested arrays, custom alignments and tensors.

use crate::arbitrary::{arb_file, same_value};
use proptest::prelude::*;
use sipllm_gguf::{GgmlType, ParseOptions, ggml::align_up, ggml::tensor_nbytes};
use sipllm_testkit::Value;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn built_files_parse_back_to_what_was_built(b in arb_file()) {
        let bytes = b.build();
        let opts = ParseOptions::default().with_file_size(Some(bytes.len() as u64));
        let gguf = sipllm_gguf::parse_with(&bytes[..], &opts)
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(gguf.endian(), match bytes[4] { 0 => sipllm_gguf::Endian::Big, _ => sipllm_gguf::Endian::Little });
        prop_assert_eq!(gguf.kv_len(), b.kvs().len());
        for (entry, (key, value)) in gguf.metadata().zip(b.kvs()) {
            prop_assert_eq!(entry.key.as_bytes(), key.as_slice());
            let parsed = Value::from_meta(&entry.value);
            prop_assert!(same_value(&parsed, value), "{:?}: {:?} != {:?}", entry.key, parsed, value);
        }
        let alignment = u64::from(b.alignment());
        prop_assert_eq!(u64::from(gguf.alignment()), alignment);
        prop_assert_eq!(gguf.data_offset(), align_up(b.build_header().len() as u64, alignment).unwrap());
        prop_assert_eq!(gguf.tensor_infos().len(), b.tensors().len());
        for ((t, built), offset) in gguf.tensors().zip(b.tensors()).zip(b.offsets()) {
            prop_assert_eq!(t.name.as_bytes(), built.name.as_slice());
            prop_assert_eq!(t.info.dims(), built.dims.as_slice());
            prop_assert_eq!(t.info.ggml_type().code(), built.type_code);
            prop_assert_eq!(t.info.offset(), offset);
            let ty = GgmlType::from_code(built.type_code);
            prop_assert_eq!(t.info.nbytes(), Some(tensor_nbytes(ty, &built.dims).unwrap()));
            prop_assert_eq!(t.info.abs_offset(), gguf.data_offset() + offset);
            // The pattern data the builder wrote is where the directory says it is.
            let start = t.info.abs_offset() as usize;
            let data = &bytes[start..start + t.info.nbytes().unwrap() as usize];
            let pattern = sipllm_testkit::pattern(t.index, data.len() as u64);
            prop_assert_eq!(data, pattern.as_slice());
        }
        prop_assert!(gguf.warnings().is_empty(), "{:?}", gguf.warnings());
    }
}
