//! The fuzz target bodies. `fuzz/` calls them from libFuzzer; `tests/fuzz_replay.rs` calls them on
//! the checked-in corpus, every regression input, and a time-boxed run of generated inputs, so the
//! same invariants hold under plain `cargo test` on stable.
//!
//! Invariants: no panic; a bundle is read within the reader's caps and never yields an unsafe path;
//! `parse(serialize(v)) == v`; the schema verdict and the typed parse agree; the protobuf codec
//! decodes any bytes within its budget or fails with a located error, and converts losslessly.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Component, Path};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use diagwire::bundle::read::{BundleReader, Limits};
use diagwire::shape::{PayloadShape, TypeKind, TypeShape, ValueShape};
use diagwire::v1::{Record, RecordKind};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::validators;

/// A fuzz target's body: it takes the fuzzer's bytes and panics when an invariant breaks.
pub type Body = fn(&[u8]);

/// The targets, by name: the name of the `fuzz/` binary and of the corpus folder.
pub const TARGETS: &[(&str, Body)] = &[
    ("record_roundtrip", record_roundtrip),
    ("schema_agreement", schema_agreement),
    ("bundle_targz", bundle_targz),
    ("bundle_dir", bundle_dir),
    ("cross_version", cross_version),
    ("record_file", record_file),
    ("proto_decode", proto_decode),
    ("schema_review", crate::schema_review::schema_review),
];

/// Splits an input into a record kind (its first byte) and the bytes after it.
fn kind_and_rest(data: &[u8]) -> Option<(RecordKind, &[u8])> {
    let (&k, rest) = data.split_first()?;
    Some((
        RecordKind::ALL[usize::from(k) % RecordKind::ALL.len()],
        rest,
    ))
}

/// Splits an input into a record kind (its first byte) and JSON text (the rest).
fn kind_and_text(data: &[u8]) -> Option<(RecordKind, &str)> {
    let (kind, rest) = kind_and_rest(data)?;
    Some((kind, std::str::from_utf8(rest).ok()?))
}

/// Any record that parses serializes to JSON that parses back to the same record, and serializing
/// again gives the same JSON.
pub fn record_roundtrip(data: &[u8]) {
    let Some((kind, text)) = kind_and_text(data) else {
        return;
    };
    let Ok(record) = Record::parse(kind, text) else {
        return;
    };
    let json = serde_json::to_string(&record).expect("a parsed record serializes");
    let again = Record::parse(kind, &json)
        .unwrap_or_else(|e| panic!("`{kind}` written by diagwire does not read back: {e}\n{json}"));
    assert_eq!(
        record, again,
        "`{kind}` changed through a round trip\n{json}"
    );
    assert_eq!(json, serde_json::to_string(&again).expect("serializes"));
}

/// The schema accepts a JSON value exactly when the generated type reads it, also when an array or
/// string is just below, at or just above a length bound that a schema states.
///
/// The input is a kind byte, then either JSON text (checked as written) or bytes that drive a record
/// generator: a valid wire fixture of the kind or an `Arbitrary` record of its type. Each value is
/// then bent at one place per bounded location ([`bounded_sites`]) to every length of
/// [`crossing_lengths`], and every bent value is checked too.
pub fn schema_agreement(data: &[u8]) {
    let Some((kind, rest)) = kind_and_rest(data) else {
        return;
    };
    let text = std::str::from_utf8(rest).ok();
    let mut u = Unstructured::new(rest);
    let seed = match text.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()) {
        Some(value) => value,
        None => match generated_record(kind, &mut u) {
            Some(value) => value,
            None => return,
        },
    };
    assert_agreement(kind, &seed);
    for bent in bound_crossings(kind, &seed, &mut u) {
        assert_agreement(kind, &bent);
    }
}

