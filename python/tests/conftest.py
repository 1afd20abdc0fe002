"""Shared fixtures: the reference corpus (../shared), gguf-py, and file builders.

The corpus lives beside the checkout (``../shared/corpus``; ``SIPLLM_SHARED`` overrides). When it
is absent, the tests that need it skip and say so in the session header and in each skip.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SIPLLM_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
HAVE_CORPUS = CORPUS.is_dir()


def pytest_report_header(config: pytest.Config) -> list[str]:
    if HAVE_CORPUS:
        return [f"sipllm: reference corpus at {CORPUS}"]
    return [f"sipllm: WARNING: the reference corpus {CORPUS} is ABSENT: the corpus tests SKIP"]


def corpus_files(*dirs: str) -> list[Path]:
    if not HAVE_CORPUS:
        return []
    out: list[Path] = []
    for d in dirs:
        out.extend(sorted((CORPUS / d).glob("*.gguf")))
    return out


def needs_corpus() -> None:
    if not HAVE_CORPUS:
        pytest.skip(f"the reference corpus {CORPUS} is absent (set SIPLLM_SHARED)")


def corpus_params(*dirs: str) -> list[object]:
    """pytest params, one per corpus file; a single loud skip when the corpus is absent."""
    files = corpus_files(*dirs)
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"reference corpus {CORPUS} ABSENT"))]
    return [pytest.param(f, id=f.name) for f in files]


# Files in the corpus gguf-py 0.19.0 rejects, with the error sipllm_gguf must raise instead:
# (code, offset, logical path).
REJECTED = {
    "ggml-vocab-dbrx.2024-05-07.gguf": ("gguf::metadata::duplicate_key", 569, 'metadata[14] "general.file_type" key'),
    "ggml-vocab-llama.2023-08-17.fugg-magic.gguf": ("gguf::header::bad_magic", 0, "header.magic"),
    "ggml-vocab-llama.2023-08-18.v1.gguf": ("gguf::header::v1_disabled", 4, "header.version"),
    "ggml-vocab-llama.2023-08-19.v1.gguf": ("gguf::header::v1_disabled", 4, "header.version"),
    "test_writer.2024-02-06.gguf": ("gguf::metadata::unknown_value_type", 204, 'metadata[6] "dict1" type'),
}


@pytest.fixture(scope="session")
def gguf_py():
    """gguf-py 0.19.0, the reference reader (installed by .ci/run)."""
    gguf = pytest.importorskip("gguf")
    return gguf


def write_with_gguf_py(path: Path, build, *, big_endian: bool = False) -> Path:
    """Writes a GGUF file with gguf-py's own writer; ``build(writer)`` adds keys and tensors."""
    import gguf

    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    w = gguf.GGUFWriter(str(path), arch="llama", endianess=endian)
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def rich_model(w) -> None:
    """Every value type, empty arrays, nested arrays, and tensors of several ggml types."""
    import gguf

    rng = np.random.default_rng(7)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000)
    w.add_int32("t.i32", -2_000_000_000)
    w.add_float32("t.f32", 1e-5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo ✓ 🦙")
    w.add_string("t.empty_str", "")
    w.add_uint64("t.u64", 2**63 + 5)
    w.add_int64("t.i64", -(2**62))
    w.add_float64("t.f64", 3.141592653589793)
    w.add_array("t.ints", [1, 2, 3, -4])
    w.add_array("t.floats", [0.5, -1.25, 1e10])
    w.add_array("t.bools", [True, False, True])
    w.add_array("t.strs", ["a", "", "ü", "end"])
    w.add_key_value("t.u8s", [1, 2, 255], gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.UINT8)
    w.add_array("t.nested", [[1, 2], [3], [4, 5, 6]])
    w.add_array("t.nested_strs", [["x", "yz"], ["w"]])
    w.add_tensor("f32", rng.standard_normal((3, 8)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal((2, 4, 8)).astype(np.float16))
    w.add_tensor("i32", np.arange(10, dtype=np.int32))
    w.add_tensor("i8", np.arange(-4, 4, dtype=np.int8))
    w.add_tensor("f64", rng.standard_normal((5,)).astype(np.float64))
    # Quantized tensors are given as their raw bytes in the byte shape (gguf-py's convention).
    w.add_tensor("q8_0", rng.integers(0, 255, (4, 34 * 2), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q4_k", rng.integers(0, 255, (2, 144), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("bf16", rng.integers(0, 255, (3, 16), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.BF16)


class Raw:
    """A GGUF file built by hand, for what gguf-py's writer refuses to write (empty arrays)
    and for damaged files. Little-endian, v3."""

    def __init__(self, kv_count: int | None = None, tensor_count: int = 0, version: int = 3):
        self.kvs: list[bytes] = []
        self.kv_count = kv_count
        self.tensor_count = tensor_count
        self.version = version
        self.tail = b""

    @staticmethod
    def s(text: bytes | str) -> bytes:
        b = text.encode() if isinstance(text, str) else text
        return struct.pack("<Q", len(b)) + b

    def kv(self, key: bytes | str, vtype: int, payload: bytes) -> Raw:
        self.kvs.append(self.s(key) + struct.pack("<I", vtype) + payload)
        return self

    def bytes(self) -> bytes:
        n = len(self.kvs) if self.kv_count is None else self.kv_count
        head = b"GGUF" + struct.pack("<IQQ", self.version, self.tensor_count, n)
        return head + b"".join(self.kvs) + self.tail

    def write(self, path: Path) -> Path:
        path.write_bytes(self.bytes())
        return path


def patch(path: Path, offset: int, fmt: str, value: int) -> None:
    """Overwrites one little-endian integer in a file."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, value))


@pytest.fixture(scope="session")
def reference_readers(gguf_py):
    """gguf-py readers, opened once per file for the whole session (each takes seconds)."""
    cache: dict[Path, object] = {}

    def get(path: Path):
        if path not in cache:
            cache[path] = gguf_py.GGUFReader(path)
        return cache[path]

    return get
