//! The example bundles `n3-relay-flap` and `n3-relay-flap-oldest`: deterministic, valid file by
//! file, consistent with their manifests, telling their story, and shipped as generated.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::layout::{self, FileKind, MANIFEST, Role, node_label, parse_bundle_path};
use diagwire::v1::{
    CustomPayload, DialResult, Event, EventRecord, Identity, InferenceSendOutcome, Manifest,
    PeerState, ProbeKind, ProbeOutcome, Record, RecordKind, RelaySessionStatus, Snapshot,
    SnapshotTrigger, SubprocessStatus, ValueSource, WriterKind,
};
use diagwire::validate::Validators;
use diagwire::{CONTRACT_VERSION, NodeId};
use diagwire_example::{OLDEST_RUN_ID, RUN_ID, n3_relay_flap, n3_relay_flap_oldest};
use serde_json::Value;

const REGENERATE: &str = "cargo run -p diagwire-example --example make_example_bundle";

fn shipped_dir(run_id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("examples/bundles")
        .join(run_id)
}

/// The record kind of a file of the run directory, by its path; `None` outside the layout.
fn kind_of(path: &str) -> Option<RecordKind> {
    parse_bundle_path(path).role.record_kind()
}

/// The bundle read back into its types, per node label.
struct Parsed {
    manifest: Manifest,
    boots: BTreeMap<String, Identity>,
    events: BTreeMap<String, Vec<EventRecord>>,
    snapshots: BTreeMap<String, Vec<Snapshot>>,
    finalizes: BTreeSet<String>,
    labels_by_hex: BTreeMap<String, String>,
}

impl Parsed {
    fn new(bundle: &BundleContents) -> Parsed {
        let manifest: Manifest =
            serde_json::from_slice(&bundle.files[MANIFEST]).expect("manifest parses");
        let mut parsed = Parsed {
            labels_by_hex: manifest
                .nodes
                .iter()
                .map(|n| (n.node_id_hex.0.clone(), n.label.clone()))
                .collect(),
            manifest,
            boots: BTreeMap::new(),
            events: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            finalizes: BTreeSet::new(),
        };
        for (path, bytes) in &bundle.files {
            let place = parse_bundle_path(path);
            let (Some(label), Some(kind)) = (place.node, place.role.record_kind()) else {
                continue;
            };
            match kind {
                RecordKind::Boot => {
                    let boot = serde_json::from_slice(bytes).expect("boot parses");
                    parsed.boots.insert(label, boot);
                }
                RecordKind::EventBatch => {
                    let batch: Vec<EventRecord> =
                        serde_json::from_slice(bytes).expect("batch parses");
                    parsed.events.entry(label).or_default().extend(batch);
                }
                RecordKind::Snapshot => {
                    let snap = serde_json::from_slice(bytes).expect("snapshot parses");
                    parsed.snapshots.entry(label).or_default().push(snap);
                }
                RecordKind::Finalize => {
                    parsed.finalizes.insert(label);
                }
                _ => {}
            }
        }
        parsed
    }

    fn label(&self, id: &NodeId) -> &str {
        self.labels_by_hex
            .get(id.to_hex().as_str())
            .map_or("?", String::as_str)
    }

    fn events_of(&self, label: &str) -> &[EventRecord] {
        self.events.get(label).map_or(&[], Vec::as_slice)
    }

    fn snapshots_of(&self, label: &str) -> &[Snapshot] {
        self.snapshots.get(label).map_or(&[], Vec::as_slice)
    }

    /// The SWIM members: every node but the relay.
    fn members(&self) -> Vec<String> {
        self.manifest
            .nodes
            .iter()
            .filter(|n| n.role.as_deref() != Some("relay"))
            .map(|n| n.label.clone())
            .collect()
    }

    fn stages(&self) -> Vec<String> {
        self.manifest
            .nodes
            .iter()
            .filter(|n| n.role.as_deref() == Some("stage"))
            .map(|n| n.label.clone())
            .collect()
    }
}

fn parsed() -> Parsed {
    Parsed::new(&n3_relay_flap())
}

#[test]
fn generator_is_deterministic() {
    assert_eq!(n3_relay_flap(), n3_relay_flap());
    assert_eq!(n3_relay_flap_oldest(), n3_relay_flap_oldest());
}

#[test]
fn every_file_parses_as_its_record_kind() {
    every_file_parses(&n3_relay_flap());
    every_file_parses(&n3_relay_flap_oldest());
}

