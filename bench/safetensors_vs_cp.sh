#!/usr/bin/env bash
# One measurement of `sipllm convert M.gguf M.safetensors` against `cp` of its own output (a
# file of the output's size), same run, page cache warm (docs/benchmarks.md, "safetensors
# export"). Usage: bench/safetensors_vs_cp.sh DIR MODEL.gguf... (the models in DIR; outputs
# written there and removed). SIPLLM=<binary> times another build.
set -euo pipefail
cd "$(dirname "$0")/.."
sipllm="${SIPLLM:-$PWD/target/release/sipllm}"
dir="$1"; shift
cd "$dir"
for m in "$@"; do
  s="${m%.gguf}"
  cat "$m" > /dev/null
  uptime
  /usr/bin/time -f "$s export f32: %e s wall, %M KiB max RSS" "$sipllm" convert "$m" "$s.safetensors" --dtype f32 > /dev/null
  ls -l "$s.safetensors"
  /usr/bin/time -f "$s cp: %e s wall, %M KiB max RSS" cp "$s.safetensors" "$s.copy"
  /usr/bin/time -f "$s sync of the copy: %e s wall" sync "$s.copy"
  rm -f "$s.copy"
  /usr/bin/time -f "$s dd conv=fsync: %e s wall" dd if="$s.safetensors" of="$s.copy" bs=8M conv=fsync status=none
  rm -f "$s.copy" "$s.safetensors"
  /usr/bin/time -f "$s export bf16: %e s wall, %M KiB max RSS" "$sipllm" convert "$m" "$s.safetensors" --dtype bf16 > /dev/null
  rm -f "$s.safetensors"
done
