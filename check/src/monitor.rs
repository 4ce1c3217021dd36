//! The live monitor: the behavioural rules fed one record at a time, from any source — a channel
//! in a simulated run, the body of a collector's post, files landing in a staging root, a bundle
//! walk — each record with the node it came from.
//!
//! A [`Monitor`] reports each finding as soon as the stream makes it certain ([`Monitor::decided`]),
//! and never takes one back: the report at the end ([`Monitor::finish`]) holds every finding
//! handed on before. When a rule decides is in `docs/behaviour.md` ("When a rule decides"): a record
//! that breaks a rule on its own when it arrives; an order across nodes once the watermark of the
//! run (the least aligned clock among its nodes) has passed it; what needs the whole run at the end.
//! `diagwire check BUNDLE` is this monitor fed by the bundle walk, so there is one implementation of
//! the rules.
//!
//! ```
//! use diagwire::NodeId;
//! use diagwire::v1::{EventRecord, EventType, FaultComponent, FaultReason, Identity};
//! use diagwire::v1::{PromptInjected, ReadinessBarrierPassed, RunFaulted};
//! use diagwire_check::{Monitor, Rulebook};
//!
//! let rules = Rulebook::builtin();
//! let mut run = Monitor::new(&rules, "r1");
//! let id = NodeId::from([7; 32]);
//! let node = "orchestrator";
//! run.boot(node, &Identity::new(id.to_hex(), id.short(), "orchestrator", "r1", 1_000, 0));
//! run.event(node, &EventRecord::new(id, 1, 2_000, PromptInjected::new("r1", 0, 1, 1)));
//! assert!(run.decided().is_empty(), "the barrier may still come from a node behind 2 000 ms");
//! run.event(node, &EventRecord::new(id, 2, 3_000, ReadinessBarrierPassed::new("r1")));
//! // Every node of the run is past the prompt now: it came before the barrier, for certain.
//! let now = run.decided();
//! assert_eq!(now[0].rule, "order.prompt_after_barrier");
//! let fault = RunFaulted::new("r1", FaultReason::Timeout, FaultComponent::Orchestrator);
//! run.event(node, &EventRecord::new(id, 3, 4_000, fault));
//! let verdict = run.conclude();
//! verdict.expect_lifecycle("orchestrator", &[EventType::PromptInjected, EventType::RunFaulted]);
//! verdict.expect_fault(FaultReason::Timeout, FaultComponent::Orchestrator);
//! assert!(verdict.check_passed().is_err(), "the early prompt fails the run");
//! ```

use std::collections::HashMap;

use diagwire::Problem;
use diagwire::bundle::records::Item;
use diagwire::v1::{EventRecord, Finalize, Identity, Manifest, Record, Snapshot};

use crate::evaluate::driver::{Checker, Fed, Progress, RecordRef};
use crate::evaluate::{Nodes, Options};
use crate::expect::{Trace, Verdict};
use crate::rulebook::Rulebook;
use crate::verdict::{CheckReport, Finding};

/// The behavioural rules over a stream of records that may not have ended.
#[derive(Debug)]
pub struct Monitor<'r> {
    checker: Checker<'r>,
    source: String,
    /// Records taken per (node, kind), for their locations.
    counts: HashMap<(String, &'static str), usize>,
    /// What the assertions read (kept only by a monitor made for them: it grows with the run).
    trace: Option<Trace>,
}

impl<'r> Monitor<'r> {
    /// A monitor of run `run_id` (until a manifest says otherwise), whose records are located
    /// as `<run_id>/<node>/<kind>:<index>`. The run's nodes are the manifest's once one arrives,
    /// before that every node seen so far (each node sends its boot record first).
    pub fn new(rulebook: &'r Rulebook, run_id: &str) -> Self {
        Self::with(rulebook, run_id, Options::default(), Nodes::ManifestOrSeen)
    }

    /// A monitor of run `run_id` with these options, learning the run's node set as `nodes`
    /// says.
    pub fn with(rulebook: &'r Rulebook, run_id: &str, opts: Options, nodes: Nodes) -> Self {
        let source = run_id;
        Monitor {
            checker: Checker::with_nodes(rulebook, opts, source, false, run_id, nodes),
            source: source.to_owned(),
            counts: HashMap::new(),
            trace: Some(Trace::default()),
        }
    }

