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

__all__ = ["Finding", "LoadReport", "Metadata", "Model", "StrSeq", "Tensor", "open", "validate"]

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


class LoadReport(NamedTuple):
    """What :meth:`Model.load_check` found: the ``findings`` (errors: llama.cpp refuses the
    file; warnings: something was not checked), the ``arch`` (``general.architecture``),
    whether llama.cpp knows it (``known_arch``), whether it ``loads``, and whether llama.cpp
    would abort on it (``crashes``: a ``GGML_ASSERT`` or a division by zero) rather than refuse
    it."""

    findings: list[Finding]
    arch: str | None
    known_arch: bool
    loads: bool
    crashes: bool


class Tensor(NamedTuple):
    """One tensor: ``name`` (``bytes`` when the stored name is not UTF-8), ``type`` (``GGMLQuantizationType``, or the int code of a type it
    does not know), ``type_name`` (``"Q4_K"``), row-major ``shape`` (outermost first: a matrix
    is ``(n_out, n_in)``), ``nbytes`` (``None`` for an unknown type) and the absolute byte
    ``offset`` of its data."""

    name: str | bytes
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
    """The metadata of a model as a read-only mapping in file order, decoded on lookup.

    A key is a ``str``, or its stored ``bytes`` when they are not UTF-8 (the llama-cpp and
    lenient profiles read such keys); lookups compare stored bytes exactly, so
    ``dict(metadata)`` holds every key."""

    def __init__(self, native: Any):
        self._native = native
        self._keys: list[str] | None = None

    def _key_list(self) -> list[str]:
        if self._keys is None:
            self._keys = self._native.keys()
        return self._keys

    def __getitem__(self, key: str | bytes) -> Any:
        value = self._native.get(key) if isinstance(key, (str, bytes)) else None
        if value is None:
            raise KeyError(key)
        return _convert(value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, (str, bytes)) and key in self._key_list()

    def __iter__(self) -> Iterator[str | bytes]:
        return iter(self._key_list())

    def __len__(self) -> int:
        return len(self._key_list())

    def type_of(self, key: str | bytes) -> tuple[Any, Any] | None:
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

    def strings(self, key: str | bytes) -> StrSeq | None:
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

    def tensor(self, name: str | bytes) -> Tensor:
        """The tensor called ``name`` (``KeyError`` if there is none): a ``str``, or the
        stored ``bytes`` of a name that is not UTF-8; matched exactly."""
        if self._by_name is None:
            self._by_name = {t.name: t for t in self.tensors}
        return self._by_name[name]

    def read(self, name: str | bytes) -> bytes:
        """The stored bytes of tensor ``name``, in one read."""
        return self._native.read(name)

    def read_array(self, name: str | bytes) -> npt.NDArray[np.uint8]:
        """The stored bytes of tensor ``name`` as a read-only 1-D numpy ``uint8`` array (no
        copy beyond the read)."""
        return np.frombuffer(self._native.read(name), dtype=np.uint8)

    def values(
        self, name: str | bytes, *, threads: int | None = None, out: npt.NDArray[np.float32] | None = None
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
        ``KeyError`` for a missing tensor. A big-endian file's values are its little-endian
        twin's (whole-element types byte-swapped, blocks as stored: the format's rule)."""
        n_threads = 1 if threads is None else operator.index(threads)
        if n_threads < 0:
            raise ValueError(f"threads must be 0 or more (0: every core), not {threads}")
        shape = self.tensor(name).shape
        out = np.empty(shape, dtype=np.float32) if out is None else _check_out(out, shape)
        self._native.values(name, out.reshape(-1).view(np.uint8), threads=n_threads)
        return out

    def values_at(self, name: str | bytes, start: int, stop: int) -> npt.NDArray[np.float32]:
        """Values ``start:stop`` (element indices in row-major order, ``stop`` exclusive) of
        tensor ``name`` as a 1-D ``float32`` array, reading only the blocks they touch (a few
        rows of a big tensor, say). A range outside the tensor raises
        :class:`~sipllm_gguf.GGUFError` (``streaming::values::element_range``)."""
        start, stop = operator.index(start), operator.index(stop)
        if start < 0 or stop < 0:
            raise ValueError(f"element indices must be 0 or more, not {start}:{stop}")
        n = self.tensor(name).n_elements
        # A range outside the tensor gets the read side's typed error before any allocation.
        out = np.empty(stop - start if start <= stop <= n else 0, dtype=np.float32)
        self._native.values(name, out.view(np.uint8), start, stop)
        return out

    def to_safetensors(
        self, path: str | os.PathLike[str], dtype: str = "f32", *, names: str = "gguf"
    ) -> dict[str, Any]:
        """Writes the model as a safetensors file at ``path``, streaming (memory stays at a
        few chunks of about 8 MiB, whatever the model's size) and atomically (a temporary
        beside ``path``, renamed over it when complete). ``dtype``: ``"f32"`` (gguf-py's
        dequantization, bit for bit), ``"f16"``/``"bf16"`` (rounded to nearest even from
        those exact values) or ``"keep"`` (F32/F16/BF16 as stored, the rest as f32).
        ``names="hf"``: transformers' parameter names (llama, mistral, qwen2, qwen3, phi3,
        gemma2, gemma3), Q/K un-permuted, Gemma norms less 1, and a ``config.json`` beside the
        file. Returns ``{"tensors", "bytes", "copied", "config"}``; raises
        :class:`~sipllm_gguf.GGUFError` (codes ``edit::safetensors::…``) when it cannot be done."""
        n, size, copied, config = _native.to_safetensors(
            self._native, os.fsdecode(os.fspath(path)), dtype, names
        )
        return {"tensors": n, "bytes": size, "copied": copied, "config": config}

    def array(self, name: str) -> np.ndarray:  # type: ignore[type-arg]
        """Tensor ``name``'s stored elements as a read-only numpy array in its row-major
        :attr:`Tensor.shape` that **shares memory with the file** (a ``numpy.memmap`` of its
        bytes: no copy, pages read when touched), so ``torch.from_numpy`` takes it without a
        copy either. F32 → ``float32``, F16 → ``float16``, F64 and the integer types as
        themselves; **BF16 → ``uint16``** (numpy has no bfloat16): the raw bits, which
        ``torch.from_numpy(a).view(torch.bfloat16)`` reinterprets without a copy, and
        ``(a.astype(np.uint32) << 16).view(np.float32)`` turns into float32 values (a copy).
        A big-endian file gives big-endian dtypes (``>f4`` …). Quantized tensors have no
        such view: use :meth:`values`. Raises ``KeyError`` for a missing tensor, ``TypeError``
        for a quantized one, ``ValueError`` for a model not in local files."""
        t = self.tensor(name)
        kind = _ARRAY_DTYPES.get(t.type_name)
        if kind is None:
            raise TypeError(
                f"tensor {name!r} is {t.type_name}, which has no array view; use Model.values"
            )
        where = _native.tensor_location(self._native, name)
        if where is None:
            if not _native.is_remote(self.path):
                raise ValueError(f"{self.path} is not a local file: Model.array maps files")
            # A URL has no file to map: the tensor's bytes in one request, viewed read-only.
            dtype = np.dtype(kind).newbyteorder(">" if self._native.big_endian else "<")
            return np.frombuffer(self.read(name), dtype=dtype).reshape(tuple(t.shape))
        path, offset, big = where
        dtype = np.dtype(kind).newbyteorder(">" if big else "<")
        return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=tuple(t.shape))

    def read_at(self, offset: int, length: int) -> bytes:
        """``length`` bytes at absolute ``offset`` (a part of a tensor, say; a split set's
        offsets are in one address space over its shards, as the tensors' are)."""
        return self._native.read_at(offset, length)

    def warnings(self) -> list[Finding]:
        """What the parse found that did not stop it."""
        return [Finding(*w) for w in self._native.warnings()]

    def load_check(self) -> LoadReport:
        """Whether llama.cpp 0c1e570's loader would load this model, from its header: the
        findings (``model::load::…`` codes) of ``sipllm validate --model``."""
        rows, arch, known_arch, loads, crashes = _native.load_check(self._native)
        return LoadReport([Finding(*f) for f in rows], arch, known_arch, loads, crashes)
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

    def fit(self, profile: str = "server", *, memory: int | None = None, **params: Any) -> dict[str, Any] | None:
        """The memory llama.cpp would allocate for this model and a context: the fields of
        ``sipllm fit --json`` (``kv_bytes``, ``recurrent_bytes``, ``output_bytes``,
        ``model_bytes``, ``compute_bytes`` by device, ``devices``, ``total_bytes``, …).

        ``profile`` is ``"server"`` (llama-server's defaults) or ``"libllama"``
        (``llama_context_default_params()``); ``params`` change them, in llama.cpp's names:
        ``n_ctx``, ``n_batch``, ``n_ubatch``, ``n_seq_max``, ``type_k``, ``type_v``
        (``"f16"``, ``"q8_0"``, …), ``flash_attn`` (``"on"``, ``"off"``, ``"auto"``),
        ``kv_unified``, ``swa_full``, ``n_gpu_layers``. With ``memory`` (bytes), the largest
        context whose total fits, or ``None``. A configuration llama.cpp refuses, or an
        architecture whose memory is not modelled, raises ``ValueError`` with its
        ``model::fit::`` code."""
        return _native.fit(self._native, profile, memory=memory, **params)

    def __repr__(self) -> str:
        return f"<sipllm_gguf.Model {self.path!r}: {self.format} v{self.version}, {len(self.metadata)} keys, {len(self.tensors)} tensors>"


#: numpy dtype of each stored type :meth:`Model.array` maps (BF16: its raw bits).
_ARRAY_DTYPES = {
    "F32": "f4",
    "F16": "f2",
    "BF16": "u2",
    "F64": "f8",
    "I8": "i1",
    "I16": "i2",
    "I32": "i4",
    "I64": "i8",
}
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
    :class:`~sipllm_gguf.GGUFError` with a ``model::template::…`` code (``model::template::raised`` when
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

    ``path`` may be a URL: ``http://``, ``https://`` or ``hf://OWNER/REPO/PATH[@REVISION]``
    (the Hugging Face Hub, or the endpoint ``HF_ENDPOINT`` names, with ``HF_TOKEN``). The
    header comes in a few range requests and each tensor read is a request for its bytes:
    the CLI's sources, limits and errors. A URL that cannot be read raises an ``OSError``
    (``FileNotFoundError`` for a 404, ``PermissionError``, ``TimeoutError``,
    ``ConnectionError``) carrying ``code`` (``remote::http::status`` …), ``help``, ``status`` and
    ``url``; ``s3://``, ``gs://`` and ``az://`` need the CLI built with its ``object-store``
    feature.

    ``profile`` is ``"strict"`` (the spec plus safety), ``"llama-cpp"`` (exactly what llama.cpp
    loads) or ``"lenient"`` (read damaged files, with warnings). Raises
    :class:`~sipllm_gguf.GGUFError` for an invalid file, ``OSError`` for an unreadable one."""
    return Model(_native.open(os.fsdecode(os.fspath(path)), profile))


def validate(path: str | os.PathLike[str], profile: str = "strict", model: bool = False) -> list[Finding]:
    """Every problem in the file at ``path`` under ``profile``: the warnings when it opens, or
    the error that stops it (last). An empty list means valid. ``OSError`` if unreadable.

    With ``model=True`` a file whose container is valid is then checked as llama.cpp's loader
    checks it (:meth:`Model.load_check`): no error means llama.cpp would load it."""
    name = os.fsdecode(os.fspath(path))
    findings = [Finding(*f) for f in _native.validate(name, profile)]
    if model and not any(f.severity == "error" for f in findings):
        findings += open(name, profile).load_check().findings
    return findings
