//! Hostile bundles: every case gets a located error of the exact kind, never a panic, and the good
//! files around a bad entry are still read; the writers refuse paths that would escape their
//! target.
//!
//! The cases are tables: `name: input => what reading it yields;`, one `#[test]` per line.
#![cfg(feature = "bundle")]

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use diagwire::bundle::BundleContents;
use diagwire::bundle::read::ReadErrorKind::{
    Gzip, Io, Link, NotABundle, NotFound, Tar, TooLarge, TooManyEntries, UnsafePath,
};
use diagwire::bundle::read::{BundleReader, Limits, ReadError, ReadErrorKind, read_all};
use diagwire::bundle::write::{write_dir, write_tar_gz};
use tar::{EntryType, Header};

use At::{Bundle, Entry, Inside};
use Input::{Missing, Tree};

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

/// A regular file entry.
fn file(name: &str, bytes: &[u8]) -> (Header, Vec<u8>) {
    file_raw(name.as_bytes(), bytes)
}

/// A regular file entry with a name that need not be UTF-8.
fn file_raw(name: &[u8], bytes: &[u8]) -> (Header, Vec<u8>) {
    (
        raw_header(name, EntryType::Regular, bytes.len() as u64),
        bytes.to_vec(),
    )
}

/// An entry without data: a device, a fifo, a directory.
fn special(name: &str, kind: EntryType) -> (Header, Vec<u8>) {
    (raw_header(name.as_bytes(), kind, 0), vec![])
}

/// A symbolic or hard link entry to `target`.
fn link(name: &str, kind: EntryType, target: &str) -> (Header, Vec<u8>) {
    let mut header = raw_header(name.as_bytes(), kind, 0);
    header.set_link_name_literal(target).unwrap();
    header.set_cksum();
    (header, vec![])
}

