//! The `roundtrip` property: the GGUF writer and the parser agree.
//!
//! 1. **Structured**: the input drives a generator of a valid header (any byte order, v2 or
//!    v3, every value type, nested arrays, an alignment, tensors of every known type with
//!    data); `GgufWriter` writes it; the strict parser reads back exactly what was written,
//!    every tensor where the writer's layout says, with its data; and re-writing the parsed
//!    file (`GgufWriter::from_gguf`) reproduces the bytes (the writer's output is canonical).
//! 2. **Re-write**: the input itself, if the strict parser accepts it, is re-written through
//!    `GgufWriter::from_gguf` and parses to the same pairs, tensors and data; re-writing that
//!    output changes nothing. Re-written in the other byte order (every number and array
//!    element re-encoded, v1 lengths widened), it holds the same values too, and swapping back
//!    gives the same-order re-write.

use std::borrow::Cow;

use sipllm_gguf::writer::{GgufWriter, TensorDesc, Value};
use sipllm_gguf::{
    Endian, GgmlType, Gguf, MetaValue, ParseOptions, Profile, ValueType, value::ArrayView,
};

/// Largest file the structured mode writes, and the re-write mode re-writes.
const MAX_FILE: u64 = 1 << 20;

pub(crate) fn roundtrip(data: &[u8]) {
    structured(data);
    rewrite(data);
}

fn strict(len: usize) -> ParseOptions {
    ParseOptions::new(Profile::Strict).with_file_size(Some(len as u64))
}

/// Reads generator decisions from the input; zeros once it is used up.
struct Entropy<'a>(&'a [u8]);

impl Entropy<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.iter_mut().for_each(|b| *b = self.u8());
        a
    }

    fn below(&mut self, n: u8) -> u8 {
        self.u8() % n
    }

    fn text(&mut self, max: u8) -> String {
        let n = usize::from(self.below(max + 1));
        let raw: Vec<u8> = (0..n).map(|_| self.u8()).collect();
        String::from_utf8_lossy(&raw).into_owned()
    }

    /// [`Entropy::text`] for a key or tensor name: the strict parser refuses a NUL byte there
    /// (ggml cuts C strings at it), so NUL becomes `_`.
    fn name_text(&mut self, max: u8) -> String {
        self.text(max).replace('\0', "_")
    }
}

