//! The `parse_slice` property: parse a GGUF in every profile, then walk and check everything.

use sipllm_gguf::{
    Directory, Endian, Error, Gguf, Limits, MetaValue, ParseOptions, Profile, ValueType, Warning,
    ast::Span, decoder::DEFAULT_ALIGNMENT, ggml::align_up, ggml::tensor_element_count,
    ggml::tensor_nbytes, value::ArrayView, value::Element,
};

use crate::text::{assert_code, assert_in_input, assert_safe_text, assert_subslice};

/// Tight limits, so that small fuzz inputs reach every limit check.
pub const TIGHT_GGUF_LIMITS: Limits = Limits {
    max_string_len: 64,
    max_array_len: 16,
    max_depth: 2,
    max_kv_count: 8,
    max_tensor_count: 4,
    max_header_bytes: 4096,
};

/// The option sets every GGUF property runs: each profile (v1 enabled, the input taken as the
/// whole file), and the lenient profile with tight limits and no file size (a header prefix).
pub fn option_sets(input_len: usize) -> [(&'static str, ParseOptions); 4] {
    let size = Some(input_len as u64);
    let base = |p| ParseOptions::new(p).with_v1(true).with_file_size(size);
    [
        ("strict", base(Profile::Strict)),
        ("llama-cpp", base(Profile::LlamaCpp)),
        ("lenient", base(Profile::Lenient)),
        (
            "lenient+tight",
            ParseOptions::new(Profile::Lenient)
                .with_v1(true)
                .with_limits(TIGHT_GGUF_LIMITS)
                .with_file_size(None),
        ),
    ]
}

/// Parses `data` under every option set, checks every result, and checks that the profiles
/// agree where `docs/parser.md` says they must.
pub(crate) fn parse_slice(data: &[u8]) {
    let sets = option_sets(data.len());
    let results = sets.map(|(name, opts)| {
        let r = sipllm_gguf::parse_with(data, &opts);
        let target = format!("parse_slice[{name}]");
        match &r {
            Ok(g) => check_gguf(&target, data, g, &opts),
            Err(e) => check_error(&target, e, data.len() as u64),
        }
        r
    });
    let [strict, llama, lenient, _] = &results;
    // Lenient parsing only turns errors into warnings: whatever strict parsing accepts, it
    // accepts identically (nothing to tolerate, so no extra warnings either).
    if let Ok(s) = strict {
        let Ok(l) = lenient else {
            panic!("parse_slice: strict accepts but lenient rejects: {:?}", lenient.as_ref().err())
        };
        assert_eq!(s.directory(), l.directory(), "parse_slice: strict and lenient disagree");
    }
    // llama.cpp's acceptance is a subset of lenient's (lenient warns where llama.cpp does not
    // check UTF-8, bools or zero dimensions): the same pairs, tensors and layout — under the
    // same limits (the llama-cpp set has llama.cpp's larger caps, so an input only those admit,
    // say a string over 64 MiB, is compared with lenient under them too).
    if let Ok(c) = llama {
        let [_, (_, llama_opts), (_, lenient_opts), _] = sets;
        let same_limits = lenient_opts.with_limits(llama_opts.limits);
        let lenient = &sipllm_gguf::parse_with(data, &same_limits);
        let Ok(l) = lenient else {
            panic!(
                "parse_slice: llama-cpp accepts but lenient rejects: {:?}",
                lenient.as_ref().err()
            )
        };
        // Except where ggml reads the bytes differently (docs/parser.md, "The llama-cpp profile
        // against ggml"): a key that is `general.alignment` only up to a NUL byte sets the
        // alignment there, and a file without tensors has its data section unpadded.
        let c_alignment_key = c.metadata().any(|e| {
            let key = e.key.as_bytes();
            key.contains(&0) && key.split(|&b| b == 0).next() == Some(b"general.alignment")
        });
        let (c, l) = (c.directory(), l.directory());
        assert_eq!(c.kvs(), l.kvs(), "parse_slice: llama-cpp and lenient pairs differ");
        if !c_alignment_key {
            assert_eq!(
                c.tensors(),
                l.tensors(),
                "parse_slice: llama-cpp and lenient tensors differ"
            );
            let expected = if c.tensors().is_empty() { c.directory_end() } else { l.data_offset() };
            assert_eq!(
                (c.alignment(), c.directory_end(), c.data_offset()),
                (l.alignment(), l.directory_end(), expected),
                "parse_slice: llama-cpp and lenient layouts differ"
            );
        }
    }
}

/// Checks a parse error: where it points, its code, help and rendering.
pub(crate) fn check_error(target: &str, e: &Error, input_len: u64) {
    assert_in_input(target, e, e.offset(), e.len(), input_len);
    assert_code(target, "error", e.code(), "gguf::");
    assert_eq!(e.code(), e.kind().code());
    assert_safe_text(target, "error Display", &e.to_string(), false);
    assert_safe_text(target, "error message", &e.message(), false);
    assert_safe_text(target, "error path", &e.path().to_string(), false);
    let help = e.help();
    assert!(!help.is_empty(), "{target}: error {} has no help", e.code());
    assert_safe_text(target, "error help", help, true);
    assert_eq!(e.path().is_empty(), e.path().segments().is_empty());
}

fn check_warning(target: &str, w: &Warning, input_len: u64) {
    assert_in_input(target, w, w.offset(), w.len(), input_len);
    assert_code(target, "warning", w.code(), "gguf::");
    assert_eq!(w.code(), w.kind().code());
    assert_safe_text(target, "warning Display", &w.to_string(), false);
    assert_safe_text(target, "warning message", &w.message(), false);
    assert_safe_text(target, "warning path", &w.path().to_string(), false);
    let help = w.help();
    assert!(!help.is_empty(), "{target}: warning {} has no help", w.code());
    assert_safe_text(target, "warning help", help, true);
}

fn span_inside(target: &str, what: &str, span: Span, outer: Span) {
    assert!(
        span.offset >= outer.offset && span.end() <= outer.end(),
        "{target}: {what} {span:?} is not inside {outer:?}"
    );
}

/// Walks everything a successful parse offers and checks the invariants the docs promise.
pub(crate) fn check_gguf(target: &str, data: &[u8], g: &Gguf<&[u8]>, opts: &ParseOptions) {
    let n = data.len() as u64;
    let dir: &Directory = g.directory();
    let header = *dir.header();
    let limits = opts.limits;
    let profile = opts.profile;
    let lenient = profile == Profile::Lenient;

    // Header.
    assert!(matches!(header.version, 1..=3), "{target}: version {}", header.version);
    if header.version == 1 {
        assert!(opts.allow_v1 && profile != Profile::LlamaCpp, "{target}: v1 accepted");
    }
    if header.endian == Endian::Big {
        assert_ne!(profile, Profile::LlamaCpp, "{target}: llama-cpp accepted a big-endian file");
    }
    assert_eq!(g.version(), header.version);
    assert_eq!(g.endian(), header.endian);
    assert_eq!(dir.kvs().len() as u64, header.kv_count, "{target}: kv count");
    assert_eq!(dir.tensors().len() as u64, header.tensor_count, "{target}: tensor count");
    assert!(header.kv_count <= limits.max_kv_count, "{target}: kv count over the limit");
    assert!(header.tensor_count <= limits.max_tensor_count, "{target}: tensors over the limit");
    assert_eq!(g.kv_len(), dir.kvs().len());

    // Layout.
    let len_size: u64 = if header.version == 1 { 4 } else { 8 };
    assert!(dir.directory_end() <= n, "{target}: directory ends past the input");
    assert_eq!(dir.required_len(), dir.directory_end());
    assert_eq!(g.header_bytes().len() as u64, dir.directory_end(), "{target}: header_bytes");
    assert_eq!(g.bytes().len(), data.len());
    let alignment = dir.alignment();
    assert!(alignment.is_power_of_two(), "{target}: alignment {alignment}");
    assert_eq!(g.alignment(), alignment);
    // Without tensors, the llama-cpp profile does not pad the data section (as current ggml).
    let data_offset = if opts.profile == Profile::LlamaCpp && dir.tensors().is_empty() {
        Some(dir.directory_end())
    } else {
        align_up(dir.directory_end(), alignment.into())
    };
    assert_eq!(
        data_offset,
        Some(dir.data_offset()),
        "{target}: data_offset is not directory_end rounded up to the alignment"
    );
    assert_eq!(g.data_offset(), dir.data_offset());
    if !dir.tensors().is_empty() {
        assert!(dir.data_offset() <= n, "{target}: padding before the data section is missing");
        assert!(dir.data_offset() <= limits.max_header_bytes, "{target}: data_offset over limit");
    }
    let warnings = dir.warnings();
    assert_eq!(g.warnings(), warnings);
    // Lenient parsing warns once per array and kind: warnings cannot outnumber the bytes.
    assert!(warnings.len() as u64 <= n, "{target}: {} warnings for {n} bytes", warnings.len());
    for w in warnings {
        check_warning(target, w, n);
    }

    // Items are back to back: header, pairs, tensor infos, directory end.
    let mut cursor = header.size();
    for (i, kv) in dir.kvs().iter().enumerate() {
        assert_eq!(kv.span().offset, cursor, "{target}: metadata[{i}] does not follow on");
        cursor = kv.span().end();
    }
    for (i, t) in dir.tensors().iter().enumerate() {
        assert_eq!(t.span().offset, cursor, "{target}: tensor[{i}] does not follow on");
        cursor = t.span().end();
    }
    assert_eq!(cursor, dir.directory_end(), "{target}: the last item does not end the directory");

    // Metadata.
    let mut alignment_value = None;
    for (entry, kv) in g.metadata().zip(dir.kvs()) {
        let i = entry.index;
        let what = format!("metadata[{i}]");
        assert!(std::ptr::eq(entry.kv, kv));
        let key_span = kv.key_span();
        span_inside(target, &what, key_span, kv.span());
        assert_eq!(key_span.offset, kv.span().offset + len_size, "{target}: {what} key offset");
        let key = entry.key;
        assert_eq!(Some(key.as_bytes()), key_span.slice(data), "{target}: {what} key bytes");
        assert_subslice(target, &what, data, key.as_bytes());
        assert!(key.len() as u64 <= limits.max_string_len, "{target}: {what} key too long");
        if !lenient {
            assert!(!key.is_empty(), "{target}: {what} empty key accepted");
        }
        if profile == Profile::Strict {
            assert!(key.as_str().is_some(), "{target}: {what} key is not UTF-8");
        }
        let _ = (key.to_string(), key.to_string_lossy(), format!("{key:?}"));
        let value_span = kv.value_span();
        span_inside(target, &what, value_span, kv.span());
        assert_eq!(value_span.end(), kv.span().end(), "{target}: {what} value is not last");
        let value = g.value(kv);
        assert!(same_value(value, entry.value), "{target}: {what} value() vs metadata()");
        assert_eq!(value.value_type(), kv.value_type(), "{target}: {what} value type");
        check_value(target, &what, data, value, value_span, kv.array_head(), opts);
        if key.as_bytes() == b"general.alignment" {
            alignment_value = Some(value);
        }
        // Lookup by key finds this pair (or, with lenient duplicates, the last of its key).
        if let Some(k) = key.as_str() {
            let found =
                g.get_entry(k).unwrap_or_else(|| panic!("{target}: {what} {k:?} not found"));
            assert_eq!(found.key.as_bytes(), key.as_bytes(), "{target}: {what} lookup key");
            if lenient {
                assert!(found.index >= i, "{target}: {what}: an earlier duplicate wins");
            } else {
                assert_eq!(found.index, i, "{target}: {what}: lookup found another pair");
            }
            let got = g.get(k).unwrap_or_else(|| panic!("{target}: {what} get({k:?})"));
            assert!(same_value(got, found.value), "{target}: {what} get() vs get_entry()");
        }
    }
    match alignment_value {
        None => assert_eq!(alignment, DEFAULT_ALIGNMENT, "{target}: default alignment"),
        Some(MetaValue::Uint32(a)) if a.is_power_of_two() && a != 0 => {
            assert_eq!(alignment, a, "{target}: general.alignment not applied")
        }
        Some(_) => assert!(lenient, "{target}: a bad general.alignment was accepted"),
    }

    // Tensors.
    let data_offset = dir.data_offset();
    let mut running = 0u64;
    let mut ranges = Vec::new();
    for (t, info) in g.tensors().zip(dir.tensors()) {
        let i = t.index;
        let what = format!("tensor[{i}]");
        assert!(std::ptr::eq(t.info, info));
        let name_span = info.name_span();
        span_inside(target, &what, name_span, info.span());
        assert_eq!(name_span.offset, info.span().offset + len_size, "{target}: {what} name");
        assert_eq!(Some(t.name.as_bytes()), name_span.slice(data), "{target}: {what} name bytes");
        assert_eq!(g.tensor_name(info).as_bytes(), t.name.as_bytes());
        let name_len = t.name.len() as u64;
        assert!(name_len <= limits.max_string_len, "{target}: {what} name too long");
        match profile {
            Profile::Strict => assert!(name_len <= 64, "{target}: {what} name of {name_len} bytes"),
            Profile::LlamaCpp => {
                assert!(name_len < 64, "{target}: {what} name of {name_len} bytes")
            }
            Profile::Lenient => {}
        }
        if profile == Profile::Strict {
            assert!(t.name.as_str().is_some(), "{target}: {what} name is not UTF-8");
        }
        let dims = info.dims();
        assert!(dims.len() <= 4, "{target}: {what} has {} dims", dims.len());
        let shape = info.shape();
        assert!(shape.iter().eq(dims.iter().rev()), "{target}: {what} shape is not dims reversed");
        let count = tensor_element_count(dims)
            .unwrap_or_else(|e| panic!("{target}: {what} dims {dims:?} accepted but {e}"));
        assert_eq!(info.element_count(), count, "{target}: {what} element_count");
        if profile == Profile::Strict {
            assert!(dims.iter().all(|&d| d > 0), "{target}: {what} zero dimension accepted");
        }
        if profile == Profile::LlamaCpp {
            assert!(dims.iter().all(|&d| d < 1 << 63), "{target}: {what} dim >= 2^63 accepted");
        }
        let ty = info.ggml_type();
        let _ = (ty.name(), ty.to_string(), ty.code(), ty.block_size(), ty.type_size());
        match (info.nbytes(), tensor_nbytes(ty, dims)) {
            (Some(b), Ok(expected)) => assert_eq!(b, expected, "{target}: {what} nbytes"),
            (Some(b), Err(e)) => panic!("{target}: {what} nbytes {b} but tensor_nbytes says {e}"),
            (None, Ok(b)) => panic!("{target}: {what} nbytes unknown but tensor_nbytes is {b}"),
            (None, Err(_)) => assert!(lenient, "{target}: {what} unsized tensor accepted"),
        }
        if !lenient {
            assert!(ty.is_known(), "{target}: {what} unknown type {} accepted", ty.code());
            assert_eq!(info.offset() % u64::from(alignment), 0, "{target}: {what} misaligned");
        }
        let abs = data_offset.checked_add(info.offset());
        assert_eq!(Some(info.abs_offset()), abs, "{target}: {what} abs_offset");
        if let (Some(nbytes), Some(file_size)) = (info.nbytes(), opts.file_size)
            && !lenient
        {
            let end = info.abs_offset().checked_add(nbytes);
            assert!(
                end.is_some_and(|e| e <= file_size),
                "{target}: {what} data ends past the file ({:?} > {file_size})",
                end
            );
        }
        if profile == Profile::LlamaCpp {
            assert_eq!(info.offset(), running, "{target}: {what} not contiguous");
            let size = info.nbytes().unwrap_or_else(|| panic!("{target}: {what} unsized"));
            running = align_up(running + size, alignment.into())
                .unwrap_or_else(|| panic!("{target}: {what} running offset overflows"));
        }
        if let Some(nbytes) = info.nbytes()
            && nbytes > 0
        {
            ranges.push((info.abs_offset(), info.abs_offset() + nbytes, i));
        }
        if let Some(name) = t.name.as_str() {
            let found = g.tensor(name).unwrap_or_else(|| panic!("{target}: {what} not found"));
            assert_eq!(found.name.as_bytes(), t.name.as_bytes(), "{target}: {what} lookup");
            if lenient {
                assert!(found.index >= i, "{target}: {what}: an earlier duplicate wins");
            } else {
                assert_eq!(found.index, i, "{target}: {what}: lookup found another tensor");
            }
        }
    }
    if !lenient {
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "{target}: tensor[{}] and tensor[{}] overlap",
                w[0].2,
                w[1].2
            );
        }
    }
    // The empty key and name are found exactly when the file has them.
    let empty_key = dir.kvs().iter().any(|kv| kv.key_span().len == 0);
    assert_eq!(g.get("").is_some(), empty_key, "{target}: lookup of the empty key");
    let empty_name = dir.tensors().iter().any(|t| t.name_span().len == 0);
    assert_eq!(g.tensor("").is_some(), empty_name, "{target}: lookup of the empty name");
}

