//! Reading and writing bundles: round trips, deterministic archives, finding the run directory and
//! the roles of the files of the layout (legacy-wire §7.2).
#![cfg(feature = "bundle")]

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::bundle::read::{
    BundleReader, FileRole, Limits, ReadError, ReadErrorKind, file_role, read_all,
};
use diagwire::bundle::write::{write_dir, write_tar_gz};
use serde_json::json;

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

fn tar_gz_bytes(bundle: &BundleContents) -> Vec<u8> {
    let mut out = Vec::new();
    write_tar_gz(bundle, &mut out).unwrap();
    out
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
        tar.append_data(&mut header, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

fn paths_in_order(reader: &mut BundleReader) -> Vec<String> {
    reader.files().map(|f| f.unwrap().path).collect()
}

#[test]
fn tar_gz_round_trip_gives_back_the_same_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample();
    let path = write_file(tmp.path(), "run-1.tar.gz", &tar_gz_bytes(&bundle));
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, bundle);
}

#[test]
fn directory_round_trip_gives_back_the_same_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample();
    let run_dir = write_dir(&bundle, tmp.path()).unwrap();
    assert_eq!(run_dir, tmp.path().join("run-1"));
    let (read, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, bundle);
}

#[test]
fn write_dir_creates_a_missing_parent() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path().join("a/b");
    let run_dir = write_dir(&sample(), &parent).unwrap();
    assert_eq!(run_dir, parent.join("run-1"));
    assert!(
        run_dir
            .join("stage-0/snapshots/snapshot-000001.json")
            .is_file()
    );
}

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
fn write_dir_fills_an_existing_empty_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("run-1")).unwrap();
    let run_dir = write_dir(&sample(), tmp.path()).unwrap();
    let (read, _) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(read, sample());
}

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
    }
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

#[test]
fn long_paths_round_trip_through_gnu_long_names() {
    let tmp = tempfile::tempdir().unwrap();
    let run_id = format!("run-{}", "x".repeat(150));
    let mut bundle = BundleContents::new(run_id.clone());
    bundle.insert_json("MANIFEST.json", &json!({"run_id": run_id}));
    bundle.insert_json(
        format!("{}/events/events-000001.json", "n".repeat(120)),
        &json!([]),
    );
    let path = write_file(tmp.path(), "long.tar.gz", &tar_gz_bytes(&bundle));
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, bundle);
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
fn archive_files_are_yielded_in_archive_order() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = tar_gz_of(&[
        ("run-1/stage-0/boot.json", b"{}"),
        ("run-1/MANIFEST.json", b"{}"),
        ("run-1/orchestrator/boot.json", b"{}"),
    ]);
    let path = write_file(tmp.path(), "b.tar.gz", &bytes);
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    assert_eq!(
        paths_in_order(&mut reader),
        [
            "stage-0/boot.json",
            "MANIFEST.json",
            "orchestrator/boot.json"
        ]
    );
}

#[test]
fn run_directory_is_found_inside_a_wrapping_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let wrapper = tmp.path().join("download");
    write_dir(&sample(), &wrapper).unwrap();
    let (read, errors) = read_all(&wrapper, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read.run_id, "run-1");
    assert_eq!(read, sample());
}

#[test]
fn run_directory_is_found_inside_a_wrapping_directory_in_an_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = tar_gz_of(&[
        ("download/run-1/MANIFEST.json", b"{}"),
        ("download/run-1/stage-0/boot.json", b"{}"),
        ("download/README", b"beside the run"),
    ]);
    let path = write_file(tmp.path(), "b.tar.gz", &bytes);
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read.run_id, "run-1");
    assert_eq!(
        read.files.keys().collect::<Vec<_>>(),
        ["MANIFEST.json", "stage-0/boot.json"]
    );
}

#[test]
fn run_directory_is_found_two_levels_down_in_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    write_dir(&sample(), &tmp.path().join("download")).unwrap();
    let (read, errors) = read_all(tmp.path(), Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, sample());
}

#[test]
fn files_beside_the_run_directory_in_a_wrapper_are_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let wrapper = tmp.path().join("download");
    write_dir(&sample(), &wrapper).unwrap();
    fs::write(wrapper.join("notes.txt"), b"not part of the run").unwrap();
    let (read, errors) = read_all(&wrapper, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, sample());
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

