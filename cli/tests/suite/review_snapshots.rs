//! The review family's output on benign trees is byte for byte what it was: `review` on this
//! repository (which passes), `diff` between the frozen releases (Markdown and JSON), `diff` on
//! every rule fixture pair, and a `changelog` draft. Escaping what comes from a schema must not
//! change a report whose names need no escaping.
//!
//! The snapshots are in `tests/snapshots/review/`. `review-self.md` and `changelog.md` read the
//! current schemas, so a change to them changes these two: rewrite them with
//! `UPDATE_SNAPSHOTS=1 cargo test -p diagwire-cli --test suite review_snapshots` and read the difference.

use crate::common;

use common::repo;
use std::path::Path;
use std::process::Command;

/// Exit status and standard output of the binary run at the repository's root.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run diagwire");
    (
        o.status.code(),
        String::from_utf8(o.stdout).expect("UTF-8 output"),
    )
}

/// Compares `got` with the snapshot `name` (or rewrites it when asked to).
#[track_caller]
fn snapshot(name: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/review")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, got).expect("write snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path).expect("snapshot");
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{name} differs from its snapshot from line {}:\n got: {:?}\nwant: {:?}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

#[test]
fn review_of_this_repository_passes_with_the_recorded_comment() {
    let (code, out) = run(&["review"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("## Schema review ✅ passes\n"), "{out}");
    snapshot("review-self.md", &out);
}

#[test]
fn diff_between_releases_is_the_recorded_report_in_both_formats() {
    let (_, a) = run(&["diff", "1.0.0", "1.2.0"]);
    let (_, b) = run(&["diff", "1.1.0", "1.2.0"]);
    snapshot("diff-releases.md", &(a + &b));
    let (_, json) = run(&["diff", "1.0.0", "1.2.0", "--format", "json"]);
    snapshot("diff-releases.json", &json);
}

#[test]
fn diff_of_every_rule_fixture_is_the_recorded_report() {
    let dir = repo().join("review/tests/rules");
    let mut ids: Vec<String> = std::fs::read_dir(&dir)
        .expect("rules")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    ids.sort();
    let mut all = String::new();
    for id in ids {
        let (old, new) = (
            format!("review/tests/rules/{id}/old"),
            format!("review/tests/rules/{id}/new"),
        );
        let (code, out) = run(&["diff", &old, &new]);
        all.push_str(&format!(
            "===== {id}: exit {}\n{out}",
            code.map_or("none".into(), |c| c.to_string())
        ));
    }
    snapshot("rules.md", &all);
}

#[test]
fn changelog_draft_is_the_recorded_section() {
    let (code, out) = run(&["changelog", "--since", "1.0.0", "--date", "2026-01-01"]);
    assert_eq!(code, Some(0), "{out}");
    snapshot("changelog.md", &out);
}
