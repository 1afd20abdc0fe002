//! Truncation.

use super::*;

/// Writes a GGUF field by field, recording for each field where it lies, where the read the
/// decoder is doing there ends (a fixed-size array is read as one piece), and the path the
/// truncation error names.
#[derive(Default)]
struct Fields {
    bytes: Vec<u8>,
    /// (start, end, end of the read, path)
    fields: Vec<(u64, u64, u64, String)>,
}

fn scalar_le(v: &Value) -> Vec<u8> {
    match v {
        Value::Uint8(x) => x.to_le_bytes().to_vec(),
        Value::Int8(x) => x.to_le_bytes().to_vec(),
        Value::Uint16(x) => x.to_le_bytes().to_vec(),
        Value::Int16(x) => x.to_le_bytes().to_vec(),
        Value::Uint32(x) => x.to_le_bytes().to_vec(),
        Value::Int32(x) => x.to_le_bytes().to_vec(),
        Value::Float32(x) => x.to_le_bytes().to_vec(),
        Value::Bool(x) => vec![u8::from(*x)],
        Value::Uint64(x) => x.to_le_bytes().to_vec(),
        Value::Int64(x) => x.to_le_bytes().to_vec(),
        Value::Float64(x) => x.to_le_bytes().to_vec(),
        other => panic!("not a scalar: {other:?}"),
    }
}