/// Panics unless the schema and the typed parse give `value` the same verdict.
pub fn assert_agreement(kind: RecordKind, value: &serde_json::Value) {
    let schema = validators().is_valid(kind, value);
    let typed = Record::from_value(kind, value.clone());
    assert_eq!(
        schema,
        typed.is_ok(),
        "`{kind}`: schema says {schema}, typed parse says {:?}\n{value}",
        typed.err().map(|e| e.to_string())
    );
}

/// A record of `kind` made from `u`: one of the kind's valid wire fixtures, or an `Arbitrary`
/// value of its type; `None` when the bytes run out first.
pub fn generated_record(kind: RecordKind, u: &mut Unstructured<'_>) -> Option<serde_json::Value> {
    let fixtures = seed_fixtures(kind);
    if !fixtures.is_empty() && u.arbitrary::<bool>().ok()? {
        return u.choose(fixtures).ok().cloned();
    }
    arbitrary_record(kind, u)
}

fn seed_fixtures(kind: RecordKind) -> &'static [serde_json::Value] {
    static ALL: OnceLock<BTreeMap<RecordKind, Vec<serde_json::Value>>> = OnceLock::new();
    ALL.get_or_init(|| {
        RecordKind::ALL
            .iter()
            .map(|k| {
                (
                    *k,
                    crate::valid(k.as_str()).iter().map(|f| f.value()).collect(),
                )
            })
            .collect()
    })
    .get(&kind)
    .map_or(&[], Vec::as_slice)
}

/// An `Arbitrary` record of `kind` as JSON; `None` when the bytes run out first or the kind has no
/// generator here (`arbitrary_records_cover_every_kind` keeps that list complete).
pub fn arbitrary_record(kind: RecordKind, u: &mut Unstructured<'_>) -> Option<serde_json::Value> {
    use diagwire::v1;
    fn value<T: for<'a> Arbitrary<'a> + Serialize>(
        u: &mut Unstructured<'_>,
    ) -> Option<serde_json::Value> {
        let v = T::arbitrary(u).ok()?;
        Some(serde_json::to_value(v).expect("an arbitrary record serializes"))
    }
    match kind.as_str() {
        "boot" => value::<v1::Identity>(u),
        "error" => value::<v1::ErrorBody>(u),
        "event" => value::<v1::EventRecord>(u),
        "event_batch" => value::<v1::EventBatch>(u),
        "finalize" => value::<v1::Finalize>(u),
        "live" => value::<v1::LiveRecord>(u),
        "manifest" => value::<v1::Manifest>(u),
        "post_ack" => value::<v1::PostAck>(u),
        "runs" => value::<v1::RunsListing>(u),
        "snapshot" => value::<v1::Snapshot>(u),
        "vastai" => value::<v1::VastaiRecord>(u),
        _ => None,
    }
}

/// The length keywords whose bounds the agreement target crosses.
const LENGTH_KEYWORDS: &[&str] = &["minItems", "maxItems", "minLength", "maxLength"];

/// Where a length bound applies: a definition (`NodeId`, an array alias) with an empty path, or a
/// property of a definition with the path below it (`recent_messages`, `env_vars/items`).
type BoundAt = (String, String);

/// Every length bound that the current schemas or any release states, by where it applies. Bounds
/// a later version removed stay here, so every reader's old limits keep being crossed.
pub fn length_bounds() -> &'static BTreeMap<BoundAt, BTreeSet<u64>> {
    static BOUNDS: OnceLock<BTreeMap<BoundAt, BTreeSet<u64>>> = OnceLock::new();
    BOUNDS.get_or_init(|| {
        let mut out = BTreeMap::new();
        let contracts = diagwire::releases::READERS
            .iter()
            .copied()
            .chain([&diagwire::v1::CONTRACT]);
        for contract in contracts {
            for (_, text) in contract.schema_texts {
                let doc: serde_json::Value =
                    serde_json::from_str(text).expect("a shipped schema is JSON");
                let Some(defs) = doc.get("$defs").and_then(serde_json::Value::as_object) else {
                    continue;
                };
                for (def, schema) in defs {
                    collect_bounds(def, "", schema, &mut out);
                    let props = schema
                        .get("properties")
                        .and_then(serde_json::Value::as_object);
                    for (key, prop) in props.into_iter().flatten() {
                        collect_bounds(def, key, prop, &mut out);
                    }
                }
            }
        }
        out
    })
}

