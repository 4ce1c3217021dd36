//! The review family (`diff`, `review`, `changelog`) on hostile input: one table, one case per
//! way a pull request's schema tree (or a command line) could crash, hang or fool the gate, each
//! run through the binary with a time limit and checked by one function for its exit status, a
//! message, no raw control character in anything printed, and the report's own structure.

use crate::common;

use common::{copy_tree, repo};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What a case may take at most (the tool's own work is a few seconds in a debug build).
const LIMIT: Duration = Duration::from_secs(60);

/// The output of a run that ended in time: status, standard output, standard error.
struct Run {
    code: Option<i32>,
    out: String,
    err: String,
    took: Duration,
}

/// Runs the binary in `dir`, killing it past [`LIMIT`].
fn run(dir: &Path, args: &[&str]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run diagwire");
    let drain = |r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.take(64 << 20).read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("diagwire {args:?} ran past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let bytes = |h: std::thread::JoinHandle<Vec<u8>>| {
        String::from_utf8_lossy(&h.join().expect("reader")).into_owned()
    };
    Run {
        code,
        out: bytes(out),
        err: bytes(err),
        took: start.elapsed(),
    }
}

/// The small contract the rule fixtures start from.
fn sample() -> Value {
    let text = std::fs::read_to_string(
        repo().join("review/tests/rules/FIELD_RENAMED/old/sample.schema.json"),
    )
    .expect("fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn write_tree(dir: &Path, doc: &Value) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(
        dir.join("sample.schema.json"),
        serde_json::to_string_pretty(doc).expect("JSON"),
    )
    .expect("write");
}

/// `old/` holds the sample contract, `new/` the sample changed by `edit`.
fn pair(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let base = sample();
    write_tree(&dir.join("old"), &base);
    let mut new = base;
    edit(&mut new);
    write_tree(&dir.join("new"), &new);
}

/// A struct of four required fields of its own type, as a record kind.
fn recursive(doc: &mut Value) {
    let field = json!({"description": "Itself.", "$ref": "#/$defs/Knot"});
    doc["$defs"]["Knot"] = json!({
        "description": "A struct that holds itself four times.",
        "x-record": "knot",
        "type": "object",
        "required": ["a", "b", "c", "d", "id"],
        "properties": {"a": field, "b": field, "c": field, "d": field,
            "id": {"description": "A required string.", "type": "string"}}
    });
}

/// The newest release copied to `dir/old` and `dir/new` (schemas and number tables), so a case can
/// change the new side's numbers.
fn release_pair(dir: &Path) -> PathBuf {
    let newest = diagwire_schema::released_versions(&repo())
        .expect("releases")
        .last()
        .expect("a release")
        .to_string();
    let from = repo().join("schemas/releases").join(newest);
    for side in ["old", "new"] {
        std::fs::create_dir_all(dir.join(side)).expect("mkdir");
        for e in std::fs::read_dir(&from).expect("release") {
            let p = e.expect("entry").path();
            std::fs::copy(&p, dir.join(side).join(p.file_name().expect("name"))).expect("copy");
        }
    }
    dir.join("new/proto-numbers.json")
}

fn edit_numbers(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("numbers")).expect("JSON");
    edit(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).expect("JSON")).expect("write");
}

/// Renumbers `DialStarted.timeout_ms` to a fresh number: a protobuf break.
fn renumber(v: &mut Value) {
    let t = &mut v["messages"]["DialStarted"]["numbers"];
    let fresh = t
        .as_object()
        .expect("DialStarted")
        .values()
        .filter_map(Value::as_u64)
        .max()
        .expect("numbers")
        + 1;
    t["timeout_ms"] = fresh.into();
}

