//! The compatibility matrix: for every record kind and every ordered pair of (writer, reader) among
//! the frozen releases and the current contract, values of the writer's types go through the
//! reader's types and back without losing anything.
//!
//! A value of the writer's types is serialized, read by the reader's types, written back and read
//! again by the writer's types; it must come back equal. So fields both versions know are equal, the
//! writer's newer fields and event types reach an older reader as kept unknowns and come back, and a
//! newer reader shows an older record's missing fields as absent (writing them back adds nothing).

use arbitrary::Unstructured;
use diagwire::releases::v1_0_0 as r100;
use diagwire::releases::v1_1_0 as r110;
use diagwire::v1;
use diagwire_compat_tests::fuzzing::roundtrip_through;
use diagwire_compat_tests::rng::SplitMix64;

/// Generated values per cell of the matrix.
const VALUES_PER_CELL: u64 = 1_000;

/// Runs one cell: `VALUES_PER_CELL` values written by `W`, read by `R`.
macro_rules! cell {
    ($w:ty, $r:ty) => {{
        let mut rng = SplitMix64(0xc0ffee ^ (line!() as u64));
        for _ in 0..VALUES_PER_CELL {
            let data = rng.bytes(4096);
            roundtrip_through::<$w, $r>(&mut Unstructured::new(&data));
        }
    }};
}

/// Every ordered pair of the releases (1.0.0, 1.1.0) and the current contract for one record type.
macro_rules! kind {
    ($name:ident, $t:ident) => {
        #[test]
        fn $name() {
            cell!(r100::$t, r100::$t);
            cell!(r100::$t, r110::$t);
            cell!(r100::$t, v1::$t);
            cell!(r110::$t, r100::$t);
            cell!(r110::$t, r110::$t);
            cell!(r110::$t, v1::$t);
            cell!(v1::$t, r100::$t);
            cell!(v1::$t, r110::$t);
            cell!(v1::$t, v1::$t);
        }
    };
}

kind!(boot_records_cross_every_release_pair, Identity);
kind!(event_records_cross_every_release_pair, EventRecord);
kind!(event_batches_cross_every_release_pair, EventBatch);
kind!(snapshots_cross_every_release_pair, Snapshot);
kind!(finalize_records_cross_every_release_pair, Finalize);
kind!(manifests_cross_every_release_pair, Manifest);
kind!(post_acks_cross_every_release_pair, PostAck);
kind!(error_bodies_cross_every_release_pair, ErrorBody);
kind!(runs_listings_cross_every_release_pair, RunsListing);
kind!(live_records_cross_every_release_pair, LiveRecord);
kind!(vastai_records_cross_every_release_pair, VastaiRecord);

#[test]
fn the_matrix_covers_every_record_kind_and_release() {
    assert_eq!(
        v1::Record::KINDS.len(),
        11,
        "a record kind was added: give it a row above"
    );
    assert_eq!(
        diagwire::releases::RELEASES,
        ["1.0.0", "1.1.0"],
        "a release was cut: add its pairs above"
    );
}
