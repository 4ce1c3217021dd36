//! What an upgrade writes stays within the reader's limits: an events file that would be over the
//! per-file limit is split into several numbered ones, in record order, and the bundle validates
//! clean under those limits.

use diagwire::bundle::read::Limits;
use diagwire::layout::{self, FileKind, Role};
use diagwire::validate::bundle::{open, validate_bundle};
use diagwire_upgrade::{Failed, Output, upgrade, upgrade_to, upgrade_within};
use serde_json::{Value, json};

use crate::support::{alpha_events, json_file, lines, sim, validators};

/// `n` `Custom` events of the simulator, each a little over 200 bytes once upgraded.
fn custom_events(n: u64) -> Value {
    let records: Vec<Value> = (0..n)
        .map(|i| {
            json!({"wall_ms": 1000 + i, "monotonic_seq": i, "variant": "Custom",
                   "user_kind": "load", "n": i, "pad": "x".repeat(100)})
        })
        .collect();
    json!(records)
}

#[test]
fn upgrade_splits_events_over_the_per_file_limit_and_its_output_validates() {
    let cap = 16 * 1024;
    let limits = Limits {
        max_file_bytes: cap,
        ..Limits::default()
    };
    let s = sim(&[alpha_events(custom_events(400))]);
    let whole = upgrade(&s.path).expect("upgrades");
    let split = upgrade_within(&s.path, limits).expect("upgrades within the limits");

    // Within the default limit, one events file; within the small one, several.
    let events_files = |up: &diagwire_upgrade::Upgraded| -> Vec<String> {
        up.contents
            .files
            .keys()
            .filter(|p| layout::parse_bundle_path(p).role.file_kind() == Some(&FileKind::Events))
            .cloned()
            .collect()
    };
    assert_eq!(events_files(&whole).len(), 1);
    let names = events_files(&split);
    assert!(names.len() > 1, "{names:?}");
    let numbered: Vec<String> = (1..=names.len() as u64)
        .map(|seq| layout::bundle_path("alpha", &Role::Numbered(FileKind::Events, seq)))
        .collect();
    assert_eq!(names, numbered, "numbered from 1 without a gap");
    for name in &names {
        let size = split.contents.files[name].len() as u64;
        assert!(size <= cap, "{name}: {size} bytes over {cap}");
    }

    // The same events in the same order, and the same list of what was not mapped.
    let all: Vec<Value> = names
        .iter()
        .flat_map(|n| {
            json_file(&split.contents.files, n)
                .as_array()
                .expect("an array")
                .clone()
        })
        .collect();
    let once = json_file(&whole.contents.files, &events_files(&whole)[0]);
    assert_eq!(Value::Array(all), once);
    assert_eq!(split.problems, whole.problems);

    // The manifest counts the files, and the bundle validates clean under the limits.
    let alpha = &split.manifest.nodes[0];
    assert_eq!(alpha.event_batches, names.len() as u64);
    let out = tempfile::tempdir().expect("temp dir");
    let run_dir = diagwire::bundle::output::write_dir(&split.contents, out.path()).expect("writes");
    let mut reader = open(&run_dir, limits).expect("opens");
    let report = validate_bundle(validators(), &mut reader, &mut |_, _| {});
    assert!(
        report.problems.is_empty(),
        "the split bundle does not validate clean:\n{}",
        lines(&report.problems)
    );
}

#[test]
fn upgrade_leaves_out_a_record_over_the_per_file_limit_on_its_own() {
    let limits = Limits {
        max_file_bytes: 150,
        ..Limits::default()
    };
    let s = sim(&[alpha_events(custom_events(2))]);
    let up = upgrade_within(&s.path, limits).expect("upgrades");
    let dropped: Vec<String> = up
        .problems
        .iter()
        .map(ToString::to_string)
        .filter(|p| p.contains("over the per-file limit of 150 bytes"))
        .collect();
    assert!(dropped.len() >= 2, "{dropped:?}");
    for (path, bytes) in &up.contents.files {
        if path != layout::MANIFEST {
            assert!(bytes.len() <= 150, "{path}: {} bytes", bytes.len());
        }
    }
}

/// `upgrade_to` writes, file by file as it goes, exactly what `upgrade_within` returns: the same
/// run directory byte for byte, the same archive as the library's `.tar.gz` writer makes of it,
/// the same manifest and list; and nothing but the target is left beside it.
#[test]
fn upgrade_to_disk_writes_what_the_in_memory_upgrade_returns() {
    let limits = Limits {
        max_file_bytes: 16 * 1024,
        ..Limits::default()
    };
    let s = sim(&[alpha_events(custom_events(400))]);
    let fixture = crate::support::fixture();
    for (name, dir) in [("split events", &s.path), ("the fixture", &fixture.path)] {
        let want = upgrade_within(dir, limits).expect("upgrades");
        let out = tempfile::tempdir().expect("temp dir");
        let written = upgrade_to(dir, limits, Output::Dir(out.path())).expect(name);
        let archive = out.path().join("up.tar.gz");
        let packed = upgrade_to(dir, limits, Output::TarGz(&archive)).expect(name);

        let mut on_disk = std::collections::BTreeMap::new();
        for rel in diagwire::bundle::target::files_under(&written.path).expect("list") {
            let bytes = std::fs::read(rel.split('/').fold(written.path.clone(), |p, c| p.join(c)));
            on_disk.insert(rel, bytes.expect("read"));
        }
        assert_eq!(on_disk, want.contents.files, "{name}: the run directory");
        let mut tar = Vec::new();
        diagwire::bundle::output::write_tar_gz(&want.contents, &mut tar).expect("tar");
        assert_eq!(
            std::fs::read(&archive).expect("read"),
            tar,
            "{name}: the archive"
        );
        for w in [&written, &packed] {
            assert_eq!(w.manifest, want.manifest, "{name}");
            assert_eq!(w.problems, want.problems, "{name}");
            assert_eq!(w.files, want.contents.files.len(), "{name}");
        }
        let mut names: Vec<String> = std::fs::read_dir(out.path())
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [want.contents.run_id.clone(), "up.tar.gz".to_owned()],
            "{name}"
        );
    }
}

/// A refused input fails as the input, and an output that cannot be written as the output, with
/// nothing left behind.
#[test]
fn upgrade_to_disk_tells_a_refused_input_from_an_unwritable_output() {
    let out = tempfile::tempdir().expect("temp dir");
    let not_sim = tempfile::tempdir().expect("temp dir");
    let refused = upgrade_to(not_sim.path(), Limits::default(), Output::Dir(out.path()));
    assert!(matches!(refused, Err(Failed::Input(_))), "{refused:?}");

    let s = sim(&[alpha_events(custom_events(3))]);
    std::fs::write(out.path().join("taken.tar.gz"), b"mine").expect("write");
    let taken = out.path().join("taken.tar.gz");
    let unwritable = upgrade_to(&s.path, Limits::default(), Output::TarGz(&taken));
    assert!(
        matches!(unwritable, Err(Failed::Output(_))),
        "{unwritable:?}"
    );
    assert_eq!(std::fs::read(&taken).expect("read"), b"mine");
    let names: Vec<_> = std::fs::read_dir(out.path()).expect("read dir").collect();
    assert_eq!(names.len(), 1, "only the file that was there");
}
