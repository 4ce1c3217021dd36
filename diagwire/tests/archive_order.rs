//! An archive yields its files in path order, as a directory does, whatever order the archive
//! holds them in, from one pass over it: the files' data is kept (in memory while it is small, in
//! a temporary file past that) until its turn, and the archive is not read again. What needs the
//! whole archive is decided over the whole archive in every order: the copy of a duplicate later in
//! the archive wins, and a second run directory anywhere makes the archive ambiguous.

#![cfg(feature = "bundle")]
use std::io::Write;

use diagwire::bundle::read::{BundleReader, Limits};

/// A gzip'd tar of `run-1/<name>` entries in the order given, each `size` bytes of its name's
/// first letter.
fn archive(names: &[&str], size: usize) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for name in names {
        let data = vec![name.as_bytes()[0]; size];
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("run-1/{name}"), &data[..])
            .expect("append");
    }
    let tar = tar.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

const SORTED: [&str; 5] = [
    "MANIFEST.json",
    "a/events/events-000001.json",
    "a/events/events-000002.json",
    "b/boot.json",
    "c/boot.json",
];

/// `SORTED` in the order an archive holds it.
#[derive(Debug, Clone, Copy)]
enum Order {
    Name,
    /// As `tar czf` of the directory gives: no name order.
    Scrambled,
    /// The manifest last.
    Reverse,
}

fn members(order: Order) -> Vec<&'static str> {
    match order {
        Order::Name => SORTED.to_vec(),
        Order::Scrambled => vec![SORTED[3], SORTED[2], SORTED[0], SORTED[4], SORTED[1]],
        Order::Reverse => SORTED.iter().rev().copied().collect(),
    }
}

/// The sizes of the files: small enough for the reader to keep them in memory (4 MiB in all), or
/// large enough for it to keep them in a temporary file.
const IN_MEMORY: usize = 100;
const IN_A_FILE: usize = 3 << 20;

/// The reader of `names` archived, each file `size` bytes; `after_open` is done to the archive
/// once it is open.
fn yielded(
    names: &[&str],
    size: usize,
    after_open: fn(&std::path::Path),
) -> Vec<(String, usize, u8)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run-1.tar.gz");
    std::fs::write(&path, archive(names, size)).expect("write");
    let mut reader = BundleReader::open(&path, Limits::default()).expect("open");
    after_open(&path);
    assert_eq!(reader.file_count(), names.len());
    let mut read = || -> Vec<(String, usize, u8)> {
        reader
            .files()
            .map(|f| f.expect("file"))
            .map(|f| (f.path, f.bytes.len(), f.bytes[0]))
            .collect()
    };
    let first = read();
    assert_eq!(read(), first, "a second iteration yields the same");
    first
}

/// Reads the archive of `SORTED` in `order` and checks it yields `SORTED` in path order, each
/// file whole, twice in a row.
#[track_caller]
fn check_order(order: Order, size: usize, after_open: fn(&std::path::Path)) {
    let want: Vec<(String, usize, u8)> = SORTED
        .iter()
        .map(|n| (n.to_string(), size, n.as_bytes()[0]))
        .collect();
    assert_eq!(
        yielded(&members(order), size, after_open),
        want,
        "{order:?}, {size} bytes each"
    );
}

fn nothing(_: &std::path::Path) {}

/// Overwrites the archive with zeros and removes it: nothing can be read from it any more.
fn destroy(path: &std::path::Path) {
    let len = std::fs::metadata(path).expect("there").len();
    std::fs::write(path, vec![0u8; len as usize]).expect("overwrite");
    std::fs::remove_file(path).expect("remove");
}

#[test]
fn an_archive_yields_its_files_in_path_order_whatever_its_member_order() {
    for order in [Order::Name, Order::Scrambled, Order::Reverse] {
        check_order(order, IN_MEMORY, nothing);
    }
}

#[test]
fn files_too_large_to_keep_in_memory_are_yielded_in_path_order_too() {
    for order in [Order::Name, Order::Scrambled, Order::Reverse] {
        check_order(order, IN_A_FILE, nothing);
    }
}

#[test]
fn an_archive_is_read_once_when_it_is_opened() {
    for size in [IN_MEMORY, IN_A_FILE] {
        for order in [Order::Name, Order::Scrambled, Order::Reverse] {
            check_order(order, size, destroy);
        }
    }
}

