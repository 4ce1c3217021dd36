//! Hostile bundles: every case gets a located error of the exact kind, never a panic, and the good
//! files around a bad entry are still read; the writers refuse paths that would escape their target.
#![cfg(feature = "bundle")]

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::bundle::read::{BundleReader, Limits, ReadError, ReadErrorKind, read_all};
use diagwire::bundle::write::{write_dir, write_tar_gz};
use tar::{EntryType, Header};

// ---------------------------------------------------------------------------------------------
// Building archives by hand

/// A header with a raw name (at most 100 bytes, written as is: `..`, `/` and non-UTF-8 included).
fn raw_header(name: &[u8], kind: EntryType, size: u64) -> Header {
    let mut header = Header::new_gnu();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    header
}

fn file(name: &str, bytes: &[u8]) -> (Header, Vec<u8>) {
    (
        raw_header(name.as_bytes(), EntryType::Regular, bytes.len() as u64),
        bytes.to_vec(),
    )
}

/// An uncompressed tar of the entries, in this order, with the end-of-archive marker.
fn tar_of(entries: Vec<(Header, Vec<u8>)>) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (header, bytes) in entries {
        tar.append(&header, bytes.as_slice()).unwrap();
    }
    tar.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn manifest() -> (Header, Vec<u8>) {
    file("run-1/MANIFEST.json", br#"{"run_id":"run-1"}"#)
}

fn boot() -> (Header, Vec<u8>) {
    file("run-1/stage-0/boot.json", br#"{"role":"stage"}"#)
}

fn save(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

/// Deterministic bytes that do not compress.
fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn at(bundle: &Path, entry: &str) -> String {
    format!("{}!{}", bundle.display(), entry)
}

fn here(path: &Path) -> String {
    path.display().to_string()
}

/// The (kind, location) of each error.
fn located(errors: &[ReadError]) -> Vec<(ReadErrorKind, String)> {
    errors
        .iter()
        .map(|e| (e.kind, e.location.clone()))
        .collect()
}

fn paths(contents: &BundleContents) -> Vec<&str> {
    contents.files.keys().map(String::as_str).collect()
}

fn open_error(path: &Path) -> (ReadErrorKind, String) {
    let e = BundleReader::open(path, Limits::default()).unwrap_err();
    assert!(!e.message.is_empty());
    (e.kind, e.location)
}

fn small_bundle() -> BundleContents {
    let mut b = BundleContents::new("run-1");
    b.files
        .insert("MANIFEST.json".into(), br#"{"run_id":"run-1"}"#.to_vec());
    b.files
        .insert("stage-0/boot.json".into(), br#"{"role":"stage"}"#.to_vec());
    b
}

// ---------------------------------------------------------------------------------------------
// Not a bundle at all

#[test]
fn missing_path_is_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nope.tar.gz");
    assert_eq!(open_error(&path), (ReadErrorKind::NotFound, here(&path)));
}

#[test]
fn empty_file_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(tmp.path(), "empty.tar.gz", b"");
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn random_bytes_are_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(tmp.path(), "noise.tar.gz", &noise(4096));
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn plain_json_file_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(
        tmp.path(),
        "MANIFEST.json",
        br#"{"run_id":"run-1","nodes":[]}"#,
    );
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn gzip_of_a_json_file_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(
        tmp.path(),
        "events.json.gz",
        &gzip(br#"[{"monotonic_seq":1}]"#),
    );
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn gzip_of_nothing_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(tmp.path(), "nothing.tar.gz", &gzip(b""));
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn archive_without_entries_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar_of(vec![])));
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn archive_of_unrelated_files_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = gzip(&tar_of(vec![file("src/main.rs", b"fn main() {}")]));
    let path = save(tmp.path(), "src.tar.gz", &bytes);
    assert_eq!(open_error(&path), (ReadErrorKind::NotABundle, here(&path)));
}

#[test]
fn empty_directory_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(
        open_error(tmp.path()),
        (ReadErrorKind::NotABundle, here(tmp.path()))
    );
}

#[test]
fn directory_of_unrelated_files_is_not_a_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    save(tmp.path(), "notes.txt", b"hello");
    fs::create_dir(tmp.path().join("src")).unwrap();
    save(&tmp.path().join("src"), "main.rs", b"fn main() {}");
    assert_eq!(
        open_error(tmp.path()),
        (ReadErrorKind::NotABundle, here(tmp.path()))
    );
}

