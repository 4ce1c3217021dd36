//! Reading and writing bundles: round trips, deterministic archives, finding the run directory and
//! the part each file plays in the layout.
//!
//! The cases are tables, one `#[test]` per line: a bundle written one way reads back the same from
//! the paths given; a hand-built archive reads as a run with these files in this order; a path
//! inside a run directory has this node and role.
#![cfg(feature = "bundle")]

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::bundle::output::{TarGzWriter, write_dir, write_tar_gz};
use diagwire::bundle::read::{BundleReader, Limits, ReadError, ReadErrorKind, read_all};
use diagwire::layout::{
    BundlePath, Encoding, FileKind, Role, bundle_path, bundle_path_as, parse_bundle_path,
};
use diagwire::v1::RecordKind;
use diagwire::{Location, Problem, ProblemKind};
use serde_json::json;

use FileKind::{Boot, Events, Finalize, Snapshot};
use Role::{Latest, Manifest, Numbered, Unknown};

/// A small bundle with every kind of file of the layout.
fn sample() -> BundleContents {
    let mut b = BundleContents::new("run-1");
    b.insert_json(
        "MANIFEST.json",
        &json!({"run_id": "run-1", "finalize_received": true, "nodes": []}),
    );
    b.insert_json(
        "orchestrator/boot.json",
        &json!({"role": "orchestrator", "boot": 2}),
    );
    b.insert_json(
        "orchestrator/boot/boot-000001.json",
        &json!({"role": "orchestrator", "boot": 1}),
    );
    b.insert_json(
        "orchestrator/events/events-000001.json",
        &json!([{"monotonic_seq": 1, "type": "Started"}]),
    );
    b.insert_json(
        "orchestrator/finalize.json",
        &json!({"exit_reason": "done"}),
    );
    b.insert_json(
        "orchestrator/finalize/finalize-000001.json",
        &json!({"exit_reason": "first"}),
    );
    b.insert_json(
        "stage-0/boot.json",
        &json!({"role": "stage", "stage_index": 0}),
    );
    b.insert_json(
        "stage-0/snapshots/snapshot-000001.json",
        &json!({"body": {}}),
    );
    b.insert_json(
        "vastai-stage-0/vastai/vastai_sample-000001.json",
        &json!({"v": 1}),
    );
    b
}

/// The sample without its manifest.
fn sample_without_manifest() -> BundleContents {
    let mut b = sample();
    b.files.remove("MANIFEST.json");
    b
}

/// A bundle whose run id and one file path are longer than a tar header holds.
fn long_paths() -> BundleContents {
    let run_id = format!("run-{}", "x".repeat(150));
    let mut b = BundleContents::new(run_id.clone());
    b.insert_json("MANIFEST.json", &json!({"run_id": run_id}));
    b.insert_json(
        format!("{}/events/events-000001.json", "n".repeat(120)),
        &json!([]),
    );
    b
}

fn tar_gz_bytes(bundle: &BundleContents) -> Vec<u8> {
    let mut out = Vec::new();
    write_tar_gz(bundle, &mut out).unwrap();
    out
}

fn tar_bytes(bundle: &BundleContents) -> Vec<u8> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(tar_gz_bytes(bundle).as_slice())
        .read_to_end(&mut tar)
        .unwrap();
    tar
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

