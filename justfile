# sipllm-gguf task runner. `just` lists the recipes; CI runs `.ci/run` (the same checks).

j := quote(just_executable())

# List the recipes
default:
    {{ j }} --list

# Everything CI runs: format check, lints, tests, docs
ci: fmt-check clippy test doc

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

# Fuzz one target for SECS seconds (needs nightly and `cargo install cargo-fuzz`)
fuzz target='chunk_independent' secs='60':
    cd fuzz && cargo +nightly fuzz run {{ target }} -- -max_total_time={{ secs }} -rss_limit_mb=512 -timeout=1

# Fuzz every target for SECS seconds each
fuzz-all secs='60':
    cd fuzz && for t in $(cargo +nightly fuzz list); do cargo +nightly fuzz run "$t" -- -max_total_time={{ secs }} -rss_limit_mb=512 -timeout=1 || exit 1; done
