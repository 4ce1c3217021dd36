//! Every golden bundle (one per release, `fixtures/<version>/golden.tar.gz`) is read by every reader
//! — each frozen release and the current contract — and every record comes back unchanged.

use diagwire::bundle::read::{BundleReader, FileRole, Limits};
use diagwire::releases;
use diagwire::v1;
use diagwire::validate::Validators;
use diagwire_compat_tests::golden;
use serde_json::Value;

/// Parses `text` as a record of `kind` with one reader and writes it back.
type Reader = fn(&str, &str) -> Result<Value, String>;

fn reader<R: serde::Serialize>(
    parse: fn(&str, &str) -> Option<Result<R, serde_json::Error>>,
) -> impl Fn(&str, &str) -> Result<Value, String> {
    move |kind, text| match parse(kind, text) {
        Some(Ok(r)) => Ok(serde_json::to_value(&r).expect("serializes")),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("unknown kind `{kind}`")),
    }
}

fn readers() -> Vec<(&'static str, Reader)> {
    vec![
        ("1.0.0", |k, t| {
            reader(releases::v1_0_0::Record::parse)(k, t)
        }),
        ("1.1.0", |k, t| {
            reader(releases::v1_1_0::Record::parse)(k, t)
        }),
        ("current", |k, t| reader(v1::Record::parse)(k, t)),
    ]
}

#[test]
fn every_release_has_a_reader_here() {
    let names: Vec<&str> = readers().iter().map(|(n, _)| *n).collect();
    let mut want: Vec<&str> = releases::RELEASES.to_vec();
    want.push("current");
    assert_eq!(
        names, want,
        "a release was cut: add its reader to `readers()`"
    );
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
            let kind = match file.role {
                FileRole::Events => "event_batch",
                role => match role.record_kind() {
                    Some(k) => k,
                    None => continue,
                },
            };
            let text = std::str::from_utf8(&file.bytes).expect("UTF-8");
            let original: Value = serde_json::from_str(text).expect("JSON");
            for (name, read) in readers() {
                checked += 1;
                match read(kind, text) {
                    Ok(back) if back == original => {}
                    Ok(_) => {
                        problems.push(format!("{version} {}: reader {name} changed it", file.path))
                    }
                    Err(e) => problems.push(format!(
                        "{version} {}: reader {name} cannot read it: {e}",
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
    let releases_schemas = [
        (
            "1.0.0",
            releases::v1_0_0::SCHEMA_TEXTS,
            releases::v1_0_0::RECORDS,
        ),
        (
            "1.1.0",
            releases::v1_1_0::SCHEMA_TEXTS,
            releases::v1_1_0::RECORDS,
        ),
    ];
    for (version, texts, records) in releases_schemas {
        let validators = Validators::from_texts(texts, records).expect("release schemas compile");
        let mut reader =
            BundleReader::open(&golden::path(version), Limits::default()).expect("opens");
        let report =
            diagwire::check::bundle::check_bundle(&validators, &mut reader, &mut |_, _| {});
        let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
        assert!(problems.is_empty(), "{version}: {problems:#?}");
        assert!(
            report.records > 50,
            "{version}: only {} records",
            report.records
        );
    }
}
