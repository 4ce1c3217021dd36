//! The serve decision: whether the collector serves its cached bundle of a run or assembles it
//! again from staging, from what the cache's manifest (or its files) and the staging tree say.
//!
//! The decisions are a table, one `#[test]` per line (the rule numbers are those of
//! `serve_decision`'s documentation); the cases after it assemble real staging trees and check
//! that the cache read back from its files decides as the assembled bundle does, step by step.
#![cfg(feature = "bundle")]

#[path = "common/staging.rs"]
mod staging;

use std::fs;
use std::io::ErrorKind;

use diagwire::NodeIdHex;
use diagwire::bundle::BundleContents;
use diagwire::bundle::assemble::{
    Assembled, CachedBundle, NodeFiles, NodeHoldings, ServeDecision, StagingState, Tally, assemble,
    serve_decision,
};
use diagwire::v1::Manifest;
use staging::*;

/// A node as the serve decision sees it, built file kind by file kind.
#[derive(Debug, Clone)]
struct Held {
    id: &'static str,
    label: &'static str,
    files: NodeFiles,
}

/// Node `id` under `label`, holding nothing yet.
fn held(id: &'static str, label: &'static str) -> Held {
    Held {
        id,
        label,
        files: NodeFiles::default(),
    }
}

impl Held {
    fn with(mut self, kind: fn(&mut NodeFiles) -> &mut Tally, files: u64, bytes: u64) -> Held {
        *kind(&mut self.files) = Tally { files, bytes };
        self
    }
    fn boot(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.boot, files, bytes)
    }
    fn events(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.events, files, bytes)
    }
    fn snapshots(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.snapshots, files, bytes)
    }
    fn finalize(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.finalize, files, bytes)
    }
    fn vastai(self, files: u64, bytes: u64) -> Held {
        self.with(|f| &mut f.vastai, files, bytes)
    }
    fn label(mut self, label: &'static str) -> Held {
        self.label = label;
        self
    }

    fn holdings(&self, known: Known) -> NodeHoldings {
        NodeHoldings {
            node_id_hex: NodeIdHex(self.id.to_owned()),
            label: self.label.to_owned(),
            counts: self.files.counts(),
            files: (known == Files).then_some(self.files),
        }
    }
}

/// What a side of the decision was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// A manifest: counts only.
    Counts,
    /// A file listing: counts and sizes.
    Files,
}

use Known::{Counts, Files};

/// A cached bundle of these nodes, with `finalize_received` as the nodes say.
fn cache(known: Known, nodes: &[Held]) -> CachedBundle {
    CachedBundle {
        finalize_received: nodes.iter().any(|n| n.files.finalize.files > 0),
        nodes: nodes.iter().map(|n| n.holdings(known)).collect(),
    }
}

/// Staging of these nodes, with `finalize_on_disk` and `has_boot` as the nodes say.
fn staged(known: Known, nodes: &[Held]) -> StagingState {
    StagingState {
        finalize_on_disk: nodes.iter().any(|n| n.files.finalize.files > 0),
        has_boot: nodes.iter().any(|n| n.files.boot.files > 0),
        nodes: nodes.iter().map(|n| n.holdings(known)).collect(),
    }
}

fn orch() -> Held {
    held(ORCH, "orchestrator")
        .boot(1, 900)
        .events(2, 4_000)
        .snapshots(1, 700)
        .finalize(1, 60)
}

fn stage_a() -> Held {
    held(STAGE_A, "stage-0")
        .boot(1, 900)
        .events(1, 2_000)
        .snapshots(1, 700)
}

fn stage_b() -> Held {
    held(STAGE_B, "stage-1")
        .boot(1, 900)
        .events(1, 2_000)
        .snapshots(1, 700)
}

/// A vast.ai producer's records only: no boot record.
fn vastai_node() -> Held {
    held("vastai-external", "vastai-external").vastai(2, 300)
}

/// The run the table starts from: the orchestrator (which finalized) and two stages.
fn run3() -> Vec<Held> {
    vec![orch(), stage_a(), stage_b()]
}

/// [`run3`] with `f` applied to the node of id `id`.
fn run3_with(id: &str, f: fn(Held) -> Held) -> Vec<Held> {
    run3()
        .into_iter()
        .map(|n| if n.id == id { f(n) } else { n })
        .collect()
}

