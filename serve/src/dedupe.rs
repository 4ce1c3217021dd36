//! Exactly once at the collector: a post that repeats records already staged for its (run, node)
//! stages nothing new (`docs/collector.md`, "Idempotent ingest", says what identifies each record
//! kind and what the bounds are).
//!
//! Per node the collector keeps [`NodeDedupe`], under the node's sequence lock: its last
//! [`MAX_BOOTS`] incarnations (a boot's `process_start_unix_ms` and `boot_sequence`), each with the
//! `monotonic_seq` values of its events as a set of ranges (at most [`MAX_RANGES`]) and the last
//! `window` of them with their content hash and staging number, and its finalize; the last
//! [`SNAPSHOT_WINDOW`] snapshot and [`VASTAI_WINDOW`] vast.ai record identities. A post is first
//! planned against that state ([`NodeDedupe::plan`], nothing changes), then, once its file is
//! durable, recorded ([`NodeDedupe::commit`]), so a post that failed to store leaves no trace and
//! its retry is staged. An event is remembered by the hash of its text on one line, taken from
//! the door's parse ([`EventKey`]): a retry is the same text; a record with a staged one's
//! identity and another text is compared by its JSON value with the staged record, read back from
//! its file, so key order and spacing never make another record. At open the state is rebuilt from each node's staged files
//! ([`NodeDedupe::rebuild`]). The range set is written here rather than taken from a crate
//! because it forgets its oldest ranges past a bound, which the range crates do not do.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

use diagwire::layout::{self, Encoding, FileKind};
use serde_json::Value;

use crate::posted::{DoorProblem, one_line};

/// Incarnations (boots) remembered per node; an older one is forgotten with its events.
pub const MAX_BOOTS: usize = 8;
/// Ranges of staged `monotonic_seq` values remembered per incarnation; past it the lowest range
/// is forgotten.
pub const MAX_RANGES: usize = 64;
/// Snapshot identities remembered per node.
pub const SNAPSHOT_WINDOW: usize = 256;
/// vast.ai record identities remembered per node.
pub const VASTAI_WINDOW: usize = 1_024;
/// Events remembered with their content per incarnation once a newer boot took over.
pub const OLD_EVENT_WINDOW: usize = 256;

/// A record already staged: the hash of its JSON value (of an event, the hash of its text on one
/// line, [`bytes_hash`]) and the staging number of its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    hash: u64,
    file: u64,
}

/// A boot's identity: `process_start_unix_ms`, `boot_sequence`.
type BootKey = (u64, u64);

/// Staged `monotonic_seq` values as inclusive ranges, start → end.
#[derive(Debug, Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn contains(&self, s: u64) -> bool {
        self.0.range(..=s).next_back().is_some_and(|(_, &e)| e >= s)
    }

    fn insert(&mut self, s: u64) {
        // A node numbers its events on: most often `s` extends the highest range.
        if let Some(mut last) = self.0.last_entry() {
            let (start, end) = (*last.key(), *last.get());
            if end.checked_add(1) == Some(s) {
                *last.get_mut() = s;
                return;
            }
            if (start..=end).contains(&s) {
                return;
            }
        }
        if self.contains(s) {
            return;
        }
        let below = self
            .0
            .range(..s)
            .next_back()
            .map(|(&a, &e)| (a, e))
            .filter(|&(_, e)| e.checked_add(1) == Some(s));
        let above = s
            .checked_add(1)
            .and_then(|n| self.0.get(&n).map(|&e| (n, e)));
        let (start, end) = match (below, above) {
            (Some((a, _)), Some((n, e))) => {
                self.0.remove(&n);
                (a, e)
            }
            (Some((a, _)), None) => (a, s),
            (None, Some((n, e))) => {
                self.0.remove(&n);
                (s, e)
            }
            (None, None) => (s, s),
        };
        self.0.insert(start, end);
        while self.0.len() > MAX_RANGES {
            self.0.pop_first();
        }
    }
}

/// The last events staged with their content, by `monotonic_seq`: kept sorted in one ring, as a
/// node numbers its events on, so remembering one is most often a push at the back and
/// forgetting the oldest a pop at the front (an ordered tree map cost a tenth of a post's time
/// in its upkeep).
#[derive(Debug, Default)]
struct Recent(VecDeque<(u64, Seen)>);

impl Recent {
    fn get(&self, seq: u64) -> Option<&Seen> {
        let i = self.0.binary_search_by_key(&seq, |e| e.0).ok()?;
        self.0.get(i).map(|e| &e.1)
    }

