//! The numbering of the protobuf form: the tables of field, variant and enum value numbers
//! ([`NUMBERS_FILE`], and each release's frozen copy beside its schemas), how new names are
//! numbered and removed ones reserved, and the checks that a released number never changes and a
//! number never names two things.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use diagwire_schema::Version;
use diagwire_schema::model::Model;
use serde_json::{Value, json};

use super::lower::{Contract, Msg, Shape, lower};
use super::{ABSENT_KEYS, UNKNOWN_JSON};
use crate::REGEN_COMMAND;

/// The name of a number table in a folder of schemas: the current schemas' pinned table
/// ([`NUMBERS_FILE`]) and each release's frozen one (`schemas/releases/<version>/proto-numbers.json`,
/// written once by `cargo codegen release`, fingerprinted in `schemas/releases/FROZEN` with the
/// release's schemas and never regenerated).
pub const NUMBERS_NAME: &str = "proto-numbers.json";

/// The checked-in number file: every message, union and enum name with its field, variant or
/// value numbers, and the numbers of names that were removed (never reused).
pub const NUMBERS_FILE: &str = "schemas/proto-numbers.json";

/// The highest field number protobuf allows.
const MAX_NUMBER: u32 = 536_870_911;

/// One numbering table: names with their numbers, and the numbers of removed names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Current names → numbers.
    pub numbers: BTreeMap<String, u32>,
    /// Removed names → the numbers they had (never reused).
    pub reserved: BTreeMap<String, u32>,
}

impl Table {
    fn used(&self) -> impl Iterator<Item = u32> + '_ {
        self.numbers.values().chain(self.reserved.values()).copied()
    }

    /// The number of `name`, assigning the next free one when it is new.
    pub fn assign(&mut self, name: &str) -> u32 {
        if let Some(n) = self.numbers.get(name) {
            return *n;
        }
        let mut n = self.used().max().unwrap_or(0) + 1;
        while n == ABSENT_KEYS || n == UNKNOWN_JSON || (19_000..=19_999).contains(&n) {
            n += 1;
        }
        self.numbers.insert(name.to_owned(), n);
        n
    }

    /// The number `name` has or had (current names first).
    pub(crate) fn lookup(&self, name: &str) -> Option<u32> {
        self.numbers
            .get(name)
            .or_else(|| self.reserved.get(name))
            .copied()
    }

    /// Moves every name not in `keep` to `reserved`.
    pub fn retire(&mut self, keep: &[String]) {
        let gone: Vec<String> = self
            .numbers
            .keys()
            .filter(|k| !keep.contains(k))
            .cloned()
            .collect();
        for name in gone {
            let n = self.numbers.remove(&name).unwrap_or_default();
            let mut key = name.clone();
            if self.reserved.contains_key(&key) {
                key = format!("{name}#{n}");
            }
            self.reserved.insert(key, n);
        }
    }
}

/// The number file: message tables (struct fields and union variants by name) and enum tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Numbers {
    /// Per message or union.
    pub messages: BTreeMap<String, Table>,
    /// Per enum.
    pub enums: BTreeMap<String, Table>,
}

impl Numbers {
    /// Reads and checks the number file's text; `display` names it in messages.
    pub fn parse(text: &str, display: &str) -> Result<Numbers> {
        let v: Value =
            serde_json::from_str(text).with_context(|| format!("{display}: not JSON"))?;
        let mut out = Numbers::default();
        for (section, target) in [("messages", &mut out.messages), ("enums", &mut out.enums)] {
            let Some(obj) = v.get(section).and_then(Value::as_object) else {
                bail!("{display}#/{section}: missing or not an object");
            };
            for (name, t) in obj {
                let mut table = Table::default();
                for (part, map) in [
                    ("numbers", &mut table.numbers),
                    ("reserved", &mut table.reserved),
                ] {
                    let Some(entries) = t.get(part).and_then(Value::as_object) else {
                        bail!("{display}#/{section}/{name}/{part}: missing or not an object");
                    };
                    for (k, n) in entries {
                        let ptr = format!("{display}#/{section}/{name}/{part}/{k}");
                        let n = n
                            .as_u64()
                            .filter(|n| (1..=u64::from(MAX_NUMBER)).contains(n))
                            .with_context(|| format!("{ptr}: not a field number"))?;
                        map.insert(k.clone(), n as u32);
                    }
                }
                check_table(&table, &format!("{display}#/{section}/{name}"))?;
                target.insert(name.clone(), table);
            }
        }
        Ok(out)
    }

