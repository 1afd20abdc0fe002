//! The integration tests, built as one binary.

mod chunking;
mod malformed;
mod roundtrip;
mod support;
mod writer;