/// A gzip'd tar with the given (name, content) entries in this order, no directory entries.
fn tar_gz_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // The name as given, byte for byte (`tar` would drop a `./` or a doubled `/`).
        let field = &mut header.as_old_mut().name;
        assert!(name.len() < field.len(), "{name}: too long for the header");
        field[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        tar.append(&header, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

fn paths_in_order(reader: &mut BundleReader) -> Vec<String> {
    reader.files().map(|f| f.unwrap().path).collect()
}

// ---------------------------------------------------------------------------------------------
// Round trips

/// Writes the bundle into a directory.
type WriteInto = Box<dyn Fn(&BundleContents, &Path)>;

/// Writes the bundle as a `.tar.gz` of this name.
fn tar_gz_named(name: &'static str) -> WriteInto {
    Box::new(move |b, tmp| {
        write_file(tmp, name, &tar_gz_bytes(b));
    })
}

/// Writes the bundle as an uncompressed tar of this name.
fn tar_named(name: &'static str) -> WriteInto {
    Box::new(move |b, tmp| {
        write_file(tmp, name, &tar_bytes(b));
    })
}

/// Writes the bundle as a directory tree under `parent` (created when missing), and checks that
/// the writer returns `parent/<run_id>`.
fn dir_in(parent: &'static str) -> WriteInto {
    Box::new(move |b, tmp| {
        let parent = tmp.join(parent);
        assert_eq!(write_dir(b, &parent).unwrap(), parent.join(&b.run_id));
    })
}

/// Writes with `first`, then runs `more` on the temporary directory.
fn then(first: WriteInto, more: fn(&Path)) -> WriteInto {
    Box::new(move |b, tmp| {
        first(b, tmp);
        more(tmp);
    })
}

/// Runs `before` on the temporary directory, then writes with `write`.
fn after(before: fn(&Path), write: WriteInto) -> WriteInto {
    Box::new(move |b, tmp| {
        before(tmp);
        write(b, tmp);
    })
}

/// The bundle, written by `write`, reads back as the same contents (run id included) and without
/// an error from each of the paths `open` (relative to the temporary directory).
#[track_caller]
fn check_round_trip(bundle: BundleContents, write: WriteInto, open: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    write(&bundle, tmp.path());
    assert!(!open.is_empty());
    for rel in open {
        let (read, errors) = read_all(&tmp.path().join(rel), Limits::default())
            .unwrap_or_else(|e| panic!("opening {rel:?}: {e}"));
        assert_eq!(errors, vec![], "opening {rel:?}");
        assert_eq!(read, bundle, "opening {rel:?}");
    }
}

/// `name: bundle, writer => paths to open;`
macro_rules! round_trips {
    ($($name:ident: $bundle:expr, $write:expr => $open:expr;)*) => {$(
        #[test]
        fn $name() {
            check_round_trip($bundle, $write, &$open);
        }
    )*};
}

round_trips! {
    tar_gz_round_trip_gives_back_the_same_contents:
        sample(), tar_gz_named("run-1.tar.gz") => ["run-1.tar.gz"];
    directory_round_trip_gives_back_the_same_contents: sample(), dir_in("") => ["run-1"];
    write_dir_creates_a_missing_parent: sample(), dir_in("a/b") => ["a/b/run-1"];
    write_dir_fills_an_existing_empty_run_directory:
        sample(), after(|tmp| fs::create_dir(tmp.join("run-1")).unwrap(), dir_in("")) => ["run-1"];
    long_paths_round_trip_through_gnu_long_names:
        long_paths(), tar_gz_named("long.tar.gz") => ["long.tar.gz"];
    archive_is_recognized_by_its_magic_bytes_whatever_its_name:
        sample(), tar_gz_named("download.bin") => ["download.bin"];
    plain_tar_archive_is_read: sample(), tar_named("run-1.tar") => ["run-1.tar"];
    run_directory_is_found_inside_a_wrapping_directory:
        sample(), dir_in("download") => ["download"];
    run_directory_is_found_two_levels_down_in_a_directory: sample(), dir_in("download") => [""];
    files_beside_the_run_directory_in_a_wrapper_are_ignored:
        sample(),
        then(dir_in("download"), |tmp| {
            fs::write(tmp.join("download/notes.txt"), b"not part of the run").unwrap()
        }) => ["download"];
    // From the run directory itself, and through a wrapping directory.
    directory_without_a_manifest_is_opened_from_its_node_directories:
        sample_without_manifest(), dir_in("") => ["run-1", ""];
}

// ---------------------------------------------------------------------------------------------
// Archives built by hand: where the run directory is, and the order files come in

/// The archive of `entries`, saved as `file_name`, opens as run `run_id` and yields exactly the
/// files `paths`, in this order, without an error; each file's location names its entry as the
/// archive spells it (`<archive>!<entry name>`).
#[track_caller]
fn check_archive(file_name: &str, entries: &[(&str, &[u8])], run_id: &str, paths: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_file(tmp.path(), file_name, &tar_gz_of(entries));
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    assert_eq!(reader.run_id(), run_id);
    assert_eq!(reader.file_count(), paths.len());
    let files: Vec<_> = reader.files().collect::<Result<_, _>>().unwrap();
    let got: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(got, paths);
    for file in &files {
        let entry = file.location.strip_prefix(&format!("{}!", path.display()));
        assert!(
            entry.is_some_and(|e| entries.iter().any(|(name, _)| *name == e)),
            "{}: not an entry of the archive",
            file.location
        );
        let entry = entry
            .unwrap()
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".");
        let path = file.path.split('/');
        assert!(
            entry.rev().zip(path.rev()).all(|(e, p)| e == p),
            "{}",
            file.location
        );
    }
}

/// `name: file name, [(entry name, bytes), …] => run id, [paths in order];`
macro_rules! archives {
    ($(
        $name:ident: $file_name:expr, [$(($entry:expr, $bytes:expr)),* $(,)?]
        => $run_id:expr, $paths:expr;
    )*) => {$(
        #[test]
        fn $name() {
            check_archive($file_name, &[$(($entry, $bytes)),*], $run_id, &$paths);
        }
    )*};
}

archives! {
    archive_files_are_yielded_in_path_order_whatever_the_archive_order: "b.tar.gz", [
        ("run-1/stage-0/boot.json", b"{}"),
        ("run-1/MANIFEST.json", b"{}"),
        ("run-1/orchestrator/boot.json", b"{}"),
    ] => "run-1", ["MANIFEST.json", "orchestrator/boot.json", "stage-0/boot.json"];
    run_directory_is_found_inside_a_wrapping_directory_in_an_archive: "b.tar.gz", [
        ("download/run-1/MANIFEST.json", b"{}"),
        ("download/run-1/stage-0/boot.json", b"{}"),
        ("download/README", b"beside the run"),
    ] => "run-1", ["MANIFEST.json", "stage-0/boot.json"];
    archive_with_dot_slash_names_is_read: "b.tar.gz", [
        ("./run-1/MANIFEST.json", b"{\"run_id\":\"run-1\"}"),
        ("./run-1/stage-0/boot.json", b"{}"),
    ] => "run-1", ["MANIFEST.json", "stage-0/boot.json"];
    archive_with_doubled_slashes_in_names_is_read: "b.tar.gz", [
        ("run-1//MANIFEST.json", b"{\"run_id\":\"run-1\"}"),
        ("run-1/./stage-0//boot.json", b"{}"),
    ] => "run-1", ["MANIFEST.json", "stage-0/boot.json"];
    archive_with_the_manifest_at_the_top_takes_the_run_id_from_its_file_name: "run-7.tar.gz", [
        ("MANIFEST.json", b"{}"),
        ("stage-0/boot.json", b"{}"),
    ] => "run-7", ["MANIFEST.json", "stage-0/boot.json"];
    archive_without_a_manifest_is_opened_from_its_node_directories: "b.tar.gz", [
        ("run-3/stage-0/boot.json", b"{}"),
        ("run-3/stage-0/events/events-000001.json", b"[]"),
    ] => "run-3", ["stage-0/boot.json", "stage-0/events/events-000001.json"];
}

// ---------------------------------------------------------------------------------------------
// The layout: which node and role a path inside the run directory has

/// Every path reads as `node` and `role`; a path in the layout is also what [`bundle_path`]
/// writes for that node and role. A record file's path with `.pb` for `.json` is the same place in
/// the binary form, and what [`bundle_path_as`] writes for it.
#[track_caller]
fn check_role(paths: &[&str], node: Option<&str>, role: Role) {
    assert!(!paths.is_empty());
    for path in paths {
        let want = BundlePath {
            node: node.map(str::to_owned),
            role: role.clone(),
            encoding: Encoding::Json,
        };
        assert_eq!(parse_bundle_path(path), want, "{path}");
        if role == Role::Unknown {
            continue;
        }
        assert_eq!(bundle_path(node.unwrap_or_default(), &role), *path);
        let Some(stem) = path
            .strip_suffix(".json")
            .filter(|_| role != Role::Manifest)
        else {
            continue;
        };
        let binary = format!("{stem}.pb");
        let want = BundlePath {
            encoding: Encoding::Protobuf,
            ..want
        };
        assert_eq!(parse_bundle_path(&binary), want, "{binary}");
        assert_eq!(
            bundle_path_as(node.unwrap_or_default(), &role, Encoding::Protobuf),
            binary
        );
    }
}

/// `name: [paths] => node, role;`
macro_rules! roles {
    ($($name:ident: [$($path:expr),* $(,)?] => $node:expr, $role:expr;)*) => {$(
        #[test]
        fn $name() {
            check_role(&[$($path),*], $node, $role);
        }
    )*};
}

fn vastai(kind: &str) -> FileKind {
    FileKind::Vastai(kind.to_owned())
}

roles! {
    manifest_at_the_top_has_the_manifest_role: ["MANIFEST.json"] => None, Manifest;
    latest_boot_has_the_boot_role: ["stage-0/boot.json"] => Some("stage-0"), Latest(Boot);
    numbered_boot_has_the_earlier_boot_role:
        ["stage-0/boot/boot-000001.json"] => Some("stage-0"), Numbered(Boot, 1);
    events_file_has_the_events_role:
        ["relay/events/events-000042.json"] => Some("relay"), Numbered(Events, 42);
    snapshot_file_has_the_snapshot_role:
        ["stage-2/snapshots/snapshot-000003.json"] => Some("stage-2"), Numbered(Snapshot, 3);
    latest_finalize_has_the_finalize_role:
        ["orchestrator/finalize.json"] => Some("orchestrator"), Latest(Finalize);
    numbered_finalize_has_the_earlier_finalize_role:
        ["orchestrator/finalize/finalize-000002.json"]
        => Some("orchestrator"), Numbered(Finalize, 2);
    vastai_record_file_has_the_vastai_role:
        ["vastai-external/vastai/vastai_sample-000001.json"]
        => Some("vastai-external"), Numbered(vastai("sample"), 1);
    vastai_record_file_names_its_vastai_kind:
        ["vastai-stage-0/vastai/vastai_instance-000007.json"]
        => Some("vastai-stage-0"), Numbered(vastai("instance"), 7);
    a_sequence_number_past_six_digits_is_written_in_full:
        ["stage-0/events/events-1234567.json"] => Some("stage-0"), Numbered(Events, 1_234_567);
    file_in_a_node_directory_outside_the_layout_is_unknown_with_its_node:
        ["stage-0/notes.txt", "stage-0/MANIFEST.json"] => Some("stage-0"), Unknown;
    file_at_the_top_other_than_the_manifest_is_unknown_without_a_node:
        ["summary.md", "manifest.json"] => None, Unknown;
    near_miss_names_are_unknown: [
        "stage-0/boot/boot-.json",
        "stage-0/boot/boot-00000a.json",
        "stage-0/boot-000001.json",
        "stage-0/events/events-000001.json.tmp",
        "stage-0/events/sub/events-000001.json",
        "stage-0/snapshots/events-000001.json",
        "stage-0/snapshot/snapshot-000001.json",
        "stage-0/finalize/finalize.json",
        "stage-0/vastai/vastai_-000001.json",
        "stage-0/vastai/vastai_sample.json",
        "stage-0/vastai/sample-000001.json",
        "stage-0/boot.json/x",
    ] => Some("stage-0"), Unknown;
    // Only the spelling the writers use counts, so two names never map to one sequence number.
    sequence_numbers_spelled_otherwise_are_unknown: [
        "stage-0/events/events-1.json",
        "stage-0/events/events-0000001.json",
        "stage-0/events/events-+00001.json",
        "stage-0/boot/boot-00001.json",
    ] => Some("stage-0"), Unknown;
    // The manifest is JSON only; other extensions are no encoding of a record file.
    binary_manifest_and_other_extensions_are_unknown: [
        "stage-0/boot.PB",
        "stage-0/boot.proto",
        "stage-0/events/events-000001.pbf",
        "stage-0/events/events-000001pb",
        "stage-0/snapshots/snapshot-000001.json.pb",
    ] => Some("stage-0"), Unknown;
    binary_manifest_at_the_top_is_unknown: ["MANIFEST.pb"] => None, Unknown;
}

#[test]
fn each_role_names_the_record_kind_of_its_file() {
    let kinds: Vec<_> = [
        Manifest,
        Latest(Boot),
        Numbered(Boot, 1),
        Numbered(Events, 1),
        Numbered(Snapshot, 1),
        Latest(Finalize),
        Numbered(Finalize, 1),
        Numbered(vastai("sample"), 1),
        Unknown,
    ]
    .iter()
    .map(Role::record_kind)
    .collect();
    assert_eq!(
        kinds,
        [
            Some(RecordKind::Manifest),
            Some(RecordKind::Boot),
            Some(RecordKind::Boot),
            Some(RecordKind::EventBatch),
            Some(RecordKind::Snapshot),
            Some(RecordKind::Finalize),
            Some(RecordKind::Finalize),
            Some(RecordKind::Vastai),
            None
        ]
    );
    for kind in kinds.into_iter().flatten() {
        assert!(RecordKind::ALL.contains(&kind), "{kind}");
    }
}

#[test]
fn reader_gives_each_file_its_node_and_role() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_file(tmp.path(), "run-1.tar.gz", &tar_gz_bytes(&sample()));
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    let roles: Vec<(String, Option<String>, Role)> = reader
        .files()
        .map(|f| f.unwrap())
        .map(|f| (f.path, f.node, f.role))
        .collect();
    let row = |path: &str, node: Option<&str>, role: Role| {
        (path.to_owned(), node.map(str::to_owned), role)
    };
    assert_eq!(
        roles,
        [
            row("MANIFEST.json", None, Manifest),
            row("orchestrator/boot.json", Some("orchestrator"), Latest(Boot)),
            row(
                "orchestrator/boot/boot-000001.json",
                Some("orchestrator"),
                Numbered(Boot, 1)
            ),
            row(
                "orchestrator/events/events-000001.json",
                Some("orchestrator"),
                Numbered(Events, 1)
            ),
            row(
                "orchestrator/finalize.json",
                Some("orchestrator"),
                Latest(Finalize)
            ),
            row(
                "orchestrator/finalize/finalize-000001.json",
                Some("orchestrator"),
                Numbered(Finalize, 1)
            ),
            row("stage-0/boot.json", Some("stage-0"), Latest(Boot)),
            row(
                "stage-0/snapshots/snapshot-000001.json",
                Some("stage-0"),
                Numbered(Snapshot, 1)
            ),
            row(
                "vastai-stage-0/vastai/vastai_sample-000001.json",
                Some("vastai-stage-0"),
                Numbered(vastai("sample"), 1)
            ),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Deterministic archives

#[test]
fn write_tar_gz_gives_the_same_bytes_for_the_same_contents() {
    let first = tar_gz_bytes(&sample());
    let second = tar_gz_bytes(&sample());
    assert_eq!(first, second);
    // The order files were added in does not matter either.
    let mut reversed = BundleContents::new("run-1");
    for (path, bytes) in sample().files.into_iter().rev() {
        reversed.files.insert(path, bytes);
    }
    assert_eq!(tar_gz_bytes(&reversed), first);
}

#[test]
fn write_tar_gz_gives_the_same_bytes_after_a_read_and_write_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tar_gz_bytes(&sample());
    let path = write_file(tmp.path(), "run-1.tar.gz", &first);
    let (read, _) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(tar_gz_bytes(&read), first);
    let run_dir = write_dir(&read, &tmp.path().join("out")).unwrap();
    let (read_again, _) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(tar_gz_bytes(&read_again), first);
}

#[test]
fn write_tar_gz_gives_different_bytes_for_different_contents() {
    let mut changed = sample();
    changed.insert_json(
        "stage-0/boot.json",
        &json!({"role": "stage", "stage_index": 1}),
    );
    assert_ne!(tar_gz_bytes(&changed), tar_gz_bytes(&sample()));
}

#[test]
fn gzip_header_has_no_file_name_and_mtime_zero() {
    let bytes = tar_gz_bytes(&sample());
    assert_eq!(&bytes[..3], &[0x1f, 0x8b, 8]);
    assert_eq!(bytes[3], 0, "no FNAME, FCOMMENT or FEXTRA flag");
    assert_eq!(&bytes[4..8], &[0, 0, 0, 0], "mtime 0");
}

#[test]
fn tar_entries_have_fixed_modes_owners_and_times() {
    let bytes = tar_gz_bytes(&sample());
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut checked = 0;
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let h = entry.header();
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let expected_mode = if h.entry_type().is_dir() {
            0o755
        } else {
            0o644
        };
        assert_eq!(h.mode().unwrap(), expected_mode, "{name}");
        assert_eq!(h.mtime().unwrap(), 0, "{name}");
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0), "{name}");
        assert_eq!(h.username_bytes(), Some(&b""[..]), "{name}");
        assert_eq!(h.groupname_bytes(), Some(&b""[..]), "{name}");
        checked += 1;
    }
    // The 9 files and their 9 directories.
    assert_eq!(checked, 18);
}