    /// The file's text: sorted keys, two-space indentation, a final newline.
    pub fn render(&self) -> String {
        let tables = |m: &BTreeMap<String, Table>| -> Value {
            Value::Object(
                m.iter()
                    .map(|(k, t)| {
                        (
                            k.clone(),
                            json!({"numbers": t.numbers, "reserved": t.reserved}),
                        )
                    })
                    .collect(),
            )
        };
        let v = json!({"enums": tables(&self.enums), "messages": tables(&self.messages)});
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }
}

/// A table may not give one number to two names, nor use the fixed numbers.
pub fn check_table(t: &Table, at: &str) -> Result<()> {
    let mut seen: BTreeMap<u32, String> = BTreeMap::new();
    for (name, n) in t.numbers.iter().chain(&t.reserved) {
        if *n == ABSENT_KEYS || *n == UNKNOWN_JSON || (19_000..=19_999).contains(n) {
            bail!("{at}/{name}: number {n} is reserved for the codec or by protobuf");
        }
        if let Some(other) = seen.insert(*n, name.clone()) {
            bail!("{at}/{name}: number {n} is also used by `{other}`");
        }
    }
    Ok(())
}

/// The names a pinned table of this message holds: struct keys or union tags.
pub(super) fn table_names(m: &Msg) -> Option<Vec<String>> {
    match &m.shape {
        Shape::Struct { fields, .. } => Some(fields.iter().map(|f| f.key.clone()).collect()),
        Shape::Union { variants, .. } => Some(variants.iter().map(|v| v.0.clone()).collect()),
        _ => None,
    }
}

/// Assigns numbers for every name of `c` not yet in `n`.
fn assign(n: &mut Numbers, c: &Contract) {
    for m in &c.messages {
        if let Some(names) = table_names(m) {
            let t = n.messages.entry(m.name.clone()).or_default();
            for name in names {
                t.assign(&name);
            }
        }
    }
    for (e, values, _) in &c.enums {
        let t = n.enums.entry(e.clone()).or_default();
        for v in values {
            t.assign(v);
        }
    }
}

/// Reserves every name the current contract `c` no longer has.
fn retire(n: &mut Numbers, c: &Contract) {
    for (name, t) in n.messages.iter_mut() {
        let keep = c
            .messages
            .iter()
            .find(|m| m.name == *name)
            .and_then(table_names)
            .unwrap_or_default();
        t.retire(&keep);
    }
    for (name, t) in n.enums.iter_mut() {
        let keep = c
            .enums
            .iter()
            .find(|e| e.0 == *name)
            .map(|e| e.1.clone())
            .unwrap_or_default();
        t.retire(&keep);
    }
}

/// The pinned numbers after seeing `models` (oldest first, the current schemas last): new names
/// numbered, names gone from the last model reserved.
pub fn update_numbers(pinned: &Numbers, models: &[&Model]) -> Numbers {
    let mut n = pinned.clone();
    let contracts: Vec<Contract> = models.iter().map(|m| lower(m)).collect();
    for c in &contracts {
        assign(&mut n, c);
    }
    if let Some(last) = contracts.last() {
        retire(&mut n, last);
    }
    n
}

/// The number of `name` in the table of the message `msg`.
pub(super) fn number_of(n: &Numbers, msg: &str, name: &str) -> Result<u32> {
    n.messages
        .get(msg)
        .and_then(|t| t.lookup(name))
        .with_context(|| format!("{NUMBERS_FILE}: no number for `{msg}.{name}`"))
}

