//! What the driver learns of the stream as it goes, for every evaluator to read: the nodes (label,
//! boot records, clock samples, last wall time, the gaps their `Error` events mention), the
//! manifest's run and node ids, and the order of events across nodes.
//!
//! **Order of events.** Two events of the same node directory are ordered by `monotonic_seq`
//! (then by their place in the stream). Events of different nodes are ordered by wall clock,
//! aligned to the collector's clock with the node's clock samples: each `clock_sample` gives the
//! offset `((collector_recv_ms − node_send_ms_echoed) + (collector_send_ms − wall_ms)) / 2`, and a
//! node's offset is the median of its samples (0 without any). Across nodes, equal aligned times
//! count as "before", so clock noise never creates a violation on its own.
//!
//! **Watermark.** A node's progress is the aligned wall time of its latest event. Once the run's
//! node set is known ([`Nodes`]) and every node of it has an event, the watermark is the least
//! progress among them: assuming each node's events arrive in its own order with wall clocks that
//! do not run backward, no event still to come has an aligned time below it, so a rule may decide
//! at the watermark what an earlier event would have changed. `docs/behaviour.md` says, per rule,
//! when it decides.

use std::collections::{BTreeSet, HashMap};

use diagwire::shape::TypeKind;
use diagwire::v1::CONTRACT;

use super::kept::Ev;

/// What is known of one node directory.
#[derive(Debug, Default)]
pub(crate) struct NodeInfo {
    /// The directory's label.
    pub label: String,
    /// Boot records seen.
    pub boots: u64,
    /// The node id of the directory's latest boot record.
    pub latest_boot_id: Option<String>,
    /// Clock offsets from its clock samples, sorted.
    pub offsets: Vec<i64>,
    /// Their median (0 without any).
    pub offset: i64,
    /// The latest wall time of its events.
    pub last_wall: Option<u64>,
    /// Gap names and field names that an `Error` event of the node mentions.
    pub mentioned: BTreeSet<String>,
}

/// The facts of the stream so far.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    /// Every node seen, by index.
    pub nodes: Vec<NodeInfo>,
    by_label: HashMap<String, usize>,
    /// The manifest's run id.
    pub manifest_run: Option<String>,
    /// Whether the manifest says the bundle was finalized.
    pub finalized: bool,
    /// The manifest's node id of each label.
    pub manifest_ids: HashMap<String, String>,
    /// The place of the current record in the stream.
    pub ord: u64,
    /// (gap name, field key) of every gap-governed field of the contract.
    pub gap_fields: Vec<(&'static str, &'static str)>,
    /// How the run's node set is known.
    pub node_set: Nodes,
    /// The run's nodes, once known (for [`Nodes::Seen`], every node seen so far).
    members: Option<Vec<usize>>,
}

/// How a monitor learns which nodes a run has, for the watermark (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Nodes {
    /// The nodes the bundle's manifest lists. Before a manifest is read the set is not known, and
    /// what needs every node's progress is decided at the end of the stream.
    #[default]
    Manifest,
    /// The manifest's nodes once one is read; before that, every node seen so far. For a live run,
    /// where each node posts its boot record before anything else.
    ManifestOrSeen,
    /// These node labels (directory labels in a bundle, node ids in a collector's staging).
    Declared(Vec<String>),
}

impl Stream {
    /// A stream before its first record, whose node set is known as `node_set` says.
    pub fn with_nodes(node_set: Nodes) -> Stream {
        let mut s = Stream::new();
        if let Nodes::Declared(labels) = &node_set {
            let members = labels.iter().map(|l| s.node(l)).collect();
            s.members = Some(members);
        }
        s.node_set = node_set;
        s
    }

    /// A stream before its first record.
    pub fn new() -> Stream {
        let mut gap_fields = Vec::new();
        for t in CONTRACT.types {
            if let TypeKind::Struct { fields, .. } = t.kind {
                for f in fields {
                    if let Some(g) = f.gap {
                        gap_fields.push((g, f.key));
                    }
                }
            }
        }
        Stream {
            gap_fields,
            ..Stream::default()
        }
    }

    /// The index of the node labelled `label`, added when new.
    pub fn node(&mut self, label: &str) -> usize {
        if let Some(&i) = self.by_label.get(label) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(NodeInfo {
            label: label.to_owned(),
            ..NodeInfo::default()
        });
        self.by_label.insert(label.to_owned(), i);
        if self.node_set == Nodes::ManifestOrSeen && self.manifest_run.is_none() {
            self.members.get_or_insert_with(Vec::new).push(i);
        }
        i
    }

    /// Takes the manifest's node labels as the run's node set, when that is how it is known.
    pub fn manifest_nodes<'l>(&mut self, labels: impl Iterator<Item = &'l str>) {
        if matches!(self.node_set, Nodes::Manifest | Nodes::ManifestOrSeen) {
            let members = labels.map(|l| self.node(l)).collect();
            self.members = Some(members);
        }
    }

    /// Adds a clock offset of node `node`.
    pub fn add_offset(&mut self, node: usize, offset: i64) {
        let n = &mut self.nodes[node];
        let at = n.offsets.partition_point(|&o| o <= offset);
        n.offsets.insert(at, offset);
        n.offset = n.offsets[n.offsets.len() / 2];
    }

    /// The watermark: the least aligned progress among the run's nodes, once the node set is
    /// known and each of them has an event (see the module doc).
    pub fn watermark(&self) -> Option<i128> {
        let members = self.members.as_ref()?;
        let mut least: Option<i128> = None;
        for &i in members {
            let n = &self.nodes[i];
            let p = i128::from(n.last_wall?) + i128::from(n.offset);
            least = Some(least.map_or(p, |l| l.min(p)));
        }
        least
    }

    /// The label of node `node`.
    pub fn label(&self, node: usize) -> &str {
        &self.nodes[node].label
    }

    /// The clock offset of every node: the median of its samples, 0 without any.
    pub fn offsets(&self) -> Vec<i64> {
        self.nodes.iter().map(|n| n.offset).collect()
    }
}

/// The clocks of the whole stream, known once it has ended.
#[derive(Debug)]
pub(crate) struct Clocks {
    offsets: Vec<i64>,
}

impl Clocks {
    /// The clocks of `stream`.
    pub fn of(stream: &Stream) -> Clocks {
        Clocks {
            offsets: stream.offsets(),
        }
    }

    /// The wall time of `e` on the collector's clock.
    pub fn aligned(&self, e: &Ev) -> i128 {
        i128::from(e.wall) + i128::from(self.offsets[e.node])
    }

    /// Whether `a` comes before `b` (see the module doc).
    pub fn before(&self, a: &Ev, b: &Ev) -> bool {
        if a.node == b.node {
            (a.seq, a.ord) < (b.seq, b.ord)
        } else {
            self.aligned(a) <= self.aligned(b)
        }
    }
}
