//! The records of a bundle, one at a time, typed: the one reading path of every command that reads
//! a whole bundle (summaries, behavioural checks, coverage, parity, the TSV views).
//!
//! Files come from [`BundleReader::stream`] (gzip inflated on a thread of its own, the reader's
//! caps, links and devices refused, every entry problem located), sorted by path (so each node's
//! events files in sequence order). Each record is decoded once with the generated types and
//! handed, with its JSON text, to every [`Consumer`] of the walk. A well-formed file is read in one
//! pass that decodes each record and finds where its text ends together; a file that pass cannot
//! take is framed record by record by [`crate::frame`] — the framing validation uses — for located
//! problems, passing over the records already handed on, so memory holds one record and one read
//! buffer beside the file's bytes, whatever the file holds. A binary (`.pb`) file yields the records it encodes, with their JSON text
//! ([`crate::binary`]).
//!
//! A file that cannot be read, a file that breaks its shape and a record its type refuses are each
//! a located [`Problem`] (`archive.tar.gz!<inner path>`, the record's index, its line and column,
//! and a JSON pointer when an [`Explain`] hook says where in the record), handed to every consumer;
//! the walk goes on, so one bad file or record never costs the records around it. A body the
//! collector quarantined is one problem, as validation reports it ([`crate::quarantine`]), and is
//! handed to [`Consumer::quarantined`]; other files outside the layout are skipped.
//!
//! With a [`Verdict`] ([`Walk::verdict`]; the validation's `BundleVerdict`), the bundle's
//! validation runs in the same pass, on the same bytes: its problems (files outside the layout and
//! the parts of the bundle against each other too) are the ones handed to the consumers, and the
//! walk's own are not, so every reader reports what `diagwire validate` reports. The validation
//! runs on a thread of its own, which reads the files from the stream, judges each and hands it
//! with its problems to the walk, at most one batch of files ahead ([`BATCH_BYTES`]); the consumers
//! still get a file's records, then its problems, file after file in path order, as without the
//! thread. Decoding is most of judging, so a second thread decodes every other batch while the
//! verdict's thread reads and decodes the next, and the verdict takes those records
//! ([`Verdict::file_decoded`]). Judging a well-formed file decodes its records: the verdict keeps them, each with where
//! its text is ([`Verdict::file_records`], [`Decoded`]; a bounded size of file, so memory holds a
//! few batches of records), and the walk hands those on, so each record is decoded once and the
//! walk's thread only runs the consumers (the records it has handed on go back to the verdict's
//! thread to be freed, where the allocator frees them without taking another thread's arena: a
//! few batches at most, [`SPENT_BATCHES`]). A file the verdict hands no records of (a problem, too
//! large, a binary file) is decoded by the walk as without a verdict; a refused record's text is
//! then decoded twice (by the walk, to hand on the records around it, and by the validation),
//! never read twice. The standard library's scoped threads and channels do it; no pool is needed
//! for one helper thread.

use std::cell::RefCell;
use std::io::Read;
use std::sync::mpsc;

use super::read::{BundleReader, ReadError, StreamFile};
use crate::frame::{Frames, Kept, Whole, decode_whole, decode_whole_list, frame};
use crate::layout::{Encoding, Role};
use crate::problem::{Location, Problem, ProblemKind};
use crate::quarantine::{Pairing, Quarantined};
use crate::scan::Position;
use crate::v1::{Record, RecordKind};

/// One record and where it is.
#[derive(Debug)]
pub struct Item<'a> {
    /// The file's path inside the run directory.
    pub path: &'a str,
    /// The node directory the file is in (`None` for the manifest).
    pub node: Option<&'a str>,
    /// The file's part in the layout.
    pub role: &'a Role,
    /// The record's index in its file (0 but for events files).
    pub index: usize,
    /// The record; an events file's records come as [`Record::Event`].
    pub record: &'a Record,
    /// The record's JSON text, as written.
    pub text: &'a str,
    /// Whether the record holds a key its types keep as unknown (somewhere inside it): only then
    /// does a consumer that lists unknown keys need to walk its JSON.
    pub unknown_keys: bool,
}

