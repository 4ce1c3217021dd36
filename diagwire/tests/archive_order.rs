//! An archive yields its files in path order, as a directory does, whatever order the archive
//! holds them in: from memory when the files met early fit, by another pass when they do not.

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

/// Reads the archive and checks it yields `expected` in order, each file whole.
fn check_order(names: &[&str], size: usize, expected: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run-1.tar.gz");
    std::fs::write(&path, archive(names, size)).expect("write");
    let mut reader = BundleReader::open(&path, Limits::default()).expect("open");
    let got: Vec<(String, usize, u8)> = reader
        .files()
        .map(|f| f.expect("file"))
        .map(|f| (f.path, f.bytes.len(), f.bytes[0]))
        .collect();
    let want: Vec<(String, usize, u8)> = expected
        .iter()
        .map(|n| (n.to_string(), size, n.as_bytes()[0]))
        .collect();
    assert_eq!(got, want);
}

const SORTED: [&str; 5] = [
    "MANIFEST.json",
    "a/events/events-000001.json",
    "a/events/events-000002.json",
    "b/boot.json",
    "c/boot.json",
];

#[test]
fn an_archive_in_path_order_is_read_as_it_is() {
    check_order(&SORTED, 100, &SORTED);
}

#[test]
fn an_archive_out_of_path_order_yields_its_files_in_path_order() {
    let scrambled = [SORTED[3], SORTED[2], SORTED[0], SORTED[4], SORTED[1]];
    check_order(&scrambled, 100, &SORTED);
}

#[test]
fn files_met_early_beyond_the_memory_budget_are_read_by_another_pass() {
    // Five files of 12 MiB in reverse order: only two fit the 32 MiB kept in memory.
    let reversed: Vec<&str> = SORTED.iter().rev().copied().collect();
    check_order(&reversed, 12 << 20, &SORTED);
}
