//! The one-pass driver: [`Checker`] takes records one at a time — from a bundle walk
//! (`diagwire::bundle::records::walk_into`) or from any other source through [`Checker::take`] —
//! learns what every evaluator may read of the stream (nodes, clock samples, the manifest), hands
//! each record to every rule's evaluator, moves the watermark on (so that a rule decides as soon as
//! the stream makes it certain), hands on what was decided ([`Checker::decided`]), and at the end
//! asks each rule to decide what needs the whole stream and returns the report.
//!
//! What the evaluators read beyond the typed records is read without a `serde_json::Value`: an
//! event's fields as a tape of its text ([`super::Fields`]), a gap-owning snapshot block as a tape
//! of the typed block's JSON, walked only for the struct types the evaluators read
//! ([`super::Reads::block_types`]). A value is built only for a witness.

use std::collections::BTreeSet;

use diagwire::bundle::records::Item;
use diagwire::layout::{FileKind, Role};
use diagwire::shape::ValueShape;
use diagwire::v1::{
    CONTRACT, CustomPayload, Event, EventRecord, Finalize, Identity, Manifest, Record, Snapshot,
};
use diagwire::view::{Buffer, Only, Shapes, Tape};
use diagwire::{Location, Problem};
use serde_json::Value;

use super::{
    BlockIn, End, Evaluator, EventIn, Fields, Found, Input, Nodes, Stream, Tally, for_rule,
};
use crate::blocks::{self, GapBlock};
use crate::rulebook::Rulebook;
use crate::verdict::{CheckReport, Finding, RuleResult};

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

/// The evaluator of one bundle.
#[derive(Debug)]
pub struct Checker<'c> {
    source: String,
    archive: bool,
    reader_run: String,
    stream: Stream,
    rules: Vec<(Box<dyn Evaluator>, Tally<'c>)>,
    value_tags: BTreeSet<&'static str>,
    blocks: Vec<GapBlock>,
    need_blocks: bool,
    /// The struct instances of the blocks that some evaluator reads.
    block_only: Only,
    /// The JSON text of the snapshot block being read, and the buffer of the tapes of blocks and
    /// events (both reused).
    block_json: Vec<u8>,
    tape_buffer: Buffer,
    records: u64,
    unreadable: u64,
    /// The watermark the evaluators last decided at.
    watermark: Option<i128>,
    /// The path of the file the walk's last record came from, and that record's location.
    file_path: Option<String>,
    file_loc: Location,
}

