"""Model.to_safetensors read back by the ``safetensors`` package, against gguf-py's values, and
Model.array's zero-copy views of the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf

from conftest import CORPUS, needs_corpus, write_with_gguf_py

st_numpy = pytest.importorskip("safetensors.numpy")
safetensors = pytest.importorskip("safetensors")


def float_model(w) -> None:
    """Float and quantized tensors (every one has f32 values)."""
    import gguf

    rng = np.random.default_rng(11)
    w.add_string("general.name", "float model")
    w.add_float32("t.eps", 1e-5)
    w.add_uint32("t.count", 7)
    w.add_array("t.list", [1, 2, 3])
    w.add_tensor("f32", rng.standard_normal((3, 8)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((2, 4, 8)).astype(np.float16))
    w.add_tensor("q8_0", rng.integers(0, 255, (4, 34 * 2), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q4_k", rng.integers(0, 255, (2, 144), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("bf16", rng.integers(0, 255, (3, 16), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.BF16)


def reference_values(path: Path) -> dict[str, np.ndarray]:
    """gguf-py 0.19.0's dequantization of every tensor, in the row-major shape."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    out = {}
    for t in reader.tensors:
        v = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        out[t.name] = v.reshape([int(d) for d in reversed(t.shape)])
    return out


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32 if a.dtype == np.float32 else np.uint16)


def test_f32_export_is_gguf_py_bit_for_bit_and_loads(tmp_path, gguf_py):
    src = write_with_gguf_py(tmp_path / "m.gguf", float_model)
    model = sipllm_gguf.open(src)
    done = model.to_safetensors(tmp_path / "m.safetensors", "f32")
    assert done["tensors"] == 5 and done["config"] is None
    loaded = st_numpy.load_file(str(tmp_path / "m.safetensors"))
    ref = reference_values(src)
    assert sorted(loaded) == sorted(ref)
    for name, values in ref.items():
        got = loaded[name]
        assert got.dtype == np.float32 and got.shape == values.shape, name
        assert np.array_equal(bits(got), bits(values)), name  # NaN payloads included
    with safetensors.safe_open(str(tmp_path / "m.safetensors"), framework="numpy") as f:
        meta = f.metadata()
    assert meta["format"] == "pt"
    assert meta["general.name"] == "float model"
    assert meta["t.count"] == "7" and meta["t.eps"] == "0.00001"
    assert "t.list" not in meta


def test_f16_and_bf16_round_to_nearest_even(tmp_path, gguf_py):
    src = write_with_gguf_py(tmp_path / "m.gguf", float_model)
    model = sipllm_gguf.open(src)
    ref = reference_values(src)
    model.to_safetensors(tmp_path / "h.safetensors", "f16")
    halves = st_numpy.load_file(str(tmp_path / "h.safetensors"))
    for name, values in ref.items():
        finite = ~np.isnan(values)
        # numpy's float32 → float16 cast rounds to nearest even (overflowing to ±inf).
        with np.errstate(over="ignore"):
            want = values.astype(np.float16)
        assert halves[name].dtype == np.float16
        assert np.array_equal(bits(halves[name])[finite], bits(want)[finite]), name
        assert np.isnan(halves[name][~finite]).all(), name
    model.to_safetensors(tmp_path / "b.safetensors", "bf16")
    with safetensors.safe_open(str(tmp_path / "b.safetensors"), framework="numpy") as f:
        header_len = int.from_bytes((tmp_path / "b.safetensors").read_bytes()[:8], "little")
        assert sorted(f.keys()) == sorted(ref)
    raw = (tmp_path / "b.safetensors").read_bytes()
    header = json.loads(raw[8 : 8 + header_len])
    data = raw[8 + header_len :]
    for name, values in ref.items():
        entry = header[name]
        assert entry["dtype"] == "BF16" and entry["shape"] == list(values.shape)
        b, e = entry["data_offsets"]
        got = np.frombuffer(data[b:e], dtype="<u2")
        n = values.reshape(-1).view(np.uint32).astype(np.uint64)
        want = ((n + 0x7FFF + ((n >> 16) & 1)) >> 16).astype(np.uint16)
        finite = ~np.isnan(values.reshape(-1))
        assert np.array_equal(got[finite], want[finite]), name


