//! `count`: how many events of a set each key (the values of the `per` fields) may have: at most
//! `max`, at least `min` (for every key any event names), optionally only in a finalized bundle or
//! only for the bundle's own run.
//!
//! A key over `max` is decided when its extra event arrives (unless the rule is only for the
//! bundle's run or a finalized bundle, which the end says); `min` needs the end.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{End, Ev, Evaluator, Input, Key, Reads, Stream, Tally};
use crate::rulebook::{Count, event_variants};

/// Per key: how many counted events, the first of them kept as witnesses, and the key's first
/// event of any type.
#[derive(Debug, Default)]
struct Seen {
    n: u64,
    kept: Vec<Ev>,
    first: Option<Ev>,
    /// Whether it was found over `max` when its extra event arrived.
    over: bool,
    /// That finding's index among the kept ones, when kept: the end says the final count.
    finding: Option<usize>,
}

/// The evaluator of `count`.
#[derive(Debug)]
pub(crate) struct CountEval {
    p: Count,
    keys: BTreeMap<Key, Seen>,
}

impl CountEval {
    /// The evaluator of these parameters.
    pub fn new(p: &Count) -> Self {
        CountEval {
            p: p.clone(),
            keys: BTreeMap::new(),
        }
    }
}

impl Evaluator for CountEval {
    fn reads(&self) -> Reads {
        let per = &self.p.per;
        Reads {
            event_values: event_variants()
                .iter()
                .filter(|(_, f)| per.iter().all(|p| f.iter().any(|x| x.key == p)))
                .map(|(t, _)| *t)
                .collect(),
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        let Input::Event(e) = input else { return };
        let Some(v) = e.value else { return };
        let c = &self.p;
        if !c.per.iter().all(|f| v.has(f)) {
            return;
        }
        let seen = self.keys.entry(Key::of(v, &c.per)).or_default();
        if seen.first.is_none() {
            seen.first = Some(e.ev());
        }
        if c.events.iter().any(|x| x == e.tag) {
            seen.n += 1;
            let keep = c.max.map_or(1, |m| m.saturating_add(1)) as usize;
            if seen.kept.len() < keep {
                seen.kept.push(e.ev());
            }
            let early = !c.only_if_finalized && !c.only_bundle_run;
            if let Some(max) = c.max.filter(|&m| early && seen.n == m.saturating_add(1)) {
                seen.over = true;
                let key = Key::of(v, &c.per);
                let kept = out.findings.len();
                over_max(c, &key, seen, max, out);
                seen.finding = (out.findings.len() > kept).then_some(kept);
            }
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let c = &self.p;
        if c.only_if_finalized && !end.stream.finalized {
            return;
        }
        let own = Key(vec![Some(Value::String(end.run.clone()).to_string())]);
        let names = c.events.join(", ");
        for (key, seen) in self.keys {
            if c.only_bundle_run && key != own {
                continue;
            }
            out.checked += 1;
            if let Some(max) = c.max {
                if seen.n > max && !seen.over {
                    over_max(c, &key, &seen, max, out);
                } else if let Some(f) = seen.finding.and_then(|i| out.findings.get_mut(i)) {
                    // Decided when the extra event arrived; the end knows how many there are.
                    f.message = over_message(c, &key, seen.n, max);
                }
            }
            let Seen { n, first, .. } = seen;
            if let Some(min) = c.min
                && n < min
            {
                let Some(first) = first else { continue };
                out.find(
                    first.loc.clone(),
                    vec![first.witness()],
                    format!(
                        "{} has {n} events of {names} (at least {min} needed){}",
                        key.describe(&c.per),
                        if c.only_if_finalized {
                            ", although the bundle was finalized"
                        } else {
                            ""
                        }
                    ),
                );
            }
        }
    }
}

/// Finds `key` over `max` events.
fn over_max(c: &Count, key: &Key, seen: &Seen, max: u64, out: &mut Tally<'_>) {
    let extra = seen.kept.last().map_or_else(
        || {
            seen.first
                .as_ref()
                .map(|f| f.loc.clone())
                .unwrap_or_default()
        },
        |e| e.loc.clone(),
    );
    out.find(
        extra,
        seen.kept.iter().map(Ev::witness).collect(),
        over_message(c, key, seen.n, max),
    );
}

/// Why `key` with `n` events breaks `max`.
fn over_message(c: &Count, key: &Key, n: u64, max: u64) -> String {
    format!(
        "{} has {n} events of {}, at most {max} allowed",
        key.describe(&c.per),
        c.events.join(", ")
    )
}