fn gen_value(e: &mut Entropy<'_>, ty: ValueType, depth: u32) -> Value<'static> {
    match ty {
        ValueType::Uint8 => Value::Uint8(e.u8()),
        ValueType::Int8 => Value::Int8(e.u8() as i8),
        ValueType::Uint16 => Value::Uint16(u16::from_le_bytes(e.bytes())),
        ValueType::Int16 => Value::Int16(i16::from_le_bytes(e.bytes())),
        ValueType::Uint32 => Value::Uint32(u32::from_le_bytes(e.bytes())),
        ValueType::Int32 => Value::Int32(i32::from_le_bytes(e.bytes())),
        ValueType::Float32 => Value::Float32(f32::from_le_bytes(e.bytes())),
        ValueType::Bool => Value::Bool(e.u8() & 1 == 1),
        ValueType::String => Value::string(e.text(12)),
        ValueType::Uint64 => Value::Uint64(u64::from_le_bytes(e.bytes())),
        ValueType::Int64 => Value::Int64(i64::from_le_bytes(e.bytes())),
        ValueType::Float64 => Value::Float64(f64::from_le_bytes(e.bytes())),
        ValueType::Array => {
            // Nesting stays within the parser's default depth limit (8).
            let elem_type = if depth >= 3 { scalar_type(e) } else { any_type(e) };
            let n = e.below(6);
            let elems = (0..n)
                .map(|_| {
                    if elem_type == ValueType::Array {
                        gen_value(e, ValueType::Array, depth + 1)
                    } else {
                        gen_value(e, elem_type, depth + 1)
                    }
                })
                .collect();
            Value::Array { elem_type, elems }
        }
    }
}

fn any_type(e: &mut Entropy<'_>) -> ValueType {
    ValueType::ALL[usize::from(e.below(ValueType::ALL.len() as u8))]
}

fn scalar_type(e: &mut Entropy<'_>) -> ValueType {
    match any_type(e) {
        ValueType::Array => ValueType::Uint8,
        t => t,
    }
}

fn structured(data: &[u8]) {
    let target = "roundtrip[structured]";
    let mut e = Entropy(data);
    let endian = if e.u8() & 1 == 1 { Endian::Big } else { Endian::Little };
    let version = 2 + u32::from(e.u8() & 1);
    let mut w = GgufWriter::new().endian(endian).version(version).pad_tensorless(e.u8() & 1 == 1);
    let n_kv = e.below(12);
    for i in 0..n_kv {
        let key = format!("k{i}.{}", e.name_text(6));
        let ty = any_type(&mut e);
        let value = gen_value(&mut e, ty, 1);
        w.set(key.into_bytes(), value);
    }
    if e.u8() & 1 == 1 {
        w.set(&b"general.alignment"[..], Value::Uint32(1 << e.below(9)));
    }
    let known: Vec<GgmlType> = GgmlType::all_known().collect();
    let n_tensors = e.below(6);
    let mut datas = Vec::new();
    for i in 0..n_tensors {
        let ty = known[usize::from(e.u8()) % known.len()];
        let block = ty.block_size().unwrap_or(1);
        // A scalar's row length is an implicit 1: only types of block size 1 can have none.
        let n_dims = usize::from(e.below(5)).max(usize::from(block > 1));
        let mut dims = Vec::with_capacity(n_dims);
        for j in 0..n_dims {
            let extent = 1 + u64::from(e.below(4));
            dims.push(if j == 0 { block * extent } else { extent });
        }
        let name = format!("t{i}.{}", e.name_text(6)).into_bytes();
        let Ok(nbytes) = sipllm_gguf::ggml::tensor_nbytes(ty, &dims) else {
            panic!("{target}: the generator made an unsized tensor {ty} {dims:?}");
        };
        let seed = e.u8();
        datas.push((0..nbytes).map(|k| (k as u8).wrapping_mul(31).wrapping_add(seed)).collect());
        w.add_tensor(TensorDesc { name: Cow::Owned(name), dims, ggml_type: ty });
    }
    let layout = w.layout().unwrap_or_else(|err| panic!("{target}: layout: {err}"));
    if layout.file_size > MAX_FILE {
        return;
    }
    let bytes = w
        .to_bytes(|i| datas.get(i).cloned().unwrap_or_default())
        .unwrap_or_else(|err| panic!("{target}: write: {err}"));
    assert_eq!(bytes.len() as u64, layout.file_size, "{target}: file size vs layout");
    let opts = strict(bytes.len());
    let g = sipllm_gguf::parse_with(&bytes[..], &opts)
        .unwrap_or_else(|err| panic!("{target}: the writer's output does not parse: {err}"));
    crate::gguf::check_gguf(target, &bytes, &g, &opts);
    assert_eq!((g.version(), g.endian()), (version, endian), "{target}: version or byte order");
    assert_eq!(g.kv_len(), w.kvs().len(), "{target}: pair count");
    for (entry, (key, value)) in g.metadata().zip(w.kvs()) {
        assert_eq!(entry.key.as_bytes(), key.as_ref(), "{target}: metadata[{}] key", entry.index);
        assert!(
            written_eq(value, entry.value),
            "{target}: metadata[{}] {:?}: wrote {value:?}, read {:?}",
            entry.index,
            entry.key,
            entry.value
        );
    }
    assert_eq!(g.tensor_infos().len(), w.tensors().len(), "{target}: tensor count");
    for ((t, desc), &(abs, nbytes)) in g.tensors().zip(w.tensors()).zip(&layout.tensors) {
        let what = format!("{target}: tensor[{}]", t.index);
        assert_eq!(t.name.as_bytes(), desc.name.as_ref(), "{what} name");
        assert_eq!((t.info.ggml_type(), t.info.dims()), (desc.ggml_type, &desc.dims[..]), "{what}");
        assert_eq!((t.info.abs_offset(), t.info.nbytes()), (abs, Some(nbytes)), "{what} layout");
        let stored = &bytes[abs as usize..(abs + nbytes) as usize];
        assert!(stored == &datas[t.index][..], "{what}: the data read back differs");
    }
    if !layout.tensors.is_empty() {
        assert_eq!(g.data_offset(), layout.header_len, "{target}: data section start");
    }
    rewrite_is_identity(target, &bytes, &g);
}

/// Re-writing a parsed file (header from the parse, data from its bytes) gives `bytes` back.
fn rewrite_is_identity(target: &str, bytes: &[u8], g: &Gguf<&[u8]>) {
    let again = write_from(target, g);
    assert!(again == bytes, "{target}: re-writing the writer's own output changed it");
}

fn write_from(target: &str, g: &Gguf<&[u8]>) -> Vec<u8> {
    write_in(target, g, g.endian())
}

/// `g` re-written through `GgufWriter::from_gguf` in byte order `endian` (the other order
/// re-encodes every number and array element instead of copying them).
fn write_in(target: &str, g: &Gguf<&[u8]>, endian: Endian) -> Vec<u8> {
    let w = GgufWriter::from_gguf(g).endian(endian);
    let data = |i: usize| {
        let t = &g.tensor_infos()[i];
        let (start, n) = (t.abs_offset() as usize, t.nbytes().unwrap_or(0) as usize);
        g.bytes().get(start..start + n).map(<[u8]>::to_vec).unwrap_or_default()
    };
    w.to_bytes(data).unwrap_or_else(|err| panic!("{target}: re-write: {err}"))
}

fn rewrite(data: &[u8]) {
    let opts = strict(data.len()).with_v1(true);
    let Ok(g) = sipllm_gguf::parse_with(data, &opts) else { return };
    let Ok(layout) = GgufWriter::from_gguf(&g).layout() else {
        panic!("roundtrip[rewrite]: a file the strict parser accepts cannot be re-written");
    };
    if layout.file_size > MAX_FILE.max(data.len() as u64) {
        return;
    }
    let other = match g.endian() {
        Endian::Little => Endian::Big,
        Endian::Big => Endian::Little,
    };
    for (target, endian) in [("roundtrip[rewrite]", g.endian()), ("roundtrip[byte-swap]", other)] {
        let out = write_in(target, &g, endian);
        let h = same_content(target, &g, &out, endian);
        if endian == g.endian() {
            rewrite_is_identity(target, &out, &h);
        } else {
            // Swapping back gives what a same-order re-write gives.
            let back = write_in(target, &h, g.endian());
            assert!(back == write_from(target, &g), "{target}: swapping twice changed the file");
        }
    }
}

/// Parses the re-written `out` and checks it holds what `g` holds, in byte order `endian`.
fn same_content<'o>(
    target: &str,
    g: &Gguf<&[u8]>,
    out: &'o [u8],
    endian: Endian,
) -> Gguf<&'o [u8]> {
    let opts = strict(out.len());
    let h = sipllm_gguf::parse_with(out, &opts)
        .unwrap_or_else(|err| panic!("{target}: the re-written file does not parse: {err}"));
    crate::gguf::check_gguf(target, out, &h, &opts);
    let version = if g.version() == 1 { 3 } else { g.version() };
    assert_eq!((h.version(), h.endian()), (version, endian), "{target}: version or order");
    assert_eq!(h.kv_len(), g.kv_len(), "{target}: pair count");
    for (a, b) in g.metadata().zip(h.metadata()) {
        assert_eq!(a.key.as_bytes(), b.key.as_bytes(), "{target}: metadata[{}] key", a.index);
        assert!(read_eq(a.value, b.value), "{target}: metadata[{}] {:?} changed", a.index, a.key);
    }
    assert_eq!(g.tensor_infos().len(), h.tensor_infos().len(), "{target}: tensor count");
    for (a, b) in g.tensors().zip(h.tensors()) {
        let what = format!("{target}: tensor[{}]", a.index);
        assert_eq!(a.name.as_bytes(), b.name.as_bytes(), "{what} name");
        let (x, y) = (a.info, b.info);
        assert_eq!((x.ggml_type(), x.dims(), x.nbytes()), (y.ggml_type(), y.dims(), y.nbytes()));
        let slice = |g: &Gguf<&[u8]>, t: &sipllm_gguf::TensorInfo| {
            let (s, n) = (t.abs_offset() as usize, t.nbytes().unwrap_or(0) as usize);
            g.bytes().get(s..s + n).map(<[u8]>::to_vec)
        };
        assert_eq!(slice(g, x), slice(&h, y), "{what}: data changed");
    }
    h
}

