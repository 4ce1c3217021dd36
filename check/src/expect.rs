//! Assertions for swactor's tests, in the contract's terms: a run passed every rule (or one), a
//! node's lifecycle holds steps in order, a fault with a reason and a component was emitted, the
//! events of every scope carry their identity fields. They take the generated enums
//! ([`EventType`], [`FaultReason`], [`FaultComponent`]), never strings, and depend on no log text,
//! transport, storage or batching: a [`Verdict`] comes from a [`crate::Monitor`] fed the run's
//! records however they travelled.
//!
//! Each `expect_*` panics with the rule, its minimal witness and why (readable in a `cargo test`
//! failure); each `check_*` returns the same text as an error instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use diagwire::problem::printable;
use diagwire::shape::ValueShape;
use diagwire::v1::{EventRecord, EventType, FaultComponent, FaultReason};

use crate::rulebook::{Level, event_variants};
use crate::verdict::{CheckReport, RuleResult};

/// The id of the rule that holds events to the identity fields of their scopes.
const SCOPE_FIELDS: &str = "identity.scope_fields";

/// A fault event as a test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The node that emitted it.
    pub node: String,
    /// Its event type.
    pub event: EventType,
    /// Why it happened.
    pub reason: FaultReason,
    /// Which component detected it.
    pub component: FaultComponent,
}

/// What a monitor saw of each node, for assertions: its event types in order and its faults.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    steps: BTreeMap<String, Vec<EventType>>,
    faults: Vec<Fault>,
    /// Per event type with a fault reason and component: their keys.
    fault_keys: Option<BTreeMap<&'static str, (&'static str, &'static str)>>,
}

impl Trace {
    /// Notes one event of `node`.
    pub fn event(&mut self, node: &str, e: &EventRecord) {
        let event = e.event.type_of();
        let keys = self.fault_keys.get_or_insert_with(fault_keys);
        if let Some((reason_key, component_key)) = keys.get(e.event.tag()) {
            let value = serde_json::to_value(&e.event).unwrap_or_default();
            let text = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or("");
            if let (Some(reason), Some(component)) = (
                FaultReason::from_wire(text(reason_key)),
                FaultComponent::from_wire(text(component_key)),
            ) {
                self.faults.push(Fault {
                    node: node.to_owned(),
                    event: event.clone(),
                    reason,
                    component,
                });
            }
        }
        self.steps.entry(node.to_owned()).or_default().push(event);
    }
}

/// The event types whose fields include a fault reason and a detecting component, with the keys.
fn fault_keys() -> BTreeMap<&'static str, (&'static str, &'static str)> {
    let key_of = |fields: &[diagwire::shape::FieldShape], ty: &str| {
        fields
            .iter()
            .find(|f| matches!(f.value, ValueShape::Ref(r) if r == ty))
            .map(|f| f.key)
    };
    event_variants()
        .into_iter()
        .filter_map(|(tag, fields)| {
            Some((
                tag,
                (
                    key_of(fields, "FaultReason")?,
                    key_of(fields, "FaultComponent")?,
                ),
            ))
        })
        .collect()
}

/// The report of a finished run and what a test asserts of it.
#[derive(Debug)]
pub struct Verdict {
    /// The rules' report.
    pub report: CheckReport,
    trace: Trace,
}

impl Verdict {
    pub(crate) fn new(report: CheckReport, trace: Trace) -> Self {
        Verdict { report, trace }
    }

    /// Every fault event seen, in order.
    pub fn faults(&self) -> &[Fault] {
        &self.trace.faults
    }

    /// The event types of `node`, in its order.
    pub fn steps(&self, node: &str) -> &[EventType] {
        self.trace.steps.get(node).map_or(&[], Vec::as_slice)
    }

    /// `Ok` when no rule at level `violation` has a finding.
    pub fn check_passed(&self) -> Result<(), String> {
        let failed: Vec<&RuleResult> = self
            .report
            .rules
            .iter()
            .filter(|r| r.level == Level::Violation && r.findings_total > 0)
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        let mut out = format!(
            "{} of the run's rules failed ({} records read):\n",
            failed.len(),
            self.report.records
        );
        for r in failed {
            explain(&mut out, r);
        }
        Err(out)
    }

    /// `Ok` when rule `id` had something to check and has no finding.
    pub fn check_rule(&self, id: &str) -> Result<(), String> {
        let Some(r) = self.report.rule(id) else {
            let known: Vec<&str> = self.report.rules.iter().map(|r| r.id.as_str()).collect();
            return Err(format!(
                "no rule `{}` in the rule book (it has: {})",
                printable(id),
                known.join(", ")
            ));
        };
        if r.findings_total > 0 {
            let mut out = String::new();
            explain(&mut out, r);
            return Err(out);
        }
        if r.checked == 0 {
            return Err(format!(
                "rule `{}` had nothing to check: the run has no record in its reach",
                r.id
            ));
        }
        Ok(())
    }