/// `name: (cached bundle, staging), … => decision;` — every pair gives the decision.
macro_rules! serves {
    ($($name:ident: $(($cached:expr, $staging:expr)),+ $(,)? => $decision:expr;)*) => {$(
        #[test]
        fn $name() {
            $(
                let (cached, staging): (Option<CachedBundle>, Option<StagingState>) =
                    ($cached, $staging);
                assert_eq!(
                    serve_decision(cached.as_ref(), staging.as_ref()),
                    $decision,
                    "cached {cached:#?}, staging {staging:#?}",
                );
            )+
        }
    )*};
}

use ServeDecision::{NotFound, Resynthesize, ServeCached};

serves! {
    // Rule 1.
    no_staging_is_not_found_even_with_a_cached_bundle:
        (Some(cache(Counts, &run3())), None), (None, None)
        => NotFound;
    // Rule 2.
    a_run_directory_without_nodes_is_not_found:
        (Some(cache(Counts, &run3())), Some(staged(Counts, &[]))), (None, Some(staged(Files, &[])))
        => NotFound;
    // Rule 2: a node holding only vast.ai records is a node, so its run is served.
    staging_without_a_boot_record_is_still_served:
        (None, Some(staged(Counts, &[vastai_node()]))) => Resynthesize;
    // Rule 2, then 5: a vast.ai-only node counts in the node ids like any other.
    a_node_with_only_vastai_records_counts_as_a_node:
        (Some(cache(Counts, &[orch()])), Some(staged(Counts, &[orch(), vastai_node()]))),
        (Some(cache(Files, &[orch(), vastai_node()])), Some(staged(Files, &[orch()])))
        => Resynthesize;
    // Rule 3.
    staging_without_a_cached_bundle_is_resynthesized:
        (None, Some(staged(Counts, &[stage_a(), stage_b()]))),
        (None, Some(staged(Files, &run3())))
        => Resynthesize;
    // Rule 4: only the flag differs, every node is as cached.
    a_finalize_deleted_since_the_cache_was_written_resynthesizes:
        (
            Some(cache(Counts, &run3())),
            Some(StagingState { finalize_on_disk: false, ..staged(Counts, &run3()) })
        )
        => Resynthesize;
    a_finalize_arriving_after_the_cache_was_written_resynthesizes:
        (
            Some(CachedBundle { finalize_received: false, ..cache(Counts, &run3()) }),
            Some(staged(Counts, &run3()))
        )
        => Resynthesize;
    // Rule 5.
    staging_with_more_nodes_than_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &[orch(), stage_a()])),
            Some(staged(Counts, &run3()))
        )
        => Resynthesize;
    staging_with_fewer_nodes_than_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &[orch(), stage_a()]))
        )
        => Resynthesize;
    // Stage B replaced by a node with another id and the same label and files.
    an_equal_count_node_swap_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_B, |n| Held { id: STAGE_C, ..n })))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_B, |n| Held { id: STAGE_C, ..n })))
        )
        => Resynthesize;
    a_node_listed_twice_in_the_cached_bundle_is_resynthesized:
        (
            Some(cache(Counts, &[orch(), stage_a(), stage_a()])),
            Some(staged(Counts, &[orch(), stage_a()]))
        )
        => Resynthesize;
    // Rule 6.
    a_relabelled_node_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_B, |n| n.label("stage-2"))))
        )
        => Resynthesize;
    // Rule 7: the finalizer's last snapshot landing after the canonical bundle was written.
    staging_that_grew_within_the_same_nodes_is_resynthesized:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(ORCH, |n| n.snapshots(2, 1_400))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(ORCH, |n| n.snapshots(2, 1_400))))
        )
        => Resynthesize;
    every_count_of_a_node_is_compared:
        (
            Some(cache(Counts, &run3_with(STAGE_A, |n| n.boot(0, 0)))),
            Some(staged(Counts, &run3()))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.events(2, 4_000))))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.snapshots(0, 0))))
        ),
        // The flag stays true: the orchestrator finalized.
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.finalize(1, 60))))
        ),
        (
            Some(cache(Counts, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.vastai(1, 150))))
        )
        => Resynthesize;
    // Rule 8: as many files of every kind, more bytes.
    a_node_whose_events_file_grew_is_resynthesized:
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.events(1, 2_500))))
        )
        => Resynthesize;
    // Rule 8: the counts record boot and finalize files only as present.
    a_second_boot_or_finalize_file_is_resynthesized_when_both_sides_know_their_files:
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.boot(2, 1_800))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Files, &run3_with(ORCH, |n| n.finalize(2, 120))))
        )
        => Resynthesize;
    // Rule 8 applies only when both sides know their files.
    sizes_are_not_compared_when_a_side_knows_only_counts:
        (
            Some(cache(Counts, &run3())),
            Some(staged(Files, &run3_with(STAGE_A, |n| n.events(1, 2_500).boot(2, 1_800))))
        ),
        (
            Some(cache(Files, &run3())),
            Some(staged(Counts, &run3_with(STAGE_A, |n| n.events(1, 2_500).boot(2, 1_800))))
        )
        => ServeCached;
    // Rule 9, whatever each side was built from and in whatever order it lists its nodes.
    unchanged_staging_serves_the_cache:
        (Some(cache(Counts, &run3())), Some(staged(Counts, &run3()))),
        (Some(cache(Files, &run3())), Some(staged(Files, &run3()))),
        (Some(cache(Counts, &run3())), Some(staged(Files, &run3()))),
        (Some(cache(Files, &run3())), Some(staged(Counts, &run3()))),
        (
            Some(cache(Files, &[stage_b(), orch(), stage_a()])),
            Some(staged(Files, &run3()))
        ),
        (
            Some(cache(Files, &[orch(), vastai_node()])),
            Some(staged(Files, &[vastai_node(), orch()]))
        )
        => ServeCached;
}

