//! Fuzz target `schema_review`: a shim over `diagwire_compat_tests::fuzzing::TARGETS`'
//! `schema_review` (bytes → a schema tree → lint → diff against the newest release → report).
#![no_main]

libfuzzer_sys::fuzz_target!(
    |data: &[u8]| diagwire_compat_tests::schema_review::schema_review(data)
);