/// A scratch repository with what `review` reads, committed, so `review --base HEAD` compares
/// the working tree with it.
fn scratch_repo(dir: &Path) {
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
        copy_tree(&repo().join(rel), &dir.join(rel));
    }
    std::fs::copy(repo().join("CHANGELOG.md"), dir.join("CHANGELOG.md")).expect("changelog");
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "base",
        ],
    ] {
        let o = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

fn mkfifo(path: &Path) {
    let o = Command::new("mkfifo").arg(path).output().expect("mkfifo");
    assert!(o.status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// A value of an open enum that tries to end the table, forge the verdict and hide the rest.
const FORGED: &str = "calm` | x | y |\n\n**No breaking changes. Safe to merge.**\n\n## Schema review ✅ passes\n<!-- \u{1b}[2J";

/// One hostile case: how to lay out the scratch folder, what to run there, and what must come out.
struct Case {
    name: &'static str,
    setup: fn(&Path),
    args: &'static [&'static str],
    code: i32,
    says: &'static str,
    /// Extra checks of the standard output (the report's structure).
    report: fn(&str),
}

fn nothing(_: &str) {}

/// A line without its code spans (a run of backticks up to the next run of the same length), as
/// Markdown reads it: what is left is what can be HTML or formatting.
fn outside_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let fence = "`".repeat(run);
        let after = &rest[start + run..];
        match after.find(&fence) {
            Some(end) if !after[end + run..].starts_with('`') => rest = &after[end + run..],
            _ => {
                out.push_str(&fence);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A table row's cells, split on the `|` GitHub splits on (not an escaped one).
fn cells(row: &str) -> usize {
    row.replace("\\|", "")
        .matches('|')
        .count()
        .saturating_sub(1)
}

/// A `diff` report whose only table has exactly one finding row of five cells, and no line, HTML
/// or comment the schema wrote.
fn one_row_no_forgery(out: &str) {
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        rows.len(),
        3,
        "a header, a separator and one finding:\n{out}"
    );
    assert!(rows.iter().all(|r| cells(r) == 5), "{rows:?}");
    for l in out.lines() {
        assert!(!l.starts_with("**No breaking"), "{l}");
        assert!(!l.starts_with("## "), "{l}");
        assert!(!outside_code(l).contains('<'), "{l}");
    }
}

/// A review comment with exactly the verdict the tool wrote and the table rows of its
/// comparisons (one per release, one for the base).
fn review_verdict_is_the_tools(out: &str) {
    let verdicts: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("## Schema review"))
        .collect();
    assert_eq!(verdicts, ["## Schema review ❌ fails"], "{out}");
    assert!(!out.lines().any(|l| outside_code(l).contains('<')), "{out}");
    assert!(
        !out.lines().any(|l| l.starts_with("**No breaking")),
        "{out}"
    );
    let releases = diagwire_schema::released_versions(&repo())
        .expect("releases")
        .len();
    let comparison_rows = out
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" → "))
        .count();
    // The summary table: one row per comparison; each comparison's findings table is listed
    // separately and its rows do not hold ` → `.
    assert_eq!(comparison_rows, releases + 1, "{out}");
}

/// A review comment of thousands of findings within the size GitHub takes for a comment: the
/// tool's verdict first, the summary table whole, every findings table cut between two rows, and
/// a line that says how many findings are not shown and how to see them all.
fn review_is_bounded(out: &str) {
    review_verdict_is_the_tools(out);
    let chars = out.chars().count();
    assert!(
        chars <= diagwire_review::md::MAX_CHARS,
        "{chars} characters"
    );
    assert_eq!(out.lines().next(), Some("## Schema review ❌ fails"));
    assert!(
        out.contains("findings not shown: the report is limited to 60000 characters. `diagwire review --format json` prints them all."),
        "{out}"
    );
    for row in out.lines().filter(|l| l.starts_with('|')) {
        assert!(row.ends_with('|'), "a row cut inside: {row}");
        let n = cells(row);
        assert!(n == 5 || n == 7, "{n} cells: {row}");
    }
    // Every finding's row has its entry below the table: nothing half listed.
    let rows = out.lines().filter(|l| l.starts_with("| `")).count();
    let entries = out.lines().filter(|l| l.starts_with("- **`")).count();
    assert_eq!(rows, entries, "{out}");
    assert!(rows > 10, "some findings are listed: {out}");
}

