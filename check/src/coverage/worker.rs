//! The part of coverage that reads each record's JSON (struct instances, field presence,
//! provenance, unknown keys), on a thread of its own: the walk hands on each record's text in
//! batches and goes on decoding, so on a machine with a core to spare `check --coverage` costs
//! about what `check` does.
//!
//! Records are taken in the order they come, so the statistics (and which unknown keys are kept
//! under the cap) are the same as one thread's. Memory in flight is bounded: a batch is sent once it
//! holds [`BATCH_BYTES`] of text (a larger record goes alone), and at most one batch waits while
//! one is read and the next fills; a batch read is given back (one at most waits) to be filled
//! again, so its memory is not allocated anew. Without a thread (one cannot be started) the batches are read
//! where they are filled.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use diagwire::shape::ValueShape;
use diagwire::v1::CONTRACT;

use super::{RoleCoverage, count};
use diagwire::view::{Buffer, Shapes, Tape};

/// The text a batch gathers before it is handed on.
pub(super) const BATCH_BYTES: usize = 1 << 20;

/// Records to read: their texts one after the other, and for each its node's label (an index in
/// `labels`), its kind's name and where its text ends.
#[derive(Debug, Default)]
struct Batch {
    text: String,
    labels: Vec<String>,
    records: Vec<(usize, &'static str, usize)>,
}

impl Batch {
    fn clear(&mut self) {
        self.text.clear();
        self.labels.clear();
        self.records.clear();
    }
}

/// What the reading found, per node label: only `types` and `unknown_keys` are filled.
pub(super) type Found = BTreeMap<String, RoleCoverage>;

/// Reads the records handed to it, on its own thread when one starts.
#[derive(Debug, Default)]
pub(super) struct Worker {
    batch: Batch,
    thread: Option<(SyncSender<Batch>, JoinHandle<Found>)>,
    /// Batches the thread has read, given back to be filled again (behind a lock only so that
    /// a coverage is `Sync`; the walk alone takes from it).
    spare: Option<Mutex<Receiver<Batch>>>,
    /// What was read here: everything without a thread, nothing with one.
    here: Reader,
    started: bool,
}

impl Worker {
    /// Hands on one record's text.
    pub(super) fn record(&mut self, label: &str, kind_name: &'static str, text: &str) {
        let b = &mut self.batch;
        if b.labels.last().is_none_or(|l| l != label) {
            b.labels.push(label.to_owned());
        }
        b.text.push_str(text);
        let end = b.text.len();
        b.records.push((b.labels.len() - 1, kind_name, end));
        if self.batch.text.len() >= BATCH_BYTES {
            self.send();
        }
    }

    fn send(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        if batch.records.is_empty() {
            return;
        }
        if !self.started {
            self.started = true;
            let (tx, rx) = sync_channel::<Batch>(1);
            let (back, spare) = sync_channel::<Batch>(1);
            let spawned = std::thread::Builder::new()
                .name("coverage".into())
                .spawn(move || read_all(rx, back));
            if let Ok(handle) = spawned {
                self.thread = Some((tx, handle));
                self.spare = Some(Mutex::new(spare));
            }
        }
        let mut batch = match &self.thread {
            Some((tx, _)) => match tx.send(batch) {
                Ok(()) => {
                    // A batch read already, or a new one with room for what it will hold.
                    let spare = self
                        .spare
                        .as_ref()
                        .and_then(|s| s.lock().ok()?.try_recv().ok());
                    self.batch = match spare {
                        Some(b) => b,
                        None => Batch {
                            text: String::with_capacity(BATCH_BYTES * 2),
                            ..Batch::default()
                        },
                    };
                    return;
                }
                Err(e) => e.0,
            },
            None => batch,
        };
        self.here.read(&batch);
        batch.clear();
        self.batch = batch;
    }

    /// Reads what is left and gives everything found.
    pub(super) fn finish(mut self) -> Found {
        self.send();
        let mut found = std::mem::take(&mut self.here.found);
        if let Some((tx, handle)) = self.thread.take() {
            drop(tx);
            // The thread only panics on a bug; its statistics are then missing, not wrong.
            let theirs = handle.join().unwrap_or_default();
            for (label, rc) in theirs {
                let mine = found.entry(label).or_default();
                if mine.types.is_empty() && mine.unknown_keys.is_empty() {
                    *mine = rc;
                } else {
                    mine.merge(rc);
                }
            }
        }
        found
    }
}

fn read_all(rx: Receiver<Batch>, back: SyncSender<Batch>) -> Found {
    let mut reader = Reader::default();
    while let Ok(mut batch) = rx.recv() {
        reader.read(&batch);
        batch.clear();
        // Given back when the walk has room for it and it did not grow for a large record; else
        // dropped.
        if batch.text.capacity() <= 2 * BATCH_BYTES {
            let _ = back.try_send(batch);
        }
    }
    reader.found
}

/// Reads records' texts into per-label statistics.
#[derive(Debug)]
struct Reader {
    shapes: &'static Shapes,
    buffer: Buffer,
    found: Found,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader {
            shapes: Shapes::of(&CONTRACT),
            buffer: Buffer::default(),
            found: Found::default(),
        }
    }
}

impl Reader {
    fn read(&mut self, batch: &Batch) {
        let mut start = 0;
        for (label, kind_name, end) in &batch.records {
            let text = batch.text.get(start..*end).unwrap_or_default();
            start = *end;
            let label = batch.labels.get(*label).map_or("", String::as_str);
            self.one(label, kind_name, text);
        }
    }

    fn one(&mut self, label: &str, kind_name: &'static str, text: &str) {
        let Some(info) = CONTRACT.record(kind_name) else {
            return;
        };
        let role = match self.found.get_mut(label) {
            Some(r) => r,
            None => self.found.entry(label.to_owned()).or_default(),
        };
        let shape = ValueShape::Ref(info.def);
        // The walk hands on only records the typed decode read, which the tape reads whole (it
        // follows deeper nesting than serde_json and any text the size limits let through); a
        // text it refused would add nothing here rather than something wrong.
        match Tape::read(text, std::mem::take(&mut self.buffer)) {
            Ok(tape) => {
                self.shapes
                    .instances(&shape, &tape, &mut |inst| count(role, kind_name, inst));
                self.buffer = tape.into_buffer();
            }
            Err(buffer) => self.buffer = buffer,
        }
    }
}
