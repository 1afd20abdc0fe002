//! The write side's integration tests, built as one binary.

mod convert;
mod edit;
mod in_place;
mod safetensors;
mod split;
mod support;
mod toy;
mod write;