#[test]
fn tar_lists_each_directory_before_its_entries_in_sorted_order() {
    let bytes = tar_gz_bytes(&sample());
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
            if e.header().entry_type().is_dir() {
                format!("{}/", name.trim_end_matches('/'))
            } else {
                name
            }
        })
        .collect();
    assert_eq!(
        names,
        [
            "run-1/",
            "run-1/MANIFEST.json",
            "run-1/orchestrator/",
            "run-1/orchestrator/boot.json",
            "run-1/orchestrator/boot/",
            "run-1/orchestrator/boot/boot-000001.json",
            "run-1/orchestrator/events/",
            "run-1/orchestrator/events/events-000001.json",
            "run-1/orchestrator/finalize.json",
            "run-1/orchestrator/finalize/",
            "run-1/orchestrator/finalize/finalize-000001.json",
            "run-1/stage-0/",
            "run-1/stage-0/boot.json",
            "run-1/stage-0/snapshots/",
            "run-1/stage-0/snapshots/snapshot-000001.json",
            "run-1/vastai-stage-0/",
            "run-1/vastai-stage-0/vastai/",
            "run-1/vastai-stage-0/vastai/vastai_sample-000001.json",
        ]
    );
}

/// The archive written one file at a time is the archive written whole.
#[test]
fn tar_gz_writer_writes_the_bytes_of_write_tar_gz() {
    for bundle in [sample(), long_paths()] {
        let mut streamed = TarGzWriter::new(&bundle.run_id, Vec::new()).unwrap();
        for (path, bytes) in &bundle.files {
            streamed.append(path, bytes).unwrap();
        }
        assert_eq!(streamed.finish().unwrap(), tar_gz_bytes(&bundle));
    }
}

