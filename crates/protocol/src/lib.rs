//! Spool's protocol layer. It does no I/O: it works on byte slices.
//!
//! For now it holds record-batch validation and in-place patching, which the storage
//! engine's recovery and (later) the produce path share.

pub mod batch;
pub mod records;
