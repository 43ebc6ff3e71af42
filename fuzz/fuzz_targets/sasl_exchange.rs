#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| spool_fuzz::sasl_exchange(data));
