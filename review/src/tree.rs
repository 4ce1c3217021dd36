//! A schema tree to compare: a folder of schema files, a frozen release, or the schemas at a git
//! revision, loaded into the resolved model, with the version it declares, the protobuf number
//! table it is encoded with, and the generated reader that reads it when there is one.
//!
//! The number table of a folder is the `proto-numbers.json` inside it ([`NUMBER_FILE`]): a
//! repository keeps its pinned table in `schemas/proto-numbers.json` and each release's frozen one
//! in `schemas/releases/<v>/proto-numbers.json`, beside the schemas they number. The schemas at a
//! git revision use `schemas/proto-numbers.json` at that revision.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use diagwire::Contract;
use diagwire::releases::READERS;
use diagwire_codegen::proto::Numbers;
use diagwire_schema::model::Model;
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
        if own.is_file() {
            NumberTable::read(&own, shown)
        } else {
            NumberTable::Missing(format!("no `{shown}`"))
        }
    }

    fn read(path: &Path, shown: String) -> NumberTable {
        match fs::read_to_string(path) {
            Ok(text) => NumberTable::parse(&text, shown),
            Err(e) => NumberTable::Invalid {
                error: format!("{shown}: {e}"),
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
    pub fn load_dir(dir: &Path) -> Result<Tree> {
        let mut texts = Vec::new();
        for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            let Some(stem) = path
                .file_name()
                .and_then(|f| f.to_str())
                .and_then(|f| f.strip_suffix(".schema.json"))
            else {
                continue;
            };
            let text =
                fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            texts.push((stem.to_owned(), text));
        }
        if texts.is_empty() {
            bail!("{}: no *.schema.json files", dir.display());
        }
        let version =
            match fs::read_to_string(dir.join("VERSION")) {
                Ok(v) => Some(Version::parse(v.trim()).with_context(|| {
                    format!("{}/VERSION: not a semantic version", dir.display())
                })?),
                Err(_) => dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| Version::parse(n).ok()),
            };
        let mut tree = Tree::from_texts(dir.display().to_string(), version, texts)?;
        tree.numbers = NumberTable::find(dir);
        Ok(tree)
    }

    /// The schemas of `root/schemas/` at git revision `rev`.
    pub fn at_revision(root: &Path, rev: &str) -> Result<Tree> {
        let list = git(root, &["ls-tree", "--name-only", &format!("{rev}:schemas")])?;
        let mut texts = Vec::new();
        for name in list.lines() {
            if let Some(stem) = name.strip_suffix(".schema.json") {
                texts.push((
                    stem.to_owned(),
                    git(root, &["show", &format!("{rev}:schemas/{name}")])?,
                ));
            }
        }
        if texts.is_empty() {
            bail!("{rev}: no schemas/*.schema.json");
        }
        let version = git(root, &["show", &format!("{rev}:schemas/VERSION")])
            .ok()
            .and_then(|v| Version::parse(v.trim()).ok());
        let mut tree = Tree::from_texts(format!("{rev}:schemas"), version, texts)?;
        let at = format!("{rev}:schemas/{NUMBER_FILE}");
        tree.numbers = match git(root, &["show", &at]) {
            Ok(text) => NumberTable::parse(&text, at),
            Err(_) => NumberTable::Missing(format!("no `{at}`")),
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
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("git output is not UTF-8")
}
