//! The `diagwire` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use diagwire::check::{Report, check_file};
use diagwire::validate::Validators;

/// The swactor diagnostics wire contract.
#[derive(Parser)]
#[command(name = "diagwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check record files against the contract: each record against its schema and its type.
    ///
    /// A file holds one record, a JSON array of records, or JSON lines. The record kind comes from
    /// the file name in swactor's layout (`boot.json`, `events-NNNNNN.json`, `snapshot-NNNNNN.json`,
    /// `finalize.json`, `MANIFEST.json`, `vastai_*.json`) or from `--kind`.
    /// Exit status: 0 when every record is valid, 1 when some are not, 2 when the check could not run.
    Validate {
        /// Files to check.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The record kind of every file (boot, event, event_batch, snapshot, finalize, manifest,
        /// post_ack, error, runs, live, vastai).
        #[arg(long)]
        kind: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate {
            paths,
            kind,
            format,
        } => validate(&paths, kind.as_deref(), format),
    }
}

fn validate(paths: &[PathBuf], kind: Option<&str>, format: Format) -> ExitCode {
    let validators = match Validators::new() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut total = Report::default();
    for path in paths {
        match check_file(&validators, path, kind) {
            Ok(r) => total.merge(r),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let valid = total.records - total.invalid_records;
    match format {
        Format::Human => {
            for p in &total.problems {
                println!("{p}");
            }
            println!(
                "{} file(s), {} record(s): {} valid, {} invalid, {} problem(s)",
                paths.len(),
                total.records,
                valid,
                total.invalid_records,
                total.problems.len()
            );
        }
        Format::Json => {
            let problems: Vec<serde_json::Value> = total
                .problems
                .iter()
                .map(|p| {
                    serde_json::json!({"file": p.file, "record": p.record, "pointer": p.pointer, "message": p.message})
                })
                .collect();
            let out = serde_json::json!({
                "files": paths.len(),
                "records": total.records,
                "valid": valid,
                "invalid": total.invalid_records,
                "problems": problems,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&out).expect("OK because a Value always serializes")
            );
        }
    }
    if total.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