/// The decisions for a cache and staging state built both ways: from the two manifests, and from
/// the cached bundle's files and the assembled bundle.
#[track_caller]
fn decisions(cached: &Assembled, now: &Assembled) -> (ServeDecision, ServeDecision) {
    let by_manifest = serve_decision(
        Some(&CachedBundle::from_manifest(&cached.manifest)),
        Some(&StagingState::from_manifest(&now.manifest)),
    );
    let by_files = serve_decision(
        Some(&CachedBundle::from_contents(&cached.contents).expect("an assembled bundle")),
        Some(&StagingState::from_assembled(now)),
    );
    (by_manifest, by_files)
}

/// A finalized run of the orchestrator and one stage.
fn finalized_run(s: &Staging) {
    s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
        .put(ORCH, "events-000001.json", EMPTY_EVENTS)
        .put(ORCH, "finalize-000001.json", FINALIZE)
        .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
        .put(STAGE_A, "snapshot-000001.json", SNAPSHOT);
}

#[test]
fn the_cache_read_from_its_files_knows_what_the_assembled_bundle_knows() {
    let staging = Staging::new();
    finalized_run(&staging);
    staging.put("vastai-external", "vastai_logs-000001.json", VASTAI_LOGS);
    let assembled = staging.assemble();

    let cached = CachedBundle::from_contents(&assembled.contents).unwrap();
    let state = StagingState::from_assembled(&assembled);
    assert_eq!(cached.nodes, state.nodes);
    assert_eq!(cached.node_count(), 3);
    assert_eq!(state.node_count(), 3);
    assert!(cached.finalize_received && state.finalize_on_disk && state.has_boot);

    // Without the sizes, it is what the manifest says.
    let mut counts_only = cached.clone();
    counts_only.nodes.iter_mut().for_each(|n| n.files = None);
    assert_eq!(
        counts_only,
        CachedBundle::from_manifest(&assembled.manifest)
    );
    let mut counts_only = state.clone();
    counts_only.nodes.iter_mut().for_each(|n| n.files = None);
    assert_eq!(
        counts_only,
        StagingState::from_manifest(&assembled.manifest)
    );

    let len = |s: &str| s.len() as u64;
    let orch = cached
        .nodes
        .iter()
        .find(|n| n.node_id_hex.0 == ORCH)
        .unwrap();
    let want = NodeFiles {
        boot: Tally {
            files: 1,
            bytes: len(&boot(ORCH, "orchestrator", None)),
        },
        events: Tally {
            files: 1,
            bytes: len(EMPTY_EVENTS),
        },
        finalize: Tally {
            files: 1,
            bytes: len(FINALIZE),
        },
        ..NodeFiles::default()
    };
    assert_eq!(orch.files, Some(want));
    let vastai = cached
        .nodes
        .iter()
        .find(|n| n.node_id_hex.0 == "vastai-external")
        .unwrap();
    assert_eq!(
        vastai.files.map(|f| f.vastai),
        Some(Tally {
            files: 1,
            bytes: len(VASTAI_LOGS)
        })
    );
    assert_eq!(serve_decision(Some(&cached), Some(&state)), ServeCached);
}

