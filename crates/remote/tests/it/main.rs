//! The remote sources' integration tests, built as one binary.
//!
//! * `faults`: every fault mode of the loopback test server ends in a bounded number of
//!   requests with a typed error or the right bytes;
//! * `sets`: a 1000-shard set over one connection pool; the open deadline;
//! * `values`: tensor values over HTTP fetch exactly the tensor's bytes; `open_url`;
//! * `object_store`: `s3://` against a local moto server (with the `object-store` feature).

mod faults;
mod object_store;
mod sets;
mod values;
