//! A bundle written file by file to disk as it is made: [`StreamWriter`], the [`super::Writer`]
//! for a bundle too large to hold in memory.
//!
//! Each file is written out when it is added, to a spool directory beside the target, under a
//! plain number (`create_new`, so never through a link, never twice); an events file can be
//! written one record at a time ([`StreamWriter::begin_events`]). Only what the manifest needs is
//! kept: each file's node, kind, sequence number, encoding and size. [`StreamWriter::finish`]
//! lays the files out and derives the manifest exactly as [`super::Writer::finish`] does, then
//! moves them into place: renamed into the run directory being written under its temporary name
//! ([`PendingDir`]), or streamed into the archive in path order ([`TarGzWriter`], after
//! `MANIFEST.json`, which sorts first), so the output is byte for byte what the in-memory writer
//! writes for the same calls. The target appears only once complete; a failed or dropped writer
//! leaves nothing behind. Files cannot go straight to their final places because a node's
//! directory name and which boot file is `boot.json` are known only once every file is added.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::output::TarGzWriter;
use super::pretty_json;
use super::target::{PendingDir, PendingFile};
use super::writer::{Plan, boot_identity};
use crate::layout::{self, Encoding, FileKind};
use crate::problem::Problem;
use crate::v1::{BundleWriter, EventRecord, Finalize, Identity, Manifest, Snapshot, VastaiRecord};
use crate::{Extra, NodeIdHex};

/// A file written to the spool: its number there and its size.
#[derive(Debug)]
struct Spooled {
    name: u64,
    len: u64,
}

/// Where the finished bundle goes.
#[derive(Debug)]
enum Target {
    /// The run directory, under its temporary name.
    Dir(PendingDir),
    /// The archive, under its temporary name.
    TarGz(PendingFile),
}

/// An events file being written one record at a time.
#[derive(Debug)]
struct OpenEvents {
    node: String,
    name: u64,
    out: Counting<BufWriter<File>>,
    /// Records written so far (JSON), or kept until the end (binary form, which is encoded whole).
    records: usize,
    kept: Vec<Value>,
}

/// A bundle being written to disk as its files are made: add records per node, then
/// [`StreamWriter::finish`]. The same methods as [`super::Writer`], fallible because they write.
#[derive(Debug)]
pub struct StreamWriter {
    plan: Plan<Spooled>,
    spool: PendingDir,
    next: u64,
    target: Target,
    open: Option<OpenEvents>,
}

/// What [`StreamWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The run directory or the archive.
    pub path: PathBuf,
    /// The manifest (also written as `MANIFEST.json`).
    pub manifest: Manifest,
    /// Names that were changed to be safe and files that replaced an earlier one.
    pub problems: Vec<Problem>,
    /// How many files the bundle holds, `MANIFEST.json` included.
    pub files: usize,
    /// Their bytes in total.
    pub bytes: u64,
}

impl StreamWriter {
    /// A bundle for `run_id` written by `writer`, to become the run directory `parent/<run_id>`.
    /// Creates `parent` when it is missing; refuses a run id that is not one plain path component
    /// and an existing `<run_id>` that is not an empty directory (see [`PendingDir::create`]).
    pub fn to_dir(
        parent: &Path,
        run_id: impl Into<String>,
        writer: BundleWriter,
    ) -> io::Result<Self> {
        let run_id = run_id.into();
        let pending = PendingDir::create(parent, &run_id)?;
        let spool = PendingDir::scratch(pending.target())?;
        Ok(Self::with(Target::Dir(pending), spool, run_id, writer))
    }

    /// A bundle for `run_id` written by `writer`, to become the deterministic `.tar.gz` file
    /// `out` (see [`super::output::write_tar_gz`]), which must not exist; its directory must.
    pub fn to_tar_gz(
        out: &Path,
        run_id: impl Into<String>,
        writer: BundleWriter,
    ) -> io::Result<Self> {
        let run_id = run_id.into();
        super::output::check_run_id(&run_id)?;
        let archive = PendingFile::create(out)?;
        let spool = PendingDir::scratch(out)?;
        Ok(Self::with(Target::TarGz(archive), spool, run_id, writer))
    }

    fn with(target: Target, spool: PendingDir, run_id: String, writer: BundleWriter) -> Self {
        StreamWriter {
            plan: Plan::new(run_id, writer),
            spool,
            next: 0,
            target,
            open: None,
        }
    }

    /// Writes the records added from here on with the typed methods in `encoding` (see
    /// [`super::Writer::encoding`]).
    #[cfg(feature = "proto")]
    pub fn encoding(&mut self, encoding: Encoding) -> &mut Self {
        self.plan.encoding = encoding;
        self
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        self.plan.run_id()
    }