fn every_file_parses(bundle: &BundleContents) {
    let mut failures = Vec::new();
    let mut kinds: BTreeMap<RecordKind, usize> = BTreeMap::new();
    for (path, bytes) in &bundle.files {
        let Some(kind) = kind_of(path) else {
            failures.push(format!("{path}: not a file of the collector layout"));
            continue;
        };
        let text = std::str::from_utf8(bytes).expect("UTF-8");
        match Record::parse(kind, text) {
            Ok(record) => {
                assert_eq!(record.kind(), kind, "{path}");
                *kinds.entry(kind).or_default() += 1;
            }
            Err(e) => failures.push(format!("{path}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(kinds.values().sum::<usize>(), bundle.files.len());
    for kind in [
        RecordKind::Manifest,
        RecordKind::Boot,
        RecordKind::EventBatch,
        RecordKind::Snapshot,
        RecordKind::Finalize,
    ] {
        assert!(kinds.contains_key(&kind), "no {kind:?} file in {kinds:?}");
    }
}

#[test]
fn every_file_round_trips_through_its_type_unchanged() {
    for (path, bytes) in n3_relay_flap()
        .files
        .iter()
        .chain(&n3_relay_flap_oldest().files)
    {
        let kind = kind_of(path).expect("known layout");
        let value: Value = serde_json::from_slice(bytes).expect("JSON");
        let record = Record::from_value(kind, value.clone()).expect("parses");
        assert_eq!(
            serde_json::to_value(&record).expect("serializes"),
            value,
            "{path}"
        );
    }
}

#[test]
fn every_file_is_valid_against_its_schema() {
    let validators = Validators::new().expect("schemas compile");
    let mut failures = Vec::new();
    let mut kinds = BTreeSet::new();
    for (path, bytes) in n3_relay_flap()
        .files
        .iter()
        .chain(&n3_relay_flap_oldest().files)
    {
        let kind = kind_of(path).expect("known layout");
        let value: Value = serde_json::from_slice(bytes).expect("JSON");
        for v in validators.violations(kind, &value) {
            failures.push(format!("{path} {}: {}", v.pointer, v.message));
        }
        kinds.insert(kind);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // No violations means something only if the validators know the kind: they reject `null`.
    assert_eq!(kinds.len(), 5, "{kinds:?}");
    for kind in kinds {
        assert!(
            !validators.violations(kind, &Value::Null).is_empty(),
            "{kind:?}"
        );
    }
}

#[test]
fn manifest_counts_match_the_files() {
    manifest_counts_match(&n3_relay_flap(), Some(0));
    manifest_counts_match(&n3_relay_flap_oldest(), None);
}

fn manifest_counts_match(bundle: &BundleContents, vastai_records: Option<u64>) {
    let p = Parsed::new(bundle);
    let mut files = 1; // MANIFEST.json
    for node in &p.manifest.nodes {
        let l = &node.label;
        let count = |kind: FileKind| {
            bundle
                .files
                .keys()
                .map(|f| parse_bundle_path(f))
                .filter(|f| f.node.as_deref() == Some(l) && f.role.file_kind() == Some(&kind))
                .count() as u64
        };
        let has = |role: Role| bundle.files.contains_key(&layout::bundle_path(l, &role));
        assert_eq!(node.boot_recorded, has(Role::Latest(FileKind::Boot)), "{l}");
        assert_eq!(node.event_batches, count(FileKind::Events), "{l}");
        assert_eq!(node.snapshots, count(FileKind::Snapshot), "{l}");
        assert_eq!(
            node.finalize_recorded,
            has(Role::Latest(FileKind::Finalize)),
            "{l}"
        );
        assert_eq!(count(FileKind::Boot), u64::from(node.boot_recorded), "{l}");
        assert_eq!(
            count(FileKind::Finalize),
            u64::from(node.finalize_recorded),
            "{l}"
        );
        assert_eq!(node.vastai_records, vastai_records, "{l}");
        for (kind, n) in [
            (FileKind::Events, node.event_batches),
            (FileKind::Snapshot, node.snapshots),
        ] {
            for i in 1..=n {
                let path = layout::bundle_path(l, &Role::Numbered(kind.clone(), i));
                assert!(bundle.files.contains_key(&path), "{path} missing");
            }
        }
        files += u64::from(node.boot_recorded)
            + node.event_batches
            + node.snapshots
            + u64::from(node.finalize_recorded);
    }
    assert_eq!(
        files,
        bundle.files.len() as u64,
        "files the manifest does not count"
    );
}

#[test]
fn manifest_declares_this_contract_version_and_a_simulator_as_its_writer() {
    let p = parsed();
    assert_eq!(
        p.manifest.contract_version.as_deref(),
        Some(CONTRACT_VERSION)
    );
    let writer = p.manifest.writer.as_ref().expect("writer");
    assert_eq!(writer.kind, WriterKind::Sim);
    assert_eq!(writer.kind.as_ref(), "sim");
    assert_eq!(writer.name, "diagwire-example");
    assert_eq!(writer.version, env!("CARGO_PKG_VERSION"));
    for node in &p.manifest.nodes {
        assert_eq!(
            node.contract_version.as_deref(),
            Some(CONTRACT_VERSION),
            "{}",
            node.label
        );
    }
}

#[test]
fn manifest_lists_every_node_directory_under_its_label() {
    let bundle = n3_relay_flap();
    let p = Parsed::new(&bundle);
    let dirs: BTreeSet<&str> = bundle
        .files
        .keys()
        .filter_map(|f| f.split_once('/').map(|(d, _)| d))
        .collect();
    let labels: BTreeSet<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(dirs, labels);
    assert_eq!(
        labels,
        BTreeSet::from(["orchestrator", "relay", "stage-0", "stage-1", "stage-2"])
    );
    let in_order: Vec<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert!(in_order.is_sorted(), "{in_order:?}");
    for node in &p.manifest.nodes {
        let boot = &p.boots[&node.label];
        assert_eq!(
            node.label,
            node_label(node.role.as_deref(), node.stage_index, &node.node_id_hex.0)
        );
        assert_eq!(node.node_id_hex, boot.node_id_hex);
        assert_eq!(node.role.as_deref(), Some(boot.role.as_str()));
        assert_eq!(node.stage_index, boot.stage_index);
    }
}

#[test]
fn finalize_received_and_only_the_orchestrator_finalized() {
    let p = parsed();
    assert!(p.manifest.finalize_received);
    assert_eq!(p.finalizes, BTreeSet::from(["orchestrator".to_owned()]));
    let finalizers: Vec<&str> = p
        .manifest
        .nodes
        .iter()
        .filter(|n| n.finalize_recorded)
        .map(|n| n.label.as_str())
        .collect();
    assert_eq!(finalizers, ["orchestrator"]);
}

#[test]
fn run_window_covers_every_collector_time_and_lasts_about_a_minute() {
    let p = parsed();
    let start = p.manifest.run_start_collector_ms.expect("run start");
    let end = p.manifest.run_end_collector_ms.expect("run end");
    assert!(
        (50_000..=70_000).contains(&(end - start)),
        "{}",
        end - start
    );
    let mut samples = 0;
    for records in p.events.values() {
        for r in records {
            let Event::Custom(c) = &r.event else { continue };
            if let CustomPayload::ClockSample(f) = &c.payload {
                samples += 1;
                assert!(
                    start <= f.collector_recv_ms && f.collector_send_ms <= end,
                    "{f:?}"
                );
            }
        }
    }
    assert!(samples > 100, "{samples} clock samples");
}

#[test]
fn run_id_is_the_same_in_every_record() {
    let bundle = n3_relay_flap();
    let p = Parsed::new(&bundle);
    assert_eq!(bundle.run_id, RUN_ID);
    assert_eq!(p.manifest.run_id, RUN_ID);
    assert_eq!(p.boots.len(), 5);
    for boot in p.boots.values() {
        assert_eq!(boot.run_id, RUN_ID);
    }
    let mut snapshots = 0;
    for snap in p.snapshots.values().flatten() {
        assert_eq!(snap.run_id, RUN_ID);
        assert_eq!(snap.identity.run_id, RUN_ID);
        snapshots += 1;
    }
    assert!(snapshots >= 40, "{snapshots} snapshots");
}

#[test]
fn boot_records_carry_host_context_for_rentals_and_none_for_the_local_orchestrator() {
    let p = parsed();
    let orch = &p.boots["orchestrator"];
    assert_eq!(orch.container_id, None);
    assert_eq!(orch.host_ip_public, None);
    assert_eq!(orch.vastai_contract_id, None);
    for stage in p.stages() {
        let boot = &p.boots[&stage];
        assert!(boot.container_id.is_some(), "{stage}");
        assert!(boot.host_ip_public.is_some(), "{stage}");
        assert!(boot.host_country.is_some(), "{stage}");
        assert!(boot.datacenter_id.is_some(), "{stage}");
        assert_eq!(boot.stage_count, Some(3), "{stage}");
    }
}

#[test]
fn event_batches_are_nonempty_and_at_most_512_records() {
    let bundle = n3_relay_flap();
    let mut batches = 0;
    for (path, bytes) in &bundle.files {
        if kind_of(path) == Some(RecordKind::EventBatch) {
            let batch: Vec<Value> = serde_json::from_slice(bytes).expect("array");
            assert!((1..=512).contains(&batch.len()), "{path}: {}", batch.len());
            batches += 1;
        }
    }
    assert!(batches >= 150, "{batches} event batches");
}

#[test]
fn event_sequence_numbers_rise_except_for_clock_samples() {
    let p = parsed();
    for (label, records) in &p.events {
        let seqs: Vec<u64> = records
            .iter()
            .filter(|r| !matches!(&r.event, Event::Custom(c) if matches!(c.payload, CustomPayload::ClockSample(_))))
            .map(|r| r.monotonic_seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{label}");
    }
}

#[test]
fn periodic_snapshots_come_every_five_seconds() {
    let p = parsed();
    for node in &p.manifest.nodes {
        let times: Vec<u64> = p
            .snapshots_of(&node.label)
            .iter()
            .filter(|s| s.trigger == SnapshotTrigger::Periodic)
            .map(|s| s.wall_ms)
            .collect();
        assert!(times.len() >= 9, "{}: {}", node.label, times.len());
        for w in times.windows(2) {
            assert!((4_990..=5_010).contains(&(w[1] - w[0])), "{}", node.label);
        }
    }
}

#[test]
fn stages_time_out_dialing_the_orchestrator_while_dials_between_stages_succeed() {
    let p = parsed();
    let stages = p.stages();
    assert_eq!(stages.len(), 3);
    for stage in stages {
        let mut to_orchestrator = Vec::new();
        let mut between_stages = 0;
        for r in p.events_of(&stage) {
            if let Event::DialOutcome(d) = &r.event {
                if p.label(&d.peer) == "orchestrator" {
                    to_orchestrator.push(d.outcome.clone());
                } else {
                    assert_eq!(d.outcome, DialResult::Success, "{stage}");
                    between_stages += 1;
                }
            }
        }
        assert!(
            between_stages >= 2,
            "{stage}: {between_stages} dials to other stages"
        );
        assert!(
            to_orchestrator.contains(&DialResult::Timeout),
            "{stage}: {to_orchestrator:?}"
        );
        assert_eq!(
            to_orchestrator.last(),
            Some(&DialResult::Success),
            "{stage}"
        );
        let started = p
            .events_of(&stage)
            .iter()
            .filter(
                |r| matches!(&r.event, Event::DialStarted(d) if p.label(&d.peer) == "orchestrator"),
            )
            .count();
        // The redial after the orchestrator's process exited is still in flight at the end.
        assert_eq!(started, to_orchestrator.len() + 1, "{stage}");
        let last_dial = p
            .events_of(&stage)
            .iter()
            .rfind(|r| matches!(&r.event, Event::DialStarted(_) | Event::DialOutcome(_)))
            .expect("dials");
        assert!(
            matches!(&last_dial.event, Event::DialStarted(d) if p.label(&d.peer) == "orchestrator"),
            "{stage}"
        );
    }
}

#[test]
fn connection_cache_generations_count_the_successful_dials() {
    let p = parsed();
    for label in p.members() {
        let records = p.events_of(&label);
        let mut dials: BTreeMap<NodeId, u64> = BTreeMap::new();
        let mut checked = 0;
        for r in records {
            match &r.event {
                Event::DialOutcome(d) if d.outcome == DialResult::Success => {
                    *dials.entry(d.peer).or_default() += 1;
                }
                Event::ConnectionCacheHit(h) => {
                    checked += 1;
                    assert_eq!(
                        h.generation, dials[&h.peer],
                        "{label} seq {}",
                        r.monotonic_seq
                    );
                }
                Event::ConnectionCacheInvalidated(i) => {
                    checked += 1;
                    assert_eq!(
                        i.generation, dials[&i.peer],
                        "{label} seq {}",
                        r.monotonic_seq
                    );
                }
                _ => {}
            }
        }
        assert!(checked > 0, "{label}");
    }
}

#[test]
fn a_peer_goes_suspect_then_dead_with_a_transition_snapshot() {
    let p = parsed();
    let mut deaths = 0;
    for node in &p.manifest.nodes {
        let events = p.events_of(&node.label);
        for r in events {
            let Event::SwimTransition(t) = &r.event else {
                continue;
            };
            if t.to != PeerState::Dead {
                continue;
            }
            deaths += 1;
            assert_eq!(t.from, PeerState::Suspect);
            let suspected = events.iter().any(|e| {
                matches!(&e.event, Event::SwimTransition(s)
                    if s.peer == t.peer && s.to == PeerState::Suspect && e.wall_ms < r.wall_ms)
            });
            assert!(suspected, "{}: Dead without Suspect", node.label);
            let tag = format!("seq-{}", r.monotonic_seq);
            let snap = p
                .snapshots_of(&node.label)
                .iter()
                .find(|s| s.trigger == SnapshotTrigger::Transition(tag.clone()))
                .unwrap_or_else(|| panic!("{}: no snapshot {tag}", node.label));
            let view = snap
                .body
                .reachability
                .iter()
                .find(|v| v.peer_node_id_hex == t.peer.to_hex())
                .expect("peer in reachability");
            assert_eq!(view.current_swim_opinion, PeerState::Dead);
        }
    }
    assert!(deaths >= 1);
}

#[test]
fn every_swim_transition_has_its_transition_snapshot() {
    let p = parsed();
    for node in &p.manifest.nodes {
        let tags: BTreeSet<String> = p
            .snapshots_of(&node.label)
            .iter()
            .filter_map(|s| match &s.trigger {
                SnapshotTrigger::Transition(tag) => Some(tag.clone()),
                _ => None,
            })
            .collect();
        let expected: BTreeSet<String> = p
            .events_of(&node.label)
            .iter()
            .filter(|r| matches!(r.event, Event::SwimTransition(_)))
            .map(|r| format!("seq-{}", r.monotonic_seq))
            .collect();
        assert_eq!(tags, expected, "{}", node.label);
    }
}

#[test]
fn relay_sessions_flip_connected_disconnected_connecting_connected_on_every_node() {
    use RelaySessionStatus::{Connected, Connecting, Disconnected};
    let p = parsed();
    for label in p.members() {
        let flips: Vec<(RelaySessionStatus, RelaySessionStatus)> = p
            .events_of(&label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::RelaySessionStateChanged(c) => {
                    Some((c.from_status.clone(), c.to_status.clone()))
                }
                _ => None,
            })
            .collect();
        let flap = [
            (Connected, Disconnected),
            (Disconnected, Connecting),
            (Connecting, Connected),
        ];
        assert!(flips.windows(3).any(|w| w == flap), "{label}: {flips:?}");
        // The snapshots cannot ask for the status (see the API gaps), so they all say unknown.
        let statuses: BTreeSet<String> = p
            .snapshots_of(&label)
            .iter()
            .filter_map(|s| s.body.iroh.as_ref()?.relay_session.as_ref())
            .map(|r| r.status.as_ref().to_owned())
            .collect();
        assert_eq!(statuses, BTreeSet::from(["unknown".to_owned()]), "{label}");
    }
}

#[test]
fn relay_session_status_is_derived_and_api_gaps_are_declared() {
    let p = parsed();
    let mut checked = 0;
    for snap in p.members().iter().flat_map(|l| p.snapshots_of(l)) {
        checked += 1;
        let iroh = snap.body.iroh.as_ref().expect("iroh block");
        let session = iroh.relay_session.as_ref().expect("relay session");
        assert_eq!(session.status_source, ValueSource::Derived);
        assert!(
            iroh.api_gaps
                .iter()
                .any(|g| g.as_ref() == "RelayTunnel.status")
        );
        assert!(
            iroh.api_gaps
                .iter()
                .any(|g| g.as_ref() == "RemoteInfo.conn_type")
        );
    }
    assert!(checked >= 40, "{checked} snapshots");
}

#[test]
fn a_subprocess_spawns_and_exits_and_snapshots_show_it_running_then_exited() {
    let p = parsed();
    let mut seen = 0;
    let mut shown_running = 0;
    let stages = p.stages();
    for stage in &stages {
        let events = p.events_of(stage);
        for r in events {
            let Event::SubprocessExited(exit) = &r.event else {
                continue;
            };
            seen += 1;
            assert!(events.iter().any(|e| matches!(&e.event,
                Event::SubprocessSpawned(s) if s.pid == exit.pid && e.wall_ms < r.wall_ms)));
            let states: Vec<SubprocessStatus> = p
                .snapshots_of(stage)
                .iter()
                .filter_map(|s| s.body.subprocess.as_ref())
                .flat_map(|b| &b.subprocesses)
                .filter(|s| s.pid == exit.pid)
                .map(|s| s.status.clone())
                .collect();
            let first_exited = states
                .iter()
                .position(|s| *s == SubprocessStatus::Exited)
                .unwrap_or_else(|| panic!("{stage}: never shown exited: {states:?}"));
            // A worker killed 1 s after its spawn exits between two snapshots.
            shown_running += usize::from(first_exited > 0);
            assert!(
                states[..first_exited]
                    .iter()
                    .all(|s| *s == SubprocessStatus::Running)
            );
            assert!(
                states[first_exited..]
                    .iter()
                    .all(|s| *s == SubprocessStatus::Exited)
            );
        }
    }
    assert_eq!(seen, 3, "subprocesses exited");
    assert_eq!(
        shown_running, 2,
        "exited subprocesses a snapshot showed running"
    );
}

#[test]
fn the_stages_cover_every_subprocess_bucket() {
    let p = parsed();
    let spawned = |label: &str| -> Vec<(String, u32)> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::SubprocessSpawned(s) => Some((s.label.clone(), s.pid)),
                _ => None,
            })
            .collect()
    };
    let exits = |label: &str| -> Vec<(Option<i32>, Option<i32>)> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::SubprocessExited(s) => Some((s.exit_code, s.exit_signal)),
                _ => None,
            })
            .collect()
    };
    let ready = |label: &str| {
        p.events_of(label).iter().any(|r| {
            matches!(&r.event, Event::Custom(c) if matches!(c.payload, CustomPayload::WorkerReady(_)))
        })
    };
    // stage-0 spawns nothing and lists nothing.
    assert!(spawned("stage-0").is_empty());
    assert!(
        p.snapshots_of("stage-0")
            .iter()
            .filter_map(|s| s.body.subprocess.as_ref())
            .all(|b| b.subprocesses.is_empty())
    );
    // stage-1: the fetch exits with 0, the first worker is killed by signal 9, the second is ready.
    assert_eq!(spawned("stage-1").len(), 3);
    assert_eq!(exits("stage-1"), [(Some(0), None), (None, Some(9))]);
    assert!(ready("stage-1"));
    // stage-2: the fetch exits with 0; the GPU probe never exits, never reports ready, and its
    // CPU time climbs while its memory stays put.
    assert_eq!(exits("stage-2"), [(Some(0), None)]);
    assert!(!ready("stage-2"));
    let probe: Vec<(u64, u64)> = p
        .snapshots_of("stage-2")
        .iter()
        .filter_map(|s| s.body.subprocess.as_ref())
        .flat_map(|b| &b.subprocesses)
        .filter(|s| s.label == "gpu-probe")
        .map(|s| (s.rss_bytes.expect("rss"), s.cpu_ms.expect("cpu")))
        .collect();
    assert!(probe.len() >= 5, "{probe:?}");
    let (first, last) = (probe[0], probe[probe.len() - 1]);
    assert!(last.1 > first.1 * 10, "{probe:?}");
    assert!(last.0 - first.0 < 100_000, "{probe:?}");
}

