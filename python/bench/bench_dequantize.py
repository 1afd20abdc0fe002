#!/usr/bin/env python3
"""Benchmarks ``sipllm_gguf.quants.dequantize`` against gguf-py 0.19.0's
``gguf.quants.dequantize`` on the same bytes, per ggml type: GB/s of float32 output.

    . python/.venv/bin/activate          # made by python/ci.sh
    python python/bench/bench_dequantize.py [--mb 64] [--repeat 5] [--threads 2] [TYPE ...]
    python python/bench/bench_dequantize.py --model /tmp/values.gguf [--mb 64] [TYPE ...]

The input of each type is --mb MB of random blocks with finite f16 scales (the generator of
scripts/quants_expect.py, which the exactness tests share). Ours runs on all of it with one
thread and with --threads threads; gguf-py on as much of the same bytes as it dequantizes in
about --gguf-py-seconds (all of it for its fast types, a prefix for the slow ones: "gguf-py in
MB"), so its GB/s is measured on that prefix, and the prefix's values are checked bit for bit
against ours ("bits"). Both allocate a fresh output per call, as a program calling them does;
"ours out=" writes into one array reused for every call (``dequantize(..., out=a)``; for F32
a copy) instead. Each figure is the median of --repeat calls after one warm-up call (gguf-py:
--gguf-py-repeat calls after a warm-up on 1 MB); "cpu" figures are the calling thread's CPU time
(``time.thread_time``: leaves out waits for a core on a loaded machine, includes the kernel's
page faults), "wall" the wall clock. Not part of the test suite.

With --model, each tensor of a model file (one of --mb MB of random blocks per type, written
with gguf-py's writer when the file does not exist) is read with ``Model.values(name)`` and
with gguf-py's ``dequantize(GGUFReader(path).tensors[i].data, tensor_type)``, from the page
cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("quants_expect", REPO / "scripts" / "quants_expect.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def random_blocks(gen, name: str, nbytes: int) -> np.ndarray:
    q = gen.T[name]
    _, size = gen.GGML_QUANT_SIZES[q]
    k = max(1, nbytes // size)
    out = np.empty(k * size, dtype=np.uint8)
    step = max(1, (16 << 20) // size)  # generate in 16 MB steps (the generator's temporaries)
    for b0 in range(0, k, step):
        b1 = min(k, b0 + step)
        words0 = b0 * size // 8
        lead = b0 * size - words0 * 8
        raw = gen.random_bytes(int(q), words0, -(-((b1 - b0) * size + lead) // 8))
        blocks = raw[lead : lead + (b1 - b0) * size].copy().reshape(b1 - b0, size)
        gen.make_finite(name, blocks)
        out[b0 * size : b1 * size] = blocks.reshape(-1)
    return out


def timed(f, repeat: int):
    """(median wall s, median thread-CPU s, last result) over ``repeat`` calls."""
    walls, cpus = [], []
    out = None
    for _ in range(repeat):
        out = None
        c, w = time.thread_time(), time.perf_counter()
        out = f()
        walls.append(time.perf_counter() - w)
        cpus.append(time.thread_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def bench_model(args) -> None:
    """Model.values(name) against gguf-py's GGUFReader(path).tensors[i].data + dequantize, per
    tensor of a model file (from the page cache: each is read once before it is timed)."""
    import gguf

    import sipllm_gguf
    from sipllm_gguf.quants import SUPPORTED

    path = Path(args.model)
    if not path.exists():
        gen = load_generator()
        w = gguf.GGUFWriter(str(path), arch="llama")
        for name in args.types or ["Q8_0", "Q4_K", "Q6_K", "Q5_0", "F16", "BF16", "IQ4_XS"]:
            q = gguf.GGMLQuantizationType[name]
            size = gguf.constants.GGML_QUANT_SIZES[q][1]
            data = random_blocks(gen, name, int(args.mb * 1e6))
            row = 4096 // gguf.constants.GGML_QUANT_SIZES[q][0] * size  # rows of 4096 values
            w.add_tensor(f"t.{name}", data[: data.nbytes // row * row].reshape(-1, row), raw_dtype=q)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    load0 = os.getloadavg()
    print(f"# {path} ({path.stat().st_size / 1e6:.0f} MB); python {platform.python_version()}, numpy {np.__version__}")
    print(f"# {cpu_model()}, {os.cpu_count()} CPUs; load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print(f"# command: python {' '.join(sys.argv)}; GB/s of f32 output, median of {args.repeat} (gguf-py {args.gguf_py_repeat})")
    print("| tensor | type | shape | out MB | Model.values cpu | wall | gguf-py cpu | wall | ratio cpu | ratio wall | bits |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    names = {t.name for t in SUPPORTED}
    model = sipllm_gguf.open(path)
    reader = gguf.GGUFReader(path)
    for rt in reader.tensors:
        if rt.tensor_type.name not in names:
            continue
        model.read(rt.name)  # into the page cache
        w1, c1, ours = timed(lambda: model.values(rt.name), args.repeat)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gw, gc, theirs = timed(lambda: gguf.quants.dequantize(rt.data, rt.tensor_type), args.gguf_py_repeat)
        same = ours.shape == theirs.shape and np.array_equal(
            ours.view(np.uint32), np.ascontiguousarray(theirs, dtype=np.float32).view(np.uint32)
        )
        gb = ours.nbytes / 1e9
        print(
            f"| {rt.name} | {rt.tensor_type.name} | {ours.shape} | {ours.nbytes / 1e6:.0f} | {gb / c1:.2f} | {gb / w1:.2f} "
            f"| {gb / gc:.3f} | {gb / gw:.3f} | {gc / c1:.0f}x | {gw / w1:.0f}x | {'same' if same else 'DIFFER'} |",
            flush=True,
        )
        del ours, theirs
    load1 = os.getloadavg()
    print(f"# load average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("types", nargs="*", help="ggml type names (default: every supported type)")
    ap.add_argument("--mb", type=float, default=64, help="input MB per type for ours (default 64)")
    ap.add_argument("--gguf-py-seconds", type=float, default=2.0, help="gguf-py's input is cut to about this long a call (default 2 s)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gguf-py-repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="the threaded column's thread count (default 2)")
    ap.add_argument("--skip-gguf-py", action="store_true")
    ap.add_argument("--model", metavar="FILE", help="time Model.values on every tensor of FILE instead (written first, "
                    "with one tensor of --mb MB random blocks per type, when it does not exist)")
    args = ap.parse_args()
    if args.model:
        bench_model(args)
        return

    import sipllm_gguf
    from sipllm_gguf.quants import SUPPORTED, dequantize

    gguf = None
    if not args.skip_gguf_py:
        import gguf  # noqa: F811

    gen = load_generator()
    names = args.types or [t.name for t in SUPPORTED]
    codes = {t.name: t.code for t in SUPPORTED}
    load0 = os.getloadavg()
    print(
        f"# sipllm_gguf {sipllm_gguf.__version__}, python {platform.python_version()}, numpy {np.__version__}"
        + ("" if gguf is None else f", gguf-py {getattr(gguf, '__version__', '0.19.0')}")
    )
    print(f"# {cpu_model()}, {os.cpu_count()} CPUs; load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    print(f"# input: {args.mb:g} MB per type (gguf-py: a prefix of ~{args.gguf_py_seconds:g} s); GB/s of f32 output, median of {args.repeat} (gguf-py {args.gguf_py_repeat})")
    print(f"# command: python {' '.join(sys.argv)}")
    cols = ["type", "out MB", "ours cpu", "ours wall", f"ours {args.threads}t wall", "ours out= cpu", "gguf-py in MB", "gguf-py cpu", "gguf-py wall", "ours/gguf-py cpu", "ours/gguf-py wall", "bits"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(cols) - 2) + ["---"]) + "|")
    for name in names:
        code = codes[name]
        data = random_blocks(gen, name, int(args.mb * 1e6))
        size = next(t.type_size for t in SUPPORTED if t.name == name)
        dequantize(data, code)  # warm-up: the code's pages, the kernel's huge-page pool
        w1, c1, out = timed(lambda: dequantize(data, code, threads=1), args.repeat)
        out_bytes = out.nbytes
        del out
        wt, _, out = timed(lambda: dequantize(data, code, threads=args.threads), args.repeat)
        # One output reused for every call (out=): no fresh pages.
        _, cr, _ = timed(lambda: dequantize(data, code, threads=1, out=out), args.repeat)
        del out
        gb = out_bytes / 1e9
        row = [name, f"{out_bytes / 1e6:.0f}", f"{gb / c1:.2f}", f"{gb / w1:.2f}", f"{gb / wt:.2f}", f"{gb / cr:.2f}"]
        if name == "F32":
            # Both return data.view(float32): no values are computed, no figure to compare.
            row[2:5] = ["view"] * 3
        if gguf is not None:
            q = gguf.GGMLQuantizationType[name]
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # Warm-up and probe on 1 MB: the slice is what gguf-py does in --gguf-py-seconds.
                probe = data[: (1 << 20) // size * size]
                pw, _, _ = timed(lambda: gguf.quants.dequantize(probe, q), 1)
                want = int(probe.nbytes / max(pw, 1e-9) * args.gguf_py_seconds)
                part = data[: max(size, min(data.nbytes, want) // size * size)]
                gw, gc, theirs = timed(lambda: gguf.quants.dequantize(part, q), args.gguf_py_repeat)
            ours = dequantize(part, code)
            same = np.array_equal(np.ascontiguousarray(theirs, dtype=np.float32).view(np.uint32), ours.view(np.uint32))
            ggb = theirs.nbytes / 1e9
            figures = [f"{ggb / gc:.3f}", f"{ggb / gw:.3f}", f"{(gb / c1) / (ggb / gc):.0f}x", f"{(gb / w1) / (ggb / gw):.0f}x"]
            if name == "F32":
                figures = ["view", "view", "-", "-"]
            row += [f"{part.nbytes / 1e6:.0f}", *figures, "same" if same else "DIFFER"]
            del theirs, ours
        else:
            row += ["-"] * 6
        print("| " + " | ".join(row) + " |", flush=True)
        del data
    load1 = os.getloadavg()
    print(f"# load average at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")


if __name__ == "__main__":
    main()
