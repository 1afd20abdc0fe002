# sipllm-gguf task runner. `just` lists the recipes; CI runs `.ci/run` (the same checks).

j := quote(just_executable())

# List the recipes
default:
    {{ j }} --list

# Everything CI runs: format check, lints, tests, docs, the Python package
ci: fmt-check clippy test doc python

# The Python package: lint its crate, build the wheel, run its pytest suite (python/ci.sh)
python:
    bash python/ci.sh

# Run the whole test suite (the README's test command)
test *args:
    cargo test --workspace {{ args }}

# Lint every target; warnings are errors
clippy *args:
    cargo clippy --workspace --all-targets -- -D warnings {{ args }}

# Format the code
fmt:
    cargo fmt --all

# Check formatting without changing files
fmt-check:
    cargo fmt --all --check

# Build the docs; warnings are errors
doc $RUSTDOCFLAGS='-D warnings':
    cargo doc --workspace --no-deps

# Run the criterion benchmarks (all, or one bench target, e.g. `just bench parse`)
bench *args:
    cargo bench --workspace {{ args }}

# Fuzz one target for SECS seconds under `nice` (nightly; `cargo install cargo-fuzz`; fuzz/README.md)
fuzz target='chunk_independent' secs='60' *args='':
    #!/usr/bin/env bash
    set -euo pipefail
    cd fuzz
    mkdir -p corpus/{{ target }}
    # New inputs go to the first (ignored) corpus dir; the committed seeds and regressions are read too.
    dirs=(corpus/{{ target }})
    for d in seeds/{{ target }} regressions/{{ target }}; do [ -d "$d" ] && dirs+=("$d"); done
    # ASan's default 256 MB quarantine of freed memory alone is half the 512 MB RSS budget.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=64}"
    nice -n 19 cargo +nightly fuzz run {{ target }} "${dirs[@]}" -- -max_total_time={{ secs }} -rss_limit_mb=512 -timeout=1 {{ args }}

# Fuzz every target for SECS seconds each
fuzz-all secs='60':
    cd fuzz && for t in $(cargo +nightly fuzz list); do {{ j }} fuzz "$t" {{ secs }} || exit 1; done

# Build every fuzz target (nightly, AddressSanitizer)
fuzz-build:
    cd fuzz && cargo +nightly fuzz build

# Replay the committed seeds and regressions through the targets (stable, no fuzzer)
fuzz-regressions:
    cargo test -p sipllm-tests --test it fuzz_replay -- --nocapture
    cargo test -p sipllm-fuzzcheck --test it seeds -- --nocapture

# Minimize a crashing input (path as cargo fuzz prints it): `just fuzz-tmin parse_slice artifacts/parse_slice/crash-…`
fuzz-tmin target artifact:
    cd fuzz && cargo +nightly fuzz tmin {{ target }} {{ artifact }}

# Run the in-memory parser, streaming and fuzz-replay tests Miri can run (nightly; `rustup +nightly component add miri rust-src`; ~15 min; fuzz/README.md)
miri:
    #!/usr/bin/env bash
    set -euo pipefail
    # Isolation off: the tests read their input files. No file maps or fadvise here (unsupported).
    iso=-Zmiri-disable-isolation
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-gguf --lib
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-llmw --lib
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-llmw --test it -- malformed
    # toy::tests::f16_conversion_rounds_to_nearest_even relies on f32::powi being exact, which
    # Rust does not promise and Miri deliberately perturbs.
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-streaming --lib -- --skip f16_conversion
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-streaming --test meta
    # (hostile.rs's single_byte_corruptions_never_panic takes over 30 min under Miri.)
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-streaming --test hostile -- every_prefix
    # The dequantizers' scalar kernels on small inputs (the SIMD module is compiled out).
    MIRIFLAGS=$iso nice -n 19 cargo +nightly miri test -p sipllm-quants --lib --test it
    # A few fuzz inputs through every target (the whole replay takes hours under Miri).
    for only in v2. lenient-unknown; do
        MIRIFLAGS="$iso -Zmiri-env-set=SIPLLM_REPLAY_ONLY=$only" nice -n 19 cargo +nightly miri test -p sipllm-tests --test it fuzz_replay
    done

# Build the browser page's wasm into web/static/pkg/ (commit it; docs/web.md)
web-build:
    bash web/build.sh

# Serve the page (`sipllm web`) and run its browser tests (headless Chromium; docs/web.md)
web-test:
    python3 web/tests/test_browser.py
