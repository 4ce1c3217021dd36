//! Which directories the upgrade refuses, and what the error says.

use std::io::ErrorKind;

use diagwire_upgrade::upgrade;
use serde_json::json;

use crate::support::{
    Sim, a_file, collector_bundle, empty_dir, manifest_with_run_id, missing_path, sim,
};

/// The upgrade of `sim` fails with an error of `kind` whose message contains `says`.
#[track_caller]
fn check_refused(sim: Sim, kind: ErrorKind, says: &str) {
    match upgrade(&sim.path) {
        Ok(up) => panic!(
            "upgraded into run {:?}; expected a refusal",
            up.contents.run_id
        ),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{e}");
            assert!(e.to_string().contains(says), "{e:?} does not say {says:?}");
        }
    }
}

macro_rules! refusals {
    ($($name:ident: $sim:expr => $kind:ident, $says:expr;)*) => {
        $(#[test] fn $name() { check_refused($sim, ErrorKind::$kind, $says); })*
    };
}

refusals! {
    refuses_a_directory_that_is_not_prod_shape:
        empty_dir() => InvalidData, "not a simulator prod-shape directory";
    refuses_a_collector_bundle:
        collector_bundle() => InvalidData, "not a simulator prod-shape directory";
    refuses_a_path_that_does_not_exist: missing_path() => NotFound, "";
    refuses_a_file: a_file() => InvalidData, "not a directory";
    refuses_a_directory_without_a_run_id:
        sim(&[("MANIFEST.json", json!({"schema_version": 1, "kind": "manifest", "origin": "sim"})),
              ("alpha/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0}))])
        => InvalidData, "no run id";
    refuses_a_run_id_with_a_newline:
        sim(&[manifest_with_run_id("t\nrun")]) => InvalidData, r#"run id "t\nrun" cannot name the bundle's directory"#;
    refuses_a_run_id_with_a_control_character:
        sim(&[manifest_with_run_id("t\u{1b}run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_with_a_path_separator:
        sim(&[manifest_with_run_id("t/run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_that_climbs_out:
        sim(&[manifest_with_run_id("..")]) => InvalidData, "cannot name the bundle's directory";
    refuses_an_empty_run_id:
        sim(&[manifest_with_run_id("")]) => InvalidData, "cannot name the bundle's directory";
    refuses_a_run_id_with_a_space:
        sim(&[manifest_with_run_id("t run")]) => InvalidData, "cannot name the bundle's directory";
    refuses_an_unsafe_run_id_from_a_boot_record:
        sim(&[("alpha/boot.json", json!({"schema_version": 1, "kind": "boot", "boot_sequence": 0,
                                          "wall_ms": 0, "run_id": "t\nrun"}))])
            .without("MANIFEST.json")
        => InvalidData, "cannot name the bundle's directory";
}
