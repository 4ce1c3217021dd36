//! Fuzz target `record_file`: a shim over `diagwire_compat_tests::fuzzing::record_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::record_file(data));