/// The archive written one file at a time refuses what [`write_tar_gz`] refuses, and a file out of
/// path order (which would break the archive's order and could hide a duplicate).
#[test]
fn tar_gz_writer_refuses_unsafe_paths_and_files_out_of_order() {
    let refused = |run_id: &str, paths: &[&str]| {
        let err = TarGzWriter::new(run_id, Vec::new()).and_then(|mut w| {
            paths.iter().try_for_each(|p| w.append(p, b"{}"))?;
            w.finish()
        });
        let err = err.expect_err("refused");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        err.to_string()
    };
    assert!(refused("../escaped", &[]).contains("not a single path component"));
    assert!(refused("..", &[]).contains("a `..` component"));
    assert!(refused("run-1", &["/tmp/escaped.json"]).contains("is absolute"));
    assert!(refused("run-1", &["stage-0/../../escaped.json"]).contains("a `..` component"));
    assert!(refused("run-1", &["stage-0/boot\0.json"]).contains("a NUL byte"));
    let message = refused(
        "run-1",
        &["stage-0/boot.json", "stage-0/boot.json/inner.json"],
    );
    assert!(
        message.contains("is a file and also the directory of"),
        "{message}"
    );
    let message = refused("run-1", &["stage-0/boot.json", "MANIFEST.json"]);
    assert!(message.contains("path order"), "{message}");
    let message = refused("run-1", &["MANIFEST.json", "MANIFEST.json"]);
    assert!(message.contains("path order"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// Writing into a directory, and what the reader says about what it opened

#[test]
fn write_dir_refuses_an_existing_non_empty_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("run-1")).unwrap();
    fs::write(tmp.path().join("run-1/old.txt"), b"keep me").unwrap();
    let err = write_dir(&sample(), tmp.path()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(
        fs::read(tmp.path().join("run-1/old.txt")).unwrap(),
        b"keep me"
    );
    assert!(!tmp.path().join("run-1/MANIFEST.json").exists());
}

#[test]
fn directory_files_are_yielded_sorted_by_path() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = write_dir(&sample(), tmp.path()).unwrap();
    let mut reader = BundleReader::open(&run_dir, Limits::default()).unwrap();
    let paths = paths_in_order(&mut reader);
    let sorted: Vec<String> = sample().files.into_keys().collect();
    assert_eq!(paths, sorted);
}

#[test]
fn directory_holding_two_run_directories_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    write_dir(&sample(), tmp.path()).unwrap();
    let mut other = sample();
    other.run_id = "run-2".to_owned();
    write_dir(&other, tmp.path()).unwrap();
    let err = BundleReader::open(tmp.path(), Limits::default()).unwrap_err();
    assert_eq!(err.kind, ReadErrorKind::NotABundle);
    assert_eq!(err.location, tmp.path().display().to_string());
    assert!(err.message.contains("run-1, run-2"), "{}", err.message);
}

