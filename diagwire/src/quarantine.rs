//! The collector's quarantine, in one place for the collector that writes it and the readers that
//! report it: a body that was not a record of its kind is kept beside the run as
//! `NNNNNN-<kind>.<json|pb|bin>` with a `.why.json` ([`Why`]) beside it, and travels in the bundle
//! under [`QUARANTINE_DIR`]`/<node_id>/`. A reader pairs each body with its reason as the files
//! go by ([`Pairing`], which holds one file's name at a time) and reports each body once
//! ([`Quarantined::problem`]).

use serde::{Deserialize, Serialize};

use crate::problem::{Location, Problem, ProblemKind, printable};

/// The bundle folder holding a run's quarantined bodies, `@quarantine/<node_id>/<name>`. Its
/// name cannot be a node's label (labels are made of `[A-Za-z0-9._-]`), so no node's directory
/// collides with it, whatever its role or id.
pub const QUARANTINE_DIR: &str = "@quarantine";

/// The suffix of the file that says why the body beside it was quarantined.
pub const WHY_SUFFIX: &str = ".why.json";

/// The largest `.why.json` a reader reads (the collector's reason for an events batch lists every
/// record it left out); a longer one is not read and is said to be too long.
pub const MAX_WHY_BYTES: usize = 1 << 20;

/// The most characters of a reason a reader reports.
const MAX_WORDS: usize = 1_000;

/// One problem of a quarantined body, where it is in the posted record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhyProblem {
    /// JSON pointer into the posted record (`""` for the whole body).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

/// The `.why.json` beside a quarantined body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Why {
    /// The route's kind (`boot`, `events`, …, or an unknown kind's name).
    pub route: String,
    /// The request's content type, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Where and why the body is not a record of its kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<WhyProblem>,
    /// Why, when no pointer says where (`unknown record kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Why {
    /// The reason in words: the route, then each problem with where it is.
    pub fn words(&self) -> String {
        let mut out = format!("posted to /diag/{}", self.route);
        if let Some(p) = &self.problem {
            out.push_str(": ");
            out.push_str(p);
        }
        for (i, p) in self.problems.iter().enumerate() {
            out.push_str(if i == 0 { ": " } else { "; " });
            if p.pointer.is_empty() {
                out.push_str(&p.message);
            } else {
                out.push_str(&format!("at {}: {}", p.pointer, p.message));
            }
        }
        out
    }

    /// The words of a `.why.json` as read from a bundle: escaped for a terminal and cut to a
    /// bounded length; a file that is not a reason says so.
    pub fn read(bytes: &[u8]) -> String {
        Why::read_text(bytes).0
    }

    /// [`Why::read`]'s words, and the file's text when it reads as a reason (at most
    /// [`MAX_WHY_BYTES`], UTF-8, of this shape).
    pub fn read_text(bytes: &[u8]) -> (String, Option<String>) {
        let (words, text) = if bytes.len() > MAX_WHY_BYTES {
            (
                format!("its reason is over {MAX_WHY_BYTES} bytes, more than a reader reads"),
                None,
            )
        } else {
            match serde_json::from_slice::<Why>(bytes) {
                Ok(why) => (
                    why.words(),
                    std::str::from_utf8(bytes).ok().map(str::to_owned),
                ),
                Err(e) => (format!("its reason does not read ({e})"), None),
            }
        };
        (Why::bounded(&words), text)
    }

    /// Words escaped for a terminal and cut to [`MAX_WORDS`] characters.
    fn bounded(words: &str) -> String {
        let mut words = printable(words).into_owned();
        if let Some((cut, _)) = words.char_indices().nth(MAX_WORDS) {
            words.truncate(cut);
            words.push('…');
        }
        words
    }
}

/// Where a path of a bundle's run directory is in the quarantine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A quarantined body of `node`, named `<stem>.<ext>`.
    Body {
        /// The node id it was posted under.
        node: &'a str,
        /// Its name without its extension.
        stem: &'a str,
    },
    /// The reason of the body `<stem>.*` of `node`.
    Why {
        /// The node id.
        node: &'a str,
        /// The body's name without its extension.
        stem: &'a str,
    },
}

/// Whether `rel`, a path relative to the run directory, is in the quarantine, and as what.
/// Anything else under the folder (a deeper path) is not an entry.
pub fn entry(rel: &str) -> Option<Entry<'_>> {
    let rest = rel.strip_prefix(QUARANTINE_DIR)?.strip_prefix('/')?;
    let (node, name) = rest.split_once('/')?;
    if node.is_empty() || name.is_empty() || name.contains('/') {
        return None;
    }
    if let Some(stem) = name.strip_suffix(WHY_SUFFIX) {
        return Some(Entry::Why { node, stem });
    }
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    Some(Entry::Body { node, stem })
}

