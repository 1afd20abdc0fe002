//! The format-neutral view of a parsed header (`sipllm-view`, which the browser page shares),
//! made from what [`open`](crate::open) opened.

pub use sipllm_view::{
    Arr, Entry, SetFile, SetView, Summary, TensorRow, Val, View, WarningRow, Weights, weights,
};

use sipllm_model::config::{ConfigError, ModelConfig};

use crate::open::Opened;

/// The view of an opened file: a model's, or a GGUF header's parsed leniently on its own.
pub fn of(opened: &Opened) -> View<'_> {
    match (opened.model(), opened.gguf()) {
        (Some(model), _) => View::of_model(model),
        (None, Some(g)) => View::of_header(g, opened.file_size()),
        // `Opened` always holds one of the two.
        (None, None) => View::empty(opened.format(), opened.file_size()),
    }
}

/// The model's [`ModelConfig`], read leniently (what can be read, and every problem).
pub fn config(opened: &Opened) -> (ModelConfig, Vec<ConfigError>) {
    sipllm_view::config(opened.source(), opened.gguf())
}
