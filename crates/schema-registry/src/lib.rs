//! Spool's schema registry, without its transport and storage: what Confluent's
//! Schema Registry means by subjects, versions, global ids, compatibility levels and
//! modes, each format's canonical form and compatibility rules, and its error codes.
//! The broker serves it over HTTP (Confluent's REST API) and keeps it in the metadata
//! store, so that every broker of a cluster answers the same ids.

mod avro;
mod compatibility;
mod error;
mod json;
mod protobuf;
mod registry;
mod schema;

pub use compatibility::{Compatibility, Mode};
pub use error::RegistryError;
pub use registry::{
    Imported, NewSchema, Reference, Registry, StoredSchema, SubjectVersion, VersionSpec,
};
pub use schema::{ParsedSchema, Referenced, SchemaType, parse};