    /// Declares what the records of files added as they are prove (see
    /// [`super::Writer::declare_from_records`]).
    pub fn declare_from_records(&mut self) -> &mut Self {
        self.plan.declare_from_records();
        self
    }

    /// Adds a boot record of the node it names; the last one added is the node's `boot.json`.
    pub fn boot(&mut self, identity: &Identity) -> io::Result<&mut Self> {
        let node = identity.node_id_hex.0.clone();
        self.typed(&node, FileKind::Boot, identity)?;
        self.plan.boot_seen(identity);
        Ok(self)
    }

    /// Adds one posted batch of event records of `node` (`events/events-NNNNNN.json`).
    pub fn events(&mut self, node: &NodeIdHex, batch: &[EventRecord]) -> io::Result<&mut Self> {
        self.typed(&node.0, FileKind::Events, &batch)?;
        Ok(self)
    }

    /// Starts the next events file of `node`, to which [`StreamWriter::event`] writes one record
    /// at a time until [`StreamWriter::end_events`] (or any other method that adds a file) ends
    /// it: the same file as [`StreamWriter::events`] with those records, without holding them.
    pub fn begin_events(&mut self, node: &NodeIdHex) -> io::Result<&mut Self> {
        self.end_events()?;
        let (name, file) = self.spool_file()?;
        self.open = Some(OpenEvents {
            node: node.0.clone(),
            name,
            out: Counting {
                inner: BufWriter::new(file),
                bytes: 0,
            },
            records: 0,
            kept: Vec::new(),
        });
        Ok(self)
    }

