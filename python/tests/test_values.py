"""Tensor values against gguf-py 0.19.0's ``gguf.quants.dequantize``, bit for bit.

``sipllm_gguf.quants.dequantize`` on random blocks of every supported type (made as
scripts/quants_expect.py makes them for the Rust crate's exactness test, the way gguf-py's
test_quants.py does: random bytes with every f16 scale made finite; and unfixed random bytes,
so NaN and Inf scales and NaN payloads are compared too), in leading-axis shapes and input
forms gguf-py takes, on every tensor of the generated corpus models and of a gguf-py-written
model; ``Model.values`` on the same tensors; the errors gguf-py raises, typed.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf
from sipllm_gguf.quants import SUPPORTED, block_layout, dequantize, is_supported

from conftest import REPO, corpus_params, rich_model, write_with_gguf_py

NAMES = [t.name for t in SUPPORTED]


@pytest.fixture(scope="module")
def gen(gguf_py):
    """scripts/quants_expect.py: the random-block generator the Rust exactness test shares."""
    spec = importlib.util.spec_from_file_location("quants_expect", REPO / "scripts" / "quants_expect.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def random_blocks(gen, name: str, nbytes: int, *, fixed: bool = True, stream: int = 0) -> np.ndarray:
    """(blocks, type_size) uint8: about ``nbytes`` of random blocks, a multiple of 8 blocks."""
    q = gen.T[name]
    _, size = gen.GGML_QUANT_SIZES[q]
    k = max(8, nbytes // size // 8 * 8)
    raw = gen.random_bytes(int(q) | stream, 0, -(-k * size // 8))[: k * size].copy()
    blocks = raw.reshape(k, size)
    if fixed:
        gen.make_finite(name, blocks)
    return blocks


def reference(gguf_py, data: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gguf_py.quants.dequantize(data, gguf_py.GGMLQuantizationType[name])


def assert_bits(ours: np.ndarray, theirs: np.ndarray) -> None:
    """Same dtype, shape and bits (NaN payloads included)."""
    assert ours.dtype == np.float32
    assert ours.shape == theirs.shape
    theirs = np.ascontiguousarray(theirs, dtype=np.float32)
    ours = np.ascontiguousarray(ours)
    same = ours.view(np.uint32) == theirs.view(np.uint32)
    if not same.all():
        i = int(np.argmin(same.reshape(-1)))
        a, b = ours.reshape(-1)[i], theirs.reshape(-1)[i]
        pytest.fail(f"{int((~same).sum())} values differ; first at flat index {i}: {a!r} vs {b!r}")


def test_supported_is_gguf_pys_list(gguf_py, gen):
    assert NAMES == gen.TYPES
    for t in SUPPORTED:
        q = gguf_py.GGMLQuantizationType[t.name]
        assert t.code == int(q)
        assert (t.block_size, t.type_size) == gguf_py.constants.GGML_QUANT_SIZES[q]
        assert is_supported(q) and is_supported(t.code) and block_layout(q) == (t.block_size, t.type_size)
    assert not is_supported(gguf_py.GGMLQuantizationType.Q8_1) and block_layout(9) is None


@pytest.mark.parametrize("name", NAMES)
def test_random_blocks_bit_exact(gguf_py, gen, name):
    """About 256 KiB of random blocks of each type, as one row and with leading axes."""
    blocks = random_blocks(gen, name, 256 << 10)
    flat = blocks.reshape(-1)
    want = reference(gguf_py, flat, name)
    assert_bits(dequantize(flat, gguf_py.GGMLQuantizationType[name]), want)
    # Leading axes: (2, 4, rows of k/8 blocks) keeps every leading index and the row length.
    k, size = blocks.shape
    shaped = blocks.reshape(2, 4, k // 8 * size)
    got = dequantize(shaped, int(gguf_py.GGMLQuantizationType[name]))
    assert_bits(got, reference(gguf_py, shaped, name))
    assert got.reshape(-1).view(np.uint32).tolist() == want.view(np.uint32).tolist()
    assert got.flags.writeable


@pytest.mark.parametrize("name", NAMES)
def test_unfixed_random_blocks_bit_exact(gguf_py, gen, name):
    """Random bytes with no scale fixed: Inf and NaN scales, NaN payloads, bit for bit."""
    blocks = random_blocks(gen, name, 64 << 10, fixed=False, stream=0x10000)
    flat = blocks.reshape(-1)
    with np.errstate(all="ignore"):
        assert_bits(dequantize(flat, gguf_py.GGMLQuantizationType[name]), reference(gguf_py, flat, name))


@pytest.mark.parametrize("name", ["Q8_0", "Q4_K", "IQ4_XS"])
def test_threads_give_the_same_bits(gguf_py, gen, name):
    """3 MiB: enough for two threads (1 MiB each at least); every thread count, same bits."""
    flat = random_blocks(gen, name, 3 << 20).reshape(-1)
    want = reference(gguf_py, flat, name)
    for threads in (None, 0, 1, 2, 3):
        assert_bits(dequantize(flat, gguf_py.GGMLQuantizationType[name], threads=threads), want)
    with pytest.raises(ValueError):
        dequantize(flat, gguf_py.GGMLQuantizationType[name], threads=-1)


def test_input_forms(gguf_py, gen):
    """The inputs gguf-py takes (strided rows, memmaps, typed F32/F16 arrays) and bytes."""
    q8 = random_blocks(gen, "Q8_0", 64 << 10)
    rows = q8.reshape(32, -1)
    strided = rows[::2]  # not contiguous across rows
    assert not strided.flags.c_contiguous
    assert_bits(dequantize(strided, 8), reference(gguf_py, strided, "Q8_0"))
    # bytes (borrowed whole by Rust), bytearray and memoryview are their bytes.
    want = reference(gguf_py, q8.reshape(-1), "Q8_0")
    for form in (bytes(q8), bytearray(q8), memoryview(bytes(q8))):
        assert_bits(dequantize(form, 8), want)
    # F32: a view of the input, as in gguf-py (float32 or its uint8 bytes).
    f32 = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    for data in (f32, f32.view(np.uint8)):
        got = dequantize(data, 0)
        assert_bits(got, reference(gguf_py, data, "F32"))
        assert np.shares_memory(got, f32)
    # F16 as float16 or as bytes, in a leading-axis shape.
    f16 = np.random.default_rng(2).standard_normal((2, 3, 8)).astype(np.float16)
    for data in (f16, f16.view(np.uint8)):
        assert_bits(dequantize(data, 1), reference(gguf_py, data, "F16"))
    # Empty inputs: empty values in the shape rule's shape.
    empty = np.zeros((0, 34), dtype=np.uint8)
    assert_bits(dequantize(empty, 8), reference(gguf_py, empty, "Q8_0"))
    assert dequantize(np.zeros((3, 0), dtype=np.uint8), 12).shape == (3, 0)


def test_memmap_input(gguf_py, gen, tmp_path):
    blocks = random_blocks(gen, "Q6_K", 64 << 10)
    path = tmp_path / "q6k.bin"
    blocks.tofile(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r").reshape(4, -1)
    assert_bits(dequantize(mm, 14), reference(gguf_py, np.array(mm), "Q6_K"))


@pytest.mark.parametrize("name", ["Q8_1", "Q8_K", "I8", "I16", "I32", "I64", "F64", "Q1_0"])
def test_unsupported_types_raise_typed(gguf_py, name):
    q = gguf_py.GGMLQuantizationType[name]
    data = np.zeros(1024, dtype=np.uint8)
    with pytest.raises(NotImplementedError):
        gguf_py.quants.dequantize(data, q)
    with pytest.raises(sipllm_gguf.UnsupportedTypeError) as info:
        dequantize(data, q)
    e = info.value
    assert isinstance(e, NotImplementedError) and isinstance(e, sipllm_gguf.GGUFError)
    assert e.code == "quants::dequant::unsupported_type"
    assert name in str(e) and "SUPPORTED" in e.help


def test_qtype_forms(gguf_py, gen):
    """qtype as gguf-py's enum, the package's own fallback enum, or a plain int; not a float."""
    from sipllm_gguf._enums import GGMLQuantizationType as Own

    flat = random_blocks(gen, "Q5_K", 16 << 10).reshape(-1)
    want = reference(gguf_py, flat, "Q5_K")
    for q in (gguf_py.GGMLQuantizationType.Q5_K, Own.Q5_K, 13, np.int32(13)):
        assert_bits(sipllm_gguf.quants.dequantize(flat, q), want)
    with pytest.raises(TypeError):
        dequantize(flat, 13.0)


def test_unknown_codes_raise_typed():
    for code in (4, 5, 31, 99, 2**32 - 1):
        with pytest.raises(sipllm_gguf.UnsupportedTypeError) as info:
            dequantize(np.zeros(64, dtype=np.uint8), code)
        assert info.value.code == "quants::dequant::unsupported_type"


@pytest.mark.parametrize(
    ("name", "shape"),
    [("Q8_0", (33,)), ("Q8_0", (2, 17)), ("Q4_K", (3, 143)), ("F16", (5,)), ("BF16", (2, 3)), ("F32", (6,))],
)
def test_partial_blocks_raise_typed(gguf_py, name, shape):
    """A last axis that is not whole blocks: a ValueError in both, typed here, even when the
    whole input is whole blocks (2 x 17 bytes of Q8_0)."""
    data = np.zeros(shape, dtype=np.uint8)
    with pytest.raises(ValueError):
        gguf_py.quants.dequantize(data, gguf_py.GGMLQuantizationType[name])
    with pytest.raises(sipllm_gguf.GGUFError) as info:
        dequantize(data, gguf_py.GGMLQuantizationType[name])
    e = info.value
    assert isinstance(e, ValueError) and not isinstance(e, NotImplementedError)
    assert e.code == "quants::dequant::partial_block" and e.path == "data.shape[-1]"
    assert f"{shape[-1]} bytes of {name}" in str(e)
    assert f"{block_layout(gguf_py.GGMLQuantizationType[name])[1]}-byte blocks" in e.help


@pytest.mark.parametrize("path", corpus_params("generated"))
def test_corpus_tensors(gguf_py, reference_readers, path):
    """Every tensor of the generated corpus models: both readers' data through our dequantize,
    and Model.values, equal gguf-py's values of the same tensor (its reader's data + its
    dequantize), in the same shape."""
    theirs = reference_readers(path)
    ours = sipllm_gguf.GGUFReader(path)
    model = sipllm_gguf.open(path)
    big = path.name.find(".be.") >= 0
    for t, o in zip(theirs.tensors, ours.tensors):
        assert t.name == o.name
        if t.tensor_type.name not in NAMES:
            continue
        want = reference(gguf_py, t.data, t.tensor_type.name)
        assert_bits(dequantize(t.data, t.tensor_type), want)
        assert_bits(dequantize(o.data, o.tensor_type), want)
        if big:
            # gguf-py's values of a big-endian file are no reference (its dequantize views
            # the byte-swapped F32 array's bytes as native floats): Model.values there is
            # compared with the little-endian twin's (test_integrity.py).
            continue
        assert_bits(model.values(t.name), want)
        assert model.values(t.name).shape == model.tensor(t.name).shape


def test_model_values_of_every_type(gguf_py, gen, tmp_path):
    """A gguf-py-written model with a tensor of every supported type (rows of whole blocks,
    random blocks) and the package's rich model: values equal gguf-py's, ranges are slices."""
    def build(w):
        rich_model(w)
        for name in NAMES:
            q = gguf_py.GGMLQuantizationType[name]
            blocks = random_blocks(gen, name, 16 << 10)
            w.add_tensor(f"t.{name}", blocks.reshape(4, -1), raw_dtype=q)

    path = write_with_gguf_py(tmp_path / "all.gguf", build)
    reader = gguf_py.GGUFReader(path)
    model = sipllm_gguf.open(path)
    seen = set()
    for t in reader.tensors:
        if t.tensor_type.name not in NAMES:
            with pytest.raises(sipllm_gguf.UnsupportedTypeError) as info:
                model.values(t.name)
            assert info.value.code == "quants::dequant::unsupported_type"
            continue
        want = reference(gguf_py, t.data, t.tensor_type.name)
        got = model.values(t.name)
        assert_bits(got, want)
        assert got.flags.writeable
        seen.add(t.tensor_type.name)
        n = got.size
        flat = want.reshape(-1)
        block = block_layout(t.tensor_type)[0]
        for lo, hi in ((0, n), (0, 1), (block - 1, min(n, 3 * block + 5)), (n - 1, n), (n, n)):
            assert_bits(model.values_at(t.name, lo, hi), flat[lo:hi])
    assert seen == set(NAMES)
    with pytest.raises(sipllm_gguf.GGUFError) as info:
        model.values_at("t.Q8_0", 0, 10**12)
    assert info.value.code == "streaming::values::element_range"
    with pytest.raises(KeyError):
        model.values("no such tensor")


def test_model_values_of_a_tensor_over_several_chunks(gguf_py, gen, tmp_path):
    """9 MiB of Q4_K: more than one 8 MiB read chunk and many pieces, whole and in parts, on
    one thread and two."""
    blocks = random_blocks(gen, "Q4_K", 9 << 20)
    q = gguf_py.GGMLQuantizationType.Q4_K
    path = write_with_gguf_py(tmp_path / "big.gguf", lambda w: w.add_tensor("big", blocks.reshape(-1, 144 * 16), raw_dtype=q))
    t = gguf_py.GGUFReader(path).tensors[0]
    want = reference(gguf_py, t.data, "Q4_K")
    model = sipllm_gguf.open(path)
    assert model.tensor("big").shape == want.shape
    for threads in (None, 1, 2, 0):
        assert_bits(model.values("big", threads=threads), want)
    flat = want.reshape(-1)
    lo, hi = 1000, flat.size - 77  # both ends inside a block, a few pieces in between
    assert_bits(model.values_at("big", lo, hi), flat[lo:hi])


def test_out_is_written_and_checked(gguf_py, gen, tmp_path):
    """``out=``: the values land in the given array (returned), for dequantize and
    Model.values; a wrong shape, dtype or layout is refused before anything is written."""
    blocks = random_blocks(gen, "Q6_K", 64 << 10)
    rows = blocks.reshape(8, -1)
    want = reference(gguf_py, rows, "Q6_K")
    out = np.full(want.shape, np.nan, dtype=np.float32)
    assert dequantize(rows, 14, out=out) is out
    assert_bits(out, want)
    f32 = np.arange(12, dtype=np.float32).reshape(3, 4)
    out32 = np.zeros((3, 4), dtype=np.float32)
    assert dequantize(f32, 0, out=out32) is out32 and not np.shares_memory(out32, f32)
    assert_bits(out32, f32)
    for bad, err in (
        (np.zeros(want.shape, dtype=np.float64), TypeError),
        (np.zeros(want.shape[::-1], dtype=np.float32), ValueError),
        (np.zeros((want.shape[0], want.shape[1] * 2), dtype=np.float32)[:, ::2], ValueError),
        (list(range(4)), TypeError),
    ):
        with pytest.raises(err):
            dequantize(rows, 14, out=bad)
    path = write_with_gguf_py(tmp_path / "out.gguf", lambda w: w.add_tensor("t", rows, raw_dtype=gguf_py.GGMLQuantizationType.Q6_K))
    model = sipllm_gguf.open(path)
    out[:] = 0
    assert model.values("t", out=out) is out
    assert_bits(out, want)
    with pytest.raises(ValueError):
        model.values("t", out=np.zeros(want.size, dtype=np.float32))


def test_module_example_runs():
    import doctest

    result = doctest.testmod(sipllm_gguf.quants)
    assert result.attempted >= 3 and result.failed == 0
