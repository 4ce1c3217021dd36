//! The one-pass evaluator of the rule catalog.
//!
//! [`Checker::record`] takes the records of a bundle one at a time, in the order
//! `diagwire::bundle::records::walk` yields them, and keeps only per-node and per-key state: the
//! last sequence number of each node, the dials still open, the first event of each ordering key,
//! the distinct values of each copied field. [`Checker::finish`] decides what needs the whole
//! stream (ordering across nodes, counts per run, open dials at the end, the manifest's run) and
//! returns the report.
//!
//! **Order of events.** Two events of the same node directory are ordered by `monotonic_seq`
//! (then by their place in the stream). Events of different nodes are ordered by wall clock,
//! aligned to the collector's clock with the node's clock samples: each `clock_sample` gives the
//! offset `((collector_recv_ms − node_send_ms_echoed) + (collector_send_ms − wall_ms)) / 2`, and a
//! node's offset is the median of its samples (0 without any). Across nodes, equal aligned times
//! count as "before", so clock noise never creates a violation on its own.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use diagwire::bundle::records::Item;
use diagwire::layout::{FileKind, Role};
use diagwire::shape::{FieldShape, ValueShape};
use diagwire::v1::{CONTRACT, CustomPayload, Event, EventRecord, Identity, Record, Snapshot};
use diagwire::{Location, NodeId, Problem};
use serde_json::Value;

use crate::blocks::{self, GapBlock};
use crate::rulebook::{
    Check, Count, DialSide, ForbiddenValues, KnownValues, Precedes, Rule, Rulebook, ScopeFields,
    SourceImplies, event_fields, event_variants,
};
use crate::verdict::{CheckReport, Finding, RuleResult, Witness};

/// Options of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Findings kept per rule; the others are counted.
    pub max_findings_per_rule: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_findings_per_rule: 100,
        }
    }
}

/// An event kept for a later decision.
#[derive(Debug, Clone)]
struct Ev {
    node: usize,
    seq: u64,
    wall: u64,
    ord: u64,
    loc: Location,
    text: String,
}

impl Ev {
    fn witness(&self) -> Witness {
        Witness {
            location: self.loc.clone(),
            value: serde_json::from_str(&self.text).unwrap_or(Value::Null),
        }
    }
}

/// A record (or part of one) kept as a witness.
#[derive(Debug, Clone)]
struct Kept {
    loc: Location,
    value: Value,
}

