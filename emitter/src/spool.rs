//! The durable spool, in swactor's layout: `{spool}/{run_id}/{seq:09}-{kind}.bin`, each file one
//! post's raw body, written under a temporary name (`.{seq:09}-{kind}.bin.tmp`), flushed, renamed
//! into place and its directory flushed; removed once the post is acknowledged.
//!
//! With the feature `kill-points` (crash tests only), `DIAGWIRE_EMITTER_KILL_AT=STEP:N` makes the
//! process send itself `SIGKILL` at the N-th such step of this spool ([`KillPoints`]):
//! `rename` (the post's temporary file written and flushed, not yet renamed), `send` (the post
//! in place in the spool, not yet sent) or `remove` (the post acknowledged, its file not yet
//! removed). Without the feature a step does nothing.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use diagwire::layout::FileKind;

use crate::Error;

/// A post found in or written to the spool.
#[derive(Debug, Clone)]
pub struct Spooled {
    /// The run it belongs to (the directory's name).
    pub run_id: String,
    pub seq: u64,
    pub kind: FileKind,
    pub path: PathBuf,
    pub bytes: u64,
}

/// The steps of the spool a crash test can stop the process at (`kill-points`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A post's temporary file is written and flushed; it is not renamed yet.
    Rename,
    /// A post is in place in the spool; it is not sent yet.
    Send,
    /// A post is acknowledged; its spool file is not removed yet.
    Remove,
}

/// The environment variable naming the step at which the process kills itself (`STEP:N`).
#[cfg(feature = "kill-points")]
pub const KILL_AT: &str = "DIAGWIRE_EMITTER_KILL_AT";

/// Counts the steps of one spool and, with the feature `kill-points`, kills the process
/// (`SIGKILL`: no destructor, no buffered write runs) at the step [`KILL_AT`] names.
#[derive(Debug, Default)]
pub struct KillPoints {
    #[cfg(feature = "kill-points")]
    at: Option<(Step, u64)>,
    #[cfg(feature = "kill-points")]
    counts: [std::sync::atomic::AtomicU64; 3],
}

impl KillPoints {
    #[cfg(feature = "kill-points")]
    fn from_env() -> KillPoints {
        let at = std::env::var(KILL_AT).ok().and_then(|v| {
            let (step, n) = v.trim().split_once(':')?;
            let step = match step {
                "rename" => Step::Rename,
                "send" => Step::Send,
                "remove" => Step::Remove,
                _ => return None,
            };
            Some((step, n.parse().ok()?))
        });
        KillPoints {
            at,
            counts: Default::default(),
        }
    }

    #[cfg(not(feature = "kill-points"))]
    fn from_env() -> KillPoints {
        KillPoints::default()
    }

    /// One more `step`.
    #[cfg(feature = "kill-points")]
    fn step(&self, step: Step) {
        let Some((at, n)) = self.at else {
            return;
        };
        let count =
            self.counts[step as usize].fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if at == step && count == n {
            let name = match step {
                Step::Rename => "rename",
                Step::Send => "send",
                Step::Remove => "remove",
            };
            eprintln!("{KILL_AT}: stopped at {name}:{n}");
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            std::process::abort();
        }
    }

    #[cfg(not(feature = "kill-points"))]
    fn step(&self, _: Step) {}
}

pub struct Spool {
    root: PathBuf,
    /// The directory of this emitter's run.
    dir: PathBuf,
    next_seq: u64,
    /// What the spool held when it was opened, oldest first: other runs' directories (by name)
    /// before this run's, each in sequence order.
    pub found: Vec<Spooled>,
    kill: KillPoints,
}

fn spool_err(path: &Path, error: std::io::Error) -> Error {
    Error::Spool {
        path: path.to_owned(),
        error,
    }
}

/// `{seq:09}-{kind}.bin` → (seq, kind).
fn parse_name(name: &str) -> Option<(u64, FileKind)> {
    let stem = name.strip_suffix(".bin")?;
    let (seq, kind) = stem.split_once('-')?;
    if seq.len() < 9 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kind = match kind {
        "boot" => FileKind::Boot,
        "events" => FileKind::Events,
        "snapshot" => FileKind::Snapshot,
        "finalize" => FileKind::Finalize,
        other => {
            let k = other.strip_prefix("vastai_")?;
            if !diagwire::layout::is_vastai_kind(k) || other.len() > 64 {
                return None;
            }
            FileKind::Vastai(k.to_owned())
        }
    };
    Some((seq.parse().ok()?, kind))
}

