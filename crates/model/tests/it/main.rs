//! The integration tests of `sipllm-model`: one binary, a module per concept.

mod common {
    pub(crate) use sipllm_testkit::corpus::shared_dir;
}

mod alloc;
mod config;
mod diff;
mod fit;
mod load;
mod manifest;
mod template;
mod template_parity;
