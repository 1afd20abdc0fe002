"""sipllm_gguf: read GGUF model files from Python, exactly, safely and fast.

Two APIs over one Rust parser (sipllm-gguf):

* :class:`GGUFReader`, a drop-in for gguf-py 0.19.0's ``gguf.GGUFReader``: the same fields,
  tensors, numpy views and ``mode="r+"`` writes, but the header opens in milliseconds (gguf-py
  takes about 20 s on a Llama-3 vocabulary), and an invalid file raises :class:`GGUFError`.
* :func:`open` and :func:`validate`, the native API: typed lazy metadata, ``tokens`` as a lazy
  sequence of ``str``, tensors with row-major shapes, reads of exactly the bytes asked for, and
  findings with a code, byte offset, logical path and help; :meth:`Model.values`, a tensor's
  ``float32`` values in its row-major shape.
* :func:`quants.dequantize`, a drop-in for gguf-py's ``gguf.quants.dequantize``: the same
  values bit for bit, for all 26 types it dequantizes, 3x to 34x as fast.

>>> import sipllm_gguf
>>> reader = sipllm_gguf.GGUFReader("model.gguf")                 # doctest: +SKIP
>>> reader.fields["general.architecture"].contents()              # doctest: +SKIP
'llama'
"""

from __future__ import annotations

from typing import Any

from . import quants
from ._native import GGUFError, UnsupportedTypeError, __version__
from .native import Finding, Metadata, Model, StrSeq, Tensor, open, render_chat, validate
from .reader import GGUFReader, ReaderField, ReaderTensor

__all__ = [
    "Finding",
    "GGMLQuantizationType",
    "GGUFEndian",
    "GGUFError",
    "GGUFReader",
    "GGUFValueType",
    "Metadata",
    "Model",
    "ReaderField",
    "ReaderTensor",
    "StrSeq",
    "Tensor",
    "UnsupportedTypeError",
    "__version__",
    "open",
    "quants",
    "render_chat",
    "validate",
]


def __getattr__(name: str) -> Any:
    # The enums are gguf-py's when it is installed; resolving them imports it, so only on use.
    if name in ("GGUFValueType", "GGMLQuantizationType", "GGUFEndian"):
        from ._enums import enums

        v, q, e = enums()
        return {"GGUFValueType": v, "GGMLQuantizationType": q, "GGUFEndian": e}[name]
    raise AttributeError(f"module 'sipllm_gguf' has no attribute {name!r}")