impl Spool {
    /// Opens `root` for `run_id`: creates the run's directory, removes temporary files a crash
    /// left in every run directory, and lists the posts waiting.
    pub fn open(root: &Path, run_id: &str) -> Result<Spool, Error> {
        let dir = root.join(run_id);
        fs::create_dir_all(&dir).map_err(|e| spool_err(&dir, e))?;
        let mut runs: Vec<String> = Vec::new();
        for entry in fs::read_dir(root).map_err(|e| spool_err(root, e))? {
            let entry = entry.map_err(|e| spool_err(root, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if entry.file_type().is_ok_and(|t| t.is_dir())
                && crate::is_safe_id(&name)
                && name != run_id
            {
                runs.push(name);
            }
        }
        runs.sort();
        runs.push(run_id.to_owned());
        let mut found = Vec::new();
        let mut next_seq = 1;
        for run in runs {
            let run_dir = root.join(&run);
            let mut posts = Vec::new();
            for entry in fs::read_dir(&run_dir).map_err(|e| spool_err(&run_dir, e))? {
                let entry = entry.map_err(|e| spool_err(&run_dir, e))?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let path = entry.path();
                if name.starts_with('.') && name.ends_with(".tmp") {
                    // A post being written when the node stopped: never acknowledged, never
                    // complete.
                    let _ = fs::remove_file(&path);
                    continue;
                }
                let Some((seq, kind)) = parse_name(&name) else {
                    continue;
                };
                let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
                posts.push(Spooled {
                    run_id: run.clone(),
                    seq,
                    kind,
                    path,
                    bytes,
                });
            }
            posts.sort_by_key(|p| p.seq);
            if run == run_id {
                next_seq = posts.last().map_or(1, |p| p.seq + 1);
            }
            found.extend(posts);
        }
        Ok(Spool {
            root: root.to_owned(),
            dir,
            next_seq,
            found,
            kill: KillPoints::from_env(),
        })
    }

    /// Writes a post of this emitter's run durably and returns where.
    pub fn write(
        &mut self,
        run_id: &str,
        kind: &FileKind,
        body: &[u8],
    ) -> std::io::Result<Spooled> {
        let seq = self.next_seq;
        let name = format!("{seq:09}-{}.bin", kind.staged_stem());
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let path = self.dir.join(&name);
        let result = (|| {
            let mut file = File::create(&tmp)?;
            file.write_all(body)?;
            file.sync_all()?;
            self.kill.step(Step::Rename);
            fs::rename(&tmp, &path)?;
            File::open(&self.dir)?.sync_all()
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.kill.step(Step::Send);
        self.next_seq += 1;
        Ok(Spooled {
            run_id: run_id.to_owned(),
            seq,
            kind: kind.clone(),
            path,
            bytes: body.len() as u64,
        })
    }

    /// Removes an acknowledged post; an emptied directory of another run goes too.
    pub fn remove(&self, post: &Spooled) {
        self.kill.step(Step::Remove);
        let _ = fs::remove_file(&post.path);
        if let Some(dir) = post.path.parent() {
            if dir != self.dir && dir.starts_with(&self.root) {
                // Fails while the directory still holds posts.
                let _ = fs::remove_dir(dir);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spool file's name is the post's sequence number (nine digits or more) and its kind.
    #[test]
    fn spool_names_are_read_as_swactor_writes_them() {
        let cases: &[(&str, Option<(u64, FileKind)>)] = &[
            ("000000001-events.bin", Some((1, FileKind::Events))),
            ("000000042-boot.bin", Some((42, FileKind::Boot))),
            ("000000007-snapshot.bin", Some((7, FileKind::Snapshot))),
            ("000000003-finalize.bin", Some((3, FileKind::Finalize))),
            (
                "000000009-vastai_sample.bin",
                Some((9, FileKind::Vastai("sample".into()))),
            ),
            (
                "1000000000-events.bin",
                Some((1_000_000_000, FileKind::Events)),
            ),
            ("00001-events.bin", None),
            ("000000001-metrics.bin", None),
            ("000000001-events.json", None),
            ("000000001-vastai_.bin", None),
        ];
        for (name, want) in cases {
            assert_eq!(&parse_name(name), want, "{name}");
        }
    }
}
