//! The contract at the door: what becomes of a posted body. Each body is read as its content type
//! says (JSON, or protobuf decoded to JSON by the library), parsed with the generated type of its
//! record kind, and either staged, staged in part (an events batch with bad records), or kept in
//! quarantine with its problems. Unknown fields, event types and enum values are kept: the typed
//! parse keeps them and the staged bytes are the posted bytes. An events batch is parsed record by
//! record, and each staged record's identity and text range go with the verdict, so idempotent
//! ingest does not read the batch again (`crate::dedupe`).

use diagwire::layout::{Encoding, FileKind};
use diagwire::v1::{CustomPayload, Event, EventRecord, Record, RecordKind};
use diagwire::validate::Validators;
use serde_json::value::RawValue;

use crate::dedupe::{EventIdentity, EventKey};
use crate::posted::{DoorProblem, one_line};

/// The problems of a body: the first ones, each with where it is, and how many more there are.
/// A writer lists a bounded number, so explaining a body costs what the listed problems cost,
/// whatever the body holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems {
    /// The problems listed (at most the collector's `max_problems`).
    pub list: Vec<DoorProblem>,
    /// Problems not listed; a left-out record that was not explained counts as one.
    pub omitted: u64,
}

impl Problems {
    fn one(pointer: String, message: String) -> Problems {
        Problems {
            list: vec![DoorProblem { pointer, message }],
            omitted: 0,
        }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && self.omitted == 0
    }
}

/// What to do with a body.
#[derive(Debug)]
pub enum Verdict {
    /// Stage `bytes` (in `encoding`), or the body as posted when `None`; `json` is the stored
    /// record's JSON text on one line, for the live stream.
    /// When `problems` is not empty (some records of an events batch were bad), `bytes` holds
    /// the good records only, and the body as posted goes to quarantine.
    Stage {
        /// The bytes to stage, when they are not the body as posted.
        bytes: Option<Vec<u8>>,
        /// Their encoding.
        encoding: Encoding,
        /// The stored record's JSON text, on one line.
        json: String,
        /// Records left out.
        problems: Problems,
        /// For an events batch the door parsed, each staged record's identity and its text's
        /// range in `json` (idempotent ingest takes them from here, `crate::dedupe`).
        events: Option<Vec<EventKey>>,
    },
    /// Valid JSON (or protobuf) that is not a record of its kind: quarantine, acknowledged.
    NotARecord(Problems),
    /// Not JSON, not UTF-8, protobuf that does not decode, or a content type that is neither:
    /// quarantine and 400.
    Unreadable(String),
}

/// The largest text the door explains with the schema (which holds the text as a JSON value);
/// a larger one is explained by the typed parse's first error.
pub const EXPLAIN_MAX_BYTES: usize = 1 << 20;

/// The most problems one record's explanation lists.
const PER_RECORD: usize = 16;

/// The record kind checked for a route's file kind, and the kind of each element of its batch.
fn kinds(kind: &FileKind) -> (RecordKind, Option<RecordKind>) {
    match kind {
        FileKind::Events => (RecordKind::EventBatch, Some(RecordKind::Event)),
        other => (other.record_kind(), None),
    }
}

/// How the door reads bodies: whether it enforces the contract, the validators that explain a
/// refused record with JSON pointers, and how many problems it lists.
pub struct Door<'a> {
    /// Off, every JSON body is staged as posted.
    pub validate: bool,
    /// The compiled schemas.
    pub validators: &'a Validators,
    /// The most problems listed for one body.
    pub max_problems: usize,
}

