//! The `weight_source` property: open a model held in memory through the streaming crate's
//! format-sniffing [`Model::from_source`] (what `open_model_from` boxes), then read every
//! tensor and every metadata value back through the seam and compare with the input bytes
//! and with the whole-slice parse.

use std::sync::Arc;

use sipllm_gguf::{ParseOptions, Profile};
use sipllm_streaming::{
    MemSource, Meta, Model, OpenOptions, SourceTensor, StreamError, StreamErrorKind, WeightSource,
};

use crate::text::{assert_code, assert_safe_text};

/// Tensors up to this size are read whole (and compared); larger ones only in part.
const READ_CAP: u64 = 1 << 20;

/// A window that varies with the input (1 to 61 bytes), so the header reader refills many
/// times, and the default 64 KiB window.
fn windows(len: usize) -> [usize; 2] {
    [1 + len % 61, sipllm_streaming::DEFAULT_WINDOW]
}

/// What a tensor list says, for comparisons.
type Facts = Vec<(String, sipllm_gguf::GgmlType, Vec<u64>, u64, Option<u64>)>;

fn facts(tensors: &[SourceTensor]) -> Facts {
    tensors
        .iter()
        .map(|t| (t.name.clone(), t.ggml_type, t.shape.to_vec(), t.abs_offset, t.nbytes))
        .collect()
}

pub(crate) fn weight_source(data: &[u8]) {
    let n = data.len() as u64;
    let magic = data.first_chunk::<4>().copied();
    let is_gguf = magic == Some(sipllm_gguf::MAGIC);
    // The GGUF profile matters only to GGUF files.
    let profiles: &[Profile] =
        if is_gguf { &[Profile::Strict, Profile::Lenient] } else { &[Profile::Strict] };
    for &profile in profiles {
        let parse = ParseOptions::new(profile).with_v1(true);
        let mut first: Option<Result<Facts, String>> = None;
        for window in windows(data.len()) {
            let target = format!("weight_source[{}, window {window}]", profile.name());
            let opts = OpenOptions::default().with_parse(parse).with_window(window);
            let opened = Model::from_source(MemSource::new(Arc::<[u8]>::from(data)), &opts);
            match magic {
                None => {
                    let e = opened.as_ref().err();
                    let too_short = matches!(e.map(StreamError::kind), Some(StreamErrorKind::TooShort { len, .. }) if *len == n);
                    assert!(too_short, "{target}: a {n}-byte input: {e:?}");
                }
                Some(m) if m == sipllm_gguf::MAGIC => gguf(&target, data, &opened, &opts),
                Some(m) if m == sipllm_llmw::MAGIC => llmw(&target, data, &opened, &opts),
                Some(m) => {
                    let e = opened.as_ref().err();
                    let unknown = matches!(e.map(StreamError::kind), Some(StreamErrorKind::UnknownMagic { found, .. }) if *found == m);
                    assert!(unknown, "{target}: magic {m:?}: {e:?}");
                }
            }
            if let Err(e) = &opened {
                check_stream_error(&target, e);
            }
            // Every window gives the same outcome.
            let outcome = opened.map(|m| facts(m.tensors())).map_err(|e| e.to_string());
            match &first {
                None => first = Some(outcome),
                Some(prev) => assert_eq!(prev, &outcome, "{target}: depends on the window"),
            }
        }
    }
}

