//! The `llmw_parse` property: parse a `.llmw` file, walk and check everything, and re-write
//! what parsed through `LlmwWriter` (parse → write → parse gives the same content).

use sipllm_gguf::{ggml::align_up, ggml::tensor_element_count, ggml::tensor_nbytes};
use sipllm_llmw::{ALIGNMENT, Error, Limits, Llmw, LlmwWriter, MetaType, MetaValue, ParseOptions};

use crate::text::{assert_code, assert_in_input, assert_safe_text, assert_subslice};

/// Tight limits, so that small fuzz inputs reach every limit check.
pub const TIGHT_LLMW_LIMITS: Limits = Limits {
    max_string_len: 64,
    max_array_len: 16,
    max_meta_count: 8,
    max_tensor_count: 4,
    max_header_bytes: 4096,
};

/// The option sets every `.llmw` property runs: the input as the whole file, as a header
/// prefix (no file size), and with tight limits.
pub fn option_sets(input_len: usize) -> [(&'static str, ParseOptions); 3] {
    let size = Some(input_len as u64);
    [
        ("file", ParseOptions::default().with_file_size(size)),
        ("prefix", ParseOptions::default().with_file_size(None)),
        ("tight", ParseOptions::default().with_limits(TIGHT_LLMW_LIMITS).with_file_size(size)),
    ]
}

/// Largest total tensor data the re-write copies (keeps each fuzz input fast).
const REWRITE_MAX_DATA: u64 = 1 << 20;

pub(crate) fn llmw_parse(data: &[u8]) {
    let sets = option_sets(data.len());
    let mut whole_file = None;
    for (name, opts) in sets {
        let target = format!("llmw_parse[{name}]");
        match sipllm_llmw::parse_with(data, &opts) {
            Ok(f) => {
                check_llmw(&target, data, &f, &opts);
                if name == "file" {
                    whole_file = Some(f);
                }
            }
            Err(e) => check_error(&target, &e, data.len() as u64),
        }
    }
    if let Some(f) = whole_file {
        rewrite(data, &f);
    }
}

/// Checks a parse error: where it points, its code, help and rendering.
pub(crate) fn check_error(target: &str, e: &Error, input_len: u64) {
    assert_in_input(target, e, e.offset(), e.len(), input_len);
    assert_code(target, "error", e.code(), "llmw::");
    assert_eq!(e.code(), e.kind().code());
    assert_safe_text(target, "error Display", &e.to_string(), false);
    assert_safe_text(target, "error message", &e.message(), false);
    assert_safe_text(target, "error path", &e.path().to_string(), false);
    assert!(!e.help().is_empty(), "{target}: error {} has no help", e.code());
    assert_safe_text(target, "error help", e.help(), true);
}

/// Walks everything a successful parse offers and checks what `docs/llmw.md` promises.
pub(crate) fn check_llmw(target: &str, data: &[u8], f: &Llmw<&[u8]>, opts: &ParseOptions) {
    let n = data.len() as u64;
    let dir = f.directory();
    let header = *dir.header();
    let limits = opts.limits;
    assert!(matches!(header.version, 1 | 2), "{target}: version {}", header.version);
    assert_eq!(f.version(), header.version);
    assert_eq!(dir.meta().len() as u64, u64::from(header.meta_count), "{target}: meta count");
    assert_eq!(dir.tensors().len() as u64, u64::from(header.tensor_count), "{target}: tensors");
    assert!(header.meta_count <= limits.max_meta_count, "{target}: meta count over the limit");
    assert!(header.tensor_count <= limits.max_tensor_count, "{target}: tensors over the limit");
    assert_eq!(f.meta_len(), dir.meta().len());
    assert!(dir.directory_end() <= n, "{target}: directory ends past the input");
    assert_eq!(f.header_bytes().len() as u64, dir.directory_end());
    assert_eq!(dir.alignment(), ALIGNMENT);
    assert_eq!(
        align_up(dir.directory_end(), ALIGNMENT),
        Some(dir.data_start()),
        "{target}: data_start is not directory_end rounded up to 64"
    );
    assert_eq!(f.data_start(), dir.data_start());
    if !dir.tensors().is_empty() {
        let pad = data
            .get(dir.directory_end() as usize..dir.data_start() as usize)
            .unwrap_or_else(|| panic!("{target}: the padding before the data is missing"));
        assert!(pad.iter().all(|&b| b == 0), "{target}: non-zero padding accepted");
        assert!(dir.data_start() <= limits.max_header_bytes, "{target}: data_start over limit");
    }

    // Items are back to back: header, entries, tensor infos, directory end.
    let mut cursor = sipllm_llmw::Header::SIZE;
    for (i, m) in dir.meta().iter().enumerate() {
        assert_eq!(m.span().offset, cursor, "{target}: metadata[{i}] does not follow on");
        cursor = m.span().end();
    }
    for (i, t) in dir.tensors().iter().enumerate() {
        assert_eq!(t.span().offset, cursor, "{target}: tensor[{i}] does not follow on");
        cursor = t.span().end();
    }
    assert_eq!(cursor, dir.directory_end(), "{target}: the last item does not end the directory");

    for (entry, info) in f.metadata().zip(dir.meta()) {
        let i = entry.index;
        let what = format!("metadata[{i}]");
        let key_span = info.key_span();
        assert_eq!(key_span.offset, info.span().offset + 4, "{target}: {what} key offset");
        assert_eq!(Some(entry.key.as_bytes()), key_span.slice(data), "{target}: {what} key");
        assert_eq!(f.key(info), entry.key);
        assert!(!entry.key.is_empty(), "{target}: {what} empty key accepted");
        assert!(entry.key.len() as u64 <= u64::from(limits.max_string_len), "{target}: {what}");
        let ty = info.meta_type();
        assert!(ty.min_version() <= header.version, "{target}: {what} {ty} in v{}", header.version);
        assert_eq!(MetaType::from_tag(ty.tag()), Some(ty));
        let _ = (ty.name(), ty.to_string());
        let vspan = info.value_span();
        assert_eq!(vspan.end(), info.span().end(), "{target}: {what} value is not last");
        let payload = vspan.slice(data).unwrap_or_else(|| panic!("{target}: {what} value span"));
        let value = entry.value;
        assert_eq!(value.meta_type(), ty, "{target}: {what} value type");
        check_value(target, &what, data, payload, value, info.count(), limits);
        let found = f.get_entry(entry.key).unwrap_or_else(|| panic!("{target}: {what} lookup"));
        assert_eq!(found.index, i, "{target}: {what}: lookup found another entry");
    }

    let mut prev_end = dir.data_start();
    for (t, info) in f.tensors().zip(dir.tensors()) {
        let i = t.index;
        let what = format!("tensor[{i}]");
        let name_span = info.name_span();
        assert_eq!(name_span.offset, info.span().offset + 4, "{target}: {what} name offset");
        assert_eq!(Some(t.name.as_bytes()), name_span.slice(data), "{target}: {what} name");
        assert!(!t.name.is_empty(), "{target}: {what} empty name accepted");
        assert!(t.name.len() as u64 <= u64::from(limits.max_string_len), "{target}: {what}");
        let dims = info.dims();
        assert!((1..=4).contains(&dims.len()), "{target}: {what} has {} dims", dims.len());
        assert!(dims.iter().all(|&d| d >= 1), "{target}: {what} zero dimension accepted");
        let gguf_dims = info.gguf_dims();
        assert!(gguf_dims.iter().eq(dims.iter().rev()), "{target}: {what} gguf_dims");
        let count = tensor_element_count(dims)
            .unwrap_or_else(|e| panic!("{target}: {what} dims {dims:?} accepted but {e}"));
        assert_eq!(info.element_count(), count);
        let dtype = info.dtype();
        assert!(dtype.is_known(), "{target}: {what} dtype {} accepted", dtype.code());
        let expected = tensor_nbytes(dtype, &gguf_dims)
            .unwrap_or_else(|e| panic!("{target}: {what} accepted but tensor_nbytes says {e}"));
        assert_eq!(info.nbytes(), expected, "{target}: {what} nbytes");
        assert!(info.nbytes() > 0, "{target}: {what} has no data");
        assert_eq!(info.offset() % ALIGNMENT, 0, "{target}: {what} misaligned");
        assert!(info.offset() >= prev_end, "{target}: {what} overlaps or is out of order");
        let end = info.offset().checked_add(info.nbytes());
        let end = end.unwrap_or_else(|| panic!("{target}: {what} end overflows"));
        assert_eq!(info.data_span().end(), end);
        prev_end = end;
        if let Some(size) = opts.file_size {
            assert!(end <= size, "{target}: {what} data ends at {end}, past the file ({size})");
        }
        match f.tensor_data(info) {
            Some(bytes) => {
                assert!(end <= n, "{target}: {what} data past the input");
                assert_eq!(bytes.len() as u64, info.nbytes());
                assert_subslice(target, &what, data, bytes);
            }
            None => assert!(end > n, "{target}: {what} data in the input but not given"),
        }
        let found = f.tensor(t.name).unwrap_or_else(|| panic!("{target}: {what} lookup"));
        assert_eq!(found.index, i, "{target}: {what}: lookup found another tensor");
        assert_eq!(f.tensor_name(info), t.name);
    }
    let _ = format!("{f:?}");
}

fn check_value(
    target: &str,
    what: &str,
    data: &[u8],
    payload: &[u8],
    value: MetaValue<'_>,
    count: u32,
    limits: Limits,
) {
    let _ = (value.as_i64(), value.as_f64(), value.as_str(), format!("{value:?}"));
    match value {
        MetaValue::I64(_) | MetaValue::F64(_) => {
            assert_eq!(payload.len(), 8, "{target}: {what} scalar size");
            assert_eq!(count, 1);
        }
        MetaValue::Str(s) => {
            assert_eq!(s.as_bytes(), payload, "{target}: {what} string bytes");
            assert!(s.len() as u64 <= u64::from(limits.max_string_len), "{target}: {what}");
            assert_eq!(count, 1);
        }
        MetaValue::I64Array(a) => numbers(target, what, data, a, count, limits),
        MetaValue::F64Array(a) => numbers(target, what, data, a, count, limits),
        MetaValue::StrArray(a) => {
            assert_eq!(a.len() as u64, u64::from(count), "{target}: {what} string array len");
            assert!(count <= limits.max_array_len, "{target}: {what} array over the limit");
            assert_eq!(a.payload(), payload);
            assert_eq!(a.is_empty(), count == 0);
            let mut seen = 0u32;
            for s in a.iter() {
                assert!(s.len() as u64 <= u64::from(limits.max_string_len), "{target}: {what}");
                assert_subslice(target, what, data, s.as_bytes());
                seen += 1;
            }
            assert_eq!(seen, count, "{target}: {what}: iteration stopped early");
            if count > 0 {
                assert_eq!(a.get(0), a.iter().next());
                assert_eq!(a.get(count as usize - 1), a.iter().last());
            }
            assert_eq!(a.get(count as usize), None);
            let _ = format!("{a:?}");
        }
        _ => panic!("{target}: {what}: a value type this checker does not know: {value:?}"),
    }
}

fn numbers<T: sipllm_llmw::Number + Copy + std::fmt::Debug + Bits>(
    target: &str,
    what: &str,
    data: &[u8],
    a: sipllm_llmw::Numbers<'_, T>,
    count: u32,
    limits: Limits,
) {
    assert_eq!(a.len() as u64, u64::from(count), "{target}: {what} array len");
    assert!(count <= limits.max_array_len, "{target}: {what} array over the limit");
    assert_eq!(a.payload().len() as u64, 8 * u64::from(count), "{target}: {what} payload");
    assert_subslice(target, what, data, a.payload());
    let fwd: Vec<u64> = a.iter().map(Bits::bits).collect();
    assert_eq!(fwd.len(), a.len());
    assert!(a.iter().rev().map(Bits::bits).eq(fwd.iter().rev().copied()), "{target}: {what}");
    for (i, &b) in fwd.iter().enumerate() {
        assert_eq!(a.get(i).map(Bits::bits), Some(b), "{target}: {what}[{i}] get");
    }
    assert!(a.to_vec().into_iter().map(Bits::bits).eq(fwd.iter().copied()));
    assert!(a.get(a.len()).is_none() && a.get(usize::MAX).is_none(), "{target}: {what} get");
}

trait Bits {
    fn bits(self) -> u64;
}
impl Bits for i64 {
    fn bits(self) -> u64 {
        self as u64
    }
}
impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Parse → write → parse: `LlmwWriter` re-writes what parsed (in the oldest version that
/// holds it, packed), and the re-parsed file has the same entries, tensors and data; a second
/// re-write is byte-identical (the writer's output is canonical).
fn rewrite(data: &[u8], f: &Llmw<&[u8]>) {
    let target = "llmw_parse[rewrite]";
    let total: u64 = f.tensor_infos().iter().map(|t| t.nbytes()).sum();
    if total > REWRITE_MAX_DATA {
        return;
    }
    let first = write_copy(target, f);
    let g = sipllm_llmw::parse(&first)
        .unwrap_or_else(|e| panic!("{target}: the re-written file does not parse: {e}"));
    check_llmw(
        target,
        &first,
        &g,
        &ParseOptions::default().with_file_size(Some(first.len() as u64)),
    );
    let has_array = f.metadata().any(|e| e.info.meta_type().is_array());
    assert_eq!(g.version(), if has_array { 2 } else { 1 }, "{target}: version");
    assert_eq!(f.meta_len(), g.meta_len(), "{target}: entry count");
    for (a, b) in f.metadata().zip(g.metadata()) {
        assert_eq!(a.key, b.key, "{target}: metadata[{}] key", a.index);
        assert_eq!(a.info.meta_type(), b.info.meta_type(), "{target}: metadata[{}]", a.index);
        assert_eq!(a.info.count(), b.info.count(), "{target}: metadata[{}] count", a.index);
        let (pa, pb) = (a.info.value_span().slice(data), b.info.value_span().slice(&first));
        assert_eq!(pa, pb, "{target}: metadata[{}] {:?} stored bytes differ", a.index, a.key);
    }
    assert_eq!(f.tensor_infos().len(), g.tensor_infos().len(), "{target}: tensor count");
    for (a, b) in f.tensors().zip(g.tensors()) {
        assert_eq!(
            (a.name, a.info.dtype(), a.info.dims(), a.info.nbytes()),
            (b.name, b.info.dtype(), b.info.dims(), b.info.nbytes()),
            "{target}: tensor[{}]",
            a.index
        );
        assert_eq!(f.tensor_data(a.info), g.tensor_data(b.info), "{target}: tensor[{}]", a.index);
    }
    let second = write_copy(target, &g);
    assert!(first == second, "{target}: re-writing the writer's own output changed it");
}

fn write_copy(target: &str, f: &Llmw<&[u8]>) -> Vec<u8> {
    let mut w = LlmwWriter::new();
    for e in f.metadata() {
        let r = match e.value {
            MetaValue::I64(v) => w.add_meta_i64(e.key, v),
            MetaValue::F64(v) => w.add_meta_f64(e.key, v),
            MetaValue::Str(s) => w.add_meta_str(e.key, s),
            MetaValue::I64Array(a) => w.add_meta_i64s(e.key, a.iter()),
            MetaValue::F64Array(a) => w.add_meta_f64s(e.key, a.iter()),
            MetaValue::StrArray(a) => w.add_meta_strs(e.key, a.iter()),
            other => panic!("{target}: a value type this checker does not know: {other:?}"),
        };
        if let Err(err) = r {
            panic!("{target}: the writer refuses metadata[{}] {:?}: {err}", e.index, e.key);
        }
    }
    for t in f.tensors() {
        let bytes = f.tensor_data(t.info).unwrap_or_else(|| panic!("{target}: tensor data"));
        if let Err(err) = w.add_tensor(t.name, t.info.dtype(), t.info.dims(), bytes) {
            panic!("{target}: the writer refuses tensor[{}] {:?}: {err}", t.index, t.name);
        }
    }
    w.to_vec().unwrap_or_else(|e| panic!("{target}: write failed: {e}"))
}
