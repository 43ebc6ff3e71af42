//! Test helpers for Spool: a builder for valid Kafka record batches (magic 2) and
//! random batch generators. Everything here is for tests and benchmarks.

mod batch_builder;

pub use batch_builder::{BatchBuilder, TestRecord, random_batch};
