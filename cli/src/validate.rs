//! `diagwire validate`: each path checked and reported on its own, the exit status the worst of
//! them.
//!
//! A path is a bundle (a directory, or a file that is an archive by its name or its first bytes)
//! or a record file. What kind of thing a path is comes from its metadata before anything is
//! opened, so a FIFO or a device is refused instead of read. Human output escapes every control
//! character that came from the input; JSON output keeps the text exact.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::Problem;
use diagwire::bundle::read::{BundleReader, Limits, ReadError, ReadErrorKind};
use diagwire::problem::{json_pretty, printable};
use diagwire::v1::RecordKind;
use diagwire::validate::bundle::BundleVerdict;
use diagwire::validate::{Options, Report, Validator, Validators};
use schemars::JsonSchema;
use serde::Serialize;

/// The output format.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for a person.
    Human,
    /// One JSON document for machines.
    Json,
}

/// What `validate` was asked.
pub struct Args {
    pub paths: Vec<PathBuf>,
    pub kind: Option<RecordKind>,
    pub format: Format,
    pub limits: Limits,
    pub cross_check: bool,
}

/// What one path gave.
enum Outcome {
    /// Checked: the report.
    Checked(Report),
    /// Could not be checked at all.
    Failed(Problem),
}

impl Outcome {
    /// 0 clean, 1 problems, 2 could not run.
    fn status(&self) -> u8 {
        match self {
            Outcome::Checked(r) if r.is_clean() => 0,
            Outcome::Checked(_) => 1,
            Outcome::Failed(_) => 2,
        }
    }
}

/// What a path is, from its metadata (and, for a regular file, its name and first bytes).
enum Target {
    Bundle,
    RecordFile,
}

fn target(path: &Path) -> Result<Target, Problem> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| {
        let (kind, message) = if e.kind() == std::io::ErrorKind::NotFound {
            (ReadErrorKind::NotFound, "not found".to_owned())
        } else {
            (ReadErrorKind::Io, e.to_string())
        };
        Problem::from(read_error(kind, &shown, message))
    })?;
    if meta.is_dir() {
        return Ok(Target::Bundle);
    }
    if !meta.is_file() {
        return Err(read_error(
            ReadErrorKind::NotABundle,
            &shown,
            format!(
                "{}, not a bundle or a record file; not opened",
                special_file(&meta)
            ),
        )
        .into());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if [".tar.gz", ".tgz", ".tar", ".gz", ".zip"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        return Ok(Target::Bundle);
    }
    let mut magic = [0u8; 262];
    let got = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut got = 0;
            while got < magic.len() {
                match f.read(&mut magic[got..])? {
                    0 => break,
                    n => got += n,
                }
            }
            Ok(got)
        })
        .unwrap_or(0);
    let archive = magic[..got.min(2)] == [0x1f, 0x8b]
        || magic[..got.min(4)] == *b"PK\x03\x04"
        || (got >= 262 && &magic[257..262] == b"ustar");
    Ok(if archive {
        Target::Bundle
    } else {
        Target::RecordFile
    })
}

#[cfg(unix)]
fn special_file(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_file(_meta: &std::fs::Metadata) -> &'static str {
    "not a regular file"
}

fn read_error(kind: ReadErrorKind, location: &str, message: impl Into<String>) -> ReadError {
    ReadError {
        kind,
        location: location.to_owned(),
        message: message.into(),
        path: None,
    }
}

/// Runs the check and prints what it found.
pub fn run(args: Args) -> ExitCode {
    // Compiled when a record first needs them: a bundle whose every record reads never does.
    let validators = Validators::on_demand(&diagwire::v1::CONTRACT);
    let options = Options {
        cross_check: args.cross_check,
        max_record_bytes: usize::try_from(args.limits.max_file_bytes).unwrap_or(usize::MAX),
        ..Options::default()
    };
    let mut validator = Validator::new(&validators, options);
    let mut outcomes = Vec::new();
    for path in &args.paths {
        let outcome = validate_path(&mut validator, path, args.kind, args.limits);
        if args.format == Format::Human {
            print_outcome(path, &outcome, args.paths.len() > 1);
        }
        outcomes.push((path.clone(), outcome));
    }
    match args.format {
        Format::Human => print_total(&outcomes),
        Format::Json => print_json(&outcomes),
    }
    let worst = outcomes.iter().map(|(_, o)| o.status()).max().unwrap_or(0);
    ExitCode::from(worst)
}