impl Kept {
    fn witness(&self) -> Witness {
        Witness {
            location: self.loc.clone(),
            value: self.value.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct NodeInfo {
    label: String,
    boots: u64,
    latest_boot_id: Option<String>,
    offsets: Vec<i64>,
    last_wall: Option<u64>,
    /// Gap names and field names that an `Error` event of the node mentions.
    mentioned: BTreeSet<String>,
}

#[derive(Debug, Default)]
struct Ctx {
    nodes: Vec<NodeInfo>,
    by_label: HashMap<String, usize>,
    manifest_run: Option<String>,
    finalized: bool,
    manifest_ids: HashMap<String, String>,
    ord: u64,
    /// (gap name, field key) of every gap-governed field of the contract.
    gap_fields: Vec<(&'static str, &'static str)>,
}

impl Ctx {
    fn node(&mut self, label: &str) -> usize {
        if let Some(&i) = self.by_label.get(label) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(NodeInfo {
            label: label.to_owned(),
            ..NodeInfo::default()
        });
        self.by_label.insert(label.to_owned(), i);
        i
    }

    fn offset(&self, node: usize) -> i64 {
        let mut o = self.nodes[node].offsets.clone();
        if o.is_empty() {
            return 0;
        }
        o.sort_unstable();
        o[o.len() / 2]
    }

    fn before(&self, a: &Ev, b: &Ev, offsets: &[i64]) -> bool {
        if a.node == b.node {
            (a.seq, a.ord) < (b.seq, b.ord)
        } else {
            i128::from(a.wall) + i128::from(offsets[a.node])
                <= i128::from(b.wall) + i128::from(offsets[b.node])
        }
    }
}

/// A struct instance of a snapshot block, kept while the block's rules run.
struct Found<'v> {
    type_name: &'static str,
    fields: &'static [FieldShape],
    obj: &'v serde_json::Map<String, Value>,
    ptr: String,
    gaps: Option<&'v [Value]>,
}

impl Found<'_> {
    fn declares(&self, gap: &str) -> bool {
        self.gaps
            .is_some_and(|g| g.iter().any(|v| v.as_str() == Some(gap)))
    }
}

/// Kept per emitting node and key (the values of the matched fields).
type Keyed<T> = BTreeMap<(usize, Vec<String>), T>;
/// The values of an event's matched fields, by field.
type Fields = BTreeMap<String, String>;
/// The first copy of each distinct value, with what kind of record held it.
type Copies = BTreeMap<String, (Kept, &'static str)>;
/// A dial: node, peer, attempt.
type DialKey = (usize, [u8; 32], u32);

/// One rule's running result.
#[derive(Debug)]
struct Eval {
    checked: u64,
    inconclusive: u64,
    total: u64,
    findings: Vec<Finding>,
    state: State,
}

#[derive(Debug)]
enum State {
    Stateless,
    NodeDirectory {
        /// Per node: distinct ids seen with the first record of each and how many records.
        ids: BTreeMap<usize, BTreeMap<String, (Kept, u64)>>,
        last: HashMap<usize, NodeId>,
    },
    ManifestRun {
        runs: BTreeMap<String, (Kept, u64)>,
    },
    Precedes {
        targets: Keyed<(Ev, Fields)>,
        needs: Vec<HashMap<(usize, Vec<String>), Ev>>,
        openers: Vec<Keyed<(Ev, Fields)>>,
        closers: Vec<HashMap<(usize, Vec<String>), Ev>>,
    },
    NotBefore {
        first: BTreeMap<Vec<String>, Vec<Ev>>,
        last: BTreeMap<(Vec<String>, usize, String), Ev>,
    },
    Count {
        keys: BTreeMap<Vec<String>, (u64, Vec<Ev>, Option<Ev>)>,
    },
    Monotonic {
        last: HashMap<usize, (u64, Location, String)>,
        restarts: Vec<(usize, Ev, Ev)>,
    },
    IrohVersion {
        /// Per node and boot sequence: version → first copy.
        groups: BTreeMap<(usize, u32), Copies>,
        events: BTreeMap<usize, BTreeMap<String, Kept>>,
    },
    SilentGap {
        candidates: BTreeMap<(usize, &'static str), (Kept, &'static str, &'static str, u64)>,
    },
}

#[derive(Debug, Default)]
struct Dials {
    starts: u64,
    /// Starts without an outcome yet, per node, peer and attempt; an outcome answers the most
    /// recent one (so a lost outcome leaves the start it belonged to open).
    open: HashMap<DialKey, VecDeque<(u64, Ev)>>,
}

/// The evaluator of one bundle.
#[derive(Debug)]
pub struct Checker<'c> {
    catalog: &'c Rulebook,
    opts: Options,
    source: String,
    archive: bool,
    reader_run: String,
    ctx: Ctx,
    evals: Vec<Eval>,
    value_tags: BTreeSet<&'static str>,
    dials: Option<Dials>,
    blocks: Vec<GapBlock>,
    need_blocks: bool,
    records: u64,
    unreadable: u64,
}

fn key_of(v: &Value, fields: &[String]) -> Vec<String> {
    fields
        .iter()
        .map(|f| v.get(f).map_or_else(|| "null".to_owned(), Value::to_string))
        .collect()
}

fn has_all(v: &Value, fields: &[String]) -> bool {
    fields
        .iter()
        .all(|f| v.get(f).is_some_and(|x| !x.is_null()))
}

fn present(obj: &serde_json::Map<String, Value>, key: &str) -> bool {
    obj.get(key).is_some_and(|v| !v.is_null())
}

/// Whether `text` names `word` as a whole identifier (not as part of a longer one).
fn names(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

impl<'c> Checker<'c> {
    /// A checker for the bundle read from `source` (`archive` when it is a `.tar.gz`), whose run
    /// directory is named `run_id`.
    pub fn new(
        catalog: &'c Rulebook,
        opts: Options,
        source: &str,
        archive: bool,
        run_id: &str,
    ) -> Self {
        let mut value_tags = BTreeSet::new();
        let mut need_dials = false;
        let mut need_blocks = false;
        let variants = event_variants();
        let tags_with = |pred: &dyn Fn(&FieldShape) -> bool| -> Vec<&'static str> {
            variants
                .iter()
                .filter(|(_, f)| f.iter().any(pred))
                .map(|(t, _)| *t)
                .collect()
        };
        let known_tag = |t: &str| variants.iter().find(|(v, _)| *v == t).map(|(v, _)| *v);
        let evals = catalog
            .rules
            .iter()
            .map(|rule| {
                let state = match &rule.check {
                    Check::ScopeFields(s) => {
                        let keys: Vec<&str> = s.scopes.iter().map(|s| s.key.as_str()).collect();
                        value_tags.extend(tags_with(&|f| keys.contains(&f.key)));
                        State::Stateless
                    }
                    Check::KnownValues(k) => {
                        value_tags.extend(tags_with(&|f| {
                            matches!(f.value, ValueShape::Ref(t) if k.types.iter().any(|n| n == t))
                        }));
                        State::Stateless
                    }
                    Check::ForbiddenValues(f) => {
                        value_tags.extend(known_tag(&f.event));
                        State::Stateless
                    }
                    Check::ManifestRun => {
                        value_tags.extend(tags_with(&|f| f.key == "run_id"));
                        State::ManifestRun {
                            runs: BTreeMap::new(),
                        }
                    }
                    Check::NodeDirectory => State::NodeDirectory {
                        ids: BTreeMap::new(),
                        last: HashMap::new(),
                    },
                    Check::Precedes(p) => {
                        value_tags.extend(known_tag(&p.event));
                        for n in &p.needs {
                            value_tags.extend(known_tag(&n.event));
                        }
                        for c in &p.completes {
                            value_tags.extend(known_tag(&c.opened_by));
                            value_tags.extend(known_tag(&c.closed_by));
                        }
                        State::Precedes {
                            targets: BTreeMap::new(),
                            needs: p.needs.iter().map(|_| HashMap::new()).collect(),
                            openers: p.completes.iter().map(|_| BTreeMap::new()).collect(),
                            closers: p.completes.iter().map(|_| HashMap::new()).collect(),
                        }
                    }
                    Check::NotBefore(n) => {
                        value_tags.extend(known_tag(&n.event));
                        for l in &n.later {
                            value_tags.extend(known_tag(l));
                        }
                        State::NotBefore {
                            first: BTreeMap::new(),
                            last: BTreeMap::new(),
                        }
                    }
                    Check::Count(c) => {
                        let per = c.per.clone();
                        value_tags.extend(
                            variants
                                .iter()
                                .filter(|(_, f)| per.iter().all(|p| f.iter().any(|x| x.key == p)))
                                .map(|(t, _)| *t),
                        );
                        State::Count {
                            keys: BTreeMap::new(),
                        }
                    }
                    Check::Monotonic(_) => State::Monotonic {
                        last: HashMap::new(),
                        restarts: Vec::new(),
                    },
                    Check::DialPairing(_) => {
                        need_dials = true;
                        State::Stateless
                    }
                    Check::IrohVersion => State::IrohVersion {
                        groups: BTreeMap::new(),
                        events: BTreeMap::new(),
                    },
                    Check::SourceImplies(_) | Check::GapContradicted => {
                        need_blocks = true;
                        State::Stateless
                    }
                    Check::SilentGap => {
                        need_blocks = true;
                        State::SilentGap {
                            candidates: BTreeMap::new(),
                        }
                    }
                    Check::Readable => State::Stateless,
                };
                Eval {
                    checked: 0,
                    inconclusive: 0,
                    total: 0,
                    findings: Vec::new(),
                    state,
                }
            })
            .collect();
        let mut gap_fields = Vec::new();
        for t in CONTRACT.types {
            if let diagwire::shape::TypeKind::Struct { fields, .. } = t.kind {
                for f in fields {
                    if let Some(g) = f.gap {
                        gap_fields.push((g, f.key));
                    }
                }
            }
        }
        Checker {
            catalog,
            opts,
            source: source.to_owned(),
            archive,
            reader_run: run_id.to_owned(),
            ctx: Ctx {
                gap_fields,
                ..Ctx::default()
            },
            evals,
            value_tags,
            dials: need_dials.then(Dials::default),
            blocks: blocks::gap_blocks(),
            need_blocks,
            records: 0,
            unreadable: 0,
        }
    }

    fn shown(&self, path: &str) -> String {
        if self.archive {
            format!("{}!{path}", self.source)
        } else {
            format!("{}/{path}", self.source)
        }
    }

    /// Takes a file or record that could not be read.
    pub fn problem(&mut self, p: &Problem) {
        self.unreadable += 1;
        for (i, rule) in self.catalog.rules.iter().enumerate() {
            if rule.check == Check::Readable {
                let f = Finding {
                    rule: rule.id.clone(),
                    level: rule.level,
                    location: p.location.clone(),
                    witness: Vec::new(),
                    message: format!("{} ({}), so no rule saw it", p.message, p.kind.as_str()),
                };
                push(&mut self.evals[i], f, self.opts);
            }
        }
    }

    /// Takes the next record of the walk.
    pub fn record(&mut self, item: &Item<'_>) {
        self.records += 1;
        self.ctx.ord += 1;
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            if rule.check == Check::Readable {
                eval.checked += 1;
            }
        }
        let file = self.shown(item.path);
        let node = item.node.map(|l| self.ctx.node(l));
        match item.record {
            Record::Manifest(m) => {
                self.ctx.manifest_run = Some(m.run_id.clone());
                self.ctx.finalized = m.finalize_received;
                for n in &m.nodes {
                    self.ctx
                        .manifest_ids
                        .insert(n.label.clone(), n.node_id_hex.0.clone());
                }
            }
            Record::Boot(identity) => {
                if let Some(node) = node {
                    let loc = Location::record(&file, item.index, "");
                    self.boot(node, identity, loc, item.role);
                }
            }
            Record::Snapshot(s) => {
                if let Some(node) = node {
                    self.snapshot(node, s, &file, item.index, item.text);
                }
            }
            Record::Event(e) => {
                if let Some(node) = node {
                    let loc = Location::record(&file, item.index, "");
                    self.event(node, e, loc, item.text);
                }
            }
            _ => {}
        }
    }

    fn boot(&mut self, node: usize, identity: &Identity, loc: Location, role: &Role) {
        let info = &mut self.ctx.nodes[node];
        info.boots += 1;
        if matches!(role, Role::Latest(FileKind::Boot)) {
            info.latest_boot_id = Some(identity.node_id_hex.0.clone());
        }
        let whole = || serde_json::to_value(identity).unwrap_or(Value::Null);
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            match (&rule.check, &mut eval.state) {
                (Check::NodeDirectory, State::NodeDirectory { ids, .. }) => {
                    eval.checked += 1;
                    note(
                        ids.entry(node).or_default(),
                        &identity.node_id_hex.0,
                        &loc,
                        "/node_id_hex",
                        || Value::String(identity.node_id_hex.0.clone()),
                    );
                }
                (Check::ManifestRun, State::ManifestRun { runs }) => {
                    eval.checked += 1;
                    note(runs, &identity.run_id, &loc, "/run_id", || {
                        Value::String(identity.run_id.clone())
                    });
                }
                (Check::IrohVersion, State::IrohVersion { groups, .. }) => {
                    if let Some(v) = &identity.iroh_version {
                        eval.checked += 1;
                        groups
                            .entry((node, identity.boot_sequence))
                            .or_default()
                            .entry(v.clone())
                            .or_insert_with(|| {
                                (
                                    Kept {
                                        loc: with_pointer(&loc, "/iroh_version"),
                                        value: whole(),
                                    },
                                    "boot record",
                                )
                            });
                    }
                }
                _ => {}
            }
        }
    }

