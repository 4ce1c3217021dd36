//! Fuzz target `schema_agreement`: a shim over `diagwire_compat_tests::fuzzing::schema_agreement`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::schema_agreement(data));