    fn insert(&mut self, seq: u64, seen: Seen) {
        if self.0.back().is_none_or(|e| e.0 < seq) {
            self.0.push_back((seq, seen));
            return;
        }
        match self.0.binary_search_by_key(&seq, |e| e.0) {
            Ok(i) => self.0[i].1 = seen,
            Err(i) => self.0.insert(i, (seq, seen)),
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The events of one incarnation.
#[derive(Debug, Default)]
struct Epoch {
    staged: Ranges,
    recent: Recent,
}

impl Epoch {
    fn trim(&mut self, window: usize) {
        while self.recent.len() > window {
            self.recent.0.pop_front();
        }
    }
}

/// One incarnation of a node: its boot (none for the records a node posted before any boot).
#[derive(Debug, Default)]
struct Incarnation {
    key: Option<BootKey>,
    boot: Option<Seen>,
    /// The node's events, and apart its clock samples, which have a counter of their own.
    events: [Epoch; 2],
    finalize: Option<Seen>,
}

/// Identities remembered first in, first out.
#[derive(Debug, Default)]
struct Fifo {
    map: HashMap<u64, Seen>,
    order: VecDeque<u64>,
}

impl Fifo {
    fn insert(&mut self, key: u64, seen: Seen, cap: usize) {
        if self.map.insert(key, seen).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

/// What the collector remembers of one node's staged records.
#[derive(Debug, Default)]
pub struct NodeDedupe {
    incarnations: VecDeque<Incarnation>,
    snapshots: Fifo,
    vastai: Fifo,
    /// Records left out as already staged since the collector opened.
    pub deduplicated: u64,
    /// Records staged although a record with their identity and other content was staged before
    /// (counted again from staging when the collector opens).
    pub conflicts: u64,
}

/// An identity to remember once the post is durable.
#[derive(Debug, Clone)]
enum Note {
    Boot(BootKey, u64),
    Event {
        wall_ms: u64,
        clock: bool,
        seq: u64,
        hash: u64,
    },
    Snapshot(u64, u64),
    Vastai(u64, u64),
    Finalize(u64),
}

/// An event's place: its incarnation, whether it is a clock sample, its `monotonic_seq`.
type StreamSeq = (Option<usize>, bool, u64);

/// What to do with a post.
#[derive(Debug, Default)]
pub struct Plan {
    /// Every record of the post is staged already: stage nothing, acknowledge.
    pub duplicate: bool,
    /// An events batch of which only some records are new: the batch of those, as JSON text, to
    /// stage instead of the body.
    pub kept: Option<String>,
    /// Records left out as already staged.
    pub left_out: u64,
    /// The staging number of the (last) matching record already staged, when known.
    pub seq: Option<u64>,
    /// Records kept although a record of the same identity with other content was staged.
    pub conflicts: Vec<DoorProblem>,
    notes: Vec<Note>,
}

/// The hash of a JSON value, the same for equal values whatever their key order and spacing.
fn value_hash(v: &Value) -> u64 {
    fn walk(v: &Value, h: &mut DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => (2u8, u).hash(h),
                (None, Some(i)) => (6u8, i).hash(h),
                _ => (7u8, n.as_f64().map(f64::to_bits)).hash(h),
            },
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                a.iter().for_each(|x| walk(x, h));
            }
            Value::Object(m) => {
                (5u8, m.len()).hash(h);
                // serde_json's map is sorted unless a crate turns its insertion order on.
                if m.keys().zip(m.keys().skip(1)).all(|(a, b)| a < b) {
                    for (k, v) in m {
                        k.hash(h);
                        walk(v, h);
                    }
                } else {
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort_unstable();
                    for k in keys {
                        k.hash(h);
                        walk(&m[k], h);
                    }
                }
            }
        }
    }
    let mut h = DefaultHasher::new();
    walk(v, &mut h);
    h.finish()
}

/// What identifies an event within its incarnation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventIdentity {
    /// Its `monotonic_seq`.
    pub monotonic_seq: u64,
    /// Its `wall_ms` (which incarnation it belongs to).
    pub wall_ms: u64,
    /// A clock sample (a `Custom` event of kind `clock_sample`), numbered by the HTTP sink.
    pub clock_sample: bool,
}

/// One record of an events batch: the range of its text in the batch's text, and its identity
/// (`None` for a record that has none: not an object, or without whole numbers in
/// `monotonic_seq` and `wall_ms`). The door gives them from its typed parse; a batch it did not
/// parse (`--no-validate`, a staged file read back) is read for them here ([`batch_keys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// Where the record's text is in the batch's.
    pub range: std::ops::Range<usize>,
    /// What identifies it.
    pub identity: Option<EventIdentity>,
}

/// What identifies an event, read from its text's top-level keys (every other value is skipped
/// by serde_json's scan, not decoded or hashed).
#[derive(Debug, Default)]
struct ReadIdentity {
    monotonic_seq: Option<u64>,
    wall_ms: Option<u64>,
    clock_sample: bool,
}

/// The hash of a JSON text, the same for equal values whatever their key order and spacing (an
/// object's entries are combined by a commutative sum).
struct HashSeed;

impl<'de> serde::de::DeserializeSeed<'de> for HashSeed {
    type Value = u64;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for HashSeed {
    type Value = u64;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<u64, E> {
        Ok(join(0, 0, 0))
    }
    fn visit_none<E>(self) -> Result<u64, E> {
        Ok(join(0, 0, 0))
    }
    fn visit_bool<E>(self, b: bool) -> Result<u64, E> {
        Ok(join(1, u64::from(b), 0))
    }
    fn visit_u64<E>(self, u: u64) -> Result<u64, E> {
        Ok(join(2, u, 0))
    }
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<u64, E> {
        match u64::try_from(i) {
            Ok(u) => self.visit_u64(u),
            Err(_) => Ok(join(6, i as u64, 0)),
        }
    }
    fn visit_f64<E>(self, f: f64) -> Result<u64, E> {
        Ok(join(7, f.to_bits(), 0))
    }
    fn visit_str<E>(self, s: &str) -> Result<u64, E> {
        Ok(join(3, bytes_hash(s.as_bytes()), 0))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let (mut h, mut n) = (join(4, 0, 0), 0u64);
        while let Some(x) = seq.next_element_seed(HashSeed)? {
            h = join(4, h, x);
            n += 1;
        }
        Ok(join(4, h, n))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let (mut sum, mut n) = (0u64, 0u64);
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let v = map.next_value_seed(HashSeed)?;
            sum = sum.wrapping_add(join(8, bytes_hash(key.as_bytes()), v));
            n += 1;
        }
        Ok(join(5, sum, n))
    }
}

