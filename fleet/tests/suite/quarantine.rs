//! The bodies the collector quarantined at ingest in the dataset: the table `quarantine` (one row
//! per body, as `diagwire validate` reports each) and the view `quarantined_per_node`. One case
//! per layout of a bundle's `@quarantine/` folder, each exported from the bundle as a directory and
//! as an archive and checked by one function against the rows the case expects and against
//! validation's problems of the same bundle; then a re-export, and a dataset written before the
//! table existed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use diagwire::bundle::Writer;
use diagwire::bundle::output::write_tar_gz;
use diagwire::bundle::read::{BundleReader, Limits, read_all};
use diagwire::quarantine::{QUARANTINE_DIR, Why, WhyProblem};
use diagwire::v1::{BundleWriter, Identity, WriterKind};
use diagwire::validate::Validators;
use diagwire_fleet::query::{self, Format};
use diagwire_fleet::{dataset, export};
use serde_json::{Value, json};

const RUN: &str = "run-q";
const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A file of the quarantine: the node folder, its name and its bytes.
type File = (&'static str, &'static str, Vec<u8>);

/// A `.why.json` as the collector writes it: one problem at `pointer`.
fn why(route: &str, pointer: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec_pretty(&Why {
        route: route.into(),
        content_type: Some("application/json".into()),
        problems: vec![WhyProblem {
            pointer: pointer.into(),
            message: message.into(),
        }],
        problem: None,
    })
    .unwrap()
}

/// A one-node bundle with `files` in its quarantine folder, in a directory whose name is not
/// the run's (the rows written before the manifest is read get the run's id all the same).
fn bundle(dir: &Path, files: &[File]) -> PathBuf {
    let node = diagwire::NodeId([0xaf; 32]);
    let mut w = Writer::new(RUN, BundleWriter::new(WriterKind::Collector, "test", "0"));
    w.boot(&Identity::new(
        node.to_hex(),
        node.short(),
        "stage",
        RUN,
        1_779_733_870_128,
        1,
    ));
    let (written, _) = w.write_dir(dir).unwrap();
    let path = dir.join("renamed-bundle");
    fs::rename(&written, &path).unwrap();
    for (node, name, bytes) in files {
        let q = path.join(QUARANTINE_DIR).join(node);
        fs::create_dir_all(&q).unwrap();
        fs::write(q.join(name), bytes).unwrap();
    }
    path
}

/// The bundle at `path` also as an archive beside it.
fn archive(path: &Path) -> PathBuf {
    let (contents, errors) = read_all(path, Limits::default()).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let out = path.with_extension("tar.gz");
    write_tar_gz(&contents, fs::File::create(&out).unwrap()).unwrap();
    out
}