/// Reads the pinned number file (empty when it does not exist yet).
pub fn read_numbers(root: &Path) -> Result<Numbers> {
    let path = root.join(NUMBERS_FILE);
    match diagwire_schema::read::read_text(&path, NUMBERS_FILE, diagwire_schema::read::TEXT_CAP) {
        Ok(text) => Numbers::parse(&text, NUMBERS_FILE),
        Err(e) if e.missing => Ok(Numbers::default()),
        Err(e) => Err(e.into()),
    }
}

/// The numbers `model` uses, taken from `numbers`: what a release freezes.
pub fn freeze(numbers: &Numbers, model: &Model) -> Result<Numbers> {
    let c = lower(model);
    let mut out = Numbers::default();
    for m in &c.messages {
        if let Some(names) = table_names(m) {
            let t = out.messages.entry(m.name.clone()).or_default();
            for name in names {
                t.numbers
                    .insert(name.clone(), number_of(numbers, &m.name, &name)?);
            }
        }
    }
    for (e, values, _) in &c.enums {
        let t = out.enums.entry(e.clone()).or_default();
        for v in values {
            let n = numbers
                .enums
                .get(e)
                .and_then(|t| t.lookup(v))
                .with_context(|| format!("{NUMBERS_FILE}: no number for `{e}.{v}`"))?;
            t.numbers.insert(v.clone(), n);
        }
    }
    Ok(out)
}

/// The frozen numbers of release `v`, as `cargo codegen release` wrote them.
pub fn read_frozen(root: &Path, v: &Version) -> Result<Numbers> {
    let rel = format!("schemas/releases/{v}/{NUMBERS_NAME}");
    let text = diagwire_schema::read::read_text(
        &root.join(&rel),
        &rel,
        diagwire_schema::read::TEXT_CAP,
    )
    .with_context(|| {
        format!("reading {rel}: every release freezes its protobuf numbers (`{REGEN_COMMAND} release` writes them)")
    })?;
    Numbers::parse(&text, &rel)
}

