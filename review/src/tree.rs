//! A schema tree to compare: a folder of schema files, a frozen release, or the schemas at a git
//! revision, loaded into the resolved model, with the version it declares, the protobuf number
//! table it is encoded with, and the generated reader that reads it when there is one.
//!
//! The number table of a folder is the `proto-numbers.json` inside it ([`NUMBER_FILE`]): a
//! repository keeps its pinned table in `schemas/proto-numbers.json` and each release's frozen one
//! in `schemas/releases/<v>/proto-numbers.json`, beside the schemas they number. The schemas at a
//! git revision use `schemas/proto-numbers.json` at that revision.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use diagwire::Contract;
use diagwire::releases::READERS;
use diagwire_codegen::proto::Numbers;
use diagwire_schema::model::Model;
use diagwire_schema::problem::printable;
use diagwire_schema::read;
use diagwire_schema::{SchemaFile, Version};

/// One contract version's schemas.
pub struct Tree {
    /// How reports name it: a folder, `1.1.0`, `HEAD~1:schemas`.
    pub label: String,
    /// The version it declares (`schemas/VERSION`, or the release folder's name), if known.
    pub version: Option<Version>,
    /// The schema texts by stem, sorted.
    pub texts: Vec<(String, String)>,
    /// The resolved model.
    pub model: Model,
    /// The protobuf numbers the tree is encoded with.
    pub numbers: NumberTable,
}

/// The name of the number table a folder of schemas holds: a repository's `schemas/` and each of
/// its releases, and any other folder (rule fixtures, a pull request's schemas copied elsewhere).
pub const NUMBER_FILE: &str = diagwire_codegen::proto::NUMBERS_NAME;

/// Where a tree's protobuf numbers come from.
#[derive(Debug, Clone)]
pub enum NumberTable {
    /// The table, read from `path` (as a report names it).
    Found {
        /// Where it was read.
        path: String,
        /// The numbers.
        numbers: Numbers,
    },
    /// No table: where the review looked, in words.
    Missing(String),
    /// A table that could not be read or is not a valid number file.
    Invalid {
        /// Where it was read.
        path: String,
        /// What is wrong with it.
        error: String,
    },
}

impl NumberTable {
    /// The table of the schema folder `dir`, by the conventions of this module. A report names a
    /// repository's tables by their path in the repository (`schemas/proto-numbers.json`,
    /// `schemas/releases/<v>/proto-numbers.json`), any other by its path as given.
    pub fn find(dir: &Path) -> NumberTable {
        let own = dir.join(NUMBER_FILE);
        let full = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let name = |p: &Path| p.file_name().and_then(|n| n.to_str()).map(str::to_owned);
        let parent = full.parent();
        let grand = parent.and_then(Path::parent);
        let shown = match (name(&full), parent.and_then(name), grand.and_then(name)) {
            (Some(v), Some(r), Some(s))
                if r == "releases" && s == "schemas" && Version::parse(&v).is_ok() =>
            {
                format!("schemas/releases/{v}/{NUMBER_FILE}")
            }
            (Some(s), _, _) if s == "schemas" => format!("schemas/{NUMBER_FILE}"),
            _ => own.display().to_string(),
        };
        NumberTable::read(&own, shown)
    }

    /// The table at `path` (named `shown`): missing when nothing is there, invalid when what is
    /// there is not a regular file under the cap, not UTF-8 or not a number table.
    fn read(path: &Path, shown: String) -> NumberTable {
        match read::read_text(path, &shown, read::TEXT_CAP) {
            Ok(text) => NumberTable::parse(&text, shown),
            Err(e) if e.missing => NumberTable::Missing(format!("no \u{e000}{shown}\u{e001}")),
            Err(e) => NumberTable::Invalid {
                error: e.to_string(),
                path: shown,
            },
        }
    }