/// An object's key, borrowed from the text when it holds no escape.
struct KeySeed;

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(s.to_owned()))
    }
}

/// A top-level value of an event as its identity reads it: a whole number, or whether it is the
/// string `Custom` (an event's `type`) or `clock_sample` (a `Custom` event's `kind`); any other
/// value reads as neither.
#[derive(Default)]
struct Scalar {
    number: Option<u64>,
    custom: bool,
    clock_sample: bool,
}

struct ScalarSeed;

impl<'de> serde::de::DeserializeSeed<'de> for ScalarSeed {
    type Value = Scalar;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ScalarSeed {
    type Value = Scalar;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::default())
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::default())
    }
    fn visit_u64<E>(self, u: u64) -> Result<Scalar, E> {
        Ok(Scalar {
            number: Some(u),
            ..Scalar::default()
        })
    }
    fn visit_i64<E>(self, i: i64) -> Result<Scalar, E> {
        Ok(Scalar {
            number: u64::try_from(i).ok(),
            ..Scalar::default()
        })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::default())
    }
    fn visit_str<E>(self, s: &str) -> Result<Scalar, E> {
        Ok(Scalar {
            custom: s == "Custom",
            clock_sample: s == "clock_sample",
            ..Scalar::default()
        })
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Scalar::default())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Scalar::default())
    }
}

/// A record read for its identity alone, as [`keyed_batch`] decodes each record of a batch the
/// door did not parse: `None` when it is not a JSON object.
struct IdentityOnly(Option<ReadIdentity>);

impl<'de> serde::Deserialize<'de> for IdentityOnly {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdentityVisitor)
    }
}

struct IdentityVisitor;

impl<'de> serde::de::Visitor<'de> for IdentityVisitor {
    type Value = IdentityOnly;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_unit<E>(self) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_none<E>(self) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<IdentityOnly, E> {
        Ok(IdentityOnly(None))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<IdentityOnly, A::Error> {
        ScalarSeed.visit_seq(seq).map(|_| IdentityOnly(None))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<IdentityOnly, A::Error> {
        let mut id = ReadIdentity::default();
        let mut is_custom = false;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key.as_ref() {
                "monotonic_seq" => id.monotonic_seq = map.next_value_seed(ScalarSeed)?.number,
                "wall_ms" => id.wall_ms = map.next_value_seed(ScalarSeed)?.number,
                "type" => is_custom = map.next_value_seed(ScalarSeed)?.custom,
                "kind" => id.clock_sample = map.next_value_seed(ScalarSeed)?.clock_sample,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        id.clock_sample &= is_custom;
        Ok(IdentityOnly(Some(id)))
    }
}

/// Each record of an events batch with its identity, read from the batch's text (for a batch the
/// door did not parse); `None` when the batch is not a JSON array.
fn batch_keys(text: &str) -> Option<Vec<EventKey>> {
    keyed_batch(text, |IdentityOnly(read)| {
        read.and_then(|e| {
            Some(EventIdentity {
                monotonic_seq: e.monotonic_seq?,
                wall_ms: e.wall_ms?,
                clock_sample: e.clock_sample,
            })
        })
    })
}

/// Each record of an events batch: its text's range and the identity `identity` reads from its
/// decode as a `T` (the door's typed parse, or [`batch_keys`]'s [`IdentityOnly`]); `None` when the
/// text is not one JSON array of `T`s. One pass: each record's decode finds where its text ends
/// (serde_json's stream decoder), so no record is scanned once to split the batch and again to
/// decode it.
pub(crate) fn keyed_batch<T: serde::de::DeserializeOwned>(
    text: &str,
    mut identity: impl FnMut(T) -> Option<EventIdentity>,
) -> Option<Vec<EventKey>> {
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            i += 1;
        }
        i
    };
    let mut at = ws(0);
    if b.get(at) != Some(&b'[') {
        return None;
    }
    at = ws(at + 1);
    let mut out = Vec::new();
    if b.get(at) == Some(&b']') {
        return (ws(at + 1) == b.len()).then_some(out);
    }
    loop {
        let mut one = serde_json::Deserializer::from_str(&text[at..]).into_iter::<T>();
        let record = one.next()?.ok()?;
        let end = at + one.byte_offset();
        out.push(EventKey {
            range: at..end,
            identity: identity(record),
        });
        at = ws(end);
        match b.get(at) {
            Some(b',') => at = ws(at + 1),
            Some(b']') => return (ws(at + 1) == b.len()).then_some(out),
            _ => return None,
        }
    }
}

/// An event's identity, `None` when its text is not a JSON object (as [`batch_keys`] reads each
/// record of a batch).
#[cfg(test)]
fn read_identity(text: &str) -> Option<ReadIdentity> {
    serde_json::from_str::<IdentityOnly>(text).ok()?.0
}

/// The hash of a JSON text's value, the same whatever its key order and spacing ([`HashSeed`]).
fn text_value_hash(text: &str) -> Option<u64> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde::de::DeserializeSeed::deserialize(HashSeed, &mut de).ok()
}