fn gguf(target: &str, data: &[u8], opened: &Result<Model, StreamError>, opts: &OpenOptions) {
    let n = data.len() as u64;
    let expected = sipllm_gguf::parse_with(data, &opts.parse.with_file_size(Some(n)));
    match (opened, &expected) {
        (Ok(model), Ok(g)) => {
            let file =
                model.gguf().unwrap_or_else(|| panic!("{target}: GGUF opened as another format"));
            assert_eq!(
                file.gguf().directory(),
                g.directory(),
                "{target}: the streamed header differs from the whole-slice parse"
            );
            let want: Facts = g
                .tensors()
                .map(|t| {
                    let shape = t.info.shape().to_vec();
                    let name = t.name.to_string_lossy().into_owned();
                    (name, t.info.ggml_type(), shape, t.info.abs_offset(), t.info.nbytes())
                })
                .collect();
            assert_eq!(
                facts(model.tensors()),
                want,
                "{target}: tensor list differs from the parser's"
            );
            // Lookup by name agrees with the parser's (also for lenient duplicates).
            for t in g.tensors() {
                let Some(name) = t.name.as_str() else { continue };
                let Some(parsed) = g.tensor(name) else { continue };
                let found = model.find(name).map(|f| f as *const SourceTensor);
                let want = model.tensors().get(parsed.index).map(|f| f as *const SourceTensor);
                assert_eq!(found, want, "{target}: find({name:?}) disagrees with the parser");
            }
            let source = model.as_weight_source();
            check_reads(target, data, source);
            check_meta(target, source);
            // Each value through the seam is the parser's value, collapsed.
            for e in g.metadata() {
                let Some(key) = e.key.as_str() else { continue };
                let last = g.get_entry(key).map(|x| x.value).unwrap_or(e.value);
                let want = Meta::from_gguf(e.key, last);
                let got = source.meta(key).unwrap_or_else(|| panic!("{target}: meta({key:?})"));
                assert!(
                    same_meta(&got, &want),
                    "{target}: meta({key:?}) = {got:?}, parsed {want:?}"
                );
            }
        }
        (Err(e), Err(pe)) => {
            assert_eq!(e.parse_error(), Some(pe), "{target}: a different parse error");
        }
        (Err(e), Ok(g)) => {
            // Only the lenient profile lists tensors that end past the file; the store refuses
            // them, naming the first.
            let StreamErrorKind::TensorOutOfBounds { tensor, .. } = e.kind() else {
                panic!("{target}: open failed but the parse succeeded: {e}");
            };
            assert_eq!(opts.parse.profile, Profile::Lenient, "{target}: {e}");
            let first_bad = g.tensor_infos().iter().find(|t| {
                t.nbytes().is_some_and(|b| t.abs_offset().checked_add(b).is_none_or(|e| e > n))
            });
            let first_bad =
                first_bad.unwrap_or_else(|| panic!("{target}: no tensor is out of bounds: {e}"));
            assert_eq!(*tensor, g.tensor_name(first_bad).to_string_lossy(), "{target}");
        }
        (Ok(_), Err(pe)) => panic!("{target}: open succeeded but the parse failed: {pe}"),
    }
}

fn llmw(target: &str, data: &[u8], opened: &Result<Model, StreamError>, opts: &OpenOptions) {
    let n = data.len() as u64;
    let expected = sipllm_llmw::parse_with(data, &opts.llmw.with_file_size(Some(n)));
    match (opened, &expected) {
        (Ok(model), Ok(f)) => {
            let file =
                model.llmw().unwrap_or_else(|| panic!("{target}: .llmw opened as another format"));
            assert_eq!(
                file.llmw().directory(),
                f.directory(),
                "{target}: the streamed header differs from the whole-slice parse"
            );
            let want: Facts = f
                .tensors()
                .map(|t| {
                    let i = t.info;
                    (t.name.to_owned(), i.dtype(), i.dims().to_vec(), i.offset(), Some(i.nbytes()))
                })
                .collect();
            assert_eq!(
                facts(model.tensors()),
                want,
                "{target}: tensor list differs from the parser's"
            );
            let source = model.as_weight_source();
            check_reads(target, data, source);
            check_meta(target, source);
            for e in f.metadata() {
                let got =
                    source.meta(e.key).unwrap_or_else(|| panic!("{target}: meta({:?})", e.key));
                let ok = match (e.value, &got) {
                    (sipllm_llmw::MetaValue::I64(v), Meta::Int(x)) => i128::from(v) == *x,
                    (sipllm_llmw::MetaValue::F64(v), Meta::Float(x)) => v.to_bits() == x.to_bits(),
                    (sipllm_llmw::MetaValue::Str(v), Meta::Str(x)) => v.as_bytes() == x.as_bytes(),
                    (sipllm_llmw::MetaValue::I64Array(v), Meta::Ints(x)) => {
                        v.iter().map(i128::from).eq(x.iter())
                    }
                    (sipllm_llmw::MetaValue::F64Array(v), Meta::Floats(x)) => {
                        v.iter().map(f64::to_bits).eq(x.iter().map(f64::to_bits))
                    }
                    (sipllm_llmw::MetaValue::StrArray(v), Meta::Strs(x)) => {
                        v.iter().map(str::as_bytes).eq(x.iter().map(|t| t.as_bytes()))
                    }
                    _ => false,
                };
                assert!(ok, "{target}: meta({:?}) = {got:?}, parsed {:?}", e.key, e.value);
            }
        }
        (Err(e), Err(pe)) => {
            assert_eq!(e.llmw_error(), Some(pe), "{target}: a different parse error");
        }
        (Err(e), Ok(_)) => panic!("{target}: open failed but the parse succeeded: {e}"),
        (Ok(_), Err(pe)) => panic!("{target}: open succeeded but the parse failed: {pe}"),
    }
}

