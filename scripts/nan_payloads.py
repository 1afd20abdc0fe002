#!/usr/bin/env python3
"""Which NaN gguf-py's Q4_1 / Q5_1 dequantization returns when both block scales are NaN.

A Q4_1 or Q5_1 value is d*q + m. With d and m both NaN (f16 payloads 1 and 2 here), IEEE 754
leaves open which NaN the sum carries; x86's ADDSS returns its first operand's, so d*q + m
gives d's. gguf-py computes `(d * qs) + m` with numpy, and which NaN numpy returns depends on
which inner loop it picks: that depends on the array's shape (a single block takes another
path than several) and, per the hostile review of issue 26 (numpy 2.4 wheels, AVX2), on the
build and the CPU. So there is no one "gguf-py's NaN" to match: sipllm-quants returns d's
NaN always, and docs/quants.md does not promise NaN payload parity for a block whose two
scales are both NaN (every other NaN is bit for bit gguf-py's). The K types, whose kernels
follow the same rule, matched numpy in every shape tried (also printed).

Run with the package's venv (python/ci.sh makes it: numpy, gguf 0.19.0, sipllm_gguf):
    python/.venv/bin/python scripts/nan_payloads.py
Prints, per type and number of blocks, the f32 bits gguf-py and sipllm_gguf return, and
whose NaN that is; then the same for numpy's bare `(d * q) + m`.
"""
from importlib.metadata import version

import numpy as np

import gguf
from gguf import quants

try:
    import sipllm_gguf
except ImportError:  # the comparison with numpy alone still shows the point
    sipllm_gguf = None

D, M = 0x7E01, 0x7E02  # f16 quiet NaNs with payloads 1 and 2


def f32_bits(f16: int) -> int:
    """The f32 bits of an f16, widened as numpy widens it (payload kept)."""
    return int(np.uint16(f16).view(np.float16).astype(np.float32).view(np.uint32))


F32 = {f32_bits(D): "d", f32_bits(M): "m"}


def whose(bits: np.ndarray) -> str:
    names = sorted({F32.get(int(b), hex(int(b))) for b in bits.ravel()})
    return "+".join(names)


def block(qtype: gguf.GGMLQuantizationType) -> bytes:
    head = np.array([D, M], "<u2").tobytes()
    if qtype == gguf.GGMLQuantizationType.Q5_1:
        return head + bytes(4) + bytes([0x53] * 16)  # qh, then the nibbles
    return head + bytes([0x53] * 16)


features = getattr(np._core._multiarray_umath, "__cpu_features__", {})
avx = " ".join(k for k, v in features.items() if v and k.startswith("AVX")) or "?"
print(f"numpy {np.__version__}, gguf {version('gguf')}; CPU features numpy uses: {avx}")
print(f"d = f16 {D:#06x} -> f32 {f32_bits(D):#010x}, m = f16 {M:#06x} -> f32 {f32_bits(M):#010x}")
print(f"{'type':6} {'blocks':>6}  gguf-py  sipllm")
for qtype in (gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q5_1):
    one = block(qtype)
    for n in (1, 2, 3, 8, 64):
        data = np.frombuffer(one * n, np.uint8).reshape(n, len(one))
        ref = quants.dequantize(data, qtype).view(np.uint32)
        ours = "-" if sipllm_gguf is None else whose(sipllm_gguf.quants.dequantize(data, qtype).view(np.uint32))
        print(f"{qtype.name:6} {n:>6}  {whose(ref):7}  {ours}")

# The K types' `d*sc*q - dmin*m` (same rule in the kernels: d's NaN): numpy agreed here in
# every shape tried, so only Q4_1 and Q5_1 are left out of the promise.
for qtype, size, at in ((gguf.GGMLQuantizationType.Q2_K, 84, 80), (gguf.GGMLQuantizationType.Q4_K, 144, 0),
                        (gguf.GGMLQuantizationType.Q5_K, 176, 0)):
    blk = bytearray([0x35] * size)
    blk[at : at + 4] = np.array([D, M], "<u2").tobytes()
    for n in (1, 2, 8):
        data = np.frombuffer(bytes(blk) * n, np.uint8).reshape(n, size)
        ref = quants.dequantize(data, qtype).view(np.uint32)
        ours = "-" if sipllm_gguf is None else whose(sipllm_gguf.quants.dequantize(data, qtype).view(np.uint32))
        print(f"{qtype.name:6} {n:>6}  {whose(ref):7}  {ours}")

print("numpy alone, float32 (d * q) + m, d and m as (n, 1) columns, q (n, 32):")
d32 = np.uint16(D).view(np.float16).astype(np.float32)
m32 = np.uint16(M).view(np.float16).astype(np.float32)
for n in (1, 2, 3, 8):
    d = np.full((n, 1), d32, np.float32)
    m = np.full((n, 1), m32, np.float32)
    q = np.full((n, 32), 3, np.float32)
    print(f"  n={n}: {whose(((d * q) + m).view(np.uint32))}")
