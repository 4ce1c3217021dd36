//! Assembling a run's bundle on disk with bounded memory, and the serve decision between the
//! canonical tarball and a bundle assembled now.
//!
//! The library's `assemble` holds a whole run in memory; here each staged file is read alone and
//! handed to the library's [`StreamWriter`] (which lays the bundle out and derives its manifest
//! exactly as `assemble` does), and the archive is streamed file by file through the library's
//! [`TarGzWriter`], with the run's quarantined bodies under [`QUARANTINE_DIR`]. So memory holds
//! one staged file (at most a body, 32 MiB) plus the list of paths, whatever the run's size. The
//! output is byte for byte what `write_tar_gz` writes for the same files.
//!
//! Staging, quarantine and `bundles/` are read, written, renamed and removed through
//! [`crate::confined`], from their folders' descriptors without following a link: a link
//! planted in place of a node folder or a staged file is left out of the bundle, logged and
//! counted, and nothing it points to is read.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use diagwire::bundle::StreamWriter;
use diagwire::bundle::assemble::{
    CachedBundle, NodeFiles, ServeDecision, StagingState, Tally, serve_decision,
};
use diagwire::bundle::output::TarGzWriter;
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::bundle::target::files_under;
use diagwire::layout::{self, FileKind, Role};
use diagwire::v1::Manifest;

use crate::Collector;
use crate::confined::{Dir, Kind};
use crate::sync::lock;

/// The bundle folder holding a run's quarantined bodies (the library's, which its readers know).
pub use diagwire::quarantine::QUARANTINE_DIR;

/// Numbers the temporary names of assemblies running at once.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// What the names of work in progress in `bundles/` start with: a character no run id has, so
/// no bundle is ever taken for one.
pub const WORK_PREFIX: char = '~';

/// A name in `bundles/` for work in progress: starting with [`WORK_PREFIX`], unique in this
/// process, and removed at the next start when a crash left it.
fn temporary(run_id: &str, what: &str) -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{WORK_PREFIX}{run_id}.{what}-{}-{n}", std::process::id())
}

/// A folder in `bundles/` removed with what it holds when dropped.
struct Scratch<'a> {
    bundles: &'a Dir,
    name: String,
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let _ = self.bundles.remove_tree(&self.name);
    }
}

/// A finished archive under a temporary name in `bundles/`, removed when dropped unless it was
/// moved into place or opened to be served.
pub struct Archive {
    bundles: Dir,
    name: Option<String>,
    /// What it holds.
    pub listing: Listing,
}

impl Drop for Archive {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = self.bundles.remove(&name);
        }
    }
}

impl Archive {
    /// Opens the archive to be read, and removes its name (the open file stays readable).
    pub fn open_and_forget(mut self) -> io::Result<File> {
        let name = self.name.take().unwrap_or_default();
        let file = self.bundles.open_file(&name).map(|(f, _)| f);
        let _ = self.bundles.remove(&name);
        file
    }
}

/// Where a file of the archive is read from: the folder assembly wrote (by its path below it),
/// or a quarantined body's folder (by its name).
enum Source {
    Written(String),
    Quarantined(Arc<Dir>, String),
}

/// What a bundle holds, for the serve decision: its manifest and every file's path (relative to
/// the run directory) and size, `MANIFEST.json` and quarantined bodies included.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// Its `MANIFEST.json`.
    pub manifest: Manifest,
    /// Every file, sorted by path.
    pub files: Vec<(String, u64)>,
}

impl Listing {
    /// The quarantined bodies (and their reasons) it carries.
    fn quarantine(&self) -> Vec<&(String, u64)> {
        let prefix = format!("{QUARANTINE_DIR}/");
        self.files
            .iter()
            .filter(|(p, _)| p.starts_with(&prefix))
            .collect()
    }

    /// Each node's files per kind with their sizes, in the manifest's order; `None` when a label
    /// is listed twice or a file other than the manifest and the quarantine is outside every
    /// node's directory (not a bundle assembly wrote).
    fn node_files(&self) -> Option<Vec<NodeFiles>> {
        let mut files = vec![NodeFiles::default(); self.manifest.nodes.len()];
        let labels: Vec<&str> = self
            .manifest
            .nodes
            .iter()
            .map(|n| n.label.as_str())
            .collect();
        let mut sorted = labels.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let prefix = format!("{QUARANTINE_DIR}/");
        for (path, size) in &self.files {
            if path.starts_with(&prefix) {
                continue;
            }
            let parsed = layout::parse_bundle_path(path);
            if parsed.role == Role::Manifest {
                continue;
            }
            let kind = parsed.role.file_kind()?;
            let node = parsed.node?;
            let i = labels.iter().position(|l| *l == node)?;
            let tally: &mut Tally = match kind {
                FileKind::Boot => &mut files[i].boot,
                FileKind::Events => &mut files[i].events,
                FileKind::Snapshot => &mut files[i].snapshots,
                FileKind::Finalize => &mut files[i].finalize,
                FileKind::Vastai(_) => &mut files[i].vastai,
            };
            tally.files += 1;
            tally.bytes += size;
        }
        Some(files)
    }

