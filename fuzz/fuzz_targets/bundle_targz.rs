//! Fuzz target `bundle_targz`: a shim over `diagwire_compat_tests::fuzzing::bundle_targz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| diagwire_compat_tests::fuzzing::bundle_targz(data));
