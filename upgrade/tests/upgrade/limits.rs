//! What an upgrade writes stays within the reader's limits: an events file that would be over the
//! per-file limit is split into several numbered ones, in record order, and the bundle validates
//! clean under those limits.

use diagwire::bundle::read::Limits;
use diagwire::layout::{self, FileKind, Role};
use diagwire::validate::bundle::{check_bundle, open};
use diagwire_upgrade::{upgrade, upgrade_within};
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
    let report = check_bundle(validators(), &mut reader, &mut |_, _| {});
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