#[test]
fn an_archive_open_as_a_file_reads_as_by_its_path_and_leaves_the_files_offset_alone() {
    use std::io::{Read, Seek};
    for size in [IN_MEMORY, IN_A_FILE] {
        for order in [Order::Name, Order::Scrambled, Order::Reverse] {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("run-1.tar.gz");
            let bytes = archive(&members(order), size);
            std::fs::write(&path, &bytes).expect("write");
            let mut file = std::fs::File::open(&path).expect("open");
            file.seek(std::io::SeekFrom::Start(7)).expect("seek");
            let handle = file.try_clone().expect("clone");
            let mut reader =
                BundleReader::open_archive_file(handle, &path, Limits::default()).expect("open");
            let mut by_path = BundleReader::open(&path, Limits::default()).expect("open");
            let read = |r: &mut BundleReader| -> Vec<(String, Vec<u8>)> {
                r.files()
                    .map(|f| f.expect("file"))
                    .map(|f| (f.path, f.bytes))
                    .collect()
            };
            let files = read(&mut reader);
            assert_eq!(files, read(&mut by_path), "{order:?}, {size} bytes each");
            assert_eq!(reader.run_id(), "run-1");
            assert_eq!(reader.source(), path.as_path());
            // Whoever holds the file reads it from where they left it.
            let mut rest = Vec::new();
            file.read_to_end(&mut rest).expect("read");
            assert_eq!(rest, bytes[7..], "{order:?}, {size} bytes each");
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let not_a_file = std::fs::File::open(dir.path()).expect("open the directory");
    let refused = BundleReader::open_archive_file(not_a_file, dir.path(), Limits::default());
    assert!(refused.is_err(), "a directory is not an archive");
}

/// An archive entry: its name and its data.
type Entry<'a> = (&'a str, &'a [u8]);

/// A gzip'd tar of `(name, bytes)` entries in the order given.
fn archive_of(entries: &[Entry<'_>]) -> tempfile::NamedTempFile {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, name, *data).expect("append");
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar.into_inner().expect("tar")).expect("gzip");
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(&gz.finish().expect("gzip")).expect("write");
    file
}

#[test]
fn the_copy_of_a_duplicate_later_in_the_archive_wins_in_every_order() {
    let first: Entry = ("run-1/a/boot.json", b"first");
    let second: Entry = ("run-1/a/boot.json", b"second");
    let manifest: Entry = ("run-1/MANIFEST.json", b"{}");
    let other: Entry = ("run-1/b/boot.json", b"{}");
    let cases: [(Vec<Entry>, &[u8]); 3] = [
        (vec![manifest, first, other, second], b"second"),
        (vec![second, other, first, manifest], b"first"),
        (vec![other, first, second, manifest], b"second"),
    ];
    for (entries, wins) in cases {
        let file = archive_of(&entries);
        let mut reader = BundleReader::open(file.path(), Limits::default()).expect("opens");
        let mut kept = Vec::new();
        let mut reported = Vec::new();
        for item in reader.files() {
            match item {
                Ok(f) => kept.push((f.path, f.bytes)),
                Err(e) => reported.push((e.path, e.message)),
            }
        }
        let names: Vec<&str> = entries.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            kept,
            vec![
                ("MANIFEST.json".to_owned(), b"{}".to_vec()),
                ("a/boot.json".to_owned(), wins.to_vec()),
                ("b/boot.json".to_owned(), b"{}".to_vec()),
            ],
            "{names:?}"
        );
        assert_eq!(
            reported,
            vec![(
                Some("a/boot.json".to_owned()),
                "a duplicate entry; a later entry with the same path replaces it".to_owned()
            )],
            "{names:?}"
        );
    }
}

#[test]
fn a_second_run_directory_anywhere_in_the_archive_makes_it_ambiguous() {
    let one: [Entry; 2] = [("run-1/MANIFEST.json", b"{}"), ("run-1/a/boot.json", b"{}")];
    let two: Entry = ("run-2/MANIFEST.json", b"{}");
    for entries in [
        vec![one[0], one[1], two],
        vec![two, one[0], one[1]],
        vec![one[1], two, one[0]],
    ] {
        let file = archive_of(&entries);
        let e = BundleReader::open(file.path(), Limits::default()).expect_err("ambiguous");
        assert!(
            e.message
                .contains("holds several run directories (run-1, run-2)"),
            "{entries:?}: {e}"
        );
    }
}
