"""Zero-copy tensor data, and writes through the map with mode="r+"."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf
from conftest import CORPUS, needs_corpus, rich_model, write_with_gguf_py


def models(tmp_path: Path) -> list[Path]:
    needs_corpus()
    return [
        CORPUS / "generated" / "tiny-llama.le.gguf",
        CORPUS / "generated" / "tiny-llama.be.gguf",
        write_with_gguf_py(tmp_path / "rich.gguf", rich_model),
        write_with_gguf_py(tmp_path / "rich.be.gguf", rich_model, big_endian=True),
    ]


def test_every_tensor_shares_memory_with_the_file_map(tmp_path: Path) -> None:
    for path in models(tmp_path):
        reader = sipllm_gguf.GGUFReader(path)
        assert isinstance(reader.data, np.memmap)
        assert reader.tensors, path
        for t in reader.tensors:
            assert np.shares_memory(t.data, reader.data), (path, t.name)
            assert not t.data.flags.writeable, "mode r maps read-only"
        for field in reader.fields.values():
            for part in field.parts:
                assert np.shares_memory(part, reader.data) or part.size == 0


def test_r_plus_scalar_edit_round_trips_and_revalidates(tmp_path: Path, gguf_py) -> None:
    needs_corpus()
    path = tmp_path / "edit.gguf"
    shutil.copy(CORPUS / "generated" / "tiny-llama.le.gguf", path)
    before = sipllm_gguf.GGUFReader(path).fields["llama.block_count"].contents()

    reader = sipllm_gguf.GGUFReader(path, mode="r+")
    field = reader.fields["llama.block_count"]
    field.parts[field.data[0]][0] = before + 5  # what gguf_set_metadata.py does
    eps = reader.fields["llama.attention.layer_norm_rms_epsilon"]
    eps.parts[eps.data[0]][0] = 0.25
    reader.data.flush()
    del reader, field, eps

    assert sipllm_gguf.GGUFReader(path).fields["llama.block_count"].contents() == before + 5
    assert gguf_py.GGUFReader(path).fields["llama.block_count"].contents() == before + 5
    assert gguf_py.GGUFReader(path).fields["llama.attention.layer_norm_rms_epsilon"].contents() == 0.25
    assert sipllm_gguf.open(path).metadata["llama.block_count"] == before + 5
    assert sipllm_gguf.validate(path) == []


def test_r_plus_tensor_edit_is_seen_by_a_native_read(tmp_path: Path) -> None:
    needs_corpus()
    path = tmp_path / "edit.gguf"
    shutil.copy(CORPUS / "generated" / "tiny-llama.le.gguf", path)
    reader = sipllm_gguf.GGUFReader(path, mode="r+")
    tensor = next(t for t in reader.tensors if t.tensor_type == 0)  # an F32 tensor
    tensor.data[...] = np.arange(tensor.n_elements, dtype=np.float32).reshape(tensor.data.shape)
    reader.data.flush()
    name = tensor.name
    del reader, tensor
    got = np.frombuffer(sipllm_gguf.open(path).read(name), dtype="<f4")
    assert got.tolist() == list(range(len(got)))


def test_mode_r_refuses_writes() -> None:
    needs_corpus()
    reader = sipllm_gguf.GGUFReader(CORPUS / "generated" / "tiny-llama.le.gguf")
    field = reader.fields["llama.block_count"]
    with pytest.raises(ValueError):
        field.parts[field.data[0]][0] = 1


def test_a_dropped_reader_is_freed_at_once(tmp_path: Path) -> None:
    # No reference cycles: the map and the header go when the program drops the reader, as
    # with gguf-py, without waiting for the cycle collector.
    import gc
    import weakref

    path = write_with_gguf_py(tmp_path / "rich.gguf", rich_model)
    gc.disable()
    try:
        reader = sipllm_gguf.GGUFReader(path)
        for field in reader.fields.values():
            field.contents()
            list(field.parts)
        for t in reader.tensors:
            t.data, t.field
        alive = weakref.ref(reader)
        del reader, field, t
        assert alive() is None
    finally:
        gc.enable()