/// What reads the records of a walk.
pub trait Consumer {
    /// A record its type reads.
    fn record(&mut self, item: &Item<'_>);
    /// A file or record that cannot be read, located.
    fn problem(&mut self, problem: &Problem);
    /// A body the collector quarantined at ingest (also handed to [`Consumer::problem`] as its
    /// one problem).
    fn quarantined(&mut self, _body: &Quarantined) {}
    /// At the end of a walk with a [`Verdict`]: how many problems it found beyond those it kept
    /// and handed on (its caps), so a consumer counts every problem.
    fn omitted(&mut self, _problems: usize) {}
}

/// A bundle's validation run in the walk's pass ([`Walk::verdict`];
/// `diagwire::validate::bundle::BundleVerdict` with the feature `validate`): it sees every entry
/// and file the walk reads, and its problems are the ones handed to the consumers (the walk's own
/// are not), so every reader of a bundle reports what `diagwire validate` reports.
pub trait Verdict {
    /// The walk starts on `reader`.
    fn begin(&mut self, reader: &BundleReader);
    /// An entry the reader could not yield: the problems kept of it.
    fn entry(&mut self, error: &ReadError) -> Vec<Problem>;
    /// A file of the run directory (`path` inside it, shown as `location`) and its bytes: the
    /// problems kept of it.
    fn file(&mut self, path: &str, location: &str, bytes: &[u8]) -> Vec<Problem>;
    /// As [`Verdict::file`], and the file's records when the verdict decoded them in judging it
    /// ([`Decoded`]): the walk then hands those to the consumers instead of decoding the file
    /// again. The default decodes nothing.
    fn file_records(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
    ) -> (Vec<Problem>, Option<Decoded>) {
        (self.file(path, location, bytes), None)
    }
    /// As [`Verdict::file_records`], for a JSON file of `kind` whose records the walk has decoded
    /// already, on a thread of its own, in the one typed pass ([`Decoded`]; only a file up to
    /// [`DECODED_BYTES`] that the pass took whole): the verdict may take them instead of decoding
    /// the file itself, and hand them back. The default decodes the file again.
    fn file_decoded(
        &mut self,
        path: &str,
        location: &str,
        bytes: &[u8],
        kind: RecordKind,
        records: Decoded,
    ) -> (Vec<Problem>, Option<Decoded>) {
        let _ = (kind, records);
        self.file_records(path, location, bytes)
    }
    /// The walk has ended: the problems kept of the bundle as a whole, and how many problems
    /// were found in all and not kept.
    fn finish(&mut self) -> (Vec<Problem>, usize);
}

/// The largest file whose records a walk with a [`Verdict`] decodes ahead for it
/// ([`Verdict::file_decoded`]) and the verdict keeps for the walk: decoded records take a few
/// times their text, and the walk holds a few batches of files (half a MiB or one file each) at once, so
/// memory stays bounded whatever the bundle holds.
pub const DECODED_BYTES: u64 = 1 << 20;

/// A file's records as a [`Verdict`] decoded them in judging it ([`Verdict::file_records`]), in
/// file order: each record with where its text is in the file's bytes and whether it held a key
/// its types keep as unknown. The walk hands them on as it would its own decode's (a record at
/// `index` of the file is the `index`-th pushed); one whose text is not in the file is not
/// trusted, and the file is then decoded by the walk.
#[derive(Debug, Default)]
pub struct Decoded {
    records: Vec<Whole>,
}

impl Decoded {
    /// Adds the file's next record: its text is `text` of the file's bytes, `unknown_keys` says
    /// whether it held a key its types keep as unknown.
    pub fn push(&mut self, text: std::ops::Range<usize>, record: Record, unknown_keys: bool) {
        self.records.push(Whole {
            text,
            record: Kept::of(record),
            unknown_keys,
        });
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records decoded whole by [`decode_whole`] (by the bundle's validation, feature
    /// `validate`).
    #[cfg_attr(not(feature = "validate"), allow(dead_code))]
    pub(crate) fn from_whole(records: Vec<Whole>) -> Decoded {
        Decoded { records }
    }

    /// The records, as [`decode_whole`] handed them.
    #[cfg_attr(not(feature = "validate"), allow(dead_code))]
    pub(crate) fn into_whole(self) -> Vec<Whole> {
        self.records
    }

    /// The file's text, when every record's text is in it.
    fn text_in<'a>(&self, bytes: &'a [u8]) -> Option<&'a str> {
        let text = std::str::from_utf8(bytes).ok()?;
        let all_in = self
            .records
            .iter()
            .all(|w| text.get(w.text.clone()).is_some());
        all_in.then_some(text)
    }
}

/// Says where in a record, and why, its type refuses it: one `(kind, JSON pointer, message)` per
/// reason. Validation provides one from the schemas; without it a refused record is located by its
/// index, line and column and the decoder's message.
pub type Explain<'a> = &'a dyn Fn(RecordKind, &str) -> Vec<(ProblemKind, String, String)>;

/// How a walk reads.
#[derive(Clone, Copy, Default)]
pub struct Walk<'a> {
    /// The largest single record read, in bytes (0: the validation default, 64 MiB).
    pub max_record_bytes: usize,
    /// Where and why a refused record breaks its schema.
    pub explain: Option<Explain<'a>>,
    /// The bundle's validation, run in the same pass: when set, its problems are the ones the
    /// consumers get (and `explain` is not asked).
    pub verdict: Option<&'a RefCell<dyn Verdict + Send + 'a>>,
}

