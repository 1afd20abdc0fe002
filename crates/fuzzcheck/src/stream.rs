//! The `weight_source` property: open a model held in memory through the streaming crate,
//! then read every tensor and every metadata value through the seam, and compare with the
//! input bytes.

use std::sync::Arc;

use sipllm_gguf::{ParseOptions, Profile};
use sipllm_streaming::{
    GgufFile, MemSource, Meta, OpenOptions, StreamError, TensorInfo, TensorStore, WeightSource,
};

use crate::text::{assert_code, assert_safe_text};

/// Tensors up to this size are read whole (and compared); larger ones only in part.
const READ_CAP: u64 = 1 << 20;

pub(crate) fn weight_source(data: &[u8]) {
    if data.starts_with(&sipllm_llmw::MAGIC) {
        llmw_source(data);
    } else {
        gguf_source(data);
    }
}

/// A window that varies with the input (1 to 61 bytes), so the header reader refills many
/// times, plus the default 64 KiB window.
fn windows(len: usize) -> [usize; 2] {
    [1 + len % 61, sipllm_streaming::DEFAULT_WINDOW]
}

fn gguf_source(data: &[u8]) {
    let n = data.len() as u64;
    for profile in [Profile::Strict, Profile::Lenient] {
        let parse = ParseOptions::new(profile).with_v1(true);
        let expected = sipllm_gguf::parse_with(data, &parse.with_file_size(Some(n)));
        let mut first: Option<Result<Vec<TensorInfo>, String>> = None;
        for window in windows(data.len()) {
            let target = format!("weight_source[gguf {}, window {window}]", profile.name());
            let opts = OpenOptions::default().with_parse(parse).with_window(window);
            let opened = GgufFile::from_source(MemSource::new(Arc::<[u8]>::from(data)), &opts);
            match (&opened, &expected) {
                (Ok(file), Ok(g)) => {
                    assert_eq!(
                        file.gguf().directory(),
                        g.directory(),
                        "{target}: the streamed header differs from the whole-slice parse"
                    );
                    let hs = file.header_stats();
                    assert!(hs.bytes_read <= n, "{target}: read {} of {n} bytes", hs.bytes_read);
                    let want: Vec<_> = g
                        .tensors()
                        .map(|t| {
                            (
                                t.name.to_string_lossy().into_owned(),
                                t.info.ggml_type(),
                                t.info.shape(),
                                t.info.abs_offset(),
                                t.info.nbytes(),
                            )
                        })
                        .collect();
                    let got: Vec<_> = file
                        .tensors()
                        .iter()
                        .map(|t| {
                            (t.name.clone(), t.ggml_type, t.shape.clone(), t.abs_offset, t.nbytes)
                        })
                        .collect();
                    assert_eq!(got, want, "{target}: tensor list differs from the parser's");
                    // Lookup by name agrees with the parser's (also for lenient duplicates).
                    for t in g.tensors() {
                        let Some(name) = t.name.as_str() else { continue };
                        let Some(parsed) = g.tensor(name) else { continue };
                        let found = file.find(name).map(|f| f as *const TensorInfo);
                        let want = file.tensors().get(parsed.index).map(|f| f as *const TensorInfo);
                        assert_eq!(
                            found, want,
                            "{target}: find({name:?}) disagrees with the parser"
                        );
                    }
                    check_reads(&target, data, file as &dyn WeightSource);
                    check_meta(&target, file);
                }
                (Err(e), Err(pe)) => {
                    check_stream_error(&target, e);
                    assert_eq!(e.parse_error(), Some(pe), "{target}: a different parse error");
                }
                (Err(e), Ok(g)) => {
                    // Only the lenient profile lists tensors that end past the file; the store
                    // refuses them, naming the first.
                    check_stream_error(&target, e);
                    let StreamError::TensorOutOfBounds { tensor, .. } = e else {
                        panic!("{target}: open failed but the parse succeeded: {e}");
                    };
                    assert_eq!(profile, Profile::Lenient, "{target}: {e}");
                    let first_bad = g.tensor_infos().iter().find(|t| {
                        t.nbytes()
                            .is_some_and(|b| t.abs_offset().checked_add(b).is_none_or(|e| e > n))
                    });
                    let first_bad = first_bad
                        .unwrap_or_else(|| panic!("{target}: no tensor is out of bounds: {e}"));
                    assert_eq!(*tensor, g.tensor_name(first_bad).to_string_lossy(), "{target}");
                }
                (Ok(_), Err(pe)) => panic!("{target}: open succeeded but the parse failed: {pe}"),
            }
            // Every window gives the same outcome.
            let outcome = opened.map(|f| f.tensors().to_vec()).map_err(|e| e.to_string());
            match &first {
                None => first = Some(outcome),
                Some(prev) => assert_eq!(prev, &outcome, "{target}: depends on the window"),
            }
        }
    }
}

