//! `diagwire diff`, `review` (and `review --catalog`) and `changelog`: the schema review from the
//! command line.
//! (The changelog date is computed here: a civil date from a day count needs no date crate.)

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use diagwire::problem::json_pretty;
use diagwire_review::catalog::Bump;
use diagwire_review::tree::Tree;
use diagwire_review::{changelog, compare, md, report, review};

/// Output formats of the review commands.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown, ready to paste as a pull-request comment.
    Md,
    /// JSON.
    Json,
}

/// The repository root: the closest folder at or above the current one holding `schemas/VERSION`.
fn repo_root() -> Result<PathBuf, String> {
    let mut dir = std::env::current_dir().map_err(|e| e.to_string())?;
    loop {
        if dir.join("schemas/VERSION").is_file() {
            return Ok(dir);
        }
        if !dir.pop() {
            return Err("not inside a diagwire repository (no schemas/VERSION above here)".into());
        }
    }
}

/// A tree named on the command line: a folder of schema files, `current` (`schemas/`), or the
/// version of a frozen release. A path that is none of these is named with what it is instead
/// (missing, a file, a link), not sent looking for a repository.
fn tree(spec: &str) -> Result<Tree, String> {
    let path = Path::new(spec);
    let meta = std::fs::symlink_metadata(path);
    let dir = if meta.as_ref().is_ok_and(|m| m.is_dir()) {
        path.to_path_buf()
    } else if let Ok(m) = &meta {
        let what = if m.file_type().is_symlink() {
            "a symbolic link (links are never followed in a schema tree)"
        } else if m.is_file() {
            "a file"
        } else {
            "not a regular file or folder"
        };
        return Err(format!(
            "{spec}: {what}, not a folder of schema files; name a folder, `current`, or a frozen release"
        ));
    } else if spec == "current" || diagwire_schema::Version::parse(spec).is_ok() {
        let root = repo_root()?;
        if spec == "current" {
            root.join("schemas")
        } else {
            let release = root.join("schemas/releases").join(spec);
            if !std::fs::symlink_metadata(&release).is_ok_and(|m| m.is_dir()) {
                return Err(format!(
                    "{spec}: not a frozen release (no folder `schemas/releases/{spec}`)"
                ));
            }
            release
        }
    } else {
        return Err(format!(
            "{spec}: no such folder (and not `current` or a release version)"
        ));
    };
    let mut t = Tree::load_dir(&dir).map_err(|e| format!("{e:#}"))?;
    t.label = spec.to_owned();
    if dir.ends_with("schemas") && t.version.is_none() {
        // A `VERSION` beside the folder must be readable; only a missing one leaves the version
        // unknown.
        let root = dir.parent().unwrap_or(&dir);
        t.version = match diagwire_schema::read::regular_file(
            &root.join("schemas/VERSION"),
            "schemas/VERSION",
        ) {
            Err(e) if e.missing => None,
            _ => Some(diagwire_schema::contract_version(root).map_err(|e| format!("{e:#}"))?),
        };
    }
    Ok(t)
}

/// Writes a report to standard output; a reader that went away ends the process by SIGPIPE
/// (see `main.rs`).
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The one error printer ([`crate::fail`]), with the review's name markers written as backticks.
fn fail(message: &str) -> ExitCode {
    crate::fail(&md::plain(message))
}

/// `diagwire diff OLD NEW`: exit 0 when the change needs at most a minor bump and every change is
/// classified; 1 otherwise, naming the breaking rules.
pub fn diff(old: &str, new: &str, format: Format) -> ExitCode {
    let (old, new) = match (tree(old), tree(new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let c = match compare(&old, &new) {
        Ok(c) => c,
        Err(e) => return fail(&format!("{e:#}")),
    };
    match format {
        Format::Md => {
            let mut out = String::new();
            report::comparison_md(&c, &mut out);
            emit(&out);
        }
        Format::Json => emit(&format!(
            "{}\n",
            json_pretty(&report::comparison_json(&c)).unwrap_or_default()
        )),
    }
    let mut breaking: Vec<&str> = c.breaking().map(|f| f.finding.rule.id).collect();
    breaking.dedup();
    if c.required() <= Bump::Minor && c.unclassified().count() == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("breaking: {}", md::terminal(&breaking.join(", ")));
        ExitCode::from(1)
    }
}

/// `diagwire review [--base REV]`.
pub fn review(base: Option<&str>, format: Format) -> ExitCode {
    if let Some(rev) = base
        && let Err(e) = diagwire_review::tree::check_revision(rev)
    {
        return fail(&format!("{e:#}"));
    }
    let root = match repo_root() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let r = match review::review(&root, base) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{e:#}")),
    };
    match format {
        Format::Md => emit(&report::review_md(&r)),
        Format::Json => emit(&format!(
            "{}\n",
            json_pretty(&report::review_json(&r)).unwrap_or_default()
        )),
    }
    let failures = r.failures();
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("{}", md::terminal(f));
        }
        ExitCode::from(1)
    }
}

