//! Every command that prints JSON escapes what a terminal would interpret: a value holding the
//! single-character CSI (U+009B), DEL, a C1 control, a line separator or a bidirectional override
//! comes out as `\uXXXX` (serde_json alone escapes only U+0000–U+001F), and the output still
//! parses back to the same value. One case per output family, each run as the real binary and
//! held to one check; and no command module writes JSON but through the one escaping writer.

use crate::common;

use common::{copy_tree, repo};
use std::path::Path;
use std::process::{Command, Stdio};

use diagwire_runtime::text::is_hidden;
use serde_json::Value;

/// What the cases put where the output will quote it.
const HOSTILE: &str = "x\u{9b}31m\u{7f}\u{85}\u{2028}\u{202e}\u{2066}y";

/// The example bundle the cases read.
const RUN: &str = "n3-relay-flap-oldest";

/// The example bundle under a folder named [`HOSTILE`]: the path the output names.
fn bundle_under_hostile_folder(dir: &Path) -> Vec<String> {
    copy_tree(
        &repo().join("examples/bundles").join(RUN),
        &dir.join(HOSTILE).join(RUN),
    );
    vec![format!("{HOSTILE}/{RUN}")]
}

/// The example bundle whose orchestrator's host name is [`HOSTILE`]: a value from a record.
fn bundle_with_hostile_host(dir: &Path) -> Vec<String> {
    copy_tree(&repo().join("examples/bundles").join(RUN), &dir.join(RUN));
    let boot = dir.join(RUN).join("orchestrator/boot.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&boot).expect("read")).expect("JSON");
    record["hostname"] = Value::from(HOSTILE);
    std::fs::write(&boot, serde_json::to_vec_pretty(&record).expect("JSON")).expect("write");
    vec![RUN.to_owned()]
}

/// A schema comparison whose old side is a folder named [`HOSTILE`].
fn schema_pair_with_hostile_side(dir: &Path) -> Vec<String> {
    let rule = repo().join("review/tests/rules/ENUM_VALUE_ADDED_OPEN");
    copy_tree(&rule.join("old"), &dir.join(HOSTILE));
    copy_tree(&rule.join("new"), &dir.join("new"));
    vec![HOSTILE.to_owned(), "new".to_owned()]
}

/// One output family: the command before its paths, and how the paths are laid out.
struct Case {
    name: &'static str,
    command: &'static [&'static str],
    setup: fn(&Path) -> Vec<String>,
    /// Whether the paths are given twice (two bundles compared with themselves).
    twice: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "validate_json_escapes_a_path",
        command: &["validate", "--format", "json"],
        setup: bundle_under_hostile_folder,
        twice: false,
    },
    Case {
        name: "summary_json_escapes_a_value_from_a_record",
        command: &["summary", "--format", "json"],
        setup: bundle_with_hostile_host,
        twice: false,
    },
    Case {
        name: "check_json_escapes_a_path",
        command: &["check", "--format", "json"],
        setup: bundle_under_hostile_folder,
        twice: false,
    },
    Case {
        name: "parity_json_escapes_a_path",
        command: &["parity", "--format", "json"],
        setup: bundle_under_hostile_folder,
        twice: true,
    },
    Case {
        name: "diff_json_escapes_a_tree_name",
        command: &["diff", "--format", "json"],
        setup: schema_pair_with_hostile_side,
        twice: false,
    },
];

/// Whether `value` holds [`HOSTILE`] in a string or a key.
fn holds_hostile(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(HOSTILE),
        Value::Array(a) => a.iter().any(holds_hostile),
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.contains(HOSTILE) || holds_hostile(v)),
        _ => false,
    }
}

fn check(case: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut paths = (case.setup)(dir.path());
    if case.twice {
        paths.extend(paths.clone());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_diagwire"))
        .args(case.command)
        .args(&paths)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("run diagwire");
    let text = String::from_utf8(out.stdout).map_err(|e| format!("{}: {e}", case.name))?;
    if let Some(c) = text.chars().find(|&c| is_hidden(c) && c != '\n') {
        return Err(format!("{}: prints U+{:04X} raw", case.name, c as u32));
    }
    for escape in [
        "\\u009b", "\\u007f", "\\u0085", "\\u2028", "\\u202e", "\\u2066",
    ] {
        if !text.contains(escape) {
            return Err(format!("{}: no {escape} in:\n{text}", case.name));
        }
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not JSON ({e}):\n{text}", case.name))?;
    if !holds_hostile(&value) {
        return Err(format!(
            "{}: the value does not read back:\n{text}",
            case.name
        ));
    }
    Ok(())
}

#[cfg(unix)]
#[test]
fn every_json_output_escapes_what_a_terminal_interprets_and_reads_back_the_same() {
    let failures: Vec<String> = CASES.iter().filter_map(|c| check(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The command modules print JSON only through `diagwire::problem::json_pretty`: none calls
/// serde_json's own writers.
#[test]
fn no_command_writes_json_but_through_the_escaping_writer() {
    let src = repo().join("cli/src");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&src).expect("read dir") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        for writer in [
            "serde_json::to_string",
            "serde_json::to_writer",
            "serde_json::to_vec",
        ] {
            if text.contains(writer) {
                offenders.push(format!("{}: {writer}", path.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}
