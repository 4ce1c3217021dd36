//! The fleet report over a dataset of the example bundles, the oldest-generation example and every
//! release's golden bundle: each section's numbers equal what is counted from the bundles with the
//! library — the summary's one pass (dials, probe RTTs, subprocesses, nodes, manifests) and a
//! record walk of our own (faults, relay closes) — never from the report's SQL; and a dataset with
//! nothing for a section gives an empty section.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::records::walk;
use diagwire::v1::{Event, Record};
use diagwire_fleet::{export, report};
use diagwire_fleet_report::{DialDimension, FleetReport};
use diagwire_summary::quantile::Samples;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every bundle the dataset holds.
fn bundles() -> Vec<PathBuf> {
    let mut v = vec![
        root().join("examples/bundles/n3-relay-flap"),
        root().join("examples/bundles/n3-relay-flap-oldest"),
    ];
    for version in ["1.0.0", "1.1.0", "1.2.0"] {
        v.push(root().join(format!("compat-tests/fixtures/{version}/golden.tar.gz")));
    }
    v
}

/// Runs, by id.
type Runs = BTreeSet<String>;
/// A dial row's runs, peers, dials started, succeeded and failed.
type DialCounts = (Runs, u64, u64, u64, u64);
/// A region pair: the observer's and the target's country.
type Pair = (Option<String>, Option<String>);
/// A writer: contract version, kind, name, version.
type Writer = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// What the bundles hold, counted with the library.
#[derive(Default)]
struct Expected {
    runs: u64,
    /// (day, writer kind) → (runs, nodes with a boot record).
    days: BTreeMap<(String, Option<String>), (u64, u64)>,
    /// (type, reason, component) → (events, runs).
    faults: BTreeMap<(String, String, String), (u64, BTreeSet<String>)>,
    /// (dimension, value) → (runs, peers, started, succeeded, failed).
    dials: BTreeMap<(DialDimension, Option<String>), DialCounts>,
    /// (initiator, reason) → (closes, runs).
    relay: BTreeMap<(String, String), (u64, BTreeSet<String>)>,
    /// (from, to) → (runs, samples).
    rtt: BTreeMap<Pair, (Runs, Samples)>,
    /// bucket → (subprocesses, runs).
    buckets: BTreeMap<String, (u64, BTreeSet<String>)>,
    /// (contract, kind, name, version) → runs.
    writers: BTreeMap<Writer, u64>,
}

/// One bundle's events, walked once.
#[derive(Default)]
struct Walked {
    faults: Vec<(String, String, String)>,
    closes: Vec<(String, String)>,
}

fn walk_bundle(bundle: &Path) -> Walked {
    let mut w = Walked::default();
    let mut reader = BundleReader::open(bundle, Limits::default()).unwrap();
    walk(
        &mut reader,
        |item| {
            let Record::Event(e) = item.record else {
                return;
            };
            match &e.event {
                Event::NodeFaulted(x) => w.faults.push((
                    "node_faulted".into(),
                    x.reason.to_string(),
                    x.component.to_string(),
                )),
                Event::RunFaulted(x) => w.faults.push((
                    "run_faulted".into(),
                    x.reason.to_string(),
                    x.component.to_string(),
                )),
                Event::FaultDetected(x) => w.faults.push((
                    "fault_detected".into(),
                    x.reason.to_string(),
                    x.component.to_string(),
                )),
                Event::RelaySessionClosed(x) => w.closes.push((
                    diagwire::canonical::relay_close(&x.close_initiator)
                        .0
                        .to_string(),
                    x.close_reason.clone(),
                )),
                _ => {}
            }
        },
        |p| panic!("{p}"),
    );
    w
}