/// A record of a kind the rules read, borrowed.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum RecordRef<'a> {
    /// The run's manifest.
    Manifest(&'a Manifest),
    /// A boot record.
    Boot(&'a Identity),
    /// A snapshot.
    Snapshot(&'a Snapshot),
    /// One event.
    Event(&'a EventRecord),
    /// A batch of one node's events, in order.
    Events(&'a [EventRecord]),
    /// The record that closes the run (without a manifest, it says the run was finalized).
    Finalize(&'a Finalize),
    /// A record of another kind (vast.ai, …): counted, not read by a rule.
    Other,
}

impl<'a> From<&'a Record> for RecordRef<'a> {
    fn from(r: &'a Record) -> Self {
        match r {
            Record::Manifest(m) => RecordRef::Manifest(m),
            Record::Boot(b) => RecordRef::Boot(b),
            Record::Snapshot(s) => RecordRef::Snapshot(s),
            Record::Event(e) => RecordRef::Event(e),
            Record::EventBatch(b) => RecordRef::Events(b),
            Record::Finalize(f) => RecordRef::Finalize(f),
            _ => RecordRef::Other,
        }
    }
}

/// A record to check, from any source.
#[derive(Debug)]
pub struct Fed<'a> {
    /// The node it came from (its directory label in a bundle, its id in a collector's staging);
    /// `None` for a run-wide record (the manifest).
    pub node: Option<&'a str>,
    /// The record.
    pub record: RecordRef<'a>,
    /// Its JSON text when the source has it (else it is written from the record where needed).
    pub text: Option<&'a str>,
    /// Where it is.
    pub location: Location,
}

impl<'c> Checker<'c> {
    /// A checker for the bundle read from `source` (`archive` when it is a `.tar.gz`), whose run
    /// directory is named `run_id`.
    pub fn new(
        rulebook: &'c Rulebook,
        opts: Options,
        source: &str,
        archive: bool,
        run_id: &str,
    ) -> Self {
        Self::with_nodes(rulebook, opts, source, archive, run_id, Nodes::Manifest)
    }

    /// Like [`Checker::new`], learning the run's node set as `nodes` says.
    pub fn with_nodes(
        rulebook: &'c Rulebook,
        opts: Options,
        source: &str,
        archive: bool,
        run_id: &str,
        nodes: Nodes,
    ) -> Self {
        let mut value_tags = BTreeSet::new();
        let mut need_blocks = false;
        let mut block_types = BTreeSet::new();
        let rules = rulebook
            .rules
            .iter()
            .map(|rule| {
                let eval = for_rule(rule);
                let reads = eval.reads();
                value_tags.extend(reads.event_values);
                need_blocks |= reads.blocks;
                block_types.extend(reads.block_types);
                (eval, Tally::new(rule, opts.max_findings_per_rule))
            })
            .collect();
        Checker {
            source: source.to_owned(),
            archive,
            reader_run: run_id.to_owned(),
            stream: Stream::with_nodes(nodes),
            rules,
            value_tags,
            blocks: blocks::gap_blocks(),
            need_blocks,
            block_only: Shapes::of(&CONTRACT).only(block_types),
            block_json: Vec::new(),
            tape_buffer: Buffer::default(),
            records: 0,
            unreadable: 0,
            watermark: None,
            file_path: None,
            file_loc: Location::default(),
        }
    }

    fn shown(&self, path: &str) -> String {
        if self.archive {
            format!("{}!{path}", self.source)
        } else {
            format!("{}/{path}", self.source)
        }
    }

    fn give(&mut self, input: &Input<'_>) {
        for (eval, tally) in &mut self.rules {
            eval.take(input, &self.stream, tally);
        }
    }

    /// Takes a file or record that could not be read.
    pub fn problem(&mut self, p: &Problem) {
        self.unreadable += 1;
        self.give(&Input::Problem(p));
    }

    /// Takes the count of problems the bundle's validation found and did not keep (each is a
    /// finding of `bundle.readable`, counted without being listed).
    pub fn omitted(&mut self, problems: u64) {
        self.unreadable += problems;
        self.give(&Input::Omitted(problems));
    }

    /// Takes the next record of the walk.
    pub fn record(&mut self, item: &Item<'_>) {
        // The records of a file share its location, but for their index.
        let mut loc = std::mem::take(&mut self.file_loc);
        if self.file_path.as_deref() != Some(item.path) {
            self.file_path = Some(item.path.to_owned());
            loc = Location::record(self.shown(item.path), 0, "");
        }
        loc.record = Some(item.index);
        let latest_boot = matches!(item.role, Role::Latest(FileKind::Boot));
        let fed = Fed {
            node: item.node,
            record: item.record.into(),
            text: Some(item.text),
            location: Location::default(),
        };
        self.take_record(&fed, &loc, latest_boot);
        self.file_loc = loc;
    }

    /// Takes the next record from any source; a node's latest boot record is the last one taken.
    pub fn take(&mut self, fed: &Fed<'_>) {
        self.take_record(fed, &fed.location, true);
    }

    /// Takes `fed`, which is at `loc` (not `fed.location`).
    fn take_record(&mut self, fed: &Fed<'_>, loc: &Location, latest_boot: bool) {
        self.records += 1;
        self.stream.ord += 1;
        self.give(&Input::Record);
        let node = fed.node.map(|l| self.stream.node(l));
        match (fed.record, node) {
            (RecordRef::Manifest(m), _) => {
                self.stream.manifest_run = Some(m.run_id.clone());
                self.stream.finalized = m.finalize_received;
                for n in &m.nodes {
                    self.stream
                        .manifest_ids
                        .insert(n.label.clone(), n.node_id_hex.0.clone());
                }
                self.stream
                    .manifest_nodes(m.nodes.iter().map(|n| n.label.as_str()));
                self.advance();
            }
            (RecordRef::Boot(identity), Some(node)) => {
                let info = &mut self.stream.nodes[node];
                info.boots += 1;
                if latest_boot {
                    info.latest_boot_id = Some(identity.node_id_hex.0.clone());
                }
                self.give(&Input::Boot {
                    node,
                    identity,
                    loc,
                });
            }
            // A bundle's manifest says whether the run was finalized; a live run says it with
            // the finalize record itself.
            (RecordRef::Finalize(_), _) if self.stream.manifest_run.is_none() => {
                self.stream.finalized = true;
            }
            (RecordRef::Snapshot(s), Some(node)) => {
                let text = fed.text.unwrap_or("");
                self.snapshot(node, s, loc, text);
            }
            (RecordRef::Event(e), Some(node)) => {
                let owned;
                let text = match fed.text {
                    Some(t) => t,
                    None => {
                        owned = serde_json::to_string(e).unwrap_or_default();
                        &owned
                    }
                };
                self.event(node, e, loc, text);
                self.advance();
            }
            (RecordRef::Events(batch), Some(node)) => {
                for (i, e) in batch.iter().enumerate() {
                    let text = serde_json::to_string(e).unwrap_or_default();
                    let mut at = loc.clone();
                    at.record = Some(loc.record.unwrap_or(0) + i);
                    if i > 0 {
                        self.records += 1;
                        self.stream.ord += 1;
                        self.give(&Input::Record);
                    }
                    self.event(node, e, &at, &text);
                    self.advance();
                }
            }
            _ => {}
        }
    }

    /// Lets every waiting rule decide what the watermark, if it moved, makes certain.
    fn advance(&mut self) {
        if !self.rules.iter().any(|(e, _)| e.waiting()) {
            return;
        }
        let Some(wm) = self.stream.watermark() else {
            return;
        };
        if self.watermark.is_some_and(|w| w >= wm) {
            return;
        }
        self.watermark = Some(wm);
        for (eval, tally) in &mut self.rules {
            if eval.waiting() {
                eval.advance(wm, &self.stream, tally);
            }
        }
    }

    /// The findings decided since the last call, in the order they were decided, rule by rule.
    /// A finding handed on here is never taken back: the final report has it too.
    pub fn decided(&mut self) -> Vec<Finding> {
        let mut out = Vec::new();
        for (_, tally) in &mut self.rules {
            out.extend(tally.findings[tally.shown..].iter().cloned());
            tally.shown = tally.findings.len();
        }
        out
    }

    /// How far the check is: records taken, rules with a violation so far, findings so far.
    pub fn progress(&self) -> Progress {
        Progress {
            records: self.records,
            rules: self.rules.len(),
            rules_failed: self
                .rules
                .iter()
                .filter(|(_, t)| t.total > 0 && t.rule().level == crate::rulebook::Level::Violation)
                .count(),
            findings: self.rules.iter().map(|(_, t)| t.total).sum(),
        }
    }

    fn snapshot(&mut self, node: usize, s: &Snapshot, loc: &Location, text: &str) {
        self.give(&Input::Snapshot {
            node,
            snapshot: s,
            loc,
        });
        if !self.need_blocks {
            return;
        }
        let blocks = std::mem::take(&mut self.blocks);
        let mut json = std::mem::take(&mut self.block_json);
        let mut buffer = std::mem::take(&mut self.tape_buffer);
        let mut parsed: Option<Value> = None;
        for block in &blocks {
            json.clear();
            if !block_json(block, s, text, &mut parsed, &mut json) {
                continue;
            }
            // What serde_json writes is JSON the tape reads (it refuses only nesting deeper than
            // any record the readers take).
            let Ok(utf8) = std::str::from_utf8(&json) else {
                continue;
            };
            let tape = match Tape::read(utf8, buffer) {
                Ok(t) => t,
                Err(b) => {
                    buffer = b;
                    continue;
                }
            };
            let mut found: Vec<Found<'_>> = Vec::new();
            let shape = ValueShape::Ref(block.type_name);
            self.block_only.instances(&shape, &tape, &mut |i| {
                found.push(Found {
                    type_name: i.type_name,
                    fields: i.fields,
                    ptr: i.ptr(),
                    tape: &tape,
                    obj: i.object(),
                    slots: (0..i.fields.len()).map(|f| i.value_of(f)).collect(),
                    gaps: i.gap_list(),
                })
            });
            self.give(&Input::Block(&BlockIn {
                node,
                loc,
                block,
                json: utf8,
                found: &found,
            }));
            drop(found);
            buffer = tape.into_buffer();
        }
        self.blocks = blocks;
        self.block_json = json;
        self.tape_buffer = buffer;
    }

    fn event(&mut self, node: usize, e: &EventRecord, loc: &Location, text: &str) {
        let info = &mut self.stream.nodes[node];
        info.last_wall = Some(info.last_wall.map_or(e.wall_ms, |w| w.max(e.wall_ms)));
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
                        self.stream.add_offset(node, o);
                    }
                }
            }
            Event::Error(err) => {
                for (gap, key) in &self.stream.gap_fields {
                    if err.message.contains(gap) || names(&err.message, key) {
                        self.stream.nodes[node].mentioned.insert((*gap).to_owned());
                    }
                }
            }
            _ => {}
        }
        let tag = e.event.tag();
        let buffer = std::mem::take(&mut self.tape_buffer);
        let value = match self.value_tags.contains(tag) {
            true => Fields::read(text, buffer),
            false => Err(buffer),
        };
        let value = match value {
            Ok(v) => Some(v),
            Err(b) => {
                self.tape_buffer = b;
                None
            }
        };
        self.give(&Input::Event(&EventIn {
            node,
            record: e,
            loc,
            text,
            ord: self.stream.ord,
            tag,
            custom_kind,
            value: value.as_ref(),
        }));
        if let Some(v) = value {
            self.tape_buffer = v.into_buffer();
        }
    }

    /// Decides what needs the whole stream and returns the report.
    pub fn finish(self) -> CheckReport {
        let end = End {
            stream: &self.stream,
            clocks: super::Clocks::of(&self.stream),
            run: self
                .stream
                .manifest_run
                .clone()
                .unwrap_or_else(|| self.reader_run.clone()),
        };
        let rules = self
            .rules
            .into_iter()
            .map(|(eval, mut tally)| {
                eval.finish(&end, &mut tally);
                let rule = tally.rule();
                RuleResult {
                    id: rule.id.clone(),
                    title: rule.title.clone(),
                    scope: rule.scope.clone(),
                    level: rule.level,
                    checked: tally.checked,
                    inconclusive: tally.inconclusive,
                    findings_total: tally.total,
                    findings: tally.findings,
                }
            })
            .collect();
        CheckReport {
            bundle: self.source,
            run_id: end.run,
            contract_version: CONTRACT.version.to_owned(),
            records: self.records,
            unreadable: self.unreadable,
            rules,
        }
    }
}