/// Whether two JSON texts are the same value (key order and spacing aside).
fn same_value(a: &str, b: &str) -> bool {
    text_value_hash(a).is_some_and(|a| Some(a) == text_value_hash(b))
}

/// The largest staged events file read back to compare a record with one of its own.
const READ_BACK_MAX: u64 = 64 << 20;

/// The JSON text of the node's staged events file number `n` (JSON or protobuf), as the door
/// reads a body; `None` when there is none or it does not read.
pub fn events_text(dir: &crate::confined::Dir, n: u64) -> Option<String> {
    [Encoding::Json, Encoding::Protobuf]
        .into_iter()
        .find_map(|encoding| {
            let name = layout::staged_name_as(&FileKind::Events, n, encoding);
            let (f, _) = dir.open_file(&name).ok()?;
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, READ_BACK_MAX + 1), &mut bytes)
                .ok()?;
            if bytes.len() as u64 > READ_BACK_MAX {
                return None;
            }
            let text =
                diagwire::binary::json_text(encoding, FileKind::Events.record_kind(), &bytes)
                    .ok()?;
            String::from_utf8(text.into_owned()).ok()
        })
}

/// The most bytes of staged files one plan reads back; past it a record with a staged one's
/// identity and another text is kept as a conflict (never left out unproven), so a post costs a
/// bounded amount of reading whatever it holds.
const READ_BACK_BUDGET: u64 = 64 << 20;

/// Staged events files read back for one plan, one held at a time with the hash and range of each
/// of its records: to tell whether a record whose text differs from the staged one's (same
/// identity) is the same value all the same.
struct ReadBack<'a> {
    staged: &'a dyn Fn(u64) -> Option<String>,
    /// The file held: its number, its text on one line and its records' text hashes and ranges.
    file: Option<(u64, Option<StagedBatch>)>,
    /// Bytes that may still be read back.
    budget: u64,
}

struct StagedBatch {
    text: String,
    /// Each record's text range by its text's hash.
    records: foldhash::HashMap<u64, std::ops::Range<usize>>,
}

impl ReadBack<'_> {
    fn new(staged: &dyn Fn(u64) -> Option<String>) -> ReadBack<'_> {
        ReadBack {
            staged,
            file: None,
            budget: READ_BACK_BUDGET,
        }
    }

    /// Whether `text` is the value of the record `seen` (found in its file by its text's hash).
    fn same(&mut self, seen: Seen, text: &str) -> bool {
        if self.file.as_ref().is_none_or(|(n, _)| *n != seen.file) {
            let batch = if self.budget == 0 {
                None
            } else {
                (self.staged)(seen.file).and_then(|t| {
                    self.budget = self.budget.saturating_sub(t.len() as u64);
                    let text = one_line(&t);
                    let records = batch_keys(&text)?
                        .into_iter()
                        .map(|k| (bytes_hash(text[k.range.clone()].as_bytes()), k.range))
                        .collect();
                    Some(StagedBatch { text, records })
                })
            };
            self.file = Some((seen.file, batch));
        }
        let Some((_, Some(batch))) = &self.file else {
            return false;
        };
        batch
            .records
            .get(&seen.hash)
            .is_some_and(|r| same_value(&batch.text[r.clone()], text))
    }
}