// ---------------------------------------------------------------------------------------------
// Damaged gzip and tar

#[test]
fn truncated_gzip_is_a_gzip_error_after_the_files_before_the_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let big = "run-1/stage-0/events/events-000001.json";
    let whole = gzip(&tar_of(vec![manifest(), file(big, &noise(256 * 1024))]));
    let path = save(tmp.path(), "run-1.tar.gz", &whole[..whole.len() / 2]);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Gzip, at(&path, big))]);
}

#[test]
fn truncated_gzip_trailer_is_a_gzip_error_after_all_files() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = gzip(&tar_of(vec![manifest(), boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &whole[..whole.len() - 4]);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Gzip, here(&path))]);
}

#[test]
fn corrupt_deflate_data_is_a_gzip_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = gzip(&tar_of(vec![manifest(), boot()]));
    // The first deflate block header (right after the 10-byte gzip header) gets the reserved
    // block type 3.
    bytes[10] = 0xff;
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    assert_eq!(open_error(&path), (ReadErrorKind::Gzip, here(&path)));
}

#[test]
fn corrupt_gzip_checksum_is_a_gzip_error_after_all_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = gzip(&tar_of(vec![manifest(), boot()]));
    let crc = bytes.len() - 8;
    bytes[crc] ^= 0xff;
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Gzip, here(&path))]);
}

#[test]
fn broken_gzip_header_is_a_gzip_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = gzip(&tar_of(vec![manifest(), boot()]));
    bytes[2] = 7; // compression method: only 8 (deflate) exists
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    assert_eq!(open_error(&path), (ReadErrorKind::Gzip, here(&path)));
}

#[test]
fn truncated_tar_inside_complete_gzip_is_a_tar_error_at_the_cut_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let big = "run-1/stage-0/events/events-000001.json";
    let tar = tar_of(vec![manifest(), file(big, &[b' '; 4096])]);
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar[..2048]));
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Tar, at(&path, big))]);
}

#[test]
fn tar_without_end_of_archive_marker_is_a_tar_error_after_all_files() {
    let tmp = tempfile::tempdir().unwrap();
    let tar = tar_of(vec![manifest(), boot()]);
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar[..tar.len() - 1024]));
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Tar, here(&path))]);
}

#[test]
fn corrupt_tar_header_is_a_tar_error_after_the_files_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut tar = tar_of(vec![manifest(), boot()]);
    tar[1024 + 3] ^= 0x20; // a byte of the second header's name: the checksum no longer matches
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar));
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json"]);
    assert_eq!(located(&errors), [(ReadErrorKind::Tar, here(&path))]);
}

#[test]
fn device_entry_is_a_tar_error_and_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let device = raw_header(b"run-1/stage-0/dev", EntryType::Char, 0);
    let bytes = gzip(&tar_of(vec![manifest(), (device, vec![]), boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::Tar, at(&path, "run-1/stage-0/dev"))]
    );
}

#[test]
fn duplicate_entry_keeps_the_later_copy_and_reports_the_earlier_one() {
    let tmp = tempfile::tempdir().unwrap();
    let first = file("run-1/stage-0/boot.json", b"{\"copy\":1}");
    let second = file("run-1/stage-0/boot.json", b"{\"copy\":2}");
    let bytes = gzip(&tar_of(vec![manifest(), first, second]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(contents.files["stage-0/boot.json"], b"{\"copy\":2}");
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::Tar, at(&path, "run-1/stage-0/boot.json"))]
    );
}

// ---------------------------------------------------------------------------------------------
// Unsafe names

#[test]
fn entry_with_parent_dir_component_is_an_unsafe_path() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = file("run-1/../../evil.json", b"{}");
    let bytes = gzip(&tar_of(vec![manifest(), evil, boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::UnsafePath,
            at(&path, "run-1/../../evil.json")
        )]
    );
}

#[test]
fn entry_with_absolute_path_is_an_unsafe_path() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = file("/etc/cron.d/evil", b"* * * * * root true");
    let bytes = gzip(&tar_of(vec![manifest(), evil, boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::UnsafePath, at(&path, "/etc/cron.d/evil"))]
    );
}