/// Checks one value (recursing into nested arrays, at most `max_depth` deep).
fn check_value(
    target: &str,
    what: &str,
    data: &[u8],
    value: MetaValue<'_>,
    span: Span,
    head: Option<sipllm_gguf::ast::ArrayHead>,
    opts: &ParseOptions,
) {
    let limits = opts.limits;
    let payload = span.slice(data).unwrap_or_else(|| panic!("{target}: {what} value span"));
    check_scalar_accessors(&value);
    match value {
        MetaValue::String(s) => {
            assert_eq!(s.as_bytes(), payload, "{target}: {what} string bytes");
            assert_subslice(target, what, data, s.as_bytes());
            assert!(s.len() as u64 <= limits.max_string_len, "{target}: {what} string too long");
            if opts.profile == Profile::Strict {
                assert!(s.as_str().is_some(), "{target}: {what} string is not UTF-8");
            }
            assert_eq!(value.as_str(), s.as_str());
            let _ = s.to_string_lossy();
        }
        MetaValue::Array(a) => {
            let head = head.unwrap_or_else(|| panic!("{target}: {what} array without a head"));
            assert_eq!((a.elem_type(), a.len()), (head.elem_type, head.len), "{target}: {what}");
            assert_eq!(a.payload(), payload, "{target}: {what} array payload");
            let mut elements = 0u64;
            check_array(target, what, data, a, 1, opts, &mut elements);
            // Every element costs at least a byte: walking is linear in the input.
            assert!(
                elements <= payload.len() as u64,
                "{target}: {what}: {elements} elements in {} bytes",
                payload.len()
            );
        }
        MetaValue::Bool(_) => {
            assert_eq!(payload.len(), 1);
            if opts.profile == Profile::Strict {
                assert!(payload[0] <= 1, "{target}: {what} bool byte {:#x}", payload[0]);
            }
        }
        fixed => {
            let size = fixed.value_type().fixed_size().unwrap_or(0);
            assert_eq!(payload.len(), size, "{target}: {what} scalar size");
        }
    }
}