/// Records the length bounds of `schema` (a definition or property at `path`) and of its items.
fn collect_bounds(
    def: &str,
    path: &str,
    schema: &serde_json::Value,
    out: &mut BTreeMap<BoundAt, BTreeSet<u64>>,
) {
    for keyword in LENGTH_KEYWORDS {
        if let Some(n) = schema.get(keyword).and_then(serde_json::Value::as_u64) {
            out.entry((def.to_owned(), path.to_owned()))
                .or_default()
                .insert(n);
        }
    }
    if path.is_empty() && schema.get("properties").is_some() {
        return;
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        collect_bounds(def, &join(path, "items"), items, out);
    }
    let prefix = schema
        .get("prefixItems")
        .and_then(serde_json::Value::as_array);
    for (i, item) in prefix.into_iter().flatten().enumerate() {
        collect_bounds(def, &join(path, &i.to_string()), item, out);
    }
}

fn join(path: &str, token: &str) -> String {
    if path.is_empty() {
        token.to_owned()
    } else {
        format!("{path}/{token}")
    }
}

/// The lengths just below, at and just above each bound.
pub fn crossing_lengths(bounds: &BTreeSet<u64>) -> BTreeSet<usize> {
    bounds
        .iter()
        .flat_map(|&b| [b.saturating_sub(1), b, b + 1])
        .filter_map(|n| usize::try_from(n).ok())
        .collect()
}

/// One array or string of a record that a length bound applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The JSON pointer of the array or string in the record.
    pub pointer: String,
    /// Where the bound applies, shared by every site of the same field.
    pub at: BoundAt,
}

/// Every array and string of `value` (a record of `kind`) that a length bound of
/// [`length_bounds`] applies to, found by walking the record with the current shape table.
pub fn bounded_sites(kind: RecordKind, value: &serde_json::Value) -> Vec<Site> {
    let contract = &diagwire::v1::CONTRACT;
    let mut out = Vec::new();
    if let Some(t) = contract
        .record(kind.as_str())
        .and_then(|info| contract.get(info.def))
    {
        sites_of_type(t, value, "", &mut out);
    }
    out
}

fn push_site(def: &str, path: &str, value: &serde_json::Value, ptr: &str, out: &mut Vec<Site>) {
    let at = (def.to_owned(), path.to_owned());
    if (value.is_array() || value.is_string()) && length_bounds().contains_key(&at) {
        out.push(Site {
            pointer: ptr.to_owned(),
            at,
        });
    }
}

fn sites_of_value(
    def: &str,
    path: &str,
    shape: &ValueShape,
    value: &serde_json::Value,
    ptr: &str,
    out: &mut Vec<Site>,
) {
    push_site(def, path, value, ptr, out);
    match (shape, value) {
        (ValueShape::Ref(name), _) => {
            if let Some(t) = diagwire::v1::CONTRACT.get(name) {
                sites_of_type(t, value, ptr, out);
            }
        }
        (ValueShape::Vec(item), serde_json::Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                let p = format!("{ptr}/{i}");
                sites_of_value(def, &join(path, "items"), item, v, &p, out);
            }
        }
        (ValueShape::Tuple(items), serde_json::Value::Array(values)) => {
            for (i, (s, v)) in items.iter().zip(values).enumerate() {
                let p = format!("{ptr}/{i}");
                sites_of_value(def, &join(path, &i.to_string()), s, v, &p, out);
            }
        }
        _ => {}
    }
}