#[test]
fn entry_with_backslash_is_an_unsafe_path() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = file("run-1\\..\\..\\evil.json", b"{}");
    let bytes = gzip(&tar_of(vec![manifest(), evil, boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::UnsafePath,
            at(&path, "run-1\\..\\..\\evil.json")
        )]
    );
}

#[test]
fn entry_name_that_is_not_utf8_is_an_unsafe_path() {
    let tmp = tempfile::tempdir().unwrap();
    let name = b"run-1/stage-0/\xff\xfe.json";
    let evil = (raw_header(name, EntryType::Regular, 2), b"{}".to_vec());
    let bytes = gzip(&tar_of(vec![manifest(), evil, boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::UnsafePath,
            at(&path, "run-1/stage-0/\u{fffd}\u{fffd}.json")
        )]
    );
}

#[test]
fn oversized_gnu_long_name_is_an_unsafe_path_and_never_buffered() {
    let tmp = tempfile::tempdir().unwrap();
    // A GNU long-name entry declaring 1 MiB of name for the entry after it.
    let long_name = 1024 * 1024;
    let mut long = raw_header(b"././@LongLink", EntryType::GNULongName, long_name as u64);
    long.set_cksum();
    let victim = file("run-1/stage-0/short.json", b"{}");
    let bytes = gzip(&tar_of(vec![
        manifest(),
        (long, vec![b'a'; long_name]),
        victim,
        boot(),
    ]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::UnsafePath,
            at(&path, "run-1/stage-0/short.json")
        )]
    );
}

#[test]
#[cfg(unix)]
fn file_name_in_directory_that_is_not_utf8_is_an_unsafe_path() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = write_dir(&small_bundle(), tmp.path()).unwrap();
    let bad = run_dir
        .join("stage-0")
        .join(std::ffi::OsStr::from_bytes(b"\xff.json"));
    fs::write(&bad, b"{}").unwrap();
    let (contents, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::UnsafePath, here(&bad))]);
}

// ---------------------------------------------------------------------------------------------
// Links

#[test]
fn symlink_entry_is_a_link_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut link = raw_header(b"run-1/stage-0/finalize.json", EntryType::Symlink, 0);
    link.set_link_name_literal("../../../../etc/passwd")
        .unwrap();
    link.set_cksum();
    let bytes = gzip(&tar_of(vec![manifest(), (link, vec![]), boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::Link,
            at(&path, "run-1/stage-0/finalize.json")
        )]
    );
}

#[test]
fn hardlink_entry_is_a_link_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut link = raw_header(b"run-1/stage-0/finalize.json", EntryType::Link, 0);
    link.set_link_name_literal("run-1/MANIFEST.json").unwrap();
    link.set_cksum();
    let bytes = gzip(&tar_of(vec![manifest(), (link, vec![]), boot()]));
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, Limits::default()).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(
            ReadErrorKind::Link,
            at(&path, "run-1/stage-0/finalize.json")
        )]
    );
}

#[test]
#[cfg(unix)]
fn symlink_in_directory_is_a_link_error_and_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = save(tmp.path(), "secret.txt", b"do not read");
    let run_dir = write_dir(&small_bundle(), &tmp.path().join("out")).unwrap();
    let link = run_dir.join("stage-0/finalize.json");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let (contents, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::Link, here(&link))]);
}

#[test]
#[cfg(unix)]
fn symlinked_directory_in_directory_is_a_link_error_and_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    save(&elsewhere, "boot.json", b"{}");
    let run_dir = write_dir(&small_bundle(), &tmp.path().join("out")).unwrap();
    let link = run_dir.join("stage-1");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let (contents, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::Link, here(&link))]);
}

#[test]
#[cfg(unix)]
fn hardlink_in_directory_is_a_link_error() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = save(tmp.path(), "outside.json", b"{}");
    let run_dir = write_dir(&small_bundle(), &tmp.path().join("out")).unwrap();
    let link = run_dir.join("stage-0/finalize.json");
    fs::hard_link(&outside, &link).unwrap();
    let (contents, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::Link, here(&link))]);
}

#[test]
#[cfg(unix)]
fn fifo_in_directory_is_an_io_error_and_never_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = write_dir(&small_bundle(), tmp.path()).unwrap();
    let fifo = run_dir.join("stage-0/finalize.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Opening the fifo would block forever; the reader must not.
    let (contents, errors) = read_all(&run_dir, Limits::default()).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::Io, here(&fifo))]);
}

