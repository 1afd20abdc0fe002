"""sipllm_gguf.GGUFReader against gguf-py 0.19.0's own GGUFReader, field for field."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf
from conftest import CORPUS, REJECTED, Raw, corpus_params, needs_corpus, rich_model, write_with_gguf_py


def assert_same_part(ours, theirs, where: str) -> None:
    assert isinstance(ours, np.ndarray), where
    assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} != {theirs.dtype}"
    assert ours.dtype.byteorder == theirs.dtype.byteorder or ours.dtype.itemsize == 1, where
    assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} != {theirs.shape}"
    assert ours.tobytes() == theirs.tobytes(), where
    assert ours.tolist() == theirs.tolist(), where


def assert_same_field(ours, theirs, where: str) -> None:
    assert ours.offset == theirs.offset, where
    assert ours.name == theirs.name, where
    assert ours.types == theirs.types, f"{where}: types {ours.types} != {theirs.types}"
    assert [type(t) for t in ours.types] == [type(t) for t in theirs.types], where
    assert list(ours.data) == theirs.data, where
    assert len(ours.parts) == len(theirs.parts), where
    for i, (a, b) in enumerate(zip(ours.parts, theirs.parts)):
        assert_same_part(a, b, f"{where}.parts[{i}]")
    assert ours.contents() == theirs.contents(), where
    n = len(theirs.data)
    if n:
        # Single elements, first and last, and slices, as gguf-py answers them.
        for i in (0, n - 1, -1):
            assert ours.contents(i) == theirs.contents(i), f"{where}.contents({i})"
        for sl in (slice(1, 3), slice(None, None, 2), slice(-2, None), slice(None, None, -1), slice(5, 2)):
            assert ours.contents(sl) == theirs.contents(sl), f"{where}.contents({sl})"


def assert_same_reader(ours: sipllm_gguf.GGUFReader, theirs) -> None:
    assert list(ours.fields) == list(theirs.fields)
    for key, field in theirs.fields.items():
        assert_same_field(ours.fields[key], field, key)
        assert ours.get_field(key) is ours.fields[key]
    assert ours.get_field("no.such.key") is None
    assert ours.byte_order == theirs.byte_order
    assert ours.alignment == theirs.alignment and type(ours.alignment) is type(theirs.alignment)
    assert ours.data_offset == theirs.data_offset
    assert ours.endianess == theirs.endianess
    assert len(ours.tensors) == len(theirs.tensors)
    for i, (a, b) in enumerate(zip(ours.tensors, theirs.tensors)):
        where = f"tensor[{i}] {b.name}"
        assert ours.get_tensor(i) is a
        assert a.name == b.name, where
        assert a.tensor_type == b.tensor_type and type(a.tensor_type) is type(b.tensor_type), where
        assert a.n_elements == b.n_elements and a.n_bytes == b.n_bytes, where
        assert a.data_offset == b.data_offset, where
        assert_same_part(a.shape, b.shape, f"{where}.shape")
        assert_same_part(a.data, b.data, f"{where}.data")
        assert_same_field(a.field, b.field, f"{where}.field")


@pytest.mark.parametrize("path", corpus_params("real", "real-historic", "generated"))
def test_corpus_matches_gguf_py(path: Path, gguf_py) -> None:
    if path.name in REJECTED:
        with pytest.raises(Exception):
            gguf_py.GGUFReader(path)
        code, offset, logical = REJECTED[path.name]
        with pytest.raises(sipllm_gguf.GGUFError) as info:
            sipllm_gguf.GGUFReader(path)
        err = info.value
        assert isinstance(err, ValueError)
        assert (err.code, err.offset, err.path) == (code, offset, logical)
        assert err.filename == str(path) and err.help
        return
    assert_same_reader(sipllm_gguf.GGUFReader(path), gguf_py.GGUFReader(path))


def test_every_corpus_file_is_covered() -> None:
    needs_corpus()
    rejected = {p.name for p in CORPUS.glob("*/*.gguf") if (p.parent / (p.stem + ".expect-error.json")).exists()}
    assert rejected == set(REJECTED), "the corpus's rejected files changed: update REJECTED"


@pytest.mark.parametrize("name", ["tiny-llama.le", "tiny-llama.be"])
def test_tensor_bytes_match_the_corpus_hashes(name: str) -> None:
    needs_corpus()
    reader = sipllm_gguf.GGUFReader(CORPUS / "generated" / f"{name}.gguf")
    by_name = {t.name: t for t in reader.tensors}
    lines = (CORPUS / "generated" / f"{name}.tensors.sha256").read_text().split("\n")
    expected = [line.split() for line in lines if line.strip()]
    assert len(expected) == len(by_name)
    for sha, size, tname in expected:
        data = by_name[tname].data
        assert data.nbytes == int(size)
        assert hashlib.sha256(data.tobytes()).hexdigest() == sha


@pytest.mark.parametrize("big_endian", [False, True], ids=["le", "be"])
def test_every_value_type_and_tensor_type_matches_gguf_py(tmp_path: Path, gguf_py, big_endian: bool) -> None:
    path = write_with_gguf_py(tmp_path / "rich.gguf", rich_model, big_endian=big_endian)
    ours, theirs = sipllm_gguf.GGUFReader(path), gguf_py.GGUFReader(path)
    assert_same_reader(ours, theirs)
    assert ours.fields["t.nested"].types == [gguf_py.GGUFValueType.ARRAY] * 2 + [gguf_py.GGUFValueType.INT32]


def test_empty_arrays_match_gguf_py(tmp_path: Path, gguf_py) -> None:
    # gguf-py's writer refuses empty arrays; files have them (an empty merges list).
    raw = Raw()
    raw.kv("a.empty_u32", 9, struct.pack("<IQ", 4, 0))
    raw.kv("a.empty_str", 9, struct.pack("<IQ", 8, 0))
    raw.kv("a.nested_empty", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 4, 0) + struct.pack("<IQ", 8, 1) + Raw.s("x"))
    raw.kv("a.bool_two", 7, b"\x02")
    path = raw.write(tmp_path / "empty.gguf")
    ours, theirs = sipllm_gguf.GGUFReader(path), gguf_py.GGUFReader(path)
    assert_same_reader(ours, theirs)
    assert ours.fields["a.empty_str"].types == [gguf_py.GGUFValueType.ARRAY]
    assert ours.fields["a.empty_str"].contents() == []
    assert ours.fields["a.bool_two"].contents() is True


def test_data_is_an_index_sequence_and_parts_are_lazy() -> None:
    needs_corpus()
    reader = sipllm_gguf.GGUFReader(CORPUS / "real" / "ggml-vocab-gpt-2.gguf")
    tokens = reader.fields["tokenizer.ggml.tokens"]
    assert isinstance(tokens.data, range)
    assert len(tokens.parts) == 5 + 2 * len(tokens.data)
    assert not isinstance(tokens.parts, list)
    last = tokens.parts[tokens.data[-1]]
    assert str(last, encoding="utf-8") == tokens.contents(-1)


def test_field_is_a_named_tuple_lookalike() -> None:
    needs_corpus()
    reader = sipllm_gguf.GGUFReader(CORPUS / "generated" / "tiny-llama.le.gguf")
    offset, name, parts, data, types = reader.fields["general.architecture"]
    assert name == "general.architecture" and offset == reader.fields[name].offset
    assert str(parts[data[0]], encoding="utf-8") == "llama"
    assert reader.fields[name]._asdict()["types"] == types
