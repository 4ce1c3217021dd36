//! A value from a bundle never reaches a terminal raw: a hostile run id, node directory or role
//! (ESC `[31m`, the one-character CSI U+009B, the bidi override U+202E, a line break) printed by
//! `check` (Markdown and JSON), its follow lines (`check --follow`, both formats) and `summary`
//! (Markdown) comes out escaped by the one rule of
//! `diagwire::problem::printable`; JSON stays valid and keeps the value intact.

use crate::common;

use std::fs;
use std::path::Path;

use serde_json::Value;

const RUN: &str = "n3-relay-flap";

/// The hostile values, each with the text that follows it (a line break would start a forged
/// line beginning with it).
const HOSTILE: &[&str] = &["\u{1b}[31m", "\u{9b}31m", "\u{202e}", "\n"];

/// What follows each hostile value, so a forged line is recognizable.
const FORGED: &str = "FORGED";

/// Where a hostile value goes: which record value it is, and how it is put there.
struct Field {
    name: &'static str,
    put: fn(&Path, &str),
    /// Whether `check --format json` carries the value as a value (the run id, a file's path),
    /// so it must read back intact.
    carried: fn(&Value, &str) -> bool,
}

fn fields() -> Vec<Field> {
    vec![
        Field {
            name: "run id",
            put: |run, v| {
                edit_json(run, "MANIFEST.json", |m| {
                    m["run_id"] = Value::from(format!("{RUN}{v}{FORGED}"));
                })
            },
            carried: |check, v| check["run_id"] == format!("{RUN}{v}{FORGED}"),
        },
        Field {
            name: "node directory",
            put: |run, v| {
                fs::rename(run.join("relay"), run.join(format!("relay{v}{FORGED}")))
                    .expect("rename")
            },
            carried: |check, v| {
                strings(check)
                    .iter()
                    .any(|s| s.contains(&format!("relay{v}{FORGED}/boot.json")))
            },
        },
        Field {
            name: "role (free text)",
            put: |run, v| {
                edit_json(run, "relay/boot.json", |b| {
                    b["role"] = Value::from(format!("relay{v}{FORGED}"));
                })
            },
            carried: |_, _| true,
        },
    ]
}

fn edit_json(run: &Path, rel: &str, edit: impl FnOnce(&mut Value)) {
    let path = run.join(rel);
    let mut v: Value = serde_json::from_slice(&fs::read(&path).expect("read")).expect("JSON");
    edit(&mut v);
    fs::write(&path, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write");
}

/// Every string of a JSON value.
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o
            .iter()
            .flat_map(|(k, v)| std::iter::once(k.clone()).chain(strings(v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The output holds no hidden character but the line breaks between lines, and no line begins
/// with what followed the hostile value.
fn check_escaped(out: &str, what: &str) {
    let raw: Vec<char> = out
        .chars()
        .filter(|c| *c != '\n' && diagwire_runtime::text::is_hidden(*c))
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?}");
    for line in out.lines() {
        assert!(
            !line
                .trim_start_matches(['`', ' ', '|', '*', '-'])
                .starts_with(FORGED),
            "{what}: a forged line: {line:?}"
        );
    }
}

fn run(args: &[&str]) -> String {
    let out = common::diagwire(args);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {:?}\n{}",
        out.status,
        common::text(&out.stderr)
    );
    check_escaped(&common::text(&out.stderr), &format!("{args:?} (stderr)"));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `check --follow` of the finished bundle directory `dir` (it settles 200 ms after its
/// finalize record): its lines. Killed past 60 s.
fn follow(dir: &str, format: &str) -> String {
    let args = [
        "check", "--follow", dir, "--settle", "200ms", "--format", format,
    ];
    let os: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let out = common::diagwire_within(&os, std::time::Duration::from_secs(60));
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "{args:?}: {:?}\n{}",
        out.status,
        common::text(&out.stderr)
    );
    check_escaped(&common::text(&out.stderr), &format!("{args:?} (stderr)"));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn hostile_record_values_reach_no_terminal_raw() {
    for field in fields() {
        for value in HOSTILE {
            let what = format!("{} holding {value:?}", field.name);
            let dir = tempfile::tempdir().expect("temp dir");
            let bundle = dir.path().join(RUN);
            common::copy_tree(&common::repo().join("examples/bundles").join(RUN), &bundle);
            (field.put)(&bundle, value);
            let shown = bundle.to_str().expect("UTF-8");

            let md = run(&["check", shown]);
            check_escaped(&md, &format!("{what}: check"));
            let json = run(&["check", shown, "--format", "json"]);
            check_escaped(&json, &format!("{what}: check --format json"));
            let parsed: Value = serde_json::from_str(&json).expect("check's JSON is valid");
            assert!(
                (field.carried)(&parsed["check"], value),
                "{what}: the value is not intact in check's JSON"
            );
            for format in ["md", "json"] {
                let lines = follow(shown, format);
                check_escaped(&lines, &format!("{what}: check --follow --format {format}"));
                if format == "json" {
                    for line in lines.lines() {
                        serde_json::from_str::<Value>(line).expect("each follow line is JSON");
                    }
                }
            }
            let summary = run(&["summary", shown, "--format", "md"]);
            check_escaped(&summary, &format!("{what}: summary"));
            // Not vacuous: the value is shown, escaped.
            let escaped = diagwire::problem::printable(value).into_owned();
            assert!(
                [&md, &summary]
                    .iter()
                    .any(|o| o.contains(&format!("{escaped}{FORGED}"))),
                "{what}: the escaped value is shown nowhere"
            );
        }
    }
}
