//! The read side's integration tests, built as one binary. (`corpus.rs` and `open_memory.rs`
//! are their own binaries: the corpus conformance belongs to the top-level tests, and the peak
//! memory test's counting allocator must see no other test's allocations.)

// Shared with corpus.rs and open_memory.rs, which include it as their `mod common`.
#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod contract;
mod hostile;
mod llmw_file;
mod meta;
mod owned;
mod reads;
mod seam;
mod truncation;
mod values;