#[test]
fn run_id_of_a_directory_is_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = write_dir(&sample(), tmp.path()).unwrap();
    let reader = BundleReader::open(&run_dir.join("."), Limits::default()).unwrap();
    assert_eq!(reader.run_id(), "run-1");
    assert_eq!(reader.source(), run_dir.join(".").as_path());
}

#[test]
fn archive_with_dot_slash_names_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = tar_gz_of(&[
        ("./run-1/MANIFEST.json", b"{\"run_id\":\"run-1\"}"),
        ("./run-1/stage-0/boot.json", b"{}"),
    ]);
    let path = write_file(tmp.path(), "b.tar.gz", &bytes);
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read.run_id, "run-1");
    assert_eq!(
        read.files.keys().collect::<Vec<_>>(),
        ["MANIFEST.json", "stage-0/boot.json"]
    );
}

#[test]
fn archive_with_the_manifest_at_the_top_takes_the_run_id_from_its_file_name() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = tar_gz_of(&[("MANIFEST.json", b"{}"), ("stage-0/boot.json", b"{}")]);
    let path = write_file(tmp.path(), "run-7.tar.gz", &bytes);
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read.run_id, "run-7");
    assert_eq!(
        read.files.keys().collect::<Vec<_>>(),
        ["MANIFEST.json", "stage-0/boot.json"]
    );
}

#[test]
fn archive_without_a_manifest_is_opened_from_its_node_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = tar_gz_of(&[
        ("run-3/stage-0/boot.json", b"{}"),
        ("run-3/stage-0/events/events-000001.json", b"[]"),
    ]);
    let path = write_file(tmp.path(), "b.tar.gz", &bytes);
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read.run_id, "run-3");
    assert_eq!(
        read.files.keys().collect::<Vec<_>>(),
        ["stage-0/boot.json", "stage-0/events/events-000001.json"]
    );
}

#[test]
fn directory_without_a_manifest_is_opened_from_its_node_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bundle = sample();
    bundle.files.remove("MANIFEST.json");
    let run_dir = write_dir(&bundle, tmp.path()).unwrap();
    let (read, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, bundle);
    // And through a wrapping directory.
    let (read, errors) = read_all(tmp.path(), Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, bundle);
}

#[test]
fn archive_is_recognized_by_its_magic_bytes_whatever_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_file(tmp.path(), "download.bin", &tar_gz_bytes(&sample()));
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, sample());
}

#[test]
fn plain_tar_archive_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let mut tar_bytes = Vec::new();
    flate2::read::GzDecoder::new(tar_gz_bytes(&sample()).as_slice())
        .read_to_end(&mut tar_bytes)
        .unwrap();
    let path = write_file(tmp.path(), "run-1.tar", &tar_bytes);
    let (read, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(errors, vec![]);
    assert_eq!(read, sample());
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
fn reader_gives_each_file_its_node_and_role() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_file(tmp.path(), "run-1.tar.gz", &tar_gz_bytes(&sample()));
    let mut reader = BundleReader::open(&path, Limits::default()).unwrap();
    let roles: Vec<(String, Option<String>, FileRole)> = reader
        .files()
        .map(|f| f.unwrap())
        .map(|f| (f.path, f.node, f.role))
        .collect();
    let node = |n: &str| Some(n.to_owned());
    assert_eq!(
        roles,
        [
            ("MANIFEST.json".to_owned(), None, FileRole::Manifest),
            (
                "orchestrator/boot.json".to_owned(),
                node("orchestrator"),
                FileRole::Boot
            ),
            (
                "orchestrator/boot/boot-000001.json".to_owned(),
                node("orchestrator"),
                FileRole::EarlierBoot
            ),
            (
                "orchestrator/events/events-000001.json".to_owned(),
                node("orchestrator"),
                FileRole::Events
            ),
            (
                "orchestrator/finalize.json".to_owned(),
                node("orchestrator"),
                FileRole::Finalize
            ),
            (
                "orchestrator/finalize/finalize-000001.json".to_owned(),
                node("orchestrator"),
                FileRole::EarlierFinalize
            ),
            (
                "stage-0/boot.json".to_owned(),
                node("stage-0"),
                FileRole::Boot
            ),
            (
                "stage-0/snapshots/snapshot-000001.json".to_owned(),
                node("stage-0"),
                FileRole::Snapshot
            ),
            (
                "vastai-stage-0/vastai/vastai_sample-000001.json".to_owned(),
                node("vastai-stage-0"),
                FileRole::Vastai
            ),
        ]
    );
}