impl Fields {
    fn pos(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn field_until(&mut self, data: &[u8], read_end: Option<u64>, path: &str) {
        let start = self.pos();
        self.bytes.extend_from_slice(data);
        let end = self.pos();
        self.fields.push((start, end, read_end.unwrap_or(end), path.to_string()));
    }

    fn field(&mut self, data: &[u8], path: &str) {
        self.field_until(data, None, path)
    }

    fn string(&mut self, s: &[u8], path: &str) {
        self.field(&(s.len() as u64).to_le_bytes(), path);
        self.field(s, path);
    }

    fn value(&mut self, v: &Value, path: &str) {
        match v {
            Value::String(s) => self.string(s, path),
            Value::Array(ty, elems) => {
                self.field(&ty.to_le_bytes(), path);
                self.field(&(elems.len() as u64).to_le_bytes(), path);
                self.payload(*ty, elems, path);
            }
            scalar => self.field(&scalar_le(scalar), path),
        }
    }

    fn payload(&mut self, ty: u32, elems: &[Value], prefix: &str) {
        let ty = ValueType::from_code(ty).unwrap();
        if let Some(size) = ty.fixed_size() {
            // The decoder takes the complete elements present and asks for the rest at once.
            let read_end = self.pos() + (size * elems.len()) as u64;
            for (k, e) in elems.iter().enumerate() {
                self.field_until(&scalar_le(e), Some(read_end), &format!("{prefix}[{k}]"));
            }
            return;
        }
        for (k, e) in elems.iter().enumerate() {
            let path = format!("{prefix}[{k}]");
            match e {
                Value::String(s) => self.string(s, &path),
                Value::Array(ty, inner) => {
                    self.field(&ty.to_le_bytes(), &path);
                    self.field(&(inner.len() as u64).to_le_bytes(), &path);
                    self.payload(*ty, inner, &path);
                }
                other => panic!("not a {ty:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn truncation_anywhere_before_the_data_names_the_item() {
    let mut kvs = every_type_kvs();
    kvs.push(nested_kv());
    kvs.push(("general.alignment", Value::Uint32(64)));
    // (name, type, dims, offset): packed at alignment 64.
    let tensors: [(&str, u32, &[u64], u64); 3] =
        [("t.f32", F32, &[4, 3], 0), ("t.q4k", Q4_K, &[256], 64), ("t.i8", I8, &[5], 64 + 192)];
    let b = tensors
        .iter()
        .fold(build_kvs(&kvs), |b, (n, ty, dims, _)| b.tensor_info(tensor(n, *ty, dims)));
    let file = b.build();

    let mut f = Fields::default();
    f.field(b"GGUF", "header.magic");
    f.field(&3u32.to_le_bytes(), "header.version");
    f.field(&(tensors.len() as u64).to_le_bytes(), "header.counts");
    f.field(&(kvs.len() as u64).to_le_bytes(), "header.counts");
    for (i, (k, v)) in kvs.iter().enumerate() {
        // Until the key is complete the path has no key; then it names it.
        f.string(k.as_bytes(), &format!("metadata[{i}]"));
        let path = kv_path(i, k);
        f.field(&v.type_code().to_le_bytes(), &path);
        f.value(v, &path);
    }
    for (j, (name, ty, dims, offset)) in tensors.iter().enumerate() {
        f.string(name.as_bytes(), &format!("tensor[{j}]"));
        let path = tensor_path(j, name);
        f.field(&(dims.len() as u32).to_le_bytes(), &path);
        for d in *dims {
            f.field(&d.to_le_bytes(), &path);
        }
        f.field(&ty.to_le_bytes(), &path);
        f.field(&offset.to_le_bytes(), &path);
    }
    let directory_end = f.pos();
    let data_offset = align_up(directory_end, 64).unwrap();
    assert!(data_offset > directory_end, "the test wants padding to cut into");
    f.field(&vec![0; (data_offset - directory_end) as usize], "padding");
    assert_eq!(f.bytes, file[..data_offset as usize], "the field map is the builder's file");

    let mut checked = 0;
    for profile in [Profile::Strict, Profile::Lenient] {
        let opts = ParseOptions::new(profile).with_file_size(Some(file.len() as u64));
        // The untruncated file loads.
        assert_eq!(parse_with(&file[..], &opts).map(|g| g.kv_len()), Ok(kvs.len()));
        for cut in 0..data_offset {
            let (_, _, read_end, path) =
                f.fields.iter().find(|(start, end, ..)| (*start..*end).contains(&cut)).unwrap();
            let e = parse_with(&file[..cut as usize], &opts).unwrap_err();
            let got = (e.kind().clone(), e.offset(), e.path().to_string());
            let want = (ErrorKind::UnexpectedEof { needed: read_end - cut }, cut, path.clone());
            assert_eq!(got, want, "cut at {cut} [{}]", profile.name());
            assert_eq!(e.code(), "gguf::input::unexpected_eof");
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * data_offset);
}

#[test]
fn public_helpers_check_instead_of_asserting() {
    // align_up is public: an alignment that is not a power of two is an answer, not a panic.
    assert_eq!(align_up(5, 0), None);
    assert_eq!(align_up(5, 3), None);
    assert_eq!(align_up(5, 48), None);
    assert_eq!(align_up(5, 1 << 63), Some(1 << 63));
    assert_eq!(align_up(u64::MAX, 1), Some(u64::MAX));
    assert_eq!(align_up(u64::MAX - 3, 8), None);
    // Sizes of anything: errors, not panics or wrapped values.
    use sipllm_gguf::{ggml::SizeError, ggml::tensor_element_count, ggml::tensor_nbytes};
    assert_eq!(
        tensor_nbytes(GgmlType::from_code(u32::MAX), &[1]),
        Err(SizeError::UnsizedType(GgmlType::Unknown(u32::MAX)))
    );
    assert_eq!(tensor_element_count(&[u64::MAX, 2]), Err(SizeError::ElementCountOverflow));
    assert_eq!(tensor_nbytes(GgmlType::F32, &[u64::MAX]), Err(SizeError::ByteSizeOverflow));
    assert_eq!(GgmlType::from_code(u32::MAX).name(), "unknown");
    assert_eq!(GgmlType::from_code(u32::MAX).to_string(), "unknown type 4294967295");
    assert_eq!(ValueType::from_code(u32::MAX), None);
    // Spans past the end of the bytes, or past u64::MAX.
    let s = sipllm_gguf::ast::Span { offset: u64::MAX, len: 5 };
    assert_eq!((s.end(), s.slice(b"abc")), (u64::MAX, None));
}

#[test]
fn scalar_of_a_block_type_points_at_no_bytes() {
    let bytes = tensors_file(vec![tensor("t0", Q4_K, &[])]).build();
    let e = parse_with(&bytes[..], &ParseOptions::default()).unwrap_err();
    // The type field is at 38; the finding is the position of the (absent) dims, not 8 bytes
    // of the type and offset fields.
    assert_eq!((e.code(), e.offset(), e.len()), ("gguf::tensor::not_block_multiple", 38, 0));
    let bytes = tensors_file(vec![tensor("t0", Q4_K, &[255])]).build();
    let e = parse_with(&bytes[..], &ParseOptions::default()).unwrap_err();
    assert_eq!((e.code(), e.offset(), e.len()), ("gguf::tensor::not_block_multiple", 38, 8));
}