/// What a walk went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Walked {
    /// Record files read.
    pub files: usize,
    /// Records handed to the consumers.
    pub records: usize,
    /// Problems handed to the consumers.
    pub problems: usize,
}

/// Walks every record of `reader`, calling `on_record` for each and `on_problem` for each file or
/// record that cannot be read.
pub fn walk(
    reader: &mut BundleReader,
    on_record: impl FnMut(Item<'_>),
    on_problem: impl FnMut(Problem),
) -> Walked {
    struct Closures<R, P>(R, P);
    impl<R: FnMut(Item<'_>), P: FnMut(Problem)> Consumer for Closures<R, P> {
        fn record(&mut self, item: &Item<'_>) {
            (self.0)(Item { ..*item })
        }
        fn problem(&mut self, problem: &Problem) {
            (self.1)(problem.clone())
        }
    }
    walk_into(
        reader,
        Walk::default(),
        &mut [&mut Closures(on_record, on_problem)],
    )
}

/// Walks every record of `reader` once, handing each record and each problem to every consumer
/// in turn: several consumers (a summary, the behavioural checks, coverage) share one decode.
pub fn walk_into(
    reader: &mut BundleReader,
    settings: Walk<'_>,
    consumers: &mut [&mut dyn Consumer],
) -> Walked {
    let mut walk = Walking {
        max_record: match settings.max_record_bytes {
            0 => 64 << 20,
            n => n,
        },
        settings,
        walked: Walked::default(),
        quarantine: Pairing::default(),
        spent: None,
    };
    let Some(verdict) = settings.verdict else {
        for file in reader.stream() {
            walk.item(file, None, consumers);
        }
        return walk.end(consumers);
    };
    let mut verdict = verdict.borrow_mut();
    verdict.begin(reader);
    // What the verdict's thread takes when it starts; left here if no thread can be had.
    let parts = std::sync::Mutex::new(Some((reader, &mut *verdict as &mut (dyn Verdict + Send))));
    std::thread::scope(|scope| {
        let (batches, judged) = mpsc::sync_channel::<Vec<Judged>>(1);
        let (spent, to_free) = mpsc::sync_channel::<Vec<Kept>>(SPENT_BATCHES);
        let parts = &parts;
        let _reading = std::thread::Builder::new()
            .name("diagwire-verdict".into())
            .spawn_scoped(scope, move || {
                if let Some((reader, judge)) = take(parts) {
                    judge_ahead(reader, judge, &batches, &to_free);
                }
            });
        walk.spent = Some(Vec::new());
        for batch in judged {
            for (file, judgement) in batch {
                walk.item(file, Some(judgement), consumers);
            }
            if let Some(records) = walk.spent.as_mut().filter(|r| !r.is_empty()) {
                // When the thread has enough to free already, they are freed here.
                let _ = spent.try_send(std::mem::take(records));
            }
        }
        walk.spent = None;
        // No thread to be had: the verdict judges each file on this one.
        if let Some((reader, judge)) = take(parts) {
            for file in reader.stream() {
                let judgement = judge_one(judge, &file, None);
                walk.item(file, Some(judgement), consumers);
            }
        }
    });
    let (problems, omitted) = verdict.finish();
    let mut walked = walk.end(consumers);
    hand_all(&problems, &mut walked, consumers);
    if omitted > 0 {
        consumers.iter_mut().for_each(|c| c.omitted(omitted));
    }
    walked
}

/// The most bytes of files, and the most files, the verdict's thread hands the walk at once; it
/// runs at most one such batch ahead of the walk (and is judging the next, a second thread
/// decoding the one after), so memory holds a few batches, or a few files when one is larger. Half
/// a MiB: a MiB took a few MB more at the peak, and no less time.
const BATCH_BYTES: u64 = 1 << 19;
const BATCH_FILES: usize = 64;

/// The most batches of records handed on that wait for the verdict's thread to free them: a record
/// freed on the thread that decoded it costs the allocator a fraction of one freed on another.
const SPENT_BATCHES: usize = 2;

/// The verdict's judgement of one entry of the stream, given the file's records when the walk
/// decoded them ahead ([`decode_ahead`]).
fn judge_one(
    judge: &mut (dyn Verdict + Send),
    file: &Result<StreamFile, ReadError>,
    ahead: Option<(RecordKind, Decoded)>,
) -> Judgement {
    match (file, ahead) {
        (Ok(f), Some((kind, records))) => {
            judge.file_decoded(&f.path, &f.location, f.contents(), kind, records)
        }
        (Ok(f), None) => judge.file_records(&f.path, &f.location, f.contents()),
        (Err(e), _) => (judge.entry(e), None),
    }
}

/// The records of a JSON record file up to [`DECODED_BYTES`], when the one typed pass takes the
/// file whole (the verdict then need not decode it: [`Verdict::file_decoded`]).
fn decode_ahead(file: &Result<StreamFile, ReadError>) -> Option<(RecordKind, Decoded)> {
    let file = file.as_ref().ok()?;
    let kind = file.role.record_kind()?;
    let bytes = file.contents();
    if file.encoding != Encoding::Json || bytes.len() as u64 > DECODED_BYTES {
        return None;
    }
    let records = decode_whole_list(kind, bytes)?;
    Some((kind, Decoded { records }))
}

fn take<T>(slot: &std::sync::Mutex<Option<T>>) -> Option<T> {
    slot.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
}

/// The verdict's problems of an entry of the stream, and the file's records when it decoded them.
type Judgement = (Vec<Problem>, Option<Decoded>);

/// An entry of the stream and the verdict's judgement of it.
type Judged = (Result<StreamFile, ReadError>, Judgement);

/// A batch of entries of the stream, and the records decoded ahead of each.
type Ahead = (
    Vec<Result<StreamFile, ReadError>>,
    Vec<Option<(RecordKind, Decoded)>>,
);

/// The verdict's thread: reads the bundle's files in order, in batches ([`BATCH_BYTES`],
/// [`BATCH_FILES`]), judges each and hands the batches on until the walk stops taking them; frees
/// the records the walk has handed on (`to_free`) as it goes. Decoding the records is most of a
/// judgement, so every other batch is decoded on a second thread while this one reads and decodes
/// the next ([`decode_ahead`]); the batches are judged and handed on in order.
fn judge_ahead(
    reader: &mut BundleReader,
    judge: &mut (dyn Verdict + Send),
    batches: &mpsc::SyncSender<Vec<Judged>>,
    to_free: &mpsc::Receiver<Vec<Kept>>,
) {
    let hand = |judge: &mut (dyn Verdict + Send), (files, ahead): Ahead| {
        let judged = files
            .into_iter()
            .zip(ahead)
            .map(|(file, ahead)| {
                let judgement = judge_one(judge, &file, ahead);
                (file, judgement)
            })
            .collect();
        batches.send(judged).is_ok()
    };
    std::thread::scope(|scope| {
        let (to_decode, decoding) = mpsc::sync_channel::<Vec<Result<StreamFile, ReadError>>>(1);
        let (decoded, from_helper) = mpsc::sync_channel::<Ahead>(1);
        let helper = std::thread::Builder::new()
            .name("diagwire-decode".into())
            .spawn_scoped(scope, move || {
                for files in decoding {
                    let ahead = files.iter().map(decode_ahead).collect();
                    if decoded.send((files, ahead)).is_err() {
                        return;
                    }
                }
            });
        // No second thread to be had: every batch is decoded on this one.
        let helper = helper.is_ok().then_some(to_decode);
        // Whether the helper holds a batch, older than any this thread holds.
        let mut lent = false;
        let mut take_batch = |judge: &mut (dyn Verdict + Send), files: Vec<_>| {
            if let Some(helper) = helper.as_ref().filter(|_| !lent) {
                lent = true;
                return helper.send(files).is_ok();
            }
            let ahead = files.iter().map(decode_ahead).collect();
            if std::mem::take(&mut lent) {
                let Ok(older) = from_helper.recv() else {
                    return false;
                };
                if !hand(judge, older) {
                    return false;
                }
            }
            hand(judge, (files, ahead))
        };
        let mut batch = Vec::new();
        let mut bytes = 0;
        for file in reader.stream() {
            while let Ok(records) = to_free.try_recv() {
                drop(records);
            }
            bytes += file.as_ref().map_or(0, |f| f.size);
            batch.push(file);
            if bytes >= BATCH_BYTES || batch.len() >= BATCH_FILES {
                bytes = 0;
                if !take_batch(judge, std::mem::take(&mut batch)) {
                    return;
                }
            }
        }
        if !batch.is_empty() && !take_batch(judge, batch) {
            return;
        }
        if lent {
            if let Ok(older) = from_helper.recv() {
                hand(judge, older);
            }
        }
    });
}

/// A walk under way: how it reads, what it went through, the quarantined bodies waiting for
/// their pair.
struct Walking<'a> {
    settings: Walk<'a>,
    max_record: usize,
    walked: Walked,
    quarantine: Pairing,
    /// The verdict's records handed on, kept for its thread to free (when it has one).
    spent: Option<Vec<Kept>>,
}

