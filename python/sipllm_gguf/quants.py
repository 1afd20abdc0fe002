"""Tensor values: a drop-in for gguf-py 0.19.0's ``gguf.quants.dequantize``, in Rust.

>>> import numpy as np
>>> from sipllm_gguf.quants import dequantize
>>> block = np.frombuffer(b"\\x00\\x38" + bytes(range(32)), dtype=np.uint8)  # one Q8_0 block
>>> dequantize(block, 8)[:4]  # 8 = GGMLQuantizationType.Q8_0
array([0. , 0.5, 1. , 1.5], dtype=float32)

:func:`dequantize` takes what gguf-py's takes (a numpy array of stored bytes whose last axis
is whole blocks, any leading shape, e.g. a ``GGUFReader`` tensor's ``data``; F32 and F16 also as
``float32``/``float16`` arrays) and returns what it returns: ``float32`` values, the last axis
``bytes // type_size * block_size``, bit for bit the same values (NaN payloads included) for all
26 types gguf-py dequantizes. It runs sipllm-quants (AVX2 where the CPU has it) with the GIL
released: 3x (F16, BF16, Q8_0, single numpy conversions in gguf-py) to 34x (the IQ grids) as
fast as gguf-py's numpy on one thread (figures in docs/python.md).

Differences from gguf-py, all where gguf-py fails or is slow:

* a type without values (``Q8_1``, ``Q8_K``, the integer types, ``Q1_0``, unknown codes) raises
  :class:`~sipllm_gguf.UnsupportedTypeError`, a ``NotImplementedError`` (what gguf-py raises)
  and a :class:`~sipllm_gguf.GGUFError` with ``code == "quants::dequant::unsupported_type"``;
* a last axis that is not whole blocks raises :class:`~sipllm_gguf.GGUFError` (a ``ValueError``,
  as gguf-py's) with ``code == "quants::dequant::partial_block"`` and ``path == "data.shape[-1]"``;
* ``bytes``, ``bytearray`` and ``memoryview`` inputs are taken as 1-D bytes; inputs of a wider
  dtype are read as their bytes (gguf-py takes only ``uint8`` for the block
  types and computes a wrong shape otherwise); non-contiguous inputs are copied first;
* gguf-py's ``LazyNumpyTensor`` is not special-cased (``numpy.asarray`` materialises it);
* two keywords gguf-py does not have: ``threads`` and ``out`` (an array to write into).

As in gguf-py, ``F32`` returns ``data.view(numpy.float32)``: a view of the input, not a copy.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from . import _native

__all__ = ["SUPPORTED", "QuantType", "block_layout", "dequantize", "is_supported"]

_F32 = 0
#: Threads when ``threads`` is not given (see the docstring of :func:`dequantize`).
_DEFAULT_THREADS = 1


class QuantType(NamedTuple):
    """A ggml type with values: ``code``, ``name`` (gguf-py's), ``block_size`` (values per
    block) and ``type_size`` (bytes per block)."""

    code: int
    name: str
    block_size: int
    type_size: int


#: Every type :func:`dequantize` accepts, in ggml code order (the types gguf-py 0.19.0
#: dequantizes).
SUPPORTED: tuple[QuantType, ...] = tuple(QuantType(*row) for row in _native.supported_types())
_BY_CODE = {t.code: t for t in SUPPORTED}


def is_supported(qtype: Any) -> bool:
    """True if :func:`dequantize` accepts ``qtype`` (an int or a ``GGMLQuantizationType``)."""
    return operator.index(qtype) in _BY_CODE


def block_layout(qtype: Any) -> tuple[int, int] | None:
    """``(block_size, type_size)`` of a supported type (gguf-py's ``GGML_QUANT_SIZES``), else
    ``None``."""
    t = _BY_CODE.get(operator.index(qtype))
    return None if t is None else (t.block_size, t.type_size)


def _check_out(out: Any, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
    """``out`` if it can take values of ``shape``: a writable, C-contiguous, native ``float32``
    numpy array of exactly that shape."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
    if out.dtype != np.dtype(np.float32) or not out.dtype.isnative:
        raise TypeError(f"out must be a native float32 array, not {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, but the values have shape {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writable")
    return out


def dequantize(
    data: npt.ArrayLike,
    qtype: Any,
    *,
    threads: int | None = None,
    out: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """The ``float32`` values of ``data``, the stored bytes of ggml type ``qtype`` (an int or a
    ``GGMLQuantizationType``), as gguf-py's ``gguf.quants.dequantize(data, qtype)`` computes
    them, bit for bit.

    ``data``'s last axis is whole blocks of bytes (any leading axes); the result has the same
    leading axes and ``shape[-1] // type_size * block_size`` values on the last. ``threads``:
    ``None`` or 1 computes on the calling thread; N > 1 has N - 1 threads compute pieces of
    about 1 MiB of values while the calling one copies them into place (0: every core), which
    pays for the types whose kernels, not the copies, set the pace (the IQ types). The GIL
    is released while values are computed. The result is a fresh, writable array (``F32``: a
    view of ``data``, as in gguf-py), or ``out`` when it is given: a C-contiguous ``float32``
    array of the result's shape to write into, e.g. one buffer reused for tensor after tensor
    (fresh memory costs the kernel's page faults; measured here a reused ``out`` is about 1.4x
    faster).

    Raises :class:`~sipllm_gguf.UnsupportedTypeError` (a ``NotImplementedError``) for a type
    without values, :class:`~sipllm_gguf.GGUFError` (a ``ValueError``) when the last axis is not
    whole blocks."""
    code = operator.index(qtype)
    n_threads = _DEFAULT_THREADS if threads is None else operator.index(threads)
    if n_threads < 0:
        raise ValueError(f"threads must be 0 (every core) or more, not {threads}")
    # Bytes-likes are their bytes (gguf-py takes numpy arrays only).
    raw = data if type(data) is bytes else None
    if isinstance(data, (bytes, bytearray, memoryview)):
        arr = np.frombuffer(data, dtype=np.uint8)
    else:
        arr = np.asarray(data)
    if arr.dtype.itemsize != 1 or arr.ndim == 0 or not arr.flags.c_contiguous:
        # Bytes along the last axis, C order: a view when ``data`` already is contiguous.
        arr = np.ascontiguousarray(arr)
        if arr.dtype.itemsize != 1:
            arr = arr.view(np.uint8)
    row = _native.row_values(code, arr.shape[-1])
    shape = (*arr.shape[:-1], row)
    if code == _F32:
        if out is None:
            return arr.view(np.float32)
        np.copyto(_check_out(out, shape), arr.view(np.float32))
        return out
    # ``bytes`` is immutable, so Rust borrows it whole; anything else is copied in pieces.
    src = raw if raw is not None else arr.view(np.uint8).reshape(-1)
    # numpy's own fresh memory (huge pages, not zeroed first): see python/src/values.rs.
    out = np.empty(shape, dtype=np.float32) if out is None else _check_out(out, shape)
    _native.dequantize(src, code, out.reshape(-1).view(np.uint8), n_threads)
    return out
