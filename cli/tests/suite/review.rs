//! `diagwire diff` and `diagwire review` on the real schemas: the released history classifies as
//! compatible, deliberate breaks on a copy of the newest release are caught with a counterexample
//! that the readers really refuse or misread, a pull request is reviewed against its git base, and
//! `review --catalog` (formerly `rules`) prints the rule catalog.

use crate::common;

use common::{copy_tree, repo};
use std::path::Path;
use std::process::{Command, Output};

use diagwire::v1::{Event, EventRecord, RecordKind};
use diagwire_review::tree::Tree;
use diagwire_schema::ordered::J;
use serde_json::{Value, json};

/// A JSON value to put into a schema.
fn j(v: Value) -> J {
    J::from_value(&v)
}

/// The object or array at a path of a schema document.
#[track_caller]
fn at<'a>(doc: &'a mut J, path: &str) -> &'a mut J {
    doc.at_mut(path).unwrap_or_else(|| panic!("no {path}"))
}

/// Removes a string from an array.
fn drop_str(arr: &mut J, value: &str) {
    arr.as_arr_mut()
        .expect("an array")
        .retain(|v| v.as_str() != Some(value));
}

fn diagwire(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run diagwire")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn newest_release() -> String {
    diagwire_schema::released_versions(&repo())
        .expect("releases")
        .last()
        .expect("a release")
        .to_string()
}

#[test]
fn the_released_history_needs_at_most_a_minor_bump_and_is_fully_classified() {
    let o = diagwire(
        &repo(),
        &["diff", "schemas/releases/1.0.0", "schemas/releases/1.1.0"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("0 breaking, needs a **minor** bump"), "{out}");
    assert!(!out.contains("UNCLASSIFIED"), "{out}");
    let json = diagwire(&repo(), &["diff", "1.0.0", "1.1.0", "--format", "json"]);
    let v: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["required_bump"], "minor");
    assert!(v["findings"].as_array().expect("findings").len() > 100);
}

/// A copy of the newest release with one edit, and the release it was copied from.
struct Edited {
    dir: tempfile::TempDir,
}

impl Edited {
    fn new(file: &str, edit: impl FnOnce(&mut J)) -> Edited {
        let dir = tempfile::tempdir().expect("temp dir");
        let release = repo().join("schemas/releases").join(newest_release());
        for entry in std::fs::read_dir(&release).expect("release") {
            let path = entry.expect("entry").path();
            std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
        }
        let path = dir.path().join(file);
        let mut doc: J =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        edit(&mut doc);
        std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON")).expect("write");
        Edited { dir }
    }

    /// Numbers the copy's new members in its `proto-numbers.json`, as `cargo codegen` would: a
    /// table that does not number every member fails the comparison.
    fn number_like_codegen(&self) {
        let old = Tree::load_dir(&repo().join("schemas/releases").join(newest_release()))
            .expect("release");
        let new = Tree::load_dir(self.dir.path()).expect("copy");
        let diagwire_review::tree::NumberTable::Found { numbers, .. } = &old.numbers else {
            panic!("the release has a number table")
        };
        let numbers = diagwire_codegen::proto::update_numbers(numbers, &[&old.model, &new.model]);
        std::fs::write(
            self.dir.path().join(diagwire_review::tree::NUMBER_FILE),
            numbers.render(),
        )
        .expect("write numbers");
    }

    /// Runs `diagwire diff <release> <copy>` and returns (exit code, output).
    fn diff(&self) -> (Option<i32>, String) {
        let copy = self.dir.path().to_str().expect("UTF-8 path");
        let o = diagwire(&repo(), &["diff", &newest_release(), copy]);
        (o.status.code(), text(&o))
    }

    /// The finding of `rule` and its counterexample, from the library.
    fn counterexample(&self, rule: &str) -> (String, Value) {
        let old = Tree::load_dir(&repo().join("schemas/releases").join(newest_release()))
            .expect("release");
        let new = Tree::load_dir(self.dir.path()).expect("copy");
        let c = diagwire_review::compare(&old, &new).expect("compare");
        let f = c
            .findings
            .iter()
            .find(|f| f.finding.rule.id == rule)
            .unwrap_or_else(|| panic!("no {rule} finding"));
        let x = f.counterexample.as_ref().expect("a counterexample");
        assert!(x.confirmed, "{rule}: not confirmed: {:?}", x.verdicts);
        (x.kind.clone(), x.record.clone())
    }

