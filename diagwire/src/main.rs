//! The `diagwire` command-line tool.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use diagwire::bundle::read::Limits;
use diagwire::check::{Problem, Report, check_file};
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
    /// Check bundles and record files against the contract.
    ///
    /// PATH is a bundle (a directory or a `.tar.gz` in the collector layout) or a record file (one
    /// record, a JSON array of records, or JSON lines). Every record is checked against its schema
    /// and its type; a bundle's manifest is checked against its files. The record kind of a file
    /// comes from its name in swactor's layout (`boot.json`, `events-NNNNNN.json`,
    /// `snapshot-NNNNNN.json`, `finalize.json`, `MANIFEST.json`, `vastai_*.json`) or from `--kind`.
    /// Exit status: 0 when everything is valid, 1 when something is not, 2 when the check could not run.
    Validate {
        /// Bundles and files to check.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The record kind of every record file (boot, event, event_batch, snapshot, finalize,
        /// manifest, post_ack, error, runs, live, vastai).
        #[arg(long)]
        kind: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Largest file a bundle may hold, in bytes (a decompression-bomb guard).
        #[arg(long, default_value_t = Limits::default().max_file_bytes)]
        max_file_bytes: u64,
        /// Largest total a bundle may unpack to, in bytes.
        #[arg(long, default_value_t = Limits::default().max_total_bytes)]
        max_total_bytes: u64,
    },
    /// Write the example bundle `n3-relay-flap` (an orchestrator and three stages with dial timeouts,
    /// a peer going Dead and relay-session flips) as a directory under OUT.
    Example {
        /// The folder to write the run directory into.
        out: PathBuf,
    },
    /// Convert the simulator's prod-shape directory into the contract's bundle layout under OUT,
    /// listing everything it could not map.
    Upgrade {
        /// The simulator's bundle directory.
        input: PathBuf,
        /// The folder to write the run directory into.
        out: PathBuf,
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
            max_file_bytes,
            max_total_bytes,
        } => {
            let limits = Limits {
                max_file_bytes,
                max_total_bytes,
                ..Limits::default()
            };
            validate(&paths, kind.as_deref(), format, limits)
        }
        Command::Example { out } => {
            let bundle = diagwire::bundle::example::n3_relay_flap();
            match diagwire::bundle::write::write_dir(&bundle, &out) {
                Ok(dir) => {
                    println!("wrote {} file(s) to {}", bundle.files.len(), dir.display());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&format!("{}: {e}", out.display())),
            }
        }
        Command::Upgrade { input, out } => upgrade(&input, &out),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

fn upgrade(input: &Path, out: &Path) -> ExitCode {
    if !diagwire::bundle::upgrade::is_sim_prod_shape(input) {
        return fail(&format!(
            "{}: not a simulator prod-shape bundle directory",
            input.display()
        ));
    }
    let (bundle, unmapped) = match diagwire::bundle::upgrade::upgrade(input) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{}: {e}", input.display())),
    };
    let dir = match diagwire::bundle::write::write_dir(&bundle, out) {
        Ok(d) => d,
        Err(e) => return fail(&format!("{}: {e}", out.display())),
    };
    for u in &unmapped {
        println!("not mapped: {}: {}", u.path, u.what);
    }
    println!(
        "wrote {} file(s) to {}; {} item(s) not mapped",
        bundle.files.len(),
        dir.display(),
        unmapped.len()
    );
    ExitCode::SUCCESS
}

fn is_bundle(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| magic == [0x1f, 0x8b])
}

fn validate(paths: &[PathBuf], kind: Option<&str>, format: Format, limits: Limits) -> ExitCode {
    let validators = match Validators::new() {
        Ok(v) => v,
        Err(e) => return fail(&e.to_string()),
    };
    let mut total = Report::default();
    for path in paths {
        let report = if is_bundle(path) {
            let mut reader = match diagwire::check::bundle::open(path, limits) {
                Ok(r) => r,
                Err(e) => return fail(&e.to_string()),
            };
            let bar = progress_bar(reader.file_count());
            let mut tick = |done: usize, _all: usize| {
                if let Some(b) = &bar {
                    b.set_position(done as u64);
                }
            };
            let r = diagwire::check::bundle::check_bundle(&validators, &mut reader, &mut tick);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            r
        } else {
            match check_file(&validators, path, kind) {
                Ok(r) => r,
                Err(e) => return fail(&e),
            }
        };
        total.merge(report);
    }
    print_report(paths.len(), &total, format);
    if total.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A progress bar on a terminal, for bundles with many files.
fn progress_bar(files: usize) -> Option<indicatif::ProgressBar> {
    (std::io::stderr().is_terminal() && files >= 200).then(|| {
        let bar = indicatif::ProgressBar::new(files as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

fn print_report(files: usize, total: &Report, format: Format) {
    let valid = total.records - total.invalid_records;
    match format {
        Format::Human => {
            for p in &total.problems {
                println!("{p}");
            }
            println!(
                "{files} path(s), {} record(s): {valid} valid, {} invalid, {} problem(s)",
                total.records,
                total.invalid_records,
                total.problems.len()
            );
        }
        Format::Json => {
            let problems: Vec<serde_json::Value> =
                total.problems.iter().map(problem_json).collect();
            let out = serde_json::json!({
                "paths": files,
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
}

fn problem_json(p: &Problem) -> serde_json::Value {
    serde_json::json!({"file": p.file, "record": p.record, "pointer": p.pointer, "message": p.message})
}
