//! What `diagwire check` reports: findings with their minimal witness, and per rule how much it had
//! to check, so a rule that saw nothing is never mistaken for one that passed.

use diagwire::Location;
use diagwire::problem::printable;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::rulebook::Level;

/// Findings shown per rule in Markdown (JSON has every kept one).
pub const MARKDOWN_FINDINGS: usize = 10;

/// One record (or the part of one) a finding is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// Where it is: file, record index, JSON pointer of the part shown.
    pub location: Location,
    /// The record, or the part of it at the pointer.
    pub value: Value,
}

/// One finding of one rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The rule's id.
    pub rule: String,
    /// The rule's level.
    pub level: Level,
    /// Where the finding is: the record that breaks the rule (or the first of them).
    pub location: Location,
    /// The records involved: the fewest that show the break.
    pub witness: Vec<Witness>,
    /// One sentence saying why.
    pub message: String,
}

impl Finding {
    /// The finding as one Markdown line (its witness records after it, one line each), control
    /// characters escaped: what a live follow prints the moment the finding is decided.
    pub fn to_markdown_line(&self) -> String {
        let mut s = format!(
            "* **{}** `{}` at `{}`: {}",
            self.level.as_str(),
            self.rule,
            printable(&self.location.to_string()),
            printable(&self.message)
        );
        for w in &self.witness {
            s.push_str(&format!(
                "\n  * `{}`: `{}`",
                printable(&w.location.to_string()),
                printable(&compact(&w.value, 400))
            ));
        }
        s
    }
}

/// Whether a rule had anything to check, and how it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Nothing in the bundle was in the rule's reach.
    NotExercised,
    /// Checked, no finding.
    Passed,
    /// At least one finding.
    Failed,
}

impl Status {
    /// The status as machine output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotExercised => "not_exercised",
            Status::Passed => "passed",
            Status::Failed => "failed",
        }
    }
}

/// One rule's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleResult {
    /// The rule's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its scope.
    pub scope: String,
    /// Its level.
    pub level: Level,
    /// How many things (records, pairs, runs, …) it examined.
    pub checked: u64,
    /// How many of those it could not decide (a dial still in flight when the stream ended).
    pub inconclusive: u64,
    /// How many findings it had in all.
    pub findings_total: u64,
    /// The findings kept (at most the report's cap per rule), in bundle order.
    pub findings: Vec<Finding>,
}

impl RuleResult {
    /// Whether it had anything to check, and how it went.
    pub fn status(&self) -> Status {
        if self.findings_total > 0 {
            Status::Failed
        } else if self.checked == 0 {
            Status::NotExercised
        } else {
            Status::Passed
        }
    }
}

/// The result of checking one bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// The bundle as given.
    pub bundle: String,
    /// Its run id (the manifest's, else the run directory's name).
    pub run_id: String,
    /// The contract version the rules were evaluated with.
    pub contract_version: String,
    /// Records read.
    pub records: u64,
    /// Files and records that could not be read.
    pub unreadable: u64,
    /// Every rule, in the rule book's order.
    pub rules: Vec<RuleResult>,
}

impl CheckReport {
    /// The number of findings of rules at level `violation`.
    pub fn violations(&self) -> u64 {
        self.rules
            .iter()
            .filter(|r| r.level == Level::Violation)
            .map(|r| r.findings_total)
            .sum()
    }

    /// Whether no rule at level `violation` has a finding.
    pub fn passed(&self) -> bool {
        self.violations() == 0
    }

    /// The result of the rule with that id.
    pub fn rule(&self, id: &str) -> Option<&RuleResult> {
        self.rules.iter().find(|r| r.id == id)
    }

    /// Every kept finding, in the rule book's order.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.rules.iter().flat_map(|r| &r.findings)
    }

    /// The rules that had nothing to check.
    pub fn not_exercised(&self) -> impl Iterator<Item = &RuleResult> {
        self.rules
            .iter()
            .filter(|r| r.status() == Status::NotExercised)
    }

    /// The report as Markdown: a verdict, the findings, and the rule coverage table. Every value
    /// from the bundle (its path, run id, locations, messages, witnesses) is escaped
    /// ([`printable`]).
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "# Behaviour check of `{}`\n", printable(&self.bundle));
        let exercised = self
            .rules
            .iter()
            .filter(|r| r.status() != Status::NotExercised)
            .count();
        let _ = writeln!(
            s,
            "Run `{}`, contract {}: {} record(s) read, {} unreadable. {} of {} rule(s) had something to check; {}.\n",
            printable(&self.run_id),
            printable(&self.contract_version),
            self.records,
            self.unreadable,
            exercised,
            self.rules.len(),
            if self.passed() {
                "**no violation**".to_owned()
            } else {
                format!("**{} violation(s)**", self.violations())
            }
        );
        let failing: Vec<&RuleResult> = self
            .rules
            .iter()
            .filter(|r| r.status() == Status::Failed)
            .collect();
        if !failing.is_empty() {
            let _ = writeln!(s, "## Findings\n");
            for r in failing {
                let _ = writeln!(
                    s,
                    "### `{}` ({}): {} finding(s)\n",
                    r.id,
                    r.level.as_str(),
                    r.findings_total
                );
                for f in r.findings.iter().take(MARKDOWN_FINDINGS) {
                    let _ = writeln!(
                        s,
                        "* `{}`: {}",
                        printable(&f.location.to_string()),
                        printable(&f.message)
                    );
                    for w in &f.witness {
                        let _ = writeln!(
                            s,
                            "  * `{}`: `{}`",
                            printable(&w.location.to_string()),
                            printable(&compact(&w.value, 400))
                        );
                    }
                }
                let shown = r.findings.len().min(MARKDOWN_FINDINGS) as u64;
                let hidden = r.findings_total.saturating_sub(shown);
                if hidden > 0 {
                    let _ = writeln!(
                        s,
                        "* … and {hidden} more (`--format json` lists up to the cap of kept findings)"
                    );
                }
                let _ = writeln!(s);
            }
        }
        let _ = writeln!(s, "## Rule coverage\n");
        let _ = writeln!(
            s,
            "| rule | level | status | checked | inconclusive | findings |"
        );
        let _ = writeln!(s, "|---|---|---|---:|---:|---:|");
        for r in &self.rules {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} | {} |",
                r.id,
                r.level.as_str(),
                r.status().as_str().replace('_', " "),
                r.checked,
                r.inconclusive,
                r.findings_total
            );
        }
        let idle: Vec<&str> = self.not_exercised().map(|r| r.id.as_str()).collect();
        let _ = writeln!(s);
        if idle.is_empty() {
            let _ = writeln!(s, "Every rule had something to check.");
        } else {
            let _ = writeln!(
                s,
                "Never had anything to check (a pass of these says nothing about the bundle): {}.",
                idle.iter()
                    .map(|i| format!("`{i}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        s
    }
}

/// `value` as one line of JSON, cut to about `max` characters.
pub fn compact(value: &Value, max: usize) -> String {
    let s = value.to_string();
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}