    /// `Ok` when every event that names an object of a scope carries the scope's identity fields.
    pub fn check_identity_fields(&self) -> Result<(), String> {
        self.check_rule(SCOPE_FIELDS)
    }

    /// `Ok` when the events of `node` contain `steps` in this order (other events may come
    /// between them).
    pub fn check_lifecycle(&self, node: &str, steps: &[EventType]) -> Result<(), String> {
        let seen = self.steps(node);
        let mut at = 0;
        for (i, want) in steps.iter().enumerate() {
            match seen[at..].iter().position(|s| s == want) {
                Some(p) => at += p + 1,
                None => {
                    let whole = seen.iter().any(|s| s == want);
                    return Err(format!(
                        "node `{}`: lifecycle step {} `{want}` {} after {}; the node's events were: {}",
                        printable(node),
                        i + 1,
                        if whole {
                            "comes only before the steps it must follow, not"
                        } else {
                            "never came,"
                        },
                        if i == 0 {
                            "the start".to_owned()
                        } else {
                            format!("`{}`", steps[i - 1])
                        },
                        list(seen)
                    ));
                }
            }
        }
        Ok(())
    }

    /// `Ok` when some node emitted a fault event with `reason` detected by `component`.
    pub fn check_fault(
        &self,
        reason: FaultReason,
        component: FaultComponent,
    ) -> Result<(), String> {
        if self
            .faults()
            .iter()
            .any(|f| f.reason == reason && f.component == component)
        {
            return Ok(());
        }
        let seen: Vec<String> = self
            .faults()
            .iter()
            .map(|f| {
                format!(
                    "`{}` {}/{} on `{}`",
                    f.event,
                    f.reason,
                    f.component,
                    printable(&f.node)
                )
            })
            .collect();
        Err(format!(
            "no fault with reason `{reason}` detected by `{component}`; faults seen: {}",
            if seen.is_empty() {
                "none".to_owned()
            } else {
                seen.join(", ")
            }
        ))
    }

    /// Panics unless [`Verdict::check_passed`].
    #[track_caller]
    pub fn expect_passed(&self) {
        if let Err(e) = self.check_passed() {
            panic!("{e}");
        }
    }

    /// Panics unless [`Verdict::check_rule`].
    #[track_caller]
    pub fn expect_rule(&self, id: &str) {
        if let Err(e) = self.check_rule(id) {
            panic!("{e}");
        }
    }

    /// Panics unless [`Verdict::check_identity_fields`].
    #[track_caller]
    pub fn expect_identity_fields(&self) {
        if let Err(e) = self.check_identity_fields() {
            panic!("{e}");
        }
    }

    /// Panics unless [`Verdict::check_lifecycle`].
    #[track_caller]
    pub fn expect_lifecycle(&self, node: &str, steps: &[EventType]) {
        if let Err(e) = self.check_lifecycle(node, steps) {
            panic!("{e}");
        }
    }

    /// Panics unless [`Verdict::check_fault`].
    #[track_caller]
    pub fn expect_fault(&self, reason: FaultReason, component: FaultComponent) {
        if let Err(e) = self.check_fault(reason, component) {
            panic!("{e}");
        }
    }
}

/// `steps` as a short list (the first and last ones when long).
fn list(steps: &[EventType]) -> String {
    const SHOWN: usize = 12;
    let names: Vec<String> = steps.iter().map(|s| format!("`{s}`")).collect();
    if names.len() <= SHOWN {
        return if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
    }
    format!(
        "{}, … ({} more) …, {}",
        names[..SHOWN / 2].join(", "),
        names.len() - SHOWN,
        names[names.len() - SHOWN / 2..].join(", ")
    )
}

/// Says why `r` failed: the rule, then each kept finding with its witness.
fn explain(out: &mut String, r: &RuleResult) {
    let _ = writeln!(
        out,
        "- rule `{}` ({}): {} finding(s)",
        r.id, r.title, r.findings_total
    );
    for f in r.findings.iter().take(3) {
        let _ = writeln!(
            out,
            "  - at {}: {}",
            printable(&f.location.to_string()),
            printable(&f.message)
        );
        for w in &f.witness {
            let _ = writeln!(
                out,
                "    witness {}: {}",
                printable(&w.location.to_string()),
                printable(&w.value.to_string())
            );
        }
    }
    if r.findings.len() > 3 {
        let _ = writeln!(out, "  - … {} more", r.findings_total - 3);
    }
}
