//! The crate's integration tests, one module per file beside this one, linked into one
//! test binary (`hostile.rs`, which measures the process's memory, is a binary of its
//! own): a binary per file filled CI's disk and spent minutes linking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod acls;
mod admin;
mod cluster;
mod cluster_identity;
mod configs;
mod connection;
mod delayed;
mod epochs;
mod fetch;
mod groups;
mod list_offsets;
mod oauthbearer;
mod produce;
mod quotas;
mod read_replicas;
mod security;
mod shared_metadata;
mod shared_storage;
mod shared_storage_faults;
mod topic_ids;
mod transactions;
mod views;
