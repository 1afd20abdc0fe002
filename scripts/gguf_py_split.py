#!/usr/bin/env python3
"""Cross-check of split GGUF sets against gguf-py, the reference writer and reader.

1. gguf-py writes one model twice: whole (`whole/m.gguf`) and split by its own `GGUFWriter`
   (`split_max_tensors`, `split_max_size`, `small_first_shard`) into `py/m-NNNNN-of-NNNNN.gguf`.
2. `sipllm split whole/m.gguf` with the same limit writes `ours/…`: every shard must equal
   gguf-py's byte for byte (names, split keys and their order and types, tensor distribution,
   padding, offsets).
3. gguf-py's `GGUFReader` reads each of our shards: `split.no`/`split.count` are UINT16,
   `split.tensors.count` INT32, with the right values; shard 1 holds the model's metadata, the
   others only the split keys; the tensors' bytes equal the whole file's.
4. `sipllm merge py/m-00001-of-…` (gguf-py's shards) equals gguf-py's whole file byte for byte.

gguf-py counts `split_max_size` on unpadded tensor sizes, gguf-split (and sipllm) on sizes
padded to 32 bytes; the size cases therefore use tensors whose sizes are multiples of 32, where
the two rules agree. gguf-py has no reader for sets (its split helpers are for safetensors), so
the set as a whole is read through sipllm only.

Not run in CI (it needs Python and numpy). Usage:
    python3 -m pip install gguf   # 0.19.0 was used
    cargo build --release -p sipllm-cli
    python3 scripts/gguf_py_split.py [path/to/sipllm]
"""
import filecmp
import importlib.metadata
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType


def add_model(w, odd):
    """Metadata and 4 blocks of tensors; with `odd`, some sizes are not multiples of 32."""
    w.add_name("split cross-check")
    w.add_block_count(4)
    w.add_context_length(128)
    w.add_embedding_length(32)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_token_list([f"tok{i}" for i in range(100)])
    w.add_token_scores([float(i) / 7 for i in range(100)])
    rng = np.random.default_rng(7)
    for b in range(4):
        w.add_tensor(f"blk.{b}.attn_norm.weight", rng.standard_normal(32).astype(np.float32))
        w.add_tensor(f"blk.{b}.attn_q.weight", rng.standard_normal((16, 32)).astype(np.float16))
        # Q8_0 as raw bytes: 2 rows of 8 blocks of 34 bytes (544 bytes, 17 × 32).
        q8 = rng.integers(0, 256, (2, 8 * 34), dtype=np.uint8)
        w.add_tensor(f"blk.{b}.ffn_up.weight", q8, raw_dtype=GGMLQuantizationType.Q8_0)
        if odd:
            w.add_tensor(f"blk.{b}.odd.weight", rng.standard_normal(7 + b).astype(np.float32))
    w.add_tensor("output.weight", rng.standard_normal((64, 32)).astype(np.float32))


def write(path, odd, **split):
    w = gguf.GGUFWriter(path, "llama", **split)
    add_model(w, odd)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fields(reader):
    """Key → (value types, value), without gguf-py's GGUF.* pseudo-fields."""
    out = {}
    for name, f in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        out[name] = ([t.name for t in f.types], f.contents())
    return out


def tensor_bytes(reader):
    return {t.name: np.asarray(t.data).tobytes() for t in reader.tensors}


def run(sipllm, *args):
    subprocess.run([sipllm, *map(str, args)], check=True, stdout=subprocess.DEVNULL)


def case(sipllm, tmp, label, odd, py_split, our_args):
    base = Path(tmp) / label
    whole, py, ours = base / "whole", base / "py", base / "ours"
    for d in (whole, py, ours):
        d.mkdir(parents=True)
    write(whole / "m.gguf", odd)
    write(py / "m.gguf", odd, **py_split)
    run(sipllm, "split", whole / "m.gguf", *our_args, "--out-dir", ours)

    py_names = sorted(p.name for p in py.iterdir())
    our_names = sorted(p.name for p in ours.iterdir())
    assert py_names == our_names, (py_names, our_names)
    for name in py_names:
        assert filecmp.cmp(py / name, ours / name, shallow=False), f"{label}: {name} differs"

    n = len(our_names)
    whole_reader = GGUFReader(whole / "m.gguf")
    whole_fields, whole_data = fields(whole_reader), tensor_bytes(whole_reader)
    seen = {}
    for i, name in enumerate(our_names):
        assert name == f"m-{i + 1:05d}-of-{n:05d}.gguf", name
        r = GGUFReader(ours / name)
        f = fields(r)
        assert f["split.no"] == (["UINT16"], i), f["split.no"]
        assert f["split.count"] == (["UINT16"], n), f["split.count"]
        assert f["split.tensors.count"] == (["INT32"], len(whole_data)), f["split.tensors.count"]
        split_keys = ["split.no", "split.count", "split.tensors.count"]
        if i == 0:
            assert list(f) == list(whole_fields) + split_keys, list(f)
            assert all(f[k] == whole_fields[k] for k in whole_fields)
        else:
            assert list(f) == split_keys, list(f)
        for t, data in tensor_bytes(r).items():
            assert t not in seen, f"{t} in two shards"
            assert data == whole_data[t], f"{t}: data differs"
            seen[t] = i
    assert list(seen) == list(whole_data), "every tensor, in order"

    merged = base / "merged.gguf"
    run(sipllm, "merge", py / our_names[0], merged)
    assert filecmp.cmp(merged, whole / "m.gguf", shallow=False), f"{label}: merge differs"
    sizes = [sum(1 for _ in GGUFReader(ours / nm).tensors) for nm in our_names]
    print(f"{label}: {n} shards (tensors {sizes}) identical to gguf-py's; gguf-py reads them; "
          f"merge of gguf-py's shards == gguf-py's whole file")


def main():
    sipllm = sys.argv[1] if len(sys.argv) > 1 else "target/release/sipllm"
    print(f"gguf-py {importlib.metadata.version('gguf')}")
    with tempfile.TemporaryDirectory() as tmp:
        case(sipllm, tmp, "max-tensors 5", True,
             dict(split_max_tensors=5), ["--max-tensors", 5])
        case(sipllm, tmp, "max-tensors 4, metadata-only first shard", True,
             dict(split_max_tensors=4, small_first_shard=True),
             ["--max-tensors", 4, "--no-tensor-first-split"])
        case(sipllm, tmp, "max-size 3000", False,
             dict(split_max_size=3000), ["--max-size", 3000])
        case(sipllm, tmp, "max-size 8192, metadata-only first shard", False,
             dict(split_max_size=8192, small_first_shard=True),
             ["--max-size", 8192, "--no-tensor-first-split"])


if __name__ == "__main__":
    main()
