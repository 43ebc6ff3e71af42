//! The client commands, one module each.

pub(crate) mod acl;
pub(crate) mod bench;
mod bench_databus;
mod bench_index;
mod bench_lanes;
pub(crate) mod cluster;
pub(crate) mod cluster_status;
pub(crate) mod consume;
pub(crate) mod databus;
pub(crate) mod faultcheck;
pub(crate) mod find;
pub(crate) mod group;
pub(crate) mod group_epochs;
mod group_share;
pub(crate) mod mirror;
pub(crate) mod produce;
pub(crate) mod quota;
pub(crate) mod schema;
pub(crate) mod template;
pub(crate) mod topic;
pub(crate) mod topic_changes;
pub(crate) mod txn_checker;
pub(crate) mod user;
