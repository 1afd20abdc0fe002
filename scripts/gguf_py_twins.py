#!/usr/bin/env python3
"""Cross-check: gguf-py (the reference reader) reads a file's little- and big-endian twins,
written by sipllm-gguf's writer (`cargo run --release -p sipllm-gguf --example endian_twins --
IN.gguf PREFIX`), identically: same keys, types, values, tensor names, shapes, types and data.

Usage: python3 -m pip install gguf && python3 scripts/gguf_py_twins.py PREFIX [PREFIX...]
"""
import sys

import numpy as np
from gguf import GGUFReader


def load(path):
    r = GGUFReader(path)
    kv = {name: (list(f.types), [f.parts[i].tolist() for i in f.data]) for name, f in r.fields.items()}
    tensors = [
        (t.name, list(t.shape), t.tensor_type.name, np.asarray(t.data).astype(np.float64).tolist()
         if t.tensor_type.name in ("F32", "F16") else np.asarray(t.data).tobytes())
        for t in r.tensors
    ]
    return r.byte_order, kv, tensors


def main():
    for prefix in sys.argv[1:]:
        le_order, le_kv, le_t = load(f"{prefix}.le.gguf")
        be_order, be_kv, be_t = load(f"{prefix}.be.gguf")
        assert (le_order, be_order) == ("I", "S"), (le_order, be_order)
        assert le_kv.keys() == be_kv.keys(), "keys differ"
        for k in le_kv:
            assert le_kv[k] == be_kv[k], f"{k} differs"
        assert le_t == be_t, "tensors differ"
        print(f"{prefix}: {len(le_kv)} fields and {len(le_t)} tensors read identically")


if __name__ == "__main__":
    main()