    /// Whether the copy's schemas accept the record.
    fn copy_accepts(&self, kind: &str, record: &Value) -> bool {
        let tree = Tree::load_dir(self.dir.path()).expect("copy");
        let readers = diagwire_review::confirm::Readers::new(&tree).expect("readers");
        readers.verdicts(kind, record).iter().all(|v| v.accepts)
    }
}

/// The newest release's generated reader on a record.
fn release_reads(kind: &str, record: &Value) -> Result<Value, String> {
    let contract = diagwire::releases::READERS
        .iter()
        .find(|r| r.version == newest_release())
        .expect("a reader of the newest release");
    match (contract.reread)(kind, &record.to_string()) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("no kind {kind}")),
    }
}

#[track_caller]
fn breaks(edited: &Edited, rule: &str) {
    let (code, out) = edited.diff();
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("breaking: {rule}"))
            || out.contains(&format!(", {rule}"))
            || out.contains(rule),
        "{out}"
    );
    assert!(out.contains("counterexample (confirmed)"), "{out}");
}

#[test]
fn removing_a_required_field_is_caught_and_the_old_reader_refuses_the_new_record() {
    let e = Edited::new("event.schema.json", |d| {
        at(d, "$defs/DialStarted/properties").remove("timeout_ms");
        drop_str(at(d, "$defs/DialStarted/required"), "timeout_ms");
    });
    breaks(&e, "FIELD_REMOVED_REQUIRED");
    let (kind, record) = e.counterexample("FIELD_REMOVED_REQUIRED");
    assert!(e.copy_accepts(&kind, &record));
    let err = release_reads(&kind, &record).expect_err("the release reader refuses it");
    assert!(err.contains("missing field `timeout_ms`"), "{err}");
}

#[test]
fn closing_an_open_enum_is_caught_and_the_new_schemas_refuse_an_old_value() {
    let e = Edited::new("common.schema.json", |d| {
        let s = at(d, "$defs/RelaySessionStatus");
        let values = s.remove("x-open-enum").expect("an open enum");
        s.insert("enum", values);
    });
    breaks(&e, "ENUM_CLOSED");
    let (kind, record) = e.counterexample("ENUM_CLOSED");
    release_reads(&kind, &record).expect("the release reader keeps the unknown value");
    assert!(!e.copy_accepts(&kind, &record));
}

#[test]
fn narrowing_a_provenance_source_is_caught_as_a_misread() {
    let e = Edited::new("iroh.schema.json", |d| {
        at(d, "$defs/IrohPeer/properties/conn_type/x-provenance").remove("source");
    });
    breaks(&e, "PROVENANCE_NARROWED");
    let (kind, record) = e.counterexample("PROVENANCE_NARROWED");
    // Both sides read the record; the release calls the value derived (its source says so), the
    // copy, which no longer pairs the source, calls it reported.
    assert!(e.copy_accepts(&kind, &record));
    let back = release_reads(&kind, &record).expect("the release reader reads it");
    assert_eq!(back, record);
    let snapshot: diagwire::v1::Snapshot = serde_json::from_value(record).expect("a snapshot");
    let peer = &snapshot.body.iroh.as_ref().expect("iroh block").peers[0];
    let no_gaps: &[&str] = &[];
    assert!(matches!(
        peer.conn_type_provenance(no_gaps),
        diagwire::Provenance::Derived(_)
    ));
    let without_source = diagwire::Provenance::resolve(
        peer.conn_type.as_ref(),
        None,
        Some(("RemoteInfo.conn_type", false)),
    );
    assert!(matches!(without_source, diagwire::Provenance::Reported(_)));
}

