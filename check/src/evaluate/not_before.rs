//! `not_before`: no event of the `later` types comes after the first event of `event` with the
//! same `match` fields (as a teardown that said it had finished), in the stream's order across
//! nodes.

use std::collections::BTreeMap;

use super::{End, Ev, Evaluator, Input, Key, Reads, Stream, Tally, known_tag};
use crate::rulebook::NotBefore;

/// The evaluator of `not_before`.
#[derive(Debug)]
pub(crate) struct NotBeforeEval {
    p: NotBefore,
    /// Per key: the first `event` of each node.
    first: BTreeMap<Key, Vec<Ev>>,
    /// Per key, node and later type: the last such event.
    last: BTreeMap<(Key, usize, String), Ev>,
}

impl NotBeforeEval {
    /// The evaluator of these parameters.
    pub fn new(p: &NotBefore) -> Self {
        NotBeforeEval {
            p: p.clone(),
            first: BTreeMap::new(),
            last: BTreeMap::new(),
        }
    }
}

impl Evaluator for NotBeforeEval {
    fn reads(&self) -> Reads {
        Reads {
            event_values: known_tag(&self.p.event)
                .into_iter()
                .chain(self.p.later.iter().filter_map(|l| known_tag(l)))
                .collect(),
            blocks: false,
            block_types: Vec::new(),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, _: &mut Tally<'_>) {
        let Input::Event(e) = input else { return };
        let Some(v) = e.value else { return };
        let key = Key::of(v, &self.p.fields);
        if e.tag == self.p.event {
            let list = self.first.entry(key).or_default();
            if !list.iter().any(|x| x.node == e.node) {
                list.push(e.ev());
            }
        } else if self.p.later.iter().any(|l| l == e.tag) {
            let e2 = e.ev();
            let slot = self
                .last
                .entry((key, e.node, e.tag.to_owned()))
                .or_insert_with(|| e.ev());
            if slot.earlier_than(&e2) {
                *slot = e2;
            }
        }
    }

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        let (n, clocks) = (&self.p, &end.clocks);
        for (key, list) in &self.first {
            let Some(t) = list
                .iter()
                .min_by(|a, b| clocks.aligned(a).cmp(&clocks.aligned(b)))
            else {
                continue;
            };
            out.checked += 1;
            for ((k, _, ltag), l) in self.last.range((key.clone(), 0, String::new())..) {
                if k != key {
                    break;
                }
                if clocks.before(t, l) && !clocks.before(l, t) {
                    out.find(
                        l.loc.clone(),
                        vec![t.witness(), l.witness()],
                        format!(
                            "`{ltag}` of {} comes after `{}` of the same {}, which says the teardown had finished",
                            key.describe(&n.fields),
                            n.event,
                            n.fields.join(", ")
                        ),
                    );
                }
            }
        }
    }
}