/// A role inside the node directory `node`.
fn in_node(node: &str, role: FileRole) -> (Option<String>, FileRole) {
    (Some(node.to_owned()), role)
}

#[test]
fn manifest_at_the_top_has_the_manifest_role() {
    assert_eq!(file_role("MANIFEST.json"), (None, FileRole::Manifest));
}

#[test]
fn latest_boot_has_the_boot_role() {
    assert_eq!(
        file_role("stage-0/boot.json"),
        in_node("stage-0", FileRole::Boot)
    );
}

#[test]
fn numbered_boot_has_the_earlier_boot_role() {
    assert_eq!(
        file_role("stage-0/boot/boot-000001.json"),
        in_node("stage-0", FileRole::EarlierBoot)
    );
}

#[test]
fn events_file_has_the_events_role() {
    assert_eq!(
        file_role("relay/events/events-000042.json"),
        in_node("relay", FileRole::Events)
    );
}

#[test]
fn snapshot_file_has_the_snapshot_role() {
    assert_eq!(
        file_role("stage-2/snapshots/snapshot-000003.json"),
        in_node("stage-2", FileRole::Snapshot)
    );
}

#[test]
fn latest_finalize_has_the_finalize_role() {
    assert_eq!(
        file_role("orchestrator/finalize.json"),
        in_node("orchestrator", FileRole::Finalize)
    );
}

#[test]
fn numbered_finalize_has_the_earlier_finalize_role() {
    assert_eq!(
        file_role("orchestrator/finalize/finalize-000002.json"),
        in_node("orchestrator", FileRole::EarlierFinalize)
    );
}

#[test]
fn vastai_record_file_has_the_vastai_role() {
    assert_eq!(
        file_role("vastai-external/vastai/vastai_sample-000001.json"),
        in_node("vastai-external", FileRole::Vastai)
    );
    assert_eq!(
        file_role("vastai-stage-0/vastai/vastai_instance-000007.json"),
        in_node("vastai-stage-0", FileRole::Vastai)
    );
}

#[test]
fn file_in_a_node_directory_outside_the_layout_is_unknown_with_its_node() {
    assert_eq!(
        file_role("stage-0/notes.txt"),
        in_node("stage-0", FileRole::Unknown)
    );
    assert_eq!(
        file_role("stage-0/MANIFEST.json"),
        in_node("stage-0", FileRole::Unknown)
    );
}

#[test]
fn file_at_the_top_other_than_the_manifest_is_unknown_without_a_node() {
    assert_eq!(file_role("summary.md"), (None, FileRole::Unknown));
    assert_eq!(file_role("manifest.json"), (None, FileRole::Unknown));
}

#[test]
fn near_miss_names_are_unknown() {
    for path in [
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
    ] {
        assert_eq!(
            file_role(path),
            in_node("stage-0", FileRole::Unknown),
            "{path}"
        );
    }
}

#[test]
fn each_role_names_the_record_kind_of_its_file() {
    let kinds: Vec<_> = [
        FileRole::Manifest,
        FileRole::Boot,
        FileRole::EarlierBoot,
        FileRole::Events,
        FileRole::Snapshot,
        FileRole::Finalize,
        FileRole::EarlierFinalize,
        FileRole::Vastai,
        FileRole::Unknown,
    ]
    .into_iter()
    .map(FileRole::record_kind)
    .collect();
    assert_eq!(
        kinds,
        [
            Some("manifest"),
            Some("boot"),
            Some("boot"),
            Some("event"),
            Some("snapshot"),
            Some("finalize"),
            Some("finalize"),
            Some("vastai"),
            None
        ]
    );
    for kind in kinds.into_iter().flatten() {
        assert!(diagwire::v1::Record::KINDS.contains(&kind), "{kind}");
    }
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
