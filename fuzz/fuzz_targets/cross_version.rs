//! Fuzz target `cross_version`: a shim over `diagwire_compat_tests::fuzzing::cross_version`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::cross_version(data));
