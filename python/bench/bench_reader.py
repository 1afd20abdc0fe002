#!/usr/bin/env python3
"""Benchmarks sipllm_gguf against gguf-py 0.19.0 on one GGUF file (default: a Llama-3-8B-shaped
one), each measurement in a fresh process so that its peak RSS is its own.

    python3 ../shared/bench/make_llama3_like.py -o /tmp/llama3.gguf   # needs `pip install gguf`
    python python/bench/bench_reader.py /tmp/llama3.gguf [--repeat 20] [--skip-gguf-py]

Rows: the time of the operation (median of --repeat runs in one process, after a first run
shown as "cold/open": for opens, the first open; for reads, the open before them), and the
process's peak RSS (VmHWM) after the imports alone and after the first operation (opens) or all
of them (reads). Needs numpy and sipllm_gguf; gguf-py (`pip install gguf==0.19.0`) for its rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from array import array

TOKENS = "tokenizer.ggml.tokens"


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def parse_value(value, data_type):
    """transformers' per-element value parsing (the pattern of its read_field)."""
    if len(data_type) == 1:
        data_type, array_type = data_type[0], None
    else:
        data_type, array_type = data_type
    if data_type in [0, 1, 2, 3, 4, 5, 10, 11]:
        return int(value[0])
    if data_type in [6, 12]:
        return float(value[0])
    if data_type in [7]:
        return bool(value[0])
    if data_type in [8]:
        return array("B", list(value)).tobytes().decode()
    if data_type in [9]:
        return parse_value(value, [array_type])
    return value


def child(what: str, path: str, repeat: int) -> dict:
    import numpy  # noqa: F401  (both readers need it; its RSS is the baseline)

    if what.startswith("gguf-py"):
        import gguf

        reader_cls = gguf.GGUFReader
    else:
        import sipllm_gguf

        reader_cls = sipllm_gguf.GGUFReader
        sipllm_gguf.GGUFValueType  # resolving the enums imports gguf-py when installed
    base = peak_rss_mb()
    times = []

    if what in ("sipllm-reader", "gguf-py-reader"):
        t = time.perf_counter()
        reader = reader_cls(path)
        cold = time.perf_counter() - t
        peak = peak_rss_mb()  # after one open, as a program has it
        del reader
        for _ in range(0 if what == "gguf-py-reader" else repeat):
            t = time.perf_counter()
            reader = reader_cls(path)
            times.append(time.perf_counter() - t)
            del reader
        ms = statistics.median(times) * 1e3 if times else cold * 1e3
        return {"what": what, "cold_ms": cold * 1e3, "ms": ms, "base_mb": base, "peak_mb": peak}

    if what in ("sipllm-transformers", "gguf-py-transformers", "sipllm-comfy", "gguf-py-comfy", "sipllm-contents", "gguf-py-contents"):
        t0 = time.perf_counter()
        reader = reader_cls(path)
        open_s = time.perf_counter() - t0
        runs = 1 if what.startswith("gguf-py") else repeat
        for _ in range(runs):
            f = reader.fields[TOKENS]
            t = time.perf_counter()
            if what.endswith("transformers"):
                out = [parse_value(f.parts[i], f.types) for i in f.data]
            elif what.endswith("comfy"):
                out = tuple(str(f.parts[i], encoding="utf-8") for i in f.data)
            else:
                out = f.contents()
            times.append(time.perf_counter() - t)
        return {"what": what, "open_ms": open_s * 1e3, "ms": statistics.median(times) * 1e3, "n": len(out), "base_mb": base, "peak_mb": peak_rss_mb()}

    import sipllm_gguf

    if what == "native-open":
        t = time.perf_counter()
        model = sipllm_gguf.open(path)
        cold = time.perf_counter() - t
        peak = peak_rss_mb()
        del model
        for _ in range(repeat):
            t = time.perf_counter()
            model = sipllm_gguf.open(path)
            times.append(time.perf_counter() - t)
            del model
        return {"what": what, "cold_ms": cold * 1e3, "ms": statistics.median(times) * 1e3, "base_mb": base, "peak_mb": peak}
    model = sipllm_gguf.open(path)
    for _ in range(repeat):
        tokens = model.tokens
        t = time.perf_counter()
        if what == "native-tokens-list":
            out = tokens.to_list()
        elif what == "native-tokens-each":
            out = [tokens[i] for i in range(len(tokens))]
        elif what == "native-tokens-iter":
            out = list(tokens)
        elif what == "native-metadata":
            out = {k: model.metadata[k] for k in model.metadata}
        else:
            raise SystemExit(f"unknown measurement {what}")
        times.append(time.perf_counter() - t)
    return {"what": what, "ms": statistics.median(times) * 1e3, "n": len(out), "base_mb": base, "peak_mb": peak_rss_mb()}


def run(what: str, path: str, repeat: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, path, "--repeat", str(repeat)], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"{what} failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--skip-gguf-py", action="store_true", help="skip gguf-py's rows (its open takes ~20 s)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.path, args.repeat)))
        return

    rows = [
        ("GGUFReader(path)", "sipllm-reader"),
        ("fields[tokens].contents()", "sipllm-contents"),
        ("transformers-style read of the tokens", "sipllm-transformers"),
        ("ComfyUI-style str(parts[i]) of the tokens", "sipllm-comfy"),
        ("native open(path)", "native-open"),
        ("native tokens.to_list()", "native-tokens-list"),
        ("native [tokens[i] for i …]", "native-tokens-each"),
        ("native list(tokens)", "native-tokens-iter"),
        ("native every metadata value", "native-metadata"),
    ]
    if not args.skip_gguf_py:
        rows += [
            ("gguf-py GGUFReader(path)", "gguf-py-reader"),
            ("gguf-py fields[tokens].contents()", "gguf-py-contents"),
            ("gguf-py transformers-style read of the tokens", "gguf-py-transformers"),
        ]
    print(f"file: {args.path}; python {sys.version.split()[0]}")
    print(f"{'measurement':48} {'time':>12} {'cold/open':>12} {'RSS imports':>12} {'peak RSS':>10}")
    for label, what in rows:
        r = run(what, args.path, args.repeat)
        extra = r.get("cold_ms", r.get("open_ms"))
        extra_s = f"{extra:10.2f}ms" if extra is not None else ""
        n = f" (n={r['n']})" if "n" in r else ""
        print(f"{label + n:48} {r['ms']:10.2f}ms {extra_s:>12} {r['base_mb']:10.1f}MB {r['peak_mb']:8.1f}MB", flush=True)


if __name__ == "__main__":
    main()