/// Equality of collapsed values, floats bit for bit (lists element by element).
fn same_meta(a: &Meta<'_>, b: &Meta<'_>) -> bool {
    match (a, b) {
        (Meta::Float(x), Meta::Float(y)) => x.to_bits() == y.to_bits(),
        (Meta::Floats(x), Meta::Floats(y)) => {
            x.len() == y.len() && x.iter().map(f64::to_bits).eq(y.iter().map(f64::to_bits))
        }
        (Meta::Ints(x), Meta::Ints(y)) => x.len() == y.len() && x.iter().eq(y.iter()),
        (Meta::Strs(x), Meta::Strs(y)) => x.len() == y.len() && x.iter().eq(y.iter()),
        (Meta::Array(x), Meta::Array(y)) => x.payload() == y.payload() && x.len() == y.len(),
        _ => a == b,
    }
}

fn check_reads(target: &str, data: &[u8], src: &dyn WeightSource) {
    let n = data.len() as u64;
    assert_eq!(src.file_size(), n, "{target}: file_size");
    for (i, t) in src.tensors().iter().enumerate() {
        let what = format!("{target}: tensor[{i}] {:?}", t.name);
        // Lookup finds a tensor of this name, one of the source's own (which one of
        // duplicates, only a lenient GGUF has them, is checked against the parser).
        let found = src.find(&t.name).unwrap_or_else(|| panic!("{what}: not found"));
        assert_eq!(found.name, t.name, "{what}: find returned another name");
        assert!(src.tensors().iter().any(|u| std::ptr::eq(u, found)), "{what}: find");
        assert_eq!(t.element_count(), t.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)));
        let Some(nbytes) = t.nbytes else {
            let e = src.read_raw(t, &mut []).expect_err("reading a tensor of unknown size");
            check_stream_error(&what, &e);
            assert!(
                matches!(
                    e.kind(),
                    StreamErrorKind::Tensor(sipllm_streaming::TensorError::UnknownSize { .. })
                ),
                "{what}: {e}"
            );
            assert!(t.byte_size().is_err() && t.byte_len().is_err());
            continue;
        };
        assert_eq!(t.byte_size().ok(), Some(nbytes));
        let end = t.end().unwrap_or_else(|| panic!("{what}: end overflows"));
        assert!(end <= n, "{what}: listed although it ends at {end}, past {n}");
        let expected = &data[t.abs_offset as usize..end as usize];
        if nbytes <= READ_CAP {
            let mut buf = vec![0xa5u8; nbytes as usize];
            src.read_raw(t, &mut buf).unwrap_or_else(|e| panic!("{what}: read_raw: {e}"));
            assert!(buf == expected, "{what}: read_raw returned other bytes than the input's");
            // A longer buffer gets the bytes in its prefix and keeps its tail; a shorter one is
            // refused, without reading.
            let mut longer = vec![0x5au8; nbytes as usize + 1];
            let got = src.read_raw(t, &mut longer).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got as u64, nbytes, "{what}: read_raw's count");
            assert!(longer[..got] == *expected && longer[got] == 0x5a, "{what}: prefix read");
            if nbytes > 0 {
                let mut short = vec![0u8; nbytes as usize - 1];
                let e = src.read_raw(t, &mut short).expect_err("a buffer too short");
                check_stream_error(&what, &e);
                assert!(
                    matches!(
                        e.kind(),
                        StreamErrorKind::Tensor(sipllm_streaming::TensorError::SizeMismatch { .. })
                    ),
                    "{what}: {e}"
                );
            }
        }
        // A part of the tensor, by offset: its second half (at most READ_CAP bytes).
        let half = nbytes / 2;
        let part_len = (nbytes - half).min(READ_CAP) as usize;
        let mut part = vec![0u8; part_len];
        src.read_raw_at(t.abs_offset + half, &mut part)
            .unwrap_or_else(|e| panic!("{what}: read_raw_at: {e}"));
        let at = (t.abs_offset + half) as usize;
        assert!(part == data[at..at + part_len], "{what}: read_raw_at returned other bytes");
        src.prefetch(t).unwrap_or_else(|e| panic!("{what}: prefetch: {e}"));
        // A tensor info that is not this source's is refused.
        let mut stranger = t.clone();
        stranger.abs_offset = stranger.abs_offset.wrapping_add(1);
        if !src.tensors().contains(&stranger) {
            let e = src.read_raw(&stranger, &mut vec![0; nbytes.min(READ_CAP) as usize]);
            let e = e.expect_err("reading a tensor of another source");
            check_stream_error(&what, &e);
        }
    }
    // Reads outside the file are refused; an empty read at the end is fine.
    for (offset, len) in [(n, 1usize), (n.saturating_sub(1), 2), (u64::MAX, 1), (u64::MAX - 1, 2)] {
        if offset.checked_add(len as u64).is_some_and(|end| end <= n) {
            continue;
        }
        let e = src.read_raw_at(offset, &mut vec![0; len]).expect_err("read outside the file");
        check_stream_error(target, &e);
        assert!(matches!(e.kind(), StreamErrorKind::OutOfBounds { .. }), "{target}: {e}");
    }
    src.read_raw_at(n, &mut []).unwrap_or_else(|e| panic!("{target}: empty read at the end: {e}"));
}

