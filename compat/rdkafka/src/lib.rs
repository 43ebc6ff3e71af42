//! No library: the tests in `tests/` drive a [`spool_testkit::TestBroker`] with
//! librdkafka through the `rdkafka` crate, a client independent of Spool's own
//! encoder.