#[test]
fn changing_an_event_tag_is_caught_and_the_old_reader_sees_an_unknown_event() {
    let e = Edited::new("event.schema.json", |d| {
        at(d, "$defs/DialStarted/properties/type").insert("const", j(json!("DialBegun")));
        for branch in at(d, "$defs/Event/oneOf").as_arr_mut().expect("branches") {
            if let Some(list) = branch.at_mut("properties/type/not/enum") {
                for v in list.as_arr_mut().expect("tags") {
                    if v.as_str() == Some("DialStarted") {
                        *v = j(json!("DialBegun"));
                    }
                }
            }
        }
    });
    e.number_like_codegen();
    breaks(&e, "UNION_TAG_VALUE_CHANGED");
    let (kind, record) = e.counterexample("UNION_TAG_VALUE_CHANGED");
    assert_eq!(kind, RecordKind::Event.as_str());
    assert!(e.copy_accepts(&kind, &record));
    let read: EventRecord = serde_json::from_value(record).expect("the release reader parses it");
    assert!(
        matches!(read.event, Event::Other(ref o) if o.tag == "DialBegun"),
        "{read:?}"
    );
}

#[test]
fn narrowing_an_integer_is_caught_and_the_new_schemas_refuse_an_old_value() {
    let e = Edited::new("event.schema.json", |d| {
        let p = at(d, "$defs/DialStarted/properties/timeout_ms");
        p.insert("format", j(json!("uint32")));
        p.insert("maximum", j(json!(4_294_967_295u64)));
    });
    breaks(&e, "INTEGER_NARROWED");
    let (kind, record) = e.counterexample("INTEGER_NARROWED");
    release_reads(&kind, &record).expect("the release reader takes the wide value");
    assert!(!e.copy_accepts(&kind, &record));
}

#[test]
fn making_an_optional_field_required_is_caught_and_the_new_schemas_refuse_an_old_record() {
    let e = Edited::new("identity.schema.json", |d| {
        let p = at(d, "$defs/Identity/properties/hostname");
        p.remove("x-presence");
        p.remove("x-absent");
        p.insert("type", j(json!("string")));
        at(d, "$defs/Identity/required")
            .as_arr_mut()
            .expect("required")
            .push(j(json!("hostname")));
    });
    breaks(&e, "FIELD_OPTIONAL_TO_REQUIRED");
    let (kind, record) = e.counterexample("FIELD_OPTIONAL_TO_REQUIRED");
    release_reads(&kind, &record).expect("the release reader takes it");
    assert!(!e.copy_accepts(&kind, &record));
}

// ---------------------------------------------------------------------------------------------
// `diagwire review --base` on scratch commits.

/// A scratch repository with what the review reads: the schemas with their releases, the
/// changelog, and every generated output with what generates it.
fn scratch_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = |rel: &str| {
        let from = repo().join(rel);
        let to = dir.path().join(rel);
        copy_tree(&from, &to);
    };
    for rel in [
        "schemas",
        "generated/src",
        "generated/schemas",
        "codegen/tests/features",
        "codegen-features/src/features",
        "docs/reference",
        "compat-tests/tests/released_constructors",
        "generated/proto",
    ] {
        copy(rel);
    }
    // `schemas/` holds the number tables too (`proto-numbers.json`, each release's in its folder).
    std::fs::copy(repo().join("CHANGELOG.md"), dir.path().join("CHANGELOG.md")).expect("changelog");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "base",
        ],
    );
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut J)) {
    let mut doc: J =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
    edit(&mut doc);
    std::fs::write(
        path,
        serde_json::to_string_pretty(&doc).expect("JSON") + "\n",
    )
    .expect("write");
}

fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            message,
        ],
    );
}

