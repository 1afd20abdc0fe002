"""Issue 26, the Python items: big-endian values equal their little-endian twin's (1);
``GGUFReader`` holds the shared lock ``open`` holds (7); keys and tensor names keep their
exact bytes (8); ``open`` reads a file truncated under it as a typed error where the
memory-mapped reader would die of SIGBUS (11)."""

from __future__ import annotations

import fcntl
import gc
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sipllm_gguf
from conftest import CORPUS, REPO, needs_corpus

ALIGN = 32


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def build(kvs: list[bytes], tensors: list[tuple[bytes, np.ndarray]]) -> bytes:
    """A little-endian v3 GGUF: ``kvs`` already encoded, F32 ``tensors`` (1-D)."""
    infos, data = b"", b""
    for name, values in tensors:
        arr = np.ascontiguousarray(values, dtype="<f4")
        data += b"\0" * (-len(data) % ALIGN)
        infos += _s(name) + struct.pack("<IQIQ", 1, arr.size, 0, len(data))
        data += arr.tobytes()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    return head + b"\0" * (-len(head) % ALIGN) + data


def kv_u32(key: bytes, v: int) -> bytes:
    return _s(key) + struct.pack("<II", 4, v)


def kv_str(key: bytes, v: bytes) -> bytes:
    return _s(key) + struct.pack("<I", 8) + _s(v)


def kv_strs(key: bytes, items: list[bytes]) -> bytes:
    return _s(key) + struct.pack("<IIQ", 9, 8, len(items)) + b"".join(_s(i) for i in items)


def _exclusive_lock_refused(path: Path) -> bool:
    """Whether ``flock(LOCK_EX | LOCK_NB)`` on a new open of ``path`` is refused: exactly what
    the in-place header rewrite (``sipllm edit --in-place``) tries before it writes."""
    with open(path, "rb") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def plain_model(tmp_path: Path) -> Path:
    p = tmp_path / "m.gguf"
    p.write_bytes(build([kv_str(b"general.architecture", b"llama")], [(b"w", np.arange(8))]))
    return p


def test_reader_holds_the_shared_lock_open_holds(tmp_path: Path) -> None:
    p = plain_model(tmp_path)
    assert not _exclusive_lock_refused(p)
    reader = sipllm_gguf.GGUFReader(p)
    assert _exclusive_lock_refused(p)
    # Readers share: a native model opens beside it, and the lock stays while either is open.
    model = sipllm_gguf.open(p)
    del reader
    gc.collect()
    assert _exclusive_lock_refused(p)
    del model
    gc.collect()
    assert not _exclusive_lock_refused(p)


def _sipllm() -> str | None:
    """The ``sipllm`` command: ``SIPLLM_BIN``, else one built in the checkout's target dirs."""
    found = os.environ.get("SIPLLM_BIN") or shutil.which("sipllm")
    if found:
        return found
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("debug", "release"):
        if (target / profile / "sipllm").is_file():
            return str(target / profile / "sipllm")
    return None


