//! The fuzz target bodies. `fuzz/` calls them from libFuzzer; `tests/fuzz_replay.rs` calls them on
//! the checked-in corpus, every regression input, and a time-boxed run of generated inputs, so the
//! same invariants hold under plain `cargo test` on stable.
//!
//! Invariants: no panic; a bundle is read within the reader's caps and never yields an unsafe path;
//! `parse(serialize(v)) == v`; the schema verdict and the typed parse agree.

use std::io::Write;
use std::path::{Component, Path};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use diagwire::bundle::read::{BundleReader, Limits};
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
];

/// Splits an input into a record kind (its first byte) and JSON text (the rest).
fn kind_and_text(data: &[u8]) -> Option<(RecordKind, &str)> {
    let (&k, rest) = data.split_first()?;
    let kind = RecordKind::ALL[usize::from(k) % RecordKind::ALL.len()];
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

/// The schema accepts a JSON value exactly when the generated type reads it.
pub fn schema_agreement(data: &[u8]) {
    let Some((kind, text)) = kind_and_text(data) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let schema = validators().is_valid(kind, &value);
    let typed = Record::from_value(kind, value.clone());
    assert_eq!(
        schema,
        typed.is_ok(),
        "`{kind}`: schema says {schema}, typed parse says {:?}\n{value}",
        typed.err().map(|e| e.to_string())
    );
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
        let _ = diagwire::check::bundle::check_bundle(validators(), &mut reader, &mut |_, _| {});
    }
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
