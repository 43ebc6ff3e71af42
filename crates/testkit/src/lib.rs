//! Test helpers for Spool: a builder for valid Kafka record batches (magic 2) and
//! random batch generators; with the `broker` feature, a [`TestBroker`] on port 0 and
//! a raw Kafka client; with `tokens`, OAUTHBEARER's signing keys and tokens. Everything here is for tests and benchmarks.

#[cfg(feature = "broker")]
mod acls;
mod batch_builder;
#[cfg(feature = "broker")]
mod http;
#[cfg(feature = "broker")]
mod quotas;
#[cfg(feature = "broker")]
mod requests;
#[cfg(feature = "broker")]
mod test_broker;
#[cfg(feature = "tokens")]
pub mod tokens;
#[cfg(feature = "broker")]
mod transactions;

#[cfg(feature = "broker")]
pub use acls::Acl;
pub use batch_builder::{BatchBuilder, TestRecord, put_varint, random_batch};
#[cfg(feature = "broker")]
pub use http::{HttpResponse, http, http_get};
#[cfg(feature = "broker")]
pub use quotas::QuotaPart;
#[cfg(feature = "broker")]
pub use requests::{FetchAt, fetch_request, list_offsets_request, produce_request, topic_name};
#[cfg(feature = "broker")]
pub use test_broker::{RawClient, TestBroker, correlation_of};
#[cfg(feature = "broker")]
pub use transactions::TxnProducer;
