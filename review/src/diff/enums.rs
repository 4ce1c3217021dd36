//! The comparison of two string enums: values added and removed, opened or closed, and reordered.

use std::collections::BTreeSet;

use super::Cx;
use crate::catalog;
use crate::finding::Subject;

/// The pointers an enum finding explains: the value list, under either spelling.
const VALUES: [&str; 2] = ["/enum", "/x-open-enum"];

impl Cx<'_> {
    /// `a` and `b` are each side's values and whether the enum is open.
    pub(super) fn enums(&mut self, name: &str, a: (&[String], bool), b: (&[String], bool)) {
        let ((va, oa), (vb, ob)) = (a, b);
        let sa: BTreeSet<&String> = va.iter().collect();
        let sb: BTreeSet<&String> = vb.iter().collect();
        for v in vb.iter().filter(|v| !sa.contains(v)) {
            let rule = if ob {
                &catalog::ENUM_VALUE_ADDED_OPEN
            } else {
                &catalog::ENUM_VALUE_ADDED_CLOSED
            };
            self.push(
                rule,
                name,
                Some(v),
                format!("\u{e000}{name}\u{e001} has the new value \u{e000}{v}\u{e001}"),
                VALUES.to_vec(),
                value_subject(name, v),
            );
        }
        for v in va.iter().filter(|v| !sb.contains(v)) {
            let rule = if ob {
                &catalog::ENUM_VALUE_REMOVED_OPEN
            } else {
                &catalog::ENUM_VALUE_REMOVED_CLOSED
            };
            self.push(
                rule,
                name,
                Some(v),
                format!("\u{e000}{name}\u{e001} lost the value \u{e000}{v}\u{e001}"),
                VALUES.to_vec(),
                value_subject(name, v),
            );
        }
        if oa != ob {
            let rule = if ob {
                &catalog::ENUM_OPENED
            } else {
                &catalog::ENUM_CLOSED
            };
            self.push(
                rule,
                name,
                None,
                format!(
                    "\u{e000}{name}\u{e001} is now {}",
                    if ob { "open" } else { "closed" }
                ),
                VALUES.to_vec(),
                Subject::Def(name.into()),
            );
        }
        let common_a: Vec<&String> = va.iter().filter(|v| sb.contains(v)).collect();
        let common_b: Vec<&String> = vb.iter().filter(|v| sa.contains(v)).collect();
        if common_a != common_b {
            self.push(
                &catalog::ORDER_CHANGED,
                name,
                None,
                format!("the values of \u{e000}{name}\u{e001} are in another order"),
                VALUES.to_vec(),
                Subject::None,
            );
        }
    }
}

/// A value of an enum, as a finding's subject.
fn value_subject(def: &str, value: &str) -> Subject {
    Subject::Value {
        def: def.into(),
        value: value.into(),
    }
}
