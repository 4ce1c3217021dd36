//! The evaluators of the rule book, one per file, and the one-pass [`driver`] that feeds them.
//!
//! Every kind of rule (`check` in the rule file) is one [`Evaluator`]: it is given the stream's
//! records one at a time, as [`Input`]s, keeps only per-node and per-key state, and at the end of
//! the stream decides what needs the whole of it. What every evaluator may read of the stream so
//! far (nodes, clock samples, the manifest) is the driver's [`Stream`]; what one rule has found so
//! far is its [`Tally`]. Records are never buffered, so the same evaluators can follow a stream
//! that has no end yet.

use std::borrow::Cow;
use std::fmt;

use diagwire::shape::FieldShape;
use diagwire::v1::{EventRecord, Identity, Snapshot};
use diagwire::{Location, Problem};
use serde_json::Value;

use crate::blocks::GapBlock;
use crate::rulebook::{Check, Rule, event_variants};
use crate::verdict::{Finding, Witness};
use diagwire::view::Tape;

mod count;
mod dial_pairing;
pub mod driver;
mod fields;
mod forbidden_values;
mod gap_contradicted;
mod iroh_version;
mod kept;
mod key;
mod known_values;
mod manifest_run;
mod monotonic;
mod node_directory;
mod not_before;
mod precedes;
mod readable;
mod scope_fields;
mod silent_gap;
mod source_implies;
mod stream;

pub use driver::{Checker, Options, typed_blocks_cover_contract};
pub(crate) use fields::Fields;
pub(crate) use kept::{Ev, Kept, note, with_pointer};
pub(crate) use key::Key;
pub use stream::Nodes;
pub(crate) use stream::{Clocks, Stream};

/// One kind of rule, evaluated over a stream of records.
pub(crate) trait Evaluator: fmt::Debug {
    /// What of the records the evaluator reads beyond their typed form.
    fn reads(&self) -> Reads {
        Reads::default()
    }

    /// Takes the next input.
    fn take(&mut self, input: &Input<'_>, stream: &Stream, out: &mut Tally<'_>);

    /// Whether it has something to decide once the watermark passes it ([`Evaluator::advance`]).
    fn waiting(&self) -> bool {
        false
    }

    /// Decides what no record still to come can change: every event still to come from the run's
    /// nodes has an aligned time after `watermark` (see [`stream`]).
    fn advance(&mut self, _watermark: i128, _stream: &Stream, _out: &mut Tally<'_>) {}

    /// Decides, once the stream has ended, what needs the whole of it.
    fn finish(self: Box<Self>, _end: &End<'_>, _out: &mut Tally<'_>) {}
}

/// What of the records an evaluator reads beyond their typed form.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    /// The event types whose JSON value it reads ([`EventIn::value`]).
    pub event_values: Vec<&'static str>,
    /// Whether it reads the gap-owning blocks of snapshots ([`Input::Block`]).
    pub blocks: bool,
    /// The struct types whose instances it reads in those blocks ([`BlockIn::found`]): the
    /// others are not looked for.
    pub block_types: Vec<&'static str>,
}

/// One input of an evaluator, in stream order.
#[derive(Debug)]
pub(crate) enum Input<'a> {
    /// A file or record that could not be read.
    Problem(&'a Problem),
    /// Problems the bundle's validation found beyond those it kept (its caps).
    Omitted(u64),
    /// A record of any kind (before its kind's own input, if any).
    Record,
    /// A boot record of a node.
    Boot {
        /// The node.
        node: usize,
        /// The record.
        identity: &'a Identity,
        /// Where it is.
        loc: &'a Location,
    },
    /// A snapshot of a node (before its blocks).
    Snapshot {
        /// The node.
        node: usize,
        /// The record.
        snapshot: &'a Snapshot,
        /// Where it is.
        loc: &'a Location,
    },
    /// A gap-owning block of a snapshot.
    Block(&'a BlockIn<'a>),
    /// An event of a node.
    Event(&'a EventIn<'a>),
}