    /// What staging holds, as the serve decision compares it.
    fn staging_state(&self) -> StagingState {
        let mut state = StagingState::from_manifest(&self.manifest);
        if let Some(files) = self.node_files() {
            for (node, files) in state.nodes.iter_mut().zip(files) {
                node.files = Some(files);
            }
        }
        state
    }

    /// What the cached bundle holds, as the serve decision compares it; `None` when it is not a
    /// bundle of `run_id` that assembly could have written.
    fn cached(&self, run_id: &str) -> Option<CachedBundle> {
        if self.manifest.run_id != run_id {
            return None;
        }
        let files = self.node_files()?;
        let mut cached = CachedBundle::from_manifest(&self.manifest);
        for (node, files) in cached.nodes.iter_mut().zip(files) {
            if node.counts != files.counts() {
                return None;
            }
            node.files = Some(files);
        }
        Some(cached)
    }

    /// Reads what an archive holds, one file at a time; `None` when it cannot be read whole.
    pub fn of_archive(path: &Path) -> Option<Listing> {
        Listing::of_archive_file(File::open(path).ok()?, path)
    }

    /// [`Listing::of_archive`] of an archive open as `file` (shown as `path`), read at positions
    /// of the reader's own: a handle of the same file can be served afterwards from its start.
    pub fn of_archive_file(file: File, path: &Path) -> Option<Listing> {
        let mut reader = BundleReader::open_archive_file(file, path, Limits::default()).ok()?;
        let mut files = Vec::new();
        let mut manifest = None;
        for file in reader.stream() {
            let mut file = file.ok()?;
            if file.path == layout::MANIFEST {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).ok()?;
                manifest = Some(serde_json::from_slice::<Manifest>(&bytes).ok()?);
            }
            files.push((file.path, file.size));
        }
        files.sort();
        Some(Listing {
            manifest: manifest?,
            files,
        })
    }
}

/// Whether the cached bundle (`cached`) still holds what was just assembled (`fresh`): the
/// library's serve decision over the nodes, and the same quarantined files. A run whose posts
/// were all quarantined has no node; its bundle holds the quarantine alone.
pub fn decide(run_id: &str, cached: Option<&Listing>, fresh: &Listing) -> ServeDecision {
    let state = fresh.staging_state();
    let quarantine = fresh.quarantine();
    let cached_same_quarantine = cached.filter(|c| c.quarantine() == quarantine);
    if state.nodes.is_empty() {
        if quarantine.is_empty() {
            return ServeDecision::NotFound;
        }
        return match cached_same_quarantine {
            Some(c) if c.manifest.nodes.is_empty() && c.cached(run_id).is_some() => {
                ServeDecision::ServeCached
            }
            _ => ServeDecision::Resynthesize,
        };
    }
    let cached = cached_same_quarantine.and_then(|c| c.cached(run_id));
    serve_decision(cached.as_ref(), Some(&state))
}

