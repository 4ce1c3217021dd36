//! What the door (`door.rs`) and idempotent ingest (`dedupe.rs`) both say of a posted body, below
//! them both: a problem at a JSON pointer, and a record's text on one line.

/// One problem with a body, as the PostAck (its `PostProblem`) and the quarantine's `.why.json`
/// list it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DoorProblem {
    /// JSON pointer into the posted record (`""` for the whole body, `/3` for an events batch's
    /// fourth record).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

/// JSON text on one line, as a Server-Sent Event's `data` needs it: in valid JSON a line break
/// can only be white space (strings escape theirs), so each becomes a space. The look for a line
/// break is `memchr`'s (a char-set `contains` walks the text a char at a time: it was a
/// twentieth of the collector's time per post).
pub fn one_line(text: &str) -> String {
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        text.replace(['\n', '\r'], " ")
    } else {
        text.to_owned()
    }
}
