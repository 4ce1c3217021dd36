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
use diagwire::bundle::output::{write_dir, write_tar_gz};
use diagwire::bundle::read::ReadErrorKind::{
    Gzip, Io, Link, NotABundle, NotFound, PathConflict, Tar, TooLarge, TooManyEntries, UnsafePath,
};
use diagwire::bundle::read::{BundleReader, Limits, ReadError, ReadErrorKind, read_all};
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

/// The bytes cut at each offset, each piece gzip'd on its own, then concatenated, as
/// `cat a.gz b.gz` makes them: one gzip file of several members (RFC 1952), which `gzip -t`
/// passes and `tar xzf` extracts whole.
fn gzip_members(bytes: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([bytes.len()].iter()) {
        out.extend(gzip(&bytes[from..cut]));
        from = cut;
    }
    out
}

/// The bytes with `more` after them.
fn followed_by(mut bytes: Vec<u8>, more: &[u8]) -> Vec<u8> {
    bytes.extend_from_slice(more);
    bytes
}

/// A regular file entry, without data, whose header's size field holds `field` as is (the
/// checksum fixed, so only the size is wrong).
fn with_size_field(name: &str, field: &[u8; 12]) -> (Header, Vec<u8>) {
    let mut header = raw_header(name.as_bytes(), EntryType::Regular, 0);
    header.as_old_mut().size = *field;
    header.set_cksum();
    (header, vec![])
}

/// A regular file entry whose header declares `size` bytes but which holds `bytes`.
fn declaring(name: &str, size: u64, bytes: &[u8]) -> (Header, Vec<u8>) {
    (
        raw_header(name.as_bytes(), EntryType::Regular, size),
        bytes.to_vec(),
    )
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

/// Opening `input` fails with one error of `kind`, located at the path opened, whose message
/// holds `saying` (when given).
#[track_caller]
fn check_open(input: Input, kind: ReadErrorKind, saying: Option<&str>) {
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
    if let Some(text) = saying {
        assert!(e.message.contains(text), "{:?} lacks {text:?}", e.message);
    }
}

/// Reading `input` yields exactly the files `readable` and the errors `errors`, in this order.
/// The errors are returned for more checks.
#[track_caller]
fn check_read(
    input: Input,
    limits: Limits,
    readable: &[&str],
    errors: &[(ReadErrorKind, At)],
) -> (BundleContents, Vec<ReadError>) {
    let tmp = tempfile::tempdir().unwrap();
    let path = input.make(tmp.path());
    let (contents, got) = read_all(&path, limits).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paths(&contents), readable, "the files read");
    let want: Vec<_> = errors.iter().map(|&(k, at)| (k, at.of(&path))).collect();
    assert_eq!(located(&got), want, "the errors: {got:#?}");
    assert!(got.iter().all(|e| !e.message.is_empty()), "{got:#?}");
    (contents, got)
}

/// Each error's message holds the text given for it.
#[track_caller]
fn check_saying(errors: &[ReadError], saying: &[&str]) {
    assert_eq!(errors.len(), saying.len(), "{errors:#?}");
    for (e, text) in errors.iter().zip(saying) {
        assert!(e.message.contains(text), "{:?} lacks {text:?}", e.message);
    }
}

/// Each error is about the file of the run directory given for it (`ReadError::path`).
#[track_caller]
fn check_about(errors: &[ReadError], about: &[Option<&str>]) {
    let got: Vec<Option<&str>> = errors.iter().map(|e| e.path.as_deref()).collect();
    assert_eq!(got, about, "{errors:#?}");
}

/// `name: input => kind [, saying text];` — opening fails with `kind` at the path opened, with a
/// message holding the text.
macro_rules! open_fails {
    (@saying) => { None };
    (@saying $text:expr) => { Some($text) };
    ($($(#[$meta:meta])* $name:ident: $input:expr => $kind:expr $(, saying $text:expr)?;)*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            check_open($input, $kind, open_fails!(@saying $($text)?));
        }
    )*};
}