fn check_stream_error(target: &str, e: &StreamError) {
    let code = e.code();
    if let Some(pe) = e.parse_error() {
        assert_eq!(code, pe.code(), "{target}: a parse error keeps the parser's code");
        crate::gguf::check_error(target, pe, u64::MAX);
    } else if let Some(pe) = e.llmw_error() {
        assert_eq!(code, pe.code(), "{target}: a parse error keeps the parser's code");
        crate::llmw::check_error(target, pe, u64::MAX);
    } else {
        assert_code(target, "stream error", code, "streaming::");
    }
    assert_safe_text(target, "stream error Display", &e.to_string(), false);
    let help = e.help();
    assert!(!help.is_empty(), "{target}: {code} has no help");
    assert_safe_text(target, "stream error help", help, true);
    let _ = (e.path(), e.offset(), format!("{e:?}"));
}

/// Every metadata pair through the seam: lookups, the collapsed values, the typed accessors,
/// lists iterated to the end.
fn check_meta(target: &str, src: &dyn WeightSource) {
    let pairs: Vec<_> = src.metadata().collect();
    let keys: Vec<_> = src.meta_keys().collect();
    assert!(keys.iter().eq(pairs.iter().map(|(k, _)| k)), "{target}: meta_keys()");
    for (i, (key, meta)) in pairs.iter().enumerate() {
        let what = format!("{target}: metadata[{i}] {key:?}");
        assert_safe_text(&what, "key Debug", &format!("{key:?}"), false);
        walk_meta(&what, meta);
        let Some(k) = key.as_str() else { continue };
        // Lookup finds the last pair with this key (duplicates exist only when lenient).
        let last = pairs.iter().rposition(|(k2, _)| k2 == key).unwrap_or(i);
        let found = src.meta(k).unwrap_or_else(|| panic!("{what}: meta() finds nothing"));
        assert!(same_meta(&found, &pairs[last].1), "{what}: meta() is not the last pair's value");
        typed_accessors(&what, src, k, &found);
    }
}

