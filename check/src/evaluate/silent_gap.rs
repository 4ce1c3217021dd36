//! `silent_gap`: a gap-governed value absent from every struct of its type in a snapshot block is
//! explained, by the block's `api_gaps` or by an `Error` event of the node that names the gap or
//! the field; a node's unexplained gaps are reported once the stream has ended.

use std::collections::BTreeMap;

use super::{End, Evaluator, Found, Input, Kept, Reads, Stream, Tally};

/// An unexplained gap: the first struct that lacks the value, its type, the field, and in how many
/// snapshots.
type Candidate = (Kept, &'static str, &'static str, u64);

/// The evaluator of `silent_gap`.
#[derive(Debug, Default)]
pub(crate) struct SilentGap {
    /// Per node and gap.
    candidates: BTreeMap<(usize, &'static str), Candidate>,
}

impl Evaluator for SilentGap {
    fn reads(&self) -> Reads {
        Reads {
            event_values: Vec::new(),
            blocks: true,
            block_types: super::types_with(|f| f.gap.is_some()),
        }
    }

    fn take(&mut self, input: &Input<'_>, _: &Stream, out: &mut Tally<'_>) {
        let Input::Block(b) = input else { return };
        let mut types: BTreeMap<&'static str, Vec<&Found<'_>>> = BTreeMap::new();
        for inst in b.found {
            types.entry(inst.type_name).or_default().push(inst);
        }
        for (type_name, insts) in types {
            let first = insts[0];
            for f in first.fields {
                let Some(gap) = f.gap else {
                    continue;
                };
                out.checked += 1;
                let all_absent = insts.iter().all(|i| !i.has(f.key));
                if all_absent && !first.declares(gap) {
                    let entry = self.candidates.entry((b.node, gap)).or_insert_with(|| {
                        (
                            Kept {
                                loc: b.at(&first.ptr),
                                value: b.value_at(&first.ptr),
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

    fn finish(self: Box<Self>, end: &End<'_>, out: &mut Tally<'_>) {
        for ((node, gap), (kept, type_name, key, n)) in self.candidates {
            let info = &end.stream.nodes[node];
            if info.mentioned.contains(gap) {
                continue;
            }
            out.find(
                kept.loc.clone(),
                vec![kept.witness()],
                format!(
                    "in {n} snapshot(s) of `{}` no `{type_name}` has `{key}`, yet the block's `api_gaps` does not name `{gap}` and no `Error` event of the node notes the gap",
                    info.label
                ),
            );
        }
    }
}
