//! The parser's integration tests, built as one binary (one link) with a module per concern.
//!
//! * `hostile`: the corruption table (every case with its exact outcome per profile), the
//!   allocation bounds, one test per error and warning kind, the truncation sweep;
//! * `chunking`: chunk independence (any chunking, the same AST or the same error);
//! * `roundtrip`: any builder-made file parses back to what was built;
//! * `string_arrays`: the speculative string walk against the element-by-element one;
//! * `writer`: byte-exact re-writes, both byte orders, refusals;
//! * `arbitrary` (proptest strategies, the chunked driver) and `support::count_alloc` (the
//!   counting global allocator `hostile` installs; its counters run only inside `measure`, so
//!   the other modules' tests never see it).

mod arbitrary;
mod chunking;
mod hostile;
mod roundtrip;
mod string_arrays;
mod support {
    pub(crate) mod count_alloc;
}
mod writer;
