#!/usr/bin/env bash
# CI for the Python package; run by .ci/run (from the checkout's root, or anywhere).
# Needs only python3 (3.9+) with pip and the Rust toolchain; installs the rest from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

py="${PYTHON:-python3}"
venv=python/.venv
if [ ! -x "$venv/bin/python" ] && ! "$py" -m venv "$venv" 2>/dev/null; then
  # Debian's python3 without python3-venv: make the venv with virtualenv instead.
  "$py" -m pip install --user -q virtualenv ||
    "$py" -m pip install --user -q --break-system-packages virtualenv  # PEP 668 interpreters
  "$py" -m virtualenv -q "$venv"
fi
vpy="$venv/bin/python"
"$vpy" -m pip install -q --upgrade pip
"$vpy" -m pip install -q maturin numpy pytest "gguf==0.19.0" safetensors

# The extension crate's own format and lint checks (it is outside the root workspace).
export PYO3_PYTHON="$PWD/$vpy"
cargo fmt --manifest-path python/Cargo.toml --check
cargo clippy --manifest-path python/Cargo.toml --all-targets -- -D warnings

# The wheel, built through pip's PEP 517 path (maturin from PyPI) exactly as
# `pip install ./python` builds it.
rm -rf python/dist
start=$(date +%s)
"$vpy" -m pip wheel -q --no-deps -w python/dist ./python
wheel=$(ls python/dist/sipllm_gguf-*.whl)
echo "ci: built $(basename "$wheel"): $(stat -c %s "$wheel") bytes in $(( $(date +%s) - start )) s"
"$vpy" -m pip install -q --force-reinstall --no-deps "$wheel"

# From the checkout's root, so `import sipllm_gguf` is the installed wheel, not python/'s
# sources. pytest's exit 5 (no test collected) must fail CI, not pass it.
rc=0
"$vpy" -m pytest -q -p no:cacheprovider python/tests || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "ci: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