    /// The table in `text`, read from `path`.
    pub fn parse(text: &str, path: String) -> NumberTable {
        match Numbers::parse(text, &path) {
            Ok(numbers) => NumberTable::Found { path, numbers },
            Err(e) => NumberTable::Invalid {
                path,
                error: format!("{e:#}"),
            },
        }
    }
}

impl Tree {
    /// Loads schema texts `(stem, text)`.
    pub fn from_texts(
        label: impl Into<String>,
        version: Option<Version>,
        mut texts: Vec<(String, String)>,
    ) -> Result<Tree> {
        let label = label.into();
        texts.sort();
        let files: Vec<SchemaFile> = texts
            .iter()
            .map(|(stem, text)| {
                diagwire_schema::parse_file(&format!("{label}/{stem}.schema.json"), stem, text)
            })
            .collect::<Result<_>>()?;
        let model = diagwire_schema::load(&files)?;
        Ok(Tree {
            label,
            version,
            texts,
            model,
            numbers: NumberTable::Missing("no number table was given".into()),
        })
    }

    /// Loads a folder of `*.schema.json` files. The version is the folder's `VERSION` file, or the
    /// folder's name when that is a semantic version (a release folder).
    ///
    /// The folder is read like a bundle (`diagwire_schema::read`): regular files only, links never
    /// followed, each file and the whole folder under a cap; a `VERSION` that is there but cannot
    /// be read as a semantic version fails the load, located.
    pub fn load_dir(dir: &Path) -> Result<Tree> {
        let shown = dir.display().to_string();
        let mut texts = Vec::new();
        for (file, text) in read::schema_files(dir, &shown)? {
            let stem = file
                .strip_suffix(".schema.json")
                .unwrap_or(&file)
                .to_owned();
            texts.push((stem, text));
        }
        if texts.is_empty() {
            bail!("{}: no *.schema.json files", printable(&shown));
        }
        let version_file = dir.join("VERSION");
        let version = match read::regular_file(&version_file, &format!("{shown}/VERSION")) {
            Err(e) if e.missing => dir
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| Version::parse(n).ok()),
            _ => Some(diagwire_schema::read_version(
                &version_file,
                &format!("{shown}/VERSION"),
            )?),
        };
        let mut tree = Tree::from_texts(dir.display().to_string(), version, texts)?;
        tree.numbers = NumberTable::find(dir);
        Ok(tree)
    }

    /// The schemas of `root/schemas/` at git revision `rev`.
    ///
    /// `rev` must name a commit ([`check_revision`]); the schemas there are read with the caps of
    /// a folder, and a link or submodule among them is refused.
    pub fn at_revision(root: &Path, rev: &str) -> Result<Tree> {
        check_revision(rev)?;
        git(
            root,
            &[
                "rev-parse",
                "--quiet",
                "--verify",
                "--end-of-options",
                &format!("{rev}^{{commit}}"),
            ],
        )
        .map_err(|_| {
            anyhow::anyhow!("--base {}: not a commit of this repository", printable(rev))
        })?;
        let list = git(
            root,
            &[
                "ls-tree",
                "-z",
                "--end-of-options",
                &format!("{rev}:schemas"),
            ],
        )?;
        let mut texts = Vec::new();
        let mut entries: HashMap<String, String> = HashMap::new();
        for line in list.split('\0').filter(|l| !l.is_empty()) {
            let Some((meta, name)) = line.split_once('\t') else {
                continue;
            };
            if entries.len() >= read::ENTRY_CAP {
                bail!("{rev}:schemas: holds more than {} entries", read::ENTRY_CAP);
            }
            entries.insert(
                name.to_owned(),
                meta.split(' ').next().unwrap_or("").to_owned(),
            );
        }
        let mut names: Vec<&String> = entries.keys().collect();
        names.sort();
        let mut total = 0u64;
        for name in names {
            if let Some(stem) = name.strip_suffix(".schema.json") {
                let text = blob(root, rev, name, &entries, read::FILE_CAP)?
                    .with_context(|| format!("{rev}:schemas/{}: missing", printable(name)))?;
                total += text.len() as u64;
                if total > read::TREE_CAP {
                    bail!(
                        "{rev}:schemas: its schema files hold more than the cap of {} bytes",
                        read::TREE_CAP
                    );
                }
                texts.push((stem.to_owned(), text));
            }
        }
        if texts.is_empty() {
            bail!("{}: no schemas/*.schema.json", printable(rev));
        }
        let version = match blob(root, rev, "VERSION", &entries, read::SMALL_CAP)? {
            Some(v) => Some(Version::parse(v.trim()).with_context(|| {
                format!(
                    "{rev}:schemas/VERSION: `{}` is not a semantic version",
                    printable(v.trim())
                )
            })?),
            None => None,
        };
        let mut tree = Tree::from_texts(format!("{rev}:schemas"), version, texts)?;
        let at = format!("{rev}:schemas/{NUMBER_FILE}");
        tree.numbers = match blob(root, rev, NUMBER_FILE, &entries, read::TEXT_CAP) {
            Ok(Some(text)) => NumberTable::parse(&text, at),
            Ok(None) => NumberTable::Missing(format!("no \u{e000}{at}\u{e001}")),
            Err(e) => NumberTable::Invalid {
                path: at,
                error: format!("{e:#}"),
            },
        };
        Ok(tree)
    }

    /// The generated reader whose schemas are exactly these, if one is compiled in.
    pub fn reader(&self) -> Option<&'static Contract> {
        let mine: Vec<(&str, &str)> = self
            .texts
            .iter()
            .map(|(s, t)| (s.as_str(), t.as_str()))
            .collect();
        let current: &'static Contract = &diagwire::v1::CONTRACT;
        READERS
            .iter()
            .copied()
            .chain(std::iter::once(current))
            .find(|c| {
                let mut theirs: Vec<(&str, &str)> = c.schema_texts.to_vec();
                theirs.sort();
                theirs == mine
            })
    }
}