/// A GNU long-name entry declaring `len` bytes of name for the entry after it.
fn gnu_long_name(len: usize) -> (Header, Vec<u8>) {
    (
        raw_header(b"././@LongLink", EntryType::GNULongName, len as u64),
        vec![b'a'; len],
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

/// The uncompressed tar of the manifest and a boot record.
fn small_tar() -> Vec<u8> {
    tar_of(vec![manifest(), boot()])
}

/// The manifest and `count` events files of `bytes` each.
fn manifest_and_events(count: usize, bytes: &[u8]) -> Vec<(Header, Vec<u8>)> {
    let events =
        (1..=count).map(|i| file(&format!("run-1/stage-0/events/events-{i:06}.json"), bytes));
    std::iter::once(manifest()).chain(events).collect()
}

/// A small gzip'd tar whose one events file inflates to 8 MiB of zeros.
fn decompression_bomb() -> Vec<u8> {
    let size = 8 * 1024 * 1024u64;
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    let (header, bytes) = manifest();
    tar.append(&header, bytes.as_slice()).unwrap();
    let header = raw_header(BIG.as_bytes(), EntryType::Regular, size);
    tar.append(&header, io::repeat(0).take(size)).unwrap();
    let (header, bytes) = boot();
    tar.append(&header, bytes.as_slice()).unwrap();
    let bomb = tar.into_inner().unwrap().finish().unwrap();
    assert!(
        bomb.len() < 64 * 1024,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    bomb
}

/// The first `len` bytes.
fn cut(mut bytes: Vec<u8>, len: usize) -> Vec<u8> {
    bytes.truncate(len);
    bytes
}

/// The first half of the bytes.
fn first_half(bytes: Vec<u8>) -> Vec<u8> {
    let len = bytes.len() / 2;
    cut(bytes, len)
}

/// All but the last `n` bytes.
fn without_last(bytes: Vec<u8>, n: usize) -> Vec<u8> {
    let len = bytes.len() - n;
    cut(bytes, len)
}

/// The bytes with the one at `at` set to `value`.
fn with_byte(mut bytes: Vec<u8>, at: usize, value: u8) -> Vec<u8> {
    bytes[at] = value;
    bytes
}

/// The bytes with the one at `at` flipped by `mask`.
fn flip(mut bytes: Vec<u8>, at: usize, mask: u8) -> Vec<u8> {
    bytes[at] ^= mask;
    bytes
}

/// The bytes with the one `back` bytes before the end flipped by `mask`.
fn flip_from_end(bytes: Vec<u8>, back: usize, mask: u8) -> Vec<u8> {
    let at = bytes.len() - back;
    flip(bytes, at, mask)
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

fn save(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

// ---------------------------------------------------------------------------------------------
// Building directories

fn small_bundle() -> BundleContents {
    let mut b = BundleContents::new("run-1");
    b.files
        .insert("MANIFEST.json".into(), br#"{"run_id":"run-1"}"#.to_vec());
    b.files
        .insert("stage-0/boot.json".into(), br#"{"role":"stage"}"#.to_vec());
    b
}

/// `base` with `count` events files of `len` bytes each.
fn with_events(mut base: BundleContents, count: usize, bytes: &[u8]) -> BundleContents {
    for i in 1..=count {
        base.files
            .insert(format!("stage-0/events/events-{i:06}.json"), bytes.to_vec());
    }
    base
}

/// The small bundle written under `parent` (created when missing); returns the run directory.
fn small_bundle_in(parent: &Path) -> PathBuf {
    write_dir(&small_bundle(), parent).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The checks

/// What a case reads.
enum Input {
    /// Nothing at the path.
    Missing,
    /// A file holding these bytes (an archive or not), under this name.
    File(&'static str, Vec<u8>),
    /// A directory tree, made inside the temporary directory by the function, which returns the
    /// path to open.
    Tree(fn(&Path) -> PathBuf),
}

impl Input {
    fn make(self, tmp: &Path) -> PathBuf {
        match self {
            Input::Missing => tmp.join("nope.tar.gz"),
            Input::File(name, bytes) => save(tmp, name, &bytes),
            Input::Tree(make) => make(tmp),
        }
    }
}

/// A gzip'd or plain archive named like a collector tarball.
fn archive(bytes: Vec<u8>) -> Input {
    Input::File("run-1.tar.gz", bytes)
}

/// A gzip'd archive of the manifest, then `entry`, then a boot record: the files around the
/// entry must still be read.
fn archive_around(entry: (Header, Vec<u8>)) -> Input {
    archive(gzip(&tar_of(vec![manifest(), entry, boot()])))
}

/// Where an error is expected, relative to the path opened.
#[derive(Debug, Clone, Copy)]
enum At {
    /// The path opened: the bundle as a whole.
    Bundle,
    /// An archive entry, `<bundle>!<entry name>`.
    Entry(&'static str),
    /// A path inside the directory opened.
    Inside(&'static str),
}

impl At {
    fn of(self, opened: &Path) -> String {
        match self {
            Bundle => opened.display().to_string(),
            Entry(name) => format!("{}!{name}", opened.display()),
            Inside(rel) => opened.join(rel).display().to_string(),
        }
    }
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

/// Opening `input` fails with one error of `kind`, located at the path opened.
#[track_caller]
fn check_open(input: Input, kind: ReadErrorKind) {
    let tmp = tempfile::tempdir().unwrap();
    let path = input.make(tmp.path());
    let e = BundleReader::open(&path, Limits::default()).expect_err("opens as a bundle");
    assert!(!e.message.is_empty(), "{e:?}");
    assert_eq!(
        (e.kind, e.location.as_str()),
        (kind, Bundle.of(&path).as_str()),
        "{}",
        e.message
    );
}

/// Reading `input` yields exactly the files `readable` and the errors `errors`, in this order.
#[track_caller]
fn check_read(
    input: Input,
    limits: Limits,
    readable: &[&str],
    errors: &[(ReadErrorKind, At)],
) -> BundleContents {
    let tmp = tempfile::tempdir().unwrap();
    let path = input.make(tmp.path());
    let (contents, got) = read_all(&path, limits).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paths(&contents), readable, "the files read");
    let want: Vec<_> = errors.iter().map(|&(k, at)| (k, at.of(&path))).collect();
    assert_eq!(located(&got), want, "the errors: {got:#?}");
    assert!(got.iter().all(|e| !e.message.is_empty()), "{got:#?}");
    contents
}

/// `name: input => kind;` — opening fails with `kind` at the path opened.
macro_rules! open_fails {
    ($($(#[$meta:meta])* $name:ident: $input:expr => $kind:expr;)*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            check_open($input, $kind);
        }
    )*};
}

/// `name: input [, limits] => readable files, errors [, then more checks];`
macro_rules! reads {
    (@limits) => { Limits::default() };
    (@limits $limits:expr) => { $limits };
    ($(
        $(#[$meta:meta])*
        $name:ident: $input:expr $(, $limits:expr)? => $readable:expr, $errors:expr
        $(, then $then:expr)?;
    )*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            let _contents = check_read($input, reads!(@limits $($limits)?), &$readable, &$errors);
            $(($then)(&_contents);)?
        }
    )*};
}

const SMALL: [&str; 2] = ["MANIFEST.json", "stage-0/boot.json"];
const BIG: &str = "run-1/stage-0/events/events-000001.json";

fn same_as_small_bundle(contents: &BundleContents) {
    assert_eq!(contents, &small_bundle());
}

// ---------------------------------------------------------------------------------------------
// Not a bundle at all

open_fails! {
    missing_path_is_not_found: Missing => NotFound;
    empty_file_is_not_a_bundle: Input::File("empty.tar.gz", vec![]) => NotABundle;
    random_bytes_are_not_a_bundle: Input::File("noise.tar.gz", noise(4096)) => NotABundle;
    plain_json_file_is_not_a_bundle:
        Input::File("MANIFEST.json", br#"{"run_id":"run-1","nodes":[]}"#.to_vec()) => NotABundle;
    gzip_of_a_json_file_is_not_a_bundle:
        Input::File("events.json.gz", gzip(br#"[{"monotonic_seq":1}]"#)) => NotABundle;
    gzip_of_nothing_is_not_a_bundle: Input::File("nothing.tar.gz", gzip(b"")) => NotABundle;
    archive_without_entries_is_not_a_bundle: archive(gzip(&tar_of(vec![]))) => NotABundle;
    archive_of_unrelated_files_is_not_a_bundle:
        Input::File("src.tar.gz", gzip(&tar_of(vec![file("src/main.rs", b"fn main() {}")])))
        => NotABundle;
    empty_directory_is_not_a_bundle: Tree(|tmp| tmp.to_path_buf()) => NotABundle;
    directory_of_unrelated_files_is_not_a_bundle: Tree(|tmp| {
        save(tmp, "notes.txt", b"hello");
        fs::create_dir(tmp.join("src")).unwrap();
        save(&tmp.join("src"), "main.rs", b"fn main() {}");
        tmp.to_path_buf()
    }) => NotABundle;
}

// ---------------------------------------------------------------------------------------------
// Damaged gzip and tar

open_fails! {
    // The first deflate block header (right after the 10-byte gzip header) gets the reserved
    // block type 3.
    corrupt_deflate_data_is_a_gzip_error:
        archive(with_byte(gzip(&small_tar()), 10, 0xff)) => Gzip;
    // The compression method: only 8 (deflate) exists.
    broken_gzip_header_is_a_gzip_error:
        archive(with_byte(gzip(&small_tar()), 2, 7)) => Gzip;
}

reads! {
    truncated_gzip_is_a_gzip_error_after_the_files_before_the_cut:
        archive(first_half(gzip(&tar_of(vec![manifest(), file(BIG, &noise(256 * 1024))]))))
        => ["MANIFEST.json"], [(Gzip, Entry(BIG))];
    truncated_gzip_trailer_is_a_gzip_error_after_all_files:
        archive(without_last(gzip(&small_tar()), 4))
        => SMALL, [(Gzip, Bundle)];
    // The CRC-32 is the first of the trailer's 8 bytes.
    corrupt_gzip_checksum_is_a_gzip_error_after_all_files:
        archive(flip_from_end(gzip(&small_tar()), 8, 0xff))
        => SMALL, [(Gzip, Bundle)];
    truncated_tar_inside_complete_gzip_is_a_tar_error_at_the_cut_entry:
        archive(gzip(&cut(tar_of(vec![manifest(), file(BIG, &[b' '; 4096])]), 2048)))
        => ["MANIFEST.json"], [(Tar, Entry(BIG))];
    tar_without_end_of_archive_marker_is_a_tar_error_after_all_files:
        archive(gzip(&without_last(small_tar(), 1024)))
        => SMALL, [(Tar, Bundle)];
    // A byte of the second header's name changes: its checksum no longer matches.
    corrupt_tar_header_is_a_tar_error_after_the_files_before_it:
        archive(gzip(&flip(small_tar(), 1024 + 3, 0x20))) => ["MANIFEST.json"], [(Tar, Bundle)];
    device_entry_is_a_tar_error_and_never_read:
        archive_around(special("run-1/stage-0/dev", EntryType::Char))
        => SMALL, [(Tar, Entry("run-1/stage-0/dev"))];
    duplicate_entry_keeps_the_later_copy_and_reports_the_earlier_one:
        archive(gzip(&tar_of(vec![
            manifest(),
            file("run-1/stage-0/boot.json", b"{\"copy\":1}"),
            file("run-1/stage-0/boot.json", b"{\"copy\":2}"),
        ])))
        => SMALL, [(Tar, Entry("run-1/stage-0/boot.json"))],
        then |c: &BundleContents| assert_eq!(c.files["stage-0/boot.json"], b"{\"copy\":2}");
}

// ---------------------------------------------------------------------------------------------
// Unsafe names

reads! {
    entry_with_parent_dir_component_is_an_unsafe_path:
        archive_around(file("run-1/../../evil.json", b"{}"))
        => SMALL, [(UnsafePath, Entry("run-1/../../evil.json"))];
    entry_with_absolute_path_is_an_unsafe_path:
        archive_around(file("/etc/cron.d/evil", b"* * * * * root true"))
        => SMALL, [(UnsafePath, Entry("/etc/cron.d/evil"))];
    entry_with_backslash_is_an_unsafe_path:
        archive_around(file("run-1\\..\\..\\evil.json", b"{}"))
        => SMALL, [(UnsafePath, Entry("run-1\\..\\..\\evil.json"))];
    // The location shows the name with each bad byte replaced.
    entry_name_that_is_not_utf8_is_an_unsafe_path:
        archive_around(file_raw(b"run-1/stage-0/\xff\xfe.json", b"{}"))
        => SMALL, [(UnsafePath, Entry("run-1/stage-0/\u{fffd}\u{fffd}.json"))];
    // 1 MiB of name: over the 4096-byte limit, so it is skipped unread and the entry it names is
    // refused.
    oversized_gnu_long_name_is_an_unsafe_path_and_never_buffered:
        archive(gzip(&tar_of(vec![
            manifest(),
            gnu_long_name(1024 * 1024),
            file("run-1/stage-0/short.json", b"{}"),
            boot(),
        ])))
        => SMALL, [(UnsafePath, Entry("run-1/stage-0/short.json"))];
    #[cfg(unix)]
    file_name_in_directory_that_is_not_utf8_is_an_unsafe_path: Tree(|tmp| {
        use std::os::unix::ffi::OsStrExt;
        let run_dir = small_bundle_in(tmp);
        let name = std::ffi::OsStr::from_bytes(b"\xff.json");
        fs::write(run_dir.join("stage-0").join(name), b"{}").unwrap();
        run_dir
    }) => SMALL, [(UnsafePath, Inside("stage-0/\u{fffd}.json"))], then same_as_small_bundle;
}

// ---------------------------------------------------------------------------------------------
// Links

reads! {
    symlink_entry_is_a_link_error:
        archive_around(link(
            "run-1/stage-0/finalize.json",
            EntryType::Symlink,
            "../../../../etc/passwd",
        ))
        => SMALL, [(Link, Entry("run-1/stage-0/finalize.json"))];
    hardlink_entry_is_a_link_error:
        archive_around(link("run-1/stage-0/finalize.json", EntryType::Link, "run-1/MANIFEST.json"))
        => SMALL, [(Link, Entry("run-1/stage-0/finalize.json"))];
    #[cfg(unix)]
    symlink_in_directory_is_a_link_error_and_not_followed: Tree(|tmp| {
        let secret = save(tmp, "secret.txt", b"do not read");
        let run_dir = small_bundle_in(&tmp.join("out"));
        std::os::unix::fs::symlink(&secret, run_dir.join("stage-0/finalize.json")).unwrap();
        run_dir
    }) => SMALL, [(Link, Inside("stage-0/finalize.json"))], then same_as_small_bundle;
    #[cfg(unix)]
    symlinked_directory_in_directory_is_a_link_error_and_not_followed: Tree(|tmp| {
        let elsewhere = tmp.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        save(&elsewhere, "boot.json", b"{}");
        let run_dir = small_bundle_in(&tmp.join("out"));
        std::os::unix::fs::symlink(&elsewhere, run_dir.join("stage-1")).unwrap();
        run_dir
    }) => SMALL, [(Link, Inside("stage-1"))], then same_as_small_bundle;
    #[cfg(unix)]
    hardlink_in_directory_is_a_link_error: Tree(|tmp| {
        let outside = save(tmp, "outside.json", b"{}");
        let run_dir = small_bundle_in(&tmp.join("out"));
        fs::hard_link(&outside, run_dir.join("stage-0/finalize.json")).unwrap();
        run_dir
    }) => SMALL, [(Link, Inside("stage-0/finalize.json"))], then same_as_small_bundle;
    // Opening the fifo would block forever; the reader must not.
    #[cfg(unix)]
    fifo_in_directory_is_an_io_error_and_never_opened: Tree(|tmp| {
        let run_dir = small_bundle_in(tmp);
        let made = std::process::Command::new("mkfifo")
            .arg(run_dir.join("stage-0/finalize.json"))
            .status()
            .unwrap();
        assert!(made.success());
        run_dir
    }) => SMALL, [(Io, Inside("stage-0/finalize.json"))], then same_as_small_bundle;
}

// ---------------------------------------------------------------------------------------------
// Size and count caps

reads! {
    decompression_bomb_entry_is_too_large_and_never_read:
        archive(decompression_bomb()), Limits { max_file_bytes: 1024 * 1024, ..Limits::default() }
        => SMALL, [(TooLarge, Entry(BIG))];
    oversized_file_in_directory_is_too_large: Tree(|tmp| {
        let run_dir = small_bundle_in(tmp);
        save(&run_dir.join("stage-0"), "finalize.json", &[b' '; 1025]);
        run_dir
    }), Limits { max_file_bytes: 1024, ..Limits::default() }
        => SMALL, [(TooLarge, Inside("stage-0/finalize.json"))], then same_as_small_bundle;
    // Each events file is 300 KiB: three fit in 1 MiB, the fourth passes it.
    archive_over_the_total_limit_stops_with_too_large:
        archive(gzip(&tar_of(manifest_and_events(6, &[b' '; 300 * 1024])))),
        Limits { max_total_bytes: 1024 * 1024, ..Limits::default() }
        => [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ], [(TooLarge, Entry("run-1/stage-0/events/events-000004.json"))];
    // MANIFEST.json (18 bytes), stage-0/boot.json (16 bytes), then events 1 to 3 fit in 1000.
    directory_over_the_total_limit_stops_with_too_large: Tree(|tmp| {
        write_dir(&with_events(small_bundle(), 6, &[b' '; 300]), tmp).unwrap()
    }), Limits { max_total_bytes: 1000, ..Limits::default() }
        => [
            "MANIFEST.json",
            "stage-0/boot.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ], [(TooLarge, Inside("stage-0/events/events-000004.json"))];
    archive_with_too_many_entries_stops_with_too_many_entries:
        archive(gzip(&tar_of(manifest_and_events(9, b"[]")))),
        Limits { max_entries: 4, ..Limits::default() }
        => [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
        ], [(TooManyEntries, Bundle)];
    // Entries counted: MANIFEST.json, stage-0/, events/, then two files.
    directory_with_too_many_entries_stops_with_too_many_entries: Tree(|tmp| {
        let mut bundle = with_events(BundleContents::new("run-1"), 9, b"[]");
        bundle.files.insert("MANIFEST.json".into(), b"{}".to_vec());
        write_dir(&bundle, tmp).unwrap()
    }), Limits { max_entries: 5, ..Limits::default() }
        => [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
        ], [(TooManyEntries, Bundle)];
}

// ---------------------------------------------------------------------------------------------
// Writers refuse to escape their target

/// Which writer a case runs.
enum Writer {
    Dir,
    TarGz,
}

/// The small bundle with one more file at `path`.
fn bundle_with(path: &str) -> BundleContents {
    let mut b = small_bundle();
    b.files.insert(path.to_owned(), b"{}".to_vec());
    b
}

/// The small bundle under another run id.
fn run_id(run_id: &str) -> BundleContents {
    let mut b = small_bundle();
    b.run_id = run_id.to_owned();
    b
}

/// The writer refuses the bundle as invalid input and writes nothing at all.
#[track_caller]
fn check_refused(writer: Writer, bundle: BundleContents) {
    let tmp = tempfile::tempdir().unwrap();
    let err = match writer {
        Writer::Dir => write_dir(&bundle, &tmp.path().join("target")).unwrap_err(),
        Writer::TarGz => {
            let mut out = Vec::new();
            let err = write_tar_gz(&bundle, &mut out).unwrap_err();
            assert!(out.is_empty(), "{} bytes written", out.len());
            err
        }
    };
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "{err}");
}

/// `name: writer, bundle;` — the writer refuses the bundle and writes nothing.
macro_rules! refused {
    ($($name:ident: $writer:expr, $bundle:expr;)*) => {$(
        #[test]
        fn $name() {
            check_refused($writer, $bundle);
        }
    )*};
}

refused! {
    write_dir_refuses_a_parent_dir_component:
        Writer::Dir, bundle_with("stage-0/../../escaped.json");
    write_dir_refuses_an_absolute_path: Writer::Dir, bundle_with("/tmp/escaped.json");
    write_dir_refuses_an_empty_component: Writer::Dir, bundle_with("stage-0//boot.json");
    write_dir_refuses_a_dot_component: Writer::Dir, bundle_with("stage-0/./boot.json");
    write_dir_refuses_a_backslash: Writer::Dir, bundle_with("stage-0\\..\\..\\escaped.json");
    write_dir_refuses_a_nul_byte: Writer::Dir, bundle_with("stage-0/boot\0.json");
    write_dir_refuses_a_run_id_that_is_a_path: Writer::Dir, run_id("../escaped");
    write_dir_refuses_a_parent_dir_run_id: Writer::Dir, run_id("..");
    write_dir_refuses_an_empty_run_id: Writer::Dir, run_id("");
    write_dir_refuses_a_file_that_is_also_a_directory:
        Writer::Dir, bundle_with("stage-0/boot.json/inner.json");
    write_tar_gz_refuses_a_parent_dir_component:
        Writer::TarGz, bundle_with("stage-0/../../escaped.json");
    write_tar_gz_refuses_an_absolute_path: Writer::TarGz, bundle_with("/tmp/escaped.json");
    write_tar_gz_refuses_a_run_id_that_is_a_path: Writer::TarGz, run_id("../escaped");
    write_tar_gz_refuses_a_file_that_is_also_a_directory:
        Writer::TarGz, bundle_with("stage-0/boot.json/inner.json");
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
    let (mut opened, mut files) = (0, 0);
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
        opened += 1;
        for file in reader.files().flatten() {
            files += 1;
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
    // About two thirds of the mutants still open (1020 and 1746 files today), so the loop really
    // checks what the reader yields rather than skipping everything.
    assert!(opened >= 500, "only {opened} of 1500 mutants opened");
    assert!(files >= 1000, "only {files} files read from the mutants");
}
