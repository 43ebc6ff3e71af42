//! The crate's integration tests, one module per file beside this one, linked into one
//! test binary: a binary per file filled CI's disk and spent minutes linking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acls;
mod catalogue;
mod cluster;
mod common;
mod conformance;
mod credentials;
mod delayed;
mod group_states;
mod lane_presence;
mod mirror_links;
mod offset_log;
mod quotas;
mod schema_registry;
mod share_partitions;
mod table_files;
mod transactions;