fn llmw_source(data: &[u8]) {
    let target = "weight_source[llmw]";
    let Ok(f) = sipllm_llmw::parse(data) else { return };
    // Until the streaming crate opens `.llmw` itself, assemble the format-neutral store the
    // way its weight source will: tensors row-major, absolute offsets, known sizes.
    let tensors: Vec<TensorInfo> = f
        .tensors()
        .map(|t| TensorInfo {
            name: t.name.to_owned(),
            ggml_type: t.info.dtype(),
            shape: t.info.dims().iter().copied().collect(),
            abs_offset: t.info.offset(),
            nbytes: Some(t.info.nbytes()),
        })
        .collect();
    let store = TensorStore::new(Box::new(MemSource::new(data.to_vec())), None, tensors, 1)
        .unwrap_or_else(|e| panic!("{target}: a parsed .llmw does not fit its store: {e}"));
    check_reads(target, data, &store);
    for t in f.tensors() {
        let s = store.find(t.name).unwrap_or_else(|| panic!("{target}: {:?} not found", t.name));
        assert_eq!(s.abs_offset, t.info.offset());
    }
}

/// The read half of a weight source, for the seam and for the bare store alike.
trait Reads {
    fn tensors(&self) -> &[TensorInfo];
    fn find(&self, name: &str) -> Option<&TensorInfo>;
    fn read_raw(&self, t: &TensorInfo, dst: &mut [u8]) -> Result<(), StreamError>;
    fn read_raw_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError>;
    fn prefetch(&self, t: &TensorInfo) -> Result<(), StreamError>;
    fn file_size(&self) -> u64;
}

impl Reads for dyn WeightSource + '_ {
    fn tensors(&self) -> &[TensorInfo] {
        WeightSource::tensors(self)
    }
    fn find(&self, name: &str) -> Option<&TensorInfo> {
        WeightSource::find(self, name)
    }
    fn read_raw(&self, t: &TensorInfo, dst: &mut [u8]) -> Result<(), StreamError> {
        WeightSource::read_raw(self, t, dst)
    }
    fn read_raw_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        WeightSource::read_raw_at(self, offset, dst)
    }
    fn prefetch(&self, t: &TensorInfo) -> Result<(), StreamError> {
        WeightSource::prefetch(self, t)
    }
    fn file_size(&self) -> u64 {
        WeightSource::file_size(self)
    }
}

impl Reads for TensorStore {
    fn tensors(&self) -> &[TensorInfo] {
        TensorStore::tensors(self)
    }
    fn find(&self, name: &str) -> Option<&TensorInfo> {
        TensorStore::find(self, name)
    }
    fn read_raw(&self, t: &TensorInfo, dst: &mut [u8]) -> Result<(), StreamError> {
        TensorStore::read_raw(self, t, dst)
    }
    fn read_raw_at(&self, offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        TensorStore::read_raw_at(self, offset, dst)
    }
    fn prefetch(&self, t: &TensorInfo) -> Result<(), StreamError> {
        TensorStore::prefetch(self, t)
    }
    fn file_size(&self) -> u64 {
        TensorStore::file_size(self)
    }
}

fn check_reads<R: Reads + ?Sized>(target: &str, data: &[u8], src: &R) {
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
            assert!(matches!(e, StreamError::UnknownSize { .. }), "{what}: {e}");
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
            // A buffer of the wrong size is refused, without reading.
            let mut wrong = vec![0u8; nbytes as usize + 1];
            let e = src.read_raw(t, &mut wrong).expect_err("a buffer of the wrong size");
            check_stream_error(&what, &e);
            assert!(matches!(e, StreamError::SizeMismatch { .. }), "{what}: {e}");
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
        assert!(matches!(e, StreamError::OutOfBounds { .. }), "{target}: {e}");
    }
    src.read_raw_at(n, &mut []).unwrap_or_else(|e| panic!("{target}: empty read at the end: {e}"));
}

fn check_stream_error(target: &str, e: &StreamError) {
    let code = e.code();
    if let Some(pe) = e.parse_error() {
        assert_eq!(code, pe.code(), "{target}: a parse error keeps the parser's code");
        crate::gguf::check_error(target, pe, u64::MAX);
    } else {
        assert_code(target, "stream error", code, "stream::");
    }
    assert_safe_text(target, "stream error Display", &e.to_string(), false);
    let help = e.help();
    assert!(!help.is_empty(), "{target}: {code} has no help");
    assert_safe_text(target, "stream error help", &help, true);
    let _ = (e.path(), e.offset(), format!("{e:?}"));
}

/// Every metadata pair through the seam: lookups, the collapsed values, the typed accessors,
/// lists iterated to the end.
fn check_meta(target: &str, src: &GgufFile) {
    let g = src.gguf();
    let pairs: Vec<_> = src.metadata().collect();
    assert_eq!(pairs.len(), g.kv_len(), "{target}: metadata() length");
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
        assert_eq!(found.kind(), pairs[last].1.kind(), "{what}: meta() kind");
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

fn typed_accessors(what: &str, src: &GgufFile, key: &str, meta: &Meta<'_>) {
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
        assert!(matches!(e, StreamError::MetaMissing { .. }), "{what}: {e}");
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