impl Walking<'_> {
    /// Reads one entry of the stream and hands on its records and problems: the verdict's
    /// (`judged`, after the file's records, which are the verdict's decode when it kept them)
    /// when there is one, else its own.
    fn item(
        &mut self,
        file: Result<StreamFile, ReadError>,
        judged: Option<Judgement>,
        consumers: &mut [&mut dyn Consumer],
    ) {
        let verdict = judged.is_some();
        let (judged, decoded) = judged.unwrap_or_default();
        let walked = &mut self.walked;
        let quarantine = &mut self.quarantine;
        let spent = &mut self.spent;
        let settings = self.settings;
        let max_record = self.max_record;
        let mut file = match file {
            Ok(f) => f,
            Err(e) => {
                let problems = if verdict { judged } else { vec![e.into()] };
                hand_all(&problems, walked, consumers);
                return;
            }
        };
        let location = file.location.clone();
        let path = file.path.clone();
        let size = Some(file.size);
        if let Some(found) = quarantine.take(&path, &location, size, &mut file) {
            for body in found {
                hand_quarantined(&body, !verdict, walked, consumers);
            }
            hand_all(&judged, walked, consumers);
            return;
        }
        let Some(kind) = file.role.record_kind() else {
            hand_all(&judged, walked, consumers);
            return;
        };
        walked.files += 1;
        let node = file.node.clone();
        let role = file.role.clone();
        let mut typed = Typed {
            path: &path,
            node: node.as_deref(),
            role: &role,
            location: &location,
            positions: file.encoding == Encoding::Json,
            explain: settings.explain,
            muted: verdict,
            consumers: &mut *consumers,
            walked,
            found: 0,
            omitted: 0,
            delivered: 0,
        };
        let read = match file.encoding {
            Encoding::Json => {
                let bytes = file.contents();
                let verdicts = decoded
                    .filter(|_| bytes.len() <= max_record)
                    .and_then(|d| Some((d.text_in(bytes)?, d)));
                match verdicts {
                    Some((text, decoded)) => {
                        for (index, w) in decoded.records.into_iter().enumerate() {
                            let record = w.record.into_record();
                            typed.deliver(index, &text[w.text], &record, w.unknown_keys);
                            if let Some(spent) = spent.as_mut() {
                                spent.push(Kept::of(record));
                            }
                        }
                        Ok(())
                    }
                    None => typed.read(bytes, kind, max_record),
                }
            }
            Encoding::Protobuf => {
                let cap = crate::binary::MAX_BINARY_FILE_BYTES as u64;
                let mut bytes = Vec::new();
                match (&mut file).take(cap + 1).read_to_end(&mut bytes) {
                    Ok(_) => match crate::binary::json_text(Encoding::Protobuf, kind, &bytes) {
                        Ok(text) => typed.read(&text, kind, max_record),
                        Err(message) => {
                            typed.hand(Problem::new(
                                ProblemKind::Encoding,
                                Location::file(&location),
                                message,
                            ));
                            Ok(())
                        }
                    },
                    Err(e) => Err(e),
                }
            }
        };
        if let Err(e) = read {
            typed.hand(Problem::new(
                ProblemKind::Read(crate::problem::ReadErrorKind::Io),
                Location::file(&location),
                e.to_string(),
            ));
        }
        typed.end();
        hand_all(&judged, walked, consumers);
    }

    /// The walk has ended: the quarantined bodies left without a pair.
    fn end(mut self, consumers: &mut [&mut dyn Consumer]) -> Walked {
        let verdict = self.settings.verdict.is_some();
        for body in self.quarantine.finish() {
            hand_quarantined(&body, !verdict, &mut self.walked, consumers);
        }
        self.walked
    }
}