#[test]
fn a_commit_that_removes_a_field_fails_the_review_with_a_rollout_order() {
    let dir = scratch_repo();
    edit_json(&dir.path().join("schemas/event.schema.json"), |d| {
        at(d, "$defs/MessageSent/properties").remove("trace_id");
    });
    diagwire_codegen::run(dir.path(), diagwire_codegen::Mode::Write).expect("regenerate");
    commit(dir.path(), "remove a field");
    let o = diagwire(dir.path(), &["review", "--base", "HEAD~1"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("FIELD_REMOVED_OPTIONAL"), "{out}");
    assert!(out.contains("Rollout order:"), "{out}");
    assert!(out.contains("❌ fails"), "{out}");
    assert!(
        out.contains("the schemas changed but CHANGELOG.md did not"),
        "{out}"
    );
}

#[test]
fn a_commit_that_adds_an_optional_field_with_a_minor_bump_and_a_changelog_entry_passes() {
    let dir = scratch_repo();
    edit_json(&dir.path().join("schemas/event.schema.json"), |d| {
        at(d, "$defs/DialStarted/properties").insert(
            "via_relay",
            j(json!({
                "description": "Whether the dial went through the relay.",
                "type": ["boolean", "null"],
                "x-presence": "omittable",
                "x-absent": "The transport did not say."
            })),
        );
    });
    let last = newest_release();
    let v: semver::Version = last.parse().expect("semver");
    let next = format!("{}.{}.0", v.major, v.minor + 1);
    std::fs::write(dir.path().join("schemas/VERSION"), format!("{next}\n")).expect("version");
    let changelog = std::fs::read_to_string(dir.path().join("CHANGELOG.md")).expect("changelog");
    let entry = format!(
        "## {next} — 2026-12-02\n\n- `DialStarted.via_relay`: whether a dial went through the relay.\n\n"
    );
    let changelog = changelog.replacen("## Unreleased\n", &format!("## Unreleased\n\n{entry}"), 1);
    std::fs::write(dir.path().join("CHANGELOG.md"), changelog).expect("changelog");
    diagwire_codegen::run(dir.path(), diagwire_codegen::Mode::Write).expect("regenerate");
    commit(dir.path(), "add an optional field");
    let o = diagwire(dir.path(), &["review", "--base", "HEAD~1"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("FIELD_ADDED_OPTIONAL"), "{out}");
    assert!(out.contains("✅ passes"), "{out}");
    let json = diagwire(
        dir.path(),
        &["review", "--base", "HEAD~1", "--format", "json"],
    );
    let v: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["passes"], true);
    assert_eq!(v["comparisons"][0]["rollout"]["order"][0], "bundle readers");
}

/// The deprecation line of the former spelling of `review --catalog`.
const RULES_DEPRECATED: &str = "`diagwire rules` is deprecated: use `diagwire review --catalog`\n";

#[test]
fn review_catalog_prints_the_rule_catalog_in_both_formats() {
    let md = diagwire(&repo(), &["review", "--catalog"]);
    assert_eq!(md.status.code(), Some(0), "{}", text(&md));
    assert_eq!(
        String::from_utf8_lossy(&md.stdout),
        diagwire_review::report::catalog_md()
    );
    assert!(md.stderr.is_empty(), "{}", text(&md));
    let json = diagwire(&repo(), &["review", "--catalog", "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let v: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["format_version"], "1.0.0");
    let v = &v["rules"];
    let ids: Vec<&str> = v
        .as_array()
        .expect("a list of rules")
        .iter()
        .map(|r| r["id"].as_str().expect("an id"))
        .collect();
    let catalog: Vec<&str> = diagwire_review::catalog::ALL.iter().map(|r| r.id).collect();
    assert_eq!(ids, catalog);
    assert_eq!(v[0]["bump"], "minor");
    assert_eq!(v[0]["old_reader_on_new_records"], "keeps it as unknown");
}

#[test]
fn review_catalog_does_not_take_a_base() {
    let o = diagwire(&repo(), &["review", "--catalog", "--base", "HEAD"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn the_former_rules_verb_says_it_is_deprecated_and_prints_the_same_catalog() {
    for format in ["md", "json"] {
        let old = diagwire(&repo(), &["rules", "--format", format]);
        let new = diagwire(&repo(), &["review", "--catalog", "--format", format]);
        assert_eq!(old.status.code(), Some(0), "{}", text(&old));
        assert_eq!(old.stdout, new.stdout, "{format}");
        assert_eq!(String::from_utf8_lossy(&old.stderr), RULES_DEPRECATED);
    }
}

#[test]
fn the_former_rules_verb_is_hidden_from_help() {
    let help = diagwire(&repo(), &["--help"]);
    let out = String::from_utf8_lossy(&help.stdout);
    assert!(out.contains("review"), "{out}");
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("rules ")),
        "{out}"
    );
    let review = diagwire(&repo(), &["review", "--help"]);
    assert!(String::from_utf8_lossy(&review.stdout).contains("--catalog"));
}
