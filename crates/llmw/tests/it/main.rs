//! The integration tests, built as one binary.

mod malformed;
mod support;