/// The run id of a bundle renamed (the directory, the directory inside an archive, or an archive
/// whose top is the run directory) is its manifest's; the name it lies under is its `dir_name`.
/// A manifest whose run id could not name a directory leaves the name as the run id.
#[test]
fn the_run_id_of_a_renamed_bundle_is_its_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let mut renamed = sample();
    renamed.run_id = "incident-copy".into();
    let dir = write_dir(&renamed, tmp.path()).unwrap();
    let in_archive = tmp.path().join("download.tar.gz");
    write_tar_gz(&renamed, fs::File::create(&in_archive).unwrap()).unwrap();
    let entries: Vec<(&str, &[u8])> = renamed
        .files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
        .collect();
    let top_archive = write_file(tmp.path(), "flat.tar.gz", &tar_gz_of(&entries));
    let mut unsafe_id = sample();
    unsafe_id.insert_json(
        "MANIFEST.json",
        &json!({"run_id": "../elsewhere", "finalize_received": true, "nodes": []}),
    );
    let unsafe_dir = write_dir(&unsafe_id, &tmp.path().join("unsafe")).unwrap();
    for (path, run_id, dir_name) in [
        (dir.as_path(), "run-1", "incident-copy"),
        (in_archive.as_path(), "run-1", "incident-copy"),
        (top_archive.as_path(), "run-1", "flat"),
        (unsafe_dir.as_path(), "run-1", "run-1"),
    ] {
        let reader = BundleReader::open(path, Limits::default()).unwrap();
        assert_eq!(
            (reader.run_id(), reader.dir_name()),
            (run_id, dir_name),
            "{}",
            path.display()
        );
    }
}