fn expected(index: &diagwire_fleet::dataset::Index) -> Expected {
    let mut x = Expected::default();
    for bundle in bundles() {
        let s = diagwire_summary::summarize(&bundle, Limits::default()).unwrap();
        let run = s.run_id.clone();
        x.runs += 1;
        let writer = s.manifest.as_ref().and_then(|m| m.writer.as_ref());
        let kind = writer.map(|w| w.kind.as_str().to_owned());
        let day = index.runs[&run].date.clone();
        let booted = s.nodes.values().filter(|n| n.boot.is_some()).count() as u64;
        let d = x.days.entry((day, kind.clone())).or_default();
        d.0 += 1;
        d.1 += booted;
        *x.writers
            .entry((
                s.manifest.as_ref().and_then(|m| m.contract_version.clone()),
                kind,
                writer.map(|w| w.name.clone()),
                writer.map(|w| w.version.clone()),
            ))
            .or_default() += 1;

        // Dials per target peer (the summary's), grouped by the peer's boot identity.
        for (peer, dials) in &s.dials {
            let boot = s.nodes.get(peer).and_then(|n| n.boot.as_ref());
            for (dim, value) in [
                (
                    DialDimension::Provider,
                    boot.and_then(|b| b.host_provider.as_ref())
                        .map(|p| p.as_str().to_owned()),
                ),
                (
                    DialDimension::Datacenter,
                    boot.and_then(|b| b.datacenter_id.clone()),
                ),
                (
                    DialDimension::Country,
                    boot.and_then(|b| b.host_country.clone()),
                ),
            ] {
                let e = x.dials.entry((dim, value)).or_default();
                e.0.insert(run.clone());
                e.1 += 1;
                e.2 += dials.started;
                e.3 += dials.succeeded;
                e.4 += dials.failed;
            }
        }

        // Probe RTTs per pair (the summary's), merged per pair of countries.
        let country = |label: &str| {
            s.nodes
                .get(label)
                .and_then(|n| n.boot.as_ref())
                .and_then(|b| b.host_country.clone())
        };
        for ((observer, target), pair) in &s.rtt {
            let e = x
                .rtt
                .entry((country(observer), country(target)))
                .or_default();
            if !pair.rtts.is_empty() {
                e.0.insert(run.clone());
            }
            for (value, n) in pair.rtts.counts() {
                for _ in 0..*n {
                    e.1.push(*value);
                }
            }
        }

        let w = walk_bundle(&bundle);
        for f in w.faults {
            let e = x.faults.entry(f).or_default();
            e.0 += 1;
            e.1.insert(run.clone());
        }
        for c in w.closes {
            let e = x.relay.entry(c).or_default();
            e.0 += 1;
            e.1.insert(run.clone());
        }
        // Subprocesses in their buckets (the summary's rows).
        let rows = diagwire_summary::render::json(&s);
        for row in rows["subprocesses"].as_array().into_iter().flatten() {
            let e = x
                .buckets
                .entry(row["bucket"].as_str().unwrap().to_owned())
                .or_default();
            e.0 += 1;
            e.1.insert(run.clone());
        }
    }
    x.rtt.retain(|_, (_, samples)| !samples.is_empty());
    x
}

/// The report of the dataset of every bundle, and what the bundles hold.
fn fixture() -> &'static (FleetReport, Expected) {
    static FIXTURE: OnceLock<(FleetReport, Expected)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let done = export::export(&bundles(), dir.path(), true).unwrap();
        assert!(done.problems.is_empty(), "{:?}", done.problems);
        let index = diagwire_fleet::dataset::Index::load(dir.path()).unwrap();
        (report::report(dir.path()).unwrap(), expected(&index))
    })
}

#[test]
fn runs_over_time_count_each_days_runs_and_nodes_by_writer_kind() {
    let (r, x) = fixture();
    assert_eq!(r.runs, x.runs);
    let got: BTreeMap<_, _> = r
        .runs_over_time
        .iter()
        .map(|d| ((d.day.clone(), d.writer_kind.clone()), (d.runs, d.nodes)))
        .collect();
    assert_eq!(got, x.days);
    assert!(x.days.keys().any(|(_, k)| k.is_none()), "no legacy writer");
}

#[test]
fn fault_reasons_count_every_fault_event_by_reason_and_component() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .faults
        .iter()
        .map(|f| {
            (
                (
                    f.event_type.clone(),
                    f.reason.clone().unwrap_or_default(),
                    f.component.clone().unwrap_or_default(),
                ),
                (f.events, f.runs),
            )
        })
        .collect();
    let want: BTreeMap<_, _> = x
        .faults
        .iter()
        .map(|(k, (n, runs))| (k.clone(), (*n, runs.len() as u64)))
        .collect();
    assert!(
        !want.is_empty(),
        "no fault event: the test compares nothing"
    );
    assert_eq!(got, want);
}

