#!/usr/bin/env bash
# `sipllm validate FILE` against `head -c HEADER_BYTES FILE > /dev/null`, interleaved: N rounds,
# each running the two commands back to back (the order alternating), then the median wall
# time of each and their ratio. Both read the header from the page cache (one warm-up run each
# first), so the figure is the whole process: start-up, the header read and the parse.
#
#   bench/validate_vs_head.sh [FILE] [HEADER_BYTES] [ROUNDS]
#
# Defaults: a Llama-3-8B-shaped GGUF at $LLAMA3 (header 7,715,040 bytes; make one with
# `cargo run --release -p sipllm-cli --example make_llama3_like`), 41 rounds. Uses the release
# build of `sipllm` (built first), or the binary $SIPLLM names.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-${LLAMA3:-/work/coord/llama3.gguf}}
header=${2:-7715040}
rounds=${3:-41}
# $SIPLLM: another `sipllm` binary to time (e.g. an older build) instead of this tree's.
bin=${SIPLLM:-}
if [ -z "$bin" ]; then
    cargo build --release -q -p sipllm-cli
    bin=target/release/sipllm
fi
[ -r "$file" ] || { echo "no file $file" >&2; exit 2; }

run_validate() { "$bin" validate "$file" > /dev/null; }
run_head() { head -c "$header" "$file" > /dev/null; }

run_validate; run_head  # warm the page cache and the binaries
# Microseconds from $EPOCHREALTIME (bash 5), read without starting a process (no `date`, no
# command substitution), so only the two commands are timed.
v=(); h=()
for ((i = 0; i < rounds; i++)); do
    if ((i % 2)); then
        t0=${EPOCHREALTIME/[.,]/}; run_head; t1=${EPOCHREALTIME/[.,]/}
        run_validate; t2=${EPOCHREALTIME/[.,]/}
        h+=($((t1 - t0))); v+=($((t2 - t1)))
    else
        t0=${EPOCHREALTIME/[.,]/}; run_validate; t1=${EPOCHREALTIME/[.,]/}
        run_head; t2=${EPOCHREALTIME/[.,]/}
        v+=($((t1 - t0))); h+=($((t2 - t1)))
    fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mv=$(median "${v[@]}"); mh=$(median "${h[@]}")
awk -v v="$mv" -v h="$mh" -v n="$rounds" -v hb="$header" 'BEGIN {
    printf "rounds %d, header %d bytes\n", n, hb
    printf "sipllm validate  median %.2f ms\n", v / 1e3
    printf "head -c          median %.2f ms\n", h / 1e3
    printf "ratio            %.2fx\n", v / h
}'
