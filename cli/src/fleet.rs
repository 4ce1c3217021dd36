//! `export`, `compact`, `query` and `fleet` (the report): the arguments and the printing around
//! `diagwire-fleet`. The
//! crate (DataFusion, arrow, parquet) is built only with the feature `fleet`; without it each
//! command says how to get it and exits 2, so the default build never compiles them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How `query` prints rows.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// A JSON array with one object per row, keyed by column name.
    Json,
}

/// Output formats of `diagwire fleet`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Markdown (for a terminal or a ticket).
    Md,
    /// One self-contained HTML page with plots.
    Html,
    /// JSON, in the shape of `schemas/tools/fleet.schema.json`.
    Json,
}

#[cfg(not(feature = "fleet"))]
fn missing(command: &str) -> ExitCode {
    crate::fail(&format!(
        "`diagwire {command}` needs the feature `fleet` (DataFusion, arrow, parquet), which this \
         binary was built without; build it with `cargo build -p diagwire-cli --features fleet` \
         (or `cargo install --path cli --features fleet`)"
    ))
}

/// `diagwire export BUNDLE… --to DATASET`.
#[cfg(not(feature = "fleet"))]
pub fn export(
    _bundles: &[PathBuf],
    _to: &Path,
    _no_compact: bool,
    _wait: std::time::Duration,
) -> ExitCode {
    missing("export")
}

/// `diagwire compact DATASET`.
#[cfg(not(feature = "fleet"))]
pub fn compact(_dataset: &Path, _wait: std::time::Duration) -> ExitCode {
    missing("compact")
}

/// `diagwire query DATASET SQL`.
#[cfg(not(feature = "fleet"))]
pub fn query(
    _dataset: &Path,
    _sql: &str,
    _format: Format,
    _memory_limit: bytesize::ByteSize,
) -> ExitCode {
    missing("query")
}

/// `diagwire fleet DATASET`.
#[cfg(not(feature = "fleet"))]
pub fn report(_dataset: &Path, _format: ReportFormat, _out: Option<&Path>) -> ExitCode {
    missing("fleet")
}

/// How a writer says it waits for another: one line on standard error.
#[cfg(feature = "fleet")]
fn waiting(command: &'static str) -> impl Fn(&str) {
    move |message: &str| eprintln!("diagwire {command}: {message}")
}

/// `diagwire export BUNDLE… --to DATASET`: exit 0 when every record was exported, 1 when some
/// could not be read (listed, not exported), 2 on an error (the dataset is as it was before).
#[cfg(feature = "fleet")]
pub fn export(
    bundles: &[PathBuf],
    to: &Path,
    no_compact: bool,
    wait: std::time::Duration,
) -> ExitCode {
    use diagwire::problem::printable;
    let say = waiting("export");
    let wait = diagwire_fleet::dataset::Wait {
        limit: wait,
        waiting: &say,
    };
    match diagwire_fleet::export::export_waiting(bundles, to, !no_compact, &wait) {
        Ok(report) => {
            for (bundle, run, rows) in &report.runs {
                let rows: Vec<String> = rows.iter().map(|(t, n)| format!("{t} {n}")).collect();
                println!(
                    "{}: run {} ({})",
                    printable(bundle),
                    printable(run),
                    rows.join(", ")
                );
            }
            for run in &report.replaced {
                println!("replaced the earlier export of run {}", printable(run));
            }
            if report.compacted > 0 {
                println!("compacted {} partition(s)", report.compacted);
            }
            if report.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                for p in report.problems.iter().take(20) {
                    eprintln!("{}", printable(&p.to_string()));
                }
                let (records, files) = (report.records_not_exported(), report.files_not_exported());
                let mut said = Vec::new();
                if records > 0 {
                    said.push(format!(
                        "{records} record(s) could not be read and were not exported"
                    ));
                }
                if files > 0 {
                    said.push(format!(
                        "{files} file(s) could not be read and none of their records were exported"
                    ));
                }
                if report.problems.len() > 20 {
                    said.push(format!(
                        "{} problem(s) in all, 20 listed",
                        report.problems.len()
                    ));
                }
                eprintln!("{}", said.join("; "));
                ExitCode::from(1)
            }
        }
        Err(e) => crate::fail(&format!("{e}")),
    }
}

/// `diagwire compact DATASET`: every partition into one file.
#[cfg(feature = "fleet")]
pub fn compact(dataset: &Path, wait: std::time::Duration) -> ExitCode {
    if !dataset.join(diagwire_fleet::dataset::INDEX).is_file() {
        return crate::fail(&format!(
            "{}: not a dataset (no _dataset.json)",
            dataset.display()
        ));
    }
    let say = waiting("compact");
    let wait = diagwire_fleet::dataset::Wait {
        limit: wait,
        waiting: &say,
    };
    match diagwire_fleet::dataset::compact(dataset, &wait) {
        Ok(n) => {
            println!("compacted {n} partition(s)");
            ExitCode::SUCCESS
        }
        Err(e) => crate::fail(&format!("{e}")),
    }
}

/// `diagwire query DATASET SQL`: exit 0 with the rows, 2 on an error (a statement that does not
/// only read is one).
#[cfg(feature = "fleet")]
pub fn query(
    dataset: &Path,
    sql: &str,
    format: Format,
    memory_limit: bytesize::ByteSize,
) -> ExitCode {
    use diagwire_fleet::query::{self, Format as F};
    let format = match format {
        Format::Table => F::Table,
        Format::Csv => F::Csv,
        Format::Json => F::Json,
    };
    let limit = usize::try_from(memory_limit.as_u64()).unwrap_or(usize::MAX);
    for skipped in query::unreadable_parts(dataset) {
        eprintln!("diagwire query: left out of the tables: {skipped}");
    }
    match query::bounded_query(dataset, sql, limit).and_then(|b| query::render(&b, format)) {
        Ok(text) => {
            use std::io::Write;
            // As the other commands: a closed standard output is not an error of the command.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            if e.at != "query" {
                crate::fail(&e.to_string())
            } else {
                crate::fail(&e.message)
            }
        }
    }
}

/// `diagwire fleet DATASET`: exit 0 with the report (on standard output or in `out`), 2 on an
/// error.
#[cfg(feature = "fleet")]
pub fn report(dataset: &Path, format: ReportFormat, out: Option<&Path>) -> ExitCode {
    use diagwire_fleet_report as fleet;
    let report = match diagwire_fleet::report::report(dataset) {
        Ok(r) => r,
        Err(e) => {
            return crate::fail(&format!("{e}"));
        }
    };
    let text = match format {
        ReportFormat::Md => fleet::markdown(&report),
        ReportFormat::Html => fleet::page(&report),
        ReportFormat::Json => match diagwire::problem::json_pretty(&report) {
            Ok(t) => t + "\n",
            Err(e) => {
                return crate::fail(&format!("{e}"));
            }
        },
    };
    match out {
        Some(path) => match std::fs::write(path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => crate::fail(&format!("{}: {e}", path.display())),
        },
        None => {
            use std::io::Write;
            // A reader that went away ends the process by SIGPIPE at this write (see `main.rs`).
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
    }
}