#[test]
fn a_cache_assembly_could_not_have_written_is_not_read_from_its_files() {
    let staging = Staging::new();
    finalized_run(&staging);
    let good = staging.assemble().contents;
    assert!(CachedBundle::from_contents(&good).is_some());

    type Change = fn(&mut BundleContents);
    let cases: [(&str, Change); 7] = [
        ("no MANIFEST.json", |c| {
            c.files.remove("MANIFEST.json");
        }),
        ("a MANIFEST.json that does not parse", |c| {
            c.files.insert("MANIFEST.json".into(), b"{".to_vec());
        }),
        ("a manifest of another run", |c| {
            c.run_id = "another-run".into()
        }),
        ("a file outside the layout", |c| {
            c.files
                .insert("orchestrator/notes.txt".into(), b"hi".to_vec());
        }),
        ("a file outside every node directory", |c| {
            c.files.insert("README".into(), b"hi".to_vec());
        }),
        ("a file of a node the manifest does not list", |c| {
            c.files
                .insert("stage-9/boot.json".into(), BOOT_TEMPLATE.into());
        }),
        ("a node whose files do not give its counts", |c| {
            c.files.remove("stage-0/snapshots/snapshot-000001.json");
        }),
    ];
    for (what, change) in cases {
        let mut contents = good.clone();
        change(&mut contents);
        assert_eq!(CachedBundle::from_contents(&contents), None, "{what}");
    }
}

/// The finalizer's answer to its own snapshot request lands in staging after the canonical bundle
/// was written.
#[test]
fn a_snapshot_landing_after_the_cache_was_written_is_resynthesized() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (ServeCached, ServeCached)
    );

    staging.put(ORCH, "snapshot-000001.json", SNAPSHOT);
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (Resynthesize, Resynthesize)
    );
}

/// One stage node replaced by another with the same role and stage index (so the same label) and
/// the same files.
#[test]
fn a_node_swapped_for_another_on_disk_is_resynthesized() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();

    staging.remove_node(STAGE_A);
    staging
        .put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
        .put(STAGE_B, "snapshot-000001.json", SNAPSHOT);
    let now = staging.assemble();
    assert_eq!(labels(&now.manifest), labels(&cached.manifest));
    assert_eq!(decisions(&cached, &now), (Resynthesize, Resynthesize));
}

/// A staged file rewritten larger under its name: only the file listings see it, since a manifest
/// records no sizes.
#[test]
fn an_events_file_that_grew_in_place_is_seen_by_the_file_listings_only() {
    let staging = Staging::new();
    finalized_run(&staging);
    let cached = staging.assemble();

    staging.put(ORCH, "events-000001.json", EVENTS);
    assert!(EVENTS.len() > EMPTY_EVENTS.len());
    assert_eq!(
        decisions(&cached, &staging.assemble()),
        (ServeCached, Resynthesize)
    );
}

/// Counts by staged kind prefix in a node's staging directory, read straight from the disk.
fn on_disk(staging: &Staging, node_id: &str) -> (bool, u64, u64, bool, u64) {
    let names: Vec<String> = fs::read_dir(staging.run_dir().join(node_id))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let count = |prefix: &str| names.iter().filter(|n| n.starts_with(prefix)).count() as u64;
    (
        count("boot-") > 0,
        count("events-"),
        count("snapshot-"),
        count("finalize-") > 0,
        count("vastai_"),
    )
}

