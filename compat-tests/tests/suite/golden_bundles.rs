//! Every golden bundle (one per release, `fixtures/<version>/golden.tar.gz`) is read by every reader
//! — each frozen release and the current contract — and every record comes back unchanged.

use diagwire::Contract;
use diagwire::ProblemKind;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::layout::Role;
use diagwire::releases::{self, READERS};
use diagwire::validate::Validators;
use diagwire_compat_tests::golden;
use serde_json::Value;

/// The reader of a version: a release, or the current schemas.
fn reader(version: &str) -> &'static Contract {
    READERS
        .iter()
        .find(|r| r.version == version)
        .unwrap_or_else(|| panic!("no reader of {version}"))
}

#[test]
fn every_release_has_a_reader() {
    for version in releases::RELEASES {
        assert_eq!(reader(version).version, *version);
    }
}

#[test]
fn every_release_has_a_golden_bundle() {
    for version in releases::RELEASES {
        assert!(
            golden::path(version).exists(),
            "no golden bundle for {version}: run make_golden_bundle"
        );
    }
}

#[test]
fn every_reader_reads_every_golden_bundle_losslessly() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for version in releases::RELEASES {
        let mut bundle = BundleReader::open(&golden::path(version), Limits::default())
            .expect("golden bundle opens");
        for file in bundle.files() {
            let file = file.expect("golden entries are sound");
            let Some(kind) = file.role.record_kind() else {
                assert_eq!(file.role, Role::Unknown);
                continue;
            };
            let text = std::str::from_utf8(&file.bytes).expect("UTF-8");
            let original: Value = serde_json::from_str(text).expect("JSON");
            for r in READERS {
                checked += 1;
                let name = r.version;
                match (r.reread)(kind.as_str(), text) {
                    Some(Ok(back)) if back == original => {}
                    Some(Ok(_)) => {
                        problems.push(format!("{version} {}: reader {name} changed it", file.path))
                    }
                    Some(Err(e)) => problems.push(format!(
                        "{version} {}: reader {name} cannot read it: {e}",
                        file.path
                    )),
                    None => problems.push(format!(
                        "{version} {}: reader {name} has no record kind `{kind}`",
                        file.path
                    )),
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} reads");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_golden_bundle_is_valid_under_its_own_release() {
    for version in releases::RELEASES {
        let validators =
            Validators::for_contract(reader(version)).expect("release schemas compile");
        let mut bundle =
            BundleReader::open(&golden::path(version), Limits::default()).expect("opens");
        let report =
            diagwire::validate::bundle::validate_bundle(&validators, &mut bundle, &mut |_, _| {});
        // A golden bundle holds arbitrary valid records, so its parts do not agree with each other
        // (run ids, labels); what is checked here is every file and record on its own.
        let problems: Vec<String> = report
            .problems
            .iter()
            .filter(|p| !matches!(p.kind, ProblemKind::Manifest | ProblemKind::Layout))
            .map(ToString::to_string)
            .collect();
        assert!(problems.is_empty(), "{version}: {problems:#?}");
        assert_eq!(report.invalid_records, 0, "{version}");
        assert!(
            report.records > 50,
            "{version}: only {} records",
            report.records
        );
    }
}