#[test]
fn run_id_of_a_directory_is_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = write_dir(&sample(), tmp.path()).unwrap();
    let reader = BundleReader::open(&run_dir.join("."), Limits::default()).unwrap();
    assert_eq!(reader.run_id(), "run-1");
    assert_eq!(reader.source(), run_dir.join(".").as_path());
}

#[test]
fn file_count_is_the_number_of_files_yielded() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = write_file(tmp.path(), "run-1.tar.gz", &tar_gz_bytes(&sample()));
    let dir = write_dir(&sample(), &tmp.path().join("dir")).unwrap();
    for path in [archive, dir] {
        let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
        assert_eq!(reader.file_count(), sample().files.len());
        assert_eq!(reader.files().count(), sample().files.len());
    }
}

#[test]
fn files_can_be_iterated_again() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_file(tmp.path(), "run-1.tar.gz", &tar_gz_bytes(&sample()));
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    let first: Vec<_> = reader.files().map(Result::unwrap).collect();
    let second: Vec<_> = reader.files().map(Result::unwrap).collect();
    assert_eq!(first.len(), sample().files.len());
    assert_eq!(first, second);
}

#[test]
fn default_limits_are_64_mib_per_file_4_gib_in_total_and_200000_entries() {
    assert_eq!(
        Limits::default(),
        Limits {
            max_file_bytes: 64 * 1024 * 1024,
            max_total_bytes: 4 * 1024 * 1024 * 1024,
            max_entries: 200_000,
        }
    );
}

