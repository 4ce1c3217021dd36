//! The paths kept for one release after a rename still name the same items, so consumers' code
//! keeps compiling (with a deprecation warning) until they move to the new path.
#![allow(deprecated)]

#[cfg(feature = "validate")]
#[test]
fn check_is_the_former_name_of_validate() {
    let validators = diagwire::validate::Validators::new().expect("validators");
    let options: diagwire::check::Options = diagwire::validate::Options::default();
    let mut checker: diagwire::check::Checker<'_> =
        diagwire::validate::Validator::new(&validators, options);
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

#[cfg(all(feature = "validate", feature = "bundle"))]
#[test]
fn validate_keeps_the_former_check_names_of_its_items() {
    let validators = diagwire::validate::Validators::new().expect("validators");
    let kind = diagwire::v1::RecordKind::Boot;
    let mut old: diagwire::validate::Checker<'_> =
        diagwire::validate::Validator::new(&validators, diagwire::validate::Options::default());
    let (mut by_old, mut by_new) = (Default::default(), Default::default());
    old.check_text("boot.json", b"{}", kind, &mut by_old);
    old.validate_text("boot.json", b"{}", kind, &mut by_new);
    assert_eq!(by_old, by_new);
    assert!(!by_new.is_clean(), "an empty boot record is not valid");
    assert_eq!(
        diagwire::validate::check_text(&validators, "boot.json", "{}", kind),
        diagwire::validate::validate_text(&validators, "boot.json", "{}", kind)
    );
    let _: fn(
        &diagwire::validate::Validators,
        &mut diagwire::bundle::read::BundleReader,
        diagwire::validate::bundle::Progress<'_>,
    ) -> diagwire::validate::Report = diagwire::validate::bundle::check_bundle;
    let _: fn(
        &diagwire::validate::Validators,
        &std::path::Path,
        Option<diagwire::v1::RecordKind>,
    ) -> diagwire::validate::Report = diagwire::validate::check_file;
}

#[cfg(all(feature = "validate", feature = "bundle"))]
#[test]
fn check_bundle_is_reached_under_its_former_path() {
    let _: fn(
        &diagwire::validate::Validators,
        &mut diagwire::bundle::read::BundleReader,
        diagwire::validate::bundle::Progress<'_>,
    ) -> diagwire::validate::Report = diagwire::check::bundle::check_bundle;
}

#[cfg(feature = "bundle")]
#[test]
fn write_is_the_former_name_of_output() {
    let mut bundle = diagwire::bundle::BundleContents::new("run-1");
    bundle.insert_json("MANIFEST.json", &serde_json::json!({"run_id": "run-1"}));
    let (mut old, mut new) = (Vec::new(), Vec::new());
    diagwire::bundle::write::write_tar_gz(&bundle, &mut old).unwrap();
    diagwire::bundle::output::write_tar_gz(&bundle, &mut new).unwrap();
    assert_eq!(old, new);
    let tmp = tempfile::tempdir().unwrap();
    let dir = diagwire::bundle::write::write_dir(&bundle, tmp.path()).unwrap();
    assert_eq!(dir, tmp.path().join("run-1"));
}
