//! The crate's integration tests, one module per file beside this one, linked into one
//! test binary: a binary per file filled CI's disk and spent minutes linking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod commits;
mod registry;