#[test]
fn the_relay_reports_its_sessions_and_closes_them_when_its_listener_restarts() {
    let p = parsed();
    let events = p.events_of("relay");
    let opened = events
        .iter()
        .filter(|r| matches!(r.event, Event::RelaySessionOpened(_)))
        .count();
    let closes: Vec<(String, String, String)> = events
        .iter()
        .filter_map(|r| match &r.event {
            Event::RelaySessionClosed(c) => {
                assert_eq!(c.closed_at_ms - c.opened_at_ms, c.duration_ms);
                Some((
                    p.labels_by_hex[&c.peer_node_id_hex.0].clone(),
                    c.close_initiator.as_ref().to_owned(),
                    c.close_reason.clone(),
                ))
            }
            _ => None,
        })
        .collect();
    // Every member opens a session, loses it when the relay restarts, and opens it again.
    assert_eq!(opened, 8);
    let by_relay: BTreeSet<&str> = closes
        .iter()
        .filter(|c| c.1 == "relay" && c.2 == "listener_restart")
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(
        by_relay,
        BTreeSet::from(["orchestrator", "stage-0", "stage-1", "stage-2"])
    );
    assert!(closes.contains(&("orchestrator".into(), "peer".into(), "client_closed".into())));
    assert_eq!(closes.len(), 5);
    // The latest relay_server block agrees with the events.
    let last = p.snapshots_of("relay").last().expect("relay snapshots");
    let server = last.body.relay_server.as_ref().expect("relay_server block");
    assert_eq!(
        (
            server.total_opens,
            server.total_closes,
            server.active_sessions
        ),
        (8, 5, 3)
    );
    assert_eq!(
        server.closes_by_reason,
        [
            ("client_closed".to_owned(), 1),
            ("listener_restart".to_owned(), 4)
        ]
    );
    assert!(last.body.iroh.is_none() && last.body.swim.is_none());
    assert_eq!(p.boots["relay"].role, "relay");
}