/// Checks the number table against every frozen release (oldest first): a name a release numbered
/// keeps that number (as a current or a reserved name), and no number of a message or enum ever
/// names two different things across the releases and the table.
pub fn check_frozen(numbers: &Numbers, frozen: &[(Version, Numbers)]) -> Result<()> {
    let mut problems = Vec::new();
    // (section, message or enum, number) -> (name, where)
    let mut owners: BTreeMap<(&str, &str, u32), (String, String)> = BTreeMap::new();
    for (v, f) in frozen {
        for (section, tables, pinned) in [
            ("messages", &f.messages, &numbers.messages),
            ("enums", &f.enums, &numbers.enums),
        ] {
            for (owner, t) in tables {
                for (name, n) in &t.numbers {
                    let kept = pinned.get(owner).is_some_and(|p| {
                        p.numbers.get(name) == Some(n)
                            || p.reserved.get(name) == Some(n)
                            || p.reserved.get(&format!("{name}#{n}")) == Some(n)
                    });
                    if !kept {
                        let now = pinned
                            .get(owner)
                            .and_then(|p| p.numbers.get(name))
                            .map_or("no number".to_owned(), |x| format!("number {x}"));
                        problems.push(format!("{NUMBERS_FILE}#/{section}/{owner}: release {v} numbered `{name}` {n}, the table gives it {now}; a released number never changes"));
                    }
                    let at = format!("release {v}");
                    match owners.get(&(section, owner.as_str(), *n)) {
                        Some((other, w)) if other != name => problems.push(format!(
                            "{NUMBERS_FILE}#/{section}/{owner}: number {n} is `{name}` in {at} but `{other}` in {w}; a number is never reused"
                        )),
                        Some(_) => {}
                        None => {
                            owners.insert((section, owner.as_str(), *n), (name.clone(), at));
                        }
                    }
                }
            }
        }
    }
    for (section, tables) in [("messages", &numbers.messages), ("enums", &numbers.enums)] {
        for (owner, t) in tables {
            for (name, n) in &t.numbers {
                if let Some((other, w)) = owners.get(&(section, owner.as_str(), *n)) {
                    if other != name {
                        problems.push(format!("{NUMBERS_FILE}#/{section}/{owner}: number {n} is `{name}` in the table but `{other}` in {w}; a number is never reused"));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("\n"))
    }
}

/// The numbers of the current schemas (the pinned table after seeing every release and the
/// current model, which must agree with every release's frozen numbers: [`check_frozen`]) and each
/// release's frozen numbers.
pub fn numbers(
    root: &Path,
    releases: &[(Version, Model)],
    current: &Model,
) -> Result<(Numbers, Vec<(Version, Numbers)>)> {
    let pinned = read_numbers(root)?;
    let mut models: Vec<&Model> = releases.iter().map(|(_, m)| m).collect();
    models.push(current);
    let numbers = update_numbers(&pinned, &models);
    for (name, t) in numbers.messages.iter().chain(&numbers.enums) {
        check_table(t, &format!("{NUMBERS_FILE}#/{name}"))?;
    }
    let frozen: Vec<(Version, Numbers)> = releases
        .iter()
        .map(|(v, _)| Ok((v.clone(), read_frozen(root, v)?)))
        .collect::<Result<_>>()?;
    check_frozen(&numbers, &frozen)?;
    Ok((numbers, frozen))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(numbers: &[(&str, u32)], reserved: &[(&str, u32)]) -> Table {
        Table {
            numbers: numbers.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            reserved: reserved.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
        }
    }

    #[test]
    fn numbering_keeps_pinned_numbers_reserves_removed_names_and_never_reuses() {
        // (case, pinned, names of the new model, expected)
        let cases: &[(&str, Table, &[&str], Table)] = &[
            (
                "new names are numbered in order",
                table(&[], &[]),
                &["a", "b"],
                table(&[("a", 1), ("b", 2)], &[]),
            ),
            (
                "pinned numbers stay when the order changes",
                table(&[("a", 1), ("b", 2)], &[]),
                &["b", "a"],
                table(&[("a", 1), ("b", 2)], &[]),
            ),
            (
                "a removed name is reserved",
                table(&[("a", 1), ("b", 2)], &[]),
                &["a"],
                table(&[("a", 1)], &[("b", 2)]),
            ),
            (
                "a new name skips reserved numbers",
                table(&[("a", 1)], &[("b", 2)]),
                &["a", "c"],
                table(&[("a", 1), ("c", 3)], &[("b", 2)]),
            ),
            (
                "a name that comes back gets a fresh number",
                table(&[("a", 1)], &[("b", 2)]),
                &["a", "b"],
                table(&[("a", 1), ("b", 3)], &[("b", 2)]),
            ),
            (
                "the codec's fixed numbers are skipped",
                table(&[("a", 2045)], &[]),
                &["a", "b"],
                table(&[("a", 2045), ("b", 2048)], &[]),
            ),
        ];
        for (case, pinned, names, expected) in cases {
            let mut t = pinned.clone();
            for n in *names {
                t.assign(n);
            }
            let keep: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            t.retire(&keep);
            assert_eq!(&t, expected, "{case}");
            check_table(&t, case).unwrap_or_else(|e| panic!("{case}: {e:#}"));
        }
    }

    #[test]
    fn a_number_file_that_gives_one_number_twice_is_refused_with_its_location() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "duplicate",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":1,"b":1},"reserved":{}}}}"#,
                "n.json#/messages/M/b: number 1 is also used by `a`",
            ),
            (
                "reserved duplicate",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":1},"reserved":{"z":1}}}}"#,
                "n.json#/messages/M/z: number 1 is also used by `a`",
            ),
            (
                "fixed number",
                r#"{"enums":{"E":{"numbers":{"a":2047},"reserved":{}}},"messages":{}}"#,
                "n.json#/enums/E/a: number 2047 is reserved for the codec or by protobuf",
            ),
            (
                "zero",
                r#"{"enums":{},"messages":{"M":{"numbers":{"a":0},"reserved":{}}}}"#,
                "n.json#/messages/M/numbers/a: not a field number",
            ),
            (
                "missing section",
                r#"{"messages":{}}"#,
                "n.json#/enums: missing or not an object",
            ),
        ];
        for (case, text, message) in cases {
            let e = Numbers::parse(text, "n.json").expect_err(case);
            assert_eq!(format!("{e:#}"), *message, "{case}");
        }
    }

    fn nums(messages: &[(&str, &[(&str, u32)])]) -> Numbers {
        Numbers {
            messages: messages
                .iter()
                .map(|(m, t)| (m.to_string(), table(t, &[])))
                .collect(),
            enums: BTreeMap::new(),
        }
    }

    #[test]
    fn a_table_that_changes_or_reuses_a_released_number_is_refused() {
        let v = |s: &str| -> Version { s.parse().expect("version") };
        let r100 = nums(&[("M", &[("a", 1), ("b", 2)])]);
        let r110 = nums(&[("M", &[("a", 1), ("b", 2), ("c", 3)])]);
        let good = Numbers {
            messages: [("M".to_owned(), table(&[("a", 1), ("c", 3)], &[("b", 2)]))].into(),
            enums: BTreeMap::new(),
        };
        check_frozen(
            &good,
            &[(v("1.0.0"), r100.clone()), (v("1.1.0"), r110.clone())],
        )
        .expect("a removed name stays reserved");
        // (case, table, frozen releases, message)
        type Case = (&'static str, Numbers, Vec<(Version, Numbers)>, &'static str);
        let cases: Vec<Case> = vec![
            (
                "number changed",
                nums(&[("M", &[("a", 4), ("b", 2)])]),
                vec![(v("1.0.0"), r100.clone())],
                "schemas/proto-numbers.json#/messages/M: release 1.0.0 numbered `a` 1, the table gives it number 4; a released number never changes",
            ),
            (
                "removed name dropped instead of reserved",
                nums(&[("M", &[("a", 1)])]),
                vec![(v("1.0.0"), r100.clone())],
                "schemas/proto-numbers.json#/messages/M: release 1.0.0 numbered `b` 2, the table gives it no number; a released number never changes",
            ),
            (
                "number reused across releases",
                nums(&[("M", &[("a", 1), ("b", 2), ("c", 3)])]),
                vec![
                    (v("1.0.0"), r100.clone()),
                    (v("1.1.0"), nums(&[("M", &[("a", 1), ("b", 2), ("c", 2)])])),
                ],
                "schemas/proto-numbers.json#/messages/M: release 1.1.0 numbered `c` 2, the table gives it number 3; a released number never changes\nschemas/proto-numbers.json#/messages/M: number 2 is `c` in release 1.1.0 but `b` in release 1.0.0; a number is never reused",
            ),
            (
                "table reuses a released number for a new name",
                nums(&[("M", &[("a", 1), ("d", 2)])]),
                vec![(v("1.0.0"), r100.clone())],
                "schemas/proto-numbers.json#/messages/M: release 1.0.0 numbered `b` 2, the table gives it no number; a released number never changes\nschemas/proto-numbers.json#/messages/M: number 2 is `d` in the table but `b` in release 1.0.0; a number is never reused",
            ),
        ];
        for (case, table, frozen, message) in cases {
            let e = check_frozen(&table, &frozen).expect_err(case);
            assert_eq!(format!("{e:#}"), message, "{case}");
        }
    }

    #[test]
    fn the_checked_in_table_agrees_with_every_frozen_release() {
        let root = crate::workspace_root();
        let numbers = read_numbers(&root).expect("number file");
        let releases = crate::released_versions(&root).expect("releases");
        assert!(!releases.is_empty());
        let frozen: Vec<(Version, Numbers)> = releases
            .iter()
            .map(|v| (v.clone(), read_frozen(&root, v).expect("frozen numbers")))
            .collect();
        check_frozen(&numbers, &frozen).expect("numbers agree with the releases");
        for (v, f) in &frozen {
            let files =
                crate::read_schemas(&root, &format!("schemas/releases/{v}")).expect("schemas");
            let model = diagwire_schema::load(&files).expect("model");
            assert_eq!(&freeze(&numbers, &model).expect("freeze"), f, "release {v}");
        }
    }
}
