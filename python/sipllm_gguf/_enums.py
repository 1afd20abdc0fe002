"""The GGUF value-type and ggml tensor-type enums.

When gguf-py (``pip install gguf``) is installed, its own ``GGUFValueType``,
``GGMLQuantizationType`` and ``GGUFEndian`` are used, so values compare and print exactly as
in programs written for it (``field.types[0] == gguf.GGUFValueType.STRING``). Otherwise the
equivalent ``IntEnum`` classes below stand in (the members of gguf 0.19.0). gguf is imported
on first use, not when ``sipllm_gguf`` is.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class GGUFValueType(IntEnum):
    """GGUF metadata value types (gguf-py's ``GGUFValueType``)."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class GGMLQuantizationType(IntEnum):
    """ggml tensor types (gguf-py 0.19.0's ``GGMLQuantizationType``)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41


class GGUFEndian(IntEnum):
    """Byte order of a GGUF file (gguf-py's ``GGUFEndian``)."""

    LITTLE = 0
    BIG = 1


_resolved: tuple[Any, Any, Any] | None = None


def enums() -> tuple[Any, Any, Any]:
    """(GGUFValueType, GGMLQuantizationType, GGUFEndian): gguf-py's when installed, else ours."""
    global _resolved
    if _resolved is None:
        try:
            from gguf.constants import (  # type: ignore[import-not-found]
                GGMLQuantizationType as Q,
                GGUFEndian as E,
                GGUFValueType as V,
            )

            _resolved = (V, Q, E)
        except ImportError:
            _resolved = (GGUFValueType, GGMLQuantizationType, GGUFEndian)
    return _resolved


def tensor_type(code: int) -> Any:
    """The ``GGMLQuantizationType`` member for ``code``, or the plain int for a type the enum
    does not know (a newer ggml type: its metadata and other tensors stay readable)."""
    q = enums()[1]
    try:
        return q(code)
    except ValueError:
        return code
