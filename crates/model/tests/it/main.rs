//! The integration tests of `sipllm-model`: one binary, a module per concept.

mod common {
    pub(crate) use sipllm_testkit::corpus::shared_dir;
}

mod config;
mod diff;
mod template_parity;