/// A written value equals what was read (floats bit for bit).
fn written_eq(w: &Value<'_>, r: MetaValue<'_>) -> bool {
    match (w, r) {
        (Value::Array { elem_type, elems }, MetaValue::Array(a)) => {
            *elem_type == a.elem_type()
                && elems.len() as u64 == a.len()
                && elems.iter().zip(a.iter()).all(|(x, y)| written_eq(x, y))
        }
        (Value::View(v), MetaValue::Array(a)) => views_eq(*v, a),
        (Value::String(s), MetaValue::String(t)) => s.as_ref() == t.as_bytes(),
        (Value::Float32(x), MetaValue::Float32(y)) => x.to_bits() == y.to_bits(),
        (Value::Float64(x), MetaValue::Float64(y)) => x.to_bits() == y.to_bits(),
        (w, r) => *w == Value::from(r),
    }
}

/// Two parsed values are equal (floats bit for bit, arrays element by element whatever
/// their byte order or length width).
fn read_eq(a: MetaValue<'_>, b: MetaValue<'_>) -> bool {
    match (a, b) {
        (MetaValue::Array(x), MetaValue::Array(y)) => views_eq(x, y),
        (MetaValue::Float32(x), MetaValue::Float32(y)) => x.to_bits() == y.to_bits(),
        (MetaValue::Float64(x), MetaValue::Float64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn views_eq(a: ArrayView<'_>, b: ArrayView<'_>) -> bool {
    a.elem_type() == b.elem_type()
        && a.len() == b.len()
        && a.iter().zip(b.iter()).all(|(x, y)| read_eq(x, y))
        && a.iter().count() == b.iter().count()
}
