//! The JSON Schemas of the tool's own JSON output: one per command that prints JSON, derived with
//! schemars from the command's output types and checked in under `schemas/tools/`, where
//! consumers of the tool's JSON find them. `diagwire output-schema` prints one, writes them all
//! (`--write DIR`) or checks the checked-in copies (`--check DIR`): a schema that changed while
//! its `format_version` did not is refused, so every change of a JSON shape bumps its version.

use std::path::Path;
use std::process::ExitCode;

use diagwire::problem::json_pretty;
use serde_json::Value;

/// One command's JSON output.
pub struct Output {
    /// The file stem under `schemas/tools/` and the name `diagwire output-schema` takes.
    pub name: &'static str,
    /// The command line that prints it.
    pub command: &'static str,
    /// Its `format_version`.
    pub version: &'static str,
    /// Its JSON Schema, derived from its type.
    pub schema: fn() -> schemars::Schema,
}

/// Every command's JSON output, by name.
pub const OUTPUTS: &[Output] = &[
    Output {
        name: "summary",
        command: "diagwire summary --format json",
        version: diagwire_summary::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_summary::output::SummaryOutput),
    },
    Output {
        name: "validate",
        command: "diagwire validate --format json",
        version: crate::validate::FORMAT_VERSION,
        schema: || schemars::schema_for!(crate::validate::ValidateOutput),
    },
    Output {
        name: "diff",
        command: "diagwire diff --format json",
        version: diagwire_review::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_review::output::DiffOutput),
    },
    Output {
        name: "review",
        command: "diagwire review --format json",
        version: diagwire_review::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_review::output::ReviewOutput),
    },
    Output {
        name: "review-catalog",
        command: "diagwire review --catalog --format json",
        version: crate::review::CATALOG_FORMAT_VERSION,
        schema: || schemars::schema_for!(crate::review::CatalogOutput),
    },
    Output {
        name: "check",
        command: "diagwire check --format json",
        version: diagwire_check::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_check::output::CheckOutput),
    },
    Output {
        name: "check-follow",
        command: "diagwire check --follow --format json (one object per line)",
        version: diagwire_check::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_check::output::FollowLine),
    },
    Output {
        name: "parity",
        command: "diagwire parity --format json",
        version: diagwire_check::output::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_check::output::ParityOutput),
    },
    Output {
        name: "fleet",
        command: "diagwire fleet --format json",
        version: diagwire_fleet_report::FORMAT_VERSION,
        schema: || schemars::schema_for!(diagwire_fleet_report::FleetReport),
    },
];

/// The command that rewrites the checked-in schemas.
pub const WRITE_COMMAND: &str = "cargo diagwire output-schema --write schemas/tools";

/// The text of one output's schema file: pretty JSON with a final newline.
pub fn text(output: &Output) -> String {
    let mut v = (output.schema)().to_value();
    if let Value::Object(m) = &mut v {
        m.insert(
            "$comment".into(),
            Value::String(format!(
                "The JSON printed by `{}`, format version {}. Derived from its output type; do not edit: run `{WRITE_COMMAND}`.",
                output.command, output.version
            )),
        );
    }
    json_pretty(&v).expect("OK because a Value always serializes") + "\n"
}

/// What is wrong with the checked-in schemas in `dir`, one sentence each.
pub fn check(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for output in OUTPUTS {
        let path = dir.join(format!("{}.schema.json", output.name));
        let want = text(output);
        let have = match std::fs::read_to_string(&path) {
            Ok(h) => h,
            Err(e) => {
                problems.push(format!("{}: {e}; run `{WRITE_COMMAND}`", path.display()));
                continue;
            }
        };
        if have == want {
            continue;
        }
        let old_version = serde_json::from_str::<Value>(&have).ok().and_then(|v| {
            v.pointer("/properties/format_version/const")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if old_version.as_deref() == Some(output.version) && shape(&have) != shape(&want) {
            problems.push(format!(
                "{}: the JSON of `{}` changed but its format_version {} did not: bump it (minor for a new optional key, major for a removed or retyped one), then run `{WRITE_COMMAND}`",
                path.display(),
                output.command,
                output.version
            ));
        } else {
            problems.push(format!("{}: stale; run `{WRITE_COMMAND}`", path.display()));
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".schema.json");
            if stem.is_some_and(|s| !OUTPUTS.iter().any(|o| o.name == s)) {
                problems.push(format!(
                    "{}: no command prints this JSON any more; remove it",
                    entry.path().display()
                ));
            }
        }
    }
    problems
}

/// A schema's text without its descriptions and comment: what decides whether its shape changed.
fn shape(text: &str) -> Option<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("description");
                m.remove("$comment");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::from_str::<Value>(text).ok()?;
    strip(&mut v);
    Some(v)
}

/// `diagwire output-schema [NAME] [--write DIR | --check DIR]`.
pub fn run(name: Option<&str>, write: Option<&Path>, check_dir: Option<&Path>) -> ExitCode {
    if let Some(dir) = check_dir {
        let problems = check(dir);
        for p in &problems {
            eprintln!("{p}");
        }
        return if problems.is_empty() {
            println!(
                "{} output schema(s) up to date in {}",
                OUTPUTS.len(),
                dir.display()
            );
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    if let Some(dir) = write {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return crate::fail(&format!("{}: {e}", dir.display()));
        }
        for output in OUTPUTS {
            let path = dir.join(format!("{}.schema.json", output.name));
            if let Err(e) = std::fs::write(&path, text(output)) {
                return crate::fail(&format!("{}: {e}", path.display()));
            }
        }
        println!(
            "wrote {} output schema(s) to {}",
            OUTPUTS.len(),
            dir.display()
        );
        return ExitCode::SUCCESS;
    }
    let names = || {
        OUTPUTS
            .iter()
            .map(|o| o.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match name {
        None => {
            for o in OUTPUTS {
                println!("{}\t{}\t{}", o.name, o.version, o.command);
            }
            ExitCode::SUCCESS
        }
        Some(n) => match OUTPUTS.iter().find(|o| o.name == n) {
            Some(o) => {
                print!("{}", text(o));
                ExitCode::SUCCESS
            }
            None => crate::fail(&format!("no output named {n:?} (one of {})", names())),
        },
    }
}