def test_edit_in_place_refuses_while_a_reader_is_open(tmp_path: Path) -> None:
    exe = _sipllm()
    if exe is None:
        pytest.skip("no sipllm command (set SIPLLM_BIN or build the CLI); the lock itself is tested above")
    p = plain_model(tmp_path)
    before = p.read_bytes()
    reader = sipllm_gguf.GGUFReader(p)
    run = subprocess.run(
        [exe, "edit", str(p), "--in-place", "--set", "general.architecture=str:qwen2"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert run.returncode != 0, run.stdout + run.stderr
    assert "lock" in run.stderr, run.stderr
    assert p.read_bytes() == before
    assert reader.fields["general.architecture"].contents() == "llama"
    del reader
    gc.collect()
    run = subprocess.run([exe, "edit", str(p), "--in-place", "--set", "general.architecture=str:qwen2"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def non_utf8_model(tmp_path: Path) -> Path:
    kvs = [
        kv_str(b"general.architecture", b"llama"),
        kv_u32(b"k\xff", 7),
        kv_u32(b"k\xfe", 8),
        kv_str(b"s\xff", b"v"),
        kv_strs(b"t.strs", [b"ok", b"a\xffb", b""]),
    ]
    tensors = [(b"w\xff.weight", np.array([1.0, 2.0])), (b"w\xfe.weight", np.array([3.0, 4.0, 5.0]))]
    p = tmp_path / "names.gguf"
    p.write_bytes(build(kvs, tensors))
    return p


def test_the_strict_profile_still_refuses_non_utf8_keys(tmp_path: Path) -> None:
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        sipllm_gguf.open(non_utf8_model(tmp_path))
    assert e.value.code.startswith("gguf::metadata::invalid_utf8"), e.value


@pytest.mark.parametrize("profile", ["lenient", "llama-cpp"])
def test_keys_and_names_keep_their_bytes(tmp_path: Path, profile: str) -> None:
    p = non_utf8_model(tmp_path)
    if profile == "llama-cpp":
        try:
            model = sipllm_gguf.open(p, profile)
        except sipllm_gguf.GGUFError as e:
            pytest.skip(f"the llama-cpp profile refuses this file: {e.code}")
    else:
        model = sipllm_gguf.open(p, profile)
    meta = model.metadata
    assert list(meta) == ["general.architecture", b"k\xff", b"k\xfe", b"s\xff", "t.strs"]
    d = dict(meta)
    assert d[b"k\xff"] == 7 and d[b"k\xfe"] == 8 and d[b"s\xff"] == "v"
    assert b"k\xff" in meta and "k\ufffd" not in meta
    with pytest.raises(KeyError):
        meta["k\ufffd"]
    with pytest.raises(KeyError):
        meta[b"k"]
    assert meta.type_of(b"k\xfe")[0] == 4
    # A string-array element that is not UTF-8 is its bytes, as a string value is.
    strs = meta["t.strs"]
    assert list(strs) == ["ok", b"a\xffb", ""]
    assert strs.to_list() == ["ok", b"a\xffb", ""]
    assert strs[1] == b"a\xffb" and strs[-3:] == ["ok", b"a\xffb", ""]
    # Two tensors the lossy name would merge stay two, each with its own data.
    names = [t.name for t in model.tensors]
    assert names == [b"w\xff.weight", b"w\xfe.weight"]
    assert model.tensor(b"w\xff.weight").shape == (2,)
    assert model.values(b"w\xff.weight").tolist() == [1.0, 2.0]
    assert model.values(b"w\xfe.weight").tolist() == [3.0, 4.0, 5.0]
    assert model.read(b"w\xfe.weight") == np.array([3, 4, 5], "<f4").tobytes()
    assert model.values_at(b"w\xfe.weight", 1, 3).tolist() == [4.0, 5.0]
    for wrong in ("w\ufffd.weight", b"w.weight", 3):
        with pytest.raises(KeyError):
            model.read(wrong)  # type: ignore[arg-type]


def test_open_reads_a_file_truncated_under_it_as_a_typed_error(tmp_path: Path) -> None:
    # GGUFReader maps the file with numpy.memmap, as gguf-py does: touching a tensor of a file
    # another process truncated is SIGBUS (docs/python.md). open() reads with pread.
    p = tmp_path / "t.gguf"
    p.write_bytes(build([kv_str(b"general.architecture", b"llama")], [(b"a", np.arange(4)), (b"b", np.arange(64))]))
    model = sipllm_gguf.open(p)
    offset = model.tensor("b").offset
    os.truncate(p, offset + 8)
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        model.read("b")
    assert e.value.code == "streaming::io::unexpected_eof", e.value
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        model.values("b")
    assert e.value.code == "streaming::io::unexpected_eof", e.value
    # What is still there reads.
    assert model.values("a").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_big_endian_values_equal_the_little_endian_twins() -> None:
    # The seam byte-swaps a big-endian file's whole-element types and leaves blocks as stored
    # (the format's rule); Python's chunk loop applies the same rule, once.
    needs_corpus()
    be = sipllm_gguf.open(CORPUS / "generated" / "tiny-llama.be.gguf")
    le = sipllm_gguf.open(CORPUS / "generated" / "tiny-llama.le.gguf")
    assert [t.name for t in be.tensors] == [t.name for t in le.tensors]
    types = set()
    for t in le.tensors:
        want = le.values(t.name)
        got = be.values(t.name)
        assert got.shape == want.shape == t.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), t.name
        n = t.n_elements
        assert np.array_equal(be.values_at(t.name, n // 3, n).view(np.uint32), want.reshape(-1)[n // 3 :].view(np.uint32))
        types.add(t.type_name)
    # Whole-element and block types alike.
    assert {"F32", "F16"} <= types and types - {"F32", "F16", "BF16"}, types