// ---------------------------------------------------------------------------------------------
// Size and count caps

#[test]
fn decompression_bomb_entry_is_too_large_and_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_file_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let bomb_name = "run-1/stage-0/events/events-000001.json";
    let bomb_size = 8 * 1024 * 1024u64;
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    let (h, b) = manifest();
    tar.append(&h, b.as_slice()).unwrap();
    let header = raw_header(bomb_name.as_bytes(), EntryType::Regular, bomb_size);
    tar.append(&header, io::repeat(0).take(bomb_size)).unwrap();
    let (h, b) = boot();
    tar.append(&h, b.as_slice()).unwrap();
    let bytes = tar.into_inner().unwrap().finish().unwrap();
    assert!(
        bytes.len() < 64 * 1024,
        "the bomb is small: {} bytes",
        bytes.len()
    );
    let path = save(tmp.path(), "run-1.tar.gz", &bytes);
    let (contents, errors) = read_all(&path, limits).unwrap();
    assert_eq!(paths(&contents), ["MANIFEST.json", "stage-0/boot.json"]);
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::TooLarge, at(&path, bomb_name))]
    );
}

#[test]
fn oversized_file_in_directory_is_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_file_bytes: 1024,
        ..Limits::default()
    };
    let run_dir = write_dir(&small_bundle(), tmp.path()).unwrap();
    let big = save(&run_dir.join("stage-0"), "finalize.json", &[b' '; 1025]);
    let (contents, errors) = read_all(&run_dir, limits).unwrap();
    assert_eq!(contents, small_bundle());
    assert_eq!(located(&errors), [(ReadErrorKind::TooLarge, here(&big))]);
}

#[test]
fn archive_over_the_total_limit_stops_with_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let name = |i: usize| format!("run-1/stage-0/events/events-00000{i}.json");
    let mut entries = vec![manifest()];
    for i in 1..=6 {
        entries.push(file(&name(i), &vec![b' '; 300 * 1024]));
    }
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar_of(entries)));
    let (contents, errors) = read_all(&path, limits).unwrap();
    assert_eq!(
        paths(&contents),
        [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ]
    );
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::TooLarge, at(&path, &name(4)))]
    );
}

#[test]
fn directory_over_the_total_limit_stops_with_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_total_bytes: 1000,
        ..Limits::default()
    };
    let mut bundle = small_bundle();
    for i in 1..=6 {
        bundle.files.insert(
            format!("stage-0/events/events-00000{i}.json"),
            vec![b' '; 300],
        );
    }
    let run_dir = write_dir(&bundle, tmp.path()).unwrap();
    let (contents, errors) = read_all(&run_dir, limits).unwrap();
    // MANIFEST.json (18 bytes), stage-0/boot.json (16 bytes), then events 1 to 3 fit in 1000.
    assert_eq!(
        paths(&contents),
        [
            "MANIFEST.json",
            "stage-0/boot.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ]
    );
    let fourth = run_dir.join("stage-0/events/events-000004.json");
    assert_eq!(located(&errors), [(ReadErrorKind::TooLarge, here(&fourth))]);
}

#[test]
fn archive_with_too_many_entries_stops_with_too_many_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_entries: 4,
        ..Limits::default()
    };
    let mut entries = vec![manifest()];
    for i in 1..=9 {
        entries.push(file(
            &format!("run-1/stage-0/events/events-00000{i}.json"),
            b"[]",
        ));
    }
    let path = save(tmp.path(), "run-1.tar.gz", &gzip(&tar_of(entries)));
    let (contents, errors) = read_all(&path, limits).unwrap();
    assert_eq!(
        paths(&contents),
        [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ]
    );
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::TooManyEntries, here(&path))]
    );
}

#[test]
fn directory_with_too_many_entries_stops_with_too_many_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_entries: 5,
        ..Limits::default()
    };
    let mut bundle = BundleContents::new("run-1");
    bundle.files.insert("MANIFEST.json".into(), b"{}".to_vec());
    for i in 1..=9 {
        bundle.files.insert(
            format!("stage-0/events/events-00000{i}.json"),
            b"[]".to_vec(),
        );
    }
    let run_dir = write_dir(&bundle, tmp.path()).unwrap();
    let (contents, errors) = read_all(&run_dir, limits).unwrap();
    // Entries counted: MANIFEST.json, stage-0/, events/, then two files.
    assert_eq!(
        paths(&contents),
        [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
        ]
    );
    assert_eq!(
        located(&errors),
        [(ReadErrorKind::TooManyEntries, here(&run_dir))]
    );
}