    /// The monitor `diagwire check` feeds with a bundle's walk: `source` is the bundle as given
    /// (`archive` when a `.tar.gz`), `run_id` its run directory's name; the run's nodes are the
    /// manifest's. It keeps no trace for assertions, so its memory does not grow with the run.
    pub fn for_bundle(
        rulebook: &'r Rulebook,
        opts: Options,
        source: &str,
        archive: bool,
        run_id: &str,
    ) -> Self {
        Monitor {
            checker: Checker::with_nodes(rulebook, opts, source, archive, run_id, Nodes::Manifest),
            source: source.to_owned(),
            counts: HashMap::new(),
            trace: None,
        }
    }

    fn feed(&mut self, node: Option<&str>, kind: &'static str, record: RecordRef<'_>) {
        let label = node.unwrap_or("");
        let n = self.counts.entry((label.to_owned(), kind)).or_insert(0);
        let index = *n;
        *n += match record {
            RecordRef::Events(b) => b.len(),
            _ => 1,
        };
        let file = match node {
            Some(l) => format!("{}/{l}/{kind}", self.source),
            None => format!("{}/{kind}", self.source),
        };
        self.take(&Fed {
            node,
            record,
            text: None,
            location: diagwire::Location::record(file, index, ""),
        });
    }

    /// Takes a record with its location (and its text, when the source has it).
    pub fn take(&mut self, fed: &Fed<'_>) {
        if let (Some(node), Some(trace)) = (fed.node, &mut self.trace) {
            match fed.record {
                RecordRef::Event(e) => trace.event(node, e),
                RecordRef::Events(b) => b.iter().for_each(|e| trace.event(node, e)),
                _ => {}
            }
        }
        self.checker.take(fed);
    }

    /// Takes a record of any kind; `node` is `None` for a run-wide record (the manifest).
    pub fn record(&mut self, node: Option<&str>, record: &Record) {
        let kind = match record {
            Record::Boot(_) => "boot",
            Record::Event(_) | Record::EventBatch(_) => "events",
            Record::Snapshot(_) => "snapshots",
            Record::Finalize(_) => "finalize",
            Record::Manifest(_) => "manifest",
            Record::Vastai(_) => "vastai",
            _ => "other",
        };
        self.feed(node, kind, record.into());
    }

    /// Takes a node's boot record.
    pub fn boot(&mut self, node: &str, identity: &Identity) {
        self.feed(Some(node), "boot", RecordRef::Boot(identity));
    }

    /// Takes one event of a node.
    pub fn event(&mut self, node: &str, event: &EventRecord) {
        self.feed(Some(node), "events", RecordRef::Event(event));
    }

    /// Takes a batch of a node's events, in the node's order.
    pub fn events(&mut self, node: &str, batch: &[EventRecord]) {
        self.feed(Some(node), "events", RecordRef::Events(batch));
    }

    /// Takes a snapshot of a node.
    pub fn snapshot(&mut self, node: &str, snapshot: &Snapshot) {
        self.feed(Some(node), "snapshots", RecordRef::Snapshot(snapshot));
    }

    /// Takes the finalize record a node sent.
    pub fn finalize(&mut self, node: &str, finalize: &Finalize) {
        self.feed(Some(node), "finalize", RecordRef::Finalize(finalize));
    }

    /// Takes the run's manifest (it names the run and its nodes).
    pub fn manifest(&mut self, manifest: &Manifest) {
        self.feed(None, "manifest", RecordRef::Manifest(manifest));
    }

    /// Takes a file or record that could not be read.
    pub fn problem(&mut self, problem: &Problem) {
        self.checker.problem(problem);
    }

    /// The findings decided since the last call (each is in the final report too).
    pub fn decided(&mut self) -> Vec<Finding> {
        self.checker.decided()
    }

    /// How far the check is.
    pub fn progress(&self) -> Progress {
        self.checker.progress()
    }

    /// Ends the stream: decides what needs all of it, and returns the report.
    pub fn finish(self) -> CheckReport {
        self.checker.finish()
    }

    /// Ends the stream and returns the report with what a test asserts of the run
    /// ([`Verdict`]).
    pub fn conclude(self) -> Verdict {
        Verdict::new(self.checker.finish(), self.trace.unwrap_or_default())
    }
}

impl diagwire::bundle::records::Consumer for Monitor<'_> {
    fn record(&mut self, item: &Item<'_>) {
        if let (Some(node), Some(trace), Record::Event(e)) =
            (item.node, &mut self.trace, item.record)
        {
            trace.event(node, e);
        }
        self.checker.record(item);
    }
    fn problem(&mut self, problem: &Problem) {
        self.checker.problem(problem);
    }
    fn omitted(&mut self, problems: usize) {
        self.checker.omitted(problems as u64);
    }
}