fn validate_path(
    validator: &mut Validator<'_>,
    path: &Path,
    kind: Option<RecordKind>,
    limits: Limits,
) -> Outcome {
    let target = match target(path) {
        Ok(t) => t,
        Err(p) => return Outcome::Failed(p),
    };
    let mut report = Report::default();
    match target {
        Target::Bundle => {
            let mut reader = match BundleReader::open(path, limits) {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(e.into()),
            };
            let bar = progress_bar();
            let mut tick = |done: u64, all: u64| {
                if let Some(b) = &bar {
                    b.set_length(all);
                    b.set_position(done);
                }
            };
            validator.validate_bundle(&mut reader, &mut tick, &mut report);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        }
        Target::RecordFile => {
            validator.validate_path(path, kind, limits.max_file_bytes, &mut report);
            // A record file that could not be opened at all is a path that could not be checked.
            if report.files == 0
                && let Some(p) = report.problems.first()
                && matches!(
                    p.kind,
                    diagwire::ProblemKind::Read(_) | diagwire::ProblemKind::Layout
                )
            {
                return Outcome::Failed(p.clone());
            }
        }
    }
    Outcome::Checked(report)
}

/// A progress bar on a terminal, in bytes of the bundle read.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

fn problem_line(p: &Problem) -> String {
    format!(
        "{}: {}",
        printable(&p.location.to_string()),
        printable(&p.message)
    )
}

fn counts(r: &Report) -> String {
    let mut line = format!(
        "{} file(s), {} record(s): {} valid, {} invalid",
        r.files,
        r.records,
        r.valid_records(),
        r.invalid_records
    );
    if r.unreadable_files > 0 {
        line.push_str(&format!(", {} unreadable file(s)", r.unreadable_files));
    }
    line.push_str(&format!(", {} problem(s)", r.problem_count));
    line
}

fn print_outcome(path: &Path, outcome: &Outcome, per_path_line: bool) {
    let shown = path.display().to_string();
    match outcome {
        Outcome::Failed(p) => {
            println!("{}", problem_line(p));
            if per_path_line {
                println!("{}: not checked", printable(&shown));
            }
        }
        Outcome::Checked(r) => {
            for p in &r.problems {
                println!("{}", problem_line(p));
            }
            for n in &r.notes {
                println!(
                    "{}: note: {}",
                    printable(&n.location.to_string()),
                    printable(&n.message)
                );
            }
            for o in &r.omitted {
                let mut parts = Vec::new();
                if o.problems > 0 {
                    parts.push(format!("{} more problem(s)", o.problems));
                }
                if o.records > 0 {
                    parts.push(format!("{} more invalid record(s)", o.records));
                }
                println!(
                    "{}: … and {} not shown",
                    printable(&o.file),
                    parts.join(" and ")
                );
            }
            if per_path_line {
                println!("{}: {}", printable(&shown), counts(r));
            }
        }
    }
}

fn total(outcomes: &[(PathBuf, Outcome)]) -> Report {
    let mut total = Report::default();
    for (_, o) in outcomes {
        if let Outcome::Checked(r) = o {
            total.files += r.files;
            total.unreadable_files += r.unreadable_files;
            total.records += r.records;
            total.invalid_records += r.invalid_records;
            total.problem_count += r.problem_count;
        }
    }
    total
}

fn print_total(outcomes: &[(PathBuf, Outcome)]) {
    let failed = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .count();
    let mut line = format!("{} path(s), {}", outcomes.len(), counts(&total(outcomes)));
    if failed > 0 {
        line.push_str(&format!("; {failed} path(s) could not be checked"));
    }
    println!("{line}");
}

/// The version of `validate --format json`'s shape (a semantic version, bumped by the contract's
/// rules: a new optional key is minor, a removed or retyped key is major).
pub const FORMAT_VERSION: &str = "1.1.0";

/// `diagwire validate --format json`: per path what was checked and found, then the totals and
/// every problem of every path.
#[derive(Serialize, JsonSchema)]
pub struct ValidateOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = FORMAT_VERSION))]
    pub format_version: &'static str,
    /// One entry per path given, in order.
    pub paths: Vec<PathOutcome>,
    /// Files read, over all paths.
    pub files: u64,
    /// Files that could not be read.
    pub unreadable_files: u64,
    /// Records read.
    pub records: u64,
    /// Valid records.
    pub valid: u64,
    /// Invalid records.
    pub invalid: u64,
    /// Problems found (including those not listed past the caps).
    pub problem_count: u64,
    /// Every listed problem of every path, and the error of each path that could not be checked.
    pub problems: Vec<ProblemOutput>,
}

/// What became of one path.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PathOutcome {
    /// The path was checked.
    Checked {
        /// The path as given.
        path: String,
        /// Always true.
        checked: bool,
        /// Files read.
        files: u64,
        /// Files that could not be read.
        unreadable_files: u64,
        /// Records read.
        records: u64,
        /// Valid records.
        valid: u64,
        /// Invalid records.
        invalid: u64,
        /// Problems found (including those past the caps).
        problem_count: u64,
        /// The problems listed.
        problems: Vec<ProblemOutput>,
        /// Per file, what the caps left unlisted.
        omitted: Vec<OmittedOutput>,
        /// What is worth saying but is no problem (a run directory named otherwise than its
        /// run); left out when there is nothing to say.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<ProblemOutput>,
    },
    /// The path could not be checked at all.
    Failed {
        /// The path as given.
        path: String,
        /// Always false.
        checked: bool,
        /// Why.
        error: ProblemOutput,
    },
}