/// `name: input [, limits] => readable files, errors [, then more checks] [, saying a text per
/// error] [, about the run-directory path per error];`
macro_rules! reads {
    (@limits) => { Limits::default() };
    (@limits $limits:expr) => { $limits };
    ($(
        $(#[$meta:meta])*
        $name:ident: $input:expr $(, $limits:expr)? => $readable:expr, $errors:expr
        $(, then $then:expr)? $(, saying $saying:expr)? $(, about $about:expr)?;
    )*) => {$(
        $(#[$meta])*
        #[test]
        fn $name() {
            let (_contents, _errors) =
                check_read($input, reads!(@limits $($limits)?), &$readable, &$errors);
            $(($then)(&_contents);)?
            $(check_saying(&_errors, &$saying);)?
            $(check_about(&_errors, &$about);)?
        }
    )*};
}

const SMALL: [&str; 2] = ["MANIFEST.json", "stage-0/boot.json"];
/// The total limit both the archive and the directory of the same bundle are read under.
const SAME_TOTAL: u64 = 1024 * 1024;
/// The small bundle and its first three events files.
const THREE_EVENTS: [&str; 5] = [
    "MANIFEST.json",
    "stage-0/boot.json",
    "stage-0/events/events-000001.json",
    "stage-0/events/events-000002.json",
    "stage-0/events/events-000003.json",
];
const BIG: &str = "run-1/stage-0/events/events-000001.json";

fn same_as_small_bundle(contents: &BundleContents) {
    assert_eq!(contents, &small_bundle());
}

// ---------------------------------------------------------------------------------------------
// Not a bundle at all

open_fails! {
    missing_path_is_not_found: Missing => NotFound;
    empty_file_is_not_a_bundle:
        Input::File("empty.tar.gz", vec![]) => NotABundle, saying "not a bundle: an empty file";
    random_bytes_are_not_a_bundle: Input::File("noise.tar.gz", noise(4096)) => NotABundle;
    plain_json_file_is_not_a_bundle:
        Input::File("MANIFEST.json", br#"{"run_id":"run-1","nodes":[]}"#.to_vec()) => NotABundle;
    gzip_of_a_json_file_is_not_a_bundle:
        Input::File("events.json.gz", gzip(br#"[{"monotonic_seq":1}]"#)) => NotABundle;
    gzip_of_nothing_is_not_a_bundle:
        Input::File("nothing.tar.gz", gzip(b"")) => NotABundle,
        saying "the gzip data inflates to nothing";
    // Named like a bundle, but a zip archive by its first bytes.
    zip_archive_is_not_a_bundle_and_says_it_is_a_zip_archive:
        Input::File("run-1.tar.gz", followed_by(b"PK\x03\x04\x14\x00".to_vec(), &noise(200)))
        => NotABundle, saying "a zip archive; bundles are gzip'd or plain tar archives";
    plain_tar_without_a_run_directory_is_not_a_bundle_and_says_so:
        Input::File("src.tar", tar_of(vec![file("src/main.rs", b"fn main() {}")]))
        => NotABundle, saying "holds no MANIFEST.json and no node directories";
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
    // Cut inside the manifest's data, inside the boot record's header and at the end-of-archive
    // marker.
    multi_member_gzip_is_read_as_one_stream:
        archive(gzip_members(&small_tar(), &[700, 1024 + 100, 2048])) => SMALL, [];
    // An empty member between two others, as `cat a.gz empty.gz b.gz` makes it.
    multi_member_gzip_with_an_empty_member_is_read_as_one_stream:
        archive(gzip_members(&small_tar(), &[1024, 1024])) => SMALL, [];
    trailing_garbage_after_the_last_gzip_member_is_a_gzip_error_after_all_files:
        archive(followed_by(gzip(&small_tar()), b"this is not gzip data"))
        => SMALL, [(Gzip, Bundle)];
    // The second member starts at the boot record's header; its first deflate block gets the
    // reserved block type 3.
    corrupt_second_gzip_member_is_a_gzip_error_after_the_files_before_it:
        archive({
            let tar = small_tar();
            let first = gzip(&tar[..1024]);
            let at = first.len() + 10;
            with_byte(gzip_members(&tar, &[1024]), at, 0xff)
        })
        => ["MANIFEST.json"], [(Gzip, Bundle)];
    tar_size_field_that_is_not_a_number_is_a_tar_error_at_the_entry:
        archive_around(with_size_field("run-1/stage-0/finalize.json", b"12x4567\x0089ab"))
        => ["MANIFEST.json"], [(Tar, Entry("run-1/stage-0/finalize.json"))],
        saying ["the entry header's size field is not a number"],
        about [Some("stage-0/finalize.json")];
    // Bytes with the high bit set, which a base-256 reading turns into an enormous size.
    tar_size_field_of_binary_garbage_is_a_tar_error_at_the_entry:
        archive_around(with_size_field("run-1/stage-0/finalize.json", &[0xfe; 12]))
        => ["MANIFEST.json"], [(Tar, Entry("run-1/stage-0/finalize.json"))],
        saying ["the entry header's size field is not a number"];
    // 1 TiB, written in GNU base-256: a valid size, past the total limit of 4 GiB.
    tar_size_past_the_total_limit_is_too_large_at_the_entry_and_never_read:
        archive_around(declaring("run-1/stage-0/finalize.json", 1 << 40, b"{}"))
        => ["MANIFEST.json"], [(TooLarge, Entry("run-1/stage-0/finalize.json"))],
        saying ["the entry's header declares 1099511627776 bytes of data, which would take the \
                 archive past the total limit"];
    // 1 MiB declared, 2 bytes there: the archive ends inside the entry's data.
    tar_size_past_the_end_of_the_archive_is_a_tar_error_at_the_entry:
        archive(gzip(&tar_of(vec![
            manifest(),
            boot(),
            declaring("run-1/stage-0/finalize.json", 1 << 20, b"{}"),
        ])))
        => SMALL, [(Tar, Entry("run-1/stage-0/finalize.json"))],
        saying ["the archive ends inside an entry"];
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
// One path both a file and a directory

reads! {
    entry_inside_a_file_is_a_path_conflict_at_the_later_entry:
        archive(gzip(&tar_of(vec![
            manifest(),
            boot(),
            file("run-1/stage-0/boot.json/x.json", b"{}"),
        ])))
        => ["MANIFEST.json", "stage-0/boot.json", "stage-0/boot.json/x.json"],
        [(PathConflict, Entry("run-1/stage-0/boot.json/x.json"))],
        saying ["`run-1/stage-0/boot.json` is a file earlier in the archive; extracting this \
                 entry would turn that file into a directory"],
        about [Some("stage-0/boot.json/x.json")];
    directory_entry_at_the_path_of_a_file_is_a_path_conflict_at_the_directory:
        archive(gzip(&tar_of(vec![
            manifest(),
            boot(),
            special("run-1/stage-0/boot.json", EntryType::Directory),
        ])))
        => SMALL, [(PathConflict, Entry("run-1/stage-0/boot.json"))],
        saying ["would turn that file into a directory"],
        about [Some("stage-0/boot.json")];
    // The old form: a regular entry whose name ends with `/`.
    old_style_directory_entry_at_the_path_of_a_file_is_a_path_conflict:
        archive(gzip(&tar_of(vec![manifest(), boot(), file("run-1/stage-0/boot.json/", b"")])))
        => SMALL, [(PathConflict, Entry("run-1/stage-0/boot.json/"))],
        saying ["would turn that file into a directory"];
    file_at_the_path_of_an_earlier_directory_is_a_path_conflict_at_the_file:
        archive(gzip(&tar_of(vec![
            manifest(),
            special("run-1/stage-0/boot.json", EntryType::Directory),
            boot(),
        ])))
        => SMALL, [(PathConflict, Entry("run-1/stage-0/boot.json"))],
        saying ["`run-1/stage-0/boot.json` is a directory earlier in the archive; extracting \
                 this file would turn that directory into a file"],
        about [Some("stage-0/boot.json")];
    file_at_the_parent_path_of_an_earlier_entry_is_a_path_conflict_at_the_file:
        archive(gzip(&tar_of(vec![
            manifest(),
            file("run-1/stage-0/boot.json/x.json", b"{}"),
            boot(),
        ])))
        => ["MANIFEST.json", "stage-0/boot.json", "stage-0/boot.json/x.json"],
        [(PathConflict, Entry("run-1/stage-0/boot.json"))],
        saying ["would turn that directory into a file"];
    // Each later entry inside the file is reported, and only those.
    every_entry_inside_a_file_is_a_path_conflict:
        archive(gzip(&tar_of(vec![
            manifest(),
            file("run-1/stage-0/events", b"[]"),
            special("run-1/stage-0/events/", EntryType::Directory),
            file("run-1/stage-0/events/events-000001.json", b"[]"),
            boot(),
        ])))
        => [
            "MANIFEST.json",
            "stage-0/boot.json",
            "stage-0/events",
            "stage-0/events/events-000001.json",
        ],
        [
            (PathConflict, Entry("run-1/stage-0/events/")),
            (PathConflict, Entry("run-1/stage-0/events/events-000001.json")),
        ],
        about [Some("stage-0/events"), Some("stage-0/events/events-000001.json")];
    path_conflict_outside_the_run_directory_is_reported_without_a_path:
        archive(gzip(&tar_of(vec![
            file("notes", b"x"),
            file("notes/more", b"y"),
            manifest(),
            boot(),
        ])))
        => SMALL, [(PathConflict, Entry("notes/more"))], about [None];
    // Directory entries before what they hold, the way the writer lays them out, are no conflict.
    directories_before_their_files_are_no_path_conflict:
        archive(gzip(&tar_of(vec![
            special("run-1/", EntryType::Directory),
            manifest(),
            special("run-1/stage-0", EntryType::Directory),
            special("run-1/stage-0/", EntryType::Directory),
            boot(),
        ])))
        => SMALL, [];
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
    // The same bundle as an archive and as a directory, under the same limit: the same files,
    // then one error at the same file (six events files of 300 KiB; the archive's headers and
    // padding count too, but three files fit either way).
    archive_over_the_total_limit_yields_the_files_before_it_then_too_large:
        archive({
            let mut out = Vec::new();
            write_tar_gz(&with_events(small_bundle(), 6, &[b' '; 300 * 1024]), &mut out).unwrap();
            out
        }),
        Limits { max_total_bytes: SAME_TOTAL, ..Limits::default() }
        => THREE_EVENTS, [(TooLarge, Entry("run-1/stage-0/events/events-000004.json"))],
        about [Some("stage-0/events/events-000004.json")];
    directory_over_the_total_limit_yields_the_files_before_it_then_too_large: Tree(|tmp| {
        write_dir(&with_events(small_bundle(), 6, &[b' '; 300 * 1024]), tmp).unwrap()
    }), Limits { max_total_bytes: SAME_TOTAL, ..Limits::default() }
        => THREE_EVENTS, [(TooLarge, Inside("stage-0/events/events-000004.json"))];
    // The manifest's data would pass the limit: the archive still opens, yields nothing, and
    // reports the limit at that entry, like a directory whose first file passes it.
    archive_whose_first_file_passes_the_total_limit_still_opens:
        archive(gzip(&tar_of(vec![file("run-1/MANIFEST.json", &[b' '; 700]), boot()]))),
        Limits { max_total_bytes: 600, ..Limits::default() }
        => [], [(TooLarge, Entry("run-1/MANIFEST.json"))];
    directory_whose_first_file_passes_the_total_limit_still_opens: Tree(|tmp| {
        let mut bundle = small_bundle();
        bundle.files.insert("MANIFEST.json".into(), vec![b' '; 700]);
        write_dir(&bundle, tmp).unwrap()
    }), Limits { max_total_bytes: 600, ..Limits::default() }
        => [], [(TooLarge, Inside("MANIFEST.json"))];
    // Not even the first header fits: the archive opens, with the limit reported for it.
    archive_whose_first_header_passes_the_total_limit_still_opens:
        archive(gzip(&small_tar())), Limits { max_total_bytes: 100, ..Limits::default() }
        => [], [(TooLarge, Bundle)];
    // More than the inflating thread's buffers hold (chunks of 256 KiB, a few in flight).
    archive_larger_than_the_inflating_buffers_yields_every_file:
        archive(gzip(&tar_of(manifest_and_events(6, &noise(1024 * 1024)))))
        => [
            "MANIFEST.json",
            "stage-0/events/events-000001.json",
            "stage-0/events/events-000002.json",
            "stage-0/events/events-000003.json",
            "stage-0/events/events-000004.json",
            "stage-0/events/events-000005.json",
            "stage-0/events/events-000006.json",
        ], [];
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
