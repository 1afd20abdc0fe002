"""The native API: open() (metadata, tokens, tensors, reads) and validate()."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf
from conftest import CORPUS, corpus_params, needs_corpus, rich_model, write_with_gguf_py


def as_plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, sipllm_gguf.StrSeq):
        return value.to_list()
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    return value


@pytest.mark.parametrize("path", corpus_params("generated") + corpus_params("real")[:3])
def test_metadata_matches_gguf_py(path: Path, gguf_py, reference_readers) -> None:
    reference = reference_readers(path)
    model = sipllm_gguf.open(path)
    keys = [k for k in reference.fields if not k.startswith("GGUF.")]
    assert list(model.metadata) == keys
    assert len(model.metadata) == len(keys)
    for key in keys:
        field = reference.fields[key]
        value = model.metadata[key]
        if field.types[0] == gguf_py.GGUFValueType.ARRAY and field.types[-1] != gguf_py.GGUFValueType.STRING:
            assert isinstance(value, np.ndarray) and value.dtype.isnative
            assert value.dtype == reference.fields[key].parts[field.data[0]].dtype.newbyteorder("=")
        assert as_plain(value) == field.contents(), key
        vtype, elem = model.metadata.type_of(key)
        assert vtype == field.types[0]
        assert elem == (field.types[1] if len(field.types) > 1 else None)
    assert "no.such.key" not in model.metadata
    with pytest.raises(KeyError):
        model.metadata["no.such.key"]


@pytest.mark.parametrize("path", corpus_params("real")[:4])
def test_tokens_are_a_lazy_sequence_of_str(path: Path, reference_readers) -> None:
    expected = reference_readers(path).fields["tokenizer.ggml.tokens"].contents()
    tokens = sipllm_gguf.open(path).tokens
    assert isinstance(tokens, sipllm_gguf.StrSeq)
    assert len(tokens) == len(expected)
    assert tokens[0] == expected[0] and tokens[-1] == expected[-1] and tokens[len(expected) // 2] == expected[len(expected) // 2]
    assert tokens[10:20] == expected[10:20] and tokens[::-1000] == expected[::-1000]
    assert list(tokens) == expected
    assert tokens.to_list() == expected
    with pytest.raises(IndexError):
        tokens[len(expected)]


@pytest.mark.parametrize("big_endian", [False, True], ids=["le", "be"])
def test_tensors_and_reads(tmp_path: Path, gguf_py, big_endian: bool) -> None:
    path = write_with_gguf_py(tmp_path / "rich.gguf", rich_model, big_endian=big_endian)
    reference = gguf_py.GGUFReader(path)
    model = sipllm_gguf.open(path)
    assert model.format == "gguf" and model.version == 3 and model.shard_count == 1
    assert [t.name for t in model.tensors] == [t.name for t in reference.tensors]
    for ours, theirs in zip(model.tensors, reference.tensors):
        assert ours.shape == tuple(int(d) for d in reversed(theirs.shape.tolist()))  # row-major
        assert ours.type == theirs.tensor_type and ours.type_name == theirs.tensor_type.name
        assert ours.nbytes == theirs.n_bytes and ours.offset == theirs.data_offset
        assert ours.n_elements == theirs.n_elements
        assert model.read(ours.name) == theirs.data.tobytes()
        arr = model.read_array(ours.name)
        assert arr.dtype == np.uint8 and arr.tobytes() == theirs.data.tobytes()
        assert model.tensor(ours.name) == ours
    assert model.read_at(model.tensors[0].offset, 4) == reference.tensors[0].data.tobytes()[:4]
    with pytest.raises(KeyError):
        model.read("no.such.tensor")
    assert model.metadata["t.str"] == "héllo ✓ 🦙"
    assert model.metadata["t.u64"] == 2**63 + 5 and model.metadata["t.i64"] == -(2**62)
    assert model.metadata["t.bool"] is True
    assert model.metadata["t.bools"].dtype == np.bool_ and model.metadata["t.bools"].tolist() == [True, False, True]
    assert as_plain(model.metadata["t.nested"]) == [[1, 2], [3], [4, 5, 6]]
    assert as_plain(model.metadata["t.nested_strs"]) == [["x", "yz"], ["w"]]
    assert model.metadata["t.u8s"].dtype == np.uint8


def test_tensor_bytes_match_the_corpus_hashes() -> None:
    needs_corpus()
    for name in ("tiny-llama.le", "tiny-llama.be"):
        model = sipllm_gguf.open(CORPUS / "generated" / f"{name}.gguf")
        for line in (CORPUS / "generated" / f"{name}.tensors.sha256").read_text().splitlines():
            sha, size, tname = line.split()
            data = model.read(tname)
            assert len(data) == int(size) and hashlib.sha256(data).hexdigest() == sha


def test_valid_corpus_files_validate_clean() -> None:
    needs_corpus()
    from conftest import REJECTED

    for path in sorted(CORPUS.glob("*/*.gguf")):
        if path.name in REJECTED:
            continue
        errors = [f for f in sipllm_gguf.validate(path) if f.severity == "error"]
        assert errors == [], path
    llama_cpp = sipllm_gguf.validate(CORPUS / "generated" / "tiny-llama.be.gguf", profile="llama-cpp")
    assert [f.code for f in llama_cpp] == ["gguf::header::endian_mismatch"]


def test_enums_without_gguf_py_installed() -> None:
    needs_corpus()
    code = f"""
import sys
sys.modules["gguf"] = None  # as if gguf-py were not installed
import sipllm_gguf
r = sipllm_gguf.GGUFReader({str(CORPUS / "generated" / "tiny-llama.le.gguf")!r})
f = r.fields["general.architecture"]
assert type(f.types[0]).__module__ == "sipllm_gguf._enums", type(f.types[0])
assert f.types == [sipllm_gguf.GGUFValueType.STRING] and f.types[0] == 8
t = r.tensors[0]
assert t.tensor_type is sipllm_gguf.GGMLQuantizationType.F32
assert r.endianess == sipllm_gguf.GGUFEndian.LITTLE
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_a_split_set_opens_as_one_model_from_any_shard(tmp_path: Path, gguf_py) -> None:
    w = gguf_py.GGUFWriter(str(tmp_path / "m.gguf"), arch="llama", split_max_tensors=2)
    w.add_uint32("llama.block_count", 2)
    for i in range(5):
        w.add_tensor(f"t{i}", np.full((4, 8), i, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    shards = sorted(tmp_path.glob("m-*-of-00003.gguf"))
    assert len(shards) == 3
    for shard in shards:
        model = sipllm_gguf.open(shard)
        assert model.shard_count == 3
        assert [t.name for t in model.tensors] == [f"t{i}" for i in range(5)]
        for i in range(5):
            assert np.frombuffer(model.read(f"t{i}"), "<f4").tolist() == [float(i)] * 32
        t3 = model.tensor("t3")
        assert model.read_at(t3.offset, 4) == np.float32(3).tobytes()
        assert model.metadata["llama.block_count"] == 2
        assert sipllm_gguf.validate(shard) == []