/// Refuses a revision git could take for an option (a leading `-`), or one that is not a plain
/// revision (empty, a `:` that would name a path, control characters or spaces).
pub fn check_revision(rev: &str) -> Result<()> {
    let why = if rev.is_empty() {
        "it is empty"
    } else if rev.starts_with('-') {
        "it starts with `-`, so git would take it for an option"
    } else if rev.contains(':') {
        "it holds `:` (a revision names a commit; the review reads its `schemas/`)"
    } else if rev.chars().any(|c| c.is_control() || c.is_whitespace()) {
        "it holds spaces or control characters"
    } else {
        return Ok(());
    };
    bail!("--base {}: not a revision: {why}", printable(rev))
}

/// The text of `schemas/<name>` at `rev` when it is a regular file there (`None` when it is not
/// there), at most `cap` bytes and UTF-8; a link or submodule is refused.
fn blob(
    root: &Path,
    rev: &str,
    name: &str,
    entries: &HashMap<String, String>,
    cap: u64,
) -> Result<Option<String>> {
    let shown = format!("{rev}:schemas/{}", printable(name));
    let Some(mode) = entries.get(name) else {
        return Ok(None);
    };
    if mode != "100644" && mode != "100755" {
        bail!(
            "{shown}: not a regular file (git mode {mode}); links are never followed in a schema tree"
        );
    }
    let object = format!("{rev}:schemas/{name}");
    let size: u64 = git(root, &["cat-file", "-s", "--end-of-options", &object])?
        .trim()
        .parse()
        .with_context(|| format!("{shown}: git gave no size"))?;
    if size > cap {
        bail!("{shown}: larger than the cap of {cap} bytes");
    }
    git(root, &["cat-file", "blob", "--end-of-options", &object])
        .map(Some)
        .with_context(|| format!("{shown}: not UTF-8 or not readable"))
}

/// Runs git in `root` and returns its output.
pub fn git(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            printable(&args.join(" ")),
            printable(String::from_utf8_lossy(&out.stderr).trim())
        );
    }
    String::from_utf8(out.stdout).context("git output is not UTF-8")
}