/// How far a check is (for a live status line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Records taken.
    pub records: u64,
    /// Rules in the rule book.
    pub rules: usize,
    /// Rules at level `violation` with a finding so far (decided: a finding is never taken back).
    pub rules_failed: usize,
    /// Findings so far, of every rule.
    pub findings: u64,
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

/// Writes the JSON text of `block` of snapshot `s` into `out`: the typed block as it serializes,
/// or (for a block this driver has no typed path to) the block as the record's text has it.
/// False when the snapshot has no such block.
fn block_json(
    block: &GapBlock,
    s: &Snapshot,
    text: &str,
    parsed: &mut Option<Value>,
    out: &mut Vec<u8>,
) -> bool {
    let written = match block.key {
        "iroh" => s
            .body
            .iroh
            .as_ref()
            .map(|v| serde_json::to_writer(&mut *out, v)),
        "app" => s
            .body
            .app
            .as_ref()
            .map(|v| serde_json::to_writer(&mut *out, v)),
        "actors" => s
            .body
            .actors
            .as_ref()
            .map(|v| serde_json::to_writer(&mut *out, v)),
        _ => {
            let whole =
                parsed.get_or_insert_with(|| serde_json::from_str(text).unwrap_or(Value::Null));
            whole
                .get("body")
                .and_then(|b| b.get(block.key))
                .map(|v| serde_json::to_writer(&mut *out, v))
        }
    };
    matches!(written, Some(Ok(())))
}

/// Whether every gap-owning snapshot block has a typed path in this driver (a test keeps the
/// hand-written list in step with the shape table).
pub fn typed_blocks_cover_contract() -> bool {
    blocks::gap_blocks()
        .iter()
        .all(|b| matches!(b.key, "iroh" | "app" | "actors"))
}

impl diagwire::bundle::records::Consumer for Checker<'_> {
    fn record(&mut self, item: &Item<'_>) {
        Checker::record(self, item)
    }
    fn problem(&mut self, problem: &Problem) {
        Checker::problem(self, problem)
    }
    fn omitted(&mut self, problems: usize) {
        Checker::omitted(self, problems as u64)
    }
}