#[test]
fn the_run_lifecycle_is_complete_and_in_order_on_each_node() {
    let p = parsed();
    let tags =
        |label: &str| -> Vec<&str> { p.events_of(label).iter().map(|r| r.event.tag()).collect() };
    let pos = |tags: &[&str], tag: &str| {
        tags.iter()
            .position(|t| *t == tag)
            .unwrap_or_else(|| panic!("no {tag}"))
    };
    let orch = tags("orchestrator");
    for (a, b) in [
        ("pool_ready", "run_planned"),
        ("run_planned", "readiness_barrier_passed"),
        ("readiness_barrier_passed", "prompt_injected"),
        ("prompt_injected", "run_completed"),
        ("run_completed", "stop_run_sent"),
        ("stop_run_sent", "run_torn_down"),
    ] {
        assert!(pos(&orch, a) < pos(&orch, b), "{a} before {b}");
    }
    assert_eq!(orch.iter().filter(|t| **t == "run_completed").count(), 1);
    for stage in p.stages() {
        let t = tags(&stage);
        assert!(
            pos(&t, "weights_loaded") < pos(&t, "stage_ready"),
            "{stage}"
        );
        assert!(pos(&t, "edge_ready") < pos(&t, "stage_ready"), "{stage}");
        assert!(pos(&t, "stage_ready") < pos(&t, "object_loaded"), "{stage}");
        assert!(
            pos(&t, "step_completed") < pos(&t, "stage_stopped"),
            "{stage}"
        );
    }
    let faults: Vec<String> = p
        .events
        .values()
        .flatten()
        .filter_map(|r| match &r.event {
            Event::FaultDetected(f) => {
                Some(format!("{}/{}", f.reason.as_ref(), f.component.as_ref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        faults,
        ["out_of_memory/gpu_worker_ctl", "timeout/transport"]
    );
}

#[test]
fn gossip_comes_in_two_kinds_and_the_orchestrator_gets_no_piggyback() {
    let p = parsed();
    let kinds = |label: &str| -> BTreeSet<String> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::GossipReceived(g) => Some(g.payload_kind.as_ref().to_owned()),
                _ => None,
            })
            .collect()
    };
    let both = BTreeSet::from(["node_metadata".to_owned(), "swim_piggyback".to_owned()]);
    for stage in p.stages() {
        assert_eq!(kinds(&stage), both, "{stage}");
    }
    assert_eq!(
        kinds("orchestrator"),
        BTreeSet::from(["node_metadata".to_owned()])
    );
}

#[test]
fn the_oldest_generation_writes_only_what_it_knew() {
    let bundle = n3_relay_flap_oldest();
    let p = Parsed::new(&bundle);
    assert_eq!(p.manifest.run_id, OLDEST_RUN_ID);
    assert_eq!(p.manifest.contract_version, None);
    assert!(p.manifest.writer.is_none());
    let labels: BTreeSet<&str> = p.manifest.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        BTreeSet::from(["orchestrator", "stage-0", "stage-1", "stage-2"])
    );
    for node in &p.manifest.nodes {
        assert_eq!(node.contract_version, None);
        assert_eq!(node.vastai_records, None);
    }
    let oldest: BTreeSet<&str> = BTreeSet::from([
        "SwimTransition",
        "DialStarted",
        "DialOutcome",
        "IrohConnTypeChanged",
        "RelayChanged",
        "SwimMetadataSent",
        "SwimMetadataReceived",
        "ConnectionCacheHit",
        "ConnectionCacheMiss",
        "ConnectionCacheInvalidated",
        "NodeMapUpdate",
        "MessageSent",
        "MessageReceived",
        "ProbeSent",
        "ProbeReceived",
        "Error",
        "Custom",
    ]);
    let mut kinds = BTreeSet::new();
    for r in p.events.values().flatten() {
        assert!(oldest.contains(r.event.tag()), "{}", r.event.tag());
        if let Event::Custom(c) = &r.event {
            kinds.insert(c.payload.tag().to_owned());
        }
        if let Event::MessageSent(m) = &r.event {
            assert_eq!(m.trace_id, None);
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from(
            [
                "clock_sample",
                "iroh_api_missing",
                "register_name",
                "worker_exited",
                "worker_ready",
                "worker_starting"
            ]
            .map(str::to_owned)
        )
    );
    for snap in p.snapshots.values().flatten() {
        let b = &snap.body;
        assert!(
            b.relay_server.is_none()
                && b.subprocess.is_none()
                && b.app.is_none()
                && b.actors.is_none()
        );
        let iroh = b.iroh.as_ref().expect("iroh block");
        assert_eq!(iroh.iroh_version, None);
        assert!(iroh.relay_session.is_none());
        assert_eq!(iroh.api_gaps.len(), 5);
        let net = b.host.as_ref().and_then(|h| h.network.as_ref());
        assert!(net.is_none_or(|n| n.udp_kernel_stats.is_none()));
    }
    // Same run, same nodes: the newer bundle holds every event type the oldest does, and more.
    let newer = parsed();
    assert_eq!(
        newer.boots["stage-1"].node_id_hex,
        p.boots["stage-1"].node_id_hex
    );
}

#[test]
fn probes_report_udp_echo_ok_and_udp_relay_timeouts_and_refusals() {
    let p = parsed();
    let mut outcomes = BTreeSet::new();
    for r in p.events.values().flatten() {
        if let Event::ProbeReceived(pr) = &r.event {
            outcomes.insert((pr.kind.as_ref().to_owned(), pr.outcome.as_ref().to_owned()));
        }
    }
    for expected in [
        ("udp_echo", "ok"),
        ("udp_relay", "timeout"),
        ("udp_relay", "refused"),
    ] {
        assert!(
            outcomes.contains(&(expected.0.to_owned(), expected.1.to_owned())),
            "{expected:?} not in {outcomes:?}"
        );
    }
    let last = p.snapshots_of("stage-0").last().expect("snapshots");
    let probes = &last.body.probes.as_ref().expect("probes").probes;
    let relay = probes
        .iter()
        .find(|pr| pr.kind == ProbeKind::UdpRelay)
        .expect("udp_relay probe");
    assert_eq!(relay.last_outcome, ProbeOutcome::Timeout);
    assert_eq!(relay.successes, 0);
    assert!(relay.attempts > 0);
}

#[test]
fn kernel_drop_counters_rise_over_the_run() {
    let p = parsed();
    let network = |s: &Snapshot| s.body.host.as_ref().and_then(|h| h.network.clone());
    let mut rising = 0;
    for node in &p.manifest.nodes {
        let nets: Vec<_> = p
            .snapshots_of(&node.label)
            .iter()
            .filter_map(network)
            .collect();
        let (first, last) = (nets.first().expect("host"), nets.last().expect("host"));
        let drops = |n: &diagwire::v1::HostNetwork| {
            n.interfaces
                .iter()
                .filter_map(|i| i.counters.as_ref())
                .map(|c| c.rx_dropped)
                .sum::<u64>()
        };
        let rcvbuf = |n: &diagwire::v1::HostNetwork| {
            n.udp_kernel_stats
                .as_ref()
                .and_then(|u| u.rcvbuf_errors)
                .expect("udp_kernel_stats.rcvbuf_errors")
        };
        assert!(drops(last) >= drops(first), "{}", node.label);
        assert!(rcvbuf(last) >= rcvbuf(first), "{}", node.label);
        if drops(last) > drops(first) && rcvbuf(last) > rcvbuf(first) {
            rising += 1;
        }
    }
    assert!(rising >= 1);
}

#[test]
fn messages_flow_through_the_pipeline() {
    let p = parsed();
    for label in p.members() {
        let sent = p
            .events_of(&label)
            .iter()
            .filter(|r| matches!(r.event, Event::MessageSent(_)))
            .count();
        let received = p
            .events_of(&label)
            .iter()
            .filter(|r| matches!(r.event, Event::MessageReceived(_)))
            .count();
        let last_stage = label == "stage-2";
        assert_eq!(sent == 0, last_stage, "{label}: {sent} sent");
        assert!(received > 0, "{label}");
    }
}

#[test]
fn only_the_last_stage_answers_and_one_answer_fails() {
    let p = parsed();
    let mut failed = Vec::new();
    for (label, records) in &p.events {
        for r in records {
            if let Event::InferenceResponseSent(i) = &r.event {
                assert_eq!(label, "stage-2");
                assert_eq!(p.label(&i.target_peer), "orchestrator");
                if i.send_outcome != InferenceSendOutcome::Success {
                    failed.push(i.request_id.clone());
                }
            }
        }
    }
    assert_eq!(failed.len(), 1, "{failed:?}");
}

#[test]
fn bundles_stay_small() {
    let total: usize = n3_relay_flap().files.values().map(Vec::len).sum();
    assert!(total < 2_500_000, "{total} bytes");
    let total: usize = n3_relay_flap_oldest().files.values().map(Vec::len).sum();
    assert!(total < 1_500_000, "{total} bytes");
}

#[test]
fn shipped_copy_matches_the_generator() {
    shipped_copy_matches(&n3_relay_flap(), RUN_ID);
}

#[test]
fn shipped_oldest_generation_copy_matches_the_generator() {
    shipped_copy_matches(&n3_relay_flap_oldest(), OLDEST_RUN_ID);
}

fn shipped_copy_matches(bundle: &BundleContents, run_id: &str) {
    assert_eq!(bundle.run_id, run_id);
    let dir = shipped_dir(run_id);
    let mut shipped = BTreeMap::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(&dir)
                    .expect("under the bundle")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                shipped.insert(rel, std::fs::read(&path).expect("readable"));
            }
        }
    }
    let mut problems = Vec::new();
    for (path, bytes) in &bundle.files {
        match shipped.get(path) {
            None => problems.push(format!("missing {path}")),
            Some(b) if b != bytes => problems.push(format!("differs {path}")),
            Some(_) => {}
        }
    }
    for path in shipped.keys() {
        if !bundle.files.contains_key(path) {
            problems.push(format!("stale {path}"));
        }
    }
    problems.truncate(20);
    assert!(
        problems.is_empty(),
        "{} is out of date; regenerate it with `{REGENERATE}`\n{}",
        dir.display(),
        problems.join("\n")
    );
}