/// Hands problems to every consumer.
fn hand_all(problems: &[Problem], walked: &mut Walked, consumers: &mut [&mut dyn Consumer]) {
    for problem in problems {
        walked.problems += 1;
        consumers.iter_mut().for_each(|c| c.problem(problem));
    }
}

/// Hands a quarantined body to every consumer: its one problem (unless a verdict hands it), and
/// the body itself.
fn hand_quarantined(
    body: &Quarantined,
    with_problem: bool,
    walked: &mut Walked,
    consumers: &mut [&mut dyn Consumer],
) {
    let problem = body.problem();
    if with_problem {
        walked.problems += 1;
    }
    for c in consumers.iter_mut() {
        if with_problem {
            c.problem(&problem);
        }
        c.quarantined(body);
    }
}

/// Decodes what framing hands on and hands it to the consumers.
struct Typed<'w, 'c> {
    path: &'w str,
    node: Option<&'w str>,
    role: &'w Role,
    location: &'w str,
    /// Whether lines and columns point into the file (not for a binary file's decoded text).
    positions: bool,
    explain: Option<Explain<'w>>,
    /// Whether a [`Verdict`] says what is wrong instead (the walk's own problems are not handed).
    muted: bool,
    consumers: &'w mut [&'c mut dyn Consumer],
    walked: &'w mut Walked,
    /// Problems found in this file, and how many of them were not handed on (past
    /// [`MAX_PROBLEMS_PER_FILE`]).
    found: usize,
    omitted: usize,
    /// Records of the file handed on by the one-pass decode, which framing passes over when the
    /// file needs it after all.
    delivered: usize,
}