fn walk_meta(what: &str, meta: &Meta<'_>) {
    let _ = (meta.as_int(), meta.as_float(), meta.as_bool(), meta.as_str(), format!("{meta:?}"));
    match meta {
        Meta::Ints(list) => {
            let n = list.iter().count();
            assert_eq!(n, list.len(), "{what}: integer list length");
            assert_eq!(list.is_empty(), n == 0);
            if n > 0 {
                assert_eq!(list.get(n - 1), list.iter().last(), "{what}: get(last)");
            }
            assert_eq!(list.get(n), None);
            match list.to_vec::<i64>() {
                Ok(v) => assert_eq!(v.len(), n),
                Err(e) => check_stream_error(what, &e),
            }
            let _ = (list.key(), list.as_gguf());
        }
        Meta::Floats(list) => {
            let n = list.iter().count();
            assert_eq!(n, list.len(), "{what}: float list length");
            assert_eq!(list.to_vec().len(), n);
            assert_eq!(list.to_vec_f32().len(), n);
            if n > 0 {
                let (a, b) = (list.get(n - 1), list.iter().last());
                assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{what}: get(last)");
            }
            assert_eq!(list.get(n), None);
        }
        Meta::Strs(list) => {
            let n = list.iter().count();
            assert_eq!(n, list.len(), "{what}: string list length");
            if n > 0 {
                assert_eq!(list.get(n - 1), list.iter().last(), "{what}: get(last)");
            }
            assert_eq!(list.get(n), None);
            match list.to_vec() {
                Ok(v) => assert_eq!(v.len(), n),
                Err(e) => check_stream_error(what, &e),
            }
        }
        Meta::Array(view) => {
            assert_eq!(view.iter().count() as u64, view.len(), "{what}: array length");
        }
        _ => {}
    }
}

fn typed_accessors(what: &str, src: &dyn WeightSource, key: &str, meta: &Meta<'_>) {
    let int = meta.as_int();
    check_result(what, src.meta_int(key), int.and_then(|v| i64::try_from(v).ok()));
    check_result(what, src.meta_uint(key), int.and_then(|v| u64::try_from(v).ok()));
    check_result(what, src.meta_bool(key), meta.as_bool());
    let float = src.meta_float(key);
    assert_eq!(float.is_ok(), meta.as_float().is_some(), "{what}: meta_float");
    if let Err(e) = float {
        check_stream_error(what, &e);
    }
    check_result(what, src.meta_str(key).map(str::to_owned), meta.as_str().map(str::to_owned));
    for (r, kind) in [
        (src.meta_ints(key).map(|l| l.len()), matches!(meta, Meta::Ints(_))),
        (src.meta_floats(key).map(|l| l.len()), matches!(meta, Meta::Floats(_))),
        (src.meta_strs(key).map(|l| l.len()), matches!(meta, Meta::Strs(_))),
    ] {
        assert_eq!(r.is_ok(), kind, "{what}: list accessor");
        if let Err(e) = r {
            check_stream_error(what, &e);
        }
    }
    let missing = format!("{key}\u{0}missing");
    if src.meta(&missing).is_none() {
        let e = src.meta_int(&missing).expect_err("a missing key");
        assert!(
            matches!(e.kind(), StreamErrorKind::Meta(sipllm_streaming::MetaError::Missing { .. })),
            "{what}: {e}"
        );
        check_stream_error(what, &e);
    }
}

fn check_result<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: Result<T, StreamError>,
    want: Option<T>,
) {
    match (got, want) {
        (Ok(a), Some(b)) => assert_eq!(a, b, "{what}: typed accessor"),
        (Err(e), None) => check_stream_error(what, &e),
        (Ok(a), None) => panic!("{what}: typed accessor returned {a:?}, expected an error"),
        (Err(e), Some(b)) => panic!("{what}: typed accessor failed ({e}), expected {b:?}"),
    }
}