#[test]
fn dial_failure_rates_group_the_summarys_dials_by_the_dialled_nodes_identity() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .dial_failures
        .iter()
        .map(|d| {
            let outcomes = d.succeeded + d.failed;
            let rate = (outcomes > 0).then(|| d.failed as f64 / outcomes as f64);
            assert_eq!(d.failure_rate, rate, "{d:?}");
            (
                (d.by, d.value.clone()),
                (d.runs, d.peers, d.started, d.succeeded, d.failed),
            )
        })
        .collect();
    let want: BTreeMap<_, _> = x
        .dials
        .iter()
        .map(|(k, (runs, peers, s, ok, failed))| {
            (k.clone(), (runs.len() as u64, *peers, *s, *ok, *failed))
        })
        .collect();
    assert!(
        want.values().any(|v| v.4 > 0),
        "no failed dial: the test compares nothing"
    );
    assert_eq!(got, want);
}

#[test]
fn relay_closes_count_every_close_by_canonical_initiator_and_reason() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .relay_closes
        .iter()
        .map(|c| {
            (
                (c.initiator.clone(), c.reason.clone().unwrap_or_default()),
                (c.closes, c.runs),
            )
        })
        .collect();
    let want: BTreeMap<_, _> = x
        .relay
        .iter()
        .map(|(k, (n, runs))| (k.clone(), (*n, runs.len() as u64)))
        .collect();
    assert!(
        !want.is_empty(),
        "no relay close: the test compares nothing"
    );
    assert!(
        !got.keys()
            .any(|(i, _)| i == "remote" || i == "idle_timeout"),
        "{got:?}"
    );
    assert_eq!(got, want);
}

#[test]
fn probe_rtt_quantiles_per_region_pair_merge_the_summarys_samples() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .probe_rtt_regions
        .iter()
        .map(|p| {
            (
                (p.from_region.clone(), p.to_region.clone()),
                (p.runs, p.samples, p.p50_ms, p.p95_ms, p.p99_ms),
            )
        })
        .collect();
    let want: BTreeMap<_, _> = x
        .rtt
        .iter()
        .map(|(k, (runs, s))| {
            let q = |p| s.percentile(p).map_or(-1, |v| v as i64);
            (
                k.clone(),
                (runs.len() as u64, s.len() as u64, q(50), q(95), q(99)),
            )
        })
        .collect();
    assert!(
        want.len() > 1,
        "fewer than two region pairs: the test compares little"
    );
    assert_eq!(got, want);
}

#[test]
fn subprocess_buckets_count_the_summarys_subprocesses() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .subprocess_buckets
        .iter()
        .map(|b| (b.bucket.clone(), (b.subprocesses, b.runs)))
        .collect();
    let want: BTreeMap<_, _> = x
        .buckets
        .iter()
        .map(|(k, (n, runs))| (k.clone(), (*n, runs.len() as u64)))
        .collect();
    assert!(want.len() >= 3, "{want:?}: the test compares little");
    assert_eq!(got, want);
}

#[test]
fn contract_versions_and_writers_count_runs_per_manifest() {
    let (r, x) = fixture();
    let got: BTreeMap<_, _> = r
        .writers
        .iter()
        .map(|w| {
            assert!(w.first_seen <= w.last_seen, "{w:?}");
            (
                (
                    w.contract_version.clone(),
                    w.writer_kind.clone(),
                    w.writer_name.clone(),
                    w.writer_version.clone(),
                ),
                w.runs,
            )
        })
        .collect();
    assert!(x.writers.len() >= 3, "{:?}", x.writers);
    assert_eq!(got, x.writers);
}

#[test]
fn an_empty_dataset_has_every_section_empty_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    diagwire_fleet::dataset::Index::new()
        .save(dir.path())
        .unwrap();
    let r = report::report(dir.path()).unwrap();
    assert_eq!(r.runs, 0);
    let md = diagwire_fleet_report::markdown(&r);
    for s in diagwire_fleet_report::sections(&r) {
        assert!(s.rows.is_empty(), "{}", s.title);
        assert!(md.contains(s.empty), "{}: {md}", s.title);
    }
}

#[test]
fn a_folder_that_is_not_a_dataset_is_an_error_at_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let e = report::report(dir.path()).unwrap_err();
    assert_eq!(e.at, dir.path().display().to_string());
    assert!(e.message.contains("not a dataset"), "{e}");
}

