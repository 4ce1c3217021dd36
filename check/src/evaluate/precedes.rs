//! `precedes`: the first event of a type per node and key needs earlier events (`needs`: one of a
//! type with the same `match` fields, on any node) and work complete before it (`completes`: every
//! opener that precedes it has its closer of the same node before it too), in the stream's order
//! across nodes.
//!
//! A checked event is decided once the watermark passes its aligned time (nothing still to come
//! can precede it), else at the end of the stream.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Fields as EventFields;
use super::key::Part;
use super::{Clocks, End, Ev, Evaluator, EventIn, Input, Key, Reads, Stream, Tally, known_tag};
use crate::rulebook::{Need, Precedes};

/// The values of an event's matched fields, by field.
type Fields = BTreeMap<String, Part>;
/// Kept per emitting node and key.
type Keyed<T> = HashMap<(usize, Key), T>;

/// The evaluator of `precedes`.
#[derive(Debug)]
pub(crate) struct PrecedesEval {
    p: Precedes,
    /// Every field a need or a completion matches the checked event on.
    all: Vec<String>,
    /// The first checked event per node and key, with its matched fields, until decided.
    targets: Keyed<(Ev, Fields)>,
    /// The node and key of every checked event decided.
    decided: HashSet<(usize, Key)>,
    /// Findings decided before any event they need had arrived: (the finding's index among the
    /// kept ones, the key it needs, the need), so that the end can add the first later one.
    unwitnessed: Vec<(usize, Key, usize)>,
    /// Per need: its first event per node and key.
    needs: Vec<Keyed<Ev>>,
    /// Per completion: its first opener per node and pair, with the opener's matched fields.
    openers: Vec<Keyed<(Ev, Fields)>>,
    /// Per completion: its first closer per node and pair.
    closers: Vec<Keyed<Ev>>,
}

fn fields_of(v: &EventFields<'_>, fields: &[String]) -> Fields {
    fields.iter().map(|f| (f.clone(), v.part(f))).collect()
}

/// Keeps `e` under `key` unless an earlier event is kept there.
fn keep_first<T>(map: &mut Keyed<T>, key: (usize, Key), e: Ev, value: impl FnOnce(Ev) -> T)
where
    T: AsRef<Ev>,
{
    if map.get(&key).is_none_or(|old| e.earlier_than(old.as_ref())) {
        map.insert(key, value(e));
    }
}

impl AsRef<Ev> for (Ev, Fields) {
    fn as_ref(&self) -> &Ev {
        &self.0
    }
}

impl AsRef<Ev> for Ev {
    fn as_ref(&self) -> &Ev {
        self
    }
}

impl PrecedesEval {
    /// The evaluator of these parameters.
    pub fn new(p: &Precedes) -> Self {
        let mut all: Vec<String> = Vec::new();
        for n in &p.needs {
            all.extend(n.fields.iter().cloned());
        }
        for c in &p.completes {
            all.extend(c.open_match.iter().cloned());
        }
        PrecedesEval {
            p: p.clone(),
            all,
            targets: HashMap::new(),
            decided: HashSet::new(),
            unwitnessed: Vec::new(),
            needs: p.needs.iter().map(|_| HashMap::new()).collect(),
            openers: p.completes.iter().map(|_| HashMap::new()).collect(),
            closers: p.completes.iter().map(|_| HashMap::new()).collect(),
        }
    }

    fn event(&mut self, e: &EventIn<'_>, v: &EventFields<'_>) {
        let (p, tag, node) = (&self.p, e.tag, e.node);
        if tag == p.event {
            let key = (node, Key::of(v, &self.all));
            if !self.decided.contains(&key) {
                let all = &self.all;
                keep_first(&mut self.targets, key, e.ev(), |ev| (ev, fields_of(v, all)));
            }
        }
        for (n, needs) in p.needs.iter().zip(&mut self.needs) {
            if tag == n.event {
                keep_first(needs, (node, Key::of(v, &n.fields)), e.ev(), |ev| ev);
            }
        }
        for (i, c) in p.completes.iter().enumerate() {
            if tag == c.opened_by {
                let refs: Vec<String> = c.open_match.iter().chain(&c.pair).cloned().collect();
                let key = (node, Key::of(v, &c.pair));
                keep_first(&mut self.openers[i], key, e.ev(), |ev| {
                    (ev, fields_of(v, &refs))
                });
            }
            if tag == c.closed_by {
                keep_first(
                    &mut self.closers[i],
                    (node, Key::of(v, &c.pair)),
                    e.ev(),
                    |ev| ev,
                );
            }
        }
    }
}

/// The key `fields` take in `of` (absent where `of` lacks a field).
fn key_in(of: &Fields, fields: &[String]) -> Key {
    Key(fields
        .iter()
        .map(|f| of.get(f).cloned().flatten())
        .collect())
}