impl Collector {
    /// Assembles the run from staging (and its quarantine) into an archive under a temporary
    /// name in `bundles/`, flushed to disk when `durable`. `None` when the run has neither
    /// staged nor quarantined posts. Blocking.
    pub fn assemble_archive(&self, run_id: &str, durable: bool) -> io::Result<Option<Archive>> {
        let store = &self.store;
        if layout::sanitize_component(run_id) != run_id {
            return Ok(None);
        }
        let staged = store.staging_dir(run_id)?;
        let quarantined = store.quarantined_files(run_id)?;
        if staged.is_none() && quarantined.is_empty() {
            return Ok(None);
        }
        let scratch = Scratch {
            bundles: &store.bundles_dir,
            name: temporary(run_id, "assembling"),
        };
        let scratch_dir = store.bundles_dir.create_dir(&scratch.name)?;
        let mut writer = StreamWriter::to_dir(scratch_dir.path(), run_id, self.writer())?;
        writer.declare_from_records();
        let mut span: Option<(u64, u64)> = None;
        let nodes = match &staged {
            Some(staged) => store.names(staged, Kind::Dir)?,
            None => Vec::new(),
        };
        for node in nodes {
            let Some(staged) = &staged else { break };
            let dir = staged.open_dir(&node)?;
            for name in store.names(&dir, Kind::File)? {
                if name.starts_with('.') {
                    continue; // a post still being written
                }
                let Some((kind, seq)) = layout::parse_staged_name(&name) else {
                    continue;
                };
                let (mut file, meta) = dir.open_file(&name)?;
                let mut bytes = Vec::with_capacity(meta.len.min(64 << 20) as usize);
                file.read_to_end(&mut bytes)?;
                if meta.modified > UNIX_EPOCH {
                    let ms = meta.modified_ms();
                    span = Some(span.map_or((ms, ms), |(lo, hi)| (lo.min(ms), hi.max(ms))));
                }
                let encoding = layout::Encoding::of_name(&name).unwrap_or_default();
                writer.add_file_as(&node, kind, Some(seq), encoding, &bytes)?;
            }
        }
        // The run's span as `/diag/runs` reports it (receive times, rebuilt from the files'
        // modification times after a restart); the files' times only for a run it does not know.
        let known = store.run(run_id).and_then(|run| {
            let account = lock(&run.account);
            account.start_ms.zip(account.end_ms)
        });
        if let Some((lo, hi)) = known.or(span) {
            writer.collector_span(lo, hi);
        }
        let written = writer.finish()?;
        // The run's folder assembly wrote, below the scratch folder.
        let written_rel = written
            .path
            .strip_prefix(scratch_dir.path())
            .map_err(|_| io::Error::other("the assembled bundle is outside its scratch folder"))?
            .to_string_lossy()
            .into_owned();
        let mut entries: Vec<(String, Source)> = files_under(&written.path)?
            .into_iter()
            .map(|rel| {
                let at = format!("{written_rel}/{rel}");
                (rel, Source::Written(at))
            })
            .collect();
        entries.extend(quarantined.into_iter().map(|(rel, dir, name)| {
            (
                format!("{QUARANTINE_DIR}/{rel}"),
                Source::Quarantined(dir, name),
            )
        }));
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let out = temporary(run_id, "tar.gz.partial");
        let file = store.bundles_dir.create_new(&out)?;
        let mut archive = Archive {
            bundles: store.bundles_dir.try_clone()?,
            name: Some(out),
            listing: Listing {
                manifest: written.manifest,
                files: Vec::with_capacity(entries.len()),
            },
        };
        let mut tar = TarGzWriter::new(run_id, BufWriter::with_capacity(1 << 16, file))?;
        for (rel, source) in entries {
            let (file, meta) = match &source {
                Source::Written(at) => scratch_dir.open_under(at)?,
                Source::Quarantined(dir, name) => dir.open_file(name)?,
            };
            tar.append_from(&rel, meta.len, file)?;
            archive.listing.files.push((rel, meta.len));
        }
        let file = tar.finish()?.into_inner().map_err(|e| e.into_error())?;
        if durable {
            file.sync_all()?;
        }
        Ok(Some(archive))
    }

    /// Moves an assembled archive into place as the run's canonical tarball,
    /// `bundles/<run_id>.tar.gz` (replacing the one before), and flushes the folder. Blocking.
    pub fn install_archive(&self, run_id: &str, mut archive: Archive) -> io::Result<PathBuf> {
        let bundles = &self.store.bundles_dir;
        let name = format!("{run_id}.tar.gz");
        let path = self.store.bundles.join(&name);
        self.store.fault(&path)?;
        let from = archive.name.take().unwrap_or_default();
        if let Err(e) = bundles.rename(&from, &name) {
            let _ = bundles.remove(&from);
            return Err(e);
        }
        bundles.sync()?;
        Ok(path)
    }

    /// Assembles the run and writes it durably as its canonical tarball. Blocking.
    pub fn write_bundle(&self, run_id: &str) -> io::Result<PathBuf> {
        match self.assemble_archive(run_id, true)? {
            Some(archive) => self.install_archive(run_id, archive),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("run {run_id:?} has no staged or quarantined posts"),
            )),
        }
    }

    /// What `GET /diag/bundle/{run_id}` serves, open for reading: the canonical tarball while
    /// it still holds what staging and quarantine hold (the serve decision; then `true`), else
    /// the bundle just assembled; `None` when the run has no posts. Blocking.
    pub fn bundle_file(&self, run_id: &str) -> io::Result<Option<(File, bool)>> {
        let Some(fresh) = self.assemble_archive(run_id, false)? else {
            return Ok(None);
        };
        // The canonical tarball is opened once, without following a link, and the file whose
        // listing is compared is the very file served.
        let canonical = self.canonical_file(run_id).ok();
        let cached = canonical.as_ref().and_then(|file| {
            let shown = self.store.bundles.join(format!("{run_id}.tar.gz"));
            Listing::of_archive_file(file.try_clone().ok()?, &shown)
        });
        match decide(run_id, cached.as_ref(), &fresh.listing) {
            ServeDecision::NotFound => Ok(None),
            ServeDecision::ServeCached => match canonical {
                Some(file) => Ok(Some((file, true))),
                None => fresh.open_and_forget().map(|f| Some((f, false))),
            },
            ServeDecision::Resynthesize => fresh.open_and_forget().map(|f| Some((f, false))),
        }
    }

    /// The run's canonical tarball, opened without following a link. Blocking.
    pub fn canonical_file(&self, run_id: &str) -> io::Result<File> {
        let name = format!("{run_id}.tar.gz");
        self.store.bundles_dir.open_file(&name).map(|(f, _)| f)
    }

    /// Whether the run's canonical tarball is there, a regular file (not a link to one).
    pub fn is_canonical_file(&self, run_id: &str) -> bool {
        let name = format!("{run_id}.tar.gz");
        self.store
            .bundles_dir
            .meta(&name)
            .is_ok_and(|m| m.kind == Kind::File)
    }
}
