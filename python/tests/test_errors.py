"""Damaged and hostile files: a clean GGUFError with code, offset and path, never a crash or
a hang, where gguf-py raises IndexError, RecursionError, numpy errors or loops."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

import sipllm_gguf
from conftest import CORPUS, Raw, needs_corpus, patch


def tensor_file(name: str = "w", dims: tuple[int, ...] = (4,), ggml_type: int = 0, data: int | None = None) -> Raw:
    raw = Raw(tensor_count=1)
    info = Raw.s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    info += struct.pack("<IQ", ggml_type, 0)
    body = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + info
    pad = (-len(body)) % 32
    raw.tail = info + b"\0" * pad + b"\0" * (16 if data is None else data)
    return raw


CASES = {
    # name: (file bytes, expected code, gguf-py may be run on it)
    "string_length_2^62": (
        Raw().kv("k", 8, struct.pack("<Q", 2**62) + b"abc").bytes(),
        "gguf::limits::string_too_long",
        # gguf-py slices past the end of its map and silently returns the 3 bytes there.
        False,
    ),
    "nested_5000_deep": (
        Raw().kv("k", 9, struct.pack("<IQ", 9, 1) * 5000 + struct.pack("<IQ", 0, 0)).bytes(),
        "gguf::limits::nesting_too_deep",
        True,
    ),
    "n_dims_0xffffffff": (
        Raw(kv_count=0, tensor_count=1).bytes() + Raw.s("w") + struct.pack("<I", 0xFFFFFFFF) + b"\0" * 64,
        "gguf::tensor::too_many_dims",
        True,
    ),
    # gguf-py loops once per declared element here (it hangs): not run on it.
    "u8_array_count_2^40": (Raw().kv("k", 9, struct.pack("<IQ", 0, 2**40) + b"\0" * 16).bytes(), "gguf::limits::array_too_long", False),
    "value_type_77": (Raw().kv("k", 77, b"\0" * 8).bytes(), "gguf::metadata::unknown_value_type", True),
    "dims_2^63_x4": (tensor_file(dims=(2**63,) * 4).bytes(), "gguf::tensor::element_count_overflow", True),
    "invalid_utf8_key": (Raw().kv(b"k\xff", 4, b"\0" * 4).bytes(), "gguf::metadata::invalid_utf8_key", True),
    "duplicate_key": (Raw().kv("k", 4, b"\0" * 4).kv("k", 4, b"\0" * 4).bytes(), "gguf::metadata::duplicate_key", True),
    "truncated_tensor_data": (tensor_file(dims=(1024,), data=16).bytes(), "gguf::layout::out_of_bounds", True),
    "truncated_header": (b"GGUF\x03\x00\x00\x00\x00", "gguf::input::unexpected_eof", True),
    "not_gguf": (b"PK\x03\x04" + b"\0" * 60, "gguf::header::bad_magic", True),
    "empty": (b"", "gguf::input::unexpected_eof", False),
}

# The native API reads the format from the magic (GGUF or .llmw) before any GGUF parsing.
NATIVE_CODE = {"not_gguf": "streaming::open::unknown_magic", "empty": "streaming::open::too_short"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_file_raises_a_typed_error(case: str, tmp_path: Path, gguf_py) -> None:
    data, code, run_reference = CASES[case]
    path = tmp_path / f"{case}.gguf"
    path.write_bytes(data)
    with pytest.raises(sipllm_gguf.GGUFError) as info:
        sipllm_gguf.GGUFReader(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.code == code, str(err)
    assert isinstance(err.offset, int) and 0 <= err.offset <= len(data)
    assert err.filename == str(path)
    assert err.help and code in str(err)
    if code.startswith("gguf::metadata") or code.startswith("gguf::limits"):
        assert err.path.startswith("metadata[")
    if run_reference:
        with pytest.raises(Exception):
            gguf_py.GGUFReader(path)
    # The native API says the same.
    findings = sipllm_gguf.validate(path)
    assert [(f.severity, f.code) for f in findings] == [("error", NATIVE_CODE.get(case, code))]
    if case not in NATIVE_CODE:
        assert (findings[0].offset, findings[0].path) == (err.offset, err.path)
    with pytest.raises(sipllm_gguf.GGUFError):
        sipllm_gguf.open(path)


def test_reader_refuses_what_gguf_py_refuses_after_what_it_reads(tmp_path: Path) -> None:
    """The reader parses once (lenient) and takes gguf-py's acceptance from what the parse
    tolerated: an empty key (gguf-py reads it) followed by a duplicate key (it does not) is
    refused with the duplicate, raised as an error (its code, offset and path, the error's
    message, not a tolerated warning's); the empty key alone is read."""
    u32 = struct.pack("<I", 7)
    bad = tmp_path / "empty-then-duplicate.gguf"
    bad.write_bytes(Raw().kv("", 4, u32).kv("k", 4, u32).kv("k", 4, u32).bytes())
    with pytest.raises(sipllm_gguf.GGUFError) as info:
        sipllm_gguf.GGUFReader(bad)
    err = info.value
    assert err.code == "gguf::metadata::duplicate_key", str(err)
    assert err.path.startswith("metadata[2]"), err.path
    assert "tolerated" not in str(err), str(err)
    # Where the lenient parse found it.
    lenient = sipllm_gguf.validate(bad, profile="lenient")
    dup = [f for f in lenient if f.code == "gguf::metadata::duplicate_key"]
    assert [(f.offset, f.path) for f in dup] == [(err.offset, err.path)]

    ok = tmp_path / "empty-key.gguf"
    ok.write_bytes(Raw().kv("", 4, u32).kv("k", 4, u32).bytes())
    reader = sipllm_gguf.GGUFReader(ok)
    assert list(reader.fields)[3:] == ["", "k"]
    assert reader.fields["k"].contents() == 7


def test_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    for call in (sipllm_gguf.GGUFReader, sipllm_gguf.open, sipllm_gguf.validate):
        with pytest.raises(FileNotFoundError) as info:
            call(missing)
        assert info.value.filename == str(missing)


def test_unknown_tensor_type_does_not_hide_metadata(tmp_path: Path, gguf_py) -> None:
    needs_corpus()
    original = CORPUS / "generated" / "tiny-llama.le.gguf"
    path = tmp_path / "newtype.gguf"
    shutil.copy(original, path)
    before = sipllm_gguf.GGUFReader(original)
    victim = before.tensors[1]
    type_at = victim.field.offset + 8 + len(victim.name.encode()) + 4 + 8 * len(victim.shape)
    patch(path, type_at, "<I", 99)

    with pytest.raises(ValueError):
        gguf_py.GGUFReader(path)  # gguf-py loses every field over one tensor
    reader = sipllm_gguf.GGUFReader(path)
    reference = gguf_py.GGUFReader(original)
    assert list(reader.fields) == list(reference.fields)
    for key, field in reference.fields.items():
        assert reader.fields[key].contents() == field.contents(), key
    t = reader.tensors[1]
    assert t.tensor_type == 99 and type(t.tensor_type) is int and t.n_bytes is None
    with pytest.raises(sipllm_gguf.GGUFError) as info:
        t.data
    assert info.value.code == "gguf::tensor::unknown_type"
    for other in reader.tensors[2:]:
        assert other.data.tobytes() == reference.tensors[reader.tensors.index(other)].data.tobytes()
    # The native API, strict, refuses the file; lenient lists the tensor with no size.
    assert sipllm_gguf.validate(path)[0].code == "gguf::tensor::unknown_type"
    model = sipllm_gguf.open(path, profile="lenient")
    assert model.tensors[1].type == 99 and model.tensors[1].nbytes is None


def test_rejected_corpus_files_through_validate() -> None:
    needs_corpus()
    from conftest import REJECTED

    for name, (code, offset, logical) in REJECTED.items():
        path = next(CORPUS.glob(f"*/{name}"))
        if code == "gguf::header::bad_magic":
            code = "streaming::open::unknown_magic"  # the native API sniffs GGUF or .llmw first
        assert [(f.code, f.offset, f.path) for f in sipllm_gguf.validate(path)] == [(code, offset, logical)]
    dbrx = next(CORPUS.glob("*/ggml-vocab-dbrx*.gguf"))
    lenient = sipllm_gguf.validate(dbrx, profile="lenient")
    assert ("warning", "gguf::metadata::duplicate_key") in [(f.severity, f.code) for f in lenient]
    with pytest.raises(ValueError):
        sipllm_gguf.validate(dbrx, profile="no-such-profile")
