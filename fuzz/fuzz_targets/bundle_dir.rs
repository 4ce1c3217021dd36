//! Fuzz target `bundle_dir`: a shim over `diagwire_compat_tests::fuzzing::bundle_dir`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::bundle_dir(data));
