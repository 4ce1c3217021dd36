//! Coverage and absence statistics: which record kinds, event types and fields of the contract a
//! bundle holds, per node role, and for every optional field how often it was present, `null` or
//! left out, and for every field with an absence discriminator how often it was reported, derived,
//! unavailable because of a declared gap ("could not ask") or not observed.
//!
//! Every record is walked with the contract's shape table (`diagwire::v1::CONTRACT.types`), so the
//! statistics follow the schemas: a field is counted on the struct type that declares it
//! (`IrohPeer.latency_ms`), the gap list that applies to a field is the `api_gaps` of the nearest
//! enclosing struct that has one, and provenance is decided by `diagwire::Provenance::resolve`, the
//! function behind the generated `*_provenance` accessors.
//!
//! This module collects a coverage in one pass ([`Coverage::record`]); [`compare`] (in
//! `compare.rs`) sets two coverages side by side.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use diagwire::Provenance;
use diagwire::bundle::records::Item;
use diagwire::layout::{FileKind, Role};
use diagwire::shape::{FieldShape, Presence, TypeKind};
use diagwire::v1::{CONTRACT, Event, Record, RecordKind};
use diagwire::view::{Instance, Slot};

mod compare;
mod worker;

pub use compare::{DiffKind, Difference, Mode, Thresholds, compare, differences_markdown};

/// Counts of one field over the instances of its type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldStats {
    /// Present with a value.
    pub present: u64,
    /// Written as `null`.
    pub null: u64,
    /// Left out.
    pub absent: u64,
    /// Present and reported natively (fields with an absence discriminator).
    pub reported: u64,
    /// Present and derived.
    pub derived: u64,
    /// Absent, and the applicable `api_gaps` names the field's gap: could not ask.
    pub api_gap: u64,
    /// Absent without a declared gap: not observed.
    pub not_observed: u64,
    /// The paired source field says `unavailable`: could not ask, whatever value is written beside
    /// it.
    pub source_unavailable: u64,
}

impl FieldStats {
    fn add(&mut self, o: &FieldStats) {
        self.present += o.present;
        self.null += o.null;
        self.absent += o.absent;
        self.reported += o.reported;
        self.derived += o.derived;
        self.api_gap += o.api_gap;
        self.not_observed += o.not_observed;
        self.source_unavailable += o.source_unavailable;
    }

    /// The provenance mix: reported, derived, could not ask (a declared gap or a source that says
    /// `unavailable`), not observed.
    pub fn mix(&self) -> [u64; 4] {
        [
            self.reported,
            self.derived,
            self.api_gap + self.source_unavailable,
            self.not_observed,
        ]
    }
}

/// Counts of one struct type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeStats {
    /// How many instances were seen.
    pub instances: u64,
    /// Per field, in the order of the shape table.
    pub fields: Vec<FieldStats>,
}

/// What one node role's records hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoleCoverage {
    /// The node directories of the role.
    pub nodes: BTreeSet<String>,
    /// Records per kind.
    pub record_kinds: BTreeMap<String, u64>,
    /// Events per known type.
    pub event_types: BTreeMap<String, u64>,
    /// Events of types the contract does not know.
    pub unknown_event_types: BTreeMap<String, u64>,
    /// `Custom` events per kind.
    pub custom_kinds: BTreeMap<String, u64>,
    /// Struct types seen.
    pub types: BTreeMap<&'static str, TypeStats>,
    /// Keys the contract does not know, as `kind:/pointer` with array indices as `*`.
    pub unknown_keys: BTreeMap<String, u64>,
}

/// The most distinct unknown keys kept per role.
const MAX_UNKNOWN_KEYS: usize = 200;