fn rows(dataset: &Path, sql: &str) -> Vec<Value> {
    let batches = query::query(dataset, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    serde_json::from_str(&query::render(&batches, Format::Json).unwrap()).unwrap()
}

const TABLE: &str = "SELECT run_id, node, file, bytes, route, content_type, problems, problem, \
                     problems_omitted, reasons, extra_json FROM quarantine ORDER BY node, file";

const VIEW: &str = "SELECT * FROM quarantined_per_node ORDER BY run_id, node";

/// Validation's "quarantined at ingest" problems of `bundle`, per node folder: the reasons.
fn validated(bundle: &Path) -> BTreeMap<String, Vec<String>> {
    let validators = Validators::new().unwrap();
    let mut reader = BundleReader::open(bundle, Limits::default()).unwrap();
    let report =
        diagwire::validate::bundle::validate_bundle(&validators, &mut reader, &mut |_, _| {});
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in &report.problems {
        let Some(reason) = p.message.strip_prefix("quarantined at ingest: ") else {
            continue;
        };
        let (_, rest) = p
            .location
            .file
            .split_once(&format!("{QUARANTINE_DIR}/"))
            .expect("located in the quarantine");
        let node = rest.split('/').next().unwrap().to_owned();
        out.entry(node).or_default().push(reason.to_owned());
    }
    out
}

struct Case {
    name: &'static str,
    files: Vec<File>,
    /// The rows of the table, in node and file order, without `run_id` (always the run's).
    want: Vec<Value>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "a bundle without quarantine has no rows",
            files: vec![],
            want: vec![],
        },
        Case {
            name: "a body with its reason is one row with the reason's pointer and message",
            files: vec![
                (A, "000001-boot.json", b"[1]".to_vec()),
                (A, "000001-boot.why.json", why("boot", "", "not an object")),
            ],
            want: vec![json!({
                "node": A, "file": "000001-boot.json", "bytes": 3, "route": "boot",
                "content_type": "application/json",
                "problems": [{"pointer": "", "message": "not an object"}],
                "reasons": "posted to /diag/boot: not an object",
            })],
        },
        Case {
            name: "bodies of two nodes are rows of each node",
            files: vec![
                (A, "000001-events.json", b"[{\"x\":1},{}]".to_vec()),
                (
                    A,
                    "000001-events.why.json",
                    why("events", "/0", "not an event record"),
                ),
                (A, "000002-metrics.bin", b"xyz".to_vec()),
                (
                    A,
                    "000002-metrics.why.json",
                    br#"{"route":"metrics","problem":"unknown record kind"}"#.to_vec(),
                ),
                (B, "000001-snapshot.json", b"{".to_vec()),
                (B, "000001-snapshot.why.json", why("snapshot", "", "not JSON")),
            ],
            want: vec![
                json!({
                    "node": A, "file": "000001-events.json", "bytes": 12, "route": "events",
                    "content_type": "application/json",
                    "problems": [{"pointer": "/0", "message": "not an event record"}],
                    "reasons": "posted to /diag/events: at /0: not an event record",
                }),
                json!({
                    "node": A, "file": "000002-metrics.bin", "bytes": 3, "route": "metrics",
                    "problem": "unknown record kind",
                    "reasons": "posted to /diag/metrics: unknown record kind",
                }),
                json!({
                    "node": B, "file": "000001-snapshot.json", "bytes": 1, "route": "snapshot",
                    "content_type": "application/json",
                    "problems": [{"pointer": "", "message": "not JSON"}],
                    "reasons": "posted to /diag/snapshot: not JSON",
                }),
            ],
        },
        Case {
            name: "the problems the collector left out are counted and a key it adds later is kept",
            files: vec![
                (A, "000001-events.json", b"[]".to_vec()),
                (
                    A,
                    "000001-events.why.json",
                    br#"{"route":"events","problems":[{"pointer":"/0","message":"bad"}],"problems_omitted":7,"later":{"x":1}}"#.to_vec(),
                ),
            ],
            want: vec![json!({
                "node": A, "file": "000001-events.json", "bytes": 2, "route": "events",
                "problems": [{"pointer": "/0", "message": "bad"}], "problems_omitted": 7,
                "reasons": "posted to /diag/events: at /0: bad",
                "extra_json": "{\"/later\":{\"x\":1}}",
            })],
        },
        Case {
            name: "a body without a reason has the kind its name gives and says so",
            files: vec![(A, "000004-finalize.json", b"null".to_vec())],
            want: vec![json!({
                "node": A, "file": "000004-finalize.json", "bytes": 4, "route": "finalize",
                "reasons": "no `.why.json` says why",
            })],
        },
        Case {
            name: "a reason that does not read says so",
            files: vec![
                (A, "000001-boot.json", b"[1]".to_vec()),
                (A, "000001-boot.why.json", b"not json".to_vec()),
            ],
            want: vec![json!({
                "node": A, "file": "000001-boot.json", "bytes": 3, "route": "boot",
                "reasons": "its reason does not read (expected ident at line 1 column 2)",
            })],
        },
        Case {
            name: "a reason without its body is a row of no bytes",
            files: vec![(B, "000003-boot.why.json", why("boot", "", "not an object"))],
            want: vec![json!({
                "node": B, "file": "000003-boot.why.json", "route": "boot",
                "content_type": "application/json",
                "problems": [{"pointer": "", "message": "not an object"}],
                "reasons": "a reason without its body `000003-boot.*`: posted to /diag/boot: not an object",
            })],
        },
        Case {
            name: "a reason with control characters is kept as written and printed escaped",
            files: vec![
                (A, "000001-boot.json", b"[1]".to_vec()),
                (A, "000001-boot.why.json", why("boot", "", "bad\u{1b}[2J")),
            ],
            want: vec![json!({
                "node": A, "file": "000001-boot.json", "bytes": 3, "route": "boot",
                "content_type": "application/json",
                "problems": [{"pointer": "", "message": "bad\u{1b}[2J"}],
                "reasons": "posted to /diag/boot: bad\\u{1b}[2J",
            })],
        },
    ]
}