/// Whether `rel` is under the quarantine folder at all.
pub fn is_quarantine(rel: &str) -> bool {
    rel.strip_prefix(QUARANTINE_DIR)
        .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

/// A quarantined body a reader found, with why the collector kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// The node id it was posted under.
    pub node: String,
    /// Its path relative to the run directory.
    pub path: String,
    /// Where it is, as a reader shows it (the bundle's path and this path).
    pub location: String,
    /// Why, in words (escaped; [`Why::read`]).
    pub why: String,
    /// The body's size in bytes (`None` for a reason without its body).
    pub bytes: Option<u64>,
    /// The `.why.json`'s text when it reads as a reason ([`Why::read_text`]), for a reader that
    /// keeps what it records (the fleet dataset); `None` when there is none or it does not read.
    pub reason: Option<String>,
}

impl Quarantined {
    /// The one problem a reader reports for it, located at the body.
    pub fn problem(&self) -> Problem {
        Problem::new(
            ProblemKind::Layout,
            Location::file(&self.location),
            format!("quarantined at ingest: {}", self.why),
        )
    }
}

/// A body waiting for its reason, or a reason waiting for its body.
#[derive(Debug)]
enum Waiting {
    Body(Quarantined),
    Why {
        key: String,
        why: String,
        reason: Option<String>,
        path: String,
        location: String,
    },
}

/// Pairs quarantined bodies with their reasons as a bundle's files go by. A body's `.why.json`
/// sorts right after it, so one file waits at a time; a body with no reason, or a reason with no
/// body, is reported as such.
#[derive(Debug, Default)]
pub struct Pairing {
    waiting: Option<Waiting>,
}

impl Pairing {
    /// Notes a file of the quarantine at `rel` (shown as `location`) of `size` bytes when known;
    /// `read` gives the bytes of a `.why.json` (at most one more than [`MAX_WHY_BYTES`]).
    /// Returns the bodies whose reason is now known, in order.
    pub fn file(
        &mut self,
        entry: Entry<'_>,
        rel: &str,
        location: &str,
        size: Option<u64>,
        read: impl FnOnce() -> Vec<u8>,
    ) -> Vec<Quarantined> {
        let mut out = Vec::new();
        match entry {
            Entry::Body { node, stem } => {
                let key = format!("{node}/{stem}");
                let mut body = Quarantined {
                    node: node.to_owned(),
                    path: rel.to_owned(),
                    location: location.to_owned(),
                    why: String::new(),
                    bytes: size,
                    reason: None,
                };
                match self.waiting.take() {
                    Some(Waiting::Why {
                        key: k,
                        why,
                        reason,
                        ..
                    }) if k == key => {
                        body.why = why;
                        body.reason = reason;
                        out.push(body);
                    }
                    other => {
                        out.extend(Self::unpaired(other));
                        self.waiting = Some(Waiting::Body(body));
                    }
                }
            }
            Entry::Why { node, stem } => {
                let key = format!("{node}/{stem}");
                let (why, reason) = Why::read_text(&read());
                match self.waiting.take() {
                    Some(Waiting::Body(mut body))
                        if format!("{}/{}", body.node, stem_of(&body.path)) == key =>
                    {
                        body.why = why;
                        body.reason = reason;
                        out.push(body);
                    }
                    other => {
                        out.extend(Self::unpaired(other));
                        self.waiting = Some(Waiting::Why {
                            key,
                            why,
                            reason,
                            path: rel.to_owned(),
                            location: location.to_owned(),
                        });
                    }
                }
            }
        }
        out
    }

    /// For a reader of a bundle's files: when the file at `rel` (shown as `location`, of `size`
    /// bytes when known) is in the quarantine, notes it (reading at most one byte more than
    /// [`MAX_WHY_BYTES`] of a reason from `file`) and returns the bodies whose reason is now
    /// known; `None` for a file outside the quarantine.
    pub fn take(
        &mut self,
        rel: &str,
        location: &str,
        size: Option<u64>,
        file: impl std::io::Read,
    ) -> Option<Vec<Quarantined>> {
        let entry = entry(rel)?;
        Some(self.file(entry, rel, location, size, || {
            let mut bytes = Vec::new();
            let limit = MAX_WHY_BYTES as u64 + 1;
            let _ = std::io::Read::read_to_end(&mut file.take(limit), &mut bytes);
            bytes
        }))
    }

    /// Ends the pairing: what still waits.
    pub fn finish(mut self) -> Vec<Quarantined> {
        Self::unpaired(self.waiting.take()).into_iter().collect()
    }

    fn unpaired(waiting: Option<Waiting>) -> Option<Quarantined> {
        match waiting? {
            Waiting::Body(mut body) => {
                body.why = format!("no `{WHY_SUFFIX}` says why");
                Some(body)
            }
            Waiting::Why {
                key,
                why,
                reason,
                path,
                location,
            } => {
                let (node, stem) = key.split_once('/').unwrap_or((&key, ""));
                Some(Quarantined {
                    node: node.to_owned(),
                    path,
                    location,
                    why: format!("a reason without its body `{}.*`: {why}", printable(stem)),
                    bytes: None,
                    reason,
                })
            }
        }
    }
}

/// A body's name without its extension, from its path.
fn stem_of(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(s, _)| s)
}