/// A located problem.
#[derive(Serialize, JsonSchema)]
pub struct ProblemOutput {
    /// Its kind (`schema`, `read.too_large`, …).
    pub kind: &'static str,
    /// The file as a person finds it (`archive.tar.gz!inner/path` inside an archive).
    pub file: String,
    /// The record's index in the file; null for the file as a whole.
    pub record: Option<usize>,
    /// The JSON pointer into the record.
    pub pointer: String,
    /// The line in the file's text, when known.
    pub line: Option<u64>,
    /// The column (in bytes), when known.
    pub column: Option<u64>,
    /// A sentence for a person.
    pub message: String,
}

/// What the caps left unlisted in one file.
#[derive(Serialize, JsonSchema)]
pub struct OmittedOutput {
    /// The file.
    pub file: String,
    /// Problems not listed.
    pub problems: u64,
    /// Records whose problems were not listed.
    pub records: u64,
}

impl ProblemOutput {
    fn new(p: &Problem) -> Self {
        ProblemOutput {
            kind: p.kind.as_str(),
            file: p.location.file.clone(),
            record: p.location.record,
            pointer: p.location.pointer.clone(),
            line: p.location.position.map(|x| x.line),
            column: p.location.position.map(|x| x.column),
            message: p.message.clone(),
        }
    }
}

fn print_json(outcomes: &[(PathBuf, Outcome)]) {
    let mut problems = Vec::new();
    let paths = outcomes
        .iter()
        .map(|(path, o)| match o {
            Outcome::Failed(p) => {
                problems.push(ProblemOutput::new(p));
                PathOutcome::Failed {
                    path: path.display().to_string(),
                    checked: false,
                    error: ProblemOutput::new(p),
                }
            }
            Outcome::Checked(r) => {
                problems.extend(r.problems.iter().map(ProblemOutput::new));
                PathOutcome::Checked {
                    path: path.display().to_string(),
                    checked: true,
                    files: r.files as u64,
                    unreadable_files: r.unreadable_files as u64,
                    records: r.records as u64,
                    valid: r.valid_records() as u64,
                    invalid: r.invalid_records as u64,
                    problem_count: r.problem_count as u64,
                    problems: r.problems.iter().map(ProblemOutput::new).collect(),
                    omitted: r
                        .omitted
                        .iter()
                        .map(|o| OmittedOutput {
                            file: o.file.clone(),
                            problems: o.problems as u64,
                            records: o.records as u64,
                        })
                        .collect(),
                    notes: r.notes.iter().map(ProblemOutput::new).collect(),
                }
            }
        })
        .collect();
    let t = total(outcomes);
    let out = ValidateOutput {
        format_version: FORMAT_VERSION,
        paths,
        files: t.files as u64,
        unreadable_files: t.unreadable_files as u64,
        records: t.records as u64,
        valid: t.valid_records() as u64,
        invalid: t.invalid_records as u64,
        problem_count: t.problem_count as u64,
        problems,
    };
    // Keys in sorted order, as this output has always printed them.
    let value = serde_json::to_value(&out).expect("OK because the output types always serialize");
    println!(
        "{}",
        json_pretty(&value).expect("OK because a Value always serializes")
    );
}

/// The validators, one for the process, compiled when a record first needs them.
fn validators() -> &'static Validators {
    static VALIDATORS: std::sync::OnceLock<Validators> = std::sync::OnceLock::new();
    VALIDATORS.get_or_init(|| Validators::on_demand(&diagwire::v1::CONTRACT))
}

/// Where and why a refused record breaks its schema, for a record walk without a verdict.
pub fn explain(kind: RecordKind, text: &str) -> Vec<(diagwire::ProblemKind, String, String)> {
    validators().explain(kind, text)
}

/// The bundle's validation with the options `validate` checks a bundle with, to run in the pass
/// of a record walk (`summary`, `compare`, `check`): the problems those commands report are then
/// `validate`'s, counted alike.
pub fn bundle_verdict() -> std::cell::RefCell<BundleVerdict<'static>> {
    let options = Options {
        max_record_bytes: usize::try_from(Limits::default().max_file_bytes).unwrap_or(usize::MAX),
        ..Options::default()
    };
    std::cell::RefCell::new(BundleVerdict::new(validators(), options))
}

/// The walk of a command that reads a bundle's records: with `verdict` (from [`bundle_verdict`])
/// its problems are the bundle's validation; a refused record says where in it either way.
pub fn walk<'a>(
    verdict: &'a std::cell::RefCell<BundleVerdict<'static>>,
) -> diagwire::bundle::records::Walk<'a> {
    diagwire::bundle::records::Walk {
        explain: Some(&explain),
        verdict: Some(
            verdict as &std::cell::RefCell<dyn diagwire::bundle::records::Verdict + Send>,
        ),
        ..Default::default()
    }
}