/// An event as the evaluators see it.
#[derive(Debug)]
pub(crate) struct EventIn<'a> {
    /// The node.
    pub node: usize,
    /// The record.
    pub record: &'a EventRecord,
    /// Where it is.
    pub loc: &'a Location,
    /// Its JSON text.
    pub text: &'a str,
    /// Its place in the stream.
    pub ord: u64,
    /// Its event type.
    pub tag: &'a str,
    /// The kind of a `Custom` event.
    pub custom_kind: Option<&'a str>,
    /// Its fields, when an evaluator reads this event type's values.
    pub value: Option<&'a Fields<'a>>,
}

impl EventIn<'_> {
    /// The event, kept.
    pub fn ev(&self) -> Ev {
        Ev {
            node: self.node,
            seq: self.record.monotonic_seq,
            wall: self.record.wall_ms,
            ord: self.ord,
            loc: self.loc.clone(),
            text: self.text.to_owned(),
        }
    }

    /// The event as a witness.
    pub fn witness(&self) -> Witness {
        Witness {
            location: self.loc.clone(),
            value: serde_json::from_str(self.text).unwrap_or(Value::Null),
        }
    }
}

/// A struct instance of a snapshot block, read from the block's tape.
#[derive(Debug)]
pub(crate) struct Found<'t> {
    /// Its type.
    pub type_name: &'static str,
    /// Its fields.
    pub fields: &'static [FieldShape],
    /// Its pointer inside the block.
    pub ptr: String,
    /// The block's tape.
    pub tape: &'t Tape<'t>,
    /// Its object in the tape.
    pub obj: usize,
    /// The value of each field (by the field's index), if the object has it.
    pub slots: Vec<Option<usize>>,
    /// The gap list that applies to it, when it is an array.
    pub gaps: Option<usize>,
}

impl<'t> Found<'t> {
    fn value_of(&self, key: &str) -> Option<usize> {
        match self.fields.iter().position(|f| f.key == key) {
            Some(i) => self.slots.get(i).copied().flatten(),
            None => self.tape.get(self.obj, key),
        }
    }

    /// Whether the gap list names `gap`.
    pub fn declares(&self, gap: &str) -> bool {
        self.gaps.is_some_and(|g| {
            self.tape
                .elements(g)
                .any(|v| self.tape.as_str(v).as_deref() == Some(gap))
        })
    }

    /// Whether the object has `key`, not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.value_of(key).is_some_and(|v| !self.tape.is_null(v))
    }

    /// The string under `key`, if it is one.
    pub fn str_of(&self, key: &str) -> Option<Cow<'t, str>> {
        self.tape.as_str(self.value_of(key)?)
    }
}

/// A gap-owning block of a snapshot, with the struct instances of the types the evaluators read
/// ([`Reads::block_types`]), in the order of the block.
#[derive(Debug)]
pub(crate) struct BlockIn<'a> {
    /// The node.
    pub node: usize,
    /// The snapshot's location.
    pub loc: &'a Location,
    /// The block.
    pub block: &'a GapBlock,
    /// Its JSON text (the typed block as it serializes).
    pub json: &'a str,
    /// Its struct instances of the types read.
    pub found: &'a [Found<'a>],
}

impl BlockIn<'_> {
    /// The location of `ptr` inside the block.
    pub fn at(&self, ptr: &str) -> Location {
        with_pointer(
            self.loc,
            &format!(
                "/body/{}{ptr}",
                diagwire_runtime::shape::escape_pointer_token(self.block.key)
            ),
        )
    }

    /// The value at `ptr` inside the block (`null` if there is none), built only for a witness.
    pub fn value_at(&self, ptr: &str) -> Value {
        serde_json::from_str::<Value>(self.json)
            .ok()
            .and_then(|v| v.pointer(ptr).cloned())
            .unwrap_or(Value::Null)
    }
}