fn sites_of_type(t: &TypeShape, value: &serde_json::Value, ptr: &str, out: &mut Vec<Site>) {
    let contract = &diagwire::v1::CONTRACT;
    match &t.kind {
        TypeKind::Struct {
            fields, flatten, ..
        } => {
            let Some(obj) = value.as_object() else {
                return;
            };
            for f in fields.iter() {
                if let Some(v) = obj.get(f.key) {
                    let p = format!("{ptr}/{}", diagwire::shape::escape_pointer_token(f.key));
                    sites_of_value(t.name, f.key, &f.value, v, &p, out);
                }
            }
            if let Some(u) = flatten.and_then(|u| contract.get(u)) {
                sites_of_type(u, value, ptr, out);
            }
        }
        TypeKind::Union {
            tag,
            content,
            variants,
            ..
        } => {
            let variant = value
                .get(*tag)
                .and_then(serde_json::Value::as_str)
                .and_then(|v| variants.iter().find(|x| x.tag == v));
            match variant.map(|v| &v.payload) {
                Some(PayloadShape::Def(name)) => {
                    if let Some(d) = contract.get(name) {
                        sites_of_type(d, value, ptr, out);
                    }
                }
                Some(PayloadShape::Value(shape)) => {
                    if let Some((c, v)) = content.and_then(|c| value.get(c).map(|v| (c, v))) {
                        let p = format!("{ptr}/{}", diagwire::shape::escape_pointer_token(c));
                        sites_of_value(t.name, c, shape, v, &p, out);
                    }
                }
                _ => {}
            }
        }
        TypeKind::Array(item) => {
            push_site(t.name, "", value, ptr, out);
            if let serde_json::Value::Array(items) = value {
                for (i, v) in items.iter().enumerate() {
                    sites_of_value(t.name, "items", item, v, &format!("{ptr}/{i}"), out);
                }
            }
        }
        TypeKind::NodeId | TypeKind::NodeIdHex => push_site(t.name, "", value, ptr, out),
        TypeKind::Enum { .. } => {}
    }
}

/// Copies of `value` with one site per bounded location resized to each of its crossing lengths.
/// The site is the first of its location, or one chosen by `u` while it has bytes. An array grows
/// by repeating its own elements (or those of another site of the same location when it is empty);
/// a string by repeating its characters.
pub fn bound_crossings(
    kind: RecordKind,
    value: &serde_json::Value,
    u: &mut Unstructured<'_>,
) -> Vec<serde_json::Value> {
    let sites = bounded_sites(kind, value);
    let mut by_place: BTreeMap<&BoundAt, Vec<&Site>> = BTreeMap::new();
    for s in &sites {
        by_place.entry(&s.at).or_default().push(s);
    }
    let mut out = Vec::new();
    for (at, places) in by_place {
        let site = u.choose(&places).copied().unwrap_or(places[0]);
        let template = places
            .iter()
            .filter_map(|s| value.pointer(&s.pointer))
            .find_map(|v| v.as_array().and_then(|a| a.first()).cloned());
        for len in crossing_lengths(&length_bounds()[at]) {
            let mut bent = value.clone();
            let Some(target) = bent.pointer_mut(&site.pointer) else {
                continue;
            };
            if resize(target, len, template.as_ref()) {
                out.push(bent);
            }
        }
    }
    out
}

/// Resizes an array or string to `len` elements or characters; whether it could.
fn resize(v: &mut serde_json::Value, len: usize, template: Option<&serde_json::Value>) -> bool {
    match v {
        serde_json::Value::Array(items) => {
            let pool: Vec<serde_json::Value> = if items.is_empty() {
                template.cloned().into_iter().collect()
            } else {
                items.clone()
            };
            if len > items.len() && pool.is_empty() {
                return false;
            }
            items.truncate(len);
            let mut i = 0;
            while items.len() < len {
                items.push(pool[i % pool.len()].clone());
                i += 1;
            }
            true
        }
        serde_json::Value::String(s) => {
            let chars: Vec<char> = if s.is_empty() {
                vec!['a']
            } else {
                s.chars().collect()
            };
            *s = chars.iter().cycle().take(len).collect();
            true
        }
        _ => false,
    }
}

/// Caps small enough that a fuzz input can cross them.
fn fuzz_limits() -> Limits {
    Limits {
        max_file_bytes: 64 * 1024,
        max_total_bytes: 1024 * 1024,
        max_entries: 256,
    }
}

fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a scratch directory"))
        .path()
}

/// Reads a whole bundle and checks every file, asserting the reader's guarantees.
fn read_bundle(path: &Path) {
    let limits = fuzz_limits();
    let Ok(mut reader) = BundleReader::open(path, limits) else {
        return;
    };
    let mut total = 0u64;
    for file in reader.files().flatten() {
        let p = Path::new(&file.path);
        assert!(
            p.components().all(|c| matches!(c, Component::Normal(_))),
            "unsafe path yielded: {}",
            file.path
        );
        assert!(
            file.bytes.len() as u64 <= limits.max_file_bytes,
            "a file beyond the cap was yielded"
        );
        total += file.bytes.len() as u64;
    }
    assert!(
        total <= limits.max_total_bytes,
        "more than the total cap was yielded"
    );
    if let Ok(mut reader) = BundleReader::open(path, limits) {
        let _ =
            diagwire::validate::bundle::validate_bundle(validators(), &mut reader, &mut |_, _| {});
    }
}

/// A reader that hands out its bytes a few at a time, so the scanner refills its buffer at every
/// place a value can be cut.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(self.bytes.len()).min(buf.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.step = self.step % 7 + 1;
        Ok(n)
    }
}

/// Checking a record file of arbitrary bytes (a kind byte, then the file) never panics, and the
/// in-memory check, the streamed check and the streamed check of a reader that returns a few
/// bytes per read give the same report.
pub fn record_file(data: &[u8]) {
    use diagwire::validate::{Options, Report, Validator};
    let Some((kind, text)) = kind_and_rest(data) else {
        return;
    };
    let check = |in_memory_bytes: u64, reader: &mut dyn std::io::Read| {
        let options = Options {
            in_memory_bytes,
            ..Options::default()
        };
        let mut report = Report::default();
        let size = Some(text.len() as u64);
        let mut validator = Validator::new(validators(), options);
        // Reading from memory cannot fail.
        let _ = validator.validate_reader("input.json", kind, size, reader, &mut report);
        report
    };
    let in_memory = check(u64::MAX, &mut &text[..]);
    let streamed = check(0, &mut &text[..]);
    let trickled = check(
        0,
        &mut Trickle {
            bytes: text,
            step: 1,
        },
    );
    assert_eq!(in_memory, streamed, "in memory and streamed differ");
    assert_eq!(
        streamed, trickled,
        "streamed in one read and in small reads differ"
    );
}

/// Opening a bundle from arbitrary bytes never panics, never yields an unsafe path and stays within
/// its caps.
pub fn bundle_targz(data: &[u8]) {
    let path = scratch().join(format!("input-{:?}.tar.gz", std::thread::current().id()));
    let Ok(mut f) = std::fs::File::create(&path) else {
        return;
    };
    if f.write_all(data).is_err() {
        return;
    }
    drop(f);
    read_bundle(&path);
}

/// One entry of an arbitrary directory.
#[derive(Debug, Arbitrary)]
enum DirEntry {
    File { path: Vec<u8>, bytes: Vec<u8> },
    Symlink { path: Vec<u8>, target: Vec<u8> },
}

/// Path components from a small alphabet of the names bundles use, plus hostile ones.
fn path_of(raw: &[u8]) -> String {
    const PARTS: &[&str] = &[
        "run",
        "MANIFEST.json",
        "stage-0",
        "orchestrator",
        "boot.json",
        "events",
        "events-000001.json",
        "snapshots",
        "snapshot-000001.json",
        "finalize.json",
        "boot",
        "boot-000001.json",
        "vastai",
        "vastai_sample-000001.json",
        "..",
        ".",
        "x",
    ];
    let parts: Vec<&str> = raw
        .iter()
        .take(6)
        .map(|b| PARTS[usize::from(*b) % PARTS.len()])
        .collect();
    parts.join("/")
}

