//! Which directories the upgrade recognizes as the simulator's prod-shape output.

use diagwire_upgrade::is_sim_prod_shape;

use crate::support::{Sim, collector_bundle, empty_dir, fixture, sim};

#[track_caller]
fn check_recognized(sim: Sim, expected: bool) {
    assert_eq!(is_sim_prod_shape(&sim.path), expected);
}

macro_rules! recognition {
    ($($name:ident: $sim:expr => $expected:expr;)*) => {
        $(#[test] fn $name() { check_recognized($sim, $expected); })*
    };
}

recognition! {
    recognizes_the_simulators_prod_shape_directory: fixture() => true;
    recognizes_simulator_records_without_a_manifest: sim(&[]).without("MANIFEST.json") => true;
    does_not_recognize_a_collector_bundle: collector_bundle() => false;
    does_not_recognize_an_empty_directory: empty_dir() => false;
}
