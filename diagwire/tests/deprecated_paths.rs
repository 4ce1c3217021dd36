//! The paths kept for one release after a rename still name the same items, so consumers' code
//! keeps compiling (with a deprecation warning) until they move to the new path.
#![cfg(feature = "validate")]
#![allow(deprecated)]

#[test]
fn check_is_the_former_name_of_validate() {
    let validators = diagwire::validate::Validators::new().expect("validators");
    let options: diagwire::check::Options = diagwire::validate::Options::default();
    let mut checker: diagwire::check::Checker<'_> =
        diagwire::validate::Checker::new(&validators, options);
    let mut report = diagwire::check::Report::default();
    checker.check_text(
        "boot.json",
        b"{}",
        diagwire::v1::RecordKind::Boot,
        &mut report,
    );
    let again: diagwire::validate::Report = diagwire::check::check_text(
        &validators,
        "boot.json",
        "{}",
        diagwire::v1::RecordKind::Boot,
    );
    assert_eq!(report, again);
    assert_eq!(diagwire::check::IN_MEMORY, diagwire::validate::IN_MEMORY);
}

#[cfg(feature = "bundle")]
#[test]
fn check_bundle_is_reached_under_its_former_path() {
    let _: fn(
        &diagwire::validate::Validators,
        &mut diagwire::bundle::read::BundleReader,
        diagwire::validate::bundle::Progress<'_>,
    ) -> diagwire::validate::Report = diagwire::check::bundle::check_bundle;
}