/// The most problems of one file handed to the consumers; the rest are one problem that counts
/// them, so a file of millions of bad records costs its reading time, never memory or output.
pub const MAX_PROBLEMS_PER_FILE: usize = 20;

impl Typed<'_, '_> {
    fn hand(&mut self, problem: Problem) {
        if self.counted() {
            self.walked.problems += 1;
            self.consumers.iter_mut().for_each(|c| c.problem(&problem));
        }
    }

    /// Counts a problem; whether the consumers are to be shown it (not muted, under the cap).
    fn counted(&mut self) -> bool {
        if self.muted {
            return false;
        }
        self.found += 1;
        if self.found > MAX_PROBLEMS_PER_FILE {
            self.omitted += 1;
            return false;
        }
        true
    }

    /// Reads a file's bytes as a file of `kind`: first in one pass that decodes each record and
    /// finds its text together (serde_json's stream decoder says where each record ends), which is
    /// all a well-formed file needs; at the first thing that pass cannot take, the file is framed
    /// by [`crate::frame`] for located problems, passing over the records already handed on.
    fn read(&mut self, bytes: &[u8], kind: RecordKind, max_record: usize) -> std::io::Result<()> {
        if bytes.len() <= max_record {
            if let Ok(text) = std::str::from_utf8(bytes) {
                let whole = decode_whole(kind, text, &mut |w| {
                    let record = w.record.into_record();
                    self.deliver(self.delivered, &text[w.text], &record, w.unknown_keys);
                    self.delivered += 1;
                });
                if whole {
                    return Ok(());
                }
            }
        }
        frame(&mut &bytes[..], kind, max_record, &mut Vec::new(), self)
    }