#[test]
fn read_error_displays_its_location_then_its_message() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let err: ReadError = BundleReader::open(&missing, Limits::default()).unwrap_err();
    assert_eq!(err.to_string(), format!("{}: not found", missing.display()));
}

#[test]
fn a_read_error_becomes_a_read_problem_at_the_same_place() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing-here");
    let err = BundleReader::open(&missing, Limits::default()).unwrap_err();
    let shown = err.to_string();
    let problem = Problem::from(err);
    assert_eq!(
        problem,
        Problem::new(
            ProblemKind::Read(ReadErrorKind::NotFound),
            Location::file(missing.display().to_string()),
            "not found"
        )
    );
    assert_eq!(problem.to_string(), shown);
    assert_eq!(problem.kind.as_str(), "read.not_found");
}

// The layout: the order a bundle's files go back to a collector as their nodes posted them

/// The files at `paths` (in any order) are posted as `nodes` (per node label, its paths in
/// order) and then `finalizes` (their paths in order).
#[track_caller]
fn check_post_plan(paths: &[&str], nodes: &[(&str, &[&str])], finalizes: &[&str]) {
    use diagwire::layout::PostPlan;
    for order in [paths.to_vec(), paths.iter().rev().copied().collect()] {
        let plan = PostPlan::of(order.iter().copied());
        let got: Vec<(&str, Vec<&str>)> = plan
            .nodes
            .iter()
            .map(|(label, posts)| {
                (
                    label.as_str(),
                    posts.iter().map(|(_, p)| p.as_str()).collect(),
                )
            })
            .collect();
        let want: Vec<(&str, Vec<&str>)> = nodes.iter().map(|(l, p)| (*l, p.to_vec())).collect();
        assert_eq!(got, want);
        let got: Vec<&str> = plan.finalizes.iter().map(|(_, _, p)| p.as_str()).collect();
        assert_eq!(got, finalizes);
        assert_eq!(
            plan.len(),
            want.iter().map(|(_, p)| p.len()).sum::<usize>() + finalizes.len()
        );
    }
}