/// murmur3's finalizer: spreads every bit of `x` over the result.
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    let x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Two hashes (and a tag) into one, order-sensitive.
fn join(tag: u64, a: u64, b: u64) -> u64 {
    mix(a.rotate_left(23) ^ b ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The hash of bytes: foldhash with a fixed seed (fast on long texts, and the same in every
/// process). A record's hash needs no resistance to crafted collisions: only a node's own records
/// of one identity are compared.
fn bytes_hash(b: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    const SEED: u64 = 0x6469_6167_7769_7265;
    foldhash::quality::FixedState::with_seed(SEED).hash_one(b)
}

fn key_hash(parts: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

fn field(v: &Value, name: &str) -> Option<u64> {
    v.get(name).and_then(Value::as_u64)
}

fn conflict(pointer: String, what: &str, seen: Seen, kind: &FileKind) -> DoorProblem {
    DoorProblem {
        pointer,
        message: format!(
            "{what} has the identity of a record staged in {} with other content; both are kept",
            layout::staged_name_as(kind, seen.file, Encoding::Json)
        ),
    }
}

impl NodeDedupe {
    /// The incarnation the node's events of `wall_ms` belong to: the latest boot that started at
    /// or before it, else the current one.
    fn epoch_of(&self, wall_ms: u64) -> Option<usize> {
        let mut best: Option<(u64, usize)> = None;
        for (i, inc) in self.incarnations.iter().enumerate() {
            if let Some((start, _)) = inc.key
                && start <= wall_ms
                && best.is_none_or(|(b, _)| start >= b)
            {
                best = Some((start, i));
            }
        }
        best.map(|(_, i)| i)
            .or_else(|| self.incarnations.len().checked_sub(1))
    }

    fn boot_of(&self, key: BootKey) -> Option<&Incarnation> {
        self.incarnations.iter().find(|i| i.key == Some(key))
    }

    /// Plans a post of `kind` whose stored record is `json` (the door's text, on one line).
    /// Changes nothing. For an events batch, `events` are its records as the door parsed them
    /// (`None`: read here from `json`), and `staged` reads back the node's staged events file of
    /// a number ([`events_text`]), needed only when a record has the identity of a staged one
    /// and another text.
    pub fn plan(
        &self,
        kind: &FileKind,
        json: &str,
        events: Option<&[EventKey]>,
        staged: &dyn Fn(u64) -> Option<String>,
    ) -> Plan {
        let mut plan = Plan::default();
        let single =
            |plan: &mut Plan, seen: Option<Seen>, hash: u64, note: Note, what: &str| match seen {
                Some(s) if s.hash == hash => {
                    plan.duplicate = true;
                    plan.left_out = 1;
                    plan.seq = Some(s.file);
                }
                Some(s) => {
                    plan.conflicts.push(conflict(String::new(), what, s, kind));
                    plan.notes.push(note);
                }
                None => plan.notes.push(note),
            };
        match kind {
            FileKind::Events => return self.plan_events(json, events, staged),
            FileKind::Boot => {
                let Ok(v) = serde_json::from_str::<Value>(json) else {
                    return plan;
                };
                let (Some(start), Some(n)) = (
                    field(&v, "process_start_unix_ms"),
                    field(&v, "boot_sequence"),
                ) else {
                    return plan;
                };
                let hash = value_hash(&v);
                let seen = self.boot_of((start, n)).and_then(|i| i.boot);
                single(
                    &mut plan,
                    seen,
                    hash,
                    Note::Boot((start, n), hash),
                    "this boot",
                );
            }
            FileKind::Snapshot => {
                let Ok(v) = serde_json::from_str::<Value>(json) else {
                    return plan;
                };
                let (Some(id), Some(wall)) = (
                    v.get("snapshot_id").and_then(Value::as_str),
                    field(&v, "wall_ms"),
                ) else {
                    return plan;
                };
                let identity = v.get("identity");
                let boot = identity
                    .map(|i| (field(i, "process_start_unix_ms"), field(i, "boot_sequence")));
                let key = key_hash(&(id, wall, boot));
                let hash = value_hash(&v);
                let seen = self.snapshots.map.get(&key).copied();
                single(
                    &mut plan,
                    seen,
                    hash,
                    Note::Snapshot(key, hash),
                    "this snapshot",
                );
            }
            FileKind::Finalize => {
                let Ok(v) = serde_json::from_str::<Value>(json) else {
                    return plan;
                };
                let hash = value_hash(&v);
                let seen = self.incarnations.back().and_then(|i| i.finalize);
                single(
                    &mut plan,
                    seen,
                    hash,
                    Note::Finalize(hash),
                    "this finalize (one per boot of the node)",
                );
            }
            FileKind::Vastai(name) => {
                let Ok(v) = serde_json::from_str::<Value>(json) else {
                    return plan;
                };
                let (Some(seq), Some(wall)) = (field(&v, "seq"), field(&v, "wall_ms")) else {
                    return plan;
                };
                let text = |k: &str| v.get(k).map(Value::to_string);
                let key = key_hash(&(
                    name.as_str(),
                    text("vastai_node"),
                    text("source"),
                    seq,
                    wall,
                ));
                let hash = value_hash(&v);
                let seen = self.vastai.map.get(&key).copied();
                single(
                    &mut plan,
                    seen,
                    hash,
                    Note::Vastai(key, hash),
                    "this vast.ai record",
                );
            }
        }
        plan
    }

    /// An events batch: each record is compared by the hash of its text (a retry is the same
    /// text), and by its JSON value only when the text differs from the staged one's.
    fn plan_events(
        &self,
        json: &str,
        events: Option<&[EventKey]>,
        staged: &dyn Fn(u64) -> Option<String>,
    ) -> Plan {
        let mut plan = Plan::default();
        let read;
        let items: &[EventKey] = match events {
            Some(items) => items,
            None => {
                let Some(items) = batch_keys(json) else {
                    return plan;
                };
                read = items;
                &read
            }
        };
        let text_of = |k: &EventKey| json.get(k.range.clone()).unwrap_or_default();
        let mut back = ReadBack::new(staged);
        // Whether each record is kept.
        let mut kept: Vec<bool> = Vec::with_capacity(items.len());
        // Records of this very post, by (incarnation, seq): a batch that repeats a record.
        // Each with its text's hash, and its value's hash once it was needed.
        let mut here: foldhash::HashMap<StreamSeq, (u64, usize, Option<u64>)> =
            foldhash::HashMap::with_capacity_and_hasher(items.len(), Default::default());
        for (i, item) in items.iter().enumerate() {
            let Some(id) = item.identity else {
                kept.push(true);
                continue;
            };
            let (seq, wall_ms, clock) = (id.monotonic_seq, id.wall_ms, id.clock_sample);
            let text = text_of(item);
            let hash = bytes_hash(text.as_bytes());
            let epoch = self.epoch_of(wall_ms);
            let note = Note::Event {
                wall_ms,
                clock,
                seq,
                hash,
            };
            if let Some((h, j, value)) = here.get_mut(&(epoch, clock, seq)) {
                // The first record's value is hashed at most once, so a batch's repeats cost
                // what the batch's size does.
                let same = *h == hash || {
                    let first = *value.get_or_insert_with(|| {
                        text_value_hash(text_of(&items[*j])).unwrap_or_default()
                    });
                    text_value_hash(text) == Some(first)
                };
                if same {
                    plan.left_out += 1;
                    kept.push(false);
                } else {
                    plan.conflicts.push(DoorProblem {
                        pointer: format!("/{i}"),
                        message: format!(
                            "event {seq} has the identity of an earlier record of this batch with other content; both are kept"
                        ),
                    });
                    kept.push(true);
                    plan.notes.push(note);
                }
                continue;
            }
            here.insert((epoch, clock, seq), (hash, i, None));
            let inc = epoch.and_then(|e| self.incarnations.get(e));
            let stream = inc.map(|inc| &inc.events[usize::from(clock)]);
            match stream.map(|s| (s.recent.get(seq), s.staged.contains(seq))) {
                Some((Some(seen), _)) if seen.hash == hash || back.same(*seen, text) => {
                    plan.left_out += 1;
                    kept.push(false);
                    plan.seq = Some(plan.seq.map_or(seen.file, |s| s.max(seen.file)));
                }
                Some((Some(seen), _)) => {
                    plan.conflicts.push(conflict(
                        format!("/{i}"),
                        &format!("event {seq}"),
                        *seen,
                        &FileKind::Events,
                    ));
                    kept.push(true);
                    plan.notes.push(note);
                }
                // Staged before the window: a retry (its content is no longer remembered).
                Some((None, true)) => {
                    plan.left_out += 1;
                    kept.push(false);
                }
                _ => {
                    kept.push(true);
                    plan.notes.push(note);
                }
            }
        }
        if plan.left_out > 0 {
            if !kept.contains(&true) {
                plan.duplicate = true;
            } else {
                // The records kept, as posted, in order.
                let texts: Vec<&str> = items
                    .iter()
                    .zip(&kept)
                    .filter(|(_, k)| **k)
                    .map(|(r, _)| text_of(r))
                    .collect();
                plan.kept = Some(format!("[{}]", texts.join(",")));
            }
        }
        plan
    }

    /// Records what `plan` staged under staging number `file` (for events, the file of the kept
    /// records); `window` is the number of the current incarnation's events remembered with
    /// their content.
    pub fn commit(&mut self, plan: &Plan, file: u64, window: usize) {
        self.deduplicated += plan.left_out;
        self.conflicts += plan.conflicts.len() as u64;
        for note in &plan.notes {
            match *note {
                Note::Boot(key, hash) => {
                    let seen = Some(Seen { hash, file });
                    if let Some(inc) = self.incarnations.iter_mut().find(|i| i.key == Some(key)) {
                        inc.boot = seen;
                        continue;
                    }
                    if self.incarnations.len() == 1 && self.incarnations[0].key.is_none() {
                        // The records the node posted before its first boot are of that boot.
                        self.incarnations[0].key = Some(key);
                        self.incarnations[0].boot = seen;
                        continue;
                    }
                    for old in self.incarnations.iter_mut().flat_map(|i| &mut i.events) {
                        old.trim(OLD_EVENT_WINDOW);
                    }
                    self.incarnations.push_back(Incarnation {
                        key: Some(key),
                        boot: seen,
                        ..Incarnation::default()
                    });
                    while self.incarnations.len() > MAX_BOOTS {
                        self.incarnations.pop_front();
                    }
                }
                Note::Event {
                    wall_ms,
                    clock,
                    seq,
                    hash,
                } => {
                    let e = match self.epoch_of(wall_ms) {
                        Some(e) => e,
                        None => {
                            self.incarnations.push_back(Incarnation::default());
                            0
                        }
                    };
                    let current = e + 1 == self.incarnations.len();
                    let events = &mut self.incarnations[e].events[usize::from(clock)];
                    events.staged.insert(seq);
                    events.recent.insert(seq, Seen { hash, file });
                    events.trim(if current { window } else { OLD_EVENT_WINDOW });
                }
                Note::Snapshot(key, hash) => {
                    self.snapshots
                        .insert(key, Seen { hash, file }, SNAPSHOT_WINDOW)
                }
                Note::Vastai(key, hash) => {
                    self.vastai.insert(key, Seen { hash, file }, VASTAI_WINDOW)
                }
                Note::Finalize(hash) => {
                    if self.incarnations.is_empty() {
                        self.incarnations.push_back(Incarnation::default());
                    }
                    if let Some(inc) = self.incarnations.back_mut() {
                        inc.finalize = Some(Seen { hash, file });
                    }
                }
            }
        }
    }

    /// The state of a node rebuilt from its staging directory `dir`, whose files are `names`:
    /// its staged files replayed in the order they were stored (modification time; boots first
    /// among files of one instant, then by number). Files that do not read as records are
    /// skipped. Reads one file at a time.
    pub fn rebuild(
        names: Vec<String>,
        dir: &crate::confined::Dir,
        window: usize,
    ) -> std::io::Result<NodeDedupe> {
        let mut files = Vec::new();
        for name in names {
            let Some((kind, n)) = layout::parse_staged_name(&name) else {
                continue;
            };
            let encoding = match Encoding::split_name(&name) {
                Some((_, e)) => e,
                None => continue,
            };
            let modified = dir.meta(&name).ok().map(|m| m.modified);
            let rank = u8::from(kind != FileKind::Boot);
            files.push((modified, rank, n, kind, encoding, name));
        }
        files.sort_by_key(|a| (a.0, a.1, a.2));
        let mut state = NodeDedupe::default();
        for (_, _, n, kind, encoding, name) in files {
            let Ok(bytes) = dir.open_file(&name).and_then(|(mut f, _)| {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut bytes).map(|_| bytes)
            }) else {
                continue;
            };
            let Ok(text) = diagwire::binary::json_text(encoding, kind.record_kind(), &bytes) else {
                continue;
            };
            let Ok(text) = std::str::from_utf8(&text) else {
                continue;
            };
            let text = one_line(text);
            let plan = state.plan(&kind, &text, None, &|n| events_text(dir, n));
            if !plan.duplicate {
                state.commit(&plan, n, window);
            }
        }
        // Counted again from what is staged; what was left out before the restart is not.
        state.deduplicated = 0;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_forget_the_lowest_past_the_bound() {
        let mut r = Ranges::default();
        for s in [1, 3, 2, 5] {
            r.insert(s);
        }
        assert_eq!(r.0, BTreeMap::from([(1, 3), (5, 5)]));
        assert!(r.contains(2) && !r.contains(4) && r.contains(5));
        for s in 0..(MAX_RANGES as u64 + 4) {
            r.insert(10 + 2 * s);
        }
        assert_eq!(r.0.len(), MAX_RANGES);
        assert!(!r.contains(1), "the lowest ranges are forgotten");
    }

    #[test]
    fn the_recent_events_stay_sorted_by_number_whatever_order_they_come_in() {
        let seen = |file| Seen { hash: file, file };
        let cases: &[(&str, &[u64], &[u64])] = &[
            ("numbered on, each goes last", &[1, 2, 3], &[1, 2, 3]),
            (
                "an older number goes in its place",
                &[1, 4, 2, 3],
                &[1, 2, 3, 4],
            ),
            (
                "a number below every other goes first",
                &[5, 6, 1],
                &[1, 5, 6],
            ),
            (
                "a number again is remembered once, as the later",
                &[1, 2, 1],
                &[1, 2],
            ),
        ];
        for (name, inserted, want) in cases {
            let mut recent = Recent::default();
            for (i, &n) in inserted.iter().enumerate() {
                recent.insert(n, seen(i as u64));
            }
            let got: Vec<u64> = recent.0.iter().map(|e| e.0).collect();
            assert_eq!(got, *want, "{name}");
            let last = inserted.iter().rposition(|&n| n == inserted[0]).unwrap();
            assert_eq!(
                recent.get(inserted[0]).map(|s| s.file),
                Some(last as u64),
                "{name}: the latest content is remembered"
            );
            assert_eq!(recent.get(1_000), None, "{name}: a number never inserted");
        }
        let mut epoch = Epoch::default();
        for n in 1..=5 {
            epoch.recent.insert(n, seen(n));
        }
        epoch.trim(2);
        let kept: Vec<u64> = epoch.recent.0.iter().map(|e| e.0).collect();
        assert_eq!(
            kept,
            [4, 5],
            "past the window the lowest numbers are forgotten"
        );
    }

    #[test]
    fn ranges_grow_at_the_top_as_a_node_numbers_on() {
        let mut r = Ranges::default();
        for s in [1, 2, 3, 3, 2, 7, 8] {
            r.insert(s);
        }
        assert_eq!(r.0, BTreeMap::from([(1, 3), (7, 8)]));
        r.insert(u64::MAX);
        r.insert(u64::MAX);
        assert_eq!(r.0.len(), 3, "the largest number does not overflow a range");
    }

    #[test]
    fn an_event_is_read_with_its_identity_and_hashed_whatever_its_key_order() {
        let a_text = r#"{"type":"Custom","kind":"clock_sample","monotonic_seq":3,"wall_ms":9,"fields":{"a":[1,-2,1.5]}}"#;
        let b_text = r#"{ "fields": {"a": [1, -2, 1.5]}, "wall_ms": 9, "monotonic_seq": 3, "kind": "clock_sample", "type": "Custom" }"#;
        let c_text = r#"{"type":"Custom","kind":"x","monotonic_seq":3,"wall_ms":9}"#;
        let a = read_identity(a_text).unwrap();
        let b = read_identity(b_text).unwrap();
        let c = read_identity(c_text).unwrap();
        assert_eq!(
            (b.monotonic_seq, b.wall_ms, b.clock_sample),
            (Some(3), Some(9), true)
        );
        assert_eq!(
            (a.monotonic_seq, a.wall_ms, a.clock_sample),
            (Some(3), Some(9), true)
        );
        assert!(!c.clock_sample);
        let hash = |t: &str| text_value_hash(t).unwrap();
        assert_eq!(hash(a_text), hash(b_text));
        assert_ne!(hash(a_text), hash(c_text));
        assert!(read_identity("[1]").is_none());
    }

    #[test]
    fn the_door_identifies_each_event_as_a_staged_file_read_back_does() {
        let node = format!("[{}]", ["7"; 32].join(","));
        let event = |seq: u64, kind: &str, fields: &str| {
            format!(
                r#"{{"node_id":{node},"monotonic_seq":{seq},"wall_ms":{},"type":"Custom","kind":"{kind}","fields":{fields}}}"#,
                100 + seq
            )
        };
        let clock = r#"{"collector_recv_ms":1,"collector_send_ms":2,"node_send_ms_echoed":0}"#;
        let cases: &[(&str, String)] = &[
            ("an empty batch", "[]".into()),
            (
                "events numbered on",
                format!(
                    "[{},{}]",
                    event(1, "probe", "{}"),
                    event(2, "probe", r#"{"a":1}"#)
                ),
            ),
            (
                "a clock sample beside an event with the same number",
                format!(
                    "[{}, {}]",
                    event(1, "probe", "{}"),
                    event(1, "clock_sample", clock)
                ),
            ),
            (
                "keys in another order, over several lines",
                format!(
                    "[\n {{ \"fields\": {{}},\n \"kind\": \"clock_sample\", \"type\": \"Custom\", \"wall_ms\": 9, \"monotonic_seq\": 4, \"node_id\": {node} }} ]"
                )
                .replace("\"fields\": {}", &format!("\"fields\": {clock}")),
            ),
        ];
        for (name, text) in cases {
            let door = crate::door::typed_batch(text);
            assert!(door.is_some(), "{name}: the door parses the batch");
            assert_eq!(door, batch_keys(text), "{name}");
            for key in door.unwrap() {
                let record = &text[key.range];
                assert!(
                    record.starts_with('{') && record.ends_with('}'),
                    "{name}: a range is a record's text: {record:?}"
                );
            }
        }
    }

    #[test]
    fn a_text_that_is_not_one_array_of_records_is_no_batch_for_either_reader() {
        let one = format!(
            r#"{{"node_id":[{}],"monotonic_seq":1,"wall_ms":2,"type":"Custom","kind":"probe","fields":{{}}}}"#,
            ["7"; 32].join(",")
        );
        let cases: &[(&str, String)] = &[
            ("nothing", String::new()),
            ("an object", one.clone()),
            ("an unclosed array", format!("[{one}")),
            ("a comma before the end", format!("[{one},]")),
            ("two records without a comma", format!("[{one} {one}]")),
            ("text after the array", format!("[{one}] x")),
            ("a second array", format!("[{one}][]")),
            ("a record cut short", format!("[{}]", &one[..one.len() - 1])),
        ];
        for (name, text) in cases {
            assert_eq!(crate::door::typed_batch(text), None, "{name}: the door");
            assert_eq!(batch_keys(text), None, "{name}: a staged file read back");
        }
        let spaced = format!(" [ {one} ,\n{one} ] \n");
        let keys = batch_keys(&spaced).expect("a batch with spaces around its records");
        assert_eq!(keys, crate::door::typed_batch(&spaced).expect("the door's"));
        assert!(
            keys.iter().all(|k| spaced[k.range.clone()] == one),
            "{keys:?}"
        );
    }

    #[test]
    fn an_event_with_a_staged_identity_and_another_text_is_compared_with_the_staged_file() {
        let staged =
            r#"[{"monotonic_seq":1,"wall_ms":5,"a":1},{"monotonic_seq":2,"wall_ms":6,"a":2}]"#;
        let reordered =
            r#"[{"a":1, "wall_ms":5, "monotonic_seq":1}, {"a":2,"wall_ms":6,"monotonic_seq":2}]"#;
        let other =
            r#"[{"monotonic_seq":1,"wall_ms":5,"a":3},{"monotonic_seq":2,"wall_ms":6,"a":4}]"#;
        // (rule, the post, the staged file as read back, duplicate, conflicts, files read)
        type Case<'a> = (&'a str, &'a str, Option<&'a str>, bool, usize, usize);
        let cases: &[Case] = &[
            (
                "the same text is a repeat, nothing read back",
                staged,
                Some(staged),
                true,
                0,
                0,
            ),
            (
                "the same values in another key order are a repeat, the file read once",
                reordered,
                Some(staged),
                true,
                0,
                1,
            ),
            (
                "a staged file that does not read back makes a conflict, never a repeat",
                reordered,
                None,
                false,
                2,
                1,
            ),
            (
                "a staged file whose records are not what was remembered makes a conflict",
                reordered,
                Some(other),
                false,
                2,
                1,
            ),
            (
                "other values are a conflict",
                other,
                Some(staged),
                false,
                2,
                1,
            ),
        ];
        for &(name, post, file, duplicate, conflicts, reads) in cases {
            let mut state = NodeDedupe::default();
            let plan = state.plan(&FileKind::Events, staged, None, &|_| None);
            state.commit(&plan, 1, crate::config::EVENT_WINDOW);
            let read = std::cell::Cell::new(0);
            let back = |n: u64| {
                assert_eq!(n, 1, "{name}: the file the record was staged in");
                read.set(read.get() + 1);
                file.map(str::to_owned)
            };
            let plan = state.plan(&FileKind::Events, post, None, &back);
            assert_eq!(
                (plan.duplicate, plan.conflicts.len(), read.get()),
                (duplicate, conflicts, reads),
                "{name}"
            );
        }
    }

    #[test]
    fn equal_values_hash_alike_whatever_their_key_order() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":[true,null]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{ "b": [true, null], "a": 1 }"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"a":2,"b":[true,null]}"#).unwrap();
        assert_eq!(value_hash(&a), value_hash(&b));
        assert_ne!(value_hash(&a), value_hash(&c));
    }
}
