//! The contract at the door: what becomes of a posted body. Each body is read as its content type
//! says (JSON, or protobuf decoded to JSON by the library), parsed with the generated type of its
//! record kind, and either staged, staged in part (an events batch with bad records), or kept in
//! quarantine with its problems. Unknown fields, event types and enum values are kept: the typed
//! parse keeps them and the staged bytes are the posted bytes.

use diagwire::layout::{Encoding, FileKind};
use diagwire::v1::{Record, RecordKind};
use diagwire::validate::Validators;
use serde_json::value::RawValue;

/// One problem with a body, as the PostAck and the quarantine's `.why.json` list it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DoorProblem {
    /// JSON pointer into the posted record (`""` for the whole body, `/3` for an events batch's
    /// fourth record).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
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
        problems: Vec<DoorProblem>,
    },
    /// Valid JSON (or protobuf) that is not a record of its kind: quarantine, acknowledged.
    NotARecord(Vec<DoorProblem>),
    /// Not JSON, not UTF-8, protobuf that does not decode, or a content type that is neither:
    /// quarantine and 400.
    Unreadable(String),
}

/// The record kind checked for a route's file kind, and the kind of each element of its batch.
fn kinds(kind: &FileKind) -> (RecordKind, Option<RecordKind>) {
    match kind {
        FileKind::Events => (RecordKind::EventBatch, Some(RecordKind::Event)),
        other => (other.record_kind(), None),
    }
}

/// Decides a body of `kind` posted with `content_type` (`None`: no header, read as JSON, as
/// swactor's nodes always send JSON). `validators` explains a refused record with JSON pointers;
/// with `validate` off every JSON body is staged as posted.
pub fn decide(
    kind: &FileKind,
    content_type: Option<&str>,
    body: &[u8],
    validate: bool,
    validators: &Validators,
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
    let stage = |bytes: Option<Vec<u8>>, encoding, text: &str, problems| Verdict::Stage {
        bytes,
        encoding,
        json: one_line(text),
        problems,
    };
    let well_formed = if validate {
        Record::parse(record_kind, text).is_ok()
    } else {
        false
    };
    if well_formed {
        return stage(as_posted(body), encoding, text, Vec::new());
    }
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Verdict::Unreadable(format!("the body is not JSON: {e}"));
    }
    if !validate {
        return stage(as_posted(body), encoding, text, Vec::new());
    }
    let whole = explain(validators, record_kind, text, "");
    let Some(element) = element else {
        return Verdict::NotARecord(whole);
    };
    // An events batch: keep the records that parse, leave out (and list) the others.
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
        return Verdict::NotARecord(whole);
    };
    let mut good = Vec::new();
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if Record::parse(element, item.get()).is_ok() {
            good.push(item.get());
        } else {
            problems.extend(explain(validators, element, item.get(), &format!("/{i}")));
        }
    }
    if good.is_empty() || problems.is_empty() {
        // Nothing to keep, or the batch fails as a whole although each record parses.
        return Verdict::NotARecord(if problems.is_empty() { whole } else { problems });
    }
    let kept = format!("[{}]", good.join(","));
    let line = one_line(&kept);
    Verdict::Stage {
        bytes: Some(kept.into_bytes()),
        encoding: Encoding::Json,
        json: line,
        problems,
    }
}

/// JSON text on one line, as a Server-Sent Event's `data` needs it: in valid JSON a line break
/// can only be white space (strings escape theirs), so each becomes a space.
fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ")
    } else {
        text.to_owned()
    }
}

/// Where and why `text` is not a record of `kind`, each pointer prefixed with `prefix`.
fn explain(
    validators: &Validators,
    kind: RecordKind,
    text: &str,
    prefix: &str,
) -> Vec<DoorProblem> {
    let mut out: Vec<DoorProblem> = validators
        .explain(kind, text)
        .into_iter()
        .take(16)
        .map(|(_, pointer, message)| DoorProblem {
            pointer: format!("{prefix}{pointer}"),
            message: diagwire::problem::printable(&message).into_owned(),
        })
        .collect();
    if out.is_empty() {
        let message = match Record::parse(kind, text) {
            Err(e) => format!("not a {kind} record: {e}"),
            Ok(_) => format!("not a {kind} record"),
        };
        out.push(DoorProblem {
            pointer: prefix.to_owned(),
            message: diagwire::problem::printable(&message).into_owned(),
        });
    }
    out
}