impl RoleCoverage {
    fn merge(&mut self, o: RoleCoverage) {
        self.nodes.extend(o.nodes);
        for (k, v) in o.record_kinds {
            *self.record_kinds.entry(k).or_default() += v;
        }
        for (k, v) in o.event_types {
            *self.event_types.entry(k).or_default() += v;
        }
        for (k, v) in o.unknown_event_types {
            *self.unknown_event_types.entry(k).or_default() += v;
        }
        for (k, v) in o.custom_kinds {
            *self.custom_kinds.entry(k).or_default() += v;
        }
        for (k, v) in o.types {
            let t = self.types.entry(k).or_default();
            t.instances += v.instances;
            if t.fields.len() < v.fields.len() {
                t.fields.resize(v.fields.len(), FieldStats::default());
            }
            for (a, b) in t.fields.iter_mut().zip(&v.fields) {
                a.add(b);
            }
        }
        for (k, v) in o.unknown_keys {
            if self.unknown_keys.len() < MAX_UNKNOWN_KEYS || self.unknown_keys.contains_key(&k) {
                *self.unknown_keys.entry(k).or_default() += v;
            }
        }
    }

    /// The counts of `Type.field`, if its type was seen.
    pub fn field(&self, type_name: &str, key: &str) -> Option<(u64, FieldStats)> {
        let t = self.types.get(type_name)?;
        let i = struct_fields(type_name)?
            .iter()
            .position(|f| f.key == key)?;
        Some((t.instances, t.fields.get(i).copied().unwrap_or_default()))
    }
}

/// How much of the contract a bundle covers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContractCoverage {
    /// Fields of the struct types a bundle can hold.
    pub fields_total: u64,
    /// Of those, the ones present (with a value) at least once.
    pub fields_seen: u64,
    /// Event types of the contract.
    pub event_types_total: u64,
    /// Of those, the ones seen.
    pub event_types_seen: u64,
    /// Event types never seen.
    pub unseen_event_types: Vec<String>,
    /// Fields never present, as `Type.field`.
    pub unseen_fields: Vec<String>,
}

impl ContractCoverage {
    /// The share of fields seen, in percent.
    pub fn percent(&self) -> f64 {
        if self.fields_total == 0 {
            return 0.0;
        }
        100.0 * self.fields_seen as f64 / self.fields_total as f64
    }
}

/// The coverage and absence statistics of one bundle.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    /// The bundle as given.
    pub bundle: String,
    /// The contract version of the shape table.
    pub contract_version: String,
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read.
    pub unreadable: u64,
    /// Per node role (the boot record's `role`, else the manifest's, else `unknown`).
    pub roles: BTreeMap<String, RoleCoverage>,
    /// Coverage of the contract as a whole.
    pub contract: ContractCoverage,
    labels: BTreeMap<String, RoleCoverage>,
    boot_roles: BTreeMap<String, String>,
    manifest_roles: BTreeMap<String, String>,
    worker: Scratch,
}

/// The reading of records' JSON, on its own thread ([`worker`]); not part of what a coverage says
/// (a clone starts without it, and it never makes two coverages differ).
#[derive(Debug, Default)]
struct Scratch(worker::Worker);

impl Clone for Scratch {
    fn clone(&self) -> Self {
        Scratch::default()
    }
}

impl PartialEq for Scratch {
    fn eq(&self, _: &Scratch) -> bool {
        true
    }
}

/// The fields of a struct type.
pub fn struct_fields(type_name: &str) -> Option<&'static [FieldShape]> {
    match CONTRACT.get(type_name)?.kind {
        TypeKind::Struct { fields, .. } => Some(fields),
        _ => None,
    }
}

pub(crate) fn is_tracked(f: &FieldShape) -> bool {
    f.source.is_some() || f.gap.is_some() || f.presence != Presence::Required
}

pub(crate) fn has_provenance(f: &FieldShape) -> bool {
    f.source.is_some() || f.gap.is_some()
}

/// The record kinds a bundle's layout holds.
pub const BUNDLE_KINDS: &[RecordKind] = &[
    RecordKind::Boot,
    RecordKind::Event,
    RecordKind::Snapshot,
    RecordKind::Finalize,
    RecordKind::Manifest,
    RecordKind::Vastai,
];

/// Counts one more `key`, allocating its name only the first time.
fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}

