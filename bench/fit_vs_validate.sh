#!/usr/bin/env bash
# `sipllm fit FILE -c 8192` and `sipllm fit FILE --memory 16GiB` against `sipllm validate FILE`,
# interleaved: N rounds, each running the three back to back (the order alternating), then the
# median wall time of each and the ratios to `validate`. Whole processes: start-up, the header
# read and parse, and for `fit` the configuration and the fit (or the `--memory` search).
#
#   bench/fit_vs_validate.sh [FILE] [ROUNDS]
#
# Defaults: a Llama-3-8B-shaped GGUF at $LLAMA3 (make one with `cargo run --release -p
# sipllm-cli --example make_llama3_like -- FILE`), 31 rounds. Uses the release build of
# `sipllm` (built first), or the binary $SIPLLM names.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-${LLAMA3:-/work/coord/llama3.gguf}}
rounds=${2:-31}
bin=${SIPLLM:-}
if [ -z "$bin" ]; then
    cargo build --release -q -p sipllm-cli
    bin=target/release/sipllm
fi
[ -r "$file" ] || { echo "no file $file" >&2; exit 2; }

run_validate() { "$bin" validate "$file" > /dev/null; }
run_fit() { "$bin" fit "$file" -c 8192 > /dev/null; }
run_memory() { "$bin" fit "$file" --memory 16GiB > /dev/null; }

run_validate; run_fit; run_memory  # warm the page cache and the binary
v=(); f=(); m=()
for ((i = 0; i < rounds; i++)); do
    if ((i % 2)); then
        t0=${EPOCHREALTIME/[.,]/}; run_memory; t1=${EPOCHREALTIME/[.,]/}
        run_fit; t2=${EPOCHREALTIME/[.,]/}; run_validate; t3=${EPOCHREALTIME/[.,]/}
        m+=($((t1 - t0))); f+=($((t2 - t1))); v+=($((t3 - t2)))
    else
        t0=${EPOCHREALTIME/[.,]/}; run_validate; t1=${EPOCHREALTIME/[.,]/}
        run_fit; t2=${EPOCHREALTIME/[.,]/}; run_memory; t3=${EPOCHREALTIME/[.,]/}
        v+=($((t1 - t0))); f+=($((t2 - t1))); m+=($((t3 - t2)))
    fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mv=$(median "${v[@]}"); mf=$(median "${f[@]}"); mm=$(median "${m[@]}")
awk -v v="$mv" -v f="$mf" -v m="$mm" -v n="$rounds" 'BEGIN {
    printf "rounds %d\n", n
    printf "sipllm validate           median %.2f ms\n", v / 1e3
    printf "sipllm fit -c 8192        median %.2f ms  (%.2fx)\n", f / 1e3, f / v
    printf "sipllm fit --memory 16GiB median %.2f ms  (%.2fx)\n", m / 1e3, m / v
}'
