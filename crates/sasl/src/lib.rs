//! The server side of the SASL mechanisms Spool offers, without I/O: what the broker
//! checks of a client's tokens, kept apart so that it can be tested and fuzzed on its
//! own. The broker (`spool-broker`'s `security::sasl`) looks credentials and keys up
//! and steps these.
//!
//! - [`scram`]: SCRAM-SHA-256 and SCRAM-SHA-512, and the credentials they check;
//!   [`scram_client`]: the client's side, for Spool's own CLI;
//! - [`plain`]: PLAIN's message;
//! - [`oauth`]: OAUTHBEARER's client response (RFC 7628, KIP-255) and [`jwt`]: its
//!   token, checked against a JSON Web Key Set.

pub mod jwt;
pub mod oauth;
pub mod plain;
pub mod scram;
pub mod scram_client;