fn normalize_pointer(ptr: &str) -> String {
    ptr.split('/')
        .map(|s| {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl Coverage {
    /// An empty coverage of the bundle read from `source`.
    pub fn new(source: &str) -> Self {
        Coverage {
            bundle: source.to_owned(),
            contract_version: CONTRACT.version.to_owned(),
            ..Coverage::default()
        }
    }

    /// Counts a file or record that could not be read.
    pub fn problem(&mut self) {
        self.unreadable += 1;
    }
}

impl diagwire::bundle::records::Consumer for Coverage {
    fn record(&mut self, item: &Item<'_>) {
        Coverage::record(self, item)
    }
    fn problem(&mut self, _: &diagwire::Problem) {
        Coverage::problem(self)
    }
}

impl Coverage {
    /// Takes the next record of the walk. Its kind and event type are counted here; its JSON is
    /// read as a [`tape::Tape`] (no value is built) on the coverage's own thread ([`worker`]), so
    /// the statistics are complete once [`Coverage::finish`] returns.
    pub fn record(&mut self, item: &Item<'_>) {
        let kind_name = self.record_kinds(item);
        self.worker
            .0
            .record(item.node.unwrap_or(""), kind_name, item.text);
    }

    /// Counts a record's kind, event type and node; gives its kind's name.
    fn record_kinds(&mut self, item: &Item<'_>) -> &'static str {
        self.records += 1;
        let kind = item.record.kind();
        let label = item.node.unwrap_or("");
        match item.record {
            Record::Manifest(m) => {
                for n in &m.nodes {
                    if let Some(r) = &n.role {
                        self.manifest_roles.insert(n.label.clone(), r.clone());
                    }
                }
            }
            Record::Boot(b)
                if matches!(item.role, Role::Latest(FileKind::Boot))
                    || !self.boot_roles.contains_key(label) =>
            {
                self.boot_roles.insert(label.to_owned(), b.role.clone());
            }
            _ => {}
        }
        let role = match self.labels.get_mut(label) {
            Some(r) => r,
            None => self.labels.entry(label.to_owned()).or_default(),
        };
        if !label.is_empty() && !role.nodes.contains(label) {
            role.nodes.insert(label.to_owned());
        }
        bump(&mut role.record_kinds, kind.as_str());
        if let Record::Event(e) = item.record {
            match &e.event {
                Event::Other(o) => bump(&mut role.unknown_event_types, &o.tag),
                ev => {
                    bump(&mut role.event_types, ev.tag());
                    if let Event::Custom(c) = ev {
                        bump(&mut role.custom_kinds, c.payload.tag());
                    }
                }
            }
        }
        kind.as_str()
    }

    /// Groups the node directories by role and computes the contract coverage.
    pub fn finish(mut self) -> Coverage {
        let mut labels = std::mem::take(&mut self.labels);
        for (label, found) in std::mem::take(&mut self.worker.0).finish() {
            labels.entry(label).or_default().merge(found);
        }
        for (label, cov) in labels {
            let role = if label.is_empty() {
                "(bundle)".to_owned()
            } else {
                self.boot_roles
                    .get(&label)
                    .or_else(|| self.manifest_roles.get(&label))
                    .cloned()
                    .unwrap_or_else(|| "unknown".to_owned())
            };
            self.roles.entry(role).or_default().merge(cov);
        }
        self.contract = contract_coverage(&self.roles);
        self
    }

    /// The coverage as Markdown: kinds and event types per role, then the absence tables.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let c = &self.contract;
        let _ = writeln!(s, "## Coverage of the contract\n");
        let _ = writeln!(
            s,
            "{} of {} fields ({:.1}%) and {} of {} event types of contract {} seen in {} record(s){}.\n",
            c.fields_seen,
            c.fields_total,
            c.percent(),
            c.event_types_seen,
            c.event_types_total,
            diagwire::problem::printable(&self.contract_version),
            self.records,
            if self.unreadable > 0 {
                format!(" ({} unreadable)", self.unreadable)
            } else {
                String::new()
            }
        );
        let roles: Vec<&String> = self.roles.keys().collect();
        let _ = writeln!(
            s,
            "| record kind / event type | {} |",
            roles
                .iter()
                .map(|r| format!("{} ({})", cell(r), self.roles[*r].nodes.len()))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(s, "|---|{}", "---:|".repeat(roles.len()));
        let kinds: BTreeSet<&String> = self
            .roles
            .values()
            .flat_map(|r| r.record_kinds.keys())
            .collect();
        for k in kinds {
            let cells: Vec<String> = roles
                .iter()
                .map(|r| {
                    self.roles[*r]
                        .record_kinds
                        .get(k)
                        .copied()
                        .unwrap_or(0)
                        .to_string()
                })
                .collect();
            let _ = writeln!(s, "| **{}** | {} |", cell(k), cells.join(" | "));
        }
        let types: BTreeSet<&String> = self
            .roles
            .values()
            .flat_map(|r| r.event_types.keys().chain(r.unknown_event_types.keys()))
            .collect();
        for t in types {
            let cells: Vec<String> = roles
                .iter()
                .map(|r| {
                    let rc = &self.roles[*r];
                    rc.event_types
                        .get(t)
                        .or_else(|| rc.unknown_event_types.get(t))
                        .copied()
                        .unwrap_or(0)
                        .to_string()
                })
                .collect();
            let unknown = self
                .roles
                .values()
                .any(|r| r.unknown_event_types.contains_key(t));
            let _ = writeln!(
                s,
                "| {}{} | {} |",
                cell(t),
                if unknown {
                    " (not in the contract)"
                } else {
                    ""
                },
                cells.join(" | ")
            );
        }
        if !c.unseen_event_types.is_empty() {
            let _ = writeln!(
                s,
                "\nEvent types never seen: {}.",
                c.unseen_event_types.join(", ")
            );
        }
        let _ = writeln!(s, "\n## Absence\n");
        let _ = writeln!(
            s,
            "Fields with an absence discriminator: how each value was obtained, or why it is absent.\n"
        );
        let _ = writeln!(
            s,
            "| role | field | instances | reported | derived | could not ask (gap) | could not ask (source) | not observed |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
        for (role, r) in &self.roles {
            for (t, st) in &r.types {
                for (f, fs) in struct_fields(t).unwrap_or(&[]).iter().zip(&st.fields) {
                    if has_provenance(f) {
                        let _ = writeln!(
                            s,
                            "| {role} | `{t}.{}` | {} | {} | {} | {} | {} | {} |",
                            f.key,
                            st.instances,
                            fs.reported,
                            fs.derived,
                            fs.api_gap,
                            fs.source_unavailable,
                            fs.not_observed
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            s,
            "\nOptional fields (no discriminator): how often each was present, `null` or left out.\n"
        );
        let _ = writeln!(
            s,
            "| role | field | presence | instances | present | null | absent | present % |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|---:|---:|");
        for (role, r) in &self.roles {
            for (t, st) in &r.types {
                for (f, fs) in struct_fields(t).unwrap_or(&[]).iter().zip(&st.fields) {
                    if is_tracked(f) && !has_provenance(f) {
                        let _ = writeln!(
                            s,
                            "| {role} | `{t}.{}` | {} | {} | {} | {} | {} | {:.1} |",
                            f.key,
                            f.presence.name(),
                            st.instances,
                            fs.present,
                            fs.null,
                            fs.absent,
                            if st.instances == 0 {
                                0.0
                            } else {
                                100.0 * fs.present as f64 / st.instances as f64
                            }
                        );
                    }
                }
            }
        }
        let unknown: BTreeMap<&String, u64> = self
            .roles
            .values()
            .flat_map(|r| r.unknown_keys.iter())
            .fold(BTreeMap::new(), |mut m, (k, v)| {
                *m.entry(k).or_default() += v;
                m
            });
        if !unknown.is_empty() {
            let _ = writeln!(
                s,
                "\nKeys the contract does not know (kept by the types):\n"
            );
            for (k, v) in unknown {
                let _ = writeln!(s, "* `{}`: {v}", diagwire::problem::printable(k));
            }
        }
        s
    }
}

/// A value from the bundle (a role, an event type) in a Markdown table cell: escaped, its `|`
/// too, so it can neither reach the terminal raw nor add a column.
fn cell(s: &str) -> String {
    diagwire::problem::printable(s).replace('|', "\\|")
}

/// Counts one struct instance of a record of `kind_name` into its role's statistics.
fn count(role: &mut RoleCoverage, kind_name: &str, inst: &Instance<'_, '_, '_>) {
    let t = role.types.entry(inst.type_name).or_default();
    t.instances += 1;
    let fields = inst.fields;
    if t.fields.len() < fields.len() {
        t.fields.resize(fields.len(), FieldStats::default());
    }
    for (i, (f, s)) in fields.iter().zip(t.fields.iter_mut()).enumerate() {
        let slot = inst.slot(i);
        match slot {
            Slot::Absent => s.absent += 1,
            Slot::Null => s.null += 1,
            Slot::Present => s.present += 1,
        }
        if has_provenance(f) {
            let has = slot == Slot::Present;
            let source = f.source.and_then(|k| inst.str_of(k));
            let gap = f.gap.map(|g| (g, inst.declares(g)));
            match Provenance::resolve(has.then_some(()), source.as_deref(), gap) {
                Provenance::Reported(()) => s.reported += 1,
                Provenance::Derived(()) => s.derived += 1,
                Provenance::Unavailable(diagwire::Unavailable::ApiGap(_)) => s.api_gap += 1,
                Provenance::Unavailable(diagwire::Unavailable::NotObserved) => s.not_observed += 1,
                Provenance::Unavailable(diagwire::Unavailable::SourceUnavailable) => {
                    s.source_unavailable += 1
                }
            }
        }
    }
    for k in inst.unknown_keys() {
        let key = format!(
            "{kind_name}:{}/{}",
            normalize_pointer(&inst.ptr()),
            diagwire_runtime::shape::escape_pointer_token(&k)
        );
        if role.unknown_keys.len() < MAX_UNKNOWN_KEYS || role.unknown_keys.contains_key(&key) {
            *role.unknown_keys.entry(key).or_default() += 1;
        }
    }
}

fn contract_coverage(roles: &BTreeMap<String, RoleCoverage>) -> ContractCoverage {
    let mut reachable = BTreeSet::new();
    let mut stack: Vec<&'static str> = BUNDLE_KINDS
        .iter()
        .filter_map(|k| CONTRACT.record(k.as_str()).map(|r| r.def))
        .collect();
    while let Some(t) = stack.pop() {
        if !reachable.insert(t) {
            continue;
        }
        let Some(shape) = CONTRACT.get(t) else {
            continue;
        };
        let mut refs = Vec::new();
        diagwire::shape::type_refs(shape, &mut refs);
        stack.extend(refs);
    }
    let mut out = ContractCoverage::default();
    for t in &reachable {
        let Some(fields) = struct_fields(t) else {
            continue;
        };
        for (i, f) in fields.iter().enumerate() {
            out.fields_total += 1;
            let seen = roles.values().any(|r| {
                r.types
                    .get(t)
                    .and_then(|s| s.fields.get(i))
                    .is_some_and(|c| c.present > 0)
            });
            if seen {
                out.fields_seen += 1;
            } else {
                out.unseen_fields.push(format!("{t}.{}", f.key));
            }
        }
    }
    if let Some(TypeKind::Union { variants, .. }) = CONTRACT.get("Event").map(|t| t.kind) {
        for v in variants {
            out.event_types_total += 1;
            if roles.values().any(|r| r.event_types.contains_key(v.tag)) {
                out.event_types_seen += 1;
            } else {
                out.unseen_event_types.push(v.tag.to_owned());
            }
        }
    }
    out
}