/// Equality with floats compared bit for bit (a NaN equals itself).
fn same_value(a: MetaValue<'_>, b: MetaValue<'_>) -> bool {
    match (a, b) {
        (MetaValue::Float32(x), MetaValue::Float32(y)) => x.to_bits() == y.to_bits(),
        (MetaValue::Float64(x), MetaValue::Float64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn check_scalar_accessors(v: &MetaValue<'_>) {
    let wide = v.as_i128();
    assert_eq!(v.as_u64(), wide.and_then(|x| u64::try_from(x).ok()));
    assert_eq!(v.as_i64(), wide.and_then(|x| i64::try_from(x).ok()));
    let _ = (v.as_f64(), v.as_bool(), v.as_meta_str(), v.as_array(), format!("{v:?}"));
}

/// Walks an array at nesting `depth` (1 for a top-level array).
fn check_array(
    target: &str,
    what: &str,
    data: &[u8],
    a: ArrayView<'_>,
    depth: u32,
    opts: &ParseOptions,
    elements: &mut u64,
) {
    let limits = opts.limits;
    assert!(depth <= limits.max_depth, "{target}: {what} nested {depth} deep");
    assert!(a.len() <= limits.max_array_len, "{target}: {what} array of {} elements", a.len());
    assert_subslice(target, what, data, a.payload());
    let _ = (a.endian(), format!("{a:?}"));
    *elements += a.len();
    let ty = a.elem_type();
    if ty == ValueType::Array {
        assert_ne!(opts.profile, Profile::LlamaCpp, "{target}: {what} nested array accepted");
    }
    let mut seen = 0u64;
    for (i, v) in a.iter().enumerate() {
        assert_eq!(v.value_type(), ty, "{target}: {what}[{i}] element type");
        check_scalar_accessors(&v);
        match v {
            MetaValue::Array(inner) => {
                check_array(target, what, data, inner, depth + 1, opts, elements)
            }
            MetaValue::String(s) => {
                assert!(s.len() as u64 <= limits.max_string_len, "{target}: {what}[{i}] too long");
                if opts.profile == Profile::Strict {
                    assert!(s.as_str().is_some(), "{target}: {what}[{i}] is not UTF-8");
                }
            }
            _ => {}
        }
        seen += 1;
    }
    assert_eq!(seen, a.len(), "{target}: {what}: iteration stopped early");
    assert_eq!(a.iter().size_hint(), (seen as usize, Some(seen as usize)));
    assert_eq!(a.get(a.len()), None);
    if !a.is_empty() {
        assert!(a.get(0).is_some() && a.get(a.len() - 1).is_some(), "{target}: {what} get");
    }
    match a.strings() {
        Some(strings) => {
            assert_eq!(ty, ValueType::String);
            assert_eq!(strings.len() as u64, a.len());
            let mut count = 0u64;
            for (s, v) in strings.zip(a.iter()) {
                assert_eq!(Some(s), v.as_meta_str(), "{target}: {what} strings() vs iter()");
                count += 1;
            }
            assert_eq!(count, a.len(), "{target}: {what}: strings() stopped early");
        }
        None => assert_ne!(ty, ValueType::String, "{target}: {what}: strings() is None"),
    }
    if let Some(size) = ty.fixed_size() {
        assert_eq!(
            a.payload().len() as u64,
            a.len().saturating_mul(size as u64),
            "{target}: {what} fixed-size payload"
        );
        if ty == ValueType::Bool && opts.profile == Profile::Strict {
            assert!(a.payload().iter().all(|&b| b <= 1), "{target}: {what} bool bytes");
        }
    }
    match ty {
        ValueType::Uint8 => typed::<u8>(target, what, a),
        ValueType::Int8 => typed::<i8>(target, what, a),
        ValueType::Uint16 => typed::<u16>(target, what, a),
        ValueType::Int16 => typed::<i16>(target, what, a),
        ValueType::Uint32 => typed::<u32>(target, what, a),
        ValueType::Int32 => typed::<i32>(target, what, a),
        ValueType::Float32 => typed::<f32>(target, what, a),
        ValueType::Bool => typed::<bool>(target, what, a),
        ValueType::Uint64 => typed::<u64>(target, what, a),
        ValueType::Int64 => typed::<i64>(target, what, a),
        ValueType::Float64 => typed::<f64>(target, what, a),
        ValueType::String | ValueType::Array => {
            assert!(a.values::<u8>().is_none() && a.to_vec::<f64>().is_none());
        }
    }
}

/// A fixed-size element type that can be compared bit for bit with a `MetaValue`.
trait Bits: Element {
    fn bits(self) -> u64;
    fn meta_bits(v: MetaValue<'_>) -> Option<u64>;
}

macro_rules! bits {
    ($t:ty, $variant:ident, |$x:ident| $e:expr) => {
        impl Bits for $t {
            fn bits(self) -> u64 {
                let $x = self;
                $e
            }
            fn meta_bits(v: MetaValue<'_>) -> Option<u64> {
                match v {
                    MetaValue::$variant($x) => Some($e),
                    _ => None,
                }
            }
        }
    };
}

bits!(u8, Uint8, |x| x.into());
bits!(i8, Int8, |x| x as u8 as u64);
bits!(u16, Uint16, |x| x.into());
bits!(i16, Int16, |x| x as u16 as u64);
bits!(u32, Uint32, |x| x.into());
bits!(i32, Int32, |x| x as u32 as u64);
bits!(f32, Float32, |x| x.to_bits().into());
bits!(bool, Bool, |x| x.into());
bits!(u64, Uint64, |x| x);
bits!(i64, Int64, |x| x as u64);
bits!(f64, Float64, |x| x.to_bits());

/// `values::<T>()`, `to_vec`, `get(i)` and the generic iterator all agree, from both ends.
fn typed<T: Bits>(target: &str, what: &str, a: ArrayView<'_>) {
    let values = a.values::<T>().unwrap_or_else(|| panic!("{target}: {what} values::<T>()"));
    assert_eq!(values.len() as u64, a.len(), "{target}: {what} values().len()");
    for (i, (x, v)) in values.clone().zip(a.iter()).enumerate() {
        let bits = Some(x.bits());
        assert_eq!(bits, T::meta_bits(v), "{target}: {what}[{i}] values() vs iter()");
        assert_eq!(bits, a.get(i as u64).and_then(T::meta_bits), "{target}: {what}[{i}] get");
    }
    let rev: Vec<u64> = values.clone().rev().map(Bits::bits).collect();
    let fwd: Vec<u64> = values.map(Bits::bits).collect();
    assert!(rev.iter().rev().eq(fwd.iter()), "{target}: {what} values() reversed");
    let v = a.to_vec::<T>().unwrap_or_else(|| panic!("{target}: {what} to_vec"));
    assert!(v.into_iter().map(Bits::bits).eq(fwd), "{target}: {what} to_vec");
}
