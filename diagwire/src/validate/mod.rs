//! Validating records, record files and bundles against the contract, one record at a time.
//!
//! * [`Validators`] (`schema.rs`): the compiled JSON Schema validator of each record kind, which
//!   says where and why a record breaks its schema.
//! * [`record`]: one record — the typed parse decides, the JSON Schema validator explains a record
//!   the parse refuses (with a JSON pointer).
//! * [`file`]: one file — its shape for its kind (an events file is a JSON array of event records,
//!   every other file one record), framed record by record with [`crate::scan`] so memory stays
//!   bounded whatever the file holds and a bad record never costs the records around it.
//! * [`bundle`]: a whole bundle — every file, then the manifest, the boot records and the
//!   directories against each other, the sequence numbers, and files outside the layout.
//!
//! Problems are capped per file and per run ([`Options`]); what is left out is counted in
//! [`Report::omitted`], so a summary never claims less than was found.

mod file;
mod record;
mod schema;

#[cfg(feature = "bundle")]
pub mod bundle;

#[cfg(feature = "bundle")]
use std::path::Path;

use crate::problem::{Location, Problem, ProblemKind};
use crate::v1::RecordKind;

pub use crate::frame::FileShape;
pub use file::IN_MEMORY;
pub use schema::{BuildError, Validators, Violation};

/// How thoroughly to check, and how much to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run every record through the JSON Schema validator too, not only the ones the typed parse
    /// refuses, and report any disagreement (a defect of the contract). Slower; for testing the
    /// contract itself.
    pub cross_check: bool,
    /// The most problems kept per file; the rest are counted.
    pub max_problems_per_file: usize,
    /// The most problems kept in all; the rest are counted.
    pub max_problems: usize,
    /// The largest single record read, in bytes.
    pub max_record_bytes: usize,
    /// Files up to this size are read whole and decoded in one typed pass first; larger ones are
    /// only streamed record by record.
    pub in_memory_bytes: u64,
}

impl Default for Options {
    /// 20 problems per file, 1000 in all, records up to 64 MiB, files up to [`IN_MEMORY`] read
    /// whole, no cross-check.
    fn default() -> Self {
        Options {
            cross_check: false,
            max_problems_per_file: 20,
            max_problems: 1000,
            max_record_bytes: 64 << 20,
            in_memory_bytes: IN_MEMORY,
        }
    }
}

/// What checking found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Record files checked.
    pub files: usize,
    /// Record files that a reader cannot read as their kind at all (wrong shape, not JSON, a byte
    /// order mark, unreadable): their records, if any, are counted on their own.
    pub unreadable_files: usize,
    /// Records checked.
    pub records: usize,
    /// Records with at least one problem.
    pub invalid_records: usize,
    /// The problems kept (see [`Options`] for the caps).
    pub problems: Vec<Problem>,
    /// Every problem found, kept or not.
    pub problem_count: usize,
    /// What was left out, per file.
    pub omitted: Vec<Omitted>,
    /// What is worth saying but is no problem: a run directory named otherwise than the run it
    /// holds (a renamed bundle; its manifest says which run it is).
    pub notes: Vec<Problem>,
}

/// What the caps left out of one file's problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Omitted {
    /// The file.
    pub file: String,
    /// Problems found and not kept.
    pub problems: usize,
    /// Invalid records not explained (each has at least one problem).
    pub records: usize,
}

impl Report {
    /// Adds another report's counts and problems to this one.
    pub fn merge(&mut self, other: Report) {
        self.files += other.files;
        self.unreadable_files += other.unreadable_files;
        self.records += other.records;
        self.invalid_records += other.invalid_records;
        self.problems.extend(other.problems);
        self.problem_count += other.problem_count;
        self.omitted.extend(other.omitted);
        self.notes.extend(other.notes);
    }

    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problem_count == 0 && self.invalid_records == 0 && self.unreadable_files == 0
    }

    /// Records without a problem.
    pub fn valid_records(&self) -> usize {
        self.records - self.invalid_records
    }

    /// Adds a problem, kept when under the run's cap.
    #[cfg(feature = "bundle")]
    pub(crate) fn push(&mut self, options: &Options, problem: Problem) {
        self.problem_count += 1;
        if self.problems.len() < options.max_problems {
            self.problems.push(problem);
        } else {
            self.omit(&problem.location.file, 1, 0);
        }
    }

    fn omit(&mut self, file: &str, problems: usize, records: usize) {
        match self.omitted.last_mut() {
            Some(o) if o.file == file => {
                o.problems += problems;
                o.records += records;
            }
            _ => self.omitted.push(Omitted {
                file: file.to_owned(),
                problems,
                records,
            }),
        }
    }
}

/// The problems of one file, capped per file and per run.
pub(crate) struct FileSink<'r> {
    report: &'r mut Report,
    options: &'r Options,
    file: &'r str,
    found: usize,
    omitted_problems: usize,
    omitted_records: usize,
}

impl<'r> FileSink<'r> {
    pub(crate) fn new(report: &'r mut Report, options: &'r Options, file: &'r str) -> Self {
        FileSink {
            report,
            options,
            file,
            found: 0,
            omitted_problems: 0,
            omitted_records: 0,
        }
    }

    /// Whether a problem pushed now is kept (else explaining a record is wasted work).
    pub(crate) fn explains(&self) -> bool {
        self.found < self.options.max_problems_per_file
            && self.report.problems.len() < self.options.max_problems
    }

