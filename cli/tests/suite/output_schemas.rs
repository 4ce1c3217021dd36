//! The tool's own JSON has a contract: every command that prints JSON has a JSON Schema under
//! `schemas/tools/`, derived from its output type, fresh, versioned, and met by what the command
//! prints on the shipped example bundles.

use std::path::Path;

use serde_json::Value;

use crate::common;
use common::{diagwire, repo, text};

const EXAMPLES: &[&str] = &[
    "examples/bundles/n3-relay-flap",
    "examples/bundles/n3-relay-flap-oldest",
];

/// Every command line that prints JSON, per example bundle (`{}` stands for the bundle), with the
/// schema it must meet.
const JSON_COMMANDS: &[(&str, &[&str])] = &[
    ("summary", &["summary", "{}", "--format", "json"]),
    ("validate", &["validate", "{}", "--format", "json"]),
    ("check", &["check", "{}", "--format", "json"]),
    ("check", &["check", "{}", "--coverage", "--format", "json"]),
    (
        "check",
        &[
            "check",
            "{}",
            "--coverage",
            "--baseline",
            "examples/bundles/n3-relay-flap-oldest",
            "--fail-on-coverage-below",
            "10",
            "--format",
            "json",
        ],
    ),
    ("parity", &["parity", "{}", "{}", "--format", "json"]),
];

/// Runs `args` and checks its JSON against `schemas/tools/<schema>.schema.json`.
fn check_output_meets_schema(schema: &str, args: &[&str]) {
    let path = repo()
        .join("schemas/tools")
        .join(format!("{schema}.schema.json"));
    let schema_value: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("schema JSON");
    let validator = jsonschema::validator_for(&schema_value)
        .unwrap_or_else(|e| panic!("{}: not a valid JSON Schema: {e}", path.display()));
    let out = diagwire(args);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`diagwire {}` printed no JSON ({e}): {}{}",
            args.join(" "),
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "`diagwire {}` does not meet {}:\n{}",
        args.join(" "),
        path.display(),
        errors.join("\n")
    );
    let version = json.get("format_version").and_then(Value::as_str);
    let declared = schema_value
        .pointer("/properties/format_version/const")
        .and_then(Value::as_str);
    assert!(
        version.is_some() && version == declared,
        "`diagwire {}`: format_version {version:?}, schema {declared:?}",
        args.join(" ")
    );
}

#[test]
fn every_json_output_meets_its_schema_on_both_example_bundles() {
    for bundle in EXAMPLES {
        for (schema, args) in JSON_COMMANDS {
            let args: Vec<&str> = args
                .iter()
                .map(|a| if *a == "{}" { *bundle } else { *a })
                .collect();
            check_output_meets_schema(schema, &args);
        }
    }
}

/// The commands whose JSON is about the repository's schema trees rather than a bundle.
const TREE_COMMANDS: &[(&str, &[&str])] = &[
    ("diff", &["diff", "1.0.0", "current", "--format", "json"]),
    ("diff", &["diff", "1.1.0", "1.2.0", "--format", "json"]),
    ("review", &["review", "--format", "json"]),
    (
        "review-catalog",
        &["review", "--catalog", "--format", "json"],
    ),
];

#[test]
fn every_schema_tree_json_output_meets_its_schema() {
    for (schema, args) in TREE_COMMANDS {
        check_output_meets_schema(schema, args);
    }
}

#[test]
fn parity_of_the_two_example_bundles_meets_its_schema() {
    check_output_meets_schema(
        "parity",
        &["parity", EXAMPLES[1], EXAMPLES[0], "--format", "json"],
    );
}

#[test]
fn the_checked_in_output_schemas_are_fresh() {
    let out = diagwire(&["output-schema", "--check", "schemas/tools"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Copies `schemas/tools` to a temporary folder, lets `edit` change it, and returns what
/// `--check` says of the copy.
fn check_edited_copy(edit: impl FnOnce(&Path)) -> (bool, String) {
    let tmp = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("schemas/tools")).expect("schemas/tools") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).expect("copy");
    }
    edit(tmp.path());
    let out = diagwire(&["output-schema", "--check", &tmp.path().to_string_lossy()]);
    (out.status.success(), text(&out.stderr))
}

#[test]
fn a_missing_output_schema_fails_the_check_and_names_the_fixing_command() {
    let (ok, err) = check_edited_copy(|dir| {
        std::fs::remove_file(dir.join("summary.schema.json")).expect("remove")
    });
    assert!(!ok);
    assert!(
        err.contains("cargo diagwire output-schema --write schemas/tools"),
        "{err}"
    );
}

#[test]
fn a_shape_change_without_a_new_format_version_is_refused() {
    let (ok, err) = check_edited_copy(|dir| {
        let path = dir.join("summary.schema.json");
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        v["properties"]["run"] = serde_json::json!({"type": "string"});
        std::fs::write(&path, serde_json::to_string_pretty(&v).expect("text")).expect("write");
    });
    assert!(!ok);
    let version = diagwire_summary::output::FORMAT_VERSION;
    assert!(
        err.contains(&format!("changed but its format_version {version} did not")),
        "{err}"
    );
}

#[test]
fn an_edited_description_alone_is_stale_not_a_shape_change() {
    let (ok, err) = check_edited_copy(|dir| {
        let path = dir.join("summary.schema.json");
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        v["description"] = Value::String("edited by hand".into());
        std::fs::write(&path, serde_json::to_string_pretty(&v).expect("text")).expect("write");
    });
    assert!(!ok);
    assert!(err.contains("stale; run"), "{err}");
}

#[test]
fn a_schema_no_command_prints_is_reported() {
    let (ok, err) =
        check_edited_copy(|dir| std::fs::write(dir.join("gone.schema.json"), "{}").expect("write"));
    assert!(!ok);
    assert!(err.contains("no command prints this JSON"), "{err}");
}