/// Exports the case's bundle, as a directory and as an archive, each into a dataset of its own,
/// and checks the table's rows, the view's counts, and that both agree with validation.
#[track_caller]
fn check_quarantine(case: &Case) {
    let dir = tempfile::tempdir().unwrap();
    let path = bundle(dir.path(), &case.files);
    let archive = archive(&path);
    let reported = validated(&path);
    assert_eq!(reported, validated(&archive), "{}", case.name);
    for source in [&path, &archive] {
        let data = tempfile::tempdir().unwrap();
        let report = export::export(std::slice::from_ref(source), data.path(), true).unwrap();
        assert_eq!(report.runs[0].1, RUN, "{}", case.name);
        assert!(
            report.problems.is_empty(),
            "{}: a quarantined body is a row, not a problem of the export: {:?}",
            case.name,
            report.problems
        );

        let mut table = rows(data.path(), TABLE);
        for r in &mut table {
            assert_eq!(r["run_id"], RUN, "{}: {r}", case.name);
            r.as_object_mut().unwrap().remove("run_id");
        }
        assert_eq!(table, case.want, "{}: {}", case.name, source.display());
        let written = report.runs[0].2.get("quarantine").copied().unwrap_or(0);
        assert_eq!(written as usize, case.want.len(), "{}: rows", case.name);

        // The view counts each node's rows and bytes; validation reports as many, with the same
        // reasons.
        let view = rows(data.path(), VIEW);
        let mut want_view: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for r in &case.want {
            let e = want_view
                .entry(r["node"].as_str().unwrap().into())
                .or_default();
            e.0 += 1;
            e.1 += r.get("bytes").and_then(Value::as_u64).unwrap_or(0);
        }
        let want_view: Vec<Value> = want_view
            .iter()
            .map(|(node, (n, b))| json!({"run_id": RUN, "node": node, "bodies": n, "bytes": b}))
            .collect();
        assert_eq!(view, want_view, "{}: the view", case.name);
        let counted: BTreeMap<String, u64> = view
            .iter()
            .map(|r| {
                (
                    r["node"].as_str().unwrap().into(),
                    r["bodies"].as_u64().unwrap(),
                )
            })
            .collect();
        let by_validation: BTreeMap<String, u64> = reported
            .iter()
            .map(|(n, reasons)| (n.clone(), reasons.len() as u64))
            .collect();
        assert_eq!(
            counted, by_validation,
            "{}: per node as validate",
            case.name
        );
        let mut reasons: Vec<String> = table
            .iter()
            .map(|r| diagwire::problem::printable(r["reasons"].as_str().unwrap()).into_owned())
            .collect();
        let mut said: Vec<String> = reported.values().flatten().cloned().collect();
        reasons.sort();
        said.sort();
        assert_eq!(reasons, said, "{}: the reasons validate reports", case.name);
    }
}