    fn snapshot(&mut self, node: usize, s: &Snapshot, file: &str, index: usize, text: &str) {
        let loc = Location::record(file, index, "");
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            match (&rule.check, &mut eval.state) {
                (Check::NodeDirectory, State::NodeDirectory { ids, .. }) => {
                    eval.checked += 1;
                    note(
                        ids.entry(node).or_default(),
                        &s.identity.node_id_hex.0,
                        &loc,
                        "/identity/node_id_hex",
                        || Value::String(s.identity.node_id_hex.0.clone()),
                    );
                }
                (Check::ManifestRun, State::ManifestRun { runs }) => {
                    eval.checked += 2;
                    note(runs, &s.run_id, &loc, "/run_id", || {
                        Value::String(s.run_id.clone())
                    });
                    note(runs, &s.identity.run_id, &loc, "/identity/run_id", || {
                        Value::String(s.identity.run_id.clone())
                    });
                }
                (Check::IrohVersion, State::IrohVersion { groups, .. }) => {
                    let g = groups.entry((node, s.identity.boot_sequence)).or_default();
                    if let Some(v) = &s.identity.iroh_version {
                        eval.checked += 1;
                        g.entry(v.clone()).or_insert_with(|| {
                            (
                                Kept {
                                    loc: with_pointer(&loc, "/identity/iroh_version"),
                                    value: Value::String(v.clone()),
                                },
                                "snapshot identity",
                            )
                        });
                    }
                    if let Some(v) = s.body.iroh.as_ref().and_then(|i| i.iroh_version.as_ref()) {
                        eval.checked += 1;
                        g.entry(v.clone()).or_insert_with(|| {
                            (
                                Kept {
                                    loc: with_pointer(&loc, "/body/iroh/iroh_version"),
                                    value: Value::String(v.clone()),
                                },
                                "snapshot iroh block",
                            )
                        });
                    }
                }
                _ => {}
            }
        }
        if self.need_blocks {
            let values = block_values(&self.blocks, s, text);
            for (block, value) in &values {
                self.block(node, &loc, block, value);
            }
        }
    }

    fn block(&mut self, node: usize, loc: &Location, block: &GapBlock, value: &Value) {
        let mut found: Vec<Found<'_>> = Vec::new();
        blocks::instances(block.type_name, value, &mut |i| {
            found.push(Found {
                type_name: i.type_name,
                fields: i.fields,
                obj: i.obj,
                ptr: i.ptr.to_owned(),
                gaps: i.gaps,
            })
        });
        let base = format!("/body/{}", diagwire::shape::escape_pointer(block.key));
        let at = |ptr: &str| with_pointer(loc, &format!("{base}{ptr}"));
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            match &rule.check {
                Check::SourceImplies(si) => {
                    for inst in found.iter().filter(|i| i.type_name == si.type_name) {
                        eval.checked += 1;
                        let source = inst.obj.get(&si.source).and_then(Value::as_str);
                        let val = inst.obj.get(&si.field);
                        if source == Some(si.when.as_str())
                            && val.and_then(Value::as_str) != Some(si.must_be.as_str())
                        {
                            let shown = val.map_or_else(|| "absent".to_owned(), Value::to_string);
                            let f = finding(
                                rule,
                                at(&format!("{}/{}", inst.ptr, si.field)),
                                vec![Witness {
                                    location: at(&inst.ptr),
                                    value: Value::Object(inst.obj.clone()),
                                }],
                                source_implies_message(si, &shown),
                            );
                            push(eval, f, self.opts);
                        }
                    }
                }
                Check::GapContradicted => {
                    for inst in &found {
                        for f in inst.fields.iter() {
                            let (Some(gap), Some(src)) = (f.gap, f.source) else {
                                continue;
                            };
                            eval.checked += 1;
                            let said = inst.obj.get(src).and_then(Value::as_str);
                            if let Some(said) = said.filter(|s| {
                                inst.declares(gap)
                                    && present(inst.obj, f.key)
                                    && diagwire::REPORTED_SOURCES.contains(s)
                            }) {
                                let fnd = finding(
                                    rule,
                                    at(&format!("{}/{}", inst.ptr, f.key)),
                                    vec![
                                        Witness {
                                            location: at(&inst.ptr),
                                            value: Value::Object(inst.obj.clone()),
                                        },
                                        Witness {
                                            location: at(&format!("/{}", blocks::GAP_LIST)),
                                            value: value
                                                .get(blocks::GAP_LIST)
                                                .cloned()
                                                .unwrap_or(Value::Null),
                                        },
                                    ],
                                    format!(
                                        "`{}.{}` says it was reported natively (`{src}: {said}`) while the block's `api_gaps` declares `{gap}`, the gap that says it cannot be asked for",
                                        inst.type_name, f.key
                                    ),
                                );
                                push(eval, fnd, self.opts);
                            }
                        }
                    }
                }
                Check::SilentGap => {
                    let State::SilentGap { candidates } = &mut eval.state else {
                        continue;
                    };
                    let mut types: BTreeMap<&'static str, Vec<&Found<'_>>> = BTreeMap::new();
                    for inst in &found {
                        types.entry(inst.type_name).or_default().push(inst);
                    }
                    for (type_name, insts) in types {
                        for f in insts[0].fields.iter() {
                            let Some(gap) = f.gap else {
                                continue;
                            };
                            eval.checked += 1;
                            let all_absent = insts.iter().all(|i| !present(i.obj, f.key));
                            if all_absent && !insts[0].declares(gap) {
                                let first = insts[0];
                                let entry = candidates.entry((node, gap)).or_insert_with(|| {
                                    (
                                        Kept {
                                            loc: at(&first.ptr),
                                            value: Value::Object(first.obj.clone()),
                                        },
                                        type_name,
                                        f.key,
                                        0,
                                    )
                                });
                                entry.3 += 1;
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn event(&mut self, node: usize, e: &EventRecord, loc: Location, text: &str) {
        let ord = self.ctx.ord;
        {
            let info = &mut self.ctx.nodes[node];
            info.last_wall = Some(info.last_wall.map_or(e.wall_ms, |w| w.max(e.wall_ms)));
        }
        let mut custom_kind: Option<&str> = None;
        match &e.event {
            Event::Custom(c) => {
                custom_kind = Some(c.payload.tag());
                if let CustomPayload::ClockSample(cs) = &c.payload {
                    let o = (i128::from(cs.collector_recv_ms) - i128::from(cs.node_send_ms_echoed)
                        + i128::from(cs.collector_send_ms)
                        - i128::from(e.wall_ms))
                        / 2;
                    if let Ok(o) = i64::try_from(o) {
                        self.ctx.nodes[node].offsets.push(o);
                    }
                }
            }
            Event::Error(err) => {
                let gap_fields = self.ctx.gap_fields.clone();
                let info = &mut self.ctx.nodes[node];
                for (gap, key) in gap_fields {
                    if err.message.contains(gap) || names(&err.message, key) {
                        info.mentioned.insert(gap.to_owned());
                    }
                }
            }
            _ => {}
        }
        if let Some(d) = &mut self.dials {
            match &e.event {
                Event::DialStarted(s) => {
                    d.starts += 1;
                    d.open
                        .entry((node, s.peer.0, s.attempt))
                        .or_default()
                        .push_back((
                            s.timeout_ms,
                            Ev {
                                node,
                                seq: e.monotonic_seq,
                                wall: e.wall_ms,
                                ord,
                                loc: loc.clone(),
                                text: text.to_owned(),
                            },
                        ));
                }
                Event::DialOutcome(o) => {
                    let matched = d
                        .open
                        .get_mut(&(node, o.peer.0, o.attempt))
                        .and_then(VecDeque::pop_back)
                        .is_some();
                    for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
                        if let Check::DialPairing(p) = &rule.check {
                            if p.side == DialSide::Outcome {
                                eval.checked += 1;
                                if !matched {
                                    let f = finding(
                                        rule,
                                        loc.clone(),
                                        vec![Witness {
                                            location: loc.clone(),
                                            value: serde_json::from_str(text)
                                                .unwrap_or(Value::Null),
                                        }],
                                        format!(
                                            "`DialOutcome` of attempt {} to peer {} has no earlier unmatched `DialStarted` of the same node, peer and attempt",
                                            o.attempt,
                                            o.peer.short()
                                        ),
                                    );
                                    push(eval, f, self.opts);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let tag = e.event.tag();
        let value: Option<Value> = if self.value_tags.contains(tag) {
            serde_json::from_str(text).ok()
        } else {
            None
        };
        let ev = || Ev {
            node,
            seq: e.monotonic_seq,
            wall: e.wall_ms,
            ord,
            loc: loc.clone(),
            text: text.to_owned(),
        };
        let finalized_opts = self.opts;
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            let mut decreased = None;
            match (&rule.check, &mut eval.state) {
                (Check::Monotonic(m), State::Monotonic { last, restarts }) => {
                    if custom_kind.is_some_and(|k| m.except_custom_kinds.iter().any(|x| x == k)) {
                        continue;
                    }
                    let seq = e.monotonic_seq;
                    match last.get_mut(&node) {
                        None => {
                            last.insert(node, (seq, loc.clone(), text.to_owned()));
                        }
                        Some((prev, prev_loc, prev_text)) => {
                            eval.checked += 1;
                            if seq < *prev {
                                let before = Ev {
                                    node,
                                    seq: *prev,
                                    wall: 0,
                                    ord: 0,
                                    loc: prev_loc.clone(),
                                    text: prev_text.clone(),
                                };
                                if seq <= 1 {
                                    restarts.push((node, before, ev()));
                                } else {
                                    decreased = Some(finding(
                                        rule,
                                        loc.clone(),
                                        vec![before.witness(), ev().witness()],
                                        format!(
                                            "`monotonic_seq` goes back from {prev} to {seq} in the stream of node `{}`",
                                            self.ctx.nodes[node].label
                                        ),
                                    ));
                                }
                            }
                            *prev = seq;
                            prev_loc.clone_from(&loc);
                            prev_text.clear();
                            prev_text.push_str(text);
                        }
                    }
                }
                (Check::NodeDirectory, State::NodeDirectory { ids, last }) => {
                    eval.checked += 1;
                    if last.get(&node) != Some(&e.node_id) {
                        last.insert(node, e.node_id);
                        let hex = e.node_id.to_hex().0;
                        note(ids.entry(node).or_default(), &hex, &loc, "/node_id", || {
                            serde_json::from_str(text).unwrap_or(Value::Null)
                        });
                    }
                }
                (Check::IrohVersion, State::IrohVersion { events, .. }) => {
                    if let Event::Custom(c) = &e.event {
                        if let CustomPayload::IrohApiMissing(m) = &c.payload {
                            eval.checked += 1;
                            events
                                .entry(node)
                                .or_default()
                                .entry(m.iroh_version.clone())
                                .or_insert_with(|| Kept {
                                    loc: with_pointer(&loc, "/fields/iroh_version"),
                                    value: serde_json::from_str(text).unwrap_or(Value::Null),
                                });
                        }
                    }
                }
                _ => {}
            }
            if let Some(f) = decreased {
                push(eval, f, finalized_opts);
            }
            let Some(v) = &value else {
                continue;
            };
            match &rule.check {
                Check::ScopeFields(s) => scope_fields(rule, eval, s, v, &loc, finalized_opts),
                Check::KnownValues(k) => known_values(rule, eval, k, tag, v, &loc, finalized_opts),
                Check::ForbiddenValues(f) => {
                    forbidden_values(rule, eval, f, tag, v, &loc, finalized_opts)
                }
                _ => {}
            }
            match (&rule.check, &mut eval.state) {
                (Check::ManifestRun, State::ManifestRun { runs }) => {
                    if let Some(run) = v.get("run_id").and_then(Value::as_str) {
                        eval.checked += 1;
                        note(runs, run, &loc, "/run_id", || v.clone());
                    }
                }
                (Check::Precedes(p), st) => precedes_record(p, st, tag, v, ev),
                (Check::NotBefore(n), State::NotBefore { first, last }) => {
                    let key = key_of(v, &n.fields);
                    if tag == n.event {
                        let list = first.entry(key).or_default();
                        if !list.iter().any(|x| x.node == node) {
                            list.push(ev());
                        }
                    } else if n.later.iter().any(|l| l == tag) {
                        let e2 = ev();
                        let slot = last.entry((key, node, tag.to_owned())).or_insert_with(ev);
                        if (e2.seq, e2.ord) > (slot.seq, slot.ord) {
                            *slot = e2;
                        }
                    }
                }
                (Check::Count(c), State::Count { keys }) => {
                    if !has_all(v, &c.per) {
                        continue;
                    }
                    let counted = c.events.iter().any(|x| x == tag);
                    let entry = keys
                        .entry(key_of(v, &c.per))
                        .or_insert((0, Vec::new(), None));
                    if entry.2.is_none() {
                        entry.2 = Some(ev());
                    }
                    if counted {
                        entry.0 += 1;
                        let keep = c.max.map_or(1, |m| m.saturating_add(1)) as usize;
                        if entry.1.len() < keep {
                            entry.1.push(ev());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Decides what needs the whole stream and returns the report.
    pub fn finish(mut self) -> CheckReport {
        let offsets: Vec<i64> = (0..self.ctx.nodes.len())
            .map(|n| self.ctx.offset(n))
            .collect();
        let expected_run = self
            .ctx
            .manifest_run
            .clone()
            .unwrap_or_else(|| self.reader_run.clone());
        let opts = self.opts;
        for (rule, eval) in self.catalog.rules.iter().zip(&mut self.evals) {
            let state = std::mem::replace(&mut eval.state, State::Stateless);
            match (&rule.check, state) {
                (Check::NodeDirectory, State::NodeDirectory { ids, .. }) => {
                    for (node, seen) in ids {
                        let label = &self.ctx.nodes[node].label;
                        let reference = self
                            .ctx
                            .manifest_ids
                            .get(label)
                            .cloned()
                            .or_else(|| self.ctx.nodes[node].latest_boot_id.clone())
                            .or_else(|| seen.keys().next().cloned());
                        let Some(reference) = reference else {
                            continue;
                        };
                        for (id, (kept, n)) in &seen {
                            if *id == reference {
                                continue;
                            }
                            let f = finding(
                                rule,
                                kept.loc.clone(),
                                vec![kept.witness()],
                                format!(
                                    "{n} record(s) in directory `{label}` name node {}…, but the directory belongs to node {}…",
                                    short(id),
                                    short(&reference)
                                ),
                            );
                            push(eval, f, opts);
                        }
                    }
                }
                (Check::ManifestRun, State::ManifestRun { runs }) => {
                    for (run, (kept, n)) in runs {
                        if run == expected_run {
                            continue;
                        }
                        let f = finding(
                            rule,
                            kept.loc.clone(),
                            vec![kept.witness()],
                            format!(
                                "{n} record(s) name run `{run}`, but the bundle is run `{expected_run}`"
                            ),
                        );
                        push(eval, f, opts);
                    }
                }
                (
                    Check::Precedes(p),
                    State::Precedes {
                        targets,
                        needs,
                        openers,
                        closers,
                    },
                ) => precedes_finish(
                    rule, eval, p, &self.ctx, &offsets, targets, needs, openers, closers, opts,
                ),
                (Check::NotBefore(n), State::NotBefore { first, last }) => {
                    for (key, list) in &first {
                        let Some(t) = list.iter().min_by(|a, b| {
                            let ka = i128::from(a.wall) + i128::from(offsets[a.node]);
                            let kb = i128::from(b.wall) + i128::from(offsets[b.node]);
                            ka.cmp(&kb)
                        }) else {
                            continue;
                        };
                        eval.checked += 1;
                        for ((k, _, ltag), l) in last.range((key.clone(), 0, String::new())..) {
                            if k != key {
                                break;
                            }
                            if self.ctx.before(t, l, &offsets) && !self.ctx.before(l, t, &offsets) {
                                let f = finding(
                                    rule,
                                    l.loc.clone(),
                                    vec![t.witness(), l.witness()],
                                    format!(
                                        "`{ltag}` of {} comes after `{}` of the same {}, which says the teardown had finished",
                                        key_text(&n.fields, key),
                                        n.event,
                                        n.fields.join(", ")
                                    ),
                                );
                                push(eval, f, opts);
                            }
                        }
                    }
                }
                (Check::Count(c), State::Count { keys }) => {
                    let own = vec![Value::String(expected_run.clone()).to_string()];
                    let keys = if c.only_bundle_run {
                        keys.into_iter().filter(|(k, _)| *k == own).collect()
                    } else {
                        keys
                    };
                    count_finish(rule, eval, c, keys, self.ctx.finalized, opts)
                }
                (Check::Monotonic(_), State::Monotonic { restarts, .. }) => {
                    let mut used: HashMap<usize, u64> = HashMap::new();
                    for (node, before, after) in restarts {
                        let allowed = self.ctx.nodes[node].boots.saturating_sub(1);
                        let u = used.entry(node).or_default();
                        if *u < allowed {
                            *u += 1;
                            continue;
                        }
                        let f = finding(
                            rule,
                            after.loc.clone(),
                            vec![before.witness(), after.witness()],
                            format!(
                                "`monotonic_seq` restarts from {} at {} in the stream of node `{}`, which has only {} boot record(s) to explain a restart",
                                before.seq,
                                after.seq,
                                self.ctx.nodes[node].label,
                                self.ctx.nodes[node].boots
                            ),
                        );
                        push(eval, f, opts);
                    }
                }
                (Check::DialPairing(p), _) if p.side == DialSide::Start => {
                    let Some(d) = &self.dials else { continue };
                    let mut open: Vec<&(u64, Ev)> = d.open.values().flatten().collect();
                    open.sort_by_key(|(_, e)| e.ord);
                    eval.checked = d.starts;
                    for (timeout, start) in open {
                        let deadline = start
                            .wall
                            .saturating_add(*timeout)
                            .saturating_add(p.grace_ms);
                        let last = self.ctx.nodes[start.node].last_wall.unwrap_or(0);
                        if last > deadline {
                            let f = finding(
                                rule,
                                start.loc.clone(),
                                vec![start.witness()],
                                format!(
                                    "`DialStarted` has no `DialOutcome` of the same node, peer and attempt, although the node's stream goes on {} ms past the attempt's {timeout} ms budget",
                                    last - start.wall.saturating_add(*timeout)
                                ),
                            );
                            push(eval, f, opts);
                        } else {
                            eval.inconclusive += 1;
                        }
                    }
                }
                (Check::IrohVersion, State::IrohVersion { groups, events }) => {
                    iroh_finish(rule, eval, &self.ctx, groups, events, opts)
                }
                (Check::SilentGap, State::SilentGap { candidates }) => {
                    for ((node, gap), (kept, type_name, key, n)) in candidates {
                        if self.ctx.nodes[node].mentioned.contains(gap) {
                            continue;
                        }
                        let f = finding(
                            rule,
                            kept.loc.clone(),
                            vec![kept.witness()],
                            format!(
                                "in {n} snapshot(s) of `{}` no `{type_name}` has `{key}`, yet the block's `api_gaps` does not name `{gap}` and no `Error` event of the node notes the gap",
                                self.ctx.nodes[node].label
                            ),
                        );
                        push(eval, f, opts);
                    }
                }
                _ => {}
            }
        }
        // A dial rule counts the starts it saw even without an open one left.
        let report_rules = self
            .catalog
            .rules
            .iter()
            .zip(self.evals)
            .map(|(rule, eval)| RuleResult {
                id: rule.id.clone(),
                title: rule.title.clone(),
                scope: rule.scope.clone(),
                level: rule.level,
                checked: eval.checked,
                inconclusive: eval.inconclusive,
                findings_total: eval.total,
                findings: eval.findings,
            })
            .collect();
        CheckReport {
            bundle: self.source,
            run_id: expected_run,
            contract_version: CONTRACT.version.to_owned(),
            records: self.records,
            unreadable: self.unreadable,
            rules: report_rules,
        }
    }
}

fn short(id: &str) -> &str {
    id.get(..16).unwrap_or(id)
}

fn with_pointer(loc: &Location, ptr: &str) -> Location {
    let mut l = loc.clone();
    l.pointer = ptr.to_owned();
    l
}

fn note(
    map: &mut BTreeMap<String, (Kept, u64)>,
    key: &str,
    loc: &Location,
    ptr: &str,
    value: impl FnOnce() -> Value,
) {
    match map.get_mut(key) {
        Some((_, n)) => *n += 1,
        None => {
            map.insert(
                key.to_owned(),
                (
                    Kept {
                        loc: with_pointer(loc, ptr),
                        value: value(),
                    },
                    1,
                ),
            );
        }
    }
}

fn finding(rule: &Rule, location: Location, witness: Vec<Witness>, message: String) -> Finding {
    Finding {
        rule: rule.id.clone(),
        level: rule.level,
        location,
        witness,
        message,
    }
}

fn push(eval: &mut Eval, f: Finding, opts: Options) {
    eval.total += 1;
    if eval.findings.len() < opts.max_findings_per_rule {
        eval.findings.push(f);
    }
}

fn key_text(fields: &[String], key: &[String]) -> String {
    fields
        .iter()
        .zip(key)
        .map(|(f, k)| format!("{f} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn source_implies_message(si: &SourceImplies, shown: &str) -> String {
    format!(
        "`{}.{}` is {shown} with `{}: {}`, but a {} value must read `{}` so that an inference is not taken for an observation",
        si.type_name, si.field, si.source, si.when, si.when, si.must_be
    )
}

fn scope_fields(
    rule: &Rule,
    eval: &mut Eval,
    s: &ScopeFields,
    v: &Value,
    loc: &Location,
    opts: Options,
) {
    let has = |f: &str| v.get(f).is_some_and(|x| !x.is_null());
    let by_name: HashMap<&str, &crate::rulebook::Scope> =
        s.scopes.iter().map(|s| (s.scope.as_str(), s)).collect();
    if !s.scopes.iter().any(|sc| v.get(&sc.key).is_some()) {
        return;
    }
    eval.checked += 1;
    let mut missing: Vec<(String, String)> = Vec::new();
    for sc in s.scopes.iter().filter(|sc| has(&sc.key)) {
        let mut need: Vec<&str> = sc.requires.iter().map(String::as_str).collect();
        let mut stack: Vec<&str> = sc.within.iter().map(String::as_str).collect();
        let mut seen = BTreeSet::new();
        while let Some(w) = stack.pop() {
            if !seen.insert(w) {
                continue;
            }
            if let Some(outer) = by_name.get(w) {
                need.push(&outer.key);
                need.extend(outer.requires.iter().map(String::as_str));
                stack.extend(outer.within.iter().map(String::as_str));
            }
        }
        for f in need {
            if !has(f) && !missing.iter().any(|(m, _)| m == f) {
                missing.push((f.to_owned(), sc.scope.clone()));
            }
        }
    }
    if missing.is_empty() {
        return;
    }
    let tag = v.get("type").and_then(Value::as_str).unwrap_or("?");
    let list = missing
        .iter()
        .map(|(f, sc)| format!("`{f}` (for its {sc} scope)"))
        .collect::<Vec<_>>()
        .join(", ");
    let f = finding(
        rule,
        with_pointer(loc, &format!("/{}", missing[0].0)),
        vec![Witness {
            location: loc.clone(),
            value: v.clone(),
        }],
        format!("`{tag}` names a scope but lacks {list}"),
    );
    push(eval, f, opts);
}

fn known_values(
    rule: &Rule,
    eval: &mut Eval,
    k: &KnownValues,
    tag: &str,
    v: &Value,
    loc: &Location,
    opts: Options,
) {
    let Some(fields) = event_fields(tag) else {
        return;
    };
    for f in fields {
        let ValueShape::Ref(t) = f.value else {
            continue;
        };
        if !k.types.iter().any(|n| n == t) {
            continue;
        }
        let Some(diagwire::shape::TypeKind::Enum { values, .. }) = CONTRACT.get(t).map(|x| x.kind)
        else {
            continue;
        };
        let Some(val) = v.get(f.key).and_then(Value::as_str) else {
            continue;
        };
        eval.checked += 1;
        if !values.contains(&val) {
            let fnd = finding(
                rule,
                with_pointer(loc, &format!("/{}", f.key)),
                vec![Witness {
                    location: loc.clone(),
                    value: v.clone(),
                }],
                format!(
                    "`{tag}.{}` is `{val}`, which is not one of the contract's `{t}` values ({})",
                    f.key,
                    values.join(", ")
                ),
            );
            push(eval, fnd, opts);
        }
    }
}

fn forbidden_values(
    rule: &Rule,
    eval: &mut Eval,
    f: &ForbiddenValues,
    tag: &str,
    v: &Value,
    loc: &Location,
    opts: Options,
) {
    if tag != f.event {
        return;
    }
    eval.checked += 1;
    let Some(val) = v.get(&f.field).and_then(Value::as_str) else {
        return;
    };
    if f.values.iter().any(|x| x == val) {
        let fnd = finding(
            rule,
            with_pointer(loc, &format!("/{}", f.field)),
            vec![Witness {
                location: loc.clone(),
                value: v.clone(),
            }],
            format!(
                "`{tag}.{}` is `{val}`, which this event never holds (never: {})",
                f.field,
                f.values.join(", ")
            ),
        );
        push(eval, fnd, opts);
    }
}

fn fields_map(v: &Value, fields: &[&String]) -> BTreeMap<String, String> {
    fields
        .iter()
        .map(|f| {
            (
                (*f).clone(),
                v.get(f.as_str())
                    .map_or_else(|| "null".to_owned(), Value::to_string),
            )
        })
        .collect()
}

fn precedes_record(p: &Precedes, st: &mut State, tag: &str, v: &Value, ev: impl Fn() -> Ev) {
    let State::Precedes {
        targets,
        needs,
        openers,
        closers,
    } = st
    else {
        return;
    };
    let mut all: Vec<&String> = Vec::new();
    for n in &p.needs {
        all.extend(&n.fields);
    }
    for c in &p.completes {
        all.extend(&c.open_match);
    }
    if tag == p.event {
        let e = ev();
        let key = (
            e.node,
            key_of(v, &all.iter().map(|s| (*s).clone()).collect::<Vec<_>>()),
        );
        let replace = targets
            .get(&key)
            .is_none_or(|(old, _)| (e.seq, e.ord) < (old.seq, old.ord));
        if replace {
            targets.insert(key, (e, fields_map(v, &all)));
        }
    }
    for (i, n) in p.needs.iter().enumerate() {
        if tag == n.event {
            let e = ev();
            let key = (e.node, key_of(v, &n.fields));
            let replace = needs[i]
                .get(&key)
                .is_none_or(|old| (e.seq, e.ord) < (old.seq, old.ord));
            if replace {
                needs[i].insert(key, e);
            }
        }
    }
    for (i, c) in p.completes.iter().enumerate() {
        if tag == c.opened_by {
            let e = ev();
            let key = (e.node, key_of(v, &c.pair));
            let refs: Vec<&String> = c.open_match.iter().chain(&c.pair).collect();
            let replace = openers[i]
                .get(&key)
                .is_none_or(|(old, _)| (e.seq, e.ord) < (old.seq, old.ord));
            if replace {
                openers[i].insert(key, (e, fields_map(v, &refs)));
            }
        }
        if tag == c.closed_by {
            let e = ev();
            let key = (e.node, key_of(v, &c.pair));
            let replace = closers[i]
                .get(&key)
                .is_none_or(|old| (e.seq, e.ord) < (old.seq, old.ord));
            if replace {
                closers[i].insert(key, e);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn precedes_finish(
    rule: &Rule,
    eval: &mut Eval,
    p: &Precedes,
    ctx: &Ctx,
    offsets: &[i64],
    targets: Keyed<(Ev, Fields)>,
    needs: Vec<HashMap<(usize, Vec<String>), Ev>>,
    openers: Vec<Keyed<(Ev, Fields)>>,
    closers: Vec<HashMap<(usize, Vec<String>), Ev>>,
    opts: Options,
) {
    let mut ordered: Vec<&(Ev, BTreeMap<String, String>)> = targets.values().collect();
    ordered.sort_by_key(|(e, _)| e.ord);
    for (t, tf) in ordered {
        eval.checked += 1;
        for (i, n) in p.needs.iter().enumerate() {
            let want: Vec<String> = n
                .fields
                .iter()
                .map(|f| tf.get(f).cloned().unwrap_or_else(|| "null".into()))
                .collect();
            let candidates: Vec<&Ev> = needs[i]
                .iter()
                .filter(|((_, k), _)| *k == want)
                .map(|(_, e)| e)
                .collect();
            if candidates.iter().any(|c| ctx.before(c, t, offsets)) {
                continue;
            }
            let mut witness = vec![t.witness()];
            let later = candidates.iter().min_by_key(|c| c.ord);
            if let Some(l) = later {
                witness.push(l.witness());
            }
            let f = finding(
                rule,
                t.loc.clone(),
                witness,
                format!(
                    "`{}` of {} {} `{}` of the same {}",
                    p.event,
                    key_text(&n.fields, &want),
                    if later.is_some() {
                        "comes before the first"
                    } else {
                        "has no earlier"
                    },
                    n.event,
                    n.fields.join(", ")
                ),
            );
            push(eval, f, opts);
        }
        for (i, c) in p.completes.iter().enumerate() {
            let want: Vec<String> = c
                .open_match
                .iter()
                .map(|f| tf.get(f).cloned().unwrap_or_else(|| "null".into()))
                .collect();
            let mut opened: Vec<&(Ev, BTreeMap<String, String>)> = openers[i]
                .values()
                .filter(|(o, of)| {
                    c.open_match
                        .iter()
                        .zip(&want)
                        .all(|(f, w)| of.get(f) == Some(w))
                        && ctx.before(o, t, offsets)
                })
                .collect();
            opened.sort_by_key(|(o, _)| o.ord);
            for (o, of) in opened {
                let pair: Vec<String> = c
                    .pair
                    .iter()
                    .map(|f| of.get(f).cloned().unwrap_or_else(|| "null".into()))
                    .collect();
                let closer = closers[i].get(&(o.node, pair.clone()));
                if closer.is_some_and(|cl| ctx.before(cl, t, offsets)) {
                    continue;
                }
                let mut witness = vec![t.witness(), o.witness()];
                if let Some(cl) = closer {
                    witness.push(cl.witness());
                }
                let f = finding(
                    rule,
                    t.loc.clone(),
                    witness,
                    format!(
                        "`{}` of {} comes before `{}` of {} on the node that started it with `{}`",
                        p.event,
                        key_text(&c.open_match, &want),
                        c.closed_by,
                        key_text(&c.pair, &pair),
                        c.opened_by
                    ),
                );
                push(eval, f, opts);
            }
        }
    }
}

fn count_finish(
    rule: &Rule,
    eval: &mut Eval,
    c: &Count,
    keys: BTreeMap<Vec<String>, (u64, Vec<Ev>, Option<Ev>)>,
    finalized: bool,
    opts: Options,
) {
    if c.only_if_finalized && !finalized {
        return;
    }
    for (key, (n, kept, first)) in keys {
        eval.checked += 1;
        let names = c.events.join(", ");
        if let Some(max) = c.max {
            if n > max {
                let extra = kept.last().map_or_else(
                    || first.as_ref().map(|f| f.loc.clone()).unwrap_or_default(),
                    |e| e.loc.clone(),
                );
                let f = finding(
                    rule,
                    extra,
                    kept.iter().map(Ev::witness).collect(),
                    format!(
                        "{} has {n} events of {names}, at most {max} allowed",
                        key_text(&c.per, &key)
                    ),
                );
                push(eval, f, opts);
            }
        }
        if let Some(min) = c.min {
            if n < min {
                let Some(first) = first else { continue };
                let f = finding(
                    rule,
                    first.loc.clone(),
                    vec![first.witness()],
                    format!(
                        "{} has {n} events of {names} (at least {min} needed){}",
                        key_text(&c.per, &key),
                        if c.only_if_finalized {
                            ", although the bundle was finalized"
                        } else {
                            ""
                        }
                    ),
                );
                push(eval, f, opts);
            }
        }
    }
}

fn iroh_finish(
    rule: &Rule,
    eval: &mut Eval,
    ctx: &Ctx,
    groups: BTreeMap<(usize, u32), Copies>,
    events: BTreeMap<usize, BTreeMap<String, Kept>>,
    opts: Options,
) {
    let mut versions: BTreeMap<usize, BTreeMap<String, Kept>> = BTreeMap::new();
    for ((node, boot), copies) in &groups {
        for (v, (k, _)) in copies {
            versions
                .entry(*node)
                .or_default()
                .entry(v.clone())
                .or_insert_with(|| k.clone());
        }
        if copies.len() > 1 {
            let mut all: Vec<(&String, &(Kept, &str))> = copies.iter().collect();
            all.sort_by_key(|(_, (k, _))| (k.loc.file.clone(), k.loc.pointer.clone()));
            let list = all
                .iter()
                .map(|(v, (_, what))| format!("`{v}` ({what})"))
                .collect::<Vec<_>>()
                .join(", ");
            let f = finding(
                rule,
                all[1].1.0.loc.clone(),
                all.iter().map(|(_, (k, _))| k.witness()).collect(),
                format!(
                    "boot sequence {boot} of node `{}` reports iroh versions {list}",
                    ctx.nodes[*node].label
                ),
            );
            push(eval, f, opts);
        }
    }
    for (node, copies) in events {
        let known = versions.get(&node);
        for (v, kept) in copies {
            let Some(known) = known else { continue };
            if known.contains_key(&v) {
                continue;
            }
            let mut witness = vec![kept.witness()];
            witness.extend(known.values().next().map(Kept::witness));
            let f = finding(
                rule,
                kept.loc.clone(),
                witness,
                format!(
                    "`iroh_api_missing` of node `{}` reports iroh version `{v}`, but its boot records and snapshots report {}",
                    ctx.nodes[node].label,
                    known
                        .keys()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            push(eval, f, opts);
        }
    }
}

/// The JSON value of every gap-owning block a snapshot has, by block.
fn block_values(blocks: &[GapBlock], s: &Snapshot, text: &str) -> Vec<(GapBlock, Value)> {
    let mut out = Vec::new();
    let mut parsed: Option<Value> = None;
    for b in blocks {
        let typed = match b.key {
            "iroh" => Some(s.body.iroh.as_ref().map(serde_json::to_value)),
            "app" => Some(s.body.app.as_ref().map(serde_json::to_value)),
            "actors" => Some(s.body.actors.as_ref().map(serde_json::to_value)),
            _ => None,
        };
        match typed {
            Some(Some(Ok(v))) => out.push((*b, v)),
            Some(_) => {}
            None => {
                // A block this evaluator has no typed path to: read it from the text.
                let whole =
                    parsed.get_or_insert_with(|| serde_json::from_str(text).unwrap_or(Value::Null));
                if let Some(v) = whole.get("body").and_then(|b2| b2.get(b.key)) {
                    out.push((*b, v.clone()));
                }
            }
        }
    }
    out
}

/// Whether every gap-owning snapshot block has a typed path in this evaluator (a test keeps the
/// hand-written list in step with the shape table).
pub fn typed_blocks_cover_contract() -> bool {
    blocks::gap_blocks()
        .iter()
        .all(|b| matches!(b.key, "iroh" | "app" | "actors"))
}
