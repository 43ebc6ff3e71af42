#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| spool_fuzz::log_recovery(data));
