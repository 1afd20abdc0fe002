#!/usr/bin/env bash
# Builds the page's wasm into web/static/pkg/ (`just web-build`), or with --check rebuilds it
# elsewhere and fails when the committed build differs from what the source gives (CI).
#
# Needs the wasm32-unknown-unknown target (rustup) and wasm-bindgen-cli of the version the
# sipllm-web crate pins (`cargo install wasm-bindgen-cli --version V`). Paths are remapped so
# the build does not depend on where the checkout or the cargo home is. The bytes depend on
# the compiler too: pkg/BUILD records the rustc that made them, and --check compares bytes
# only under that rustc (it says loudly when it cannot).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=build
if [ "${1:-}" = "--check" ]; then mode=check; fi

want=$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' web/Cargo.toml)
if ! have=$(wasm-bindgen --version 2>/dev/null); then
  echo "web/build.sh: wasm-bindgen not found: cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi
if [ "$have" != "wasm-bindgen $want" ]; then
  echo "web/build.sh: $have found, the crate needs $want: cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi

target_dir=${CARGO_TARGET_DIR:-target}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
RUSTFLAGS="-C target-feature=+simd128 --remap-path-prefix=$PWD=/sipllm --remap-path-prefix=$cargo_home=/cargo" \
  cargo build --quiet -p sipllm-web --target wasm32-unknown-unknown --profile web

out=web/static/pkg
if [ "$mode" = check ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
  --out-dir "$out" "$target_dir/wasm32-unknown-unknown/web/sipllm_web.wasm"
{
  echo "built by web/build.sh with:"
  rustc -V
  echo "$have"
} > "$out/BUILD"

if [ "$mode" = build ]; then
  gz=$(cat "$out/sipllm_web_bg.wasm" "$out/sipllm_web.js" web/static/app.js web/static/worker.js \
    web/static/index.html | gzip -9 | wc -c)
  echo "web/static/pkg: $(wc -c < "$out/sipllm_web_bg.wasm") bytes of wasm; the page is $gz bytes gzipped"
  exit 0
fi
if ! cmp -s "$out/BUILD" web/static/pkg/BUILD; then
  echo "web/build.sh: WARNING: the committed build was made by another toolchain:" >&2
  diff "$out/BUILD" web/static/pkg/BUILD >&2 || true
  echo "web/build.sh: WARNING: the byte comparison of web/static/pkg is SKIPPED (the browser" >&2
  echo "web/build.sh: WARNING: tests still check the committed build against the CLI)" >&2
  exit 0
fi
for f in sipllm_web_bg.wasm sipllm_web.js; do
  if ! cmp -s "$out/$f" "web/static/pkg/$f"; then
    echo "web/build.sh: web/static/pkg/$f is not what the source builds: run \`just web-build\` and commit" >&2
    exit 1
  fi
done
echo "web/build.sh: web/static/pkg matches the source"