    pub(crate) fn push(
        &mut self,
        kind: ProblemKind,
        location: Location,
        message: impl Into<String>,
    ) {
        self.report.problem_count += 1;
        if self.explains() {
            self.report
                .problems
                .push(Problem::new(kind, location, message));
        } else {
            self.omitted_problems += 1;
        }
        self.found += 1;
    }

    /// An invalid record that is not explained, because the caps are reached.
    pub(crate) fn unexplained(&mut self) {
        self.omitted_records += 1;
    }

    pub(crate) fn record(&mut self, valid: bool) {
        self.report.records += 1;
        if !valid {
            self.report.invalid_records += 1;
        }
    }

    pub(crate) fn unreadable(&mut self) {
        self.report.unreadable_files += 1;
    }
}

impl Drop for FileSink<'_> {
    fn drop(&mut self) {
        if self.omitted_problems + self.omitted_records > 0 {
            let (file, p, r) = (self.file, self.omitted_problems, self.omitted_records);
            self.report.omit(file, p, r);
        }
    }
}

/// Checks record files and bundles: the validators, the options and a reusable buffer.
pub struct Validator<'v> {
    validators: &'v Validators,
    options: Options,
    buf: Vec<u8>,
    /// The framing's read buffer, kept between files.
    scan_buf: Vec<u8>,
}

impl<'v> Validator<'v> {
    /// A validator with these validators and options.
    pub fn new(validators: &'v Validators, options: Options) -> Self {
        Validator {
            validators,
            options,
            buf: Vec::new(),
            scan_buf: Vec::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Checks the text of a file (named `file` in problems) as a file of `kind`.
    pub fn validate_text(
        &mut self,
        file: &str,
        text: &[u8],
        kind: RecordKind,
        report: &mut Report,
    ) {
        // A text in memory is decoded where it is; it cannot fail to be read.
        let size = Some(text.len() as u64);
        let body = file::Body::Bytes(text);
        let _ = self.validate_reader_keep(file, kind, size, body, false, None, report);
    }

    /// Checks a record file on disk, of `kind` or of the kind its name implies
    /// ([`crate::layout::kind_of_file_name`]). FIFOs, devices and sockets are refused before they
    /// are opened, and at most `max_file_bytes` are read. A file that cannot be read at all is
    /// one problem in the report.
    #[cfg(feature = "bundle")]
    pub fn validate_path(
        &mut self,
        path: &Path,
        kind: Option<RecordKind>,
        max_file_bytes: u64,
        report: &mut Report,
    ) {
        file::validate_path(self, path, kind, max_file_bytes, report)
    }
}

/// Checks every record of one file's contents as a file of `kind`, with the default options.
pub fn validate_text(validators: &Validators, file: &str, text: &str, kind: RecordKind) -> Report {
    let mut report = Report::default();
    Validator::new(validators, Options::default()).validate_text(
        file,
        text.as_bytes(),
        kind,
        &mut report,
    );
    report
}

/// Checks one record file with the default options; `kind` overrides the kind its name implies.
#[cfg(feature = "bundle")]
pub fn validate_file(validators: &Validators, path: &Path, kind: Option<RecordKind>) -> Report {
    let mut report = Report::default();
    let max = crate::bundle::read::Limits::default().max_file_bytes;
    Validator::new(validators, Options::default()).validate_path(path, kind, max, &mut report);
    report
}

/// The former name of [`Validator`], kept for one release.
#[deprecated(note = "renamed to diagwire::validate::Validator")]
pub type Checker<'v> = Validator<'v>;

/// The former name of [`validate_text`], kept for one release.
#[deprecated(note = "renamed to diagwire::validate::validate_text")]
pub fn check_text(validators: &Validators, file: &str, text: &str, kind: RecordKind) -> Report {
    validate_text(validators, file, text, kind)
}

/// The former name of [`validate_file`], kept for one release.
#[cfg(feature = "bundle")]
#[deprecated(note = "renamed to diagwire::validate::validate_file")]
pub fn check_file(validators: &Validators, path: &Path, kind: Option<RecordKind>) -> Report {
    validate_file(validators, path, kind)
}

/// The former names of [`Validator`]'s methods, kept for one release.
impl Validator<'_> {
    /// The former name of [`Validator::validate_text`].
    #[deprecated(note = "renamed to Validator::validate_text")]
    pub fn check_text(&mut self, file: &str, text: &[u8], kind: RecordKind, report: &mut Report) {
        self.validate_text(file, text, kind, report)
    }

    /// The former name of [`Validator::validate_path`].
    #[cfg(feature = "bundle")]
    #[deprecated(note = "renamed to Validator::validate_path")]
    pub fn check_path(
        &mut self,
        path: &Path,
        kind: Option<RecordKind>,
        max_file_bytes: u64,
        report: &mut Report,
    ) {
        self.validate_path(path, kind, max_file_bytes, report)
    }

    /// The former name of [`Validator::validate_reader`].
    #[deprecated(note = "renamed to Validator::validate_reader")]
    pub fn check_reader(
        &mut self,
        file: &str,
        kind: RecordKind,
        size: Option<u64>,
        reader: &mut dyn std::io::Read,
        report: &mut Report,
    ) -> std::io::Result<()> {
        self.validate_reader(file, kind, size, reader, report)
    }
}