impl Evaluator for PrecedesEval {
    fn reads(&self) -> Reads {
        let p = &self.p;
        let mut tags: Vec<&'static str> = known_tag(&p.event).into_iter().collect();
        tags.extend(p.needs.iter().filter_map(|n| known_tag(&n.event)));
        for c in &p.completes {
            tags.extend(known_tag(&c.opened_by));
            tags.extend(known_tag(&c.closed_by));
        }
        Reads {
            event_values: tags,
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, _: &mut Tally<'_>) {
        if let Input::Event(e) = input
            && let Some(v) = e.value
        {
            self.event(e, v);
        }
    }

    fn waiting(&self) -> bool {
        !self.targets.is_empty()
    }

    fn advance(&mut self, watermark: i128, stream: &Stream, out: &mut Tally<'_>) {
        let clocks = Clocks::of(stream);
        let mut due: Vec<(usize, Key)> = self
            .targets
            .iter()
            .filter(|(_, (t, _))| clocks.aligned(t) < watermark)
            .map(|(k, _)| k.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        due.sort_by_key(|k| self.targets[k].0.ord);
        for k in due {
            if let Some((t, tf)) = self.targets.remove(&k) {
                let early = self.decide(&t, &tf, &clocks, out);
                self.unwitnessed.extend(early);
                self.decided.insert(k);
            }
        }
    }

    fn finish(mut self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        // What was decided early keeps its verdict; it gains the need that came later, if any.
        for (i, want, ni) in std::mem::take(&mut self.unwitnessed) {
            let n = &self.p.needs[ni];
            let first_later = self.needs[ni]
                .iter()
                .filter(|((_, k), _)| *k == want)
                .map(|(_, e)| e)
                .min_by_key(|e| e.ord);
            if let (Some(l), Some(f)) = (first_later, out.findings.get_mut(i)) {
                f.witness.push(l.witness());
                f.message = need_message(&self.p.event, &want, n, true);
            }
        }
        let mut ordered: Vec<&(Ev, Fields)> = self.targets.values().collect();
        ordered.sort_by_key(|(e, _)| e.ord);
        for (t, tf) in ordered {
            self.decide(t, tf, &end.clocks, out);
        }
    }
}

/// Why checked event `event` of key `want` breaks need `n` (`later`: a need of the key came
/// after it).
fn need_message(event: &str, want: &Key, n: &Need, later: bool) -> String {
    format!(
        "`{event}` of {} {} `{}` of the same {}",
        want.describe(&n.fields),
        if later {
            "comes before the first"
        } else {
            "has no earlier"
        },
        n.event,
        n.fields.join(", ")
    )
}

impl PrecedesEval {
    /// Decides checked event `t` with matched fields `tf`; returns the findings kept without a
    /// later need to show (see `unwitnessed`).
    fn decide(
        &self,
        t: &Ev,
        tf: &Fields,
        clocks: &Clocks,
        out: &mut Tally<'_>,
    ) -> Vec<(usize, Key, usize)> {
        let p = &self.p;
        let mut unwitnessed = Vec::new();
        out.checked += 1;
        for (ni, (n, needs)) in p.needs.iter().zip(&self.needs).enumerate() {
            let want = key_in(tf, &n.fields);
            let candidates: Vec<&Ev> = needs
                .iter()
                .filter(|((_, k), _)| *k == want)
                .map(|(_, e)| e)
                .collect();
            if candidates.iter().any(|c| clocks.before(c, t)) {
                continue;
            }
            let mut witness = vec![t.witness()];
            let later = candidates.iter().min_by_key(|c| c.ord);
            if let Some(l) = later {
                witness.push(l.witness());
            }
            let kept = out.findings.len();
            out.find(
                t.loc.clone(),
                witness,
                need_message(&p.event, &want, n, later.is_some()),
            );
            if later.is_none() && out.findings.len() > kept {
                unwitnessed.push((kept, want, ni));
            }
        }
        for (i, c) in p.completes.iter().enumerate() {
            let want = key_in(tf, &c.open_match);
            let mut opened: Vec<&(Ev, Fields)> = self.openers[i]
                .values()
                .filter(|(o, of)| {
                    c.open_match
                        .iter()
                        .zip(&want.0)
                        .all(|(f, w)| of.get(f) == Some(w))
                        && clocks.before(o, t)
                })
                .collect();
            opened.sort_by_key(|(o, _)| o.ord);
            for (o, of) in opened {
                let pair = key_in(of, &c.pair);
                let closer = self.closers[i].get(&(o.node, pair.clone()));
                if closer.is_some_and(|cl| clocks.before(cl, t)) {
                    continue;
                }
                let mut witness = vec![t.witness(), o.witness()];
                if let Some(cl) = closer {
                    witness.push(cl.witness());
                }
                out.find(
                    t.loc.clone(),
                    witness,
                    format!(
                        "`{}` of {} comes before `{}` of {} on the node that started it with `{}`",
                        p.event,
                        want.describe(&c.open_match),
                        c.closed_by,
                        pair.describe(&c.pair),
                        c.opened_by
                    ),
                );
            }
        }
        unwitnessed
    }
}