/// Asserts that a manifest describes exactly what is in staging now.
#[track_caller]
fn assert_manifest_matches_disk(staging: &Staging, manifest: &Manifest, step: &str) {
    let mut dirs: Vec<String> = fs::read_dir(staging.run_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    let mut listed: Vec<String> = manifest
        .nodes
        .iter()
        .map(|n| n.node_id_hex.as_str().to_owned())
        .collect();
    listed.sort();
    assert_eq!(listed, dirs, "{step}: nodes");
    for n in &manifest.nodes {
        let counts = (
            n.boot_recorded,
            n.event_batches,
            n.snapshots,
            n.finalize_recorded,
            n.vastai_records.unwrap_or(0),
        );
        assert_eq!(
            counts,
            on_disk(staging, n.node_id_hex.as_str()),
            "{step}: {}",
            n.label
        );
    }
    let finalize_on_disk = dirs.iter().any(|d| on_disk(staging, d).3);
    assert_eq!(
        manifest.finalize_received, finalize_on_disk,
        "{step}: finalize_received"
    );
}

/// A run id reused across a failed first lease and a successful second one: after every change to
/// staging, the served bundle is what staging holds.
#[test]
fn run_id_reuse_serves_what_staging_holds_at_every_step() {
    struct Step {
        what: &'static str,
        change: fn(&Staging),
        /// The collector writes the canonical bundle after this step (it received finalize).
        writes_cache: bool,
        decision: ServeDecision,
        labels: &'static [&'static str],
        finalize_received: bool,
    }
    let steps = [
        Step {
            what: "first lease staged, no finalize yet",
            change: |s| {
                s.put(ORCH, "boot-000001.json", boot(ORCH, "orchestrator", None))
                    .put(ORCH, "events-000001.json", EVENTS)
                    .put(STAGE_A, "boot-000001.json", boot(STAGE_A, "stage", Some(0)))
                    .put(STAGE_A, "snapshot-000001.json", SNAPSHOT);
            },
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0"],
            finalize_received: false,
        },
        Step {
            what: "finalize arrives and the canonical bundle is cached",
            change: |s| {
                s.put(ORCH, "finalize-000001.json", FINALIZE);
            },
            writes_cache: true,
            decision: ServeDecision::ServeCached,
            labels: &["orchestrator", "stage-0"],
            finalize_received: true,
        },
        Step {
            what: "second lease grows staging under the same run id",
            change: |s| {
                s.put(STAGE_B, "boot-000001.json", boot(STAGE_B, "stage", Some(0)))
                    .put(STAGE_B, "events-000001.json", EVENTS)
                    .put(STAGE_C, "boot-000001.json", boot(STAGE_C, "stage", Some(1)))
                    .put(STAGE_C, "snapshot-000001.json", SNAPSHOT)
                    .put("vastai-stage-1", "vastai_sample-000001.json", VASTAI_SAMPLE)
                    .put(ORCH, "snapshot-000001.json", SNAPSHOT);
            },
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &[
                "orchestrator",
                "stage-0-8039dee3",
                "stage-0-afae7c99",
                "stage-1",
                "vastai-stage-1",
            ],
            finalize_received: true,
        },
        Step {
            what: "the first-lease stage directory is deleted",
            change: |s| s.remove_node(STAGE_A),
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0", "stage-1", "vastai-stage-1"],
            finalize_received: true,
        },
        Step {
            what: "the finalize file is deleted",
            change: |s| s.remove(ORCH, "finalize-000001.json"),
            writes_cache: false,
            decision: ServeDecision::Resynthesize,
            labels: &["orchestrator", "stage-0", "stage-1", "vastai-stage-1"],
            finalize_received: false,
        },
    ];

    let staging = Staging::new();
    let mut cache: Option<CachedBundle> = None;
    let mut cache_files: Option<CachedBundle> = None;
    for step in &steps {
        (step.change)(&staging);
        let assembled = staging.assemble();
        let manifest = &assembled.manifest;
        if step.writes_cache {
            cache = Some(CachedBundle::from_manifest(manifest));
            cache_files = CachedBundle::from_contents(&assembled.contents);
            assert!(cache_files.is_some(), "{}", step.what);
        }
        let state = StagingState::from_manifest(manifest);
        assert_eq!(
            serve_decision(cache.as_ref(), Some(&state)),
            step.decision,
            "{}",
            step.what
        );
        let state = StagingState::from_assembled(&assembled);
        assert_eq!(
            serve_decision(cache_files.as_ref(), Some(&state)),
            step.decision,
            "{} (from the files)",
            step.what
        );
        assert_eq!(labels(manifest), step.labels, "{}", step.what);
        assert_eq!(
            manifest.finalize_received, step.finalize_received,
            "{}",
            step.what
        );
        assert_manifest_matches_disk(&staging, manifest, step.what);
        assert!(
            assembled.problems.is_empty(),
            "{}: {:#?}",
            step.what,
            assembled.problems
        );
    }

    fs::remove_dir_all(staging.run_dir()).unwrap();
    let err = assemble(staging.root(), RUN, collector()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert_eq!(
        serve_decision(cache.as_ref(), None),
        ServeDecision::NotFound
    );
    assert_eq!(
        serve_decision(cache_files.as_ref(), None),
        ServeDecision::NotFound
    );
}