/// Reading a bundle directory built from arbitrary entries (files, links pointing anywhere) never
/// panics, never follows a link and stays within its caps.
pub fn bundle_dir(data: &[u8]) {
    let Ok(entries) = Vec::<DirEntry>::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let Ok(root) = tempfile::tempdir_in(scratch()) else {
        return;
    };
    for e in entries.iter().take(64) {
        let (raw, content) = match e {
            DirEntry::File { path, bytes } => (path, Some(bytes)),
            DirEntry::Symlink { path, .. } => (path, None),
        };
        let rel = path_of(raw);
        // The harness itself must not write outside its directory.
        if rel.is_empty()
            || Path::new(&rel)
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
        {
            continue;
        }
        let full = root.path().join(&rel);
        if let Some(parent) = full.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        match (e, content) {
            (_, Some(bytes)) => {
                let _ = std::fs::write(&full, bytes);
            }
            (DirEntry::Symlink { target, .. }, None) => {
                #[cfg(unix)]
                {
                    let target = if target.first() == Some(&0) {
                        "/etc/hostname".to_owned()
                    } else {
                        path_of(target)
                    };
                    let _ = std::os::unix::fs::symlink(target, &full);
                }
                #[cfg(not(unix))]
                let _ = target;
            }
            _ => {}
        }
    }
    read_bundle(root.path());
}

/// Writes an `Arbitrary` value of `W`, reads it as `R`, writes that back and reads it as `W`,
/// asserting that nothing changed on the way (the cross-version invariant). Returns whether the
/// input made a value to check.
pub fn roundtrip_through<W, R>(u: &mut Unstructured<'_>) -> bool
where
    W: for<'a> Arbitrary<'a> + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
    R: Serialize + DeserializeOwned,
{
    let Ok(value) = W::arbitrary(u) else {
        return false;
    };
    let written = serde_json::to_string(&value).expect("serializes");
    let read: R = serde_json::from_str(&written)
        .unwrap_or_else(|e| panic!("the reader cannot read what the writer wrote: {e}\n{written}"));
    let rewritten = serde_json::to_string(&read).expect("serializes");
    let back: W = serde_json::from_str(&rewritten).unwrap_or_else(|e| {
        panic!("the writer cannot read what the reader wrote back: {e}\n{rewritten}")
    });
    assert_eq!(
        value, back,
        "a value lost something through another release's reader\n{written}\n{rewritten}"
    );
    true
}

/// A value written by one contract reader, read by another, written back and read by the first is
/// unchanged: every ordered pair of the readers in `diagwire::releases::READERS` (the frozen releases,
/// and the current schemas when they are not released), for every record type. The pairs come from
/// generated code, so cutting a release changes nothing here.
pub fn cross_version(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(pair), Ok(kind)) = (u.int_in_range(0..=u8::MAX), u.int_in_range(0..=u8::MAX)) else {
        return;
    };
    let cells = cross_version_cells();
    let of_kind = &cells[usize::from(kind) % cells.len()];
    of_kind[usize::from(pair) % of_kind.len()](&mut u);
}

/// One cell of the cross-version matrix: a value of the writer's type through the reader's;
/// whether the input made a value.
pub type Cell = fn(&mut Unstructured<'_>) -> bool;

/// For every record type, one cell per ordered pair of contract readers.
pub fn cross_version_cells() -> Vec<Vec<Cell>> {
    let mut all: Vec<Vec<Cell>> = Vec::new();
    macro_rules! of_type {
        ($($t:ident),*) => {$({
            let mut pairs: Vec<Cell> = Vec::new();
            macro_rules! cell {
                ($w:ty, $r:ty) => {
                    pairs.push(roundtrip_through::<$w, $r>);
                };
            }
            diagwire::release_pairs!(cell, $t);
            all.push(pairs);
        })*};
    }
    of_type!(
        Identity,
        EventRecord,
        EventBatch,
        Snapshot,
        Finalize,
        Manifest,
        PostAck,
        ErrorBody,
        RunsListing,
        LiveRecord,
        VastaiRecord
    );
    assert_eq!(
        all.len(),
        RecordKind::ALL.len(),
        "a record kind was added: name its type in `cross_version_cells`"
    );
    all
}

/// Every protobuf descriptor (each release's, then the current schemas') that has record kind `kind`.
fn proto_codecs(kind: RecordKind) -> impl Iterator<Item = &'static diagwire::proto::Codec> {
    diagwire::proto::DESCRIPTORS
        .iter()
        .filter_map(|(v, _)| diagwire::proto::codec(v))
        .filter(move |l| l.message_of(kind).is_some())
}

