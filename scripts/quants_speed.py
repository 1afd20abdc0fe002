#!/usr/bin/env python3
"""gguf-py's dequantization throughput (GB/s of f32 output), for the table in docs/quants.md.

    pip install gguf==0.19.0 numpy
    python3 scripts/quants_speed.py [INPUT_MB=25] [TYPE...]

Random blocks with finite f16 scales (as bench/quants-peers makes them); best of 3."""
import sys
import time

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize

DEFAULT = ["Q8_0", "Q4_K", "Q6_K", "Q5_0", "F16", "BF16", "Q4_0", "Q2_K", "Q3_K", "Q5_K",
           "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
           "TQ1_0", "TQ2_0", "MXFP4", "NVFP4"]


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    names = sys.argv[2:] or DEFAULT
    rng = np.random.default_rng(0)
    print(f"gguf-py, input {mb} MB per type; GB/s of f32 output, best of 3")
    for name in names:
        block, size = GGML_QUANT_SIZES[T[name]]
        n = mb * 1_000_000 // size
        raw = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
        if name not in ("F32", "F16", "BF16"):
            for off in {0, 2, size - 2, size - 4}:
                h = raw[:, off + 1]
                h[(h & 0x7C) == 0x7C] &= 0xBF
        raw = raw.reshape(-1)
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            out = dequantize(raw, T[name])
            best = min(best, time.perf_counter() - t)
        print(f"{name:<8} {out.size * 4 / 1e9 / best:8.3f}", flush=True)


if __name__ == "__main__":
    main()