const CASES: &[Case] = &[
    Case {
        name: "a_json_key_that_is_not_a_rust_identifier_is_refused_with_its_place",
        setup: |d| {
            pair(d, |s| {
                s["$defs"]["Sample"]["properties"]["exit-code"] = json!({
                    "description": "An exit code.", "type": ["string", "null"],
                    "x-presence": "omittable", "x-absent": "Not known."
                });
            })
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/sample.schema.json#/$defs/Sample/properties/exit-code: `exit-code` is not a field name",
        report: nothing,
    },
    Case {
        name: "a_struct_holding_itself_four_times_gets_no_unbounded_counterexample",
        setup: |d| {
            let mut base = sample();
            recursive(&mut base);
            write_tree(&d.join("old"), &base);
            let mut new = base;
            new["$defs"]["Knot"]["properties"]
                .as_object_mut()
                .expect("props")
                .remove("id");
            new["$defs"]["Knot"]["required"] = json!(["a", "b", "c", "d"]);
            write_tree(&d.join("new"), &new);
        },
        args: &["diff", "old", "new"],
        code: 1,
        says: "recursive: `Knot` holds itself",
        report: nothing,
    },
    Case {
        name: "an_unchanged_recursive_struct_compares_equal_in_time",
        setup: |d| {
            let mut base = sample();
            recursive(&mut base);
            write_tree(&d.join("old"), &base);
            write_tree(&d.join("new"), &base);
        },
        args: &["diff", "old", "new"],
        code: 0,
        says: "No differences",
        report: nothing,
    },
    Case {
        name: "thousands_of_breaks_build_a_bounded_number_of_counterexamples",
        setup: |d| {
            // The record holds 300 structs that each lose a required field: 300 breaks, each
            // counterexample a record of the whole tree.
            let mut base = sample();
            for i in 0..300 {
                base["$defs"][format!("Gen{i}")] = json!({
                    "description": "A generated struct.", "type": "object",
                    "required": ["a", "b"],
                    "properties": {"a": {"description": "A.", "type": "string"},
                        "b": {"description": "B.", "type": "string"}}});
                base["$defs"]["Sample"]["properties"][format!("g{i}")] =
                    json!({"description": "G.", "$ref": format!("#/$defs/Gen{i}")});
                base["$defs"]["Sample"]["required"]
                    .as_array_mut()
                    .expect("required")
                    .push(json!(format!("g{i}")));
            }
            write_tree(&d.join("old"), &base);
            let mut new = base;
            for i in 0..300 {
                let def = &mut new["$defs"][format!("Gen{i}")];
                def["properties"]
                    .as_object_mut()
                    .expect("props")
                    .remove("b");
                def["required"] = json!(["a"]);
            }
            write_tree(&d.join("new"), &new);
        },
        args: &["diff", "old", "new"],
        code: 1,
        says: "not built: this comparison already has 100 counterexamples",
        report: nothing,
    },
    Case {
        name: "a_schema_file_linked_to_dev_zero_is_refused_unread",
        setup: |d| {
            pair(d, |_| {});
            symlink("/dev/zero", &d.join("new/zero.schema.json"));
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/zero.schema.json: a symbolic link",
        report: nothing,
    },
    Case {
        name: "a_fifo_named_like_a_schema_file_is_refused_unopened",
        setup: |d| {
            pair(d, |_| {});
            mkfifo(&d.join("new/block.schema.json"));
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/block.schema.json: a FIFO, not a regular file",
        report: nothing,
    },
    Case {
        name: "a_schema_file_past_the_cap_is_refused_before_it_is_read",
        setup: |d| {
            pair(d, |_| {});
            // 600 MiB of nothing on disk: a sparse file.
            let f = std::fs::File::create(d.join("new/huge.schema.json")).expect("create");
            f.set_len(600 << 20).expect("set_len");
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/huge.schema.json: larger than the cap",
        report: nothing,
    },
    Case {
        name: "a_reference_to_a_schema_file_that_does_not_exist_is_located",
        setup: |d| {
            pair(d, |s| {
                s["$defs"]["Sample"]["properties"]["color"]["$ref"] =
                    json!("urn:diagwire:nowhere#/$defs/Color");
            })
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/sample.schema.json#/$defs/Sample/properties/color/$ref: `urn:diagwire:nowhere#/$defs/Color` names the schema file `nowhere`",
        report: nothing,
    },
    Case {
        name: "an_enum_value_cannot_add_table_rows_or_lines_to_the_report",
        setup: |d| {
            pair(d, |s| {
                s["$defs"]["Color"]["enum"]
                    .as_array_mut()
                    .expect("enum")
                    .push(json!(FORGED));
            })
        },
        args: &["diff", "old", "new"],
        code: 1,
        says: "ENUM_VALUE_ADDED_CLOSED",
        report: one_row_no_forgery,
    },
    Case {
        name: "a_malformed_number_table_fails_the_diff_instead_of_skipping_protobuf",
        setup: |d| {
            let numbers = release_pair(d);
            edit_numbers(&numbers, |v| {
                renumber(v);
                v["messages"]["DialStarted"]["numbers"]["bogus"] = json!("seven");
            });
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "the protobuf forms cannot be compared",
        report: nothing,
    },
    Case {
        name: "a_renumbered_field_with_a_sound_table_is_a_protobuf_break",
        setup: |d| {
            let numbers = release_pair(d);
            edit_numbers(&numbers, renumber);
        },
        args: &["diff", "old", "new"],
        code: 1,
        says: "PROTO_NUMBER_CHANGED",
        report: nothing,
    },
    Case {
        name: "a_version_file_that_is_not_utf8_is_refused_with_its_place",
        setup: |d| {
            pair(d, |_| {});
            std::fs::write(d.join("new/VERSION"), b"1.0.\xff\n").expect("write");
        },
        args: &["diff", "old", "new"],
        code: 2,
        says: "new/VERSION: not UTF-8",
        report: nothing,
    },
    Case {
        name: "diff_on_a_file_says_it_is_a_file",
        setup: |d| pair(d, |_| {}),
        args: &["diff", "old/sample.schema.json", "new"],
        code: 2,
        says: "old/sample.schema.json: a file, not a folder of schema files",
        report: nothing,
    },
    Case {
        name: "diff_on_a_missing_path_says_there_is_no_such_folder",
        setup: |d| pair(d, |_| {}),
        args: &["diff", "old", "nowhere"],
        code: 2,
        says: "nowhere: no such folder",
        report: nothing,
    },
    Case {
        name: "a_base_revision_that_looks_like_an_option_is_refused",
        setup: |_| {},
        args: &["review", "--base=--output=x"],
        code: 2,
        says: "starts with `-`, so git would take it for an option",
        report: nothing,
    },
    Case {
        name: "a_changelog_date_that_is_not_a_real_date_is_refused",
        setup: |_| {},
        args: &["changelog", "--date", "2026-02-30"],
        code: 2,
        says: "--date 2026-02-30: no such day in the calendar",
        report: nothing,
    },
    Case {
        name: "a_changelog_date_with_text_is_refused",
        setup: |_| {},
        args: &["changelog", "--date", "2026-01-01\n## 9.9.9"],
        code: 2,
        says: "not a date written YYYY-MM-DD",
        report: nothing,
    },
    Case {
        name: "links_to_the_folder_itself_under_generated_fail_the_review_located",
        setup: |d| {
            scratch_repo(d);
            symlink(".", &d.join("generated/src/loop1"));
            symlink(".", &d.join("generated/src/loop2"));
            symlink("/", &d.join("generated/src/root"));
        },
        args: &["review", "--base", "HEAD"],
        code: 2,
        says: "generated/src/loop1: a symbolic link",
        report: nothing,
    },
    Case {
        name: "a_changelog_that_is_a_fifo_fails_the_review_located",
        setup: |d| {
            scratch_repo(d);
            std::fs::remove_file(d.join("CHANGELOG.md")).expect("rm");
            mkfifo(&d.join("CHANGELOG.md"));
        },
        args: &["review"],
        code: 2,
        says: "CHANGELOG.md: a FIFO, not a regular file",
        report: nothing,
    },
    Case {
        name: "an_enum_value_cannot_forge_the_review_verdict",
        setup: |d| {
            scratch_repo(d);
            let path = d.join("schemas/event.schema.json");
            let mut doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
            let open = doc["$defs"]
                .as_object_mut()
                .expect("defs")
                .values_mut()
                .find_map(|d| d.get_mut("x-open-enum").and_then(Value::as_array_mut))
                .expect("an open enum");
            open.push(json!(FORGED));
            std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
                .expect("write");
            // The generator numbers the new value and writes the code: the review then finds the
            // change itself, and fails it for the version and the changelog only.
            diagwire_codegen::run(d, diagwire_codegen::Mode::Write).expect("regenerate");
        },
        args: &["review", "--base", "HEAD"],
        code: 1,
        says: "ENUM_VALUE_ADDED_OPEN",
        report: review_verdict_is_the_tools,
    },
    Case {
        name: "thousands_of_hostile_findings_keep_the_comment_within_githubs_limit",
        setup: |d| {
            scratch_repo(d);
            let path = d.join("schemas/event.schema.json");
            let mut doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
            let open = doc["$defs"]
                .as_object_mut()
                .expect("defs")
                .values_mut()
                .find_map(|d| d.get_mut("x-open-enum").and_then(Value::as_array_mut))
                .expect("an open enum");
            for i in 0..2000 {
                open.push(json!(format!("{FORGED}{i}")));
            }
            std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
                .expect("write");
            diagwire_codegen::run(d, diagwire_codegen::Mode::Write).expect("regenerate");
        },
        args: &["review", "--base", "HEAD"],
        code: 1,
        says: "findings not shown",
        report: review_is_bounded,
    },
];

/// Runs one case in a scratch folder and checks everything it printed.
fn check(case: &Case) {
    let dir = tempfile::tempdir().expect("temp dir");
    (case.setup)(dir.path());
    let r = run(dir.path(), case.args);
    let all = format!("{}{}", r.out, r.err);
    assert_eq!(r.code, Some(case.code), "{}: {all}", case.name);
    assert!(
        all.contains(case.says),
        "{}: wanted {:?} in:\n{all}",
        case.name,
        case.says
    );
    assert!(
        !all.chars().any(|c| c.is_control() && c != '\n'),
        "{}: a raw control character was printed:\n{all:?}",
        case.name
    );
    assert!(r.took < LIMIT, "{}: took {:?}", case.name, r.took);
    (case.report)(&r.out);
}

#[test]
fn every_hostile_case_ends_in_time_with_its_exit_status_and_message() {
    for case in CASES {
        check(case);
    }
}
