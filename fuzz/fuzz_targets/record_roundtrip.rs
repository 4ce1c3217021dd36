//! Fuzz target `record_roundtrip`: a shim over `diagwire_compat_tests::fuzzing::record_roundtrip`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::record_roundtrip(data));
