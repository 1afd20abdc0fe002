"""The native API: :func:`open` a model (GGUF, a split GGUF set, or ``.llmw``), :func:`validate`
a file.

>>> import sipllm_gguf
>>> model = sipllm_gguf.open("model.gguf")                     # doctest: +SKIP
>>> model.metadata["general.architecture"], len(model.tokens)  # doctest: +SKIP
('llama', 128256)
>>> model.read("output_norm.weight")[:4]                       # doctest: +SKIP
b'\\x00\\x00\\x80?'

Opening reads the header only. Metadata values are decoded when they are looked up: integers,
floats, bools and strings as Python objects, numeric arrays as numpy arrays of the stored type,
string arrays as a lazy :class:`StrSeq`. Tensor data is read only by :meth:`Model.read`
(stored bytes) and :meth:`Model.values` (``float32`` values in the row-major shape).
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Mapping, Sequence
from typing import Any, Iterator, NamedTuple

import numpy as np
import numpy.typing as npt

from . import _native
from ._enums import enums, tensor_type
from .quants import _check_out

__all__ = ["Finding", "Metadata", "Model", "StrSeq", "Tensor", "open", "validate"]

#: A string array as a lazy, read-only sequence of ``str`` (``len``, indexing, slicing,
#: iteration, ``to_list()`` for all of them in one call).
StrSeq = _native.StrSeq
Sequence.register(StrSeq)


class Finding(NamedTuple):
    """One problem in a file: ``severity`` (``"error"`` or ``"warning"``), a stable ``code``
    (``gguf::metadata::duplicate_key``), the absolute byte ``offset`` and ``length`` of the
    bytes concerned, the logical ``path`` (``metadata[14] "general.file_type"``), a ``message``
    and a ``help`` text saying how to fix it."""

    severity: str
    code: str
    offset: int | None
    length: int
    path: str
    message: str
    help: str


class Tensor(NamedTuple):
    """One tensor: ``name``, ``type`` (``GGMLQuantizationType``, or the int code of a type it
    does not know), ``type_name`` (``"Q4_K"``), row-major ``shape`` (outermost first: a matrix
    is ``(n_out, n_in)``), ``nbytes`` (``None`` for an unknown type) and the absolute byte
    ``offset`` of its data."""

    name: str
    type: Any
    type_name: str
    shape: tuple[int, ...]
    nbytes: int | None
    offset: int

    @property
    def n_elements(self) -> int:
        """The product of the shape (1 for a scalar)."""
        n = 1
        for d in self.shape:
            n *= d
        return n


def _convert(value: tuple[Any, ...]) -> Any:
    kind = value[0]
    if kind == "value" or kind == "strs":
        return value[1]
    if kind == "array":
        arr = np.frombuffer(value[2], dtype=np.dtype(value[1]))
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return arr
    return [_convert(v) for v in value[1]]


class Metadata(Mapping):  # type: ignore[type-arg]
    """The metadata of a model as a read-only mapping in file order, decoded on lookup."""

    def __init__(self, native: Any):
        self._native = native
        self._keys: list[str] | None = None

    def _key_list(self) -> list[str]:
        if self._keys is None:
            self._keys = self._native.keys()
        return self._keys

    def __getitem__(self, key: str) -> Any:
        value = self._native.get(key) if isinstance(key, str) else None
        if value is None:
            raise KeyError(key)
        return _convert(value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._key_list()

    def __iter__(self) -> Iterator[str]:
        return iter(self._key_list())

    def __len__(self) -> int:
        return len(self._key_list())

    def type_of(self, key: str) -> tuple[Any, Any] | None:
        """The stored GGUF type of ``key``: ``(GGUFValueType, element GGUFValueType or None)``;
        ``None`` for ``.llmw`` models, whose values have no GGUF type."""
        found = self._native.value_type(key)
        if found is None:
            if key not in self:
                raise KeyError(key)
            return None
        vt = enums()[0]
        return vt(found[0]), (None if found[1] is None else vt(found[1]))

    def __repr__(self) -> str:
        return f"<Metadata: {len(self)} keys>"


class Model:
    """An opened model (see :func:`open`)."""

    def __init__(self, native: Any):
        self._native = native
        self.metadata = Metadata(native)
        self._tensors: tuple[Tensor, ...] | None = None
        self._by_name: dict[str, Tensor] | None = None

    @property
    def path(self) -> str:
        """The path given to :func:`open`."""
        return self._native.path

    @property
    def format(self) -> str:
        """``"gguf"`` or ``"llmw"``."""
        return self._native.format

    @property
    def version(self) -> int | None:
        """The format version."""
        return self._native.version

    @property
    def file_size(self) -> int:
        """The file's size in bytes (a split set's: all its shards, as one address space)."""
        return self._native.file_size

    @property
    def shard_count(self) -> int:
        """1, or the number of files of a split GGUF set."""
        return self._native.shard_count

    @property
    def tokens(self) -> StrSeq | None:
        """``tokenizer.ggml.tokens`` as a lazy sequence of ``str``, or ``None``."""
        return self._native.strings("tokenizer.ggml.tokens")

    def strings(self, key: str) -> StrSeq | None:
        """The string array under ``key`` as a lazy sequence, or ``None``."""
        return self._native.strings(key)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor in directory order."""
        if self._tensors is None:
            self._tensors = tuple(
                Tensor(name, tensor_type(code), tname, shape, nbytes, offset)
                for (name, code, tname, shape, nbytes, offset) in self._native.tensors()
            )
        return self._tensors

    def tensor(self, name: str) -> Tensor:
        """The tensor called ``name`` (``KeyError`` if there is none)."""
        if self._by_name is None:
            self._by_name = {t.name: t for t in self.tensors}
        return self._by_name[name]

    def read(self, name: str) -> bytes:
        """The stored bytes of tensor ``name``, in one read."""
        return self._native.read(name)

    def read_array(self, name: str) -> npt.NDArray[np.uint8]:
        """The stored bytes of tensor ``name`` as a read-only 1-D numpy ``uint8`` array (no
        copy beyond the read)."""
        return np.frombuffer(self._native.read(name), dtype=np.uint8)

    def values(
        self, name: str, *, threads: int | None = None, out: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """The values of tensor ``name`` as a fresh, writable ``float32`` array in its
        row-major :attr:`Tensor.shape`: bit for bit what gguf-py's
        ``gguf.quants.dequantize(reader_tensor.data, reader_tensor.tensor_type)`` gives, read
        in bounded chunks (8 MiB of stored bytes at a time, besides the result) and
        dequantized with the GIL released. ``threads``: as in
        :func:`sipllm_gguf.quants.dequantize` (default: the calling thread; 0: every core);
        ``out``: a C-contiguous ``float32`` array of the tensor's shape to write into instead
        of a fresh one (a buffer reused across tensors), which is returned.

        Raises :class:`~sipllm_gguf.UnsupportedTypeError` (a ``NotImplementedError``) for a
        type without values (integer tensors, ``Q8_1``, ``Q8_K``, unknown codes),
        :class:`~sipllm_gguf.GGUFError` with code ``python::values::big_endian`` for a
        big-endian file, ``KeyError`` for a missing tensor."""
        n_threads = 1 if threads is None else operator.index(threads)
        if n_threads < 0:
            raise ValueError(f"threads must be 0 or more (0: every core), not {threads}")
        shape = self.tensor(name).shape
        out = np.empty(shape, dtype=np.float32) if out is None else _check_out(out, shape)
        self._native.values(name, out.reshape(-1).view(np.uint8), threads=n_threads)
        return out

    def values_at(self, name: str, start: int, stop: int) -> npt.NDArray[np.float32]:
        """Values ``start:stop`` (element indices in row-major order, ``stop`` exclusive) of
        tensor ``name`` as a 1-D ``float32`` array, reading only the blocks they touch (a few
        rows of a big tensor, say). A range outside the tensor raises
        :class:`~sipllm_gguf.GGUFError` (``stream::values::element_range``)."""
        start, stop = operator.index(start), operator.index(stop)
        if start < 0 or stop < 0:
            raise ValueError(f"element indices must be 0 or more, not {start}:{stop}")
        n = self.tensor(name).n_elements
        # A range outside the tensor gets the read side's typed error before any allocation.
        out = np.empty(stop - start if start <= stop <= n else 0, dtype=np.float32)
        self._native.values(name, out.view(np.uint8), start, stop)
        return out

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes at absolute ``offset`` (a part of a tensor, say; a split set's
        offsets are in one address space over its shards, as the tensors' are)."""
        return self._native.read_at(offset, length)

    def warnings(self) -> list[Finding]:
        """What the parse found that did not stop it."""
        return [Finding(*w) for w in self._native.warnings()]

    @property
    def chat_template(self) -> str | None:
        """The default chat template (``tokenizer.chat_template``) exactly as stored, or
        ``None``."""
        return self.chat_templates.get("default")

    @property
    def chat_templates(self) -> dict[str, str]:
        """Every chat template by name, as transformers names them: ``"default"`` for
        ``tokenizer.chat_template``, ``NAME`` for ``tokenizer.chat_template.NAME``."""
        rows, _, _ = _native.chat_templates(self._native)
        return {("default" if name is None else name): text for (name, text, _, _) in rows}

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"<sipllm_gguf.Model {self.path!r}: {self.format} v{self.version}, {len(self.metadata)} keys, {len(self.tensors)} tensors>"


def render_chat(
    model_or_template: Model | str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    **vars: Any,
) -> str:
    """The prompt ``messages`` make through a chat template, rendered as transformers'
    ``apply_chat_template(tokenize=False)`` renders it (Jinja2 semantics, bounded: a hostile
    template raises instead of hanging).

    ``model_or_template``: a :class:`Model` (its default template, and ``bos_token`` /
    ``eos_token`` from its vocabulary) or the template's text. ``vars``: further template
    variables (``enable_thinking=False``, …; ``bos_token``/``eos_token`` override the
    model's; default ``<s>``/``</s>`` for a bare template). Raises
    :class:`~sipllm_gguf.GGUFError` with a ``template::…`` code (``template::raised`` when
    the template refuses the conversation), ``ValueError`` for a model without a template."""
    bos, eos = "<s>", "</s>"
    if isinstance(model_or_template, Model):
        rows, model_bos, model_eos = _native.chat_templates(model_or_template._native)
        default = [text for (name, text, _, _) in rows if name is None]
        if not default:
            raise ValueError(f"{model_or_template.path}: the model has no tokenizer.chat_template")
        template = default[0]
        bos = model_bos if model_bos is not None else bos
        eos = model_eos if model_eos is not None else eos
    else:
        template = model_or_template
    bos = vars.pop("bos_token", bos)
    eos = vars.pop("eos_token", eos)
    extra = [(key, json.dumps(value)) for key, value in vars.items()]
    return _native.render_chat(
        template,
        json.dumps(messages),
        None if tools is None else json.dumps(tools),
        bool(add_generation_prompt),
        str(bos),
        str(eos),
        extra,
    )


def open(path: str | os.PathLike[str], profile: str = "strict") -> Model:  # noqa: A001
    """Opens the model at ``path`` (GGUF, a split GGUF set from any of its shards, or
    ``.llmw``; the format is read from the first 4 bytes), reading its header only.

    ``profile`` is ``"strict"`` (the spec plus safety), ``"llama-cpp"`` (exactly what llama.cpp
    loads) or ``"lenient"`` (read damaged files, with warnings). Raises
    :class:`~sipllm_gguf.GGUFError` for an invalid file, ``OSError`` for an unreadable one."""
    return Model(_native.open(os.fsdecode(os.fspath(path)), profile))


def validate(path: str | os.PathLike[str], profile: str = "strict") -> list[Finding]:
    """Every problem in the file at ``path`` under ``profile``: the warnings when it opens, or
    the error that stops it (last). An empty list means valid. ``OSError`` if unreadable."""
    return [Finding(*f) for f in _native.validate(os.fsdecode(os.fspath(path)), profile)]