    /// Hands a decoded record to every consumer.
    fn deliver(&mut self, index: usize, text: &str, record: &Record, unknown_keys: bool) {
        self.walked.records += 1;
        let item = Item {
            path: self.path,
            node: self.node,
            role: self.role,
            index,
            record,
            text,
            unknown_keys,
        };
        self.consumers.iter_mut().for_each(|c| c.record(&item));
    }

    /// Says how many problems of the file were not handed on.
    fn end(&mut self) {
        if self.omitted > 0 {
            let problem = Problem::new(
                ProblemKind::Parse,
                Location::file(self.location),
                format!(
                    "{} more problems in this file are not listed (the first {MAX_PROBLEMS_PER_FILE} are)",
                    self.omitted
                ),
            );
            self.walked.problems += 1;
            self.consumers.iter_mut().for_each(|c| c.problem(&problem));
        }
    }

    fn at(&self, index: usize, start: Position, pointer: String) -> Location {
        let at = Location::record(self.location, index, pointer);
        match self.positions {
            true => at.with_position(start.line, start.column),
            false => at,
        }
    }
}

impl Frames for Typed<'_, '_> {
    fn record(&mut self, kind: RecordKind, index: usize, start: Position, bytes: &[u8]) {
        if index < self.delivered {
            return;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            let at = self.at(index, start, String::new());
            self.hand(Problem::new(
                ProblemKind::Encoding,
                at,
                "not UTF-8: an invalid byte sequence",
            ));
            return;
        };
        if (self.muted || self.found >= MAX_PROBLEMS_PER_FILE)
            && crate::frame::not_an_object(bytes) != Some(false)
        {
            // A problem no consumer is shown: counted, without building the decode's message.
            let _shown = self.counted();
            return;
        }
        let unknown_before = diagwire_runtime::unknown_keys_read();
        match Record::parse(kind, text) {
            Ok(record) => {
                let unknown = diagwire_runtime::unknown_keys_read() != unknown_before;
                self.deliver(index, text, &record, unknown);
            }
            Err(e) => {
                // Explaining costs a schema validation: only for a problem that is handed on.
                let reasons = match !self.muted && self.found < MAX_PROBLEMS_PER_FILE {
                    true => self.explain.map(|f| f(kind, text)).unwrap_or_default(),
                    false => Vec::new(),
                };
                if reasons.is_empty() {
                    let at = self.at(index, start, String::new());
                    let noun = match kind {
                        RecordKind::Event => "an event".to_owned(),
                        k => format!("a {k}"),
                    };
                    self.hand(Problem::new(
                        ProblemKind::Parse,
                        at,
                        format!("not {noun} record: {e}"),
                    ));
                }
                for (problem, pointer, message) in reasons {
                    let at = self.at(index, start, pointer);
                    self.hand(Problem::new(problem, at, message));
                }
            }
        }
    }

    fn problem(&mut self, kind: ProblemKind, at: Option<Position>, message: String) {
        let location = match (at, self.positions) {
            (Some(at), true) => Location::file(self.location).with_position(at.line, at.column),
            _ => Location::file(self.location),
        };
        self.hand(Problem::new(kind, location, message));
    }
}