// ---------------------------------------------------------------------------------------------
// Writers refuse to escape their target

fn bundle_with(path: &str) -> BundleContents {
    let mut b = small_bundle();
    b.files.insert(path.to_owned(), b"{}".to_vec());
    b
}

/// Asserts the refusal and that nothing at all was written under `tmp`.
fn assert_write_dir_refuses(bundle: &BundleContents) {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    let err = write_dir(bundle, &target).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn write_dir_refuses_a_parent_dir_component() {
    assert_write_dir_refuses(&bundle_with("stage-0/../../escaped.json"));
}

#[test]
fn write_dir_refuses_an_absolute_path() {
    assert_write_dir_refuses(&bundle_with("/tmp/escaped.json"));
}

#[test]
fn write_dir_refuses_an_empty_component() {
    assert_write_dir_refuses(&bundle_with("stage-0//boot.json"));
}

#[test]
fn write_dir_refuses_a_backslash() {
    assert_write_dir_refuses(&bundle_with("stage-0\\..\\..\\escaped.json"));
}

#[test]
fn write_dir_refuses_a_run_id_that_is_a_path() {
    let mut bundle = small_bundle();
    bundle.run_id = "../escaped".to_owned();
    assert_write_dir_refuses(&bundle);
}

#[test]
fn write_dir_refuses_a_parent_dir_run_id() {
    let mut bundle = small_bundle();
    bundle.run_id = "..".to_owned();
    assert_write_dir_refuses(&bundle);
}

#[test]
fn write_dir_refuses_a_file_that_is_also_a_directory() {
    assert_write_dir_refuses(&bundle_with("stage-0/boot.json/inner.json"));
}

#[test]
#[cfg(unix)]
fn write_dir_does_not_follow_a_symlinked_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let target = tmp.path().join("target");
    fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&elsewhere, target.join("run-1")).unwrap();
    let err = write_dir(&small_bundle(), &target).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn write_tar_gz_refuses_a_parent_dir_component() {
    let mut out = Vec::new();
    let err = write_tar_gz(&bundle_with("stage-0/../../escaped.json"), &mut out).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert!(out.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Anything at all

/// Recomputes the checksum of the 512-byte header block at `at`.
fn fix_checksum(tar: &mut [u8], at: usize) {
    let block = &mut tar[at..at + 512];
    block[148..156].fill(b' ');
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

#[test]
fn mutated_archives_never_panic_and_never_yield_unsafe_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let mut original = Vec::new();
    write_tar_gz(&small_bundle(), &mut original).unwrap();
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(original.as_slice())
        .read_to_end(&mut tar)
        .unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    let path = tmp.path().join("mutant.tar.gz");
    let limits = Limits {
        max_file_bytes: 64 * 1024,
        max_total_bytes: 1024 * 1024,
        max_entries: 64,
    };
    for round in 0..1500 {
        let mut mutant = tar.clone();
        let blocks = mutant.len() / 512;
        for _ in 0..1 + next(4) {
            // Mostly the name, mode, size and type fields of a block.
            let block = next(blocks);
            let i = block * 512 + next(if round % 4 == 0 { 512 } else { 160 });
            mutant[i] = next(256) as u8;
            if round % 2 == 0 {
                fix_checksum(&mut mutant, block * 512);
            }
        }
        if round % 5 == 0 {
            mutant.truncate(next(mutant.len()));
        }
        let bytes = if round % 3 == 0 {
            mutant
        } else {
            gzip(&mutant)
        };
        fs::write(&path, &bytes).unwrap();
        let Ok(mut reader) = BundleReader::open(&path, limits) else {
            continue;
        };
        for file in reader.files().flatten() {
            let p = &file.path;
            assert!(
                !p.starts_with('/')
                    && !p.contains('\\')
                    && p.split('/').all(|c| !matches!(c, "" | "." | "..")),
                "round {round}: unsafe path {p:?}"
            );
            assert!(
                file.bytes.len() as u64 <= limits.max_file_bytes,
                "round {round}"
            );
        }
    }
}
