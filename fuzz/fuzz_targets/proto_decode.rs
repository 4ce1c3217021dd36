//! Fuzz target `proto_decode`: a shim over `diagwire_compat_tests::fuzzing::proto_decode`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::proto_decode(data));