/// The JSON values of `v` (every object, array, string, number, boolean and null, once each).
fn json_values(v: &serde_json::Value) -> usize {
    1 + match v {
        serde_json::Value::Array(a) => a.iter().map(json_values).sum(),
        serde_json::Value::Object(o) => o.values().map(json_values).sum(),
        _ => 0,
    }
}

/// `value` of `kind` through `codec` both ways: JSON → protobuf → JSON gives `value`, and protobuf
/// → JSON → protobuf gives the same bytes.
fn assert_proto_lossless(
    codec: &diagwire::proto::Codec,
    kind: RecordKind,
    value: &serde_json::Value,
) {
    use diagwire::proto::{decode, encode};
    let v = &codec.version;
    let bytes = encode(codec, kind, value)
        .unwrap_or_else(|e| panic!("`{kind}` ({v}): encoding failed: {e}\n{value}"));
    let back = decode(codec, kind, &bytes).unwrap_or_else(|e| {
        panic!("`{kind}` ({v}): its own encoding does not decode: {e}\n{value}")
    });
    assert_eq!(
        &back, value,
        "`{kind}` ({v}): JSON → protobuf → JSON changed the record"
    );
    let again = encode(codec, kind, &back).expect("encoded once, encodes again");
    assert_eq!(
        again, bytes,
        "`{kind}` ({v}): protobuf → JSON → protobuf changed the bytes\n{value}"
    );
    assert_generated_codec_agrees(codec, kind, &bytes);
}

/// The generated codec of the current type of `kind` reads `bytes` exactly when reading the JSON
/// that `decode` makes of them does, and as the same value; and it writes that value as `encode`
/// writes the value's JSON.
fn assert_generated_codec_agrees(codec: &diagwire::proto::Codec, kind: RecordKind, bytes: &[u8]) {
    fn check<T>(codec: &diagwire::proto::Codec, kind: RecordKind, bytes: &[u8])
    where
        T: DeserializeOwned + Serialize + diagwire::proto::Message + PartialEq + std::fmt::Debug,
    {
        let v = &codec.version;
        let k = kind;
        let via_json = diagwire::proto::decode(codec, k, bytes)
            .ok()
            .and_then(|j| T::deserialize(&j).ok());
        match (
            diagwire::proto::decode_record::<T>(codec, k, bytes),
            &via_json,
        ) {
            (Ok(t), Some(j)) => {
                assert_eq!(
                    &t, j,
                    "`{kind}` ({v}): the generated decoder read another value"
                )
            }
            (Err(_), None) => {}
            (t, j) => panic!("`{kind}` ({v}): generated decode {t:?}, through JSON {j:?}"),
        }
        // What the type read, the generated encoder writes as the descriptor codec writes its JSON.
        if let Some(t) = via_json {
            let json = serde_json::to_value(&t).expect("a typed value serializes");
            assert_eq!(
                diagwire::proto::encode_record(codec, k, &t).ok(),
                diagwire::proto::encode(codec, k, &json).ok(),
                "`{kind}` ({v}): the generated encoder wrote other bytes\n{json}"
            );
        }
    }
    use diagwire::v1 as t;
    match kind {
        RecordKind::Boot => check::<t::Identity>(codec, kind, bytes),
        RecordKind::Error => check::<t::ErrorBody>(codec, kind, bytes),
        RecordKind::Event => check::<t::EventRecord>(codec, kind, bytes),
        RecordKind::EventBatch => check::<t::EventBatch>(codec, kind, bytes),
        RecordKind::Finalize => check::<t::Finalize>(codec, kind, bytes),
        RecordKind::Live => check::<t::LiveRecord>(codec, kind, bytes),
        RecordKind::Manifest => check::<t::Manifest>(codec, kind, bytes),
        RecordKind::PostAck => check::<t::PostAck>(codec, kind, bytes),
        RecordKind::Runs => check::<t::RunsListing>(codec, kind, bytes),
        RecordKind::Snapshot => check::<t::Snapshot>(codec, kind, bytes),
        RecordKind::Vastai => check::<t::VastaiRecord>(codec, kind, bytes),
        _ => {}
    }
}