#[test]
fn each_quarantine_layout_is_its_rows_and_counts_as_validate_reports_it() {
    for case in cases() {
        check_quarantine(&case);
    }
}

fn count(dataset: &Path) -> Value {
    rows(dataset, "SELECT COUNT(*) AS n FROM quarantine")[0]["n"].clone()
}

#[test]
fn a_re_export_replaces_the_runs_quarantine_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let two = [
        (A, "000001-boot.json", b"[1]".to_vec()),
        (A, "000001-boot.why.json", why("boot", "", "not an object")),
        (B, "000002-boot.json", b"[2]".to_vec()),
        (B, "000002-boot.why.json", why("boot", "", "not an object")),
    ];
    let first = bundle(&dir.path().join("first"), &two);
    export::export(std::slice::from_ref(&first), data.path(), true).unwrap();
    export::export(&[first], data.path(), true).unwrap();
    assert_eq!(
        count(data.path()),
        2,
        "exported twice, the rows are not doubled"
    );

    let fewer = bundle(&dir.path().join("fewer"), &two[..2]);
    export::export(&[fewer], data.path(), true).unwrap();
    assert_eq!(
        rows(data.path(), VIEW),
        [json!({"run_id": RUN, "node": A, "bodies": 1, "bytes": 3})],
        "the run's rows are the latest export's"
    );

    let none = bundle(&dir.path().join("none"), &[]);
    export::export(&[none], data.path(), true).unwrap();
    assert_eq!(
        count(data.path()),
        0,
        "a re-export without quarantine leaves none"
    );
}

#[test]
fn a_dataset_written_before_the_table_reads_it_empty_and_takes_it_on_the_next_export() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let clean = bundle(&dir.path().join("clean"), &[]);
    export::export(&[clean], data.path(), true).unwrap();
    // The index as format 1.1.0 wrote it: no table `quarantine`.
    let at = data.path().join(dataset::INDEX);
    let mut index: Value = serde_json::from_str(&fs::read_to_string(&at).unwrap()).unwrap();
    assert_eq!(index["format_version"], dataset::FORMAT_VERSION);
    index["format_version"] = json!("1.1.0");
    index["tables"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["name"] != "quarantine");
    index["files"].as_object_mut().unwrap().remove("quarantine");
    assert!(!index.to_string().contains("quarantine"), "{index}");
    fs::write(&at, index.to_string()).unwrap();

    assert_eq!(count(data.path()), 0);
    assert_eq!(rows(data.path(), VIEW), Vec::<Value>::new());
    assert_eq!(
        rows(data.path(), "SELECT COUNT(*) AS n FROM runs")[0]["n"],
        1
    );

    let other = diagwire::v1::Identity::new(
        diagwire::NodeId([0xbf; 32]).to_hex(),
        diagwire::NodeId([0xbf; 32]).short(),
        "stage",
        "run-other",
        1_779_733_870_128,
        1,
    );
    let mut w = Writer::new(
        "run-other",
        BundleWriter::new(WriterKind::Collector, "test", "0"),
    );
    w.boot(&other);
    let (quarantined, _) = w.write_dir(&dir.path().join("other")).unwrap();
    let q = quarantined.join(QUARANTINE_DIR).join(B);
    fs::create_dir_all(&q).unwrap();
    fs::write(q.join("000001-boot.json"), b"[1]").unwrap();
    fs::write(
        q.join("000001-boot.why.json"),
        why("boot", "", "not an object"),
    )
    .unwrap();
    export::export(&[quarantined], data.path(), true).unwrap();
    assert_eq!(
        rows(data.path(), VIEW),
        [json!({"run_id": "run-other", "node": B, "bodies": 1, "bytes": 3})]
    );
    let index: Value = serde_json::from_str(&fs::read_to_string(&at).unwrap()).unwrap();
    assert_eq!(index["format_version"], dataset::FORMAT_VERSION);
    assert_eq!(index["runs"]["run-other"]["rows"]["quarantine"], 1);
}