def test_keep_writes_stored_types(tmp_path, gguf_py):
    import gguf

    def build(w):
        rng = np.random.default_rng(3)
        w.add_tensor("f32", rng.standard_normal((3, 8)).astype(np.float32))
        w.add_tensor("f16", rng.standard_normal((4, 8)).astype(np.float16))
        w.add_tensor("i32", np.arange(10, dtype=np.int32))
        w.add_tensor("q8_0", rng.integers(0, 255, (2, 34), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    src = write_with_gguf_py(tmp_path / "m.gguf", build)
    model = sipllm_gguf.open(src)
    done = model.to_safetensors(tmp_path / "k.safetensors", dtype="keep")
    assert done["copied"] == 3
    loaded = st_numpy.load_file(str(tmp_path / "k.safetensors"))
    assert loaded["f16"].dtype == np.float16 and np.array_equal(loaded["f16"], model.array("f16"))
    assert loaded["i32"].dtype == np.int32 and list(loaded["i32"]) == list(range(10))
    assert loaded["q8_0"].dtype == np.float32
    assert np.array_equal(bits(loaded["q8_0"]), bits(model.values("q8_0")))  # NaNs included
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        model.to_safetensors(tmp_path / "no.safetensors")
    assert e.value.code == "edit::safetensors::no_values"
    assert not (tmp_path / "no.safetensors").exists()
    with pytest.raises(ValueError):
        model.to_safetensors(tmp_path / "x.safetensors", dtype="f8")


def test_array_is_a_view_of_the_file(tmp_path, gguf_py):
    src = write_with_gguf_py(tmp_path / "m.gguf", float_model)
    model = sipllm_gguf.open(src)
    for name, dtype in [("f32", np.float32), ("f16", np.float16)]:
        a = model.array(name)
        assert isinstance(a, np.memmap) and a.dtype == dtype
        assert a.shape == model.tensor(name).shape
        assert not a.flags.writeable and not a.flags.owndata, "no copy: the file's pages"
        assert np.array_equal(a.astype(np.float32), model.values(name))
    # BF16: the raw bits as uint16; the documented widening gives the values.
    b = model.array("bf16")
    assert isinstance(b, np.memmap) and b.dtype == np.uint16
    widened = (b.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(widened.view(np.uint32), model.values("bf16").view(np.uint32))
    with pytest.raises(TypeError):
        model.array("q8_0")
    with pytest.raises(KeyError):
        model.array("missing")


def test_hf_names_write_config(tmp_path, gguf_py):
    def build(w):
        w.add_block_count(1)
        w.add_embedding_length(8)
        w.add_feed_forward_length(16)
        w.add_context_length(32)
        w.add_head_count(2)
        w.add_head_count_kv(1)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_tensor("token_embd.weight", np.ones((5, 8), dtype=np.float32))
        # hf rows 0..7 of one 2-head Q; llama.cpp stores each head's rows interleaved.
        hf = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
        stored = hf.reshape(2, 2, 2, 8).swapaxes(1, 2).reshape(8, 8)
        w.add_tensor("blk.0.attn_q.weight", stored)
        w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))

    src = write_with_gguf_py(tmp_path / "m.gguf", build)
    done = sipllm_gguf.open(src).to_safetensors(tmp_path / "model.safetensors", names="hf")
    assert done["config"] == str(tmp_path / "config.json")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "llama" and config["tie_word_embeddings"] is True
    loaded = st_numpy.load_file(str(tmp_path / "model.safetensors"))
    assert sorted(loaded) == ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.norm.weight"]
    assert np.array_equal(loaded["model.layers.0.self_attn.q_proj.weight"], np.arange(64, dtype=np.float32).reshape(8, 8))


def test_corpus_model_exports_its_values(tmp_path):
    needs_corpus()
    src = CORPUS / "generated" / "tiny-llama.le.gguf"
    model = sipllm_gguf.open(src)
    model.to_safetensors(tmp_path / "t.safetensors")
    loaded = st_numpy.load_file(str(tmp_path / "t.safetensors"))
    assert sorted(loaded) == sorted(t.name for t in model.tensors)
    for t in model.tensors:
        assert np.array_equal(bits(loaded[t.name]), bits(model.values(t.name))), t.name