    /// Adds a record to the events file begun last; an error when none is open.
    pub fn event(&mut self, record: &EventRecord) -> io::Result<&mut Self> {
        let binary = self.plan.encoding != Encoding::Json;
        let open = self
            .open
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no events file is open"))?;
        // Keys in alphabetical order, as every record file is written.
        let value =
            serde_json::to_value(record).expect("OK because contract types always serialize");
        if binary {
            open.kept.push(value);
            return Ok(self);
        }
        // An element of a pretty array: one level deeper, so two more spaces on every line
        // (a JSON string never holds a raw line break, so every one is the layout's).
        let text = serde_json::to_vec_pretty(&value).expect("OK because a value serializes");
        open.out.write_all(if open.records == 0 {
            b"[\n  "
        } else {
            b",\n  "
        })?;
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                open.out.write_all(b"\n  ")?;
            }
            open.out.write_all(line)?;
        }
        open.records += 1;
        Ok(self)
    }

    /// Ends the events file begun last, if one is open.
    pub fn end_events(&mut self) -> io::Result<&mut Self> {
        let Some(mut open) = self.open.take() else {
            return Ok(self);
        };
        let (encoding, len) = if self.plan.encoding != Encoding::Json {
            let (encoding, bytes) =
                self.plan
                    .encode(&open.node, &FileKind::Events, &Value::Array(open.kept));
            open.out.write_all(&bytes)?;
            (encoding, bytes.len() as u64)
        } else {
            open.out
                .write_all(if open.records == 0 { b"[]\n" } else { b"\n]\n" })?;
            (Encoding::Json, open.out.bytes)
        };
        let file = open.out.inner.into_inner().map_err(|e| e.into_error())?;
        drop(file);
        let body = Spooled {
            name: open.name,
            len,
        };
        self.plan
            .push_typed(&open.node, FileKind::Events, encoding, body);
        Ok(self)
    }

    /// Adds a snapshot of the node it names.
    pub fn snapshot(&mut self, snapshot: &Snapshot) -> io::Result<&mut Self> {
        let node = snapshot.identity.node_id_hex.0.clone();
        self.typed(&node, FileKind::Snapshot, snapshot)?;
        Ok(self)
    }

    /// Adds a finalize record of `node`; the last one added is the node's `finalize.json`.
    pub fn finalize(&mut self, node: &NodeIdHex, finalize: &Finalize) -> io::Result<&mut Self> {
        self.typed(&node.0, FileKind::Finalize, finalize)?;
        Ok(self)
    }

    /// Adds a vast.ai monitoring record (see [`super::Writer::vastai`]).
    pub fn vastai(
        &mut self,
        node: &str,
        kind: &str,
        record: &VastaiRecord,
    ) -> io::Result<&mut Self> {
        let safe = self.plan.vastai_kind(node, kind);
        self.typed(node, FileKind::Vastai(safe), record)?;
        Ok(self)
    }

    /// The run's time span on the collector's clock (see [`super::Writer::collector_span`]).
    pub fn collector_span(&mut self, start_ms: u64, end_ms: u64) -> &mut Self {
        self.plan.collector_span(start_ms, end_ms);
        self
    }

    /// Keys the manifest carries besides those the writer derives (see
    /// [`super::Writer::manifest_extra`]).
    pub fn manifest_extra(&mut self, extra: Extra) -> &mut Self {
        self.plan.manifest_extra(extra);
        self
    }

    /// Adds a file of `node` as it is (see [`super::Writer::add_file`]).
    pub fn add_file(
        &mut self,
        node: &str,
        kind: FileKind,
        seq: Option<u64>,
        bytes: &[u8],
    ) -> io::Result<&mut Self> {
        self.add_file_as(node, kind, seq, Encoding::Json, bytes)
    }

    /// Adds a file of `node` as it is in `encoding` (see [`super::Writer::add_file_as`]).
    pub fn add_file_as(
        &mut self,
        node: &str,
        kind: FileKind,
        seq: Option<u64>,
        encoding: Encoding,
        bytes: &[u8],
    ) -> io::Result<&mut Self> {
        self.end_events()?;
        self.plan.examine(node, &kind, encoding, bytes);
        let body = self.spool_bytes(bytes)?;
        let replaced = self.plan.push_file(node, kind, seq, encoding, body, || {
            boot_identity(encoding, bytes)
        });
        if let Some(old) = replaced {
            let _ = fs::remove_file(self.spooled(old.name));
        }
        Ok(self)
    }

    /// Ends any open events file, lays the files out, derives the manifest, writes everything to
    /// the target and moves it into place.
    pub fn finish(mut self) -> io::Result<Written> {
        self.end_events()?;
        let StreamWriter {
            plan,
            spool,
            target,
            ..
        } = self;
        let laid = plan.finish();
        let manifest_bytes = pretty_json(&laid.manifest);
        let mut files = laid.files;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let count = files.len() + 1;
        let bytes = files.iter().map(|(_, f)| f.len).sum::<u64>() + manifest_bytes.len() as u64;
        let at = |name: u64| spool.path().join(spool_name(name));
        let path = match target {
            Target::Dir(pending) => {
                for (path, body) in &files {
                    super::output::check_path(path)?;
                    let to = path
                        .split('/')
                        .fold(pending.path().to_owned(), |p, c| p.join(c));
                    if let Some(dir) = to.parent() {
                        fs::create_dir_all(dir)?;
                    }
                    // A fresh directory of our own, but never replace: look first.
                    if fs::symlink_metadata(&to).is_ok() {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!("`{path}` written twice"),
                        ));
                    }
                    fs::rename(at(body.name), &to)?;
                }
                pending.write(layout::MANIFEST, &manifest_bytes)?;
                drop(spool);
                pending.commit()?
            }
            Target::TarGz(mut archive) => {
                {
                    let mut tar =
                        TarGzWriter::new(&laid.manifest.run_id, BufWriter::new(archive.file()))?;
                    // `MANIFEST.json` sorts before every node's directory (upper case first).
                    let mut manifest_written = false;
                    for (path, body) in &files {
                        if !manifest_written && layout::MANIFEST < path.as_str() {
                            tar.append(layout::MANIFEST, &manifest_bytes)?;
                            manifest_written = true;
                        }
                        tar.append_from(path, body.len, File::open(at(body.name))?)?;
                    }
                    if !manifest_written {
                        tar.append(layout::MANIFEST, &manifest_bytes)?;
                    }
                    tar.finish()?.flush()?;
                }
                drop(spool);
                archive.commit()?
            }
        };
        Ok(Written {
            path,
            manifest: laid.manifest,
            problems: laid.problems,
            files: count,
            bytes,
        })
    }

    fn typed(&mut self, node: &str, kind: FileKind, record: &impl Serialize) -> io::Result<()> {
        self.end_events()?;
        // Record files are written as the collector writes them: keys in alphabetical order.
        let value =
            serde_json::to_value(record).expect("OK because contract types always serialize");
        let (encoding, bytes) = self.plan.encode(node, &kind, &value);
        drop(value);
        let body = self.spool_bytes(&bytes)?;
        self.plan.push_typed(node, kind, encoding, body);
        Ok(())
    }

    /// A new file in the spool: its number and the open file.
    fn spool_file(&mut self) -> io::Result<(u64, File)> {
        self.next += 1;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.spooled(self.next))?;
        Ok((self.next, file))
    }

    fn spool_bytes(&mut self, bytes: &[u8]) -> io::Result<Spooled> {
        let (name, mut file) = self.spool_file()?;
        file.write_all(bytes)?;
        Ok(Spooled {
            name,
            len: bytes.len() as u64,
        })
    }

    fn spooled(&self, name: u64) -> PathBuf {
        self.spool.path().join(spool_name(name))
    }
}

fn spool_name(name: u64) -> String {
    format!("{name:08}")
}

/// A writer that counts the bytes written through it.
#[derive(Debug)]
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
