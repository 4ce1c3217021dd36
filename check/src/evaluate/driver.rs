//! The one-pass driver: [`Checker`] takes the records of a bundle one at a time, in the order
//! `diagwire::bundle::records::walk` yields them, learns what every evaluator may read of the
//! stream (nodes, clock samples, the manifest), hands each record to every rule's evaluator, and at
//! the end asks each to decide what needs the whole stream and returns the report.

use std::collections::BTreeSet;

use diagwire::bundle::records::Item;
use diagwire::layout::{FileKind, Role};
use diagwire::v1::{CONTRACT, CustomPayload, Event, EventRecord, Record, Snapshot};
use diagwire::{Location, Problem};
use serde_json::Value;

use super::{BlockIn, End, Evaluator, EventIn, Found, Input, Stream, Tally, for_rule};
use crate::blocks::{self, GapBlock};
use crate::rulebook::Rulebook;
use crate::verdict::{CheckReport, RuleResult};

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
    records: u64,
    unreadable: u64,
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
        let mut value_tags = BTreeSet::new();
        let mut need_blocks = false;
        let rules = rulebook
            .rules
            .iter()
            .map(|rule| {
                let eval = for_rule(rule);
                let reads = eval.reads();
                value_tags.extend(reads.event_values);
                need_blocks |= reads.blocks;
                (eval, Tally::new(rule, opts.max_findings_per_rule))
            })
            .collect();
        Checker {
            source: source.to_owned(),
            archive,
            reader_run: run_id.to_owned(),
            stream: Stream::new(),
            rules,
            value_tags,
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

    /// Takes the next record of the walk.
    pub fn record(&mut self, item: &Item<'_>) {
        self.records += 1;
        self.stream.ord += 1;
        self.give(&Input::Record);
        let file = self.shown(item.path);
        let node = item.node.map(|l| self.stream.node(l));
        let loc = Location::record(&file, item.index, "");
        match (item.record, node) {
            (Record::Manifest(m), _) => {
                self.stream.manifest_run = Some(m.run_id.clone());
                self.stream.finalized = m.finalize_received;
                for n in &m.nodes {
                    self.stream
                        .manifest_ids
                        .insert(n.label.clone(), n.node_id_hex.0.clone());
                }
            }
            (Record::Boot(identity), Some(node)) => {
                let info = &mut self.stream.nodes[node];
                info.boots += 1;
                if matches!(item.role, Role::Latest(FileKind::Boot)) {
                    info.latest_boot_id = Some(identity.node_id_hex.0.clone());
                }
                self.give(&Input::Boot {
                    node,
                    identity,
                    loc: &loc,
                });
            }
            (Record::Snapshot(s), Some(node)) => self.snapshot(node, s, &loc, item.text),
            (Record::Event(e), Some(node)) => self.event(node, e, &loc, item.text),
            _ => {}
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
        for (block, value) in &block_values(&self.blocks, s, text) {
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
            self.give(&Input::Block(&BlockIn {
                node,
                loc,
                block,
                value,
                found: &found,
            }));
        }
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
                        info.offsets.push(o);
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
        let value: Option<Value> = if self.value_tags.contains(tag) {
            serde_json::from_str(text).ok()
        } else {
            None
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

/// Whether `text` names `word` as a whole identifier (not as part of a longer one).
fn names(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
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
                // A block this driver has no typed path to: read it from the text.
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
}