/// Decides a body of `kind` posted with `content_type` (`None`: no header, read as JSON, as
/// swactor's nodes always send JSON).
pub fn decide(
    door: &Door<'_>,
    kind: &FileKind,
    content_type: Option<&str>,
    body: &[u8],
) -> Verdict {
    let encoding = match content_type {
        None => Encoding::Json,
        Some(ct) => match Encoding::of_content_type(ct) {
            Some(e) => e,
            None => {
                return Verdict::Unreadable(format!(
                    "content type {:?} is neither {} nor {}",
                    diagwire::problem::printable(ct),
                    Encoding::Json.content_type(),
                    Encoding::Protobuf.content_type()
                ));
            }
        },
    };
    let (record_kind, element) = kinds(kind);
    // An empty body is stored as `null`, as swactor's collector does.
    let empty = body.iter().all(u8::is_ascii_whitespace) && encoding == Encoding::Json;
    let body: &[u8] = if empty { b"null" } else { body };
    let text = match diagwire::binary::json_text(encoding, record_kind, body) {
        Ok(t) => t,
        Err(e) => return Verdict::Unreadable(format!("the protobuf body does not decode: {e}")),
    };
    let Ok(text) = std::str::from_utf8(&text) else {
        return Verdict::Unreadable("the body is not UTF-8, so not JSON".into());
    };
    // The body as posted, unless it was empty and reads as `null`.
    let as_posted = |body: &[u8]| (empty).then(|| body.to_vec());
    let stage = |bytes: Option<Vec<u8>>, encoding, text: &str, problems, events| Verdict::Stage {
        bytes,
        encoding,
        json: one_line(text),
        problems,
        events,
    };
    // An events batch is parsed record by record, so that each record's identity and text
    // come with the verdict; any other body as its record.
    let well_formed = match (door.validate, element) {
        (false, _) => None,
        (true, Some(_)) => typed_batch(text).map(Some),
        (true, None) => Record::parse(record_kind, text).is_ok().then_some(None),
    };
    if let Some(events) = well_formed {
        return stage(as_posted(body), encoding, text, Problems::default(), events);
    }
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Verdict::Unreadable(format!("the body is not JSON: {e}"));
    }
    if !door.validate {
        return stage(as_posted(body), encoding, text, Problems::default(), None);
    }
    let whole = || {
        let mut problems = Problems::default();
        explain(door, record_kind, text, "", &mut problems);
        problems
    };
    let Some(element) = element else {
        return Verdict::NotARecord(whole());
    };
    // An events batch: keep the records that parse, leave out (and list) the others, one
    // record at a time (the batch is never held as a list of its records).
    let mut batch = Batch {
        door,
        element,
        kept: String::with_capacity(text.len()),
        keys: Vec::new(),
        good: 0,
        problems: Problems::default(),
    };
    batch.kept.push('[');
    let mut reader = serde_json::Deserializer::from_str(text);
    let read = serde::Deserializer::deserialize_seq(&mut reader, &mut batch);
    if read.is_err() || reader.end().is_err() {
        return Verdict::NotARecord(whole());
    }
    if batch.good == 0 || batch.problems.is_empty() {
        // Nothing to keep, or the batch fails as a whole although each record parses.
        return Verdict::NotARecord(if batch.problems.is_empty() {
            whole()
        } else {
            batch.problems
        });
    }
    batch.kept.push(']');
    let line = one_line(&batch.kept);
    Verdict::Stage {
        bytes: Some(batch.kept.into_bytes()),
        encoding: Encoding::Json,
        json: line,
        problems: batch.problems,
        events: Some(batch.keys),
    }
}

/// An events batch's records, each parsed with the generated type and taken with its identity
/// and its text's range; `None` when the text is not a batch of event records.
pub(crate) fn typed_batch(text: &str) -> Option<Vec<EventKey>> {
    crate::dedupe::keyed_batch(text, |record: EventRecord| Some(identity(&record)))
}

/// A parsed event's identity.
fn identity(record: &EventRecord) -> EventIdentity {
    EventIdentity {
        monotonic_seq: record.monotonic_seq,
        wall_ms: record.wall_ms,
        clock_sample: matches!(
            &record.event,
            Event::Custom(c) if matches!(c.payload, CustomPayload::ClockSample(_))
        ),
    }
}

/// An events batch read one record at a time: the good records' text, the problems of the bad.
struct Batch<'a, 'v> {
    door: &'a Door<'v>,
    element: RecordKind,
    kept: String,
    keys: Vec<EventKey>,
    good: u64,
    problems: Problems,
}

impl<'de> serde::de::Visitor<'de> for &mut Batch<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of event records")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0u64;
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            let text = item.get();
            if let Ok(record) = serde_json::from_str::<EventRecord>(text) {
                if self.good > 0 {
                    self.kept.push(',');
                }
                let start = self.kept.len();
                self.kept.push_str(text);
                self.keys.push(EventKey {
                    range: start..start + text.len(),
                    identity: Some(identity(&record)),
                });
                self.good += 1;
            } else if self.problems.list.len() < self.door.max_problems {
                explain(
                    self.door,
                    self.element,
                    text,
                    &format!("/{i}"),
                    &mut self.problems,
                );
            } else {
                self.problems.omitted += 1;
            }
            i += 1;
        }
        Ok(())
    }
}

/// Where and why `text` is not a record of `kind`, each pointer prefixed with `prefix`, added
/// to `out` within the door's limit (what does not fit is counted). A text over
/// [`EXPLAIN_MAX_BYTES`] is explained by the typed parse alone.
fn explain(door: &Door<'_>, kind: RecordKind, text: &str, prefix: &str, out: &mut Problems) {
    let room = door
        .max_problems
        .saturating_sub(out.list.len())
        .min(PER_RECORD);
    let (found, more) = if text.len() <= EXPLAIN_MAX_BYTES && room > 0 {
        door.validators.explain_first(kind, text, room)
    } else {
        (Vec::new(), false)
    };
    let had = out.list.len();
    out.list
        .extend(found.into_iter().map(|(_, pointer, message)| DoorProblem {
            pointer: format!("{prefix}{pointer}"),
            message: diagwire::problem::printable(&message).into_owned(),
        }));
    if more {
        out.omitted += 1;
    }
    if out.list.len() == had {
        let message = match Record::parse(kind, text) {
            Err(e) => format!("not a {kind} record: {e}"),
            Ok(_) => format!("not a {kind} record"),
        };
        let problem = Problems::one(
            prefix.to_owned(),
            diagwire::problem::printable(&message).into_owned(),
        );
        if room > 0 {
            out.list.extend(problem.list);
        } else {
            out.omitted += 1;
        }
    }
}
