//! The `sipllm` binary: see the `sipllm_cli` library and `docs/cli.md`.

fn main() -> std::process::ExitCode {
    sipllm_cli::run(std::env::args_os())
}