#[test]
fn the_relay_counters_mailboxes_and_gpu_memory_say_who_counted_them() {
    let p = parsed();
    let mut servers = 0;
    let mut actors = 0;
    let mut gpus = 0;
    for snapshots in p.snapshots.values() {
        for s in snapshots {
            if let Some(server) = &s.body.relay_server {
                servers += 1;
                // Zeros of the first scrape are counted zeros, not a relay that cannot count.
                assert_eq!(server.counters_source, Some(ValueSource::Relay));
                assert!(server.active_sessions_provenance().is_reported());
                assert!(server.total_closes_provenance().is_reported());
            }
            for a in s.body.actors.iter().flat_map(|b| &b.actors) {
                actors += 1;
                assert_eq!(a.mailbox_source, Some(ValueSource::Measured));
                assert_eq!(
                    a.total_msgs_dropped_provenance(),
                    diagwire::Provenance::Reported(&0)
                );
            }
            if let Some(app) = &s.body.app {
                match app.gpu_mem_used_bytes_provenance(&app.api_gaps) {
                    diagwire::Provenance::Reported(_) => {
                        assert_eq!(app.gpu_mem_source, Some(ValueSource::Driver));
                        gpus += 1
                    }
                    diagwire::Provenance::Unavailable(diagwire::Unavailable::ApiGap(g)) => {
                        assert_eq!(g, "AppState.gpu_mem_used_bytes")
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
    assert!(
        servers > 0 && actors > 0 && gpus > 0,
        "{servers} {actors} {gpus}"
    );
}