/// Protobuf decoding of arbitrary bytes (a kind byte, then the bytes) with every descriptor that has
/// the kind, and the lossless round trips.
///
/// * Decoding never panics. It builds at most [`diagwire::proto::decode_budget`] JSON values for
///   the input's length (the codec's memory bound), and an error names the record's message at the
///   start of its path and an offset inside the input. The same holds for the bytes read as a
///   length-delimited stream of records.
/// * Bytes that decode re-encode, and from there JSON → protobuf → JSON and protobuf → JSON →
///   protobuf are exact. (The fuzzer's bytes themselves need not be the canonical encoding:
///   fields out of order, repeated or non-minimal varints decode, and re-encode canonically.)
/// * The same bytes drive an `Arbitrary` record of the kind's generated type, as JSON, which every
///   codec converts losslessly: an older descriptor keeps what it does not know as unknown JSON.
/// * The generated codec agrees: `decode_record` into the current type reads a value exactly when
///   the JSON `decode` makes reads as one, and the same value; `encode_record` of that value
///   writes `encode`'s bytes for its JSON.
pub fn proto_decode(data: &[u8]) {
    use diagwire::proto::{MAX_RECORD_BYTES, decode, decode_budget, stream};
    let Some((kind, rest)) = kind_and_rest(data) else {
        return;
    };
    for codec in proto_codecs(kind) {
        let v = &codec.version;
        let message = codec.message_of(kind).expect("filtered on it");
        let located = |e: &diagwire::proto::Error, len: usize| {
            assert!(
                !e.message.is_empty(),
                "`{kind}` ({v}): an error without a message"
            );
            assert!(
                e.offset <= len,
                "`{kind}` ({v}): error offset {} past the input ({len} bytes): {e}",
                e.offset
            );
        };
        assert_generated_codec_agrees(codec, kind, rest);
        match decode(codec, kind, rest) {
            Ok(value) => {
                let made = json_values(&value);
                assert!(
                    made <= decode_budget(rest.len()),
                    "`{kind}` ({v}): {made} JSON values from {} bytes, over the budget of {}",
                    rest.len(),
                    decode_budget(rest.len())
                );
                assert_proto_lossless(codec, kind, &value);
            }
            Err(e) => {
                located(&e, rest.len());
                if rest.len() <= MAX_RECORD_BYTES {
                    assert!(
                        e.path.starts_with(message),
                        "`{kind}` ({v}): error path `{}` does not start at `{message}`: {e}",
                        e.path
                    );
                }
            }
        }
        for (i, r) in stream::decode_stream(codec, kind, rest)
            .enumerate()
            .take(64)
        {
            match r {
                Ok(value) => {
                    assert!(json_values(&value) <= decode_budget(rest.len()));
                }
                Err(e) => {
                    located(&e, rest.len());
                    assert!(
                        e.path.starts_with(&format!("record {i}")),
                        "`{kind}` ({v}): stream error path `{}` does not name record {i}",
                        e.path
                    );
                }
            }
        }
    }
    let Some(value) = arbitrary_record(kind, &mut Unstructured::new(rest)) else {
        return;
    };
    for codec in proto_codecs(kind) {
        assert_proto_lossless(codec, kind, &value);
    }
}