/// What the evaluators know once the stream has ended.
#[derive(Debug)]
pub(crate) struct End<'a> {
    /// The stream's facts.
    pub stream: &'a Stream,
    /// Its aligned clocks.
    pub clocks: Clocks,
    /// The run the bundle is: the manifest's, or the run directory's name without one.
    pub run: String,
}

/// One rule's running result.
#[derive(Debug)]
pub(crate) struct Tally<'r> {
    rule: &'r Rule,
    max_findings: usize,
    /// How many times the rule was checked.
    pub checked: u64,
    /// How many times it could not be decided.
    pub inconclusive: u64,
    /// Findings, counted.
    pub total: u64,
    /// Findings, kept.
    pub findings: Vec<Finding>,
    /// How many of the kept findings were handed on as decided.
    pub shown: usize,
}

impl<'r> Tally<'r> {
    /// An empty tally of `rule`, keeping at most `max_findings`.
    pub fn new(rule: &'r Rule, max_findings: usize) -> Self {
        Tally {
            rule,
            max_findings,
            checked: 0,
            inconclusive: 0,
            total: 0,
            findings: Vec::new(),
            shown: 0,
        }
    }

    /// The rule.
    pub fn rule(&self) -> &'r Rule {
        self.rule
    }

    /// Records a finding of the rule.
    pub fn find(&mut self, location: Location, witness: Vec<Witness>, message: String) {
        self.total += 1;
        if self.findings.len() < self.max_findings {
            self.findings.push(Finding {
                rule: self.rule.id.clone(),
                level: self.rule.level,
                location,
                witness,
                message,
            });
        }
    }
}

/// The evaluator of `rule`.
pub(crate) fn for_rule(rule: &Rule) -> Box<dyn Evaluator> {
    match &rule.check {
        Check::Readable => Box::new(readable::Readable),
        Check::ScopeFields(p) => Box::new(scope_fields::ScopeFieldsEval::new(p)),
        Check::NodeDirectory => Box::new(node_directory::NodeDirectory::default()),
        Check::ManifestRun => Box::new(manifest_run::ManifestRun::default()),
        Check::KnownValues(p) => Box::new(known_values::KnownValuesEval::new(p)),
        Check::ForbiddenValues(p) => Box::new(forbidden_values::ForbiddenValuesEval::new(p)),
        Check::Precedes(p) => Box::new(precedes::PrecedesEval::new(p)),
        Check::NotBefore(p) => Box::new(not_before::NotBeforeEval::new(p)),
        Check::Count(p) => Box::new(count::CountEval::new(p)),
        Check::Monotonic(p) => Box::new(monotonic::MonotonicEval::new(p)),
        Check::DialPairing(p) => Box::new(dial_pairing::DialPairingEval::new(p)),
        Check::SourceImplies(p) => Box::new(source_implies::SourceImpliesEval::new(p)),
        Check::IrohVersion => Box::new(iroh_version::IrohVersion::default()),
        Check::GapContradicted => Box::new(gap_contradicted::GapContradicted),
        Check::SilentGap => Box::new(silent_gap::SilentGap::default()),
    }
}

/// The struct types of the contract that have a field matching `pred`.
pub(crate) fn types_with(pred: impl Fn(&FieldShape) -> bool) -> Vec<&'static str> {
    diagwire::v1::CONTRACT
        .types
        .iter()
        .filter(|t| match t.kind {
            diagwire::shape::TypeKind::Struct { fields, .. } => fields.iter().any(&pred),
            _ => false,
        })
        .map(|t| t.name)
        .collect()
}

/// The event types that have a field matching `pred`.
pub(crate) fn tags_with(pred: impl Fn(&FieldShape) -> bool) -> Vec<&'static str> {
    event_variants()
        .iter()
        .filter(|(_, f)| f.iter().any(&pred))
        .map(|(t, _)| *t)
        .collect()
}

/// The contract's spelling of event type `t`, if it has one.
pub(crate) fn known_tag(t: &str) -> Option<&'static str> {
    event_variants()
        .iter()
        .find(|(v, _)| *v == t)
        .map(|(v, _)| *v)
}
