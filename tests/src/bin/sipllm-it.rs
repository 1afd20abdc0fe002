//! The `sipllm` command under test: the CLI library's entry point, as `crates/cli/src/main.rs`.

fn main() -> std::process::ExitCode {
    sipllm_cli::run(std::env::args_os())
}