/// `diagwire changelog`: the next release's section, from the last release (or `since`) to
/// `schemas/`.
pub fn changelog(date: Option<&str>, since: Option<&str>) -> ExitCode {
    if let Some(d) = date
        && let Err(e) = check_date(d)
    {
        return fail(&e);
    }
    let root = match repo_root() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let releases = match diagwire_schema::released_versions(&root) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{e:#}")),
    };
    let last = match since {
        Some(v) => match releases.iter().find(|r| r.to_string() == v) {
            Some(r) => r,
            None => return fail(&format!("--since {v}: not a frozen release")),
        },
        None => match releases.last() {
            Some(r) => r,
            None => return fail("no release is frozen yet"),
        },
    };
    let (old, new) = match (tree(&last.to_string()), tree("current")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let c = match compare(&old, &new) {
        Ok(c) => c,
        Err(e) => return fail(&format!("{e:#}")),
    };
    if c.is_empty() {
        println!("No change to the schemas since {last}: nothing to release.");
        return ExitCode::SUCCESS;
    }
    let declared = new.version.clone().filter(|v| v > last);
    let version = declared.unwrap_or_else(|| changelog::next_version(last, c.required()));
    let date = date.map_or_else(today, str::to_owned);
    emit(&changelog::draft(&c, &version, &date));
    ExitCode::SUCCESS
}

/// Refuses a `--date` that is not a real calendar date written `YYYY-MM-DD`: the date goes into
/// the changelog's heading, so nothing else may.
pub fn check_date(d: &str) -> Result<(), String> {
    let shaped = d.len() == 10
        && d.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !shaped {
        return Err(format!("--date {d}: not a date written YYYY-MM-DD"));
    }
    humantime::parse_rfc3339(&format!("{d}T00:00:00Z"))
        .map(drop)
        .map_err(|_| format!("--date {d}: no such day in the calendar"))
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now[..10].to_owned()
}

/// What `diagwire rules`, the former spelling of `diagwire review --catalog`, says on standard error.
pub const RULES_DEPRECATED: &str =
    "`diagwire rules` is deprecated: use `diagwire review --catalog`";

/// The version of `review --catalog --format json`'s shape.
pub const CATALOG_FORMAT_VERSION: &str = "1.0.0";

/// `diagwire review --catalog --format json`: the rule catalog.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct CatalogOutput {
    /// The version of this JSON shape.
    #[schemars(extend("const" = CATALOG_FORMAT_VERSION))]
    pub format_version: &'static str,
    /// Every rule, in the catalog's order.
    pub rules: Vec<CatalogRule>,
}

/// One rule of the catalog.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct CatalogRule {
    /// The rule's stable id.
    pub id: &'static str,
    /// What change it names.
    pub title: &'static str,
    /// The version bump it needs (`patch`, `minor`, `major`).
    pub bump: &'static str,
    /// What an old reader does with new records.
    pub old_reader_on_new_records: &'static str,
    /// What a new reader does with old records.
    pub new_reader_on_old_records: &'static str,
    /// Why.
    pub why: &'static str,
}

/// `diagwire review --catalog`: the rule catalog.
pub fn catalog(format: Format) -> ExitCode {
    match format {
        Format::Md => print!("{}", report::catalog_md()),
        Format::Json => {
            let out = CatalogOutput {
                format_version: CATALOG_FORMAT_VERSION,
                rules: diagwire_review::catalog::ALL
                    .iter()
                    .map(|r| CatalogRule {
                        id: r.id,
                        title: r.title,
                        bump: r.bump.as_str(),
                        old_reader_on_new_records: r.old_reader.as_str(),
                        new_reader_on_old_records: r.new_reader.as_str(),
                        why: r.why,
                    })
                    .collect(),
            };
            println!("{}", json_pretty(&out).unwrap_or_default());
        }
    }
    ExitCode::SUCCESS
}
