"""The access patterns of two real consumers of gguf-py's GGUFReader, unchanged, on both readers.

The functions below use GGUFReader the way ComfyUI-GGUF's loader and transformers' GGUF
integration do (written here in those patterns, not copied): whatever they compute must be the
same with sipllm_gguf.GGUFReader as with gguf-py's.
"""

from __future__ import annotations

import hashlib
from array import array
from pathlib import Path

import pytest

import sipllm_gguf
from conftest import CORPUS, HAVE_CORPUS

FILES = ["generated/tiny-llama.le.gguf", "generated/tiny-llama.be.gguf", "real/ggml-vocab-llama-spm.gguf", "real/ggml-vocab-gpt-2.gguf"]


def params():
    if not HAVE_CORPUS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"reference corpus {CORPUS} ABSENT"))]
    return [pytest.param(CORPUS / f, id=Path(f).name) for f in FILES]


def comfy_style(reader, gguf) -> dict:
    """ComfyUI-GGUF's loader pattern: get_field + field.types checks, field.parts[field.data[-1]],
    iterating field.data, and reader.tensors[i].name/.data/.shape/.tensor_type."""
    out: dict = {}
    arch = reader.get_field("general.architecture")
    if arch is not None:
        if len(arch.types) != 1 or arch.types[0] != gguf.GGUFValueType.STRING:
            raise TypeError(f"bad type for general.architecture: {arch.types!r}")
        out["arch"] = str(arch.parts[arch.data[-1]], encoding="utf-8")
    for key in reader.fields:
        field = reader.get_field(key)
        types = field.types
        if types and types[0] == gguf.GGUFValueType.ARRAY and len(types) == 2:
            if types[1] == gguf.GGUFValueType.STRING:
                out[key] = tuple(str(field.parts[i], encoding="utf-8") for i in field.data)
            elif types[1] in (gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.FLOAT64):
                out[key] = tuple(float(field.parts[i][0]) for i in field.data)
            else:
                out[key] = tuple(int(field.parts[i][0]) for i in field.data)
        elif types == [gguf.GGUFValueType.STRING]:
            out[key] = str(field.parts[field.data[-1]], encoding="utf-8")
        elif len(types) == 1:
            kind = float if types[0] in (gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.FLOAT64) else int
            # (int() of the 1-element part itself is an error in numpy 2.4, for gguf-py too.)
            out[key] = kind(field.parts[field.data[-1]][0])
    qtypes: dict = {}
    for i in range(len(reader.tensors)):
        tensor = reader.tensors[i]
        shape = tuple(int(v) for v in reversed(tensor.shape))
        name = getattr(tensor.tensor_type, "name", repr(tensor.tensor_type))
        qtypes[name] = qtypes.get(name, 0) + 1
        data = tensor.data
        out[f"tensor:{tensor.name}"] = (shape, data.shape, str(data.dtype), hashlib.sha256(data.tobytes()).hexdigest())
    out["qtypes"] = qtypes
    return out


def parse_value(value, data_type):
    """transformers' value parsing: the part and the field's types."""
    if not isinstance(data_type, list):
        data_type = [data_type]
    if len(data_type) == 1:
        data_type, array_type = data_type[0], None
    else:
        if data_type[0] != 9:
            raise ValueError("expected an array type first")
        data_type, array_type = data_type
    if data_type in [0, 1, 2, 3, 4, 5, 10, 11]:
        return int(value[0])
    if data_type in [6, 12]:
        return float(value[0])
    if data_type in [7]:
        return bool(value[0])
    if data_type in [8]:
        return array("B", list(value)).tobytes().decode()
    if data_type in [9]:
        return parse_value(value, array_type)
    return value


def transformers_style(reader) -> dict:
    """transformers' read_field over every field: [parse(f.parts[i], f.types) for i in f.data],
    plus the tensors' names, shapes and types."""
    out = {}
    for key, field in reader.fields.items():
        value = [parse_value(field.parts[i], field.types) for i in field.data]
        out[key] = value[0] if len(value) == 1 else value
    out["tensors"] = [(t.name, list(t.shape), int(t.tensor_type), t.data.tobytes()) for t in reader.tensors]
    return out


@pytest.mark.parametrize("path", params())
def test_comfyui_pattern(path: Path, gguf_py, reference_readers) -> None:
    ours = comfy_style(sipllm_gguf.GGUFReader(path), gguf_py)
    theirs = comfy_style(reference_readers(path), gguf_py)
    assert ours == theirs
    assert "arch" in ours


@pytest.mark.parametrize("path", params())
def test_transformers_pattern(path: Path, gguf_py, reference_readers) -> None:
    ours = transformers_style(sipllm_gguf.GGUFReader(path))
    theirs = transformers_style(reference_readers(path))
    assert ours == theirs
    assert isinstance(ours["general.architecture"], str)
