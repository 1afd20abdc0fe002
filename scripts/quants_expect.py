#!/usr/bin/env python3
"""Writes crates/quants/tests/expect.tsv: gguf-py's values, as sha256, for the exactness tests.

    pip install gguf==0.19.0 numpy
    python3 scripts/quants_expect.py > crates/quants/tests/expect.tsv

For every type gguf-py 0.19.0 dequantizes, the input is at least 64 MiB of random blocks made
the way gguf-py's test_quants.py makes them: random bytes, with every f16 scale field made
finite. The bytes come from SplitMix64 (the Rust test, crates/quants/tests/it/exact.rs, makes the
same bytes): word i of type t is splitmix64_mix(seed(t) + (i + 1) * GAMMA), stored little-endian.
A scale field whose exponent is all ones has its top exponent bit cleared.

Each row: `random TYPE BLOCKS SHA256(values) SMALL_SHA256(first 64 blocks' values)`, the values
being gguf.quants.dequantize's float32 output in little-endian bytes. Rows `raw TYPE 64 SHA256` are
64 blocks of unfixed random bytes (another stream), so non-finite scales and NaN payloads are
checked too. Rows `tensor FILE NAME
TYPE SHA256` do the same for every tensor of the generated corpus models (../shared/corpus)."""
import hashlib
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

GAMMA = np.uint64(0x9E3779B97F4A7C15)
TOTAL = 64 << 20
SMALL_BLOCKS = 64

# Byte offsets of the f16 scale fields inside one block (IQ1_M's scale is handled apart).
F16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
    "TQ1_0": [52], "TQ2_0": [64], "IQ2_XXS": [0], "IQ2_XS": [0], "IQ2_S": [0],
    "IQ3_XXS": [0], "IQ3_S": [0], "IQ1_S": [0], "IQ4_NL": [0], "IQ4_XS": [0],
    "F32": [], "F16": [], "BF16": [], "MXFP4": [], "NVFP4": [], "IQ1_M": [],
}
TYPES = ["F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
         "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
         "IQ1_M", "BF16", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4"]


def mix(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def seed(code):
    return np.uint64(0x51B1_1A00_0000_0000 | code)


def random_bytes(code, word0, nwords):
    i = np.arange(word0 + 1, word0 + 1 + nwords, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return mix(seed(code) + i * GAMMA).astype("<u8").view(np.uint8)


def make_finite(name, blocks):
    for off in F16_FIELDS[name]:
        h = blocks[:, off:off + 2].copy().view("<u2")
        bad = (h & 0x7C00) == 0x7C00
        h[bad] &= np.uint16(0xBFFF)
        blocks[:, off:off + 2] = h.view(np.uint8)
    if name == "IQ1_M":
        # d's exponent is bits 14-15 of the third scale word and 12-14 of the fourth.
        s2 = blocks[:, 52:54].copy().view("<u2")
        s3 = blocks[:, 54:56].copy().view("<u2")
        bad = ((s2 & 0xC000) == 0xC000) & ((s3 & 0x7000) == 0x7000)
        s3[bad] &= np.uint16(0xBFFF)
        blocks[:, 54:56] = s3.view(np.uint8)


def values(name, raw):
    qtype = T[name]
    out = gguf.quants.dequantize(raw, qtype)
    return np.ascontiguousarray(out, dtype=np.float32).astype("<f4").tobytes()


def random_row(name):
    code = int(T[name])
    block, size = GGML_QUANT_SIZES[T[name]]
    n_blocks = -(-TOTAL // size)
    per = 8 * max(1, (4 << 20) // (8 * size))  # blocks per chunk: a whole number of words
    h = hashlib.sha256()
    small = None
    done = 0
    while done < n_blocks:
        k = min(per, n_blocks - done)
        nbytes = k * size
        word0 = done * size // 8
        raw = random_bytes(code, word0, -(-nbytes // 8))[:nbytes].copy()
        blocks = raw.reshape(k, size)
        make_finite(name, blocks)
        vals = values(name, blocks.reshape(-1))
        if small is None:
            small = hashlib.sha256(vals[: SMALL_BLOCKS * block * 4]).hexdigest()
        h.update(vals)
        done += k
    return f"random\t{name}\t{n_blocks}\t{h.hexdigest()}\t{small}"


def raw_row(name):
    """64 blocks of unfixed random bytes (stream `code | 0x10000`): NaN and Inf scales too."""
    code = int(T[name])
    _, size = GGML_QUANT_SIZES[T[name]]
    nbytes = SMALL_BLOCKS * size
    raw = random_bytes(code | 0x10000, 0, -(-nbytes // 8))[:nbytes].copy()
    with np.errstate(all="ignore"):
        vals = values(name, raw)
    return f"raw\t{name}\t{SMALL_BLOCKS}\t{hashlib.sha256(vals).hexdigest()}"


def tensor_rows(corpus):
    rows = []
    gen = os.path.join(corpus, "generated")
    for f in sorted(os.listdir(gen)):
        # Big-endian files are left out: gguf-py swaps only the F32/F16 arrays, not the
        # scales inside quantized blocks, so its values there are not the file's.
        if not f.endswith(".gguf") or ".be." in f:
            continue
        r = gguf.GGUFReader(os.path.join(gen, f))
        for t in r.tensors:
            if t.tensor_type.name not in TYPES:
                continue
            raw = np.asarray(t.data)
            if raw.dtype != np.uint8:
                # gguf-py hands out F32/F16/BF16 as typed arrays (byte-swapped for a
                # big-endian file): back to little-endian bytes.
                raw = raw.astype(raw.dtype.newbyteorder("<")).view(np.uint8)
            h = hashlib.sha256(values(t.tensor_type.name, raw.reshape(-1))).hexdigest()
            rows.append(f"tensor\t{f}\t{t.name}\t{t.tensor_type.name}\t{h}")
    return rows


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    corpus = os.environ.get("SIPLLM_CORPUS", os.path.join(here, "..", "..", "shared", "corpus"))
    only = sys.argv[1:]
    from importlib.metadata import version
    print(f"# gguf-py {version('gguf')}, numpy {np.__version__}: scripts/quants_expect.py")
    for name in TYPES:
        if only and name not in only:
            continue
        print(random_row(name), flush=True)
        print(raw_row(name), flush=True)
    if not only:
        for row in tensor_rows(corpus):
            print(row)


if __name__ == "__main__":
    main()
