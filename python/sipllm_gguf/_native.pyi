"""Type stubs of the Rust extension module ``sipllm_gguf._native`` (PyO3).

Programs use the Python API (``sipllm_gguf.GGUFReader``, ``open``, ``validate``); these are its
building blocks.
"""

from collections.abc import Iterator
from typing import Any, overload

__version__: str

FindingRow = tuple[str, str, int | None, int, str, str, str]

class GGUFError(ValueError):
    """A GGUF file is invalid (a ``ValueError``, as gguf-py raises)."""

    code: str
    """The stable code, e.g. ``gguf::metadata::duplicate_key``."""
    offset: int | None
    """Absolute byte offset of the offending bytes."""
    length: int
    """Their length (0 for a position, e.g. the end of the file)."""
    path: str
    """The logical path, e.g. ``metadata[14] "general.file_type" key``."""
    filename: str | None
    """The file."""
    help: str
    """How to fix it."""
    detail: str
    """The message without the location."""

class UnsupportedTypeError(GGUFError, NotImplementedError):
    """A tensor type without values (code ``quants::dequant::unsupported_type``): a ``GGUFError`` and
    the ``NotImplementedError`` gguf-py's ``dequantize`` raises."""

class Header:
    """A parsed GGUF header: offsets, types and spans for ``GGUFReader``."""

    @property
    def version(self) -> int: ...
    @property
    def big_endian(self) -> bool: ...
    @property
    def alignment(self) -> int: ...
    @property
    def data_offset(self) -> int: ...
    @property
    def directory_end(self) -> int: ...
    @property
    def file_size(self) -> int: ...
    def warnings(self) -> list[FindingRow]: ...
    def fileno(self) -> int:
        """The open, locked file the header was parsed from (POSIX only): the reader maps it."""
    def kvs(self) -> list[KvRecord]:
        """Every key/value pair in file order."""
    def tensors(self) -> list[TensorRecord]:
        """Every tensor info in directory order."""
    def string_starts(self, index: int) -> bytes:
        """n + 1 native u64: each element's length-field offset, then the array's end."""
    def layout(self, index: int) -> tuple[list[tuple[int, int, int]], list[int], list[int]]:
        """gguf-py's (parts as (offset, type, count), data, types) of a value."""

class KvRecord:
    """A key/value pair by the parser's spans; every offset absolute, into the file."""

    offset: int
    key: str
    key_offset: int
    key_len: int
    type_offset: int
    value_type: int
    value_offset: int
    payload_offset: int
    payload_len: int
    count_offset: int | None
    elem_type: int | None
    count: int | None

class TensorRecord:
    """A tensor info by the parser's spans; the last three are None for an unknown type."""

    offset: int
    name: str
    name_offset: int
    name_len: int
    n_dims_offset: int
    n_dims: int
    dims_offset: int
    type_offset: int
    ggml_type: int
    offset_offset: int
    data_offset: int
    n_elements: int
    n_bytes: int | None
    block_size: int | None
    type_size: int | None

def read_header(path: str, compat: bool = True, profile: str = "strict") -> Header: ...
def decode_strings(buf: bytes, count: int, big: bool = False) -> list[str]: ...

Name = str | bytes
"""A key or tensor name: ``str``, or its stored ``bytes`` when they are not UTF-8."""

class StrSeq:
    """A string array as a lazy, read-only sequence of ``str`` (``bytes`` for an element that
    is not UTF-8)."""

    @property
    def key(self) -> Name: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int) -> str | bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[str | bytes]: ...
    def __iter__(self) -> Iterator[str | bytes]: ...
    def to_list(self) -> list[str | bytes]: ...

class StrSeqIter:
    def __iter__(self) -> StrSeqIter: ...
    def __next__(self) -> str | bytes: ...

MetaValue = tuple[str, object] | tuple[str, str, bytes]

class Model:
    """An opened model (GGUF, split GGUF set or .llmw)."""

    @property
    def format(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def version(self) -> int | None: ...
    @property
    def file_size(self) -> int: ...
    @property
    def shard_count(self) -> int: ...
    @property
    def big_endian(self) -> bool: ...
    def warnings(self) -> list[FindingRow]: ...
    def keys(self) -> list[Name]: ...
    def get(self, key: Name) -> MetaValue | None: ...
    def value_type(self, key: Name) -> tuple[int, int | None] | None: ...
    def strings(self, key: Name) -> StrSeq | None: ...
    def tensors(self) -> list[tuple[Name, int, str, tuple[int, ...], int | None, int]]: ...
    def read(self, name: Name) -> bytes: ...
    def read_at(self, offset: int, length: int) -> bytes: ...
    def values(
        self, name: Name, out: object, start: int | None = None, stop: int | None = None, threads: int = 1
    ) -> None:
        """f32 values of elements ``start..stop`` (default: all) into ``out``, a 1-D uint8 view
        of a float32 array of their size."""

def open(path: str, profile: str = "strict") -> Model: ...
def is_remote(path: str) -> bool:
    """Whether ``path`` is a URL (``http://``, ``https://``, ``hf://``, ``s3://`` …)."""
def shown_name(path: str) -> str:
    """``path`` as messages show it: a URL with its credentials redacted."""
def fit(
    model: Model,
    profile: str = "server",
    n_ctx: int | None = None,
    n_batch: int | None = None,
    n_ubatch: int | None = None,
    n_seq_max: int | None = None,
    type_k: str | None = None,
    type_v: str | None = None,
    flash_attn: str | None = None,
    kv_unified: bool | None = None,
    swa_full: bool | None = None,
    n_gpu_layers: int | None = None,
    memory: int | None = None,
) -> dict[str, Any] | None:
    """The memory llama.cpp would allocate (the fields of ``sipllm fit --json``)."""
def chat_templates(
    model: Model,
) -> tuple[list[tuple[str | None, str, str, int]], str | None, str | None]: ...
def render_chat(
    template: str,
    messages: str,
    tools: str | None,
    add_generation_prompt: bool,
    bos_token: str,
    eos_token: str,
    vars: list[tuple[str, str]],
    now: str | None = None,
    strict: bool = False,
) -> str: ...
def dequantize(data: bytes | object, code: int, out: object, threads: int = 1) -> None:
    """f32 values of ``data`` (``bytes``, or a 1-D uint8 array/memoryview) into ``out``, a 1-D
    uint8 view of a float32 array of their size; ``threads``: 0 = every core."""
def row_values(code: int, row_bytes: int) -> int:
    """Values in ``row_bytes`` bytes of type ``code``; raises the typed error otherwise."""
def supported_types() -> list[tuple[int, str, int, int]]:
    """(code, name, block size, type size) of every type with values."""
def validate(path: str, profile: str = "strict") -> list[FindingRow]: ...
def to_safetensors(
    model: Model, path: str, dtype: str = "f32", names: str = "gguf"
) -> tuple[int, int, int, str | None]:
    """Exports ``model`` as safetensors: (tensors, file bytes, copied as stored, config.json)."""
def tensor_location(model: Model, name: str) -> tuple[str, int, bool] | None:
    """(file, offset in it, big-endian) of tensor ``name``'s bytes; None for a URL."""
def load_check(model: Model) -> tuple[list[FindingRow], str | None, bool, bool, bool]:
    """(findings, arch, known_arch, loads, crashes) of the llama.cpp load check."""