/// `name: [paths] => [(node, [posts])], [finalizes];`
macro_rules! post_plans {
    ($($name:ident: [$($path:expr),* $(,)?] => [$(($node:expr, [$($post:expr),* $(,)?])),* $(,)?], [$($fin:expr),* $(,)?];)*) => {$(
        #[test]
        fn $name() {
            check_post_plan(&[$($path),*], &[$(($node, &[$($post),*])),*], &[$($fin),*]);
        }
    )*};
}

post_plans! {
    a_node_posts_its_boot_first_then_its_files_by_number_events_before_the_snapshot: [
        "n/snapshots/snapshot-000001.json", "n/events/events-000002.json",
        "n/events/events-000001.json", "n/boot.json", "n/snapshots/snapshot-000002.json",
    ] => [("n", [
        "n/boot.json", "n/events/events-000001.json", "n/snapshots/snapshot-000001.json",
        "n/events/events-000002.json", "n/snapshots/snapshot-000002.json",
    ])], [];
    earlier_boots_go_by_number_before_the_latest: [
        "n/boot.json", "n/boot/boot-000002.json", "n/boot/boot-000001.json",
    ] => [("n", ["n/boot/boot-000001.json", "n/boot/boot-000002.json", "n/boot.json"])], [];
    vastai_files_go_by_number_after_the_events_and_snapshot_of_that_number: [
        "n/vastai/vastai_sample-000001.json", "n/events/events-000001.json", "n/boot.json",
    ] => [("n", ["n/boot.json", "n/events/events-000001.json", "n/vastai/vastai_sample-000001.json"])], [];
    finalizes_go_after_every_node_s_posts_by_node_then_number: [
        "b/finalize.json", "a/finalize.json", "b/boot.json", "a/boot.json",
        "a/finalize/finalize-000001.json",
    ] => [("a", ["a/boot.json"]), ("b", ["b/boot.json"])],
       ["a/finalize/finalize-000001.json", "a/finalize.json", "b/finalize.json"];
    the_manifest_and_files_outside_the_layout_are_not_posts: [
        "MANIFEST.json", "n/boot.json", "n/notes.txt", "README",
    ] => [("n", ["n/boot.json"])], [];
}