/// A one-node bundle of run `run` with `bodies` quarantined: (node folder, name, body, route).
fn quarantined_bundle(dir: &Path, run: &str, bodies: &[(&str, &str, &[u8], &str)]) -> PathBuf {
    use diagwire::quarantine::{QUARANTINE_DIR, Why};
    let node = diagwire::NodeId([0xaf; 32]);
    let mut w = diagwire::bundle::Writer::new(
        run,
        diagwire::v1::BundleWriter::new(diagwire::v1::WriterKind::Collector, "test", "0"),
    );
    w.boot(&diagwire::v1::Identity::new(
        node.to_hex(),
        node.short(),
        "stage",
        run,
        1_779_733_870_128,
        1,
    ));
    let (path, _) = w.write_dir(dir).unwrap();
    for (folder, name, body, route) in bodies {
        let q = path.join(QUARANTINE_DIR).join(folder);
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join(name), body).unwrap();
        let stem = name.rsplit_once('.').unwrap().0;
        let why = Why {
            route: (*route).into(),
            problem: Some("not a record".into()),
            ..Why::default()
        };
        std::fs::write(
            q.join(format!("{stem}.why.json")),
            serde_json::to_vec(&why).unwrap(),
        )
        .unwrap();
    }
    path
}

#[test]
fn quarantined_bodies_count_per_kind_of_post_as_the_walk_hands_them() {
    use diagwire::bundle::records::{Consumer, Item, Walk, walk_into};
    use diagwire::quarantine::{Quarantined, Why};
    let dir = tempfile::tempdir().unwrap();
    let bundles = [
        quarantined_bundle(
            &dir.path().join("one"),
            "run-one",
            &[
                ("aa", "000001-boot.json", b"[1]", "boot"),
                ("aa", "000002-events.json", b"[{}, {}]", "events"),
                ("bb", "000001-events.json", b"{}", "events"),
            ],
        ),
        quarantined_bundle(
            &dir.path().join("two"),
            "run-two",
            &[("aa", "000001-events.json", b"[]", "events")],
        ),
        quarantined_bundle(&dir.path().join("three"), "run-three", &[]),
    ];
    let data = tempfile::tempdir().unwrap();
    export::export(&bundles, data.path(), true).unwrap();
    let r = report::report(data.path()).unwrap();

    /// route → (bodies, bytes, (run, node)s, runs), from the bodies the walk hands on.
    type Counted = BTreeMap<Option<String>, (u64, u64, BTreeSet<(String, String)>, Runs)>;
    struct Count<'a>(&'a str, &'a mut Counted);
    impl Consumer for Count<'_> {
        fn record(&mut self, _: &Item<'_>) {}
        fn problem(&mut self, _: &diagwire::Problem) {}
        fn quarantined(&mut self, body: &Quarantined) {
            let route = body
                .reason
                .as_deref()
                .map(|t| serde_json::from_str::<Why>(t).unwrap().route);
            let e = self.1.entry(route).or_default();
            e.0 += 1;
            e.1 += body.bytes.unwrap_or(0);
            e.2.insert((self.0.to_owned(), body.node.clone()));
            e.3.insert(self.0.to_owned());
        }
    }
    let mut counted = Counted::new();
    for (bundle, run) in bundles.iter().zip(["run-one", "run-two", "run-three"]) {
        let mut reader = BundleReader::open(bundle, Limits::default()).unwrap();
        walk_into(
            &mut reader,
            Walk::default(),
            &mut [&mut Count(run, &mut counted)],
        );
    }
    let got: BTreeMap<Option<String>, (u64, u64, u64, u64)> = r
        .quarantined
        .iter()
        .map(|q| (q.route.clone(), (q.bodies, q.bytes, q.nodes, q.runs)))
        .collect();
    let want: BTreeMap<Option<String>, (u64, u64, u64, u64)> = counted
        .into_iter()
        .map(|(k, (b, n, nodes, runs))| (k, (b, n, nodes.len() as u64, runs.len() as u64)))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        want.get(&Some("events".to_owned())),
        Some(&(3, 12, 3, 2)),
        "the bundles hold what the test means"
    );
    let md = diagwire_fleet_report::markdown(&r);
    assert!(md.contains("## Quarantined at ingest"), "{md}");
    assert!(md.contains("| events | 3 | 12 | 3 | 2 |"), "{md}");
}
